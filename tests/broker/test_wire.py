"""``kafkatx serve`` at the wire level: a kio client sends exact requests and checks each answer."""

from __future__ import annotations

import datetime
import io
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kio.index import load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_writer

from kafkatx.broker.logs.batch_header import split_batches
from kafkatx.formats.record_batch import Record, build_batch
from tests.broker.logdir_checks import check_log_dir, verify_clean
from tests.broker.serve_process import ServeProcess
from tests.broker.wire import WireClient, entity, request

Serve = Callable[..., ServeProcess]
T0 = 1_760_000_000_000
PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
API_VERSIONS, CREATE_TOPICS, DELETE_TOPICS, DESCRIBE_CONFIGS = 18, 19, 20, 32
FIND_COORDINATOR, INIT_PRODUCER_ID, JOIN_GROUP = 10, 22, 11


def batch(n: int, *, pid: int = -1, epoch: int = -1, seq: int = -1, txn: bool = False,
          ts: int = T0, compression: int = 0) -> bytes:
    records = [Record(offset=i, timestamp=ts + 10 * i, key=None, value=b"value-%d" % i)
               for i in range(n)]
    return build_batch(records, base_offset=0, producer_id=pid, producer_epoch=epoch,
                       base_sequence=seq, is_transactional=txn, compression_id=compression)


def create_topic(c: WireClient, name: str, partitions: int = 1,
                 configs: dict[str, str] | None = None, version: int = 7) -> Any:
    topic = entity(CREATE_TOPICS, version, "CreatableTopic", name=name,
                   num_partitions=partitions, replication_factor=1, assignments=(),
                   configs=tuple(entity(CREATE_TOPICS, version, "CreatableTopicConfig",
                                        name=k, value=v) for k, v in (configs or {}).items()))
    resp = c.call(request(CREATE_TOPICS, version, topics=(topic,),
                          timeout=datetime.timedelta(seconds=5), validate_only=False))
    return resp.topics[0]


def produce(c: WireClient, topic: str, records: bytes | None, *, partition: int = 0,
            acks: int = -1, version: int = 9) -> Any:
    part = entity(PRODUCE, version, "PartitionProduceData", index=partition, records=records)
    data = entity(PRODUCE, version, "TopicProduceData", name=topic, partition_data=(part,))
    resp = c.call(request(PRODUCE, version, acks=acks, timeout=datetime.timedelta(seconds=5),
                          topic_data=(data,)))
    return resp.responses[0].partition_responses[0]


def fetch_request(topic: str, offset: int, *, version: int = 12, isolation: int = 0,
                  max_wait_ms: int = 0, min_bytes: int = 0, partition: int = 0) -> Any:
    part = entity(FETCH, version, "FetchPartition", partition=partition, fetch_offset=offset,
                  current_leader_epoch=-1, last_fetched_epoch=-1, log_start_offset=-1,
                  partition_max_bytes=1 << 20)
    t = entity(FETCH, version, "FetchTopic", topic=topic, partitions=(part,))
    return request(FETCH, version, replica_id=-1, max_wait=datetime.timedelta(
        milliseconds=max_wait_ms), min_bytes=min_bytes, max_bytes=50 << 20,
        isolation_level=isolation, session_id=0, session_epoch=-1, topics=(t,),
        forgotten_topics_data=(), rack_id="")


def fetch(c: WireClient, topic: str, offset: int, **kw: Any) -> Any:
    return c.call(fetch_request(topic, offset, **kw)).responses[0].partitions[0]


def list_offset(c: WireClient, topic: str, timestamp: int, *, isolation: int = 0,
                version: int = 7) -> Any:
    part = entity(LIST_OFFSETS, version, "ListOffsetsPartition", partition_index=0,
                  current_leader_epoch=-1, timestamp=timestamp)
    t = entity(LIST_OFFSETS, version, "ListOffsetsTopic", name=topic, partitions=(part,))
    resp = c.call(request(LIST_OFFSETS, version, replica_id=-1, isolation_level=isolation,
                          topics=(t,)))
    return resp.topics[0].partitions[0]


