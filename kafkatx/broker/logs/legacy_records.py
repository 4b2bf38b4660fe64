"""Message format conversion for the old protocol versions Kafka 3.x still serves.

Up-conversion (Produce v0-v2 carrying magic 0/1 message sets): ``UnifiedLog#
analyzeAndValidateRecords`` (per shallow entry: size against ``max.message.bytes``, CRC) and
``LogValidator#convertAndAssignOffsetsNonCompressed`` /
``#validateMessagesAndAssignOffsetsCompressed`` (all entries of one magic; a compressed wrapper
alone in its request; inner messages' CRCs checked) turn the message set into the one v2 batch
Kafka writes: the records with fresh offsets, their keys and values, their timestamps (-1 from
magic 0), no producer id, the wrapper's codec (``compression.type=producer``). Key and size rules
of the v2 batch then apply as for any append.

Down-conversion (Fetch v0-v3, which only know magic 0/1): ``RecordsUtil#downConvert`` per batch
(control batches dropped, ZSTD refused, records of an uncompressed batch below the fetch offset
left out, headers dropped, one legacy entry per record or one compressed wrapper per batch with
relative inner offsets for magic 1 and absolute ones for magic 0, LogAppendTime carried) inside
``LazyDownConversionRecords`` / ``LazyDownConversionRecordsSend``: the answer declares
max(read size, first converted batch) bytes and pads what the conversion did not fill with an
"overflow" entry the client ignores as a partial message.
"""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkatx.broker.logs.batch_header import BatchFrameError, BatchHeader, split_batches
from kafkatx.broker.logs.log_values import AppendError
from kafkatx.errors import FormatError
from kafkatx.formats.batch_layout import (
    FRAME,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    RECORD_BATCH_OVERHEAD,
)
from kafkatx.formats.compression import Codec, compress
from kafkatx.formats.legacy_message import (
    RECORD_OVERHEAD_V0,
    TIMESTAMP_TYPE_MASK,
    LegacyEntry,
    build_legacy_message,
    parse_legacy_entry,
)
from kafkatx.formats.record_batch import Record, build_batch, iter_records, parse_header

MAX_READ_SIZE = 128 * 1024  # LazyDownConversionRecordsSend.MAX_READ_SIZE
MIN_OVERFLOW_MESSAGE_LENGTH = LOG_OVERHEAD
ZSTD = 4


class UnsupportedCompression(Exception):
    """``UnsupportedCompressionTypeException``: a ZSTD batch cannot become magic 0/1."""


def first_magic(records: bytes) -> int | None:
    """The magic of the first entry (None when there are too few bytes to say)."""
    return records[MAGIC_OFFSET] if len(records) > MAGIC_OFFSET else None


# -- up-conversion (produce) ------------------------------------------------------------------


def _legacy_entries(records: bytes, name: str, max_message_bytes: int) -> list[LegacyEntry]:
    """The complete shallow entries (``ByteBufferLogInputStream``: a partial tail is left out),
    each checked as ``analyzeAndValidateRecords`` does."""
    entries: list[LegacyEntry] = []
    first: int | None = None
    pos = 0
    while len(records) - pos >= LOG_OVERHEAD:
        size = FRAME.unpack_from(records, pos)[1]
        if size < RECORD_OVERHEAD_V0:
            raise AppendError(ErrorCode.corrupt_message,
                              f"Record size {size} is less than the minimum record overhead "
                              f"({RECORD_OVERHEAD_V0})")
        if len(records) - pos < LOG_OVERHEAD + size:
            break
        magic = records[pos + MAGIC_OFFSET]
        if magic > 2:
            raise AppendError(ErrorCode.corrupt_message, f"Invalid magic found in record: {magic}")
        first = magic if first is None else first
        if magic != first:
            raise AppendError(ErrorCode.invalid_record,
                              f"Batch magic {magic} is not the same as the first batch's magic "
                              f"byte {first} in topic partition {name}")
        if LOG_OVERHEAD + size > max_message_bytes:
            raise AppendError(ErrorCode.message_too_large,
                              f"The record batch size in the append to {name} is "
                              f"{LOG_OVERHEAD + size} bytes which exceeds the maximum configured "
                              f"value of {max_message_bytes}.")
        try:
            entry = parse_legacy_entry(records, pos)
        except FormatError as exc:
            raise AppendError(ErrorCode.corrupt_message,
                              f"Record is corrupt in topic partition {name}: {exc}") from None
        if not entry.message.crc_valid:
            raise AppendError(ErrorCode.corrupt_message,
                              f"Record is corrupt (stored crc = {entry.message.crc}) in topic "
                              f"partition {name}.")
        for inner in entry.inner:
            if not inner.crc_valid:
                raise AppendError(ErrorCode.corrupt_message,
                                  f"Record is corrupt (stored crc = {inner.crc}, computed crc = "
                                  f"{inner.computed_crc}) in topic partition {name}")
        entries.append(entry)
        pos += LOG_OVERHEAD + size
    return entries


