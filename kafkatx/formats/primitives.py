"""Kafka's primitive wire types as construct definitions, shared by every format module.

Mirrors ``org.apache.kafka.common.utils.ByteUtils`` (varints) and the type conventions of Kafka's
generated message classes (``org.apache.kafka.common.protocol.types``): classic strings/arrays with
int16/int32 length prefixes, and the compact/flexible ones (unsigned varint length + 1, tagged
field sections) used from a message's first flexible version on.
All fixed-width integers are big-endian.
"""

from __future__ import annotations

import functools
from typing import Any

import construct as c
from construct import stream_read, stream_write

from kafkatx.errors import FormatError
from kafkatx.formats.varints import read_uvarint

Int8 = c.Int8sb
Int16 = c.Int16sb
Int32 = c.Int32sb
Int64 = c.Int64sb
UInt32 = c.Int32ub

# The fixed-width integers by ``struct`` code (big-endian), for layouts written as
# ``((name, code), ...)`` that are read with ``struct`` and built with construct (struct_of).
_BY_STRUCT_CODE = {"b": Int8, "h": Int16, "i": Int32, "q": Int64, "I": UInt32}


@functools.cache
def struct_of(fields: tuple[tuple[str, str], ...]) -> c.Struct:
    """The construct ``Struct`` of fixed-width ``fields`` given as (name, ``struct`` code)."""
    return c.Struct(*(name / _BY_STRUCT_CODE[code] for name, code in fields))

INT32_MAX = 2**31 - 1
INT16_MAX = 2**15 - 1


def zigzag_encode(n: int, bits: int = 64) -> int:
    return (n << 1) ^ (n >> (bits - 1))


def zigzag_decode(u: int) -> int:
    return (u >> 1) ^ -(u & 1)


def read_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Signed zigzag varint (int32) at ``pos``."""
    u, pos = read_uvarint(buf, pos, 5)
    return zigzag_decode(u), pos


def read_varlong(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Signed zigzag varlong (int64) at ``pos``."""
    u, pos = read_uvarint(buf, pos, 10)
    return zigzag_decode(u), pos


def encode_uvarint(value: int) -> bytes:
    if value < 0:
        raise ValueError("unsigned varint must be >= 0")
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def encode_varint(value: int) -> bytes:
    return encode_uvarint(zigzag_encode(value, 32) & 0xFFFFFFFF)


def encode_varlong(value: int) -> bytes:
    return encode_uvarint(zigzag_encode(value, 64) & 0xFFFFFFFFFFFFFFFF)


