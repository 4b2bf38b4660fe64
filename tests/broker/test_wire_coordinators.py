"""The coordinator APIs at the wire level: old versions, error layouts, broker-to-broker
WriteTxnMarkers, internal topics."""

from __future__ import annotations

import datetime
from collections.abc import Callable

from kio.schema.errors import ErrorCode

from tests.broker.logdir_checks import check_log_dir
from tests.broker.serve_process import ServeProcess
from tests.broker.test_wire import batch, create_topic, fetch, produce
from tests.broker.wire import WireClient, entity, request

Serve = Callable[..., ServeProcess]
OFFSET_COMMIT, OFFSET_FETCH, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP = 8, 9, 11, 12, 13
DESCRIBE_GROUPS, LIST_GROUPS, INIT_PRODUCER_ID = 15, 16, 22
ADD_PARTITIONS, END_TXN, WRITE_TXN_MARKERS, TXN_OFFSET_COMMIT = 24, 26, 27, 28
SECOND = datetime.timedelta(seconds=1)


def _init(c: WireClient, tid: str) -> tuple[int, int]:
    r = c.call(request(INIT_PRODUCER_ID, 0, transactional_id=tid, transaction_timeout=60 * SECOND))
    assert r.error_code == ErrorCode.none
    return r.producer_id, r.producer_epoch


def _add(c: WireClient, tid: str, pid: int, epoch: int, partitions: dict[str, list[int]],
         version: int = 0) -> dict[tuple[str, int], ErrorCode]:
    topics = tuple(entity(ADD_PARTITIONS, version, "AddPartitionsToTxnTopic", name=t,
                          partitions=tuple(ps)) for t, ps in partitions.items())
    r = c.call(request(ADD_PARTITIONS, version, v3_and_below_transactional_id=tid,
                       v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
                       v3_and_below_topics=topics))
    return {(t.name, p.partition_index): p.partition_error_code
            for t in r.results_by_topic_v3_and_below for p in t.results_by_partition}


def test_transaction_apis_at_the_wire(serve: Serve) -> None:
    proc = serve()
    with WireClient(proc.port) as c:
        create_topic(c, "w", 2)
        pid, epoch = _init(c, "wire-txn")
        assert _add(c, "wire-txn", pid, epoch, {"w": [0, 1], "nope": [0]}) == {
            ("w", 0): ErrorCode.operation_not_attempted,
            ("w", 1): ErrorCode.operation_not_attempted,
            ("nope", 0): ErrorCode.unknown_topic_or_partition}
        assert _add(c, "wire-txn", pid, epoch + 1, {"w": [0]}, version=1) == {
            ("w", 0): ErrorCode.invalid_producer_epoch}  # PRODUCER_FENCED before v2
        assert _add(c, "wire-txn", pid, epoch + 1, {"w": [0]}, version=3) == {
            ("w", 0): ErrorCode.producer_fenced}
        assert _add(c, "wire-txn", pid, epoch, {"w": [0]}) == {("w", 0): ErrorCode.none}
        resp = produce(c, "w", batch(2, pid=pid, epoch=epoch, seq=0, txn=True))
        assert resp.error_code == ErrorCode.none
        end = c.call(request(END_TXN, 0, transactional_id="wire-txn", producer_id=pid,
                             producer_epoch=epoch + 5, committed=True))
        assert end.error_code == ErrorCode.invalid_producer_epoch
        end = c.call(request(END_TXN, 3, transactional_id="wire-txn", producer_id=pid,
                             producer_epoch=epoch, committed=True))
        assert end.error_code == ErrorCode.none
        assert fetch(c, "w", 0, isolation=1).last_stable_offset == 3
        # WriteTxnMarkers as another broker's coordinator would send it (an admin abort here:
        # a second producer's open transaction on partition 1).
        other = c.call(request(INIT_PRODUCER_ID, 0, transactional_id=None,
                               transaction_timeout=60 * SECOND)).producer_id
        produce(c, "w", batch(1, pid=other, epoch=0, seq=0, txn=True), partition=1)
        assert fetch(c, "w", 0, isolation=1, partition=1).last_stable_offset == 0
        topic = entity(WRITE_TXN_MARKERS, 1, "WritableTxnMarkerTopic", name="w",
                       partition_indexes=(1, 7))
        marker = entity(WRITE_TXN_MARKERS, 1, "WritableTxnMarker", producer_id=other,
                        producer_epoch=0, transaction_result=False, topics=(topic,),
                        coordinator_epoch=-1)
        written = c.call(request(WRITE_TXN_MARKERS, 1, markers=(marker,)))
        assert [(p.partition_index, p.error_code) for p in written.markers[0].topics[0].partitions
                ] == [(1, ErrorCode.none), (7, ErrorCode.unknown_topic_or_partition)]
        assert fetch(c, "w", 0, isolation=1, partition=1).last_stable_offset == 2
        aborted = fetch(c, "w", 0, isolation=1, partition=1).aborted_transactions
        assert [(a.producer_id, a.first_offset) for a in aborted] == [(other, 0)]
        # Clients never append to the coordinators' topics.
        refused = produce(c, "__transaction_state", batch(1), partition=0)
        assert refused.error_code == ErrorCode.invalid_topic_exception
    assert proc.stop() == 0, proc.stderr()
    view = check_log_dir(proc.log_dir)
    assert [(b["control"]["type"], b["producer_id"]) for b in view.batches["w-1"]
            if b["is_control"]] == [("ABORT", other)]