def up_convert(records: bytes, name: str, max_message_bytes: int) -> bytes:
    """The v2 batch (base offset 0) Kafka makes of a magic 0/1 message set; ``AppendError``
    for what it refuses."""
    entries = _legacy_entries(records, name, max_message_bytes)
    if not entries:
        raise AppendError(ErrorCode.invalid_record, "Record batch has no batches at all")
    codec = next((e.message.codec for e in entries if e.message.is_compressed), Codec.NONE)
    if codec != Codec.NONE and len(entries) > 1:
        raise AppendError(ErrorCode.invalid_record,
                          "Compressed outer record has more than one batch")
    converted = [Record(offset=i, timestamp=m.effective_timestamp, key=m.key, value=m.value)
                 for i, m in enumerate(m for e in entries for m in e.records)]
    return build_batch(converted, base_offset=0, compression_id=codec)


# -- down-conversion (fetch) ------------------------------------------------------------------


def _legacy_frame(offset: int, message: bytes) -> bytes:
    return FRAME.pack(offset, len(message)) + message


def _convert_batch(data: bytes, position: int, to_magic: int, fetch_offset: int) -> bytes:
    """``RecordsUtil#downConvert`` + ``#convertRecordBatch`` for one v2 batch."""
    header = parse_header(data, position)
    if header.is_control:
        return b""
    if header.compression_id == ZSTD:
        raise UnsupportedCompression("Down-conversion of zstandard-compressed batches is not "
                                     "supported")
    compressed = header.compression_id != Codec.NONE
    records = [r for r in iter_records(data, position, header)
               if compressed or r.offset >= fetch_offset]
    if not records:
        return b""
    log_append = header.timestamp_type == "LogAppendTime"
    append_time = header.max_timestamp if log_append else -1
    attributes = TIMESTAMP_TYPE_MASK if log_append and to_magic >= 1 else 0

    def message(r: Record, codec_attributes: int = 0, value: bytes | None = None,
                timestamp: int | None = None) -> bytes:
        return build_legacy_message(
            magic=to_magic, attributes=attributes | codec_attributes,
            timestamp=(append_time if log_append else r.timestamp) if timestamp is None
            else timestamp, key=r.key if value is None else None,
            value=r.value if value is None else value)

    if not compressed:
        return b"".join(_legacy_frame(r.offset, message(r)) for r in records)
    base = records[0].offset
    inner = b"".join(_legacy_frame(r.offset - base if to_magic >= 1 else r.offset, message(r))
                     for r in records)
    wrapper_ts = append_time if log_append else max((r.timestamp for r in records), default=-1)
    wrapper = message(records[-1], header.compression_id,
                      compress(header.compression_id, inner, magic=to_magic), wrapper_ts)
    return _legacy_frame(records[-1].offset, wrapper)


def _convert(data: bytes, headers: list[BatchHeader], to_magic: int, fetch_offset: int
             ) -> bytes:
    return b"".join(_convert_batch(data, h.position, to_magic, fetch_offset) for h in headers)


def _converted_chunks(data: bytes, headers: list[BatchHeader], to_magic: int,
                      fetch_offset: int) -> tuple[bytes | None, list[bytes]]:
    """(the first converted batch, every chunk ``LazyDownConversionRecordsSend`` writes).

    ``LazyDownConversionRecords``' constructor converts batch after batch until one gives
    bytes; the send's iterator then skips one batch only (as Kafka's does, so after leading
    control batches the first data batch is converted a second time) and converts groups of
    batches up to ``MAX_READ_SIZE``, skipping groups that give nothing; a ZSTD batch after the
    first stops the conversion (the rest is padded)."""
    first = None
    for h in headers:
        first = _convert(data, [h], to_magic, fetch_offset)
        if first:
            break
    if not first:
        return None, []
    chunks = [first]
    i = 1
    while i < len(headers):
        group, size = [headers[i]], headers[i].size
        i += 1
        while i < len(headers) and size + headers[i].size <= MAX_READ_SIZE:
            group.append(headers[i])
            size += headers[i].size
            i += 1
        try:
            converted = _convert(data, group, to_magic, fetch_offset)
        except UnsupportedCompression:
            break
        if converted:
            chunks.append(converted)
    return first, chunks


def down_convert(data: bytes, to_magic: int, fetch_offset: int) -> bytes:
    """The bytes a Fetch v0-v3 answer carries for ``data`` (v2 batches read from the log):
    ``UnsupportedCompression`` when the first batch to convert is ZSTD (the partition's error
    then)."""
    try:
        headers = split_batches(data)[0]
    except BatchFrameError:
        headers = []
    first, chunks = _converted_chunks(data, headers, to_magic, fetch_offset)
    if first is not None:
        declared = max(len(data), len(first))
    else:
        declared = MIN_OVERFLOW_MESSAGE_LENGTH if headers else 0
    out = bytearray()
    for chunk in chunks:
        if len(out) >= declared:
            break
        out += chunk[:declared - len(out)]
    while len(out) < declared:  # buildOverflowBatch, as many times as it takes
        remaining = declared - len(out)
        overflow = bytearray(max(MIN_OVERFLOW_MESSAGE_LENGTH, min(remaining + 1, MAX_READ_SIZE)))
        FRAME.pack_into(overflow, 0, -1, max(remaining + 1, RECORD_BATCH_OVERHEAD))
        out += overflow[:remaining]
    return bytes(out)
