"""Transaction verification of transactional produce requests (KIP-890), before the append.

Mirrors ``ReplicaManager#handleProduceAppend`` with ``AddPartitionsToTxnManager``: a
transactional batch whose producer has no ongoing transaction at that epoch in the partition
(``ProducerStateManager#hasOngoingTransaction``) is checked with the coordinator first, all the
request's such partitions in one question. Produce v12+ under transactions v2 adds the
partition to the transaction (the client no longer sends AddPartitionsToTxn); older versions,
from ``transaction.version`` 1 on, only verify it was added
(``handleVerifyPartitionsInTransaction``), so a late or zombie write that would start a
transaction nobody will ever end is refused instead of hanging the partition's LSO. With
``--brokers N`` the leader asks the coordinator's broker over the wire
(:mod:`kafkatx.broker.coordinators.add_partitions_manager`); the single node asks its own
coordinator. Errors are translated as ``postVerificationCallback`` does for the client's
produce version.

While the question is out the producer may write elsewhere or a marker may end its
transaction; as Kafka's ``VerificationGuard`` (``UnifiedLog#maybeStartTransactionVerification``,
cleared by any append of that producer), an append whose producer's entry changed meanwhile
and still has no ongoing transaction is refused with INVALID_TXN_STATE.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from kafkatx.broker.coordinators.add_partitions_manager import coordinator_error
from kafkatx.lazy_dataclass import dataclass

if TYPE_CHECKING:
    from kafkatx.broker.context import BrokerContext, TopicPartition
    from kafkatx.broker.logs.batch_header import BatchHeader
    from kafkatx.broker.logs.partition_log import PartitionLog

FIRST_ADD_PARTITION_VERSION = 12  # Produce v12: the client relies on the implicit add
FIRST_ABORTABLE_VERSION = 11  # Produce v11 knows TRANSACTION_ABORTABLE
# ReplicaManager: retriable verification errors old clients may not retry become this one.
_RETRY_AS_NOT_ENOUGH_REPLICAS = frozenset({
    ErrorCode.concurrent_transactions, ErrorCode.network_exception,
    ErrorCode.coordinator_load_in_progress, ErrorCode.coordinator_not_available,
    ErrorCode.not_coordinator})


@dataclass(frozen=True, slots=True)
class Pending:
    """A partition waiting for the coordinator's word: its log and the guard taken."""

    log: PartitionLog
    producer_id: int
    producer_epoch: int
    guard: tuple[int, int, int, int] | None


def needs_verification(broker: BrokerContext, log: PartitionLog, header: BatchHeader) -> bool:
    """``UnifiedLog#maybeStartTransactionVerification`` returns a guard (not SENTINEL)."""
    return (broker.config.transaction_version >= 1 and header.is_transactional
            and not log.producer_state.has_ongoing_transaction(header.producer_id,
                                                               header.producer_epoch))


def start(log: PartitionLog, header: BatchHeader) -> Pending:
    return Pending(log, header.producer_id, header.producer_epoch,
                   _guard(log, header.producer_id))


def _guard(log: PartitionLog, producer_id: int) -> tuple[int, int, int, int] | None:
    entry = log.producer_state.producers.get(producer_id)
    if entry is None:
        return None
    return (entry.producer_epoch, entry.coordinator_epoch, entry.last_timestamp,
            entry.last_data_offset)


async def verify(broker: BrokerContext, transactional_id: str | None,
                 pending: Mapping[TopicPartition, Pending],
                 api_version: int) -> dict[TopicPartition, tuple[ErrorCode, str]]:
    """The partitions of ``pending`` refused, with the error and message the produce answer
    carries; the others may be appended."""
    if not pending:
        return {}
    first = next(iter(pending.values()))
    if not transactional_id:
        return dict.fromkeys(pending, (ErrorCode.invalid_request,
                                       "transaction verification failed: INVALID_REQUEST"))
    add = (broker.config.transaction_version >= 2
           and api_version >= FIRST_ADD_PARTITION_VERSION)
    knows_abortable = api_version >= FIRST_ABORTABLE_VERSION
    errors = await ask_coordinator(broker, transactional_id, first.producer_id,
                                   first.producer_epoch, list(pending), add=add,
                                   knows_abortable=knows_abortable)
    refused = {tp: _produce_error(error) for tp, error in errors.items()}
    for tp, p in pending.items():
        if tp not in refused and not p.log.producer_state.has_ongoing_transaction(
                p.producer_id, p.producer_epoch) and _guard(p.log, p.producer_id) != p.guard:
            refused[tp] = (ErrorCode.invalid_txn_state,
                           "Record was not part of an ongoing transaction")
    return refused


async def ask_coordinator(broker: BrokerContext, transactional_id: str, pid: int, epoch: int,
                          partitions: list[TopicPartition], *, add: bool,
                          knows_abortable: bool) -> dict[TopicPartition, ErrorCode]:
    """``AddPartitionsToTxnManager#addOrVerifyTransaction`` for a produce or a
    TxnOffsetCommit: the partitions not verified (or added) with their errors. With
    ``--brokers N`` the coordinator's broker is asked over the wire; the single node's
    coordinator answers in process, translated the same way."""
    if broker.cluster is not None:
        return await broker.txn_verifier.add_or_verify(
            transactional_id, pid, epoch, partitions, add=add, knows_abortable=knows_abortable)
    coordinator = broker.transactions
    if add:
        errors = dict.fromkeys(partitions, coordinator.handle_add_partitions(
            transactional_id, pid, epoch, partitions, 2))
    else:
        errors = coordinator.verify_partitions(transactional_id, pid, epoch, partitions)
    return {tp: coordinator_error(error, knows_abortable) for tp, error in errors.items()
            if error != ErrorCode.none}


def _produce_error(error: ErrorCode) -> tuple[ErrorCode, str]:
    """``postVerificationCallback``'s translation of a verification error."""
    if error in _RETRY_AS_NOT_ENOUGH_REPLICAS:
        return (ErrorCode.not_enough_replicas, "Unable to verify the partition has been added "
                f"to the transaction. Underlying error: {error.name.upper()}")
    if error == ErrorCode.invalid_txn_state:
        return error, "Partition was not added to the transaction"
    return error, f"transaction verification failed: {error.name.upper()}"
