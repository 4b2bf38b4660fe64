"""OffsetForLeaderEpoch (key 23), served by the brokers of ``kafkatx serve --brokers N``.

Mirrors ``KafkaApis#handleOffsetForLeaderEpochRequest`` / ``Partition#lastOffsetForLeaderEpoch``:
only the leader answers (NOT_LEADER_OR_FOLLOWER elsewhere, UNKNOWN_TOPIC_OR_PARTITION for a
partition the metadata does not have), the request's current leader epoch is checked as for a
fetch (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH), then ``UnifiedLog#endOffsetForEpoch``:
the largest epoch at or below the one asked for and where it ends
(``LeaderEpochFileCache#endOffsetFor``), UNDEFINED (-1, -1) when the cache has none. The single
node of ``kafkatx serve`` does not advertise it (it never changes leader).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from kafkatx.broker.protocol.handlers.fetch import leader_epoch_error
from kafkatx.broker.protocol.handlers.registry import api
from kafkatx.broker.replication.replica_manager import leader_log
from kafkatx.broker.wire import codec
from kafkatx.semantics.leader_epochs import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET

if TYPE_CHECKING:
    from kafkatx.broker.context import BrokerContext, RequestContext


@api(23, 2, 4, cluster_only=True)
async def handle_offset_for_leader_epoch(broker: BrokerContext, ctx: RequestContext,
                                         request: Any) -> Any:
    topics = []
    for topic in request.topics:
        partitions = []
        for part in topic.partitions:
            epoch, end = UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
            log, error = leader_log(broker, topic.topic, part.partition)
            if log is not None:
                error = leader_epoch_error(log, part.current_leader_epoch) or ErrorCode.none
                if error == ErrorCode.none:
                    cache = log.epochs if log.epochs is not None else log.load_epoch_cache()
                    epoch, end = cache.end_offset_for(part.leader_epoch, log.log_end_offset)
            partitions.append(codec.make(ctx.resp.EpochEndOffset, error_code=error,
                                            partition=part.partition, leader_epoch=epoch,
                                            end_offset=end))
        topics.append(codec.make(ctx.resp.OffsetForLeaderTopicResult, topic=topic.topic,
                                    partitions=tuple(partitions)))
    return codec.make(ctx.response_cls, topics=tuple(topics))
