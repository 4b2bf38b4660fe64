"""FindCoordinator (key 10) and InitProducerId (key 22) for idempotent producers.

Mirrors ``KafkaApis#handleFindCoordinatorRequest`` (key type 0 = group, 1 = transaction, both
answered by this node; v4+ batches keys) and ``TransactionCoordinator#handleInitProducerId``
for a null transactional id (always a new producer id with epoch 0, whatever producer id and
epoch a v3+ request carries). Transactional ids are not served yet: TRANSACTIONAL_ID_AUTHORIZATION
_FAILED, a fatal error for every client, rather than a retriable one that would hang them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from kafkatx.broker import protocol
from kafkatx.broker.handlers import api

if TYPE_CHECKING:
    from kafkatx.broker.server import Broker, RequestContext

GROUP_KEY_TYPE = 0
TRANSACTION_KEY_TYPE = 1


@api(10, 0, 4)
async def handle_find_coordinator(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    key_type = getattr(request, "key_type", GROUP_KEY_TYPE)
    if key_type in (GROUP_KEY_TYPE, TRANSACTION_KEY_TYPE):
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


@api(22, 0, 4)
async def handle_init_producer_id(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    txn_id = request.transactional_id
    if txn_id is None:
        pid = broker.producer_ids.generate()
        broker.log(f"{ctx.peer} idempotent producer: producer id {pid} epoch 0")
        return protocol.make(ctx.response_cls, error_code=ErrorCode.none, producer_id=pid,
                             producer_epoch=0)
    if txn_id == "":
        error = ErrorCode.invalid_request
    else:
        broker.warn(f"{ctx.peer}: transactional id {txn_id!r}: transactions are not served yet")
        error = ErrorCode.transactional_id_authorization_failed
    return protocol.make(ctx.response_cls, error_code=error, producer_id=-1, producer_epoch=-1)