def flip_byte(data: bytes, index: int) -> bytes:
    out = bytearray(data)
    out[index] ^= 0xFF
    return bytes(out)


def batch_offsets(records: bytes) -> list[tuple[int, int]]:
    return [(h.base_offset, h.last_offset) for h in split_batches(records)[0]]


def stop_ok(proc: ServeProcess) -> None:
    assert proc.stop() == 0, proc.stderr()


# --------------------------------------------------------------------------------------------


def test_api_versions_and_the_unsupported_version_reply(serve: Serve) -> None:
    proc = serve()
    with WireClient(proc.port) as c:
        for version in range(4):
            resp = c.call(request(API_VERSIONS, version, client_software_name="t",
                                  client_software_version="1"))
            assert resp.error_code == ErrorCode.none
            ranges = {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}
            # Kafka 3.x still serves Produce v0-v2, Fetch v0-v3 and ListOffsets v0.
            assert ranges[PRODUCE] == (0, 9) and ranges[FETCH] == (0, 12)
            assert ranges[METADATA] == (0, 11) and ranges[API_VERSIONS] == (0, 3)
            assert ranges[LIST_OFFSETS] == (0, 7) and ranges[INIT_PRODUCER_ID] == (0, 4)
            assert ranges[JOIN_GROUP] == (0, 7)  # Kafka 3.0's ranges, as far as kio goes
            assert ranges[24] == (0, 3) and ranges[28] == (0, 3) and ranges[9] == (1, 8)
            assert 17 not in ranges and 36 not in ranges  # only what is served (no SASL)
        for version in (4, 9):
            # A flexible header v2 (+ empty tagged fields) and no body kio would understand.
            c.send_raw(struct.pack(">hhih", API_VERSIONS, version, 77, 1) + b"x\x00\x00")
            payload = c.receive_raw()
            corr, error, count = struct.unpack_from(">ihi", payload, 0)
            assert (corr, error, count) == (77, ErrorCode.unsupported_version, 1)
            assert struct.unpack_from(">hhh", payload, 10) == (API_VERSIONS, 0, 3)
            assert len(payload) == 16
    stop_ok(proc)


def test_unserved_malformed_and_unknown_requests_close_the_connection(serve: Serve) -> None:
    """As Kafka's Processor#parseRequestHeader and RequestContext#parseRequest: a version not
    served, a body that does not parse and an unknown api key each close the connection
    (real Kafka 4.0/4.4 side by side: tests/realkafka/test_serve_side_by_side.py)."""
    proc = serve()
    join = request(JOIN_GROUP, 9, group_id="g", session_timeout=datetime.timedelta(
        seconds=10), rebalance_timeout=datetime.timedelta(seconds=10), member_id="",
        protocol_type="consumer", protocols=())
    with WireClient(proc.port) as c:
        c.send(join)  # v8+ is not served
        with pytest.raises(ConnectionError):
            c.receive_raw()
    with WireClient(proc.port) as c:
        corr = c.send(request(METADATA, 5, topics=None, allow_auto_topic_creation=False))
        c.receive_raw()
        buf = io.BytesIO()
        header = request(METADATA, 5).__header_schema__(
            request_api_key=METADATA, request_api_version=5, correlation_id=corr + 1,
            client_id="x")
        entity_writer(type(header))(buf, header)
        c.send_raw(buf.getvalue() + b"\x00\x00")  # a truncated Metadata body
        with pytest.raises(ConnectionError):
            c.receive_raw()
    with WireClient(proc.port) as c:
        assert c.call(request(METADATA, 1, topics=None)).brokers[0].port == proc.port
        c.send_raw(struct.pack(">hhih", 999, 0, 5, -1))
        with pytest.raises(ConnectionError):
            c.receive_raw()
    stop_ok(proc)


