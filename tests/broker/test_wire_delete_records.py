"""DeleteRecords (key 21) at the wire level: low watermarks, errors, the log start offset in Fetch,
ListOffsets and Produce, deleted segments, and the log-start-offset-checkpoint across a restart."""

from __future__ import annotations

import datetime
from collections.abc import Callable

from kio.schema.errors import ErrorCode

from kafkatx.formats.checkpoints import read_leader_epoch_checkpoint, read_offset_checkpoint
from kafkatx.formats.record_batch import Record, build_batch
from tests.broker.kafkatx_cli import lso_rows
from tests.broker.logdir_checks import verify_clean
from tests.broker.serve_process import ServeProcess
from tests.broker.test_wire import (
    FIND_COORDINATOR,
    T0,
    batch,
    batch_offsets,
    create_topic,
    fetch,
    list_offset,
    produce,
    stop_ok,
)
from tests.broker.wire import WireClient, entity, request

Serve = Callable[..., ServeProcess]
DELETE_RECORDS = 21
EARLIEST = -2
E = ErrorCode
Result = dict[tuple[str, int], tuple[ErrorCode, int]]


def delete_records(c: WireClient, wanted: dict[tuple[str, int], int],
                   version: int = 2) -> Result:
    topics: dict[str, list[object]] = {}
    for (topic, partition), offset in wanted.items():
        topics.setdefault(topic, []).append(entity(
            DELETE_RECORDS, version, "DeleteRecordsPartition", partition_index=partition,
            offset=offset))
    resp = c.call(request(DELETE_RECORDS, version, timeout=datetime.timedelta(seconds=5),
                          topics=tuple(entity(DELETE_RECORDS, version, "DeleteRecordsTopic",
                                              name=t, partitions=tuple(ps))
                                       for t, ps in topics.items())))
    return {(t.name, p.partition_index): (p.error_code, p.low_watermark)
            for t in resp.topics for p in t.partitions}


def test_delete_records_answers_and_errors(serve: Serve) -> None:
    proc = serve()
    with WireClient(proc.port) as c:
        assert create_topic(c, "dr", 2).error_code == E.none
        assert create_topic(c, "cmp", 1, {"cleanup.policy": "compact"}).error_code == E.none
        for topic, partition in (("dr", 0), ("dr", 1), ("cmp", 0)):
            for _ in range(3):
                # A compacted topic only takes records with keys (LogValidator#validateKey).
                records = batch(4) if topic == "dr" else build_batch(
                    [Record(offset=i, timestamp=T0, key=b"k%d" % i, value=b"v") for i in range(4)])
                part = entity(0, 9, "PartitionProduceData", index=partition, records=records)
                data = entity(0, 9, "TopicProduceData", name=topic, partition_data=(part,))
                resp = c.call(request(0, 9, acks=-1, timeout=datetime.timedelta(seconds=5),
                                      topic_data=(data,)))
                assert resp.responses[0].partition_responses[0].error_code == E.none
        # Before FindCoordinator the offsets topic does not exist: unknown, not refused.
        assert delete_records(c, {("__consumer_offsets", 0): 0}) == {
            ("__consumer_offsets", 0): (E.unknown_topic_or_partition, -1)}
        assert c.call(request(FIND_COORDINATOR, 1, key="g", key_type=0)).error_code == E.none
        assert delete_records(c, {
            ("dr", 0): 5, ("dr", 1): -1, ("dr", 2): 0, ("nope", 0): 0, ("cmp", 0): 1,
            ("__consumer_offsets", 0): 0, ("__consumer_offsets", 50): 0,
        }) == {
            ("dr", 0): (E.none, 5),
            ("dr", 1): (E.none, 12),  # -1: the high watermark
            ("dr", 2): (E.unknown_topic_or_partition, -1),
            ("nope", 0): (E.unknown_topic_or_partition, -1),
            ("cmp", 0): (E.policy_violation, -1),
            ("__consumer_offsets", 0): (E.invalid_topic_exception, -1),
            ("__consumer_offsets", 50): (E.unknown_topic_or_partition, -1),
        }
        # Above the high watermark, negative: out of range; lower than the start: unchanged.
        for version in (0, 1, 2):
            assert delete_records(c, {("dr", 0): 13, ("dr", 1): 3}, version) == {
                ("dr", 0): (E.offset_out_of_range, -1), ("dr", 1): (E.none, 12)}
        assert delete_records(c, {("dr", 0): -2}) == {("dr", 0): (E.offset_out_of_range, -1)}
        assert list_offset(c, "dr", EARLIEST).offset == 5
        assert fetch(c, "dr", 4).error_code == E.offset_out_of_range
        part = fetch(c, "dr", 5)
        assert (part.error_code, part.log_start_offset) == (E.none, 5)
        assert batch_offsets(part.records) == [(4, 7), (8, 11)]  # the batch holding 5 comes whole
        assert fetch(c, "cmp", 0).log_start_offset == 0
    stop_ok(proc)
    assert not (proc.log_dir / "__consumer_offsets-50").exists()
    verify_clean(proc.log_dir)


def test_log_start_offset_deletes_segments_and_survives_a_restart(serve: Serve) -> None:
    proc = serve("--segment-bytes", "1024")
    with WireClient(proc.port) as c:
        create_topic(c, "roll")
        for i in range(30):
            resp = produce(c, "roll", batch(4, ts=T0 + 100 * i))
            assert (resp.error_code, resp.base_offset) == (E.none, 4 * i)
        bases = sorted(int(p.stem) for p in proc.log_dir.glob("roll-0/*.log"))
        assert len(bases) >= 4
        target = bases[2] + 2
        assert delete_records(c, {("roll", 0): target}) == {("roll", 0): (E.none, target)}
        left = sorted(int(p.stem) for p in proc.log_dir.glob("roll-0/*.log"))
        assert left == bases[2:]
        for base in bases[:2]:
            assert not list(proc.log_dir.glob(f"roll-0/{base:020d}.*"))
        assert produce(c, "roll", batch(1)).log_start_offset == target
        assert list_offset(c, "roll", EARLIEST).offset == target
        assert list_offset(c, "roll", T0).offset == target  # the timestamp search starts there
    stop_ok(proc)
    root = proc.log_dir
    checkpoint = read_offset_checkpoint((root / "log-start-offset-checkpoint").read_bytes())
    assert checkpoint.as_map() == {("roll", 0): target}
    epochs = read_leader_epoch_checkpoint((root / "roll-0/leader-epoch-checkpoint").read_bytes())
    assert [(e.epoch, e.start_offset) for e in epochs.entries] == [(0, target)]
    assert lso_rows(root)[("roll", 0)]["log_start_offset"] == target
    again = serve(log_dir=root)
    with WireClient(again.port) as c:
        assert list_offset(c, "roll", EARLIEST).offset == target
        assert fetch(c, "roll", target - 1).error_code == E.offset_out_of_range
        part = fetch(c, "roll", target)
        assert (part.error_code, part.log_start_offset) == (E.none, target)
        assert batch_offsets(part.records)[0] == (target - 2, target + 1)
        # Deleting up to the high watermark leaves an empty log that starts there.
        assert delete_records(c, {("roll", 0): -1}) == {("roll", 0): (E.none, 121)}
    stop_ok(again)
    third = serve(log_dir=root)
    with WireClient(third.port) as c:
        assert list_offset(c, "roll", EARLIEST).offset == 121
        assert list_offset(c, "roll", -1).offset == 121
    stop_ok(third)
    assert lso_rows(root)[("roll", 0)]["log_start_offset"] == 121
    verify_clean(root)
