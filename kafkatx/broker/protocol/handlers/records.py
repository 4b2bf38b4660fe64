"""DeleteRecords (key 21): move partitions' log start offsets forward.

Mirrors ``KafkaApis#handleDeleteRecordsRequest`` (a partition the metadata does not have is
UNKNOWN_TOPIC_OR_PARTITION with low watermark -1; no authorizer, so no
TOPIC_AUTHORIZATION_FAILED) and ``ReplicaManager#deleteRecords`` through
:meth:`kafkatx.broker.logdir.log_manager.LogManager.delete_records`. The only replica is the whole
ISR, so the low watermark has reached the requested offset as soon as the log start offset has and
``DelayedDeleteRecords`` never waits: the request's timeout is not needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from kafkatx.broker.logs.log_values import AppendError
from kafkatx.broker.protocol.handlers.registry import api
from kafkatx.broker.replication.replica_manager import leader_log
from kafkatx.broker.wire import codec

if TYPE_CHECKING:
    from kafkatx.broker.context import BrokerContext, RequestContext

INVALID_LOW_WATERMARK = -1  # DeleteRecordsResponse.INVALID_LOW_WATERMARK


def _delete(broker: BrokerContext, topic: str, partition: int,
            offset: int) -> tuple[ErrorCode, int]:
    if not broker.logs.contains(topic, partition):
        return ErrorCode.unknown_topic_or_partition, INVALID_LOW_WATERMARK
    if broker.cluster is not None:
        _, error = leader_log(broker, topic, partition)
        if error != ErrorCode.none:
            return error, INVALID_LOW_WATERMARK
    try:
        return ErrorCode.none, broker.logs.delete_records(topic, partition, offset)
    except AppendError as exc:
        return exc.error, INVALID_LOW_WATERMARK


@api(21, 0, 2)
async def handle_delete_records(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    # A partition named twice counts once, its last offset winning (KafkaApis builds a Map).
    wanted: dict[str, dict[int, int]] = {}
    for topic in request.topics:
        for part in topic.partitions:
            wanted.setdefault(topic.name, {})[part.partition_index] = part.offset
    topics = []
    for name, partitions in wanted.items():
        results = []
        for index, offset in partitions.items():
            error, low_watermark = _delete(broker, name, index, offset)
            results.append(codec.make(ctx.resp.DeleteRecordsPartitionResult,
                                         partition_index=index, low_watermark=low_watermark,
                                         error_code=error))
        topics.append(codec.make(ctx.resp.DeleteRecordsTopicResult, name=name,
                                    partitions=tuple(results)))
    return codec.make(ctx.response_cls, topics=tuple(topics))
