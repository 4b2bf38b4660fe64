"""FindCoordinator (key 10): this node coordinates every group and transactional id.

Mirrors ``KafkaApis#handleFindCoordinatorRequest`` (key type 0 = group, 1 = transaction, both
answered by this node; v4+ batches keys). The internal topic a key maps to is created then, as
Kafka does on the first lookup (its partitions appear on disk when first written). With
``--brokers N`` the coordinator is the leader of the key's partition of the internal topic
(``partitionFor``), created then with its 50 partitions on every replica;
COORDINATOR_NOT_AVAILABLE while that partition has no leader.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from kafkatx.broker.logdir.log_manager import INTERNAL_PARTITIONS
from kafkatx.broker.protocol.handlers.registry import api
from kafkatx.broker.wire import codec
from kafkatx.formats.internal_topics import GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC
from kafkatx.semantics.coordinator_partition import partition_for

if TYPE_CHECKING:
    from kafkatx.broker.context import BrokerContext, RequestContext

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1


@api(10, 0, 4)
async def handle_find_coordinator(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    key_type = getattr(request, "key_type", GROUP_KEY_TYPE)
    topic = GROUP_METADATA_TOPIC if key_type == GROUP_KEY_TYPE else TRANSACTION_STATE_TOPIC
    if key_type in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE):
        if broker.cluster is None:
            broker.logs.internal_topic(topic)
        else:
            broker.cluster.ensure_internal_topic(topic)

    def answer(key: str) -> tuple[ErrorCode, str | None, int, str, int]:
        if key_type not in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE):
            return ErrorCode.invalid_request, "Unknown coordinator type in request", -1, "", -1
        if broker.cluster is None:
            return (ErrorCode.none, None, broker.config.node_id, broker.advertised_host,
                    broker.port)
        leader = broker.cluster.leader_broker(topic, partition_for(key, INTERNAL_PARTITIONS))
        if leader is None:
            return ErrorCode.coordinator_not_available, None, -1, "", -1
        return ErrorCode.none, None, leader.config.node_id, leader.advertised_host, leader.port

    if hasattr(request, "coordinator_keys"):
        coordinators = []
        for key in request.coordinator_keys:
            error, message, node, host, port = answer(key)
            coordinators.append(codec.make(ctx.resp.Coordinator, key=key, node_id=node,
                                              host=host, port=port, error_code=error,
                                              error_message=message))
        return codec.make(ctx.response_cls, coordinators=tuple(coordinators))
    error, message, node, host, port = answer(request.key)
    return codec.make(ctx.response_cls, error_code=error, error_message=message,
                         node_id=node, host=host, port=port)
