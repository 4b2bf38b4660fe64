"""RecordBatch magic v2: header, records, control records (segment ``.log`` files, Produce/Fetch).

Mirrors Kafka's ``DefaultRecordBatch`` (header layout, CRC-32C over [attributes, end), attributes
bits, ``incrementSequence``), ``DefaultRecord`` (varint record layout), ``ControlRecordType`` and
``EndTransactionMarker`` (control record key/value), and
``MemoryRecords#writeEndTransactionalMarker`` (how a broker builds a COMMIT/ABORT marker batch).
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Iterator, Sequence
from dataclasses import field

import construct as c

from kafkatx.errors import FormatError
from kafkatx.formats import compression
from kafkatx.formats.batch_layout import (
    COMPRESSION_MASK,
    CONTROL_FLAG,
    CRC_FIELD,
    CRC_OFFSET,
    CRC_START,
    DELETE_HORIZON_FLAG,
    HEADER,
    HEADER_FIELDS,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    MIN_BATCH_LENGTH,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG,
)
from kafkatx.formats.batch_values import (
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    ControlType,
    control_type_name,
    increment_sequence,
)
from kafkatx.formats.batchscan import crc32c_of
from kafkatx.formats.primitives import (
    Int8,
    Int16,
    Int32,
    VarInt,
    VarIntArray,
    VarIntNullableBytes,
    VarIntString,
    VarLong,
    parse_exact,
    read_varint,
    read_varlong,
)
from kafkatx.formats.record_values import (  # Record, render_bytes: re-exported
    Record,
    decoded_in_c,
    payload_at,
    render_bytes,  # noqa: F401
)
from kafkatx.lazy_dataclass import dataclass

_CONTROL_KEY_STRUCT = struct.Struct(">hh")
_END_TXN_MARKER_STRUCT = struct.Struct(">hi")

_HEADER_FIELD = c.Struct("key" / VarIntString, "value" / VarIntNullableBytes)

# DefaultRecord without its leading length varint (the length frames it; see _read_record).
_RECORD_BODY = c.Struct(
    "attributes" / Int8,
    "timestamp_delta" / VarLong,
    "offset_delta" / VarInt,
    "key" / VarIntNullableBytes,
    "value" / VarIntNullableBytes,
    "headers" / VarIntArray(_HEADER_FIELD),
)

# ControlRecordType.json (key) and EndTxnMarker.json (value): both version 0, not flexible.
_CONTROL_KEY = c.Struct("version" / Int16, "type" / Int16)
_END_TXN_MARKER_VALUE = c.Struct("version" / Int16, "coordinator_epoch" / Int32)


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordBatchHeader:
    """The 61-byte v2 header exactly as stored (raw wire values)."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def compression_id(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def compression(self) -> str:
        return compression.name_for(self.compression_id)

    @property
    def timestamp_type(self) -> str:
        return "LogAppendTime" if self.attributes & TIMESTAMP_TYPE_MASK else "CreateTime"

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_FLAG)

    @property
    def delete_horizon_ms(self) -> int | None:
        """KIP-534: with the delete-horizon bit set, baseTimestamp holds the horizon."""
        return self.base_timestamp if self.has_delete_horizon else None

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return increment_sequence(self.base_sequence, self.last_offset_delta)


@dataclass(frozen=True, slots=True, kw_only=True)
class ControlRecord:
    """The control record of a control batch (first record; Kafka reads only its key type)."""

    type_id: int
    key_version: int
    coordinator_epoch: int | None = None
    value_version: int | None = None
    raw_value: bytes | None = None

    @property
    def type(self) -> str:
        return control_type_name(self.type_id)

    @property
    def is_end_txn_marker(self) -> bool:
        return self.type_id in (ControlType.ABORT, ControlType.COMMIT)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"type": self.type}
        if self.type == "UNKNOWN":
            out["type_id"] = self.type_id
        if self.coordinator_epoch is not None:
            out["coordinator_epoch"] = self.coordinator_epoch
        elif self.raw_value is not None:
            out["value_base64"] = base64.b64encode(self.raw_value).decode("ascii")
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordBatch:
    """A v2 batch as read from ``path`` at byte ``position``."""

    header: RecordBatchHeader
    position: int
    computed_crc: int
    control: ControlRecord | None = None
    records: tuple[Record, ...] | None = None
    path: str | None = field(default=None, compare=False)

    @property
    def crc_valid(self) -> bool:
        return self.computed_crc == self.header.crc

    def to_dict(self) -> dict[str, object]:
        """The ``dump --format jsonl`` contract for one batch."""
        h = self.header
        out: dict[str, object] = {
            "base_offset": h.base_offset,
            "last_offset": h.last_offset,
            "count": h.records_count,
            "producer_id": h.producer_id,
            "producer_epoch": h.producer_epoch,
            "base_sequence": h.base_sequence,
            "last_sequence": h.last_sequence,
            "partition_leader_epoch": h.partition_leader_epoch,
            "is_transactional": h.is_transactional,
            "is_control": h.is_control,
            "position": self.position,
            "size": h.size,
            "magic": h.magic,
            "compression": h.compression,
            "timestamp_type": h.timestamp_type,
            "base_timestamp": h.base_timestamp,
            "max_timestamp": h.max_timestamp,
            "delete_horizon_ms": h.delete_horizon_ms,
            "crc": h.crc,
            "crc_valid": self.crc_valid,
        }
        if self.control is not None:
            out["control"] = self.control.to_dict()
        if self.records is not None:
            out["records"] = [r.to_dict() for r in self.records]
        return out


