"""OffsetDelete, authorized operations and DescribeCluster at the wire level, with the exact
error codes and bit fields Kafka 3.x answers; the tombstones OffsetDelete writes are read back
from ``__consumer_offsets`` with kafkatx's own readers."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode

from kafkatx.formats.consumer_offsets import GroupMetadataKey, OffsetCommitKey, parse_key
from kafkatx.formats.consumer_protocol import build_subscription
from kafkatx.formats.record_batch import RecordBatch
from kafkatx.formats.segment import iter_segment
from kafkatx.semantics.coordinator_partition import partition_for
from tests.broker.logdir_checks import verify_clean
from tests.broker.serve_process import ServeProcess
from tests.broker.test_wire import METADATA, create_topic, stop_ok
from tests.broker.wire import WireClient, entity, request

Serve = Callable[..., ServeProcess]
E = ErrorCode
OFFSET_COMMIT, OFFSET_FETCH, JOIN_GROUP, SYNC_GROUP, DESCRIBE_GROUPS = 8, 9, 11, 14, 15
OFFSET_DELETE, DESCRIBE_CLUSTER = 47, 60
SECOND = datetime.timedelta(seconds=1)
OMITTED = -(2**31)
# AclEntry.supportedOperations packed by Utils.to32BitField (bit 1 << AclOperation.code).
TOPIC_OPS = sum(1 << code for code in (3, 4, 5, 6, 7, 8, 10, 11))  # READ..ALTER_CONFIGS
GROUP_OPS = sum(1 << code for code in (3, 6, 8))  # READ, DELETE, DESCRIBE (Kafka 3.x)
CLUSTER_OPS = sum(1 << code for code in (5, 7, 8, 9, 10, 11, 12))


def _join(c: WireClient, group: str, protocol_type: str, metadata: bytes) -> str:
    """A one-member Stable group: JoinGroup v0 completes at once with no initial delay, the
    leader's SyncGroup makes it Stable."""
    proto = entity(JOIN_GROUP, 0, "JoinGroupRequestProtocol", name="range", metadata=metadata)
    joined = c.call(request(JOIN_GROUP, 0, group_id=group, session_timeout=30 * SECOND,
                            member_id="", protocol_type=protocol_type, protocols=(proto,)))
    assert joined.error_code == E.none
    member = joined.member_id
    assignment = entity(SYNC_GROUP, 0, "SyncGroupRequestAssignment", member_id=member,
                        assignment=b"")
    synced = c.call(request(SYNC_GROUP, 0, group_id=group, generation_id=joined.generation_id,
                            member_id=member, assignments=(assignment,)))
    assert synced.error_code == E.none
    return member


def _commit(c: WireClient, group: str, offsets: dict[tuple[str, int], int],
            member: str = "", generation: int = -1) -> list[ErrorCode]:
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), offset in offsets.items():
        by_topic.setdefault(topic, []).append(entity(
            OFFSET_COMMIT, 8, "OffsetCommitRequestPartition", partition_index=partition,
            committed_offset=offset, committed_leader_epoch=-1, committed_metadata=None))
    topics = tuple(entity(OFFSET_COMMIT, 8, "OffsetCommitRequestTopic", name=t,
                          partitions=tuple(ps)) for t, ps in by_topic.items())
    r = c.call(request(OFFSET_COMMIT, 8, group_id=group, generation_id_or_member_epoch=generation,
                       member_id=member, group_instance_id=None, topics=topics))
    return [p.error_code for t in r.topics for p in t.partitions]


def _committed(c: WireClient, group: str, topic: str, partitions: list[int]) -> list[int]:
    wanted = entity(OFFSET_FETCH, 7, "OffsetFetchRequestTopic", name=topic,
                    partition_indexes=tuple(partitions))
    r = c.call(request(OFFSET_FETCH, 7, group_id=group, topics=(wanted,), require_stable=False))
    return [p.committed_offset for p in r.topics[0].partitions]


def _delete(c: WireClient, group: str, wanted: dict[str, list[int]]) -> Any:
    topics = tuple(entity(OFFSET_DELETE, 0, "OffsetDeleteRequestTopic", name=t, partitions=tuple(
        entity(OFFSET_DELETE, 0, "OffsetDeleteRequestPartition", partition_index=p)
        for p in ps)) for t, ps in wanted.items())
    return c.call(request(OFFSET_DELETE, 0, group_id=group, topics=topics))


