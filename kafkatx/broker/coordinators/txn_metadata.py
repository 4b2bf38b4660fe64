"""One transactional id's coordinator state and the transitions the coordinator prepares.

Mirrors Kafka's ``TransactionMetadata`` / ``TxnTransitMetadata`` (Kafka 4.x, with transactions
v2 of KIP-890: a client transaction version of 2 bumps the epoch at every PrepareCommit/
PrepareAbort and rotates to the next producer id when the epoch is exhausted): each
``prepare_*`` method returns the target of a transition and marks it pending
(``prepareTransitionTo``), ``complete_transition_to`` applies it once the value is in the log
(``completeTransitionTo``). The state table is :mod:`kafkatx.semantics.transaction_states`'s; the
consistency checks of ``completeTransitionTo`` are the ones in
:mod:`kafkatx.semantics.transaction_states`, applied to the value about to be written against
the last value written for this id, so what the broker writes is what the forensic checks accept.
"""

from __future__ import annotations

from kafkatx.formats.transaction_log import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TransactionLogValue,
    TransactionState,
    TxnTopicPartitions,
)
from kafkatx.lazy_dataclass import dataclass
from kafkatx.semantics.transaction_states import (
    ERROR,
    SHORT_MAX,
    check_recreation,
    check_transition,
    check_value,
    is_epoch_exhausted,
    is_valid_transition,
    supports_epoch_bump,
)

S = TransactionState
TopicPartition = tuple[str, int]


def log_value_version(transaction_version: int) -> int:
    """``TransactionVersion#transactionLogValueVersion``: flexible v1 values from TV1 on."""
    return 1 if transaction_version >= 1 else 0


class IllegalTransitionError(Exception):
    """A transition Kafka's coordinator would refuse with an ``IllegalStateException``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnTransitMetadata:
    """``TxnTransitMetadata``: the target of a prepared transition."""

    producer_id: int
    prev_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    txn_state: TransactionState
    topic_partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int
    client_transaction_version: int = 0

    def to_log_value(self, transaction_version: int = 0) -> TransactionLogValue:
        """``TransactionLog#valueToBytes``: partitions grouped by topic, null for Empty."""
        partitions: tuple[TxnTopicPartitions, ...] | None = None
        if self.txn_state is not S.EMPTY:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in sorted(self.topic_partitions):
                by_topic.setdefault(topic, []).append(partition)
            partitions = tuple(TxnTopicPartitions(topic=t, partition_ids=tuple(ids))
                               for t, ids in by_topic.items())
        elif self.topic_partitions:
            raise IllegalTransitionError("Transaction is not expected to have any partitions "
                                         f"since its state is Empty: {self}")
        version = log_value_version(transaction_version)
        tags = {} if version == 0 else {
            "previous_producer_id": self.prev_producer_id,
            "next_producer_id": self.next_producer_id,
            "client_transaction_version": self.client_transaction_version}
        return TransactionLogValue(
            version=version, producer_id=self.producer_id,
            producer_epoch=self.producer_epoch, transaction_timeout_ms=self.txn_timeout_ms,
            state=int(self.txn_state), partitions=partitions,
            last_update_timestamp_ms=self.txn_last_update_timestamp,
            start_timestamp_ms=self.txn_start_timestamp, **tags)