def test_idempotent_produce_rules_and_log_dir(serve: Serve, tmp_path: Path) -> None:
    proc = serve()
    with WireClient(proc.port) as c:
        created = create_topic(c, "idem")
        assert created.error_code == ErrorCode.none and created.num_partitions == 1
        assert created.topic_id.int != 0
        assert {x.name for x in created.configs} >= {"segment.bytes", "cleanup.policy"}
        init = request(INIT_PRODUCER_ID, 4, transactional_id=None,
                       transaction_timeout=datetime.timedelta(seconds=60), producer_id=-1,
                       producer_epoch=-1)
        first, second = c.call(init), c.call(init)
        assert (first.error_code, first.producer_id, first.producer_epoch) == (0, 0, 0)
        assert second.producer_id == 1
        pid = first.producer_id
        expect = [
            (batch(5, pid=pid, epoch=0, seq=0), ErrorCode.none, 0),
            (batch(5, pid=pid, epoch=0, seq=0), ErrorCode.none, 0),  # duplicate: same offsets
            (batch(1, pid=pid, epoch=0, seq=10), ErrorCode.out_of_order_sequence_number, -1),
            (batch(2, pid=pid, epoch=0, seq=5), ErrorCode.none, 5),
            (batch(1, pid=pid, epoch=1, seq=0), ErrorCode.none, 7),
            (batch(1, pid=pid, epoch=0, seq=7), ErrorCode.invalid_producer_epoch, -1),
            (batch(1, pid=pid, epoch=2, seq=3), ErrorCode.out_of_order_sequence_number, -1),
            (batch(2) * 2, ErrorCode.invalid_record, -1),
            (flip_byte(batch(2), -5), ErrorCode.corrupt_message, -1),
        ]
        for data, error, offset in expect:
            resp = produce(c, "idem", data)
            assert (resp.error_code, resp.base_offset) == (error, offset), resp
        assert produce(c, "nope", batch(1)).error_code == ErrorCode.unknown_topic_or_partition
        assert produce(c, "idem", batch(1), acks=2).error_code == \
            ErrorCode.invalid_required_acks
        assert produce(c, "idem", batch(1, compression=4), version=6).error_code == \
            ErrorCode.unsupported_compression_type
        assert list_offset(c, "idem", -1).offset == 8
        resp = produce(c, "idem", batch(3, compression=4), acks=1)  # zstd from v7 on
        assert (resp.error_code, resp.base_offset) == (ErrorCode.none, 8)
        # acks=0: no response at all; the next answer on the connection is the next request's.
        part = entity(PRODUCE, 9, "PartitionProduceData", index=0, records=batch(2))
        c.send(request(PRODUCE, 9, acks=0, timeout=datetime.timedelta(seconds=5),
                       topic_data=(entity(PRODUCE, 9, "TopicProduceData", name="idem",
                                          partition_data=(part,)),)))
        assert list_offset(c, "idem", -1).offset == 13
    stop_ok(proc)
    view = check_log_dir(proc.log_dir)
    assert [(b["base_offset"], b["last_offset"], b["producer_id"], b["producer_epoch"])
            for b in view.batches["idem-0"]] == [
        (0, 4, 0, 0), (5, 6, 0, 0), (7, 7, 0, 1), (8, 10, -1, -1), (11, 12, -1, -1)]
    assert view.high_watermarks == {("idem", 0): 13} == view.recovery_points
    snap = view.snapshots["idem-0"]
    assert [(e.producer_id, e.producer_epoch, e.last_sequence, e.last_offset)
            for e in snap.entries] == [(0, 1, 0, 7)]
    verify_clean(proc.log_dir)