# ---------------------------------------------------------------------------------------------
# Reading


def parse_header(
    buf: bytes | memoryview, pos: int = 0, *, path: str | None = None
) -> RecordBatchHeader:
    """Parse the 61-byte header at ``pos`` (does not check the CRC or the batch length)."""
    if len(buf) - pos < HEADER_SIZE:
        raise FormatError(
            f"batch header needs {HEADER_SIZE} bytes, {max(len(buf) - pos, 0)} remain",
            path=path, position=pos, field="record batch header",
        )
    return RecordBatchHeader(**dict(zip(HEADER_FIELDS, HEADER.unpack_from(buf, pos),
                                        strict=True)))


def compute_crc(buf: bytes | memoryview, pos: int, size: int) -> int:
    """CRC-32C over [attributes, end) of the batch at ``pos`` (DefaultRecordBatch#isValid)."""
    return crc32c_of(memoryview(buf)[pos + CRC_START : pos + size])


def parse_batch(
    buf: bytes | memoryview,
    pos: int = 0,
    *,
    path: str | None = None,
    decode_records: bool = False,
    decode_control: bool = True,
) -> RecordBatch:
    """Parse the v2 batch at ``pos``: header, CRC, control record; records when asked
    (``record_decode.read_records``: construct's :func:`iter_records` is their definition).

    Raises FormatError when the header is unusable (magic != 2, length too small or past the end
    of ``buf``) or, with ``decode_records``, when the records do not decode. A CRC mismatch is not
    an exception: it shows as ``crc_valid == False``.
    """
    header = parse_header(buf, pos, path=path)
    if header.magic != MAGIC_V2:
        raise FormatError(f"magic {header.magic} is not 2", path=path, position=pos + 16,
                          field="magic")
    if header.batch_length < MIN_BATCH_LENGTH:
        raise FormatError(f"batch length {header.batch_length} is below the minimum "
                          f"{MIN_BATCH_LENGTH}", path=path, position=pos + 8, field="batch_length")
    if pos + header.size > len(buf):
        raise FormatError(
            f"batch of {header.size} bytes runs past the end of the data "
            f"({len(buf) - pos} bytes remain)",
            path=path, position=pos, field="batch_length",
        )
    computed = compute_crc(buf, pos, header.size)
    control = None
    if decode_control and header.is_control and header.records_count > 0:
        control = _read_control(buf, pos, header, path)
    records = None
    if decode_records:
        # The C decoder, iter_records for every batch it refuses (the same records, the same
        # errors: record_decode.read_records)
        fast = decoded_in_c(buf, pos, header.size, header.attributes, header.records_count,
                            header.base_offset, header.base_timestamp, header.max_timestamp,
                            path)
        records = tuple(fast if fast is not None else iter_records(buf, pos, header, path=path))
    return RecordBatch(header=header, position=pos, computed_crc=computed, control=control,
                       records=records, path=path)


def records_payload(
    buf: bytes | memoryview, pos: int, header: RecordBatchHeader, path: str | None
) -> tuple[bytes, int]:
    """Return the (decompressed) records bytes and the file position of the payload."""
    return payload_at(buf, pos, header.size, header.compression_id, path)