class _UnsignedVarInt(c.Construct):
    """Unsigned LEB128 with Kafka's length limit (5 bytes for int32, 10 for int64)."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__()
        self.max_bytes = max_bytes

    def _parse(self, stream: Any, context: Any, path: str) -> int:
        value = 0
        shift = 0
        for _ in range(self.max_bytes):
            b = stream_read(stream, 1, path)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
        raise c.ExplicitError(f"varint longer than {self.max_bytes} bytes", path=path)

    def _build(self, obj: int, stream: Any, context: Any, path: str) -> int:
        data = encode_uvarint(obj)
        stream_write(stream, data, len(data), path)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise c.SizeofError("varint has no fixed size", path=path)


class _ZigZag(c.Adapter):
    def __init__(self, subcon: c.Construct, bits: int) -> None:
        super().__init__(subcon)
        self.bits = bits

    def _decode(self, obj: int, context: Any, path: str) -> int:
        return zigzag_decode(obj)

    def _encode(self, obj: int, context: Any, path: str) -> int:
        return zigzag_encode(obj, self.bits) & ((1 << self.bits) - 1)


UVarInt = _UnsignedVarInt(5)
UVarLong = _UnsignedVarInt(10)
VarInt = _ZigZag(_UnsignedVarInt(5), 32)
VarLong = _ZigZag(_UnsignedVarInt(10), 64)


class _LengthPrefixedBytes(c.Construct):
    """Bytes with a length prefix; ``null_length`` (usually -1) stands for ``None``.

    ``offset`` is added to the stored length (compact types store length + 1, 0 = null).
    """

    def __init__(self, length: c.Construct, *, nullable: bool, compact: bool) -> None:
        super().__init__()
        self.length = length
        self.nullable = nullable
        self.compact = compact

    def _parse(self, stream: Any, context: Any, path: str) -> bytes | None:
        n = self.length._parsereport(stream, context, path)
        if self.compact:
            n -= 1
        if n < 0:
            if self.nullable and n == -1:
                return None
            raise c.ExplicitError(f"invalid length {n}", path=path)
        return stream_read(stream, n, path)

    def _build(self, obj: bytes | None, stream: Any, context: Any, path: str) -> bytes | None:
        if obj is None:
            if not self.nullable:
                raise c.ExplicitError("null is not allowed here", path=path)
            self.length._build(0 if self.compact else -1, stream, context, path)
            return obj
        self.length._build(len(obj) + (1 if self.compact else 0), stream, context, path)
        stream_write(stream, obj, len(obj), path)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise c.SizeofError("variable size", path=path)


class _Utf8(c.Adapter):
    """UTF-8 text over length-prefixed bytes; bad bytes are a construct error (so a FormatError)."""

    def _decode(self, obj: bytes | None, context: Any, path: str) -> str | None:
        if obj is None:
            return None
        try:
            return obj.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise c.ExplicitError(f"invalid UTF-8 at byte {exc.start} of a string",
                                  path=path) from None

    def _encode(self, obj: str | None, context: Any, path: str) -> bytes | None:
        if obj is None:
            return None
        try:
            return obj.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise c.ExplicitError(f"string cannot be encoded as UTF-8: {exc.reason}",
                                  path=path) from None


def _utf8(subcon: c.Construct) -> c.Construct:
    return _Utf8(subcon)


# Classic (non-flexible) types.
Bytes = _LengthPrefixedBytes(Int32, nullable=False, compact=False)
NullableBytes = _LengthPrefixedBytes(Int32, nullable=True, compact=False)
String = _utf8(_LengthPrefixedBytes(Int16, nullable=False, compact=False))
NullableString = _utf8(_LengthPrefixedBytes(Int16, nullable=True, compact=False))
# Compact (flexible) types.
CompactBytes = _LengthPrefixedBytes(UVarInt, nullable=False, compact=True)
CompactNullableBytes = _LengthPrefixedBytes(UVarInt, nullable=True, compact=True)
CompactString = _utf8(_LengthPrefixedBytes(UVarInt, nullable=False, compact=True))
CompactNullableString = _utf8(_LengthPrefixedBytes(UVarInt, nullable=True, compact=True))
# Record-level types inside a RecordBatch v2 (signed zigzag varint lengths, -1 = null).
VarIntNullableBytes = _LengthPrefixedBytes(VarInt, nullable=True, compact=False)
VarIntString = _utf8(_LengthPrefixedBytes(VarInt, nullable=False, compact=False))


class _Array(c.Construct):
    """Array with a count prefix: classic int32 (-1 = null) or compact (count + 1, 0 = null)."""

    def __init__(
        self,
        element: c.Construct,
        *,
        nullable: bool,
        compact: bool,
        count: c.Construct | None = None,
    ) -> None:
        super().__init__()
        self.element = element
        self.nullable = nullable
        self.compact = compact
        self.count = count if count is not None else (UVarInt if compact else Int32)

    def _parse(self, stream: Any, context: Any, path: str) -> list[Any] | None:
        n = self.count._parsereport(stream, context, path)
        if self.compact:
            n -= 1
        if n < 0:
            if self.nullable and n == -1:
                return None
            raise c.ExplicitError(f"invalid array length {n}", path=path)
        return c.ListContainer(
            self.element._parsereport(stream, context, f"{path} -> [{i}]") for i in range(n)
        )

    def _build(self, obj: list[Any] | None, stream: Any, context: Any, path: str) -> Any:
        if obj is None:
            if not self.nullable:
                raise c.ExplicitError("null array is not allowed here", path=path)
            self.count._build(0 if self.compact else -1, stream, context, path)
            return obj
        self.count._build(len(obj) + (1 if self.compact else 0), stream, context, path)
        for i, item in enumerate(obj):
            self.element._build(item, stream, context, f"{path} -> [{i}]")
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise c.SizeofError("variable size", path=path)


def Array(element: c.Construct) -> c.Construct:
    return _Array(element, nullable=False, compact=False)


def NullableArray(element: c.Construct) -> c.Construct:
    return _Array(element, nullable=True, compact=False)


def VarIntArray(element: c.Construct) -> c.Construct:
    """Array with a signed varint count (record headers in RecordBatch v2)."""
    return _Array(element, nullable=False, compact=False, count=VarInt)


def CompactArray(element: c.Construct) -> c.Construct:
    return _Array(element, nullable=False, compact=True)


def CompactNullableArray(element: c.Construct) -> c.Construct:
    return _Array(element, nullable=True, compact=True)


# A tagged-field section: uvarint count, then (uvarint tag, uvarint size, bytes) per field, tags in
# strictly increasing order. Parsed to a dict tag -> raw bytes; typed fields are decoded by the
# format module that knows the schema, unknown tags are kept as raw bytes.
class _TaggedFields(c.Construct):
    def _parse(self, stream: Any, context: Any, path: str) -> dict[int, bytes]:
        n = UVarInt._parsereport(stream, context, path)
        out: dict[int, bytes] = {}
        last = -1
        for _ in range(n):
            tag = UVarInt._parsereport(stream, context, path)
            if tag <= last:
                raise c.ExplicitError(f"tagged field {tag} out of order", path=path)
            size = UVarInt._parsereport(stream, context, path)
            out[tag] = stream_read(stream, size, path)
            last = tag
        return out

    def _build(self, obj: dict[int, bytes] | None, stream: Any, context: Any, path: str) -> Any:
        obj = obj or {}
        head = encode_uvarint(len(obj))
        stream_write(stream, head, len(head), path)
        for tag in sorted(obj):
            data = obj[tag]
            chunk = encode_uvarint(tag) + encode_uvarint(len(data)) + data
            stream_write(stream, chunk, len(chunk), path)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        raise c.SizeofError("variable size", path=path)


TaggedFields = _TaggedFields()


def parse_exact(
    struct: c.Construct, data: bytes, *, what: str, path: str | None = None, base: int = 0
) -> Any:
    """Parse ``data`` with ``struct`` and insist every byte is consumed.

    Construct errors are wrapped once here into ``FormatError`` with the byte position (relative
    to ``base``) of the failure, as far as construct reports it.
    """
    stream = _TrackingBytesIO(data)
    try:
        value = struct.parse_stream(stream)
    except c.ConstructError as exc:
        raise FormatError(
            _construct_message(exc), path=path, position=base + stream.furthest, field=what
        ) from None
    if stream.tell() != len(data):
        raise FormatError(
            f"{len(data) - stream.tell()} trailing bytes after the {what}",
            path=path,
            position=base + stream.tell(),
            field=what,
        )
    return value


def _construct_message(exc: c.ConstructError) -> str:
    msg = str(exc).strip()
    if "stream read less than specified amount" in msg or "could not read enough bytes" in msg:
        return "data ends in the middle of a field (truncated)"
    # construct prefixes messages with "Error in path (parsing) -> ...\n"; keep the last line.
    return msg.splitlines()[-1] if msg else type(exc).__name__


class _TrackingBytesIO:
    """Read stream over bytes that remembers where the last read started (the error position)."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0
        self.furthest = 0

    def read(self, n: int = -1) -> bytes:
        if n < 0:
            n = len(self._data) - self._pos
        self.furthest = self._pos
        chunk = self._data[self._pos : self._pos + n]
        self._pos += len(chunk)
        return bytes(chunk)

    def tell(self) -> int:
        return self._pos

    def seek(self, pos: int, whence: int = 0) -> int:
        if whence == 0:
            self._pos = pos
        elif whence == 1:
            self._pos += pos
        else:
            self._pos = len(self._data) + pos
        return self._pos

    def seekable(self) -> bool:
        return True

    def tellable(self) -> bool:
        return True
