"""Kafka's unsigned varint read without construct (:mod:`kafkatx.formats.primitives`, which
re-exports it, defines the wire types with construct): what a codec's framing needs
(snappy's raw block length) on paths that import no construct."""

from __future__ import annotations

from kafkatx.errors import FormatError


def read_uvarint(buf: bytes | memoryview, pos: int, max_bytes: int = 5) -> tuple[int, int]:
    """Read an unsigned LEB128 varint at ``pos``; return (value, new position).

    Kafka ``ByteUtils.readUnsignedVarint``/``readUnsignedVarlong``: at most 5 (varint) or 10
    (varlong) bytes, otherwise the value is malformed.
    """
    value = 0
    shift = 0
    for i in range(max_bytes):
        if pos + i >= len(buf):
            raise FormatError("varint runs past the end of the data", position=pos)
        b = buf[pos + i]
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos + i + 1
        shift += 7
    raise FormatError(f"varint longer than {max_bytes} bytes", position=pos)
