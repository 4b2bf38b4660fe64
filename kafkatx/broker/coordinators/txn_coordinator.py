"""The transaction coordinator: InitProducerId, AddPartitionsToTxn, EndTxn, markers, timeouts.

Mirrors Kafka 4.x's ``TransactionCoordinator`` (``handleInitProducerId`` with
``prepareInitProducerIdTransit``, ``handleAddPartitionsToTransaction``,
``handleVerifyPartitionsInTransaction``, ``endTransactionWithTV1`` and, for clients that
negotiated transactions v2 (KIP-890), ``endTransaction`` with its epoch bump per transaction,
``abortTimedOutTransactions``, ``handleDescribeTransactions``, ``handleListTransactions``),
``TransactionStateManager`` (the cache of every transactional id,
``appendTransactionToLog``: a transition takes effect only once its value is in
``__transaction_state-<partitionFor(id)>``; ``loadTransactionsForTxnTopicPartition``: the last
value per id wins, a tombstone removes it, PrepareCommit/PrepareAbort are completed;
``timedOutTransactions``; ``removeExpiredTransactionalIds``) and the marker path of
``TransactionMarkerChannelManager`` (a COMMIT/ABORT marker in every partition of the
transaction, then CompleteCommit/CompleteAbort). This single node leads every partition, so the
markers are written directly (``WriteTxnMarkers``' local append) before EndTxn is answered;
a marker the leader refuses is logged and that partition dropped, as Kafka does for a partition
that no longer exists. Aborts the coordinator starts itself (an InitProducerId fencing an
ongoing transaction, a timeout) follow the cluster's finalized ``transaction.version``.

With ``--brokers N`` each broker coordinates the transactional ids of the
``__transaction_state`` partitions it leads (loaded on election, dropped on resignation, the
coordinator epoch being the partition's leader epoch: ``TransactionStateManager#
loadTransactionsForTxnTopicPartition`` / ``removeTransactionsForTxnTopicPartition``), and the
markers go to each partition's current leader (its WriteTxnMarkers append, made in-process);
a partition without a leader, or whose leader refuses with NOT_LEADER_OR_FOLLOWER, is retried
every ``RETRY_BACKOFF_S`` until a leader takes it, as ``TransactionMarkerChannelManager``
retries, and Complete* is written once every marker is.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from kafkatx.broker.config.broker_config import LEADER_EPOCH
from kafkatx.broker.coordinators.coordinator_log import CoordinatorAppendError, append, build_batch
from kafkatx.broker.coordinators.txn_completion import TransactionCompletion
from kafkatx.broker.coordinators.txn_durability import TxnDurability, append_error, snapshot
from kafkatx.broker.coordinators.txn_metadata import (
    IllegalTransitionError,
    TopicPartition,
    TransactionMetadata,
    TxnTransitMetadata,
)
from kafkatx.broker.logs.partition_log import PartitionLog
from kafkatx.errors import FormatError
from kafkatx.formats.internal_topics import GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC
from kafkatx.formats.transaction_log import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TransactionLogKey,
    TransactionState,
    build_key,
    build_value,
    parse_key,
    parse_value,
)
from kafkatx.lazy_dataclass import dataclass
from kafkatx.semantics.coordinator_partition import partition_for
from kafkatx.semantics.transaction_states import (
    is_epoch_exhausted,
    is_expiration_allowed,
)

if TYPE_CHECKING:
    from kafkatx.broker.context import BrokerContext

S = TransactionState
NUM_PARTITIONS = 50  # transaction.state.log.num.partitions
DEFAULT_ID_EXPIRATION_MS = 604_800_000  # transactional.id.expiration.ms


@dataclass(frozen=True, slots=True)
class InitProducerIdResult:
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


class TransactionCoordinator(TransactionCompletion):
    """Every transactional id of this node (it leads all 50 ``__transaction_state`` partitions)."""

    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker
        self.cache: dict[str, TransactionMetadata] = {}
        self.coordinator_epoch = LEADER_EPOCH  # the __transaction_state partition leader epoch
        # The finalized ``transaction.version`` feature (``--transaction-version``): the layout
        # of the values written and the protocol of aborts the coordinator starts itself.
        self.transaction_version = broker.config.transaction_version
        self.id_expiration_ms = DEFAULT_ID_EXPIRATION_MS
        self._delayed_tasks: set[asyncio.Task[None]] = set()
        # --brokers N: the __transaction_state partitions this broker leads, with their epochs.
        self.owned: dict[int, int] = {}
        self.durability = TxnDurability(broker, self.partition_for, self.cache)

    @staticmethod
    def partition_for(transactional_id: str) -> int:
        return partition_for(transactional_id, NUM_PARTITIONS)

    # -- the log ------------------------------------------------------------------------------

    def _append(self, md: TransactionMetadata, transit: TxnTransitMetadata) -> ErrorCode:
        """``appendTransactionToLog``: write the value, then complete the transition; on a
        failed write the pending state is cleared and the mapped error returned. With
        ``--brokers N`` the write is acks=-1 (:mod:`~kafkatx.broker.coordinators.txn_durability`):
        refused below the partition's min ISR, and a transition the ISR does not take in time
        is undone (Complete* excepted: a new coordinator completes a Prepare* again)."""
        durable = self.durability.active
        if durable:
            refused = self.durability.min_isr_error(md.transactional_id)
            if refused is not None:
                md.pending_state = None
                return append_error(refused)
        try:
            value = md.value_to_write(transit, self.transaction_version)
            batch = build_batch([(build_key(TransactionLogKey(
                transactional_id=md.transactional_id)), build_value(value))],
                self.broker.now_ms())
            written = append(self.broker.logs, TRANSACTION_STATE_TOPIC,
                             self.partition_for(md.transactional_id), batch,
                             self.broker.now_ms())
        except IllegalTransitionError:
            md.pending_state = None  # nothing was written: the id must stay usable
            raise
        except CoordinatorAppendError as exc:
            md.pending_state = None
            self.broker.warn(f"transactional id {md.transactional_id}: appending "
                             f"{transit.txn_state.kafka_name} failed: {exc}")
            return append_error(exc.error)
        if durable and transit.txn_state not in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            before = snapshot(md)
            before["pending_state"] = None
            md.complete_transition_to(transit, value)
            self.durability.watch(md, before, written.last_offset + 1, transit.txn_state)
            return ErrorCode.none
        md.complete_transition_to(transit, value)
        return ErrorCode.none

    def load(self, step: Callable[[], None] = lambda: None) -> None:
        """``loadTransactionsForTxnTopicPartition`` for every partition on disk, then the
        transactions left in PrepareCommit/PrepareAbort are completed (markers, Complete*).
        ``step`` runs before each partition (it may stop the load)."""
        topic = self.broker.logs.topics.get(TRANSACTION_STATE_TOPIC)
        if topic is None:
            return
        loaded: list[TransactionMetadata] = []
        for partition, log in sorted(topic.logs.items()):
            step()
            loaded += self._load_log(partition, log)
        self._complete_prepared(loaded)

    def _load_log(self, partition: int, log: PartitionLog) -> list[TransactionMetadata]:
        # The topic is compacted: only the last record of a key counts, so values are
        # decoded for those alone (a tombstone drops the key).
        latest: dict[bytes | None, tuple[int, bytes | None]] = {}
        for batch, records in log.iter_key_values(self.broker.warn):
            if batch.header.is_control:
                continue
            for offset, key, value in records:
                latest.pop(key, None)
                latest[key] = (offset, value)
        loaded: dict[str, TransactionMetadata] = {}
        for key, (offset, value) in latest.items():
            self._load_record(log.name, offset, key, value, loaded)
        for txn_id, md in loaded.items():
            if self.partition_for(txn_id) != partition:
                self.broker.warn(f"{log.name}: transactional id {txn_id!r} belongs to "
                                 f"partition {self.partition_for(txn_id)}; loaded anyway")
            self.cache[txn_id] = md
            self.broker.producer_ids.observe(max(md.producer_id, md.previous_producer_id))
        return list(loaded.values())

    def _complete_prepared(self, loaded: Iterable[TransactionMetadata]) -> None:
        for md in loaded:
            if md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
                self.broker.log(f"transactional id {md.transactional_id}: completing the "
                                f"{md.state.kafka_name} found in the log")
                self._complete(md, commit=md.state is S.PREPARE_COMMIT)

    def load_partition(self, partition: int, leader_epoch: int) -> None:
        """``loadTransactionsForTxnTopicPartition`` on becoming the partition's leader
        (``--brokers N``): its ids join the cache with the leader epoch as coordinator epoch;
        transactions left in Prepare* are completed."""
        log = self.broker.logs.get(TRANSACTION_STATE_TOPIC, partition)
        if log is None:
            return
        self.owned[partition] = leader_epoch
        self._complete_prepared(self._load_log(partition, log))

    def unload_partition(self, partition: int) -> None:
        """``removeTransactionsForTxnTopicPartition`` on resignation."""
        self.owned.pop(partition, None)
        for txn_id in [t for t in self.cache if self.partition_for(t) == partition]:
            del self.cache[txn_id]

    async def close(self) -> None:
        """The broker stops (or is killed): nothing of this coordinator runs on, no marker or
        record is written after it (a killed broker's successor completes what it left)."""
        for task in list(self._delayed_tasks):
            task.cancel()
        await asyncio.gather(*self._delayed_tasks, return_exceptions=True)
        await self.durability.close()

    def owns(self, transactional_id: str) -> bool:
        """Whether this broker coordinates ``transactional_id`` (always, outside a cluster)."""
        return (self.broker.cluster is None
                or self.partition_for(transactional_id) in self.owned)

    def epoch_of(self, md: TransactionMetadata) -> int:
        """The coordinator epoch of the markers of ``md``'s transaction."""
        return self.owned.get(self.partition_for(md.transactional_id), self.coordinator_epoch)

    def _load_record(self, where: str, offset: int, key: bytes | None, value: bytes | None,
                     loaded: dict[str, TransactionMetadata]) -> None:
        try:
            if key is None:
                raise FormatError("null key")
            txn_id = parse_key(key).transactional_id
            parsed = parse_value(value)
            if parsed is None:
                loaded.pop(txn_id, None)
            else:
                loaded[txn_id] = TransactionMetadata.from_log_value(txn_id, parsed)
        except (FormatError, IllegalTransitionError) as exc:
            self.broker.warn(f"{where} offset {offset}: not a transaction log record ({exc}); "
                             "ignored")

    # -- InitProducerId -------------------------------------------------------------------------

    def handle_init_producer_id(self, transactional_id: str | None, timeout_ms: int,
                                expected: tuple[int, int] | None) -> InitProducerIdResult:
        """``handleInitProducerId``; ``expected`` is KIP-360's (producer id, epoch)."""
        if transactional_id is None:
            return InitProducerIdResult(ErrorCode.none, self.broker.producer_ids.generate(), 0)
        if transactional_id == "":
            return InitProducerIdResult(ErrorCode.invalid_request)
        if not 0 < timeout_ms <= self.broker.config.transaction_max_timeout_ms:
            return InitProducerIdResult(ErrorCode.invalid_transaction_timeout)
        md = self.cache.get(transactional_id)
        if md is None:
            md = TransactionMetadata(
                transactional_id, producer_id=self.broker.producer_ids.generate(),
                producer_epoch=NO_PRODUCER_EPOCH, txn_timeout_ms=timeout_ms, state=S.EMPTY,
                last_update_ms=self.broker.now_ms())
            self.cache[transactional_id] = md
        error, transit = self._prepare_init_producer_id(md, timeout_ms, expected)
        if transit is None:
            return InitProducerIdResult(error)
        if transit.txn_state is S.PREPARE_EPOCH_FENCE:
            # Abort the ongoing transaction; the client retries and gets a second bump.
            end_error, _, _ = self._end_transaction(
                md, transit.producer_id, transit.producer_epoch, commit=False,
                from_client=False, client_transaction_version=self.transaction_version)
            return InitProducerIdResult(end_error if end_error != ErrorCode.none
                                        else ErrorCode.concurrent_transactions)
        error = self._append(md, transit)
        if error != ErrorCode.none:
            return InitProducerIdResult(error)
        self.broker.log(f"transactional id {transactional_id}: producer id {md.producer_id} "
                        f"epoch {md.producer_epoch} ({TRANSACTION_STATE_TOPIC}-"
                        f"{self.partition_for(transactional_id)})")
        return InitProducerIdResult(ErrorCode.none, md.producer_id, md.producer_epoch)

    def _prepare_init_producer_id(
        self, md: TransactionMetadata, timeout_ms: int, expected: tuple[int, int] | None,
    ) -> tuple[ErrorCode, TxnTransitMetadata | None]:
        """``prepareInitProducerIdTransit``."""
        if md.pending_transition_in_progress:
            return ErrorCode.concurrent_transactions, None
        if expected is not None:
            pid, epoch = expected
            valid = (md.producer_epoch == NO_PRODUCER_EPOCH or pid == md.producer_id
                     or (pid == md.previous_producer_id and is_epoch_exhausted(epoch)))
            if not valid:
                return ErrorCode.producer_fenced, None
        if md.state in (S.PREPARE_ABORT, S.PREPARE_COMMIT):
            return ErrorCode.concurrent_transactions, None
        now = self.broker.now_ms()
        if md.state in (S.COMPLETE_ABORT, S.COMPLETE_COMMIT, S.EMPTY):
            if md.is_producer_epoch_exhausted and (expected is None
                                                   or expected[1] == md.producer_epoch):
                return ErrorCode.none, md.prepare_producer_id_rotation(
                    self.broker.producer_ids.generate(), timeout_ms, now, expected is not None)
            transit = md.prepare_increment_producer_epoch(
                timeout_ms, None if expected is None else expected[1], now)
            if transit is None:
                return ErrorCode.producer_fenced, None
            return ErrorCode.none, transit
        if md.state is S.ONGOING:
            return ErrorCode.none, md.prepare_fence_producer_epoch()
        raise IllegalTransitionError(f"Found transactionalId {md.transactional_id} with state "
                                     f"{md.state.kafka_name}. This is illegal as we should "
                                     "never have transitioned to this state.")

    # -- AddPartitionsToTxn / AddOffsetsToTxn -------------------------------------------------

    def handle_add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                              partitions: Iterable[TopicPartition],
                              client_transaction_version: int = 0) -> ErrorCode:
        """``handleAddPartitionsToTransaction`` (one error for the whole request); transactions
        v2 reach it from a Produce v12+ or TxnOffsetCommit v5+ (the implicit add of KIP-890)."""
        if not transactional_id:
            return ErrorCode.invalid_request
        md = self.cache.get(transactional_id)
        wanted = frozenset(partitions)
        if md is None or md.producer_id != producer_id:
            return ErrorCode.invalid_producer_id_mapping
        if md.producer_epoch != producer_epoch:
            return ErrorCode.producer_fenced
        if md.pending_transition_in_progress or md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return ErrorCode.concurrent_transactions
        if md.state is S.ONGOING and wanted <= md.topic_partitions:
            return ErrorCode.none
        return self._append(md, md.prepare_add_partitions(wanted, self.broker.now_ms(),
                                                          client_transaction_version))

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Iterable[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
        """``handleVerifyPartitionsInTransaction`` (KIP-890 part 1): TRANSACTION_ABORTABLE for
        a partition the ongoing transaction does not hold."""
        wanted = list(partitions)
        if not transactional_id:
            return dict.fromkeys(wanted, ErrorCode.invalid_request)
        md = self.cache.get(transactional_id)
        error = None
        if md is None or md.producer_id != producer_id:
            error = ErrorCode.invalid_producer_id_mapping
        elif md.producer_epoch != producer_epoch:
            error = ErrorCode.producer_fenced
        elif md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            error = ErrorCode.concurrent_transactions
        if error is not None:
            return dict.fromkeys(wanted, error)
        return {tp: ErrorCode.none if tp in md.topic_partitions
                else ErrorCode.transaction_abortable for tp in wanted}

    def handle_add_offsets(self, transactional_id: str, producer_id: int, producer_epoch: int,
                           group_id: str, client_transaction_version: int = 0) -> ErrorCode:
        """``KafkaApis#handleAddOffsetsToTxnRequest``: the group's ``__consumer_offsets``
        partition joins the transaction."""
        return self.handle_add_partitions(transactional_id, producer_id, producer_epoch,
                                          [self.offsets_partition(group_id)],
                                          client_transaction_version)

    def offsets_partition(self, group_id: str) -> TopicPartition:
        partition = self.broker.groups.partition_for(group_id)
        if self.broker.cluster is not None:
            self.broker.cluster.ensure_internal_topic(GROUP_METADATA_TOPIC)
        else:
            self.broker.logs.internal_topic(GROUP_METADATA_TOPIC)
        return GROUP_METADATA_TOPIC, partition

    # -- timeouts and expiration ------------------------------------------------------------

    def abort_timed_out_transactions(self) -> list[str]:
        """``abortTimedOutTransactions``: fence (epoch + 1) and abort every Ongoing transaction
        older than its timeout; returns the transactional ids aborted."""
        now = self.broker.now_ms()
        aborted = []
        for md in list(self.cache.values()):
            if (md.pending_transition_in_progress or md.state is not S.ONGOING
                    or md.txn_start_timestamp + md.txn_timeout_ms >= now):
                continue
            try:
                transit = md.prepare_fence_producer_epoch()
            except IllegalTransitionError as exc:
                self.broker.warn(f"transactional id {md.transactional_id}: {exc}")
                continue
            error, _, _ = self._end_transaction(
                md, transit.producer_id, transit.producer_epoch, commit=False, from_client=False,
                client_transaction_version=self.transaction_version)
            if error == ErrorCode.none:
                aborted.append(md.transactional_id)
                self.broker.log(f"transactional id {md.transactional_id}: aborted after its "
                                f"timeout of {md.txn_timeout_ms} ms (producer {md.producer_id} "
                                f"fenced at epoch {md.producer_epoch})")
            else:
                self.broker.warn(f"transactional id {md.transactional_id}: timeout abort "
                                 f"failed: {error.name}")
        return aborted

    def remove_expired_transactional_ids(self) -> list[str]:
        """``removeExpiredTransactionalIds``: a tombstone for every id idle for
        ``transactional.id.expiration.ms`` in a state that allows it."""
        now = self.broker.now_ms()
        removed = []
        for md in list(self.cache.values()):
            if (md.pending_transition_in_progress or not is_expiration_allowed(md.state)
                    or md.txn_last_update_timestamp > now - self.id_expiration_ms):
                continue
            md.prepare_dead()
            key = build_key(TransactionLogKey(transactional_id=md.transactional_id))
            try:
                append(self.broker.logs, TRANSACTION_STATE_TOPIC,
                       self.partition_for(md.transactional_id), build_batch([(key, None)], now),
                       now)
            except CoordinatorAppendError as exc:
                md.pending_state = None
                self.broker.warn(f"transactional id {md.transactional_id}: expiring failed: "
                                 f"{exc}")
                continue
            del self.cache[md.transactional_id]
            removed.append(md.transactional_id)
        return removed

    # -- admin ----------------------------------------------------------------------------------

    def describe(self, transactional_id: str) -> tuple[ErrorCode, TransactionMetadata | None]:
        """``handleDescribeTransactions``."""
        if not transactional_id:
            return ErrorCode.invalid_request, None
        md = self.cache.get(transactional_id)
        if md is None or md.state is S.DEAD or md.producer_epoch == NO_PRODUCER_EPOCH:
            return ErrorCode.transactional_id_not_found, None
        return ErrorCode.none, md

    def list_transactions(self, producer_ids: set[int], states: set[str],
                          duration_ms: int = -1) -> tuple[list[TransactionMetadata], list[str]]:
        """``listTransactionStates``: (matching ids, unknown state filters)."""
        known: set[TransactionState] = set()
        unknown: list[str] = []
        for name in states:
            try:
                known.add(TransactionState.from_kafka_name(name))
            except ValueError:
                unknown.append(name)
        now = self.broker.now_ms()
        out = []
        for md in self.cache.values():
            if md.state is S.DEAD or md.producer_epoch == NO_PRODUCER_EPOCH:
                continue
            if producer_ids and md.producer_id not in producer_ids:
                continue
            if states and md.state not in known:
                continue
            if duration_ms >= 0 and now - md.txn_start_timestamp <= duration_ms:
                continue
            out.append(md)
        return sorted(out, key=lambda m: m.transactional_id), unknown
