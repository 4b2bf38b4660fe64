"""Ending a transaction: EndTxn (transactions v1/v2), PrepareCommit/PrepareAbort, the markers to
every partition and the Complete* record (Kafka's ``TransactionCoordinator#endTransaction``,
``TransactionMarkerChannelManager``, ``WriteTxnMarkers``)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from kafkatx.broker.coordinators.txn_durability import MarkerAppend
from kafkatx.broker.coordinators.txn_metadata import (
    IllegalTransitionError,
    TopicPartition,
    TransactionMetadata,
    TxnTransitMetadata,
)
from kafkatx.broker.faults import crash
from kafkatx.broker.logs.log_values import AppendError
from kafkatx.broker.replication.replica_manager import leader_log
from kafkatx.formats.internal_topics import GROUP_METADATA_TOPIC
from kafkatx.formats.transaction_log import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TransactionState,
)
from kafkatx.semantics.transaction_states import (
    SHORT_MAX,
    supports_epoch_bump,
)

if TYPE_CHECKING:
    pass


S = TransactionState
RETRY_BACKOFF_S = 0.1  # the marker channel's retry.backoff.ms
RETRIABLE_MARKER_ERRORS = frozenset({ErrorCode.not_leader_or_follower,
                                     ErrorCode.leader_not_available,
                                     ErrorCode.not_enough_replicas,
                                     ErrorCode.request_timed_out})


class TransactionCompletion:
    """A part of :class:`~kafkatx.broker.coordinators.txn_coordinator.TransactionCoordinator`."""

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
        pid, epoch = self._after_prepare(md, transit, next_state is S.PREPARE_COMMIT)
        return ErrorCode.none, pid, epoch

    def _after_prepare(self, md: TransactionMetadata, transit: TxnTransitMetadata,
                       commit: bool) -> tuple[int, int]:
        """The PrepareCommit/PrepareAbort is in the log: the markers (``crash-after`` stops
        here; with ``--brokers N`` they wait until the ISR has it); returns the producer id and
        epoch CompleteCommit/CompleteAbort will carry."""
        if self.broker.faults.crashes_after(transit.txn_state):
            crash(f"transactional id {md.transactional_id}: {transit.txn_state.kafka_name} "
                  "written, no marker")
        ids = md.completed_ids()
        if self.durability.active:
            self.durability.then(md.transactional_id, lambda: self._complete_once_prepared(
                md, transit.txn_state, commit))
            return ids
        self._complete(md, commit=commit)
        return ids

    def _complete_once_prepared(self, md: TransactionMetadata, prepared: TransactionState,
                                commit: bool) -> None:
        """The markers of a Prepare* the ISR now has, unless this broker stopped coordinating
        the id meanwhile (the new coordinator completes it from its own copy)."""
        if self.cache.get(md.transactional_id) is md and md.state is prepared \
                and md.pending_state is None:
            self._complete(md, commit=commit)

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
        if now and self.durability.active:
            later.setdefault(0, []).extend(now)  # acks=-1: written and awaited in a task
        elif now:
            retry, _ = self._send_markers(md, commit, now)
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
            pending += await self._send_durably(md, commit, later[delay])
        while pending:
            await asyncio.sleep(RETRY_BACKOFF_S)
            if self.broker.stopping.is_set() or self.cache.get(md.transactional_id) is not md:
                return  # stopped, or no longer its coordinator: the new one completes it
            pending = await self._send_durably(md, commit, pending)
        self._finish(md, transit)

    async def _send_durably(self, md: TransactionMetadata, commit: bool,
                            partitions: list[TopicPartition]) -> list[TopicPartition]:
        """:meth:`_send_markers`, and with ``--brokers N`` each written marker awaited until the
        ISR of the leader it was written to has it (``WriteTxnMarkers`` appends with acks=-1
        and that broker answers); returns the partitions to write again."""
        retry, written = self._send_markers(md, commit, partitions)
        if not self.durability.active:
            return retry
        for tp, appended in written.items():
            error = await self.durability.marker_replicated(appended)
            if error != ErrorCode.none:
                self.broker.warn(f"transactional id {md.transactional_id}: the "
                                 f"{'COMMIT' if commit else 'ABORT'} marker in "
                                 f"{tp[0]}-{tp[1]} is not replicated by broker "
                                 f"{appended.broker.config.node_id} ({error.name}); writing it "
                                 "again")
                retry.append(tp)
        return retry

    def _send_markers(self, md: TransactionMetadata, commit: bool,
                      partitions: list[TopicPartition]
                      ) -> tuple[list[TopicPartition], dict[TopicPartition, MarkerAppend]]:
        """The markers to ``partitions``, each to its leader (this node outside a cluster);
        returns the partitions to retry (no leader now, or a leader that moved) and, with
        ``--brokers N``, where each written marker went: its acks=-1 wait is on that leader
        and that offset, never on whichever broker leads the partition later (a new leader
        elected before the marker reached it does not have it)."""
        pid, epoch, tv = md.producer_id, md.producer_epoch, md.client_transaction_version
        cluster = self.broker.cluster
        if cluster is None:
            self.write_markers(pid, epoch, self.epoch_of(md), commit, partitions,
                               transaction_version=tv)
            return [], {}
        retry = []
        written: dict[TopicPartition, MarkerAppend] = {}
        for tp in partitions:
            leader = cluster.leader_broker(*tp)
            if leader is None:
                retry.append(tp)
                continue
            error = leader.transactions.write_markers(
                pid, epoch, self.epoch_of(md), commit, [tp], transaction_version=tv).get(tp)
            part = leader.replicas.leader_partition(*tp)
            if error in RETRIABLE_MARKER_ERRORS:
                retry.append(tp)
            elif error == ErrorCode.none and part is not None:
                written[tp] = MarkerAppend(leader, part, part.log.log_end_offset)
        return retry, written

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