def iter_records(
    buf: bytes | memoryview, pos: int, header: RecordBatchHeader, *, path: str | None = None
) -> Iterator[Record]:
    """Decode the records of the batch at ``pos`` (DefaultRecord#readFrom for each)."""
    data, payload_pos = records_payload(buf, pos, header, path)
    compressed = header.compression_id != 0
    log_append = bool(header.attributes & TIMESTAMP_TYPE_MASK)
    cursor = 0
    for i in range(header.records_count):
        where = payload_pos + (0 if compressed else cursor)
        try:
            length, body_start = read_varint(data, cursor)
        except FormatError as exc:
            raise FormatError(f"record {i}: {exc.message}", path=path, position=where,
                              field="record length") from None
        if length < 0 or body_start + length > len(data):
            raise FormatError(
                f"record {i}: length {length} does not fit in the batch "
                f"(declared {header.records_count} records)",
                path=path, position=where, field="record length",
            )
        body = parse_exact(_RECORD_BODY, data[body_start : body_start + length],
                           what=f"record {i}", path=path,
                           base=payload_pos + (0 if compressed else body_start))
        timestamp = (header.max_timestamp if log_append
                     else header.base_timestamp + body.timestamp_delta)
        yield Record(
            offset=header.base_offset + body.offset_delta,
            timestamp=timestamp,
            key=body.key,
            value=body.value,
            headers=tuple((h.key, h.value) for h in body.headers),
            attributes=body.attributes,
            position=None if compressed else payload_pos + cursor,
        )
        cursor = body_start + length
    if cursor != len(data):
        raise FormatError(
            f"{len(data) - cursor} bytes left after the {header.records_count} declared records",
            path=path, position=payload_pos + (0 if compressed else cursor), field="records",
        )


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """A zigzag varint/varlong at ``at`` (the one-byte case inline, the rest by
    ``read_varlong``, which bounds the length)."""
    b = data[at]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), at + 1
    return read_varlong(data, at)


