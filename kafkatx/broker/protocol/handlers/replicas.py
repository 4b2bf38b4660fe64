"""Replica placement admin on a one-node cluster: AlterReplicaLogDirs (34), DescribeLogDirs (35),
ElectLeaders (43), AlterPartitionReassignments (45), ListPartitionReassignments (46).

This node is the only replica and the preferred leader of every partition, keeps everything in
its one log dir and never has a reassignment in progress, so these answer as Kafka does for such
a cluster: ``ReplicationControlManager#electLeaders`` (ELECTION_NOT_NEEDED, left out when every
partition is asked for), ``#alterPartitionReassignments`` (a target of this node alone is no
change, a cancel is NO_REASSIGNMENT_IN_PROGRESS) and ``#listPartitionReassignments`` (nothing),
``ReplicaManager#describeLogDirs`` (sizes of the logs on disk, no lag) and
``ReplicaManager#alterReplicaLogDirs`` (moving a replica to the dir it is in is a no-op).
Advertised ranges are Kafka 3.0's, from v1 for the log-dir APIs (what kio models).
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from kafkatx.broker.protocol.handlers.registry import api
from kafkatx.broker.protocol.handlers.topics import manual_assignment_problem
from kafkatx.broker.wire import codec

if TYPE_CHECKING:
    from kafkatx.broker.context import BrokerContext, RequestContext

PREFERRED, UNCLEAN = 0, 1  # ElectionType
FUTURE_DIR_EXTRA = len(".") + 32 + len("-future")  # UnifiedLog.logFutureDirName's suffix


def _has_partition(broker: BrokerContext, topic: str, partition: int) -> bool:
    t = broker.logs.topics.get(topic)
    return t is not None and 0 <= partition < t.num_partitions


@api(43, 0, 2)
async def handle_elect_leaders(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    election = getattr(request, "election_type", PREFERRED)
    wanted = request.topic_partitions
    if election not in (PREFERRED, UNCLEAN):  # ElectLeadersRequest#getErrorResponse
        error, message = ErrorCode.invalid_request, f"Unknown election type {election}"
        return codec.make(ctx.response_cls, error_code=error, replica_election_results=tuple(
            codec.make(ctx.resp.ReplicaElectionResult, topic=t.topic, partition_result=tuple(
                codec.make(ctx.resp.PartitionResult, partition_id=p, error_code=error,
                              error_message=message) for p in t.partitions))
            for t in wanted or ()))
    results = []
    if wanted is None:  # every partition; those already led by their leader are left out
        for name in broker.logs.topics:
            results.append(codec.make(ctx.resp.ReplicaElectionResult, topic=name,
                                         partition_result=()))
    else:
        for t in wanted:
            parts = []
            for p in t.partitions:
                if _has_partition(broker, t.topic, p):
                    error, message = ErrorCode.election_not_needed, None
                elif t.topic in broker.logs.topics:
                    error = ErrorCode.unknown_topic_or_partition
                    message = f"No such partition as {t.topic}-{p}"
                else:
                    error = ErrorCode.unknown_topic_or_partition
                    message = f"No such topic as {t.topic}"
                parts.append(codec.make(ctx.resp.PartitionResult, partition_id=p,
                                           error_code=error, error_message=message))
            results.append(codec.make(ctx.resp.ReplicaElectionResult, topic=t.topic,
                                         partition_result=tuple(parts)))
    return codec.make(ctx.response_cls, error_code=ErrorCode.none,
                         replica_election_results=tuple(results))


def _reassignment_error(broker: BrokerContext, topic: str, partition: Any
                        ) -> tuple[ErrorCode, str | None]:
    """``ReplicationControlManager#alterPartitionReassignment``."""
    if topic not in broker.logs.topics:
        return ErrorCode.unknown_topic_or_partition, f"Unable to find a topic named {topic}."
    if not _has_partition(broker, topic, partition.partition_index):
        return (ErrorCode.unknown_topic_or_partition,
                f"Unable to find partition {topic}:{partition.partition_index}.")
    if partition.replicas is None:
        return ErrorCode.no_reassignment_in_progress, "No partition reassignment is in progress."
    problem = manual_assignment_problem(broker, partition.replicas, None)
    if problem is not None:
        return ErrorCode.invalid_replica_assignment, problem
    return ErrorCode.none, None  # the target is this node, which is the current assignment