def test_open_transaction_pins_lso_for_read_committed(serve: Serve) -> None:
    proc = serve("--partitions", "1")
    with WireClient(proc.port) as c:
        c.call(request(METADATA, 11, topics=(entity(METADATA, 11, "MetadataRequestTopic",
                                                    name="txn", topic_id=None),),
                       allow_auto_topic_creation=True))
        assert produce(c, "txn", batch(3)).base_offset == 0
        assert produce(c, "txn", batch(2, pid=40, epoch=0, seq=0, txn=True)).base_offset == 3
        assert produce(c, "txn", batch(2)).base_offset == 5
        assert list_offset(c, "txn", -1, isolation=0).offset == 7
        assert list_offset(c, "txn", -1, isolation=1).offset == 3
        assert list_offset(c, "txn", -1, isolation=1, version=2).offset == 3
        rc = fetch(c, "txn", 0, isolation=1)
        assert (rc.high_watermark, rc.last_stable_offset) == (7, 3)
        assert batch_offsets(rc.records) == [(0, 2)] and rc.aborted_transactions == ()
        for version in (4, 11, 12):
            ru = fetch(c, "txn", 0, isolation=0, version=version)
            assert batch_offsets(ru.records) == [(0, 2), (3, 4), (5, 6)]
            assert ru.aborted_transactions is None
        empty = fetch(c, "txn", 7, isolation=0)
        assert empty.records == b"" and empty.error_code == ErrorCode.none
        beyond = fetch(c, "txn", 100)
        assert beyond.error_code == ErrorCode.offset_out_of_range and beyond.records == b""
    stop_ok(proc)
    view = check_log_dir(proc.log_dir)
    entries = {e.producer_id: e for e in view.snapshots["txn-0"].entries}
    assert entries[40].current_txn_first_offset == 3


def test_fetch_long_poll_waits_and_wakes_on_append(serve: Serve) -> None:
    proc = serve()
    with WireClient(proc.port) as c, WireClient(proc.port) as other:
        create_topic(c, "poll")
        started = time.monotonic()
        resp = fetch(c, "poll", 0, max_wait_ms=700, min_bytes=1)
        assert time.monotonic() - started >= 0.6 and resp.records == b""
        corr = c.send(fetch_request("poll", 0, max_wait_ms=10_000, min_bytes=1))
        time.sleep(0.3)
        started = time.monotonic()
        assert produce(other, "poll", batch(2)).error_code == ErrorCode.none
        woke = c.receive(load_response_schema(FETCH, 12), corr)
        assert time.monotonic() - started < 5
        assert batch_offsets(woke.responses[0].partitions[0].records) == [(0, 1)]
    stop_ok(proc)


def test_list_offsets_by_timestamp(serve: Serve) -> None:
    proc = serve()
    with WireClient(proc.port) as c:
        create_topic(c, "ts")
        produce(c, "ts", batch(3, ts=T0))  # T0, T0+10, T0+20
        produce(c, "ts", batch(3, ts=T0 + 1000, compression=2))  # T0+1000 ... T0+1020
        got = list_offset(c, "ts", T0 + 15)
        assert (got.offset, got.timestamp, got.leader_epoch) == (2, T0 + 20, 0)
        got = list_offset(c, "ts", T0 + 500)
        assert (got.offset, got.timestamp) == (3, T0 + 1000)
        got = list_offset(c, "ts", -3)
        assert (got.offset, got.timestamp) == (5, T0 + 1020)
        assert list_offset(c, "ts", T0 + 5000).offset == -1
        assert list_offset(c, "ts", -2).offset == 0
        assert list_offset(c, "ts", -2, version=1).offset == 0
    stop_ok(proc)


