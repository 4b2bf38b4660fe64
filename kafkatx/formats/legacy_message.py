"""Message format v0/v1 ("MessageSet") entries, including compressed wrapper messages.

Mirrors ``org.apache.kafka.common.record.LegacyRecord`` (layout, CRC, timestamp rules) and
``AbstractLegacyRecordBatch`` with its ``DeepRecordsIterator`` (inner messages of a compressed
wrapper, relative/absolute offsets). Layout of one log entry, big-endian::

    offset int64 | size int32 | crc uint32 | magic int8 | attributes int8
    | timestamp int64 (v1 only) | key (int32 length, -1 = null) | value (int32 length, -1 = null)

The CRC is CRC-32 (IEEE, ``java.util.zip.CRC32``) over the message from ``magic`` to its end.
"""

from __future__ import annotations

import dataclasses
import struct
import zlib
from collections.abc import Sequence
from typing import Any

import construct as c

from kafkatx.errors import FormatError
from kafkatx.formats.batch_layout import FRAME, LOG_OVERHEAD
from kafkatx.formats.compression import DEFAULT_MAX_SIZE, Codec, compress, decompress, name_for
from kafkatx.formats.primitives import Int8, Int32, Int64, NullableBytes, UInt32, parse_exact
from kafkatx.lazy_dataclass import dataclass

RECORD_OVERHEAD_V0 = 14
RECORD_OVERHEAD_V1 = 22
HEADER_SIZE = {0: 6, 1: 14}  # crc + magic + attributes (+ timestamp for v1)
CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08

# Kafka TimestampType ids and names.
NO_TIMESTAMP_TYPE = -1
CREATE_TIME = 0
LOG_APPEND_TIME = 1
TIMESTAMP_TYPE_NAMES = {
    NO_TIMESTAMP_TYPE: "NoTimestampType",
    CREATE_TIME: "CreateTime",
    LOG_APPEND_TIME: "LogAppendTime",
}
NO_TIMESTAMP = -1

_ENTRY_HEADER = c.Struct("offset" / Int64, "size" / Int32)
_MESSAGE = c.Struct(
    "crc" / UInt32,
    "magic" / Int8,
    "attributes" / Int8,
    "timestamp" / c.If(c.this.magic >= 1, Int64),
    "key" / NullableBytes,
    "value" / NullableBytes,
)
_U32, _I8, _I32, _I64 = (
    struct.Struct(">I"),
    struct.Struct(">b"),
    struct.Struct(">i"),
    struct.Struct(">q"),
)

# (key, value, timestamp) of one inner message given to build_legacy_entry.
LegacyRecordSpec = tuple[bytes | None, bytes | None, int]


