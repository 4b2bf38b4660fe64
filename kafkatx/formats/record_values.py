"""A v2 batch's records as values (:class:`Record`), their JSON rendering, the batch's
records section and the C decoder's records (:func:`decoded_in_c`): all without construct.

:mod:`kafkatx.formats.record_batch` (construct: ``DefaultRecord#readFrom``) is the definition
of the layout and re-exports the first three; :mod:`kafkatx.formats.record_decode` and
``record_batch.parse_batch`` fall back to its ``iter_records`` for a batch the C decoder hands
over, so ``replay`` of a clean partition imports no construct.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import field
from typing import Any

from kafkatx.errors import FormatError
from kafkatx.formats.batch_layout import (
    COMPRESSION_MASK,
    HEADER_SIZE,
    MAGIC_V2,
    TIMESTAMP_TYPE_MASK,
)
from kafkatx.formats.batchscan import HAVE_EXTENSION, _ext
from kafkatx.lazy_dataclass import dataclass

Decoder = Callable[[bytes, int, int, int, int, bool], list[tuple[Any, ...]] | None]
# An extension built before the decoder existed has no decode_records: construct then.
_decode: Decoder | None = getattr(_ext, "decode_records", None) if HAVE_EXTENSION else None
HAVE_FAST_DECODER = _decode is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class Record:
    """One record of a v2 batch, with absolute offset and timestamp resolved."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    attributes: int = 0
    position: int | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"offset": self.offset, "timestamp": self.timestamp}
        out.update(render_bytes("key", self.key))
        out.update(render_bytes("value", self.value))
        out["headers"] = [
            {"key": k, **render_bytes("value", v)} for k, v in self.headers
        ]
        return out


def render_bytes(name: str, data: bytes | None) -> dict[str, object]:
    """Key/value rendering of the JSON contract: UTF-8 when printable, else base64."""
    if data is None:
        return {name: None}
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and (text.isprintable() or all(ch.isprintable() or ch in "\t\r\n"
                                                          for ch in text)):
        return {name: text}
    return {name: base64.b64encode(data).decode("ascii"), f"{name}_encoding": "base64"}


def payload_at(buf: bytes | memoryview, pos: int, size: int, compression_id: int,
               path: str | None) -> tuple[bytes, int]:
    """The (decompressed) records section of the ``size``-byte batch at ``pos``, and the file
    position where it starts."""
    start = pos + HEADER_SIZE
    payload = bytes(buf[start : pos + size])
    if compression_id == 0:
        return payload, start
    try:
        from kafkatx.formats import compression  # a codec's libraries: loaded when used

        return compression.decompress(compression_id, payload, magic=MAGIC_V2), start
    except FormatError as exc:
        if exc.path is not None:
            raise
        if exc.position is None:  # the codec names no byte: the payload that fails starts here
            raise type(exc)(exc.message, path=path, position=start, field=exc.field) from None
        raise exc.located(path, start) from None


def decoded_in_c(buf: bytes | memoryview, pos: int, size: int, attributes: int, count: int,
                 base_offset: int, base_timestamp: int, max_timestamp: int, path: str | None
                 ) -> list[Record] | None:
    """The C decoder's records of the batch at ``pos``, or None: not built, or a batch it hands
    to construct (``record_batch.iter_records``)."""
    if _decode is None:
        return None
    codec = attributes & COMPRESSION_MASK
    data, payload_pos = payload_at(buf, pos, size, codec, path)
    rows = _decode(data, count, base_offset, base_timestamp, max_timestamp,
                   bool(attributes & TIMESTAMP_TYPE_MASK))
    if rows is None:
        return None
    if codec:
        return [Record(offset=offset, timestamp=ts, key=key, value=value, headers=headers,
                       attributes=attrs)
                for offset, ts, key, value, headers, attrs, _ in rows]
    return [Record(offset=offset, timestamp=ts, key=key, value=value, headers=headers,
                   attributes=attrs, position=payload_pos + start)
            for offset, ts, key, value, headers, attrs, start in rows]
