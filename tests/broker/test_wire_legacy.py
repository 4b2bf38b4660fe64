"""The protocol versions Kafka 3.x still serves to clients that skip ApiVersions: Produce v0-v2
with magic 0/1 message sets, Fetch v0-v3 answered in magic 0/1, ListOffsets v0 — exact bytes
and error codes at the wire, the stored result read back with kafkatx's own readers."""

from __future__ import annotations

import datetime
import os
import time
from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from kafkatx.formats.compression import Codec
from kafkatx.formats.legacy_message import (
    LOG_APPEND_TIME,
    LegacyMessage,
    build_legacy_entry,
    parse_legacy_entry,
)
from kafkatx.formats.record_batch import Record, RecordBatch, build_batch
from kafkatx.formats.segment import iter_segment
from tests.broker.logdir_checks import check_log_dir, verify_clean
from tests.broker.serve_process import ServeProcess
from tests.broker.test_wire import (
    FETCH,
    LIST_OFFSETS,
    PRODUCE,
    T0,
    batch,
    create_topic,
    fetch,
    flip_byte,
    produce,
    stop_ok,
)
from tests.broker.test_wire_configs import SET, TOPIC, one
from tests.broker.test_wire_delete_records import delete_records
from tests.broker.wire import WireClient, entity, request

Serve = Callable[..., ServeProcess]
E = ErrorCode
INIT_PRODUCER_ID, WRITE_TXN_MARKERS = 22, 27
SECOND = datetime.timedelta(seconds=1)


def old_produce(c: WireClient, topic: str, records: bytes, version: int,
                partition: int = 0) -> Any:
    part = entity(PRODUCE, version, "PartitionProduceData", index=partition, records=records)
    data = entity(PRODUCE, version, "TopicProduceData", name=topic, partition_data=(part,))
    resp = c.call(request(PRODUCE, version, acks=1, timeout=5 * SECOND, topic_data=(data,)))
    return resp.responses[0].partition_responses[0]


def old_fetch(c: WireClient, topic: str, offset: int, version: int, *,
              partition_max_bytes: int = 1 << 20, partition: int = 0) -> Any:
    part = entity(FETCH, version, "FetchPartition", partition=partition, fetch_offset=offset,
                  partition_max_bytes=partition_max_bytes)
    t = entity(FETCH, version, "FetchTopic", topic=topic, partitions=(part,))
    resp = c.call(request(FETCH, version, replica_id=-1, max_wait=datetime.timedelta(0),
                          min_bytes=0, max_bytes=50 << 20, topics=(t,)))
    return resp.responses[0].partitions[0]


def entries(records: bytes) -> tuple[list[Any], bytes]:
    """The complete legacy entries of a fetched message set, and what follows them."""
    out = []
    pos = 0
    while len(records) - pos >= 12:
        offset, size = int.from_bytes(records[pos:pos + 8], "big", signed=True), \
            int.from_bytes(records[pos + 8:pos + 12], "big", signed=True)
        if offset < 0 or pos + 12 + size > len(records):
            break
        out.append(parse_legacy_entry(records, pos))
        pos += 12 + size
    return out, records[pos:]


def messages(records: bytes) -> list[LegacyMessage]:
    return [m for e in entries(records)[0] for m in e.records]


def consume(c: WireClient, topic: str, version: int, magic: int, *,
            high_watermark: int) -> list[LegacyMessage]:
    """What an old consumer gets fetching from 0 to the high watermark: each answer is at least
    as long as the v2 bytes read (``LazyDownConversionRecords#sizeInBytes``), its complete
    entries of ``magic`` are followed by a cut entry or an overflow entry (offset -1); records
    below the consumer's position are skipped, as clients do: a compressed batch's, and the
    second copy Kafka sends of the first batch it converts after control batches (the send's
    iterator skips one batch only)."""
    out: list[LegacyMessage] = []
    offset = 0
    while offset < high_watermark:
        part = old_fetch(c, topic, offset, version)
        raw = fetch(c, topic, offset).records
        assert (part.error_code, part.high_watermark) == (E.none, high_watermark)
        assert len(part.records) >= len(raw)
        got, tail = entries(part.records)
        assert got and {e.magic for e in got} == {magic}
        assert len(tail) < 12 or tail[:8] == b"\xff" * 8 or \
            int.from_bytes(tail[8:12], "big") > len(tail) - 12
        before = offset
        for m in (m for e in got for m in e.records):
            if m.offset >= offset:
                out.append(m)
                offset = m.offset + 1
        assert offset > before
    return out


