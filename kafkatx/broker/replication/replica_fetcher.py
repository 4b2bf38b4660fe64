"""A follower's fetcher of one leader broker, over a loopback socket with Kafka's own requests.

Mirrors ``ReplicaFetcherThread`` / ``AbstractFetcherThread``: partitions added on becoming
follower start in the truncating state (``maybeTruncate``): an ``OffsetsForLeaderEpoch`` request
with the follower's latest leader epoch, the answer resolved as
``AbstractFetcherThread#getOffsetTruncationState`` does (an epoch the leader does not know:
truncate to the high watermark; a different epoch: truncate to the follower's end of that epoch
and ask again, KIP-279), then ``UnifiedLog#truncateTo``. Fetching partitions are sent in one
``Fetch`` (v12, ``replica_id`` = this broker, ``replica.fetch.wait.max.ms`` 500,
``replica.fetch.max.bytes`` 1 MiB per partition); each answer's records are appended as
follower (``processPartitionData``: ``UnifiedLog#appendAsFollower``) and the follower's high
watermark set from the leader's (``UnifiedLog#updateHighWatermark``). The follower's fetch
offset is what tells the leader its log end offset (the leader's high watermark follows).
OFFSET_OUT_OF_RANGE puts a partition back to truncating; NOT_LEADER_OR_FOLLOWER and the epoch
errors back off until the controller's next state arrives (``replica.fetch.backoff.ms``, here
100 ms). Kafka 2.7+ truncates from the Fetch response's diverging epoch instead when it knows
its last fetched epoch; this fetcher always asks OffsetsForLeaderEpoch, as Kafka did before and
still does for a partition without one (``lastFetchedEpoch`` unset).

The faults ``cut-replication:A-B`` (no fetch between brokers A and B, either way round) and
``slow-replication:ID:MS`` (broker ID's fetches each wait MS first) act here.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12 import request as fetch_request
from kio.schema.list_offsets.v7 import request as offsets_request
from kio.schema.offset_for_leader_epoch.v4 import request as epoch_request

from kafkatx.broker.logs.log_values import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, AppendError
from kafkatx.broker.replication.broker_client import BrokerConnection
from kafkatx.lazy_dataclass import dataclass
from kafkatx.semantics.leader_epochs import UNDEFINED_EPOCH, truncation_step

if TYPE_CHECKING:
    from kafkatx.broker.context import BrokerContext
    from kafkatx.broker.replication.replica_partition import Partition

TopicPartition = tuple[str, int]
FETCH_WAIT_MAX_MS = 500  # replica.fetch.wait.max.ms
FETCH_MAX_BYTES = 1_048_576  # replica.fetch.max.bytes
FETCH_RESPONSE_MAX_BYTES = 10_485_760  # replica.fetch.response.max.bytes
BACKOFF_S = 0.1
REQUEST_TIMEOUT_S = 30.0  # replica.socket.timeout.ms


@dataclass(slots=True)
class FetchState:
    part: Partition
    truncating: bool = True


class ReplicaFetcher:
    """Fetches every partition this broker follows from the broker ``leader_id``."""

    def __init__(self, broker: BrokerContext, leader_id: int) -> None:
        self.broker = broker
        self.leader_id = leader_id
        self.states: dict[TopicPartition, FetchState] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._conn: BrokerConnection | None = None
        self._stopped = False

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        # The flag ends the loop even if a cancellation is swallowed on the way (an
        # ``asyncio.wait_for`` whose inner wait finished at the same moment, Python < 3.12).
        self._stopped = True
        self._wake.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        await self._disconnect()

    def add_partition(self, part: Partition) -> None:
        self.states[part.tp] = FetchState(part)
        self._wake.set()

    def remove_partition(self, tp: TopicPartition) -> None:
        self.states.pop(tp, None)

    # -- the loop -----------------------------------------------------------------------------

    async def _run(self) -> None:
        while not self._stopped:
            if not self.states:
                self._wake.clear()
                await self._wake.wait()
                continue
            delay = self.broker.faults.replication_delay_ms(self.broker.config.node_id)
            if delay:
                await asyncio.sleep(delay / 1000)
            if self.broker.faults.replication_cut(self.broker.config.node_id, self.leader_id):
                await self._disconnect()
                await asyncio.sleep(BACKOFF_S)
                continue
            try:
                conn = await self._connection()
                if conn is None:
                    await asyncio.sleep(BACKOFF_S)
                    continue
                truncating = [s for s in self.states.values() if s.truncating]
                if truncating:
                    await self._truncate(conn, truncating)
                fetching = [s for s in self.states.values() if not s.truncating]
                if fetching and await self._fetch(conn, fetching):
                    await asyncio.sleep(BACKOFF_S)
            except asyncio.CancelledError:
                raise
            except (OSError, EOFError, asyncio.IncompleteReadError, TimeoutError) as exc:
                if self.broker.config.verbose:
                    self.broker.log(f"fetcher of broker {self.leader_id}: {exc!r}")
                await self._disconnect()
                await asyncio.sleep(BACKOFF_S)
            except Exception as exc:
                self.broker.warn(f"fetcher of broker {self.leader_id} failed: "
                                 f"{type(exc).__name__}: {exc}")
                await self._disconnect()
                await asyncio.sleep(BACKOFF_S)

    async def _connection(self) -> BrokerConnection | None:
        if self._conn is not None and self._conn.connected:
            return self._conn
        cluster = self.broker.cluster
        leader = cluster.brokers.get(self.leader_id) if cluster is not None else None
        if leader is None:
            return None
        self._conn = BrokerConnection(leader.advertised_host, leader.port,
                                      f"broker-{self.broker.config.node_id}-fetcher")
        await self._conn.connect()
        return self._conn

    async def _disconnect(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None

    # -- truncation ---------------------------------------------------------------------------

    async def _truncate(self, conn: BrokerConnection, states: list[FetchState]) -> None:
        """``AbstractFetcherThread#maybeTruncate`` for the partitions in the truncating state."""
        by_topic: dict[str, list[Any]] = {}
        for s in states:
            log = s.part.log
            assert log.epochs is not None
            by_topic.setdefault(s.part.tp[0], []).append(epoch_request.OffsetForLeaderPartition(
                partition=s.part.tp[1], current_leader_epoch=s.part.leader_epoch,
                leader_epoch=log.epochs.latest_epoch))
        request = epoch_request.OffsetForLeaderEpochRequest(
            replica_id=self.broker.config.node_id,
            topics=tuple(epoch_request.OffsetForLeaderTopic(topic=t, partitions=tuple(ps))
                         for t, ps in by_topic.items()))
        response = await conn.request(request, REQUEST_TIMEOUT_S)
        for topic in response.topics:
            for answer in topic.partitions:
                state = self.states.get((topic.topic, answer.partition))
                if state is None or not state.truncating:
                    continue
                if answer.error_code != ErrorCode.none:
                    continue  # retried on the next round
                self._apply_truncation(state, answer.leader_epoch, answer.end_offset)

    def _apply_truncation(self, state: FetchState, leader_epoch: int, end_offset: int) -> None:
        """``AbstractFetcherThread#getOffsetTruncationState`` then ``truncate``."""
        log = state.part.log
        assert log.epochs is not None
        leo = log.log_end_offset
        target, done = truncation_step(leader_epoch, end_offset, log.epochs, leo,
                                       log.high_watermark)
        if target < leo:
            self.broker.warn(f"{log.name}: truncating from {leo} to {target} (leader "
                             f"{self.leader_id}'s epoch {leader_epoch} ends at {end_offset})")
            log.truncate_to(target, self.broker.now_ms())
            self.broker.replicas.truncated(state.part, leo, log.log_end_offset)
        state.truncating = not done

    # -- fetching -----------------------------------------------------------------------------

    async def _fetch(self, conn: BrokerConnection, states: list[FetchState]) -> bool:
        """One Fetch round; True when every partition answered with an error (back off)."""
        by_topic: dict[str, list[Any]] = {}
        for s in states:
            log = s.part.log
            by_topic.setdefault(s.part.tp[0], []).append(fetch_request.FetchPartition(
                partition=s.part.tp[1], current_leader_epoch=s.part.leader_epoch,
                fetch_offset=log.log_end_offset, last_fetched_epoch=UNDEFINED_EPOCH,
                log_start_offset=log.log_start_offset, partition_max_bytes=FETCH_MAX_BYTES))
        request = fetch_request.FetchRequest(
            cluster_id=None, replica_id=self.broker.config.node_id,
            max_wait=datetime.timedelta(milliseconds=FETCH_WAIT_MAX_MS), min_bytes=1,
            max_bytes=FETCH_RESPONSE_MAX_BYTES, isolation_level=0, session_id=0,
            session_epoch=-1,
            topics=tuple(fetch_request.FetchTopic(topic=t, partitions=tuple(ps))
                         for t, ps in by_topic.items()),
            forgotten_topics_data=(), rack_id="")
        response = await conn.request(request, REQUEST_TIMEOUT_S)
        if self.broker.faults.replication_cut(self.broker.config.node_id, self.leader_id):
            return True  # cut while the fetch waited: its answer is lost on the way
        errors = 0
        answered = 0
        for topic in response.responses:
            for data in topic.partitions:
                answered += 1
                state = self.states.get((topic.topic, data.partition_index))
                if state is None or state.truncating:
                    continue
                if data.error_code == ErrorCode.offset_out_of_range:
                    await self._handle_out_of_range(conn, state)
                    errors += 1
                elif data.error_code != ErrorCode.none:
                    errors += 1
                else:
                    self._process(state, data)
        return answered > 0 and errors == answered

    async def _handle_out_of_range(self, conn: BrokerConnection, state: FetchState) -> None:
        """``AbstractFetcherThread#handleOutOfRangeError`` / ``fetchOffsetAndTruncate``: a log
        ending past the leader's is truncated to the leader's end; one ending before the
        leader's log start starts over there (``UnifiedLog#truncateFullyAndStartAt``)."""
        log = state.part.log
        earliest = await self._list_offset(conn, state, EARLIEST_TIMESTAMP)
        latest = await self._list_offset(conn, state, LATEST_TIMESTAMP)
        if earliest is None or latest is None:
            return
        if log.log_end_offset > latest:
            log.truncate_to(latest, self.broker.now_ms())
        elif log.log_end_offset < earliest:
            self.broker.warn(f"{log.name}: the leader's log starts at {earliest}, past this "
                             f"replica's end {log.log_end_offset}: starting over there")
            log.truncate_fully_and_start_at(earliest)

    async def _list_offset(self, conn: BrokerConnection, state: FetchState,
                           timestamp: int) -> int | None:
        tp = state.part.tp
        response = await conn.request(offsets_request.ListOffsetsRequest(
            replica_id=self.broker.config.node_id, isolation_level=0, topics=(
                offsets_request.ListOffsetsTopic(name=tp[0], partitions=(
                    offsets_request.ListOffsetsPartition(
                        partition_index=tp[1], current_leader_epoch=state.part.leader_epoch,
                        timestamp=timestamp),)),)), REQUEST_TIMEOUT_S)
        answer = response.topics[0].partitions[0]
        return answer.offset if answer.error_code == ErrorCode.none else None

    def _process(self, state: FetchState, data: Any) -> None:
        """``ReplicaFetcherThread#processPartitionData``."""
        log = state.part.log
        records = data.records or b""
        if records:
            try:
                appended = log.append_as_follower(bytes(records), self.broker.now_ms())
            except AppendError as exc:
                self.broker.warn(f"{log.name}: follower append refused: {exc.message}")
                state.truncating = True
                return
            if appended:
                self.broker.notify_append()
        if log.update_high_watermark(min(data.high_watermark, log.log_end_offset)):
            self.broker.replicas.notify_high_watermark()
        leader_start = min(data.log_start_offset, log.high_watermark)
        if leader_start > log.log_start_offset:
            # UnifiedLog#maybeIncrementLogStartOffset(LeaderOffsetIncremented): the segments
            # below it go with the next retention check, as on the leader.
            log.maybe_increment_log_start_offset(leader_start)
            log.truncate_epochs_from_start()