def _errors(response: Any) -> dict[tuple[str, int], ErrorCode]:
    return {(t.name, p.partition_index): p.error_code
            for t in response.topics for p in t.partitions}


def _offsets_records(log_dir: Path, group: str) -> list[tuple[Any, bool]]:
    """(key, is tombstone) of every record of ``group``'s ``__consumer_offsets`` partition."""
    out = []
    for segment in sorted((log_dir / f"__consumer_offsets-{partition_for(group)}").glob("*.log")):
        for entry in iter_segment(segment.read_bytes(), decode_records=True):
            assert isinstance(entry, RecordBatch)
            if entry.header.is_control:
                continue
            for record in entry.records or ():
                key = parse_key(record.key or b"")
                if getattr(key, "group", None) == group:
                    out.append((key, record.value is None))
    return out


def test_offset_delete(serve: Serve) -> None:
    """``GroupCoordinator#handleDeleteOffsets`` through ``KafkaApis#handleOffsetDeleteRequest``:
    a "consumer" group with members keeps the offsets of topics it subscribes to
    (GROUP_SUBSCRIBED_TO_TOPIC) and loses the others; an Empty group loses every one asked for
    and, left without offsets, becomes Dead (``cleanupGroupMetadata``); other protocol types
    with members are NON_EMPTY_GROUP; unknown partitions UNKNOWN_TOPIC_OR_PARTITION."""
    proc = serve("--group-initial-rebalance-delay-ms", "0")
    with WireClient(proc.port) as c:
        create_topic(c, "orders", 2)
        create_topic(c, "audit", 1)
        member = _join(c, "billing", "consumer", build_subscription(["orders"]))
        assert _commit(c, "billing", {("orders", 0): 5, ("orders", 1): 6, ("audit", 0): 7},
                       member, 1) == [E.none] * 3
        r = _delete(c, "billing", {"orders": [0, 1], "audit": [0], "ghost": [0]})
        assert r.error_code == E.none
        assert _errors(r) == {("orders", 0): E.group_subscribed_to_topic,
                              ("orders", 1): E.group_subscribed_to_topic,
                              ("audit", 0): E.none, ("ghost", 0): E.unknown_topic_or_partition}
        assert [t.name for t in r.topics] == ["ghost", "orders", "audit"]  # unknown first
        assert _committed(c, "billing", "orders", [0, 1]) == [5, 6]
        assert _committed(c, "billing", "audit", [0]) == [-1]
        r = _delete(c, "billing", {"audit": [0, 9]})  # nothing left to delete is still NONE
        assert _errors(r) == {("audit", 0): E.none, ("audit", 9): E.unknown_topic_or_partition}
        # A group of another protocol type with members cannot lose offsets.
        worker = _join(c, "connectors", "connect", b"worker")
        assert _commit(c, "connectors", {("audit", 0): 1}, worker, 1) == [E.none]
        r = _delete(c, "connectors", {"audit": [0]})
        assert (r.error_code, r.topics) == (E.non_empty_group, ())
        assert _committed(c, "connectors", "audit", [0]) == [1]
        # An Empty group (offsets only): every partition asked for goes; the last one makes
        # the group Dead, so it is then unknown.
        assert _commit(c, "simple", {("orders", 0): 1, ("orders", 1): 2}) == [E.none] * 2
        assert _errors(_delete(c, "simple", {"orders": [0]})) == {("orders", 0): E.none}
        listed = c.call(request(16, 0))
        assert "simple" in {g.group_id for g in listed.groups}
        assert _errors(_delete(c, "simple", {"orders": [1]})) == {("orders", 1): E.none}
        assert "simple" not in {g.group_id for g in c.call(request(16, 0)).groups}
        r = _delete(c, "simple", {"orders": [0]})
        assert (r.error_code, r.topics) == (E.group_id_not_found, ())
        r = _delete(c, "nobody", {"ghost": [0]})
        assert (r.error_code, r.topics) == (E.group_id_not_found, ())
        assert _delete(c, "", {"orders": [0]}).error_code == E.invalid_group_id
    stop_ok(proc)
    billing = _offsets_records(proc.log_dir, "billing")
    assert (OffsetCommitKey(group="billing", topic="audit", partition=0), True) in billing
    assert not any(tomb for key, tomb in billing if getattr(key, "topic", None) == "orders")
    simple = _offsets_records(proc.log_dir, "simple")
    assert [(key.partition, tomb) for key, tomb in simple
            if isinstance(key, OffsetCommitKey)] == [(0, False), (1, False), (0, True),
                                                     (1, True)]
    # An offsets-only group (generation 0) gets no group metadata tombstone.
    assert not any(isinstance(key, GroupMetadataKey) for key, _ in simple)
    verify_clean(proc.log_dir)
    again = serve(log_dir=proc.log_dir)
    with WireClient(again.port) as c:  # the tombstones hold across a restart
        assert _committed(c, "billing", "audit", [0]) == [-1]
        assert _committed(c, "billing", "orders", [0, 1]) == [5, 6]
        assert _committed(c, "simple", "orders", [0, 1]) == [-1, -1]
    stop_ok(again)