def test_topic_admin_metadata_and_coordinators(serve: Serve, tmp_path: Path) -> None:
    proc = serve("--no-auto-create", "--partitions", "3")
    with WireClient(proc.port) as c:
        meta = c.call(request(METADATA, 11, topics=(entity(
            METADATA, 11, "MetadataRequestTopic", name="absent", topic_id=None),),
            allow_auto_topic_creation=True))
        assert meta.topics[0].error_code == ErrorCode.unknown_topic_or_partition
        assert create_topic(c, "a.b", 2).error_code == ErrorCode.none
        assert create_topic(c, "a.b").error_code == ErrorCode.topic_already_exists
        assert create_topic(c, "a_b").error_code == ErrorCode.invalid_topic_exception
        assert create_topic(c, "bad name").error_code == ErrorCode.invalid_topic_exception
        assert create_topic(c, "x", configs={"no.such": "1"}).error_code == \
            ErrorCode.invalid_config
        assert create_topic(c, "lat", configs={"message.timestamp.type": "LogAppendTime"},
                            version=3).error_code == ErrorCode.none
        topic = entity(CREATE_TOPICS, 7, "CreatableTopic", name="rf", num_partitions=1,
                       replication_factor=3, assignments=(), configs=())
        resp = c.call(request(CREATE_TOPICS, 7, topics=(topic,),
                              timeout=datetime.timedelta(seconds=5), validate_only=False))
        assert resp.topics[0].error_code == ErrorCode.invalid_replication_factor
        ids = {}
        for version in (0, 1, 5, 11):
            meta = c.call(request(METADATA, version, topics=None if version else ()))
            topics = {t.name: t for t in meta.topics}
            assert set(topics) == {"a.b", "lat"}
            assert [p.partition_index for p in topics["a.b"].partitions] == [0, 1]
            assert topics["a.b"].partitions[0].leader_id == 1
            if version >= 10:
                ids = {n: t.topic_id for n, t in topics.items()}
        res = entity(DESCRIBE_CONFIGS, 4, "DescribeConfigsResource", resource_type=2,
                     resource_name="lat", configuration_keys=None)
        desc = c.call(request(DESCRIBE_CONFIGS, 4, resources=(res,), include_synonyms=True,
                              include_documentation=False)).results[0]
        by_name = {e.name: e for e in desc.configs}
        assert by_name["message.timestamp.type"].value == "LogAppendTime"
        assert by_name["message.timestamp.type"].config_source == 1
        assert by_name["retention.ms"].config_source == 5
        resp = produce(c, "lat", batch(1))
        assert resp.log_append_time is not None
        assert abs(resp.log_append_time.timestamp() - time.time()) < 60
        for version in (0, 1, 3):
            found = c.call(request(FIND_COORDINATOR, version, key="g", key_type=1))
            assert (found.error_code, found.node_id, found.port) == (0, 1, proc.port)
        batched = c.call(request(FIND_COORDINATOR, 4, key_type=0, coordinator_keys=("g", "h")))
        assert [(x.key, x.node_id, x.port) for x in batched.coordinators] == [
            ("g", 1, proc.port), ("h", 1, proc.port)]
        txn = c.call(request(INIT_PRODUCER_ID, 0, transactional_id="tx",
                             transaction_timeout=datetime.timedelta(seconds=60)))
        assert (txn.error_code, txn.producer_epoch) == (ErrorCode.none, 0)
        too_long = c.call(request(INIT_PRODUCER_ID, 4, transactional_id="tx",
                                  transaction_timeout=datetime.timedelta(minutes=16),
                                  producer_id=-1, producer_epoch=-1))
        assert too_long.error_code == ErrorCode.invalid_transaction_timeout
        half = c.call(request(INIT_PRODUCER_ID, 4, transactional_id="tx",
                              transaction_timeout=datetime.timedelta(seconds=60),
                              producer_id=txn.producer_id, producer_epoch=-1))
        assert half.error_code == ErrorCode.invalid_request
        fenced = c.call(request(INIT_PRODUCER_ID, 3, transactional_id="tx",
                                transaction_timeout=datetime.timedelta(seconds=60),
                                producer_id=txn.producer_id + 1, producer_epoch=0))
        assert fenced.error_code == ErrorCode.invalid_producer_epoch  # PRODUCER_FENCED < v4
        gone = c.call(request(DELETE_TOPICS, 4, topic_names=("a.b", "zzz"),
                              timeout=datetime.timedelta(seconds=5)))
        assert [(r.name, r.error_code) for r in gone.responses] == [
            ("a.b", ErrorCode.none), ("zzz", ErrorCode.unknown_topic_or_partition)]
        assert not list(proc.log_dir.glob("a.b-*"))
    stop_ok(proc)
    check_log_dir(proc.log_dir)
    again = serve(log_dir=proc.log_dir)
    with WireClient(again.port) as c:
        meta = c.call(request(METADATA, 11, topics=None))
        topics = {t.name: t for t in meta.topics}
        # both internal topics are in the metadata log (created by FindCoordinator), whether
        # a partition directory of theirs exists or not
        assert sorted(topics) == ["__consumer_offsets", "__transaction_state", "lat"]
        assert topics["lat"].topic_id == ids["lat"]
        internal = topics["__transaction_state"]  # one partition on disk, 50 in the metadata
        assert internal.is_internal and len(internal.partitions) == 50
    stop_ok(again)


