"""A broker's replicas in a multi-broker ``kafkatx serve``: leader and follower roles, the ISR,
the high watermark, ``acks=all`` waits.

Mirrors Kafka's ``Partition`` (``makeLeader`` / ``makeFollower``, ``updateFollowerFetchState``,
``maybeExpandIsr`` / ``maybeShrinkIsr`` with ``replica.lag.time.max.ms``,
``maybeIncrementLeaderHW``: the smallest log end offset of the ISR,
``checkEnoughReplicasReachOffset`` for ``DelayedProduce``, ``appendRecordsToLeader``'s
``min.insync.replicas`` check) and ``ReplicaManager#applyDelta`` (a leader or follower role
per partition from the controller's metadata; followers handed to the replica fetcher of their
leader, :mod:`kafkatx.broker.replication.replica_fetcher`). ISR changes go to the in-process
controller (:class:`kafkatx.broker.context.ClusterView`) as Kafka's leader sends ``AlterPartition``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from kafkatx.broker.logs.partition_log import PartitionLog
from kafkatx.broker.replication.replica_fetcher import ReplicaFetcher
from kafkatx.broker.replication.replica_partition import FollowerState, Partition
from kafkatx.formats.internal_topics import GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC

if TYPE_CHECKING:
    from kafkatx.broker.context import BrokerContext, PartitionState

TopicPartition = tuple[str, int]
DEFAULT_REPLICA_LAG_TIME_MAX_MS = 30_000  # replica.lag.time.max.ms


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class ReplicaManager:
    """The hosted partitions of one broker and what their roles need."""

    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker
        self.partitions: dict[TopicPartition, Partition] = {}
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self.hw_changed = asyncio.Event()

    @property
    def node_id(self) -> int:
        return self.broker.config.node_id

    def lag_time_max_ms(self) -> int:
        return self.broker.config.replica_lag_time_max_ms

    # -- roles (ReplicaManager#applyDelta) -----------------------------------------------------

    def apply(self, state: PartitionState) -> None:
        """The controller's state of a partition this broker hosts: become (or stay) its leader
        or a follower of its leader."""
        log = self.broker.logs.get(state.topic, state.partition)
        if log is None:
            return
        tp = (state.topic, state.partition)
        part = self.partitions.get(tp)
        if part is None:
            part = Partition(tp, log)
            self.partitions[tp] = part
        part.log = log
        was_leader = part.leader == self.node_id
        new_epoch = state.leader_epoch != part.leader_epoch
        part.replicas, part.isr = list(state.replicas), list(state.isr)
        if state.leader == self.node_id:
            if not was_leader or new_epoch:
                self._make_leader(part, state)
        else:
            if was_leader or new_epoch or part.leader != state.leader:
                self._make_follower(part, state, was_leader)
        self.maybe_increment_high_watermark(part)

    def _make_leader(self, part: Partition, state: PartitionState) -> None:
        """``Partition#makeLeader``: the new epoch starts at the log end offset; followers'
        states are unknown until they fetch; the coordinator of an internal partition loads
        it (``onElection``)."""
        log = part.log
        self._stop_fetching(part.tp)
        part.leader, part.leader_epoch = state.leader, state.leader_epoch
        log.leader_epoch = state.leader_epoch
        log.high_watermark_follows_log_end = False
        log.assign_epoch(state.leader_epoch, log.log_end_offset)
        part.leader_epoch_start_offset = log.log_end_offset
        log.on_append = lambda: self._after_leader_append(part)
        now = monotonic_ms()
        part.followers = {r: FollowerState(last_caught_up_ms=now if r in part.isr else 0)
                          for r in part.replicas if r != self.node_id}
        self.broker.log(f"{log.name}: leader at epoch {state.leader_epoch} (ISR "
                        f"{part.isr}, log end offset {log.log_end_offset})")
        self._coordinator_election(part.tp, state.leader_epoch)

    def _make_follower(self, part: Partition, state: PartitionState, was_leader: bool) -> None:
        """``Partition#makeFollower``: forget followers, resign a coordinator, fetch from the
        new leader after truncating (``ReplicaFetcherThread``, OffsetsForLeaderEpoch)."""
        log = part.log
        if was_leader:
            self._coordinator_resignation(part.tp)
        self._stop_fetching(part.tp)
        part.leader, part.leader_epoch = state.leader, state.leader_epoch
        log.leader_epoch = state.leader_epoch
        log.high_watermark_follows_log_end = False
        log.on_append = None
        part.followers = {}
        if state.leader >= 0:
            self.fetcher_for(state.leader).add_partition(part)
            self.broker.log(f"{log.name}: follower of broker {state.leader} at epoch "
                            f"{state.leader_epoch}")

    def _coordinator_election(self, tp: TopicPartition, epoch: int) -> None:
        topic, partition = tp
        if topic == TRANSACTION_STATE_TOPIC:
            self.broker.transactions.load_partition(partition, epoch)
        elif topic == GROUP_METADATA_TOPIC:
            self.broker.groups.load_partition(partition)

    def _coordinator_resignation(self, tp: TopicPartition) -> None:
        topic, partition = tp
        if topic == TRANSACTION_STATE_TOPIC:
            self.broker.transactions.unload_partition(partition)
        elif topic == GROUP_METADATA_TOPIC:
            self.broker.groups.unload_partition(partition)

    def fetcher_for(self, leader: int) -> ReplicaFetcher:
        fetcher = self.fetchers.get(leader)
        if fetcher is None:
            fetcher = ReplicaFetcher(self.broker, leader)
            self.fetchers[leader] = fetcher
            fetcher.start()
        return fetcher

    def _stop_fetching(self, tp: TopicPartition) -> None:
        for fetcher in self.fetchers.values():
            fetcher.remove_partition(tp)

    def resign_all(self) -> None:
        """A controlled shutdown: this broker leads nothing more (its clients get
        NOT_LEADER_OR_FOLLOWER, its coordinators unload) before the controller moves the
        leaderships."""
        for part in self.partitions.values():
            if part.leader == self.node_id:
                self._coordinator_resignation(part.tp)
            part.leader = -1
            part.log.on_append = None
            part.followers = {}

    def forget(self, tp: TopicPartition) -> None:
        """The partition is gone (its topic deleted): no role, no fetching; produce requests
        waiting on it are answered (``ReplicaManager#stopPartitions`` completes the delayed
        operations of the partitions it removes)."""
        self._stop_fetching(tp)
        if self.partitions.pop(tp, None) is not None:
            self.notify_high_watermark()

    def truncated(self, part: Partition, before: int, after: int) -> None:
        """A follower truncated its log (``UnifiedLog#truncateTo``): nothing else to do here
        than record it; the loaded log replaced the old one's producer state."""
        if self.broker.config.verbose:
            self.broker.log(f"{part.log.name}: truncated {before} -> {after}")

    async def shutdown(self) -> None:
        fetchers = list(self.fetchers.values())
        self.fetchers = {}
        for fetcher in fetchers:
            await fetcher.stop()

    # -- leader side ------------------------------------------------------------------------

    def leader_partition(self, topic: str, partition: int) -> Partition | None:
        part = self.partitions.get((topic, partition))
        return part if part is not None and part.leader == self.node_id else None

    def update_follower_fetch(self, part: Partition, replica_id: int, fetch_offset: int,
                              leader_log_end_offset: int) -> None:
        """``Partition#updateFollowerFetchState`` (``Replica#updateFetchStateOrThrow``): the
        follower's log end offset is its fetch offset; it is caught up when that reaches the
        leader's log end offset (now, or as of its previous fetch); then ``maybeExpandIsr`` and
        ``maybeIncrementLeaderHW``."""
        state = part.followers.get(replica_id)
        if state is None:
            return
        now = monotonic_ms()
        if fetch_offset >= leader_log_end_offset:
            state.last_caught_up_ms = max(state.last_caught_up_ms, now)
        elif fetch_offset >= state.last_fetch_leader_log_end_offset:
            state.last_caught_up_ms = max(state.last_caught_up_ms, state.last_fetch_ms)
        state.log_end_offset = fetch_offset
        state.last_fetch_leader_log_end_offset = leader_log_end_offset
        state.last_fetch_ms = now
        self._maybe_expand_isr(part, replica_id, state)
        self.maybe_increment_high_watermark(part)

    def _maybe_expand_isr(self, part: Partition, replica_id: int, state: FollowerState) -> None:
        """``Partition#maybeExpandIsr`` / ``isFollowerInSync``: a follower at or past the high
        watermark and the current epoch's start offset rejoins the ISR."""
        if (replica_id in part.isr or self.broker.cluster is None
                or replica_id not in self.broker.cluster.brokers):
            return
        log = part.log
        if (state.log_end_offset >= log.high_watermark
                and state.log_end_offset >= part.leader_epoch_start_offset):
            self.broker.cluster.alter_isr(part.tp, self.node_id, part.leader_epoch,
                                          sorted({*part.isr, replica_id}))

    def maybe_shrink_isr(self) -> None:
        """``Partition#maybeShrinkIsr`` for every partition led here: followers not caught up
        within ``replica.lag.time.max.ms`` leave the ISR."""
        if self.broker.cluster is None:
            return
        now = monotonic_ms()
        lag = self.lag_time_max_ms()
        for part in list(self.partitions.values()):
            if part.leader != self.node_id:
                continue
            out = [r for r in part.isr if r != self.node_id
                   and now - part.followers.get(r, FollowerState()).last_caught_up_ms > lag]
            if out:
                self.broker.warn(f"{part.log.name}: shrinking the ISR {part.isr}: "
                                 f"{out} not caught up within {lag} ms")
                self.broker.cluster.alter_isr(part.tp, self.node_id, part.leader_epoch,
                                              [r for r in part.isr if r not in out])
                self.maybe_increment_high_watermark(part)

    def maybe_increment_high_watermark(self, part: Partition) -> bool:
        """``Partition#maybeIncrementLeaderHW``: the smallest log end offset among the ISR
        (followers by their last fetch offset)."""
        if part.leader != self.node_id:
            return False
        log = part.log
        ends = [log.log_end_offset]
        for r in part.isr:
            if r != self.node_id:
                ends.append(part.followers.get(r, FollowerState()).log_end_offset)
        new_hw = min(ends)
        if new_hw <= log.high_watermark:
            return False
        log.update_high_watermark(new_hw)
        self.notify_high_watermark()
        return True

    def notify_high_watermark(self) -> None:
        """Wake ``acks=all`` produce requests and fetches waiting on a high watermark."""
        self.hw_changed.set()
        self.hw_changed = asyncio.Event()
        self.broker.notify_append()

    def after_leader_append(self, part: Partition) -> None:
        self.maybe_increment_high_watermark(part)

    def _after_leader_append(self, part: Partition) -> None:
        """Any append on a leader (client, coordinator, marker): the high watermark may move
        (an ISR of the leader alone) and followers waiting in a fetch wake up."""
        if not self.maybe_increment_high_watermark(part):
            self.broker.notify_append()

    def min_insync_error(self, part: Partition) -> ErrorCode | None:
        """``Partition#appendRecordsToLeader``: NOT_ENOUGH_REPLICAS for an ``acks=all``
        append when the ISR is smaller than ``min.insync.replicas``."""
        if len(part.isr) < self.min_insync_replicas(part):
            return ErrorCode.not_enough_replicas
        return None

    def min_insync_replicas(self, part: Partition) -> int:
        topic = self.broker.logs.topics.get(part.tp[0])
        configs = topic.configs if topic is not None else {}
        return int(self.broker.logs.topic_config("min.insync.replicas", configs) or 1)

    async def wait_for_replication(self, part: Partition, required_offset: int,
                                   timeout_s: float) -> ErrorCode:
        """``DelayedProduce`` / ``Partition#checkEnoughReplicasReachOffset``: done when the high
        watermark reaches ``required_offset`` (NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR
        shrank below ``min.insync.replicas`` meanwhile), NOT_LEADER_OR_FOLLOWER if leadership
        moved, REQUEST_TIMED_OUT after the request's timeout."""
        deadline = asyncio.get_running_loop().time() + timeout_s
        while True:
            if self.partitions.get(part.tp) is not part:  # getPartitionOrError: removed
                return (ErrorCode.not_leader_or_follower if self.broker.logs.contains(*part.tp)
                        else ErrorCode.unknown_topic_or_partition)
            if part.leader != self.node_id:
                return ErrorCode.not_leader_or_follower
            if part.log.high_watermark >= required_offset:
                if len(part.isr) < self.min_insync_replicas(part):
                    return ErrorCode.not_enough_replicas_after_append
                return ErrorCode.none
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0 or self.broker.stopping.is_set():
                return ErrorCode.request_timed_out
            event = self.hw_changed
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), min(remaining, 0.5))

    async def isr_loop(self) -> None:
        """``ReplicaManager#startup``'s isr-expiration task, every half of
        ``replica.lag.time.max.ms``."""
        while True:
            await asyncio.sleep(self.lag_time_max_ms() / 2000)
            try:
                self.maybe_shrink_isr()
            except Exception as exc:  # a failed check must not stop the next ones
                self.broker.warn(f"ISR check failed: {type(exc).__name__}: {exc}")


def leader_log(broker: BrokerContext, topic: str, partition: int
               ) -> tuple[PartitionLog | None, ErrorCode]:
    """``ReplicaManager#getPartitionOrError`` for a request only the leader serves: the log
    and NONE; UNKNOWN_TOPIC_OR_PARTITION when the metadata has no such partition;
    NOT_LEADER_OR_FOLLOWER when this broker does not lead it. The single node of
    ``kafkatx serve`` leads everything it has."""
    log = broker.logs.get(topic, partition)
    if broker.cluster is None:
        return (log, ErrorCode.none) if log is not None else \
            (None, ErrorCode.unknown_topic_or_partition)
    if broker.cluster.state(topic, partition) is None:
        return None, ErrorCode.unknown_topic_or_partition
    if log is None or broker.replicas.leader_partition(topic, partition) is None:
        return None, ErrorCode.not_leader_or_follower
    return log, ErrorCode.none
