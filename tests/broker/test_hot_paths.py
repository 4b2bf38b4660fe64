"""The broker's fast paths give the bytes the generic ones give.

Response framing by chunks (fetched records kept by reference), the hand-written Produce
response, the batch header built without the dataclass ``__init__``, the bisected fetch upper
bound, and the segment writer that keeps its file open.
"""

from __future__ import annotations

import io
import os
import random
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map
from kio.serial import entity_writer

from kafkatx.broker.logs.batch_header import read_header
from kafkatx.broker.logs.log_values import LogConfig
from kafkatx.broker.logs.partition_log import PartitionLog
from kafkatx.broker.protocol.produce_response import (
    FIRST_VERSION,
    LAST_VERSION,
    PartitionResult,
    encode_produce_response,
)
from kafkatx.broker.wire import codec
from kafkatx.formats.record_batch import Record, build_batch, parse_header
from kafkatx.storage.segment_writer import PartitionWriter


def kio_frame(correlation_id: int, response: Any) -> bytes:
    """A response frame written by kio alone: header entity, body entity, size prefix."""
    buf = io.BytesIO()
    header_cls = type(response).__header_schema__
    entity_writer(header_cls)(buf, header_cls(correlation_id=correlation_id))
    entity_writer(type(response))(buf, response)
    body = buf.getvalue()
    return len(body).to_bytes(4, "big") + body


def test_chunked_frames_equal_kio_frames_for_every_response_type() -> None:
    count = 0
    for key in api_key_map:
        for version in range(20):
            if codec.request_type(key, version) is None:
                continue
            reply = codec.error_response(codec.response_type(key, version),
                                            ErrorCode.not_coordinator)
            for corr in (0, 7, -2, 2**31 - 1):
                assert codec.encode_response(corr, reply) == kio_frame(corr, reply)
            count += 1
    assert count > 250


def fetch_response(version: int, records: list[bytes]) -> Any:
    cls = codec.response_type(1, version)
    mod = codec.response_module(cls)
    parts = tuple(codec.make(
        mod.PartitionData, partition_index=i, error_code=ErrorCode.none, high_watermark=99,
        last_stable_offset=98, log_start_offset=0, preferred_read_replica=-1, records=r,
        aborted_transactions=(codec.make(mod.AbortedTransaction, producer_id=5,
                                            first_offset=3),))
        for i, r in enumerate(records))
    return codec.make(cls, error_code=ErrorCode.none, session_id=0, responses=(
        codec.make(mod.FetchableTopicResponse, topic="t", partitions=parts),))


@pytest.mark.parametrize("version", [4, 11, 12])
def test_fetched_records_are_framed_by_reference(version: int) -> None:
    big = [os.urandom(100_000), os.urandom(40_000)]
    response = fetch_response(version, [big[0], b"small", big[1], b""])
    chunks = codec.encode_response_chunks(42, response)
    assert b"".join(chunks) == kio_frame(42, response)
    held = [c for c in chunks if any(c is b for b in big)]
    assert len(held) == 2  # the records themselves, not copies
    assert sum(len(c) for c in chunks) == len(b"".join(chunks))


def produce_results() -> list[tuple[str, list[PartitionResult]]]:
    return [
        ("orders", [PartitionResult(0, 0, 1234, -1, 0, None),
                    PartitionResult(7, 0, 2**40, 1_763_700_000_123, 17, None),
                    PartitionResult(2, ErrorCode.corrupt_message.value, -1, -1, -1,
                                    "Record is corrupt (stored crc = 1) in topic partition")]),
        ("t" * 200, []),
        ("audit", [PartitionResult(1, ErrorCode.invalid_required_acks.value, -1, -1, -1,
                                   None),
                   PartitionResult(3, ErrorCode.invalid_record.value, -1, -1, 12,
                                   "One or more records have been rejected",
                                   ((0, "Compacted topic cannot accept message without key"),
                                    (2, None)))]),
    ]