def test_group_apis_at_old_versions(serve: Serve) -> None:
    proc = serve("--group-initial-rebalance-delay-ms", "0")
    with WireClient(proc.port) as c:
        create_topic(c, "g", 1)
        proto = entity(JOIN_GROUP, 0, "JoinGroupRequestProtocol", name="range", metadata=b"m")
        joined = c.call(request(JOIN_GROUP, 0, group_id="old", session_timeout=10 * SECOND,
                                member_id="", protocol_type="consumer", protocols=(proto,)))
        assert (joined.error_code, joined.generation_id, joined.protocol_name) == (
            ErrorCode.none, 1, "range")  # v0: no member id round trip, rebalance = session
        member = joined.member_id
        assert joined.leader == member and [m.member_id for m in joined.members] == [member]
        hb = c.call(request(HEARTBEAT, 0, group_id="old", generation_id=1, member_id=member))
        assert hb.error_code == ErrorCode.none  # CompletingRebalance accepts heartbeats
        stale = c.call(request(HEARTBEAT, 0, group_id="old", generation_id=0, member_id=member))
        assert stale.error_code == ErrorCode.illegal_generation
        part = entity(OFFSET_COMMIT, 2, "OffsetCommitRequestPartition", partition_index=0,
                      committed_offset=42, committed_metadata=None)
        topic = entity(OFFSET_COMMIT, 2, "OffsetCommitRequestTopic", name="g",
                       partitions=(part,))
        commit = c.call(request(OFFSET_COMMIT, 2, group_id="simple",
                                generation_id_or_member_epoch=-1, member_id="",
                                retention_time=datetime.timedelta(milliseconds=-1),
                                topics=(topic,)))
        assert commit.topics[0].partitions[0].error_code == ErrorCode.none
        wanted = entity(OFFSET_FETCH, 1, "OffsetFetchRequestTopic", name="g",
                        partition_indexes=(0,))
        fetched = c.call(request(OFFSET_FETCH, 1, group_id="simple", topics=(wanted,)))
        assert [(p.committed_offset, p.metadata, p.error_code)
                for p in fetched.topics[0].partitions] == [(42, "", ErrorCode.none)]
        unknown = c.call(request(OFFSET_FETCH, 1, group_id="nobody", topics=(wanted,)))
        assert unknown.topics[0].partitions[0].committed_offset == -1
        left = c.call(request(LEAVE_GROUP, 0, group_id="old", member_id="stranger"))
        assert left.error_code == ErrorCode.unknown_member_id
        listed = c.call(request(LIST_GROUPS, 0))
        assert sorted((g.group_id, g.protocol_type) for g in listed.groups) == [
            ("old", "consumer"), ("simple", "")]
        described = c.call(request(DESCRIBE_GROUPS, 0, groups=("old", "ghost")))
        assert [(g.group_id, g.group_state, len(g.members)) for g in described.groups] == [
            ("old", "CompletingRebalance", 1), ("ghost", "Dead", 0)]
        txn = entity(TXN_OFFSET_COMMIT, 0, "TxnOffsetCommitRequestTopic", name="g",
                     partitions=(entity(TXN_OFFSET_COMMIT, 0,
                                        "TxnOffsetCommitRequestPartition", partition_index=0,
                                        committed_offset=7, committed_metadata=None),))
        pid, epoch = _init(c, "old-txn")
        committed = c.call(request(TXN_OFFSET_COMMIT, 0, transactional_id="old-txn",
                                   group_id="simple", producer_id=pid, producer_epoch=epoch,
                                   topics=(txn,)))
        assert committed.topics[0].partitions[0].error_code == ErrorCode.none
        stable = c.call(request(OFFSET_FETCH, 7, group_id="simple", topics=(
            entity(OFFSET_FETCH, 7, "OffsetFetchRequestTopic", name="g",
                   partition_indexes=(0,)),), require_stable=True))
        assert stable.topics[0].partitions[0].error_code == ErrorCode.unstable_offset_commit
    assert proc.stop() == 0, proc.stderr()
    check_log_dir(proc.log_dir)
