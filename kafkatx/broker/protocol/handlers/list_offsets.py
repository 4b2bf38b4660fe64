"""ListOffsets (key 2): earliest, latest (HW, or the LSO for read_committed), max timestamp,
and the first offset at or after a timestamp.

Mirrors ``ReplicaManager#fetchOffset`` / ``Partition#fetchOffsetForTimestamp``: consumers
(replica id -1) are bounded by the isolation level (v0/v1 carry none: read_uncommitted), other
replica ids by the log end offset; a timestamp result at or past that bound is "not found"
(offset -1, timestamp -1); a partition named twice is INVALID_REQUEST; with ``--brokers N``
only the leader answers (NOT_LEADER_OR_FOLLOWER elsewhere). v0, which Kafka 3.x still
serves (KIP-896 removed it in 4.0), answers as ``KafkaApis#handleListOffsetRequestV0`` /
``Partition#legacyFetchOffsetsForTimestamp``: up to ``max_num_offsets`` segment base offsets
by segment file time (:meth:`PartitionLog.legacy_offsets_before`), capped at the high watermark
for consumers; timestamps below -2 are UNSUPPORTED_VERSION.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from kafkatx.broker.logs.log_values import EARLIEST_TIMESTAMP
from kafkatx.broker.protocol.handlers.fetch import isolation_of, leader_epoch_error
from kafkatx.broker.protocol.handlers.registry import api
from kafkatx.broker.replication.replica_manager import leader_log
from kafkatx.broker.wire import codec
from kafkatx.semantics.read_committed import IsolationLevel

if TYPE_CHECKING:
    from kafkatx.broker.context import BrokerContext, RequestContext

CONSUMER_REPLICA_ID = -1


@api(2, 0, 7)
async def handle_list_offsets(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    if ctx.api_version == 0:
        return _list_offsets_v0(broker, ctx, request)
    isolation: IsolationLevel | None = None
    if request.replica_id == CONSUMER_REPLICA_ID:
        isolation = isolation_of(request)
    seen: dict[tuple[str, int], int] = {}
    for topic in request.topics:
        for part in topic.partitions:
            key = (topic.name, part.partition_index)
            seen[key] = seen.get(key, 0) + 1
    topics = []
    for topic in request.topics:
        partitions = []
        for part in topic.partitions:
            log, missing = leader_log(broker, topic.name, part.partition_index)
            error = ErrorCode.none
            offset, timestamp, epoch = -1, -1, -1
            if seen[(topic.name, part.partition_index)] > 1:
                error = ErrorCode.invalid_request
            elif log is None:
                error = missing
            else:
                error = leader_epoch_error(log, getattr(part, "current_leader_epoch", -1)) \
                    or ErrorCode.none
                if error == ErrorCode.none:
                    found = log.offset_for_timestamp(part.timestamp, isolation)
                    if found is not None:
                        offset, timestamp, epoch = found.offset, found.timestamp, \
                            found.leader_epoch
            partitions.append(codec.make(
                ctx.resp.ListOffsetsPartitionResponse, partition_index=part.partition_index,
                error_code=error, timestamp=timestamp, offset=offset, leader_epoch=epoch))
        topics.append(codec.make(ctx.resp.ListOffsetsTopicResponse, name=topic.name,
                                    partitions=tuple(partitions)))
    return codec.make(ctx.response_cls, topics=tuple(topics))


def _list_offsets_v0(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    now = broker.now_ms()
    topics = []
    for topic in request.topics:
        partitions = []
        for part in topic.partitions:
            offsets: list[int] = []
            log = broker.logs.get(topic.name, part.partition_index)
            if part.timestamp < EARLIEST_TIMESTAMP:
                error = ErrorCode.unsupported_version
            elif log is None:
                error = ErrorCode.unknown_topic_or_partition
            else:
                error = ErrorCode.none
                try:
                    offsets = log.legacy_offsets_before(part.timestamp, part.max_num_offsets,
                                                        now)
                except ValueError:
                    error = ErrorCode.unknown_server_error
                hw = log.high_watermark
                if request.replica_id == CONSUMER_REPLICA_ID and any(o > hw for o in offsets):
                    offsets = [hw] + [o for o in offsets if o <= hw]
            partitions.append(codec.make(
                ctx.resp.ListOffsetsPartitionResponse, partition_index=part.partition_index,
                error_code=error, old_style_offsets=tuple(offsets)))
        topics.append(codec.make(ctx.resp.ListOffsetsTopicResponse, name=topic.name,
                                    partitions=tuple(partitions)))
    return codec.make(ctx.response_cls, topics=tuple(topics))