@dataclass(frozen=True, slots=True, kw_only=True)
class LegacyMessage:
    """One v0/v1 message: a top-level entry's message, or an inner message of a wrapper.

    ``offset`` is absolute (for inner messages, computed as ``DeepRecordsIterator`` does);
    ``position`` is the byte position of the top-level entry (for inner messages too: they live
    compressed inside it); ``size`` is the stored size field (message bytes, without the 12-byte
    offset/size prefix); ``timestamp`` is as stored (-1 for v0). ``wrapper_timestamp`` and
    ``wrapper_timestamp_type`` are set on inner messages only (the wrapper's timestamp and
    timestamp type id), which decide their effective timestamp.
    """

    offset: int
    position: int
    size: int
    crc: int
    computed_crc: int
    magic: int
    attributes: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    wrapper_timestamp: int | None = None
    wrapper_timestamp_type: int | None = None

    @property
    def crc_valid(self) -> bool:
        return self.crc == self.computed_crc

    @property
    def codec(self) -> int:
        return self.attributes & CODEC_MASK

    @property
    def compression(self) -> str:
        return name_for(self.codec)

    @property
    def is_compressed(self) -> bool:
        return self.codec != Codec.NONE

    @property
    def entry_size(self) -> int:
        """Bytes the entry takes in the log, with its offset/size prefix."""
        return self.size + LOG_OVERHEAD

    @property
    def timestamp_type_id(self) -> int:
        """``LegacyRecord#timestampType``: -1 for v0, else the wrapper's type if inner."""
        if self.magic == 0:
            return NO_TIMESTAMP_TYPE
        if self.wrapper_timestamp_type is not None:
            return self.wrapper_timestamp_type
        return LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME

    @property
    def timestamp_type(self) -> str:
        return TIMESTAMP_TYPE_NAMES[self.timestamp_type_id]

    @property
    def effective_timestamp(self) -> int:
        """``LegacyRecord#timestamp``: inner messages of a LogAppendTime wrapper take its time."""
        if self.magic == 0:
            return NO_TIMESTAMP
        if self.wrapper_timestamp_type == LOG_APPEND_TIME and self.wrapper_timestamp is not None:
            return self.wrapper_timestamp
        return self.timestamp

    def to_dict(self) -> dict[str, Any]:
        return {
            "offset": self.offset,
            "position": self.position,
            "size": self.size,
            "magic": self.magic,
            "crc": self.crc,
            "computed_crc": self.computed_crc,
            "crc_valid": self.crc_valid,
            "attributes": self.attributes,
            "compression": self.compression,
            "timestamp": self.effective_timestamp,
            "timestamp_type": self.timestamp_type,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class LegacyEntry:
    """A top-level log entry (Kafka's ``AbstractLegacyRecordBatch``): its message, and for a
    compressed wrapper the decompressed inner messages with absolute offsets."""

    message: LegacyMessage
    inner: tuple[LegacyMessage, ...] = ()

    @property
    def offset(self) -> int:
        return self.message.offset

    @property
    def position(self) -> int:
        return self.message.position

    @property
    def magic(self) -> int:
        return self.message.magic

    @property
    def base_offset(self) -> int:
        """``AbstractLegacyRecordBatch#baseOffset``: the first inner message's offset."""
        return self.inner[0].offset if self.inner else self.message.offset

    @property
    def last_offset(self) -> int:
        """``AbstractLegacyRecordBatch#lastOffset``: the entry offset (a wrapper's is its last)."""
        return self.message.offset

    @property
    def count(self) -> int:
        return len(self.inner) if self.inner else 1

    @property
    def records(self) -> tuple[LegacyMessage, ...]:
        """The log records: the inner messages, or the message itself when uncompressed."""
        return self.inner if self.inner else (self.message,)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.message.to_dict(),
            "base_offset": self.base_offset,
            "last_offset": self.last_offset,
            "count": self.count,
            "inner": [m.to_dict() for m in self.inner],
        }


def parse_legacy_entry(
    buf: bytes | memoryview,
    pos: int,
    *,
    path: str | None = None,
    max_size: int = DEFAULT_MAX_SIZE,
) -> LegacyEntry:
    """Parse the v0/v1 entry starting at byte ``pos`` of ``buf``.

    Structural problems raise ``FormatError`` with the absolute byte position; a CRC mismatch
    does not (see ``crc_valid``). ``max_size`` bounds a wrapper's decompressed size.
    """
    if pos < 0 or len(buf) - pos < LOG_OVERHEAD:
        raise FormatError(
            "entry offset/size header runs past the end of the data",
            path=path,
            position=pos,
            field="legacy entry",
        )
    offset, size = FRAME.unpack_from(buf, pos)
    start = pos + LOG_OVERHEAD
    _check_size(size, len(buf) - start, path=path, position=pos + 8)
    message = _parse_message(
        bytes(buf[start : start + size]), offset=offset, position=pos, path=path, base=start
    )
    if not message.is_compressed:
        return LegacyEntry(message=message)
    return LegacyEntry(message=message, inner=_inner_messages(message, path, max_size))


def _check_size(size: int, available: int, *, path: str | None, position: int) -> None:
    if size < RECORD_OVERHEAD_V0:
        raise FormatError(
            f"message size {size} is less than the minimum record overhead ({RECORD_OVERHEAD_V0})",
            path=path,
            position=position,
            field="size",
        )
    if size > available:
        raise FormatError(
            f"message size {size} runs past the end of the data ({available} bytes left)",
            path=path,
            position=position,
            field="size",
        )


def _parse_message(
    data: bytes, *, offset: int, position: int, path: str | None, base: int
) -> LegacyMessage:
    """Parse one message (``data`` = exactly ``size`` bytes, at least the v0 overhead)."""
    magic = data[4]
    if magic not in (0, 1):
        raise FormatError(
            f"invalid magic {magic} for a legacy message",
            path=path,
            position=base + 4,
            field="magic",
        )
    fields = _fast_fields(data, magic)
    if fields is None:  # malformed: let the construct definition find and locate the problem
        parse_exact(_MESSAGE, data, what="legacy message", path=path, base=base)
        raise FormatError("malformed legacy message", path=path, position=base)
    crc, attributes, timestamp, key, value = fields
    return LegacyMessage(
        offset=offset,
        position=position,
        size=len(data),
        crc=crc,
        computed_crc=zlib.crc32(data[4:]),
        magic=magic,
        attributes=attributes,
        timestamp=timestamp,
        key=key,
        value=value,
    )


