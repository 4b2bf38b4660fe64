"""The one error tree of kafkatx.

Every error that can reach a user carries enough to print a single line:
``path:position: what is wrong``.
"""

from __future__ import annotations


class KafkatxError(Exception):
    """Base of every error kafkatx raises on purpose."""


class FormatError(KafkatxError):
    """Bytes that do not follow the format they should.

    ``position`` is the byte offset in ``path`` where the bad structure starts (or the field, when
    known); ``field`` names the structure or field that failed.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        position: int | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.position = position
        self.field = field

    def located(self, path: str | None = None, base: int = 0) -> FormatError:
        """Return a copy placed in ``path`` with the position shifted by ``base``."""
        position = None if self.position is None else self.position + base
        return type(self)(
            self.message, path=path or self.path, position=position, field=self.field
        )

    def to_dict(self) -> dict[str, object]:
        """The problem as the JSON of every reader's ``problems`` has it."""
        return {"path": self.path, "position": self.position, "field": self.field,
                "message": self.message}

    def __str__(self) -> str:
        where = self.path or "<bytes>"
        if self.position is not None:
            where = f"{where}:{self.position}"
        what = f"{self.field}: {self.message}" if self.field else self.message
        return f"{where}: {what}"


class CorruptSnapshotError(FormatError):
    """A producer-state snapshot whose version or CRC is wrong (Kafka: CorruptSnapshotException)."""


class UnreadableFileError(KafkatxError):
    """A file that cannot be opened or read at all (missing, permission, a directory)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class MissingPathError(UnreadableFileError):
    """A path given on the command line that does not exist: a usage error (exit 2)."""

    def __init__(self, path: str) -> None:
        super().__init__(path, "no such file or directory")
