"""Which broker of a ``--brokers N`` serve coordinates a request's group or transactional id.

Mirrors the NOT_COORDINATOR answers of ``GroupCoordinator`` (``isCoordinatorForGroup``) and
``TransactionStateManager#getTransactionState`` (the id's partition is not led here): a client
sent to the wrong broker looks the coordinator up again with FindCoordinator. Requests that name
one id are checked here, before their handler; the single node of ``kafkatx serve``
coordinates everything. After the handler, the answer waits until the ISR has what the
coordinator wrote (``TransactionStateManager#appendTransactionToLog`` and
``GroupMetadataManager#storeGroup``/``storeOffsets`` append with acks=-1).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from kafkatx.broker.coordinators.txn_durability import append_error
from kafkatx.broker.faults import reject_response
from kafkatx.broker.logdir.log_manager import INTERNAL_PARTITIONS
from kafkatx.formats.internal_topics import GROUP_METADATA_TOPIC
from kafkatx.semantics.coordinator_partition import partition_for

if TYPE_CHECKING:
    from kafkatx.broker.context import BrokerContext, RequestContext

# api key -> the request field holding the group id
GROUP_APIS = {8: "group_id", 9: "group_id", 11: "group_id", 12: "group_id", 13: "group_id",
              14: "group_id", 28: "group_id", 47: "group_id"}
# api key -> the request field holding the transactional id
TRANSACTION_APIS = {22: "transactional_id", 24: "transactional_id", 25: "transactional_id",
                    26: "transactional_id"}
OFFSET_FETCH = 9
GROUP_READS = {OFFSET_FETCH, 12}  # OffsetFetch and Heartbeat write nothing
COORDINATOR_WRITE_TIMEOUT_S = 5.0  # how long an answer waits for the ISR to have the records


def not_coordinator_response(broker: BrokerContext, ctx: RequestContext,
                             request: Any) -> Any | None:
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


async def await_coordinator_replication(broker: BrokerContext, ctx: RequestContext,
                                        request: Any) -> ErrorCode:
    """The answer to a group or transaction request of a ``--brokers N`` serve waits until
    what the coordinator wrote for it is in the ISR (the coordinators' acks=-1 appends), at
    most ``COORDINATOR_WRITE_TIMEOUT_S``; returns the error the client gets instead of the
    handler's answer when it is not (NONE: answer as the handler did). A transaction
    coordinator's write that does not become durable is undone
    (:mod:`kafkatx.broker.coordinators.txn_durability`); so are a group coordinator's offset
    commits (its group metadata stays: the client's retry writes it again)."""
    if broker.cluster is None:
        return ErrorCode.none
    key = ctx.api_key
    if key in TRANSACTION_APIS:
        txn_id = getattr(request, TRANSACTION_APIS[key], None)
        # AddPartitionsToTxn v4+ (from a partition leader) names its ids per transaction.
        txn_ids = [txn_id] if txn_id else [t.transactional_id
                                           for t in getattr(request, "transactions", ())]
        for ident in txn_ids:
            verdict = broker.transactions.durability.take(ident)
            error = ErrorCode.none if verdict is None else await asyncio.shield(verdict)
            if error != ErrorCode.none:
                return error
        return ErrorCode.none
    if key not in GROUP_APIS or key in GROUP_READS:
        return ErrorCode.none  # Kafka's reads wait for nothing: OffsetFetch serves the applied
    ident = getattr(request, GROUP_APIS[key], None)
    if not ident:
        broker.groups.settle_writes(replicated=True)
        return ErrorCode.none
    part = broker.replicas.leader_partition(GROUP_METADATA_TOPIC,
                                            partition_for(ident, INTERNAL_PARTITIONS))
    if part is None or part.log.high_watermark >= part.log.log_end_offset:
        broker.groups.settle_writes(replicated=part is not None)
        return ErrorCode.none
    error = await broker.replicas.wait_for_replication(part, part.log.log_end_offset,
                                                      COORDINATOR_WRITE_TIMEOUT_S)
    broker.groups.settle_writes(replicated=error == ErrorCode.none)
    if error == ErrorCode.none:
        return error
    broker.warn(f"{part.log.name}: coordinator records not replicated to the ISR "
                f"({error.name}); the client is told {append_error(error).name}")
    return append_error(error)