def test_authorized_operations_and_describe_cluster(serve: Serve) -> None:
    """``AuthHelper#authorizedOperations`` without an authorizer (every operation
    ``AclEntry.supportedOperations`` lists) in ``KafkaApis#handleTopicMetadataRequest`` (topics
    from v8; the cluster only in v8-v10), ``#handleDescribeGroupsRequest`` (v3+, groups without
    error) and ``AuthHelper#computeDescribeClusterResponse``."""
    proc = serve("--group-initial-rebalance-delay-ms", "0", "--no-auto-create")
    with WireClient(proc.port) as c:
        create_topic(c, "orders", 1)
        for version in (8, 9, 10):
            asked = c.call(request(METADATA, version, topics=None,
                                   allow_auto_topic_creation=False,
                                   include_cluster_authorized_operations=True,
                                   include_topic_authorized_operations=True))
            assert asked.cluster_authorized_operations == CLUSTER_OPS
            assert [(t.name, t.topic_authorized_operations) for t in asked.topics] == [
                ("orders", TOPIC_OPS)]
            quiet = c.call(request(METADATA, version, topics=None,
                                   allow_auto_topic_creation=False,
                                   include_cluster_authorized_operations=False,
                                   include_topic_authorized_operations=False))
            assert quiet.cluster_authorized_operations == OMITTED
            assert quiet.topics[0].topic_authorized_operations == OMITTED
        names = tuple(entity(METADATA, 11, "MetadataRequestTopic", name=n, topic_id=None)
                      for n in ("orders", "absent"))
        v11 = c.call(request(METADATA, 11, topics=names, allow_auto_topic_creation=False,
                             include_topic_authorized_operations=True))
        assert [(t.name, t.error_code, t.topic_authorized_operations) for t in v11.topics] == [
            ("orders", E.none, TOPIC_OPS), ("absent", E.unknown_topic_or_partition, TOPIC_OPS)]
        assert not hasattr(v11, "cluster_authorized_operations")  # dropped in v11

        _join(c, "billing", "consumer", build_subscription(["orders"]))
        for version, include in ((3, True), (5, True), (5, False)):
            groups = c.call(request(DESCRIBE_GROUPS, version, groups=("billing", "ghost", ""),
                                    include_authorized_operations=include)).groups
            expected = GROUP_OPS if include else OMITTED
            assert [(g.group_id, g.error_code, g.authorized_operations) for g in groups] == [
                ("billing", E.none, expected), ("ghost", E.none, expected),
                ("", E.none, expected)]

        for version in (0, 1):
            described = c.call(request(DESCRIBE_CLUSTER, version,
                                       include_cluster_authorized_operations=True,
                                       endpoint_type=1))
            assert (described.error_code, described.cluster_authorized_operations,
                    described.controller_id) == (E.none, CLUSTER_OPS, 1)
            assert [(b.broker_id, b.host, b.port) for b in described.brokers] == [
                (1, "127.0.0.1", proc.port)]
            assert described.cluster_id == asked.cluster_id
        quiet = c.call(request(DESCRIBE_CLUSTER, 1, include_cluster_authorized_operations=False,
                               endpoint_type=1))
        assert quiet.cluster_authorized_operations == OMITTED
        controller = c.call(request(DESCRIBE_CLUSTER, 1,
                                    include_cluster_authorized_operations=False,
                                    endpoint_type=2))
        assert controller.error_code == E.mismatched_endpoint_type
        unknown = c.call(request(DESCRIBE_CLUSTER, 1,
                                 include_cluster_authorized_operations=False, endpoint_type=7))
        assert (unknown.error_code, unknown.error_message) == (
            E.unsupported_endpoint_type, "Unsupported endpoint type 7")
    stop_ok(proc)
