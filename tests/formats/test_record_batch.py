"""RecordBatch v2: round-trips, Kafka's sizes, and bytes built by real clients' record builders."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.errors import FormatError
from kafkatx.formats.record_batch import (
    ControlType,
    Record,
    build_batch,
    build_control_batch,
    increment_sequence,
    parse_batch,
)
from tests.formats.batch_edits import recrc

TS = 1_700_000_000_000

timestamps = st.integers(min_value=1_500_000_000_000, max_value=2_000_000_000_000)
producer_ids = st.integers(min_value=0, max_value=2**40)
epochs = st.integers(min_value=0, max_value=32767)
sequences = st.integers(min_value=0, max_value=2**31 - 1)
blobs = st.one_of(st.none(), st.binary(max_size=64))
headers = st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=16))),
                   max_size=3).map(tuple)


@st.composite
def record_lists(draw: st.DrawFn) -> list[Record]:
    n = draw(st.integers(min_value=1, max_value=8))
    base = draw(st.integers(min_value=0, max_value=2**40))
    t0 = draw(timestamps)
    out = []
    for i in range(n):
        out.append(Record(offset=base + i, timestamp=t0 + draw(st.integers(0, 5000)),
                          key=draw(blobs), value=draw(blobs), headers=draw(headers)))
    return out


def test_commit_marker_is_78_bytes_and_parses() -> None:
    data = build_control_batch(base_offset=42, producer_id=1000, producer_epoch=3,
                               control_type=ControlType.COMMIT, timestamp=TS, coordinator_epoch=7)
    assert len(data) == 78
    batch = parse_batch(data)
    assert batch.crc_valid
    h = batch.header
    assert (h.batch_length, h.base_offset, h.records_count) == (66, 42, 1)
    assert h.is_control and h.is_transactional
    assert (h.base_sequence, h.producer_id, h.producer_epoch) == (-1, 1000, 3)
    assert batch.control is not None
    assert batch.control.type == "COMMIT" and batch.control.coordinator_epoch == 7
    assert batch.to_dict()["control"] == {"type": "COMMIT", "coordinator_epoch": 7}


def test_marker_record_bytes_match_kafkas_layout() -> None:
    data = build_control_batch(base_offset=0, producer_id=1, producer_epoch=0,
                               control_type=ControlType.COMMIT, timestamp=TS, coordinator_epoch=5)
    # length 16, attributes 0, ts delta 0, offset delta 0, key (len 4: version 0, type 1),
    # value (len 6: version 0, coordinator epoch 5), no headers.
    assert data[61:] == bytes.fromhex("20 00 00 00 08 0000 0001 0c 0000 00000005 00")


@pytest.mark.parametrize("ctype", list(ControlType))
def test_every_control_type_is_recognised(ctype: ControlType) -> None:
    value = None if ctype in (ControlType.ABORT, ControlType.COMMIT) else b"\x00\x00raw"
    data = build_control_batch(base_offset=5, producer_id=9, producer_epoch=1,
                               control_type=ctype, timestamp=TS, value=value)
    batch = parse_batch(data)
    assert batch.control is not None and batch.control.type == ctype.name


def test_unknown_control_type_is_reported_as_unknown() -> None:
    data = build_control_batch(base_offset=5, producer_id=9, producer_epoch=1,
                               control_type=99, timestamp=TS, value=b"")
    control = parse_batch(data).control
    assert control is not None and control.type == "UNKNOWN" and control.to_dict()["type_id"] == 99


@settings(max_examples=80, deadline=None)
@given(records=record_lists(), codec=st.sampled_from([0, 1, 2, 3, 4]), pid=producer_ids,
       epoch=epochs, seq=sequences, txn=st.booleans(), ple=st.integers(-1, 1000))
def test_roundtrip(records: list[Record], codec: int, pid: int, epoch: int, seq: int,
                   txn: bool, ple: int) -> None:
    data = build_batch(records, compression_id=codec, producer_id=pid, producer_epoch=epoch,
                       base_sequence=seq, is_transactional=txn, partition_leader_epoch=ple)
    batch = parse_batch(data, decode_records=True)
    assert batch.crc_valid
    assert batch.records == tuple(records)
    h = batch.header
    assert h.size == len(data)
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (pid, epoch, seq)
    assert h.last_offset == records[-1].offset
    assert h.last_sequence == increment_sequence(seq, len(records) - 1)
    assert h.max_timestamp == max(r.timestamp for r in records)
    assert h.is_transactional is txn and not h.is_control
    assert h.compression_id == codec


def test_sequence_wraps_like_kafka() -> None:
    assert increment_sequence(2**31 - 1, 1) == 0
    assert increment_sequence(2**31 - 2, 3) == 0 + 1
    recs = [Record(offset=i, timestamp=TS, key=None, value=b"x") for i in range(3)]
    h = parse_batch(build_batch(recs, producer_id=1, producer_epoch=0,
                                base_sequence=2**31 - 2)).header
    assert h.last_sequence == 0


def test_log_append_time_gives_every_record_the_batch_timestamp() -> None:
    recs = [Record(offset=i, timestamp=TS + i, key=None, value=b"x") for i in range(3)]
    batch = parse_batch(build_batch(recs, log_append_time=TS + 999), decode_records=True)
    assert batch.header.timestamp_type == "LogAppendTime"
    assert batch.records is not None
    assert {r.timestamp for r in batch.records} == {TS + 999}


def test_delete_horizon_replaces_base_timestamp() -> None:
    """``MemoryRecordsBuilder`` with ``deleteHorizonMs`` (KIP-534): the horizon is the base
    timestamp and record deltas are taken from it, so each record keeps its timestamp."""
    recs = [Record(offset=0, timestamp=TS, key=b"k", value=None),
            Record(offset=1, timestamp=TS + 7, key=b"j", value=b"v")]
    batch = parse_batch(build_batch(recs, delete_horizon_ms=TS + 86_400_000),
                        decode_records=True)
    h = batch.header
    assert h.has_delete_horizon and h.delete_horizon_ms == TS + 86_400_000
    assert [r.timestamp for r in batch.records or ()] == [TS, TS + 7]


def test_flipped_byte_breaks_crc_not_parsing() -> None:
    data = bytearray(build_batch([Record(offset=0, timestamp=TS, key=b"k", value=b"v" * 20)]))
    data[70] ^= 0xFF
    assert not parse_batch(bytes(data)).crc_valid


def test_partition_leader_epoch_is_outside_the_crc() -> None:
    data = bytearray(build_batch([Record(offset=0, timestamp=TS, key=b"k", value=b"v")]))
    struct.pack_into(">i", data, 12, 77)
    struct.pack_into(">q", data, 0, 123456)
    batch = parse_batch(bytes(data))
    assert batch.crc_valid and batch.header.partition_leader_epoch == 77


@pytest.mark.parametrize("cut", [0, 10, 17, 60, 70])
def test_truncated_batch_raises_format_error_with_position(cut: int) -> None:
    data = build_batch([Record(offset=0, timestamp=TS, key=b"k", value=b"v" * 30)])
    with pytest.raises(FormatError) as info:
        parse_batch(b"\x00" * 5 + data[:cut], 5)
    assert info.value.position is not None and info.value.position >= 5


def test_record_count_mismatch_is_a_format_error() -> None:
    data = bytearray(build_batch([Record(offset=0, timestamp=TS, key=b"k", value=b"v")] * 1))
    struct.pack_into(">i", data, 57, 2)  # declare 2 records, 1 present
    with pytest.raises(FormatError, match="record 1"):
        parse_batch(recrc(data), decode_records=True)


# --- bytes produced by real clients' record builders ----------------------------------------


def _kafka_python_batch(codec: int, transactional: bool) -> bytes:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec,
                                  is_transactional=transactional, producer_id=4242,
                                  producer_epoch=7, base_sequence=100, batch_size=1 << 20)
    for i in range(5):
        b.append(i, timestamp=TS + i, key=f"key-{i}".encode(), value=b"value" * i,
                 headers=[("trace", b"abc"), ("n", None)])
    buf = b.build()
    struct.pack_into(">q", buf, 0, 1000)  # the broker assigns the base offset
    return bytes(buf)


@pytest.mark.parametrize("codec", [0, 1, 3, 4])
@pytest.mark.parametrize("transactional", [False, True])
def test_kafka_python_builder_batches_parse(codec: int, transactional: bool) -> None:
    data = _kafka_python_batch(codec, transactional)
    batch = parse_batch(data, decode_records=True)
    assert batch.crc_valid
    h = batch.header
    assert (h.base_offset, h.last_offset, h.records_count) == (1000, 1004, 5)
    assert (h.producer_id, h.producer_epoch) == (4242, 7)
    assert (h.base_sequence, h.last_sequence) == (100, 104)
    assert h.is_transactional is transactional and h.compression_id == codec
    assert batch.records is not None
    assert [r.key for r in batch.records] == [f"key-{i}".encode() for i in range(5)]
    assert [r.value for r in batch.records] == [b"value" * i for i in range(5)]
    assert [r.timestamp for r in batch.records] == [TS + i for i in range(5)]
    assert batch.records[0].headers == (("trace", b"abc"), ("n", None))


@pytest.mark.parametrize("codec", [0, 1, 3, 4])
def test_aiokafka_builder_batches_parse(codec: int) -> None:
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=1,
                                  producer_id=77, producer_epoch=2, base_sequence=0,
                                  batch_size=1 << 20)
    for i in range(3):
        b.append(i, timestamp=TS + 10 * i, key=None, value=f"v{i}".encode(), headers=[])
    buf = bytearray(b.build())
    struct.pack_into(">q", buf, 0, 50)
    batch = parse_batch(bytes(buf), decode_records=True)
    assert batch.crc_valid and batch.header.is_transactional
    assert batch.records is not None
    assert [(r.offset, r.value) for r in batch.records] == [(50, b"v0"), (51, b"v1"), (52, b"v2")]


@pytest.mark.parametrize("codec", [0, 1, 3, 4])
def test_our_batches_read_by_kafka_python(codec: int) -> None:
    from kafka.record.default_records import DefaultRecordBatch

    recs = [Record(offset=10 + i, timestamp=TS + i, key=b"k", value=b"v%d" % i,
                   headers=(("h", b"1"),)) for i in range(4)]
    data = build_batch(recs, compression_id=codec, producer_id=5, producer_epoch=1,
                       base_sequence=0, is_transactional=True)
    kb = DefaultRecordBatch(bytearray(data))
    assert kb.validate_crc()
    assert [(r.offset, r.timestamp, r.value, list(r.headers)) for r in kb] == [
        (10 + i, TS + i, b"v%d" % i, [("h", b"1")]) for i in range(4)]


def _with_payload(codec: int, payload: bytes) -> bytes:
    """A valid 3-record batch whose compressed records section is replaced by ``payload`` (the
    length and the CRC-32C made to match, so only the payload is wrong)."""
    records = [Record(offset=i, timestamp=TS + i, key=b"k", value=b"v" * 30) for i in range(3)]
    batch = bytearray(build_batch(records, compression_id=min(codec, 4))[:61] + payload)
    batch[8:12] = struct.pack(">i", len(batch) - 12)
    batch[22] = (batch[22] & ~7) | codec  # the attributes' low byte holds the codec id
    return recrc(batch)


@settings(max_examples=60, deadline=None)
@given(codec=st.sampled_from([1, 2, 3, 4, 5, 6, 7]), payload=st.binary(max_size=96),
       lead=st.integers(min_value=0, max_value=300))
def test_a_garbage_compressed_payload_is_located_at_the_payload(codec: int, payload: bytes,
                                                                lead: int) -> None:
    """DefaultRecordBatch#compressedIterator throws on a payload its codec cannot read; here a
    FormatError naming the file and the byte where the batch's records section starts."""
    data = bytes(lead) + _with_payload(codec, payload)
    try:
        batch = parse_batch(data, lead, path="seg.log", decode_records=True)
    except FormatError as exc:
        assert exc.path == "seg.log"
        assert exc.position is not None and lead + 61 <= exc.position <= len(data)
        assert f"seg.log:{exc.position}:" in str(exc)
    else:  # a payload that happens to decode (empty gzip member, ...) must hold the 3 records
        assert batch.records is not None and len(batch.records) == 3
