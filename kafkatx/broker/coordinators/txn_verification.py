"""Transaction verification of transactional produce requests (KIP-890), before the append.

Mirrors ``ReplicaManager#appendRecords`` with ``AddPartitionsToTxnManager``: a transactional
batch whose producer has no ongoing transaction at that epoch in the partition
(``ProducerStateManager#hasOngoingTransaction``) is checked with the coordinator first. Produce
v12+ under transactions v2 adds the partition to the transaction (the client no longer sends
AddPartitionsToTxn); older versions, from ``transaction.version`` 1 on, only verify it was added
(``handleVerifyPartitionsInTransaction``), so a late or zombie write that would start a
transaction nobody will ever end is refused instead of hanging the partition's LSO. Errors are
translated as Kafka does for the client's produce version.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

if TYPE_CHECKING:
    from kafkatx.broker.context import BrokerContext
    from kafkatx.broker.logs.batch_header import BatchHeader
    from kafkatx.broker.logs.partition_log import PartitionLog

FIRST_ADD_PARTITION_VERSION = 12  # Produce v12: the client relies on the implicit add
FIRST_ABORTABLE_VERSION = 11  # Produce v11 knows TRANSACTION_ABORTABLE
# ReplicaManager: retriable verification errors old clients may not retry become this one.
_RETRY_AS_NOT_ENOUGH_REPLICAS = frozenset({
    ErrorCode.concurrent_transactions, ErrorCode.network_exception,
    ErrorCode.coordinator_load_in_progress, ErrorCode.coordinator_not_available,
    ErrorCode.not_coordinator})


def verify_transactional_produce(broker: BrokerContext, transactional_id: str | None, topic: str,
                                 partition: int, log: PartitionLog, header: BatchHeader,
                                 api_version: int) -> tuple[ErrorCode, str] | None:
    """The error refusing this append (of the batch ``header`` heads), or None when it may go
    ahead."""
    level = broker.config.transaction_version
    if level < 1 or not header.is_transactional:
        return None
    pid, epoch = header.producer_id, header.producer_epoch
    if log.producer_state.has_ongoing_transaction(pid, epoch):
        return None  # verified when the transaction's first batch came
    coordinator = broker.transactions
    tp = (topic, partition)
    if not transactional_id:
        error = ErrorCode.invalid_request
    elif level >= 2 and api_version >= FIRST_ADD_PARTITION_VERSION:
        error = coordinator.handle_add_partitions(transactional_id, pid, epoch, [tp], 2)
    else:
        error = coordinator.verify_partitions(transactional_id, pid, epoch, [tp])[tp]
    if error == ErrorCode.none:
        return None
    if error == ErrorCode.producer_fenced:
        error = ErrorCode.invalid_producer_epoch  # AddPartitionsToTxnManager
    elif error == ErrorCode.transaction_abortable and api_version < FIRST_ABORTABLE_VERSION:
        error = ErrorCode.invalid_txn_state
    elif error in _RETRY_AS_NOT_ENOUGH_REPLICAS:
        return (ErrorCode.not_enough_replicas, "Unable to verify the partition has been added "
                f"to the transaction. Underlying error: {error.name.upper()}")
    if error == ErrorCode.invalid_txn_state:
        return error, "Partition was not added to the transaction"
    return error, f"transaction verification failed: {error.name.upper()}"