def iter_key_values(
    buf: bytes | memoryview, pos: int, header: RecordBatchHeader, *, path: str | None = None
) -> Iterator[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of each record of the batch at ``pos``: the fixed layout of
    ``DefaultRecord#readFrom`` walked directly (headers skipped), for the coordinators' loads,
    which read every record of their partitions. Raises ``FormatError`` where
    :func:`iter_records` would (a test proves both agree)."""
    data, payload_pos = records_payload(buf, pos, header, path)
    end = len(data)
    base = header.base_offset
    cursor = 0
    for i in range(header.records_count):
        try:
            length, at = _varint(data, cursor)
            stop = at + length
            if length < 0 or stop > end:
                raise FormatError(f"length {length} does not fit in the batch")
            _, at = _varint(data, at + 1)  # attributes, then the timestamp delta
            offset_delta, at = _varint(data, at)
            key_len, at = _varint(data, at)
            if key_len < 0:
                key = None
            else:
                key = data[at:at + key_len]
                at += key_len
            value_len, at = _varint(data, at)
            if value_len < 0:
                value = None
            else:
                value = data[at:at + value_len]
                at += value_len
            if at > stop:
                raise FormatError("key and value run past the record")
        except IndexError:
            exc = FormatError("record runs past the end of the batch")
        except FormatError as error:
            exc = error
        else:
            yield base + offset_delta, key, value
            cursor = stop
            continue
        raise FormatError(f"record {i}: {exc.message}", path=path,
                          position=payload_pos + (0 if header.compression_id else cursor),
                          field="record")
    if cursor != end:
        raise FormatError(
            f"{end - cursor} bytes left after the {header.records_count} declared records",
            path=path, position=payload_pos + (0 if header.compression_id else cursor),
            field="records")


def _read_control(
    buf: bytes | memoryview, pos: int, header: RecordBatchHeader, path: str | None
) -> ControlRecord:
    _, first_key, first_value = next(iter_key_values(buf, pos, header, path=path))
    if first_key is None or len(first_key) < 4:
        raise FormatError("control record key is shorter than 4 bytes", path=path,
                          position=pos + HEADER_SIZE, field="control key")
    # Readers parse newer key versions as the highest known one (only fields appended).
    key_version, key_type = _CONTROL_KEY_STRUCT.unpack_from(first_key, 0)
    if key_version < 0:
        raise FormatError(f"control key version {key_version}", path=path,
                          position=pos + HEADER_SIZE, field="control key")
    if key_type in (ControlType.ABORT, ControlType.COMMIT):
        if first_value is None or len(first_value) < 6:
            raise FormatError("end transaction marker value is shorter than 6 bytes",
                              path=path, position=pos + HEADER_SIZE, field="marker value")
        value_version, coordinator_epoch = _END_TXN_MARKER_STRUCT.unpack_from(first_value, 0)
        return ControlRecord(type_id=key_type, key_version=key_version,
                             coordinator_epoch=coordinator_epoch, value_version=value_version)
    return ControlRecord(type_id=key_type, key_version=key_version, raw_value=first_value)


# ---------------------------------------------------------------------------------------------
# Building


def build_record_body(record: Record, *, base_offset: int, base_timestamp: int) -> bytes:
    body = _RECORD_BODY.build(
        {
            "attributes": record.attributes,
            "timestamp_delta": record.timestamp - base_timestamp,
            "offset_delta": record.offset - base_offset,
            "key": record.key,
            "value": record.value,
            "headers": [{"key": k, "value": v} for k, v in record.headers],
        }
    )
    return VarInt.build(len(body)) + body


def build_batch(
    records: Sequence[Record],
    *,
    base_offset: int | None = None,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    compression_id: int = 0,
    log_append_time: int | None = None,
    is_transactional: bool = False,
    is_control: bool = False,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    last_offset_delta: int | None = None,
    base_timestamp: int | None = None,
    max_timestamp: int | None = None,
    delete_horizon_ms: int | None = None,
) -> bytes:
    """Build a v2 batch as Kafka's MemoryRecordsBuilder would (CRC computed).

    Defaults follow Kafka: baseTimestamp = first record's timestamp, maxTimestamp = the largest
    record timestamp (CreateTime) or ``log_append_time``, lastOffsetDelta from the last record.
    ``last_offset_delta``/``max_timestamp`` may be given to build what compaction leaves behind.
    """
    if base_offset is None:
        base_offset = records[0].offset if records else 0
    first_ts = records[0].timestamp if records else NO_TIMESTAMP
    if base_timestamp is None:
        base_timestamp = first_ts
    attributes = compression_id & COMPRESSION_MASK
    if log_append_time is not None:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_FLAG
    if is_control:
        attributes |= CONTROL_FLAG
    if delete_horizon_ms is not None:
        # KIP-534: the horizon is the base timestamp and record deltas are taken from it
        # (MemoryRecordsBuilder with deleteHorizonMs), so records keep their timestamps.
        attributes |= DELETE_HORIZON_FLAG
        base_timestamp = delete_horizon_ms
    ts_base = base_timestamp
    if max_timestamp is None:
        if log_append_time is not None:
            max_timestamp = log_append_time
        else:
            max_timestamp = max((r.timestamp for r in records), default=NO_TIMESTAMP)
    if last_offset_delta is None:
        last_offset_delta = (records[-1].offset - base_offset) if records else 0
    payload = b"".join(
        build_record_body(r, base_offset=base_offset, base_timestamp=ts_base) for r in records
    )
    if compression_id:
        payload = compression.compress(compression_id, payload, magic=MAGIC_V2)
    header = bytearray(HEADER.pack(
        base_offset, MIN_BATCH_LENGTH + len(payload), partition_leader_epoch, MAGIC_V2, 0,
        attributes, last_offset_delta, base_timestamp, max_timestamp, producer_id,
        producer_epoch, base_sequence, len(records)))
    CRC_FIELD.pack_into(header, CRC_OFFSET, crc32c_of(bytes(header[CRC_START:]) + payload))
    return bytes(header) + payload


def build_control_batch(
    *,
    base_offset: int,
    producer_id: int,
    producer_epoch: int,
    control_type: int,
    timestamp: int,
    coordinator_epoch: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    value: bytes | None = None,
) -> bytes:
    """A control batch as ``MemoryRecords#writeEndTransactionalMarker`` builds it.

    Transactional + control attributes, CreateTime, no sequence, one record whose key is
    (version 0, type) and whose value is (version 0, coordinator epoch) for COMMIT/ABORT.
    """
    key = _CONTROL_KEY.build({"version": 0, "type": control_type})
    if value is None and control_type in (ControlType.ABORT, ControlType.COMMIT):
        value = _END_TXN_MARKER_VALUE.build({"version": 0, "coordinator_epoch": coordinator_epoch})
    record = Record(offset=base_offset, timestamp=timestamp, key=key, value=value)
    return build_batch(
        [record],
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        is_transactional=True,
        is_control=True,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=NO_SEQUENCE,
    )
