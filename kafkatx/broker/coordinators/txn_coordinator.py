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
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from kafkatx.broker.config.broker_config import LEADER_EPOCH
from kafkatx.broker.coordinators.coordinator_log import CoordinatorAppendError, append, build_batch
from kafkatx.broker.coordinators.txn_metadata import (
    IllegalTransitionError,
    TopicPartition,
    TransactionMetadata,
    TxnTransitMetadata,
)
from kafkatx.broker.faults import crash
from kafkatx.broker.logs.log_values import AppendError
from kafkatx.broker.logs.partition_log import PartitionLog
from kafkatx.broker.replication.replica_manager import leader_log
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
from kafkatx.semantics.coordinator_partition import partition_for
from kafkatx.semantics.transaction_states import (
    SHORT_MAX,
    is_epoch_exhausted,
    is_expiration_allowed,
    supports_epoch_bump,
)

if TYPE_CHECKING:
    from kafkatx.broker.context import BrokerContext

S = TransactionState
NUM_PARTITIONS = 50  # transaction.state.log.num.partitions
RETRY_BACKOFF_S = 0.1  # the marker channel's retry.backoff.ms
RETRIABLE_MARKER_ERRORS = frozenset({ErrorCode.not_leader_or_follower,
                                     ErrorCode.leader_not_available,
                                     ErrorCode.not_enough_replicas,
                                     ErrorCode.request_timed_out})
DEFAULT_ID_EXPIRATION_MS = 604_800_000  # transactional.id.expiration.ms


@dataclass(frozen=True, slots=True)
class InitProducerIdResult:
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


def _append_error(error: ErrorCode) -> ErrorCode:
    """``appendTransactionToLog``'s mapping of a failed log append to the client's error."""
    if error in (ErrorCode.unknown_topic_or_partition, ErrorCode.not_enough_replicas,
                 ErrorCode.not_enough_replicas_after_append, ErrorCode.request_timed_out):
        return ErrorCode.coordinator_not_available
    if error in (ErrorCode.not_leader_or_follower, ErrorCode.kafka_storage_error):
        return ErrorCode.not_coordinator
    if error in (ErrorCode.message_too_large, ErrorCode.record_list_too_large):
        return ErrorCode.unknown_server_error
    return error