def kio_produce_response(version: int, topics: list[tuple[str, list[PartitionResult]]]) -> Any:
    cls = codec.response_type(0, version)
    mod = codec.response_module(cls)
    return codec.make(cls, responses=tuple(
        codec.make(mod.TopicProduceResponse, name=name, partition_responses=tuple(
            codec.make(mod.PartitionProduceResponse, index=p.index,
                          error_code=ErrorCode(p.error_code), base_offset=p.base_offset,
                          log_append_time=codec.ms_to_datetime(p.log_append_time),
                          log_start_offset=p.log_start_offset, record_errors=tuple(
                              codec.make(mod.BatchIndexAndErrorMessage, batch_index=i,
                                            batch_index_error_message=m)
                              for i, m in p.record_errors) if version >= 8 else (),
                          error_message=p.error_message)
            for p in parts))
        for name, parts in topics))


@pytest.mark.parametrize("version", range(FIRST_VERSION, LAST_VERSION + 1))
def test_produce_response_equals_kio(version: int) -> None:
    for topics in (produce_results(), produce_results()[:1], []):
        ours = codec.EncodedResponse(codec.response_type(0, version),
                                        encode_produce_response(version, topics))
        assert codec.encode_response(9, ours) == kio_frame(
            9, kio_produce_response(version, topics))


@pytest.mark.parametrize("version", [FIRST_VERSION - 1, LAST_VERSION + 1])
def test_produce_response_refuses_versions_it_does_not_know(version: int) -> None:
    with pytest.raises(ValueError, match="not written here"):
        encode_produce_response(version, [])


def test_batch_header_equals_the_full_parser() -> None:
    batch = build_batch([Record(offset=77 + i, timestamp=1000 + i, key=None, value=b"v%d" % i)
                         for i in range(3)], producer_id=9, producer_epoch=2, base_sequence=40,
                        is_transactional=True)
    data = b"x" * 5 + batch
    ours = read_header(data, 5)
    full = parse_header(data, 5)
    assert ours.position == 5
    for name in full.__dataclass_fields__:
        assert getattr(ours, name) == getattr(full, name), name
    assert (ours.last_offset, ours.last_sequence, ours.is_transactional) == (79, 42, True)


def test_fetch_upper_bound_matches_a_linear_scan(tmp_path: Path) -> None:
    log = PartitionLog("t", 0, tmp_path / "t-0", LogConfig(segment_bytes=3000,
                                                           max_message_bytes=100_000))
    log.open()
    rng = random.Random(4)
    for _ in range(120):
        records = [Record(offset=j, timestamp=j, key=None, value=b"x" * rng.randint(1, 300))
                   for j in range(rng.randint(1, 4))]
        log.append_as_leader(build_batch(records), 1000)
    assert len(log.segments) > 10
    for k, seg in enumerate(log.segments):
        table = log._batches_of(seg)
        mine = list(zip(table.position, table.base, strict=True))
        nxt = log.segments[k + 1].base_offset if k + 1 < len(log.segments) else None
        for end in range(0, seg.size + 50, 13):
            past = [base for position, base in mine if position >= end]
            expected = past[0] if past else nxt if nxt is not None else log.log_end_offset
            assert log._fetch_upper_bound(k, table, end) == expected
    log.close()


def test_a_writer_keeping_its_file_open_writes_the_same_files(tmp_path: Path) -> None:
    batches = [build_batch([Record(offset=o, timestamp=o, key=None, value=b"y" * 900)],
                           base_offset=o) for o in range(30)]
    dirs = []
    for keep_open in (False, True):
        d = tmp_path / f"keep-{keep_open}"
        w = PartitionWriter(d, segment_bytes=10_000, index_interval_bytes=2000,
                            keep_open=keep_open)
        for i, batch in enumerate(batches):
            w.append(bytearray(batch) if i % 2 else batch)
        w.close()
        dirs.append(d)
    names = sorted(p.name for p in dirs[0].iterdir())
    assert len([n for n in names if n.endswith(".log")]) > 2
    assert names == sorted(p.name for p in dirs[1].iterdir())
    for name in names:
        assert (dirs[0] / name).read_bytes() == (dirs[1] / name).read_bytes(), name


def test_released_writer_holds_no_descriptor(tmp_path: Path) -> None:
    w = PartitionWriter(tmp_path / "d", keep_open=True)
    w.append(build_batch([Record(offset=0, timestamp=0, key=None, value=b"z")]))
    fd = w._fd
    assert fd is not None
    w.release()
    assert w._fd is None
    with pytest.raises(OSError):
        os.fstat(fd)
