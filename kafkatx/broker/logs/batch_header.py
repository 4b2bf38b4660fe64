"""The 61-byte v2 batch header, read and patched in place with ``struct`` (the broker's hot path).

The layout is :mod:`kafkatx.formats.batch_layout`'s (``DefaultRecordBatch``'s offsets);
``kafkatx.formats.record_batch`` is the full, validating parser used everywhere else. The patch
helpers mirror ``DefaultRecordBatch#setLastOffset`` (base offset: not covered by the CRC),
``setPartitionLeaderEpoch`` (not covered either) and ``setMaxTimestamp`` (attributes and max
timestamp change, so the CRC is recomputed).
"""

from __future__ import annotations

from dataclasses import fields

from kafkatx.formats.batch_layout import (
    ATTRIBUTES_FIELD,
    ATTRIBUTES_OFFSET,
    BASE_OFFSET_FIELD,
    BASE_OFFSET_OFFSET,
    CRC_FIELD,
    CRC_OFFSET,
    CRC_START,
    HEADER,
    HEADER_SIZE_UP_TO_MAGIC,
    LENGTH_FIELD,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V2,
    MAX_TIMESTAMP_FIELD,
    MAX_TIMESTAMP_OFFSET,
    MIN_BATCH_LENGTH,
    PARTITION_LEADER_EPOCH_FIELD,
    PARTITION_LEADER_EPOCH_OFFSET,
    TIMESTAMP_TYPE_MASK,
)
from kafkatx.formats.batchscan import crc32c_of
from kafkatx.formats.record_batch import NO_PRODUCER_ID, RecordBatchHeader
from kafkatx.lazy_dataclass import dataclass

_FIELDS = tuple(f.name for f in fields(RecordBatchHeader))


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchHeader(RecordBatchHeader):
    """A v2 header (``RecordBatchHeader``'s fields and rules) found at ``position`` in a buffer."""

    position: int

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID


# The dataclass __init__ of a frozen class only assigns its fields, one object.__setattr__ each;
# setting the slots directly builds the same object in less than half the time (this runs for
# every produced batch).
assert not hasattr(RecordBatchHeader, "__post_init__")
_SETTERS = tuple(getattr(BatchHeader, name).__set__ for name in _FIELDS)
_SET_POSITION = BatchHeader.position.__set__
_new = object.__new__


def _header_at(data: bytes | bytearray | memoryview, position: int) -> BatchHeader:
    header = _new(BatchHeader)
    for setter, value in zip(_SETTERS, HEADER.unpack_from(data, position), strict=True):
        setter(header, value)
    _SET_POSITION(header, position)
    return header


class BatchFrameError(ValueError):
    """A frame that is not a usable v2 batch; ``kind`` is "magic" or "length"."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


def split_batches(data: bytes | bytearray | memoryview) -> tuple[list[BatchHeader], int]:
    """Headers of the complete batches in ``data`` and the number of bytes they cover.

    Like ``MemoryRecords#batches`` / ``ByteBufferLogInputStream``: iteration stops at a frame too
    short to hold its declared size (a partial trailing batch is not an error). Raises
    ``BatchFrameError`` for a frame whose magic is not 2 or whose length is below the minimum.
    """
    out: list[BatchHeader] = []
    pos = 0
    end = len(data)
    while end - pos >= LOG_OVERHEAD:
        length = LENGTH_FIELD.unpack_from(data, pos + LENGTH_OFFSET)[0]
        if end - pos >= HEADER_SIZE_UP_TO_MAGIC and data[pos + MAGIC_OFFSET] != MAGIC_V2:
            raise BatchFrameError(f"batch at byte {pos} has magic {data[pos + MAGIC_OFFSET]}, "
                                  "not 2", "magic")
        if length < MIN_BATCH_LENGTH:
            raise BatchFrameError(f"batch at byte {pos} has length {length}, below the minimum "
                                  f"{MIN_BATCH_LENGTH}", "length")
        if pos + LOG_OVERHEAD + length > end:
            break
        out.append(_header_at(data, pos))
        pos += LOG_OVERHEAD + length
    return out, pos


def crc_valid(data: bytes | bytearray | memoryview, header: BatchHeader) -> bool:
    """``DefaultRecordBatch#isValid``: CRC-32C over [attributes, end of batch)."""
    start = header.position
    return crc32c_of(memoryview(data)[start + CRC_START:start + header.size]) == header.crc


def set_base_offset(buf: bytearray, position: int, base_offset: int) -> None:
    BASE_OFFSET_FIELD.pack_into(buf, position + BASE_OFFSET_OFFSET, base_offset)


def set_partition_leader_epoch(buf: bytearray, position: int, epoch: int) -> None:
    PARTITION_LEADER_EPOCH_FIELD.pack_into(buf, position + PARTITION_LEADER_EPOCH_OFFSET, epoch)


def set_log_append_time(buf: bytearray, header: BatchHeader, now_ms: int) -> None:
    """``setMaxTimestamp(LOG_APPEND_TIME, now)``: timestamp-type bit, max timestamp, new CRC."""
    pos = header.position
    ATTRIBUTES_FIELD.pack_into(buf, pos + ATTRIBUTES_OFFSET,
                               header.attributes | TIMESTAMP_TYPE_MASK)
    MAX_TIMESTAMP_FIELD.pack_into(buf, pos + MAX_TIMESTAMP_OFFSET, now_ms)
    crc = crc32c_of(memoryview(buf)[pos + CRC_START:pos + header.size])
    CRC_FIELD.pack_into(buf, pos + CRC_OFFSET, crc)


def read_header(data: bytes | bytearray | memoryview, position: int = 0) -> BatchHeader:
    return _header_at(data, position)