def stored(c: WireClient, topic: str) -> list[tuple[int, int, bytes | None, bytes | None]]:
    """(offset, timestamp, key, value) of every record, read back with Fetch v12."""
    data = fetch(c, topic, 0).records
    out = []
    for b in iter_segment(bytes(data), decode_records=True):
        assert isinstance(b, RecordBatch)
        out += [(r.offset, r.timestamp, r.key, r.value) for r in b.records or ()]
    return out


def test_produce_v0_to_v2_converts_message_sets(serve: Serve) -> None:
    """``LogValidator#convertAndAssignOffsetsNonCompressed`` /
    ``#validateMessagesAndAssignOffsetsCompressed`` with ``UnifiedLog#
    analyzeAndValidateRecords``: a magic 0/1 set becomes one v2 batch (fresh offsets, magic 0
    records without timestamp, the wrapper's codec kept, no producer id); mixed magics, a bad
    CRC, several compressed wrappers, an entry over ``max.message.bytes`` and a keyless record
    on a compacted topic are refused; a partial trailing entry is left out; v2's
    ``log_append_time`` for a LogAppendTime topic."""
    proc = serve()
    with WireClient(proc.port) as c:
        create_topic(c, "old", 1)
        create_topic(c, "lat", 1, configs={"message.timestamp.type": "LogAppendTime"})
        create_topic(c, "cmp", 1, configs={"cleanup.policy": "compact"})
        v0_set = b"".join(build_legacy_entry(offset=0, magic=0, key=b"k%d" % i,
                                             value=b"zero-%d" % i) for i in range(3))
        r = old_produce(c, "old", v0_set + v0_set[:20], 0)  # a partial trailing entry
        assert (r.error_code, r.base_offset) == (E.none, 0)
        gzip = build_legacy_entry(offset=1, magic=0, compression=Codec.GZIP,
                                  inner=[(b"g0", b"one", -1), (None, b"two", -1)])
        assert (old_produce(c, "old", gzip, 1).error_code,
                old_produce(c, "old", gzip, 1).base_offset) == (E.none, 5)
        lz4 = build_legacy_entry(offset=1, magic=1, compression=Codec.LZ4, timestamp=T0 + 9,
                                 inner=[(b"l0", b"x", T0 + 5), (b"l1", b"y", T0 + 9)])
        r = old_produce(c, "old", lz4, 2)
        assert (r.error_code, r.base_offset, r.log_append_time) == (E.none, 7, None)
        r = old_produce(c, "old", batch(2), 2)  # a v2 batch in a v2 request: as it is
        assert (r.error_code, r.base_offset) == (E.none, 9)
        r = old_produce(c, "lat", build_legacy_entry(offset=0, magic=1, value=b"t",
                                                     timestamp=T0), 2)
        assert r.error_code == E.none and r.log_append_time is not None
        assert abs(r.log_append_time.timestamp() - time.time()) < 60

        v1_entry = build_legacy_entry(offset=0, magic=1, key=b"k", value=b"v", timestamp=T0)
        refused = [
            (v0_set[:len(v0_set) // 3] + v1_entry, E.invalid_record),  # magic 0 then 1
            (flip_byte(v1_entry, len(v1_entry) - 1), E.corrupt_message),
            (gzip + gzip, E.invalid_record),  # a compressed wrapper must be alone
            (batch(1) + batch(1), E.invalid_record),  # one v2 batch per partition
            (build_legacy_entry(offset=0, magic=1, value=b"x" * 1_100_000, timestamp=T0),
             E.message_too_large),
        ]
        for records, error in refused:
            assert old_produce(c, "old", records, 2).error_code == error
        keyless = build_legacy_entry(offset=0, magic=0, value=b"no key")
        assert old_produce(c, "cmp", keyless, 0).error_code == E.invalid_record
        assert old_produce(c, "cmp", v0_set, 0).error_code == E.none

        records = stored(c, "old")
        assert [(o, ts, k, v) for o, ts, k, v in records[:7]] == [
            (0, -1, b"k0", b"zero-0"), (1, -1, b"k1", b"zero-1"), (2, -1, b"k2", b"zero-2"),
            (3, -1, b"g0", b"one"), (4, -1, None, b"two"),
            (5, -1, b"g0", b"one"), (6, -1, None, b"two")]
        assert records[7:9] == [(7, T0 + 5, b"l0", b"x"), (8, T0 + 9, b"l1", b"y")]
        assert [o for o, *_ in records] == list(range(11))
    stop_ok(proc)
    view = check_log_dir(proc.log_dir)
    batches = view.batches["old-0"]
    assert [(b["base_offset"], b["compression"], b["producer_id"]) for b in batches] == [
        (0, "none", -1), (3, "gzip", -1), (5, "gzip", -1), (7, "lz4", -1), (9, "none", -1)]
    verify_clean(proc.log_dir)


def _committed_transaction(c: WireClient, topic: str) -> int:
    """A transactional batch of one record and its COMMIT marker (WriteTxnMarkers)."""
    pid = c.call(request(INIT_PRODUCER_ID, 0, transactional_id=None,
                         transaction_timeout=60 * SECOND)).producer_id
    assert produce(c, topic, batch(1, pid=pid, epoch=0, seq=0, txn=True,
                                   ts=T0 + 100)).error_code == E.none
    t = entity(WRITE_TXN_MARKERS, 1, "WritableTxnMarkerTopic", name=topic, partition_indexes=(0,))
    m = entity(WRITE_TXN_MARKERS, 1, "WritableTxnMarker", producer_id=pid, producer_epoch=0,
               transaction_result=True, topics=(t,), coordinator_epoch=-1)
    written = c.call(request(WRITE_TXN_MARKERS, 1, markers=(m,)))
    assert written.markers[0].topics[0].partitions[0].error_code == E.none
    return pid


def test_fetch_v0_to_v3_down_converts(serve: Serve) -> None:
    """``KafkaApis#maybeConvertFetchedData`` with ``RecordsUtil#downConvert`` inside
    ``LazyDownConversionRecords(Send)``: magic 0 for v0-v1, magic 1 for v2-v3; control batches
    dropped; records of an uncompressed batch below the fetch offset left out, a compressed
    batch whole; LogAppendTime kept in magic 1; the declared size padded with an overflow
    entry; ``hardMaxBytesLimit`` (v0-v2) cuts a batch larger than the partition's bytes, which
    then converts to nothing; ``message.downconversion.enable=false`` is UNSUPPORTED_VERSION;
    ZSTD (a batch, or ``compression.type=zstd`` below Fetch v10) UNSUPPORTED_COMPRESSION_TYPE."""
    proc = serve()
    with WireClient(proc.port) as c:
        create_topic(c, "new", 1)
        create_topic(c, "lat", 1, configs={"message.timestamp.type": "LogAppendTime"})
        create_topic(c, "z", 1)
        create_topic(c, "zcfg", 1, configs={"compression.type": "zstd"})
        three = build_batch([Record(offset=i, timestamp=T0 + i, key=b"k%d" % i,
                                    value=b"v%d" % i, headers=(("h", b"x"),)) for i in range(3)],
                            base_offset=0)
        assert produce(c, "new", three).error_code == E.none  # offsets 0-2
        _committed_transaction(c, "new")  # offset 3 data, 4 COMMIT marker
        assert produce(c, "new", batch(2, compression=Codec.GZIP, ts=T0 + 200)).base_offset == 5
        assert produce(c, "lat", batch(2)).error_code == E.none
        assert produce(c, "z", batch(1, compression=4)).error_code == E.none
        assert produce(c, "zcfg", batch(1)).error_code == E.none

        for version, magic in ((0, 0), (1, 0), (2, 1), (3, 1)):
            msgs = consume(c, "new", version, magic, high_watermark=7)
            assert [m.offset for m in msgs] == [0, 1, 2, 3, 5, 6]  # no marker
            assert [m.key for m in msgs][:3] == [b"k0", b"k1", b"k2"]
            expected_ts = [T0, T0 + 1, T0 + 2, T0 + 100, T0 + 200, T0 + 210] if magic else \
                [-1] * 6
            assert [m.effective_timestamp for m in msgs] == expected_ts
            gzip = entries(old_fetch(c, "new", 5, version).records)[0]
            assert [(e.message.compression, e.message.offset) for e in gzip] == [("gzip", 6)]
        # After the marker: the first converted batch twice (see consume); in magic 1 the
        # second copy is cut at the declared size (the v2 bytes read).
        assert [m.offset for m in messages(old_fetch(c, "new", 4, 0).records)] == [5, 6, 5, 6]
        v2 = old_fetch(c, "new", 4, 2).records
        got, tail = entries(v2)
        assert [m.offset for e in got for m in e.records] == [5, 6]
        assert len(v2) == len(fetch(c, "new", 4).records) and tail == v2[:len(tail)]
        # From inside a batch: records below the offset of an uncompressed batch are left out,
        # a compressed batch comes whole.
        assert [m.offset for m in messages(old_fetch(c, "new", 1, 2).records)][:2] == [1, 2]
        assert [m.offset for m in messages(old_fetch(c, "new", 6, 2).records)] == [5, 6]
        # LogAppendTime survives in magic 1 (the attribute and the batch's time), not in 0.
        lat = messages(old_fetch(c, "lat", 0, 3).records)
        assert {m.timestamp_type_id for m in lat} == {LOG_APPEND_TIME}
        assert abs(lat[0].effective_timestamp / 1000 - time.time()) < 60
        assert {m.timestamp for m in messages(old_fetch(c, "lat", 0, 1).records)} == {-1}

        # v0-v2 keep to the partition's bytes: a cut first batch converts to nothing.
        small = old_fetch(c, "new", 0, 2, partition_max_bytes=40)
        assert (small.error_code, small.records) == (E.none, b"")
        whole = old_fetch(c, "new", 0, 3, partition_max_bytes=40)  # v3: one batch at least
        assert [m.offset for m in messages(whole.records)] == [0, 1, 2]

        assert old_fetch(c, "z", 0, 3).error_code == E.unsupported_compression_type
        assert old_fetch(c, "zcfg", 0, 3).error_code == E.unsupported_compression_type
        assert fetch(c, "zcfg", 0, version=9).error_code == E.unsupported_compression_type
        assert fetch(c, "zcfg", 0, version=10).error_code == E.none
        assert one(c, TOPIC, "new", ("message.downconversion.enable", SET, "false")) == (
            E.none, None)
        assert old_fetch(c, "new", 0, 3).error_code == E.unsupported_version
        assert fetch(c, "new", 0, version=4).error_code == E.none
    stop_ok(proc)


def test_fetch_v3_and_later_drop_an_incomplete_first_batch(serve: Serve) -> None:
    """``ReplicaManager#readFromLog``: once a partition returned data, the next is read
    without ``minOneMessage``; if its first batch does not fit the bytes left, it gets nothing
    (``checkFetchDataInfo``) rather than a cut batch."""
    proc = serve()
    with WireClient(proc.port) as c:
        create_topic(c, "two", 2)
        first, second = batch(3), batch(3)
        assert produce(c, "two", first, partition=0).error_code == E.none
        assert produce(c, "two", second, partition=1).error_code == E.none
        parts = tuple(entity(FETCH, 12, "FetchPartition", partition=p, fetch_offset=0,
                             current_leader_epoch=-1, last_fetched_epoch=-1, log_start_offset=-1,
                             partition_max_bytes=1 << 20) for p in (0, 1))
        t = entity(FETCH, 12, "FetchTopic", topic="two", partitions=parts)
        resp = c.call(request(FETCH, 12, replica_id=-1, max_wait=datetime.timedelta(0),
                              min_bytes=0, max_bytes=len(first) + 10, isolation_level=0,
                              session_id=0, session_epoch=-1, topics=(t,),
                              forgotten_topics_data=(), rack_id=""))
        got = [(p.partition_index, len(p.records)) for p in resp.responses[0].partitions]
        assert got == [(0, len(first)), (1, 0)]
    stop_ok(proc)


def test_list_offsets_v0(serve: Serve) -> None:
    """``KafkaApis#handleListOffsetRequestV0`` / ``UnifiedLog#legacyFetchOffsetsBefore``: the
    segments' base offsets by their files' modification times, the log end offset for the
    latest, at most ``max_num_offsets`` in descending order; timestamps below -2 are
    UNSUPPORTED_VERSION."""
    proc = serve()
    with WireClient(proc.port) as c:
        create_topic(c, "seg", 1, configs={"segment.bytes": str(len(batch(2)) + 1)})
        for _ in range(3):
            assert produce(c, "seg", batch(2)).error_code == E.none
        logs = sorted((proc.log_dir / "seg-0").glob("*.log"))
        bases = [int(p.name[:-4]) for p in logs]
        assert bases == [0, 2, 4]
        for i, path in enumerate(logs):  # File#lastModified: 1000, 2000, 3000 s after epoch
            os.utime(path, (1000 * (i + 1), 1000 * (i + 1)))

        def offsets(timestamp: int, max_num: int = 10, topic: str = "seg") -> tuple[Any, ...]:
            p = entity(LIST_OFFSETS, 0, "ListOffsetsPartition", partition_index=0,
                       timestamp=timestamp, max_num_offsets=max_num)
            t = entity(LIST_OFFSETS, 0, "ListOffsetsTopic", name=topic, partitions=(p,))
            r = c.call(request(LIST_OFFSETS, 0, replica_id=-1, topics=(t,)))
            part = r.topics[0].partitions[0]
            return part.error_code, part.old_style_offsets

        assert offsets(-1) == (E.none, (6, 4, 2, 0))
        assert offsets(-1, 1) == (E.none, (6,))
        assert offsets(-2) == (E.none, (0,))
        assert offsets(2_500_000) == (E.none, (2, 0))
        assert offsets(2_500_000, 1) == (E.none, (2,))
        assert offsets(500_000) == (E.none, ())
        assert offsets(-3) == (E.unsupported_version, ())
        assert offsets(-1, topic="ghost") == (E.unknown_topic_or_partition, ())
        # Aged: DeleteRecords moved the log start offset into the second segment; the first
        # segment is gone and the earliest entry is the log start offset, not a base offset.
        assert delete_records(c, {("seg", 0): 3}) == {("seg", 0): (E.none, 3)}
        assert offsets(-1) == (E.none, (6, 4, 3))
        assert offsets(-2) == (E.none, (3,))
        assert old_fetch(c, "seg", 1, 0).error_code == E.offset_out_of_range
        # A read stays in one segment: offset 2 of that batch is below the fetch offset.
        assert [m.offset for m in messages(old_fetch(c, "seg", 3, 0).records)] == [3]
    stop_ok(proc)
    again = serve(log_dir=proc.log_dir)
    with WireClient(again.port) as c:  # reloaded: the same answers from the segments on disk
        p = entity(LIST_OFFSETS, 0, "ListOffsetsPartition", partition_index=0, timestamp=-2,
                   max_num_offsets=1)
        t = entity(LIST_OFFSETS, 0, "ListOffsetsTopic", name="seg", partitions=(p,))
        r = c.call(request(LIST_OFFSETS, 0, replica_id=-1, topics=(t,)))
        assert r.topics[0].partitions[0].old_style_offsets == (3,)
        assert [m.offset for m in messages(old_fetch(c, "seg", 3, 2).records)] == [3]
        assert [m.offset for m in messages(old_fetch(c, "seg", 4, 2).records)] == [4, 5]
    stop_ok(again)
    verify_clean(proc.log_dir)
