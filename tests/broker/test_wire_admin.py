"""Admin APIs of a one-node cluster at the wire level: CreatePartitions, ElectLeaders, partition
reassignments, log dirs, the broker's DescribeConfigs and DeleteGroups."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from tests.broker.logdir_checks import verify_clean
from tests.broker.serve_process import ServeProcess
from tests.broker.test_wire import (
    DESCRIBE_CONFIGS,
    METADATA,
    batch,
    create_topic,
    produce,
    stop_ok,
)
from tests.broker.wire import WireClient, entity, request

Serve = Callable[..., ServeProcess]
ALTER_LOG_DIRS, DESCRIBE_LOG_DIRS, CREATE_PARTITIONS, DELETE_GROUPS = 34, 35, 37, 42
ELECT_LEADERS, ALTER_REASSIGNMENTS, LIST_REASSIGNMENTS = 43, 45, 46
TIMEOUT = datetime.timedelta(seconds=5)
E = ErrorCode


def _grow(c: WireClient, *topics: tuple[str, int, list[list[int]] | None],
          validate_only: bool = False) -> list[tuple[str, ErrorCode]]:
    wanted = tuple(entity(CREATE_PARTITIONS, 3, "CreatePartitionsTopic", name=n, count=count,
                          assignments=None if a is None else tuple(
                              entity(CREATE_PARTITIONS, 3, "CreatePartitionsAssignment",
                                     broker_ids=tuple(ids)) for ids in a))
                   for n, count, a in topics)
    r = c.call(request(CREATE_PARTITIONS, 3, topics=wanted, timeout=TIMEOUT,
                       validate_only=validate_only))
    return [(x.name, x.error_code) for x in r.results]


def _partitions(c: WireClient, topic: str) -> list[int]:
    meta = c.call(request(METADATA, 9, topics=(entity(METADATA, 9, "MetadataRequestTopic",
                                                      name=topic),),
                          allow_auto_topic_creation=False))
    return [p.partition_index for p in meta.topics[0].partitions]


def _elect(c: WireClient, wanted: dict[str, list[int]] | None, version: int = 2,
           election: int = 0) -> Any:
    parts = None if wanted is None else tuple(
        entity(ELECT_LEADERS, version, "TopicPartitions", topic=t, partitions=tuple(ps))
        for t, ps in wanted.items())
    return c.call(request(ELECT_LEADERS, version, election_type=election,
                          topic_partitions=parts, timeout=TIMEOUT))


def _reassign(c: WireClient, topic: str, partition: int, replicas: list[int] | None
              ) -> ErrorCode:
    p = entity(ALTER_REASSIGNMENTS, 0, "ReassignablePartition", partition_index=partition,
               replicas=None if replicas is None else tuple(replicas))
    t = entity(ALTER_REASSIGNMENTS, 0, "ReassignableTopic", name=topic, partitions=(p,))
    r = c.call(request(ALTER_REASSIGNMENTS, 0, timeout=TIMEOUT, topics=(t,)))
    assert r.error_code == E.none
    return r.responses[0].partitions[0].error_code


def _move(c: WireClient, path: str, topic: str, partition: int) -> ErrorCode:
    t = entity(ALTER_LOG_DIRS, 2, "AlterReplicaLogDirTopic", name=topic,
               partitions=(partition,))
    d = entity(ALTER_LOG_DIRS, 2, "AlterReplicaLogDir", path=path, topics=(t,))
    r = c.call(request(ALTER_LOG_DIRS, 2, dirs=(d,)))
    return r.results[0].partitions[0].error_code


def test_partition_and_replica_admin(serve: Serve) -> None:
    proc = serve()
    log_dir = str(proc.log_dir.resolve())
    with WireClient(proc.port) as c:
        assert create_topic(c, "t").error_code == E.none
        assert _grow(c, ("t", 3, [[1], [1]]), validate_only=True) == [("t", E.none)]
        assert _partitions(c, "t") == [0]
        assert _grow(c, ("t", 3, [[1], [2]]), ("t", 3, None), ("absent", 2, None)) == [
            ("t", E.invalid_request), ("absent", E.unknown_topic_or_partition)]
        assert _grow(c, ("t", 3, [[1]])) == [("t", E.invalid_replica_assignment)]
        assert _grow(c, ("t", 3, [[1], [2]])) == [("t", E.invalid_replica_assignment)]
        assert _grow(c, ("t", 3, [[1], [1, 1]])) == [("t", E.invalid_replica_assignment)]
        assert _grow(c, ("t", 3, [[1], [1]])) == [("t", E.none)]
        assert _grow(c, ("t", 3, None)) == [("t", E.invalid_partitions)]
        assert _grow(c, ("t", 2, None)) == [("t", E.invalid_partitions)]
        assert _partitions(c, "t") == [0, 1, 2]
        assert produce(c, "t", batch(3), partition=2).error_code == E.none

        r = _elect(c, {"t": [0, 2, 7], "absent": [0]})
        assert r.error_code == E.none
        assert [(x.topic, [(p.partition_id, p.error_code) for p in x.partition_result])
                for x in r.replica_election_results] == [
            ("t", [(0, E.election_not_needed), (2, E.election_not_needed),
                   (7, E.unknown_topic_or_partition)]),
            ("absent", [(0, E.unknown_topic_or_partition)])]
        everything = _elect(c, None, election=1)  # only partitions that needed an election
        assert [(x.topic, x.partition_result) for x in everything.replica_election_results] \
            == [("t", ())]
        v0 = _elect(c, {"t": [1]}, version=0)
        assert v0.replica_election_results[0].partition_result[0].error_code == \
            E.election_not_needed
        assert _elect(c, {"t": [1]}, election=5).error_code == E.invalid_request

        assert _reassign(c, "t", 0, [1]) == E.none  # already there
        assert _reassign(c, "t", 0, [1, 2]) == E.invalid_replica_assignment
        assert _reassign(c, "t", 0, None) == E.no_reassignment_in_progress
        assert _reassign(c, "t", 9, [1]) == E.unknown_topic_or_partition
        listed = c.call(request(LIST_REASSIGNMENTS, 0, timeout=TIMEOUT, topics=None))
        assert (listed.error_code, listed.topics) == (E.none, ())

        dirs = c.call(request(DESCRIBE_LOG_DIRS, 2, topics=None)).results
        assert [(d.error_code, d.log_dir) for d in dirs] == [(E.none, log_dir)]
        sizes = {p.partition_index: p.partition_size for t in dirs[0].topics if t.name == "t"
                 for p in t.partitions}
        assert sizes[0] == sizes[1] == 0 and sizes[2] == len(batch(3))
        only = entity(DESCRIBE_LOG_DIRS, 2, "DescribableLogDirTopic", topic="t",
                      partitions=(2,))
        one = c.call(request(DESCRIBE_LOG_DIRS, 1, topics=(only,))).results[0].topics
        assert [(t.name, [p.partition_index for p in t.partitions]) for t in one] == [
            ("t", [2])]

        assert _move(c, log_dir, "t", 1) == E.none
        assert _move(c, log_dir + "-other", "t", 1) == E.log_dir_not_found
        assert _move(c, log_dir, "t", 5) == E.unknown_topic_or_partition
    stop_ok(proc)
    verify_clean(proc.log_dir)
    again = serve(log_dir=proc.log_dir)
    with WireClient(again.port) as c:
        assert _partitions(c, "t") == [0, 1, 2]
    stop_ok(again)


def test_broker_configs_and_delete_groups(serve: Serve) -> None:
    proc = serve("--group-min-session-timeout-ms", "1500")
    with WireClient(proc.port) as c:
        res = entity(DESCRIBE_CONFIGS, 4, "DescribeConfigsResource", resource_type=4,
                     resource_name="1", configuration_keys=None)
        configs = {e.name: e for e in c.call(request(
            DESCRIBE_CONFIGS, 4, resources=(res,), include_synonyms=True,
            include_documentation=False)).results[0].configs}
        advertised = configs["advertised.listeners"]  # never set: Kafka's null default
        assert (advertised.value, advertised.config_source, advertised.read_only,
                advertised.synonyms) == (None, 5, False, ())
        assert configs["listeners"].value == f"PLAINTEXT://127.0.0.1:{proc.port}"
        assert (configs["listeners"].config_source, configs["listeners"].read_only) == (
            4, False)
        assert configs["broker.id"].read_only and not configs["log.segment.bytes"].read_only
        assert configs["group.min.session.timeout.ms"].value == "1500"

        r = c.call(request(DELETE_GROUPS, 2, groups_names=("nobody", "nobody", "")))
        assert [(x.group_id, x.error_code) for x in r.results] == [
            ("nobody", E.group_id_not_found), ("", E.group_id_not_found)]
    stop_ok(proc)
