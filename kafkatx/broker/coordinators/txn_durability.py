"""The transaction coordinator's writes, durable as Kafka makes them (``--brokers N``).

``TransactionStateManager#appendTransactionToLog`` appends with acks=-1 and completes the
transition (``completeTransitionTo``) only in the callback of a write the ISR has: on
NOT_ENOUGH_REPLICAS(_AFTER_APPEND) or REQUEST_TIMED_OUT the pending state is dropped, the
metadata stays where it was and the client gets COORDINATOR_NOT_AVAILABLE (NOT_COORDINATOR when
leadership moved). ``TransactionMarkerChannelManager`` writes the markers only once
PrepareCommit/PrepareAbort is durable, each with acks=-1 (``WriteTxnMarkers``), and retries a
marker until its partition's ISR has it before CompleteCommit/CompleteAbort.

This broker appends to its own log first and applies the transition at once (the coordinator
code is synchronous); :meth:`TxnDurability.watch` then waits for the ISR and, if the write does
not become durable, puts the metadata back as it was before, so the answer, and what the
coordinator does next, are Kafka's. The answer to the request waits for that verdict
(:meth:`TxnDurability.take`), the markers of a Prepare* are sent only after it, and
:meth:`TxnDurability.marker_replicated` holds Complete* until every marker is replicated.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from kafkatx.formats.internal_topics import TRANSACTION_STATE_TOPIC
from kafkatx.lazy_dataclass import dataclass

if TYPE_CHECKING:
    from kafkatx.broker.context import BrokerContext, BrokerNode
    from kafkatx.broker.coordinators.txn_metadata import TransactionMetadata
    from kafkatx.broker.replication.replica_partition import Partition
    from kafkatx.formats.transaction_log import TransactionState

#: How long a coordinator write (and a marker) waits for the ISR before it counts as failed:
#: Kafka waits ``request.timeout.ms`` (30 s); shorter here, so tests of a cut-off coordinator
#: stay quick and clients retry sooner.
WRITE_TIMEOUT_S = 5.0


def append_error(error: ErrorCode) -> ErrorCode:
    """``appendTransactionToLog``'s mapping of a failed log append to the client's error."""
    if error in (ErrorCode.unknown_topic_or_partition, ErrorCode.not_enough_replicas,
                 ErrorCode.not_enough_replicas_after_append, ErrorCode.request_timed_out):
        return ErrorCode.coordinator_not_available
    if error in (ErrorCode.not_leader_or_follower, ErrorCode.kafka_storage_error):
        return ErrorCode.not_coordinator
    if error in (ErrorCode.message_too_large, ErrorCode.record_list_too_large):
        return ErrorCode.unknown_server_error
    return error


def snapshot(md: TransactionMetadata) -> dict[str, Any]:
    """Every field of ``md``, to put back when a transition does not become durable."""
    saved = dict(vars(md))
    saved["topic_partitions"] = set(md.topic_partitions)
    return saved


@dataclass(frozen=True, slots=True)
class MarkerAppend:
    """A marker appended to a partition's leader: that broker, its partition and the offset
    after the marker (what its acks=-1 wait needs the high watermark to reach)."""

    broker: BrokerNode
    partition: Partition
    end_offset: int


class TxnDurability:
    """The writes of one broker's transaction coordinator waiting for their ISR."""

    def __init__(self, broker: BrokerContext, partition_of: Callable[[str], int],
                 cache: dict[str, TransactionMetadata]) -> None:
        self.broker = broker
        self.partition_of = partition_of
        self.cache = cache
        self._verdicts: dict[str, tuple[asyncio.Task[Any] | None, asyncio.Future[ErrorCode]]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def active(self) -> bool:
        """Only several brokers replicate; a write needs an event loop to wait in."""
        if self.broker.cluster is None:
            return False
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return False
        return True

    def min_isr_error(self, transactional_id: str) -> ErrorCode | None:
        """``Partition#appendRecordsToLeader`` with acks=-1: NOT_ENOUGH_REPLICAS (nothing is
        written) while the partition's ISR is below its ``min.insync.replicas``."""
        part = self.broker.replicas.leader_partition(TRANSACTION_STATE_TOPIC,
                                                     self.partition_of(transactional_id))
        if part is None:
            return ErrorCode.not_leader_or_follower
        if len(part.isr) < self.broker.replicas.min_insync_replicas(part):
            return ErrorCode.not_enough_replicas
        return None

    def watch(self, md: TransactionMetadata, before: dict[str, Any], end_offset: int,
              state: TransactionState) -> None:
        """The transition to ``state`` (applied, its record ending at ``end_offset`` in the
        leader's log) waits for the ISR; the request that made it takes the verdict."""
        loop = asyncio.get_running_loop()
        verdict: asyncio.Future[ErrorCode] = loop.create_future()
        self._verdicts[md.transactional_id] = (asyncio.current_task(), verdict)
        task = loop.create_task(self._settle(md, before, end_offset, state, verdict))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def then(self, transactional_id: str, action: Callable[[], None]) -> None:
        """Run ``action`` (the markers of a Prepare*) once the pending write is durable."""
        entry = self._verdicts.get(transactional_id)
        if entry is None or (entry[1].done() and entry[1].result() == ErrorCode.none):
            action()
            return
        entry[1].add_done_callback(
            lambda done: action() if not done.cancelled() and done.result() == ErrorCode.none
            else None)

    def take(self, transactional_id: str) -> asyncio.Future[ErrorCode] | None:
        """The verdict of the write the current request made for ``transactional_id`` (to be
        awaited shielded: a request cancelled with its connection must not cancel the markers
        waiting on it)."""
        entry = self._verdicts.get(transactional_id)
        if entry is None or entry[0] is not asyncio.current_task():
            return None
        del self._verdicts[transactional_id]
        return entry[1]

    async def _settle(self, md: TransactionMetadata, before: dict[str, Any], end_offset: int,
                      state: TransactionState, verdict: asyncio.Future[ErrorCode]) -> None:
        part = self.broker.replicas.leader_partition(TRANSACTION_STATE_TOPIC,
                                                     self.partition_of(md.transactional_id))
        error = (ErrorCode.not_leader_or_follower if part is None else
                 await self.broker.replicas.wait_for_replication(part, end_offset,
                                                                 WRITE_TIMEOUT_S))
        if error != ErrorCode.none:
            if (self.cache.get(md.transactional_id) is md and md.state is state
                    and md.pending_state is None):
                vars(md).update(before)
            self.broker.warn(f"transactional id {md.transactional_id}: {state.kafka_name} not "
                             f"replicated to the ISR ({error.name}); the transition is undone "
                             f"and the client told {append_error(error).name}")
        if not verdict.done():
            verdict.set_result(append_error(error))

    async def marker_replicated(self, appended: MarkerAppend) -> ErrorCode:
        """``WriteTxnMarkers``' acks=-1: the marker is in the ISR of the leader it was appended
        to (``DelayedProduce`` on that broker, whose response the marker channel awaits):
        NOT_LEADER_OR_FOLLOWER once that broker leads the partition no more,
        REQUEST_TIMED_OUT once it is killed or after the timeout,
        NOT_ENOUGH_REPLICAS_AFTER_APPEND: write it again (to the partition's leader then)."""
        return await appended.broker.replicas.wait_for_replication(
            appended.partition, appended.end_offset, WRITE_TIMEOUT_S)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task