@api(45, 0, 0)
async def handle_alter_partition_reassignments(broker: BrokerContext, ctx: RequestContext,
                                               request: Any) -> Any:
    responses = []
    for t in request.topics:
        parts = []
        for p in t.partitions:
            error, message = _reassignment_error(broker, t.name, p)
            parts.append(codec.make(ctx.resp.ReassignablePartitionResponse,
                                       partition_index=p.partition_index, error_code=error,
                                       error_message=message))
        responses.append(codec.make(ctx.resp.ReassignableTopicResponse, name=t.name,
                                       partitions=tuple(parts)))
    return codec.make(ctx.response_cls, error_code=ErrorCode.none, error_message=None,
                         responses=tuple(responses))


@api(46, 0, 0)
async def handle_list_partition_reassignments(broker: BrokerContext, ctx: RequestContext,
                                              request: Any) -> Any:
    return codec.make(ctx.response_cls, error_code=ErrorCode.none, error_message=None,
                         topics=())


@api(35, 1, 2)
async def handle_describe_log_dirs(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    wanted = None if request.topics is None else {
        (t.topic, p) for t in request.topics for p in t.partitions}
    by_topic: dict[str, list[Any]] = defaultdict(list)
    for log in broker.logs.all_logs():
        if wanted is not None and (log.topic, log.partition) not in wanted:
            continue
        by_topic[log.topic].append(codec.make(
            ctx.resp.DescribeLogDirsPartition, partition_index=log.partition,
            partition_size=sum(s.size for s in log.segments), offset_lag=0,
            is_future_key=False))
    topics = tuple(codec.make(ctx.resp.DescribeLogDirsTopic, name=name,
                                 partitions=tuple(parts))
                   for name, parts in sorted(by_topic.items()))
    result = codec.make(ctx.resp.DescribeLogDirsResult, error_code=ErrorCode.none,
                           log_dir=str(broker.logs.root.resolve()), topics=topics)
    return codec.make(ctx.response_cls, results=(result,))


def _move_error(broker: BrokerContext, path: str, topic: str, partition: int) -> ErrorCode:
    """``ReplicaManager#alterReplicaLogDirs`` for one partition."""
    if len(f"{topic}-{partition}") + FUTURE_DIR_EXTRA > 255:
        return ErrorCode.invalid_topic_exception
    if path != str(broker.logs.root.resolve()):
        return ErrorCode.log_dir_not_found
    if not _has_partition(broker, topic, partition):
        return ErrorCode.unknown_topic_or_partition
    if broker.logs.get(topic, partition) is None:  # an internal partition not on disk yet
        return ErrorCode.replica_not_available
    return ErrorCode.none  # already in that dir: no future replica to create


@api(34, 1, 2)
async def handle_alter_replica_log_dirs(broker: BrokerContext, ctx: RequestContext,
                                        request: Any) -> Any:
    errors: dict[str, dict[int, ErrorCode]] = defaultdict(dict)
    for d in request.dirs:
        for t in d.topics:
            for p in t.partitions:
                errors[t.name][p] = _move_error(broker, d.path, t.name, p)
    return codec.make(ctx.response_cls, results=tuple(
        codec.make(ctx.resp.AlterReplicaLogDirTopicResult, topic_name=name,
                      partitions=tuple(codec.make(ctx.resp.AlterReplicaLogDirPartitionResult,
                                                     partition_index=p, error_code=e)
                                       for p, e in parts.items()))
        for name, parts in errors.items()))