def _fast_fields(
    data: bytes, magic: int
) -> tuple[int, int, int, bytes | None, bytes | None] | None:
    """The ``_MESSAGE`` fields read with ``struct`` (the hot path), or None if malformed."""
    n = len(data)
    p = HEADER_SIZE[magic]
    if n < p + 8:
        return None
    crc = _U32.unpack_from(data, 0)[0]
    attributes = _I8.unpack_from(data, 5)[0]
    timestamp = _I64.unpack_from(data, 6)[0] if magic == 1 else NO_TIMESTAMP
    key_len = _I32.unpack_from(data, p)[0]
    p += 4
    if key_len < -1 or p + max(key_len, 0) + 4 > n:
        return None
    key = None if key_len == -1 else data[p : p + key_len]
    p += max(key_len, 0)
    value_len = _I32.unpack_from(data, p)[0]
    p += 4
    if value_len < -1 or p + max(value_len, 0) != n:
        return None
    value = None if value_len == -1 else data[p:]
    return crc, attributes, timestamp, key, value


def _value_position(message: LegacyMessage) -> int:
    key_len = 0 if message.key is None else len(message.key)
    return message.position + LOG_OVERHEAD + HEADER_SIZE[message.magic] + 4 + key_len + 4


def _inner_messages(
    wrapper: LegacyMessage, path: str | None, max_size: int
) -> tuple[LegacyMessage, ...]:
    """``DeepRecordsIterator``: decompress the wrapper value and compute absolute offsets."""
    value_pos = _value_position(wrapper)
    codec = wrapper.codec
    if codec not in (Codec.GZIP, Codec.SNAPPY, Codec.LZ4):
        raise FormatError(
            f"invalid compression {wrapper.compression} for a magic {wrapper.magic} wrapper",
            path=path,
            position=wrapper.position + LOG_OVERHEAD + 5,
            field="attributes",
        )
    if wrapper.value is None:
        raise FormatError(
            "compressed wrapper message has a null value",
            path=path,
            position=value_pos - 4,
            field="value",
        )
    try:
        raw = decompress(codec, wrapper.value, magic=wrapper.magic, max_size=max_size)
    except FormatError as exc:
        raise FormatError(exc.message, path=path, position=value_pos, field=exc.field) from None

    def fail(at: int, message: str) -> FormatError:
        return FormatError(
            f"at byte {at} of the decompressed inner message set: {message}",
            path=path,
            position=value_pos,
            field="inner message",
        )

    stored: list[LegacyMessage] = []
    i = 0
    while i < len(raw):
        if len(raw) - i < LOG_OVERHEAD:
            raise fail(i, "offset/size header is truncated")
        offset, size = FRAME.unpack_from(raw, i)
        try:
            # Positions inside the decompressed data, reported in the message text.
            _check_size(size, len(raw) - i - LOG_OVERHEAD, path=path, position=i + 8)
            m = _parse_message(
                raw[i + LOG_OVERHEAD : i + LOG_OVERHEAD + size],
                offset=offset,
                position=wrapper.position,
                path=path,
                base=i + LOG_OVERHEAD,
            )
        except FormatError as exc:
            what = f"{exc.field}: {exc.message}" if exc.field else exc.message
            raise fail(i, f"{what} (decompressed byte {exc.position})") from None
        if m.is_compressed:
            raise fail(i, "inner messages must not be compressed")
        stored.append(m)
        i += LOG_OVERHEAD + size
    if not stored:
        raise fail(0, "compressed message set has no inner messages")

    if wrapper.magic == 1:
        last_relative = stored[-1].offset
        if wrapper.offset == 0:
            base = 0  # produce data from some librdkafka versions
        elif wrapper.offset < last_relative:
            raise FormatError(
                f"wrapper offset {wrapper.offset} is less than the last inner relative offset "
                f"{last_relative} and not zero",
                path=path,
                position=wrapper.position,
                field="offset",
            )
        else:
            base = wrapper.offset - last_relative
    else:
        base = 0  # v0 inner offsets are absolute
    _check_offset_span(base + stored[0].offset, wrapper, path)
    return tuple(
        dataclasses.replace(
            m,
            offset=base + m.offset,
            wrapper_timestamp=wrapper.effective_timestamp,
            wrapper_timestamp_type=wrapper.timestamp_type_id,
        )
        for m in stored
    )


