"""FindCoordinator (key 10): this node coordinates every group and transactional id.

Mirrors ``KafkaApis#handleFindCoordinatorRequest`` (key type 0 = group, 1 = transaction, both
answered by this node; v4+ batches keys). The internal topic a key maps to is created then, as
Kafka does on the first lookup (its partitions appear on disk when first written).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from kafkatx.broker import protocol
from kafkatx.broker.handlers import api
from kafkatx.broker.log_manager import GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC

if TYPE_CHECKING:
    from kafkatx.broker.server import Broker, RequestContext

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1


@api(10, 0, 4)
async def handle_find_coordinator(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    key_type = getattr(request, "key_type", GROUP_KEY_TYPE)
    if key_type in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE):
        broker.logs.internal_topic(GROUP_METADATA_TOPIC if key_type == GROUP_KEY_TYPE
                                   else TRANSACTION_STATE_TOPIC)
        error, message = ErrorCode.none, None
        node, host, port = broker.config.node_id, broker.advertised_host, broker.port
    else:
        error, message = ErrorCode.invalid_request, "Unknown coordinator type in request"
        node, host, port = -1, "", -1
    if hasattr(request, "coordinator_keys"):
        coordinators = tuple(
            protocol.make(ctx.resp.Coordinator, key=key, node_id=node, host=host, port=port,
                          error_code=error, error_message=message)
            for key in request.coordinator_keys)
        return protocol.make(ctx.response_cls, coordinators=coordinators)
    return protocol.make(ctx.response_cls, error_code=error, error_message=message,
                         node_id=node, host=host, port=port)