def test_segment_rolls_and_recovery_after_sigkill(serve: Serve) -> None:
    proc = serve("--segment-bytes", "1024")
    # Recent timestamps: a restart expires producers idle for producer.id.expiration.ms
    # (ProducerStateManager#loadFromSnapshot), and the duplicate below needs this one known.
    now = int(time.time() * 1000)
    with WireClient(proc.port) as c:
        create_topic(c, "roll")
        pid = c.call(request(INIT_PRODUCER_ID, 0, transactional_id=None,
                             transaction_timeout=datetime.timedelta(seconds=60))).producer_id
        for i in range(30):
            resp = produce(c, "roll", batch(4, pid=pid, epoch=0, seq=4 * i, ts=now + i * 100))
            assert (resp.error_code, resp.base_offset) == (ErrorCode.none, 4 * i)
        seen: list[tuple[int, int]] = []
        offset = 0
        while offset < 120:
            part = fetch(c, "roll", offset)
            got = batch_offsets(part.records)
            assert got, part
            seen.extend(got)
            offset = got[-1][1] + 1
        assert seen == [(4 * i, 4 * i + 3) for i in range(30)]
    assert proc.proc is not None
    proc.proc.kill()  # no snapshot, no trimmed indexes, no checkpoints for the last segment
    proc.proc.wait(10)
    segments = sorted(proc.log_dir.glob("roll-0/*.log"))
    assert len(segments) >= 4
    assert not segments[-1].with_suffix(".index").exists()
    again = serve(log_dir=proc.log_dir)
    with WireClient(again.port) as c:
        dup = produce(c, "roll", batch(4, pid=pid, epoch=0, seq=116, ts=now + 2900))
        assert (dup.error_code, dup.base_offset) == (ErrorCode.none, 116)
        gap = produce(c, "roll", batch(1, pid=pid, epoch=0, seq=121))
        assert gap.error_code == ErrorCode.out_of_order_sequence_number
        nxt = produce(c, "roll", batch(1, pid=pid, epoch=0, seq=120))
        assert (nxt.error_code, nxt.base_offset) == (ErrorCode.none, 120)
    assert again.stop() == 0, again.stderr()
    assert "rebuilding its .index and .timeindex" in again.stderr()
    view = check_log_dir(proc.log_dir)
    assert [b["base_offset"] for b in view.batches["roll-0"]] == [4 * i for i in range(31)]
    snaps = sorted(p.name for p in proc.log_dir.glob("roll-0/*.snapshot"))
    assert len(snaps) >= 3 and snaps[-1] == "00000000000000000121.snapshot"
    (entry,) = view.snapshots["roll-0"].entries
    assert (entry.producer_id, entry.last_sequence, entry.last_offset) == (pid, 120, 120)
    verify_clean(proc.log_dir)
