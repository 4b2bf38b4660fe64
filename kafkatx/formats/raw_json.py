"""JSON text made elsewhere (the C record formatter) for a JSON writer to splice in."""

from __future__ import annotations


class RawJsonList:
    """A JSON array's items already encoded (comma-separated), for a writer to splice in."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text