INT32_MAX = 2**31 - 1


def _check_offset_span(first: int, wrapper: LegacyMessage, path: str | None) -> None:
    """A wrapper's offsets (first inner .. its own) must fit a batch's int32 offset delta: Kafka's
    ``LogSegment#ensureOffsetInRange`` refuses an offset more than ``Integer.MAX_VALUE`` past the
    segment's base (``LogSegmentOffsetOverflowException``), so no broker can have written it."""
    span = wrapper.offset - first
    if not -INT32_MAX - 1 <= span <= INT32_MAX:
        raise FormatError(
            f"inner offsets from {first} to the wrapper offset {wrapper.offset} span {span} "
            f"offsets, more than a segment's int32 relative offsets hold (Kafka's "
            f"LogSegmentOffsetOverflowException)",
            path=path,
            position=wrapper.position,
            field="offset",
        )


# --- building -----------------------------------------------------------------------------------


def build_legacy_message(
    *,
    magic: int,
    attributes: int = 0,
    timestamp: int = NO_TIMESTAMP,
    key: bytes | None = None,
    value: bytes | None = None,
    crc: int | None = None,
) -> bytes:
    """One message (no offset/size prefix); the CRC is computed unless ``crc`` is given."""
    if magic not in (0, 1):
        raise ValueError(f"legacy magic must be 0 or 1, not {magic}")
    body = _MESSAGE.build(
        {
            "crc": 0,
            "magic": magic,
            "attributes": attributes,
            "timestamp": timestamp if magic >= 1 else None,
            "key": key,
            "value": value,
        }
    )
    if crc is None:
        crc = zlib.crc32(body[4:])
    return struct.pack(">I", crc) + body[4:]


def _frame(offset: int, message: bytes) -> bytes:
    return _ENTRY_HEADER.build({"offset": offset, "size": len(message)}) + message


def build_legacy_entry(
    *,
    offset: int,
    magic: int,
    key: bytes | None = None,
    value: bytes | None = None,
    timestamp: int = NO_TIMESTAMP,
    timestamp_type: int = CREATE_TIME,
    compression: int = Codec.NONE,
    inner: Sequence[LegacyRecordSpec] = (),
) -> bytes:
    """Build one log entry as Kafka's ``MemoryRecordsBuilder`` + broker would have written it.

    Uncompressed: a single message with ``key``/``value``. Compressed (gzip/snappy/lz4): a
    wrapper whose value is the compressed set of ``inner`` (key, value, timestamp) messages;
    ``offset`` is the wrapper offset = the absolute offset of the last inner message. Inner offsets
    are written relative (0, 1, ...) for magic 1 and absolute for magic 0.
    """
    attributes = compression & CODEC_MASK
    if magic >= 1 and timestamp_type == LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if magic == 0:
        timestamp = NO_TIMESTAMP
    if compression == Codec.NONE:
        if inner:
            raise ValueError("inner messages need a compression codec")
        message = build_legacy_message(
            magic=magic, attributes=attributes, timestamp=timestamp, key=key, value=value
        )
        return _frame(offset, message)
    if compression not in (Codec.GZIP, Codec.SNAPPY, Codec.LZ4):
        raise ValueError(f"codec {name_for(compression)} is not allowed for legacy messages")
    if not inner or value is not None:
        raise ValueError("a compressed wrapper needs inner messages and no value of its own")
    n = len(inner)
    first = 0 if magic == 1 else offset - n + 1
    inner_attributes = attributes & TIMESTAMP_TYPE_MASK
    inner_set = b"".join(
        _frame(
            first + i,
            build_legacy_message(
                magic=magic,
                attributes=inner_attributes,
                timestamp=ts if magic >= 1 else NO_TIMESTAMP,
                key=k,
                value=v,
            ),
        )
        for i, (k, v, ts) in enumerate(inner)
    )
    message = build_legacy_message(
        magic=magic,
        attributes=attributes,
        timestamp=timestamp,
        key=key,
        value=compress(compression, inner_set, magic=magic),
    )
    return _frame(offset, message)


def encode_legacy_entry(entry: LegacyEntry) -> bytes:
    """Serialize a parsed top-level entry back to bytes, stored fields as they are (the CRC is
    not recomputed; a wrapper's value already holds its compressed inner set)."""
    m = entry.message
    message = build_legacy_message(
        magic=m.magic,
        attributes=m.attributes,
        timestamp=m.timestamp,
        key=m.key,
        value=m.value,
        crc=m.crc,
    )
    return _frame(m.offset, message)
