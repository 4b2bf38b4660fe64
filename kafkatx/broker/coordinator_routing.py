"""Which broker of a ``--brokers N`` serve coordinates a request's group or transactional id.

Mirrors the NOT_COORDINATOR answers of ``GroupCoordinator`` (``isCoordinatorForGroup``) and
``TransactionStateManager#getTransactionState`` (the id's partition is not led here): a client
sent to the wrong broker looks the coordinator up again with FindCoordinator. Requests that name
one id are checked here, before their handler; the single node of ``kafkatx serve``
coordinates everything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from kafkatx.broker.faults import reject_response

if TYPE_CHECKING:
    from kafkatx.broker.server import Broker, RequestContext

# api key -> the request field holding the group id
GROUP_APIS = {8: "group_id", 9: "group_id", 11: "group_id", 12: "group_id", 13: "group_id",
              14: "group_id", 28: "group_id", 47: "group_id"}
# api key -> the request field holding the transactional id
TRANSACTION_APIS = {22: "transactional_id", 24: "transactional_id", 25: "transactional_id",
                    26: "transactional_id"}
OFFSET_FETCH = 9


def not_coordinator_response(broker: Broker, ctx: RequestContext, request: Any) -> Any | None:
    """NOT_COORDINATOR in the response's own layout when this broker does not coordinate the
    request's id; None when it does (or the request names none)."""
    if broker.cluster is None:
        return None
    key = ctx.api_key
    if key in GROUP_APIS:
        if key == OFFSET_FETCH and ctx.api_version < 2:
            return None  # no top-level error code before v2
        group_id = getattr(request, GROUP_APIS[key], None)
        if group_id is None or broker.groups.owns(group_id):
            return None
    elif key in TRANSACTION_APIS:
        txn_id = getattr(request, TRANSACTION_APIS[key], None)
        if not txn_id or broker.transactions.owns(txn_id):
            return None
    else:
        return None
    return reject_response(ctx, request, ErrorCode.not_coordinator)