class TransactionCoordinator:
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

    @staticmethod
    def partition_for(transactional_id: str) -> int:
        return partition_for(transactional_id, NUM_PARTITIONS)

    # -- the log ------------------------------------------------------------------------------

    def _append(self, md: TransactionMetadata, transit: TxnTransitMetadata) -> ErrorCode:
        """``appendTransactionToLog``: write the value, then complete the transition; on a
        failed write the pending state is cleared and the mapped error returned."""
        try:
            value = md.value_to_write(transit, self.transaction_version)
            batch = build_batch([(build_key(TransactionLogKey(
                transactional_id=md.transactional_id)), build_value(value))],
                self.broker.now_ms())
            append(self.broker.logs, TRANSACTION_STATE_TOPIC,
                   self.partition_for(md.transactional_id), batch, self.broker.now_ms())
        except IllegalTransitionError:
            md.pending_state = None  # nothing was written: the id must stay usable
            raise
        except CoordinatorAppendError as exc:
            md.pending_state = None
            self.broker.warn(f"transactional id {md.transactional_id}: appending "
                             f"{transit.txn_state.kafka_name} failed: {exc}")
            return _append_error(exc.error)
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

    # -- EndTxn ---------------------------------------------------------------------------------

    def handle_end_transaction(self, transactional_id: str, producer_id: int,
                               producer_epoch: int, commit: bool,
                               client_transaction_version: int = 0
                               ) -> tuple[ErrorCode, int, int]:
        """``handleEndTransaction``: (error, producer id, epoch), the last two what EndTxn v5+
        returns to a transactions-v2 client (the bumped epoch, or the next producer id)."""
        if not transactional_id:
            return ErrorCode.invalid_request, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        md = self.cache.get(transactional_id)
        if md is None:
            return ErrorCode.invalid_producer_id_mapping, NO_PRODUCER_ID, NO_PRODUCER_EPOCH
        return self._end_transaction(md, producer_id, producer_epoch, commit=commit,
                                     from_client=True,
                                     client_transaction_version=client_transaction_version)

    def _end_transaction(self, md: TransactionMetadata, producer_id: int, producer_epoch: int,
                         *, commit: bool, from_client: bool, client_transaction_version: int
                         ) -> tuple[ErrorCode, int, int]:
        """``endTransaction``: PrepareCommit/PrepareAbort, markers, CompleteCommit/Abort."""
        if supports_epoch_bump(client_transaction_version):
            return self._end_transaction_v2(md, producer_id, producer_epoch, commit=commit,
                                            from_client=from_client)
        fencing = md.pending_state is S.PREPARE_EPOCH_FENCE
        none = (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        valid_epoch = ((not from_client or producer_epoch == md.producer_epoch)
                       and producer_epoch >= md.producer_epoch)
        error: ErrorCode | None = None
        if md.producer_id != producer_id:
            error = ErrorCode.invalid_producer_id_mapping
        elif not valid_epoch:
            error = ErrorCode.producer_fenced
        elif md.pending_transition_in_progress and not fencing:
            error = ErrorCode.concurrent_transactions
        elif md.state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            if (md.state is S.COMPLETE_COMMIT) == commit:
                return ErrorCode.none, *none  # a retry
            error = ErrorCode.invalid_txn_state
        elif md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            error = (ErrorCode.concurrent_transactions
                     if (md.state is S.PREPARE_COMMIT) == commit else ErrorCode.invalid_txn_state)
        elif md.state is S.EMPTY:
            error = ErrorCode.invalid_txn_state
        elif md.state is not S.ONGOING:
            raise IllegalTransitionError(f"Found transactionalId {md.transactional_id} with "
                                         f"state {md.state.kafka_name}")
        if error is not None:
            if fencing:
                md.pending_state = None
            return error, *none
        if fencing and not commit:
            md.pending_state = None
            md.producer_epoch = producer_epoch
            md.last_producer_epoch = NO_PRODUCER_EPOCH
        transit = md.prepare_abort_or_commit(S.PREPARE_COMMIT if commit else S.PREPARE_ABORT,
                                             self.broker.now_ms())
        error = self._append(md, transit)
        if error != ErrorCode.none:
            if fencing:
                md.has_failed_epoch_fence = True
            return error, *none
        self._after_prepare(md, transit, commit)
        return ErrorCode.none, *none

    def _end_transaction_v2(self, md: TransactionMetadata, producer_id: int, producer_epoch: int,
                            *, commit: bool, from_client: bool) -> tuple[ErrorCode, int, int]:
        """``endTransaction`` for transactions v2: a retry is recognised by the epoch the
        coordinator already bumped, an abort is allowed from Empty/Complete* (the client was
        unsure whether it had started a transaction), and the answer carries the new epoch. The
        checks run in Kafka 4.0's order (KAFKA-18464): producer id, pending transition, epoch;
        the v0/v1 path above keeps the epoch check before the pending one, as Kafka's
        ``endTransactionWithTV1`` does."""
        none = (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        fencing = md.pending_state is S.PREPARE_EPOCH_FENCE
        retry_on_overflow = (not fencing and md.previous_producer_id == producer_id
                             and producer_epoch == SHORT_MAX - 1 and md.producer_epoch == 0)
        retry_on_bump = not fencing and md.producer_epoch == producer_epoch + 1
        if fencing:
            valid_epoch = ((not from_client or producer_epoch == md.producer_epoch)
                           and producer_epoch >= md.producer_epoch)
        elif md.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            valid_epoch = retry_on_bump
        elif md.state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            valid_epoch = retry_on_bump or retry_on_overflow or producer_epoch == md.producer_epoch
        else:
            valid_epoch = producer_epoch == md.producer_epoch
        is_retry = retry_on_bump or retry_on_overflow
        current = (md.producer_id, md.producer_epoch)
        if md.producer_id != producer_id and not retry_on_overflow:
            return ErrorCode.invalid_producer_id_mapping, *none
        # KAFKA-18464 (Kafka 4.0): a pending transition answers CONCURRENT_TRANSACTIONS before
        # the epoch check, so an empty abort right after a commit whose markers are still being
        # written retries instead of fencing its own producer with the bumped epoch.
        if md.pending_transition_in_progress and not fencing:
            return ErrorCode.concurrent_transactions, *none
        if not valid_epoch:
            return ErrorCode.producer_fenced, *none
        state = md.state
        next_state: TransactionState | None = None
        no_partition_added = True
        error = ErrorCode.invalid_txn_state
        if state is S.ONGOING:
            next_state, no_partition_added = (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT,
                                              False)
        elif state is S.COMPLETE_COMMIT:
            if commit and is_retry:
                return ErrorCode.none, *current
            if not commit and not is_retry:
                next_state = S.PREPARE_ABORT
        elif state is S.COMPLETE_ABORT:
            if not commit and is_retry:
                return ErrorCode.none, *current
            if not commit:
                next_state = S.PREPARE_ABORT
        elif state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            if (state is S.PREPARE_COMMIT) == commit:
                error = ErrorCode.concurrent_transactions
        elif state is S.EMPTY:
            if not commit:
                next_state = S.PREPARE_ABORT
        else:
            raise IllegalTransitionError(f"Found transactionalId {md.transactional_id} with "
                                         f"state {state.kafka_name}")
        if next_state is None:
            if fencing:
                md.pending_state = None
            return error, *none
        # KAFKA-20090: an exhausted epoch moves to a new producer id once the markers are out.
        next_pid = (self.broker.producer_ids.generate() if md.is_producer_epoch_exhausted
                    else NO_PRODUCER_ID)
        if fencing and next_state is S.PREPARE_ABORT:
            md.pending_state = None
            md.producer_epoch = producer_epoch
            md.last_producer_epoch = NO_PRODUCER_EPOCH
        # KAFKA-19367: the fence already bumped the epoch; the abort does not bump it again.
        transit = md.prepare_abort_or_commit(
            next_state, self.broker.now_ms(), client_transaction_version=2,
            next_producer_id=next_pid, no_partition_added=no_partition_added, bump=not fencing)
        error = self._append(md, transit)
        if error != ErrorCode.none:
            return error, *none
        complete = self._after_prepare(md, transit, next_state is S.PREPARE_COMMIT)
        return ErrorCode.none, complete.producer_id, complete.producer_epoch

    def _after_prepare(self, md: TransactionMetadata, transit: TxnTransitMetadata,
                       commit: bool) -> TxnTransitMetadata:
        """The PrepareCommit/PrepareAbort is in the log: the markers (``crash-after`` stops
        here); returns the CompleteCommit/CompleteAbort transition."""
        if self.broker.faults.crashes_after(transit.txn_state):
            crash(f"transactional id {md.transactional_id}: {transit.txn_state.kafka_name} "
                  "written, no marker")
        return self._complete(md, commit=commit)

    def _complete(self, md: TransactionMetadata, *, commit: bool) -> TxnTransitMetadata:
        """``TransactionMarkerChannelManager#addTxnMarkersToSend`` through ``tryAppendToLog``:
        a marker in every partition, then CompleteCommit/CompleteAbort (once the last one is
        written: partitions with a ``delay-marker`` fault get theirs later, and a
        ``drop-marker`` partition none, the coordinator completing as if it had)."""
        transit = md.prepare_complete(self.broker.now_ms())
        tv = md.client_transaction_version
        faults = self.broker.faults
        now: list[TopicPartition] = []
        later: dict[int, list[TopicPartition]] = {}
        for tp in sorted(md.topic_partitions):
            if faults.drops_marker(*tp):
                self.broker.warn(f"fault injected: {'COMMIT' if commit else 'ABORT'} marker of "
                                 f"transactional id {md.transactional_id} not written to "
                                 f"{tp[0]}-{tp[1]}")
            elif delay := faults.marker_delay_ms(*tp):
                later.setdefault(delay, []).append(tp)
            else:
                now.append(tp)
        if now:
            retry = self._send_markers(md, commit, now)
            if retry:
                later.setdefault(0, []).extend(retry)
        if later:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
            if loop is not None:
                task = loop.create_task(self._delayed_markers(md, transit, commit, later))
                self._delayed_tasks.add(task)
                task.add_done_callback(self._delayed_tasks.discard)
                return transit
            for tps in later.values():  # no event loop to wait in: write them now
                self.write_markers(md.producer_id, md.producer_epoch, self.epoch_of(md),
                                   commit, tps, transaction_version=tv)
        self._finish(md, transit)
        return transit

    async def _delayed_markers(self, md: TransactionMetadata, transit: TxnTransitMetadata,
                               commit: bool, later: dict[int, list[TopicPartition]]) -> None:
        """The ``delay-marker`` faults' markers, each after its delay, then Complete*."""
        start = asyncio.get_running_loop().time()
        pending: list[TopicPartition] = []
        for delay in sorted(later):
            if delay:
                self.broker.log(f"fault injected: {'COMMIT' if commit else 'ABORT'} marker of "
                                f"transactional id {md.transactional_id} to "
                                + ", ".join(f"{t}-{p}" for t, p in later[delay])
                                + f" delayed by {delay} ms")
            await asyncio.sleep(max(0.0, start + delay / 1000 - asyncio.get_running_loop().time()))
            pending += self._send_markers(md, commit, later[delay])
        while pending:
            await asyncio.sleep(RETRY_BACKOFF_S)
            if self.broker.stopping.is_set():
                return
            pending = self._send_markers(md, commit, pending)
        self._finish(md, transit)

    def _send_markers(self, md: TransactionMetadata, commit: bool,
                      partitions: list[TopicPartition]) -> list[TopicPartition]:
        """The markers to ``partitions``, each to its leader (this node outside a cluster);
        returns the partitions to retry (no leader now, or a leader that moved)."""
        pid, epoch, tv = md.producer_id, md.producer_epoch, md.client_transaction_version
        cluster = self.broker.cluster
        if cluster is None:
            self.write_markers(pid, epoch, self.epoch_of(md), commit, partitions,
                               transaction_version=tv)
            return []
        retry = []
        for tp in partitions:
            leader = cluster.leader_broker(*tp)
            if leader is None:
                retry.append(tp)
                continue
            result = leader.transactions.write_markers(pid, epoch, self.epoch_of(md), commit,
                                                       [tp], transaction_version=tv)
            if result.get(tp) in RETRIABLE_MARKER_ERRORS:
                retry.append(tp)
        return retry

    def _finish(self, md: TransactionMetadata, transit: TxnTransitMetadata) -> None:
        error = self._append(md, transit)
        if error != ErrorCode.none:
            self.broker.warn(f"transactional id {md.transactional_id}: could not complete "
                             f"the transaction ({error.name}); it stays in {md.state.kafka_name}")

    def write_markers(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                      commit: bool, partitions: Iterable[TopicPartition], *,
                      transaction_version: int = 0) -> dict[TopicPartition, ErrorCode]:
        """``KafkaApis#handleWriteTxnMarkersRequest``'s local part: append the marker to each
        partition (origin COORDINATOR); the group coordinator completes pending transactional
        offset commits of ``__consumer_offsets`` partitions (``onTransactionCompleted``)."""
        results: dict[TopicPartition, ErrorCode] = {}
        now = self.broker.now_ms()
        kind = "COMMIT" if commit else "ABORT"
        for topic, partition in partitions:
            log, missing = leader_log(self.broker, topic, partition)
            if log is None:
                if missing == ErrorCode.unknown_topic_or_partition:
                    self.broker.warn(f"{kind} marker of producer {producer_id}: {topic}-"
                                     f"{partition} does not exist; dropped from the transaction")
                results[(topic, partition)] = missing
                continue
            try:
                log.append_end_txn_marker(producer_id=producer_id, producer_epoch=producer_epoch,
                                          coordinator_epoch=coordinator_epoch, commit=commit,
                                          now_ms=now, transaction_version=transaction_version)
            except AppendError as exc:
                self.broker.warn(f"{kind} marker of producer {producer_id} epoch "
                                 f"{producer_epoch} refused by {topic}-{partition}: {exc.message}")
                results[(topic, partition)] = exc.error
                continue
            results[(topic, partition)] = ErrorCode.none
            if topic == GROUP_METADATA_TOPIC:
                self.broker.groups.on_transaction_completed(producer_id, partition, commit)
        self.broker.notify_append()
        return results

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