class TransactionMetadata:
    """``TransactionMetadata`` of one transactional id (mutable, owned by the coordinator)."""

    def __init__(self, transactional_id: str, *, producer_id: int, producer_epoch: int,
                 txn_timeout_ms: int, state: TransactionState, last_update_ms: int,
                 previous_producer_id: int = NO_PRODUCER_ID,
                 next_producer_id: int = NO_PRODUCER_ID,
                 last_producer_epoch: int = NO_PRODUCER_EPOCH,
                 topic_partitions: set[TopicPartition] | None = None,
                 txn_start_timestamp: int = -1) -> None:
        self.transactional_id = transactional_id
        self.producer_id = producer_id
        self.previous_producer_id = previous_producer_id
        self.next_producer_id = next_producer_id
        self.producer_epoch = producer_epoch
        self.last_producer_epoch = last_producer_epoch
        self.txn_timeout_ms = txn_timeout_ms
        self.state = state
        self.topic_partitions: set[TopicPartition] = set(topic_partitions or ())
        self.txn_start_timestamp = txn_start_timestamp
        self.txn_last_update_timestamp = last_update_ms
        self.client_transaction_version = 0
        self.pending_state: TransactionState | None = None
        self.has_failed_epoch_fence = False
        self.last_written: TransactionLogValue | None = None  # what the log holds for this id

    @classmethod
    def from_log_value(cls, transactional_id: str,
                       value: TransactionLogValue) -> TransactionMetadata:
        """``TransactionLog#readTxnRecordValue`` (lastProducerEpoch is not stored: -1)."""
        state = value.transaction_state
        if state is None:
            raise IllegalTransitionError(f"Unknown transaction state id {value.state} from the "
                                         "transaction status message")
        md = cls(transactional_id, producer_id=value.producer_id,
                 producer_epoch=value.producer_epoch,
                 txn_timeout_ms=value.transaction_timeout_ms, state=state,
                 last_update_ms=value.last_update_timestamp_ms,
                 previous_producer_id=value.previous_producer_id,
                 next_producer_id=value.next_producer_id,
                 topic_partitions=set(value.topic_partitions) if state is not S.EMPTY else None,
                 txn_start_timestamp=value.start_timestamp_ms)
        md.client_transaction_version = value.client_transaction_version
        md.last_written = value
        return md

    def __repr__(self) -> str:
        return (f"TransactionMetadata({self.transactional_id!r}, {self.producer_id}/"
                f"{self.producer_epoch}, {self.state.kafka_name}, pending="
                f"{self.pending_state.kafka_name if self.pending_state else None})")

    # -- predicates ------------------------------------------------------------------------

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    @property
    def has_pending_transaction(self) -> bool:
        return self.state in (S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT)

    # -- prepared transitions -----------------------------------------------------------------

    def prepare_fence_producer_epoch(self) -> TxnTransitMetadata:
        """``prepareFenceProducerEpoch``: the next epoch (kept after a failed fence write)."""
        if self.producer_epoch == SHORT_MAX:
            raise IllegalTransitionError("Cannot fence producer with epoch equal to "
                                         "Short.MaxValue since this would overflow")
        bumped = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(S.PREPARE_EPOCH_FENCE, self.producer_id, bumped, NO_PRODUCER_EPOCH,
                             self.txn_timeout_ms, frozenset(self.topic_partitions),
                             self.txn_start_timestamp, self.txn_last_update_timestamp)

    def prepare_increment_producer_epoch(self, new_timeout_ms: int, expected_epoch: int | None,
                                         now_ms: int) -> TxnTransitMetadata | None:
        """``prepareIncrementProducerEpoch``; None where Kafka answers PRODUCER_FENCED."""
        if self.is_producer_epoch_exhausted:
            raise IllegalTransitionError(
                f"Cannot allocate any more producer epochs for producerId {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epochs = (bumped, NO_PRODUCER_EPOCH)
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == self.producer_epoch:
            epochs = (bumped, self.producer_epoch)
        elif expected_epoch == self.last_producer_epoch:
            epochs = (self.producer_epoch, self.last_producer_epoch)  # a retry of a success
        else:
            return None
        return self._prepare(S.EMPTY, self.producer_id, epochs[0], epochs[1], new_timeout_ms,
                             frozenset(), -1, now_ms)

    def prepare_producer_id_rotation(self, new_producer_id: int, new_timeout_ms: int,
                                     now_ms: int, record_last_epoch: bool) -> TxnTransitMetadata:
        """``prepareProducerIdRotation``: a new producer id at epoch 0 (epochs exhausted)."""
        if self.has_pending_transaction:
            raise IllegalTransitionError("Cannot rotate producer ids while a transaction is "
                                         "still pending")
        last = self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH
        return self._prepare(S.EMPTY, new_producer_id, 0, last, new_timeout_ms, frozenset(), -1,
                             now_ms)

    def prepare_add_partitions(self, added: frozenset[TopicPartition], now_ms: int,
                               client_transaction_version: int = 0) -> TxnTransitMetadata:
        """``prepareAddPartitions``: a new transaction starts its clock."""
        start = now_ms if self.state in (S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT) \
            else self.txn_start_timestamp
        return self._prepare(S.ONGOING, self.producer_id, self.producer_epoch,
                             self.last_producer_epoch, self.txn_timeout_ms,
                             frozenset(self.topic_partitions) | added, start, now_ms,
                             client_transaction_version=client_transaction_version)

    def prepare_abort_or_commit(self, new_state: TransactionState, now_ms: int, *,
                                client_transaction_version: int = 0,
                                next_producer_id: int = NO_PRODUCER_ID,
                                no_partition_added: bool = False,
                                bump: bool = True) -> TxnTransitMetadata:
        """``prepareAbortOrCommit``: under transactions v2 the epoch is bumped here (the
        markers carry the new epoch) unless ``bump`` is off (an epoch fence already bumped it,
        KAFKA-19367) or an abort must go through at Short.MAX_VALUE (KAFKA-20090)."""
        epoch, last_epoch = self.producer_epoch, self.last_producer_epoch
        if supports_epoch_bump(client_transaction_version):
            last_epoch = self.producer_epoch
            if bump and not (self.producer_epoch == SHORT_MAX and new_state is S.PREPARE_ABORT):
                epoch = self.producer_epoch + 1
        start = now_ms if no_partition_added else self.txn_start_timestamp
        return self._prepare(new_state, self.producer_id, epoch, last_epoch, self.txn_timeout_ms,
                             frozenset(self.topic_partitions), start, now_ms,
                             next_producer_id=next_producer_id,
                             client_transaction_version=client_transaction_version)

    def completed_ids(self) -> tuple[int, int]:
        """The producer id and epoch of the Complete* that follows this Prepare*."""
        if (supports_epoch_bump(self.client_transaction_version)
                and self.next_producer_id != NO_PRODUCER_ID):
            return self.next_producer_id, 0
        return self.producer_id, self.producer_epoch

    def prepare_complete(self, now_ms: int) -> TxnTransitMetadata:
        """``prepareComplete``: CompleteCommit/CompleteAbort once every marker is written; an
        epoch exhausted under transactions v2 moves to the next producer id at epoch 0."""
        new_state = S.COMPLETE_COMMIT if self.state is S.PREPARE_COMMIT else S.COMPLETE_ABORT
        self.has_failed_epoch_fence = False
        pid, epoch = self.completed_ids()
        return self._prepare(new_state, pid, epoch, self.producer_epoch, self.txn_timeout_ms,
                             frozenset(), self.txn_start_timestamp, now_ms,
                             client_transaction_version=self.client_transaction_version)

    def prepare_dead(self) -> TxnTransitMetadata:
        """``prepareDead``: the id expires (a tombstone is written, the id leaves the cache)."""
        return self._prepare(S.DEAD, self.producer_id, self.producer_epoch,
                             self.last_producer_epoch, self.txn_timeout_ms, frozenset(),
                             self.txn_start_timestamp, self.txn_last_update_timestamp)

    def _prepare(self, state: TransactionState, producer_id: int, epoch: int, last_epoch: int,
                 timeout_ms: int, partitions: frozenset[TopicPartition], start_ms: int,
                 update_ms: int, *, next_producer_id: int = NO_PRODUCER_ID,
                 client_transaction_version: int | None = None) -> TxnTransitMetadata:
        """``prepareTransitionTo``."""
        if self.pending_state is not None:
            raise IllegalTransitionError(
                f"Preparing transaction state transition to {state.kafka_name} while it already "
                f"a pending state {self.pending_state.kafka_name}")
        if producer_id < 0:
            raise IllegalTransitionError(f"Illegal new producer id {producer_id}")
        if state is not S.DEAD and epoch < 0:
            raise IllegalTransitionError(f"Illegal new producer epoch {epoch}")
        if not is_valid_transition(self.state, state):
            raise IllegalTransitionError(
                f"Preparing transaction state transition to {state.kafka_name} failed since the "
                f"target state {state.kafka_name} is not a valid previous state of the current "
                f"state {self.state.kafka_name}")
        self.pending_state = state
        return TxnTransitMetadata(
            producer_id=producer_id, prev_producer_id=self.producer_id,
            next_producer_id=next_producer_id, producer_epoch=epoch,
            last_producer_epoch=last_epoch, txn_timeout_ms=timeout_ms, txn_state=state,
            topic_partitions=partitions, txn_start_timestamp=start_ms,
            txn_last_update_timestamp=update_ms,
            client_transaction_version=(self.client_transaction_version
                                        if client_transaction_version is None
                                        else client_transaction_version))

    # -- writing and completing --------------------------------------------------------------

    def value_to_write(self, transit: TxnTransitMetadata,
                       transaction_version: int = 0) -> TransactionLogValue:
        """The ``__transaction_state`` value of ``transit`` in the layout of the cluster's
        ``transaction.version``, checked against the last value written for this id with the
        coordinator's rules (``completeTransitionTo``)."""
        value = transit.to_log_value(transaction_version)
        problems = check_value(value)
        if self.last_written is None:
            problems += check_recreation(value)
        else:
            problems += check_transition(self.last_written, value)
        errors = [p.message for p in problems if p.severity == ERROR]
        if errors:
            raise IllegalTransitionError(f"TransactionalId {self.transactional_id} failed "
                                         f"transition to {transit}: {'; '.join(errors)}")
        return value

    def complete_transition_to(self, transit: TxnTransitMetadata,
                               written: TransactionLogValue) -> None:
        """``completeTransitionTo``: apply a transition whose value is now in the log."""
        if self.pending_state is not transit.txn_state:
            raise IllegalTransitionError(
                f"TransactionalId {self.transactional_id} completing a transition to "
                f"{transit.txn_state.kafka_name} while its pending state is {self.pending_state}")
        to = transit.txn_state
        if to in (S.PREPARE_EPOCH_FENCE, S.DEAD):
            raise IllegalTransitionError(f"TransactionalId {self.transactional_id} cannot "
                                         f"complete a transition to {to.kafka_name}")
        self.producer_id = transit.producer_id
        self.previous_producer_id = transit.prev_producer_id
        self.next_producer_id = transit.next_producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.txn_timeout_ms = transit.txn_timeout_ms
        self.topic_partitions = set(transit.topic_partitions)
        self.txn_start_timestamp = transit.txn_start_timestamp
        self.client_transaction_version = transit.client_transaction_version
        self.txn_last_update_timestamp = transit.txn_last_update_timestamp
        self.pending_state = None
        self.state = to
        self.last_written = written
