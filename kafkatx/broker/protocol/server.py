"""The asyncio server: connections, framing, in-order request processing, dispatch, shutdown.

Mirrors what Kafka's ``SocketServer`` / ``RequestChannel`` / ``KafkaApis#handle`` guarantee a
client: 4-byte size-prefixed frames, requests of one connection handled one at a time and
answered in order, ApiVersions answered even for versions the broker does not know (an
UNSUPPORTED_VERSION reply in the v0 layout, ``ApiVersionsRequest#getErrorResponse``), no response
for acks=0 produce requests. A request Kafka cannot take closes the connection, as Kafka's
``Processor#parseRequestHeader`` and ``RequestContext#parseRequest`` do: an unknown api key, a
version the broker does not serve (ApiVersions excepted), a body that does not parse (truncated,
a length past the end of the frame), a frame size below 0 or above ``socket.request.max.bytes``.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import field
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode
from rich.console import Console
from rich.markup import escape

from kafkatx.broker.config.broker_config import BrokerConfig
from kafkatx.broker.context import ClusterView, RequestContext
from kafkatx.broker.faults import reject_response
from kafkatx.broker.kraft.producer_ids import ProducerIdManager
from kafkatx.broker.logdir.log_cleaner import CleanResult
from kafkatx.broker.logdir.log_manager import kafka_uuid, random_topic_id
from kafkatx.broker.logdir.work_steps import run_steps_in_slices
from kafkatx.broker.logs.log_loader import LoadProgress
from kafkatx.broker.logs.partition_log import fsync_files
from kafkatx.broker.protocol.coordinator_routing import (
    await_coordinator_replication,
    not_coordinator_response,
)
from kafkatx.broker.protocol.handlers.api_versions import (
    API_VERSIONS_KEY,
    unsupported_version_reply,
)
from kafkatx.broker.protocol.lifecycle import StopRequest, utc_stamp
from kafkatx.broker.wire import codec
from kafkatx.lazy_dataclass import dataclass

if TYPE_CHECKING:
    from kafkatx.broker.coordinators.add_partitions_manager import AddPartitionsToTxnManager
    from kafkatx.broker.coordinators.group_coordinator import GroupCoordinator
    from kafkatx.broker.coordinators.txn_coordinator import TransactionCoordinator
    from kafkatx.broker.faults import Faults
    from kafkatx.broker.logdir.log_cleaner import LogCleaner
    from kafkatx.broker.logdir.log_manager import LogManager
    from kafkatx.broker.protocol.handlers.registry import ApiHandler
    from kafkatx.broker.replication.replica_manager import ReplicaManager

_SIZE = struct.Struct(">i")
PROGRESS_AFTER_S = 2.0  # a load taking longer than this prints progress lines
Frame = Sequence[bytes | bytearray]  # a response frame as chunks (``encode_response_chunks``)


@dataclass(slots=True, eq=False)
class _Connection:
    peer: str
    writer: asyncio.StreamWriter
    task: asyncio.Task[None] | None = None
    requests: int = 0
    client_software: str | None = field(default=None)


async def _read_exactly(reader: asyncio.StreamReader, n: int, idle_s: float) -> bytes:
    """``n`` bytes; ``TimeoutError`` when none arrives for ``idle_s`` (connections.max.idle.ms:
    Kafka's idle timer restarts with every byte received)."""
    if n <= 65536:
        return await asyncio.wait_for(reader.readexactly(n), idle_s)
    out = bytearray()
    while len(out) < n:
        chunk = await asyncio.wait_for(reader.read(min(n - len(out), 1 << 20)), idle_s)
        if not chunk:
            raise asyncio.IncompleteReadError(bytes(out), n)
        out += chunk
    return bytes(out)


class RequestMemory:
    """``queued.max.request.bytes`` as Kafka's ``SimpleMemoryPool`` keeps it: request bytes
    taken by all connections together; a request that does not fit waits (its connection is
    not read, as Kafka mutes it) until enough is released, and one larger than the whole pool
    waits until the pool is empty."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._released = asyncio.Event()

    async def acquire(self, size: int) -> None:
        while self.used and self.used + size > self.limit:
            self._released.clear()
            await self._released.wait()
        self.used += size

    def release(self, size: int) -> None:
        self.used -= size
        self._released.set()


class Broker:
    """A broker over ``config.log_dir``: the single node of ``kafkatx serve``, or one of the
    brokers of a ``--brokers N`` cluster (``cluster``: the controller they share)."""

    # Its collaborators, given by the composition root (kafkatx.broker.composition).
    faults: Faults
    logs: LogManager
    cleaner: LogCleaner
    producer_ids: ProducerIdManager
    replicas: ReplicaManager
    groups: GroupCoordinator
    transactions: TransactionCoordinator
    txn_verifier: AddPartitionsToTxnManager
    handlers: dict[int, ApiHandler]

    def __init__(self, config: BrokerConfig, *, console: Console | None = None,
                 cluster: ClusterView | None = None) -> None:
        self.config = config
        self.cluster = cluster
        self.console = console or Console(stderr=True, highlight=False)
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[_Connection] = set()
        self._appended = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self.port = config.port
        self.stopping = asyncio.Event()
        self.request_memory = RequestMemory(config.queued_max_request_bytes)

    @property
    def advertised_host(self) -> str:
        """The host clients are told to connect to (a wildcard bind advertises localhost)."""
        return "localhost" if self.config.host in ("", "0.0.0.0", "::") else self.config.host

    # -- logging -----------------------------------------------------------------------------

    def log(self, message: str, *, style: str | None = None) -> None:
        stamp = utc_stamp()
        who = f"[{self.config.node_id}] " if self.cluster is not None else ""
        self.console.print(f"[dim]{stamp}[/dim] {escape(who + message)}", style=style)

    def warn(self, message: str) -> None:
        self.log(message, style="yellow")

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    # -- appends and waiting -------------------------------------------------------------------

    def notify_append(self) -> None:
        """Wake every fetch waiting for data (``DelayedFetch`` completion on append)."""
        self._appended.set()
        self._appended = asyncio.Event()

    async def wait_for_append(self, timeout_s: float) -> bool:
        event = self._appended
        try:
            await asyncio.wait_for(event.wait(), timeout_s)
        except TimeoutError:
            return False
        return True

    # -- lifecycle ---------------------------------------------------------------------------

    def load(self, stop: StopRequest | None = None) -> None:
        """Open the log dir and load the coordinators (called by ``start``; needs a running
        event loop for the group coordinator's timers). A stop requested meanwhile ends the
        load at the next partition or recovered segment with ``LoadInterrupted``."""
        started = time.monotonic()
        self.log(f"loading log dir {self.config.log_dir}")
        progress = LoadProgress(report=self._load_progress_reporter(started),
                                should_stop=lambda: stop is not None and stop.requested)
        self.logs.start(progress)
        logs_done = time.monotonic()
        for problem in self.logs.load_problems:
            self.warn(problem)
        controller = self.logs.controller
        assert controller is not None
        self.producer_ids = ProducerIdManager(
            self.logs.max_producer_id(), next_block=controller.image.next_producer_id,
            on_block=controller.allocate_producer_ids)
        # Groups first: completing a transaction left in Prepare* at load time materialises
        # the pending offset commits the group coordinator has just loaded.
        self.groups.load(progress.step)
        groups_done = time.monotonic()
        self.transactions.load(progress.step)
        done = time.monotonic()
        how = ("after a clean shutdown" if self.logs.previous_shutdown_clean else
               f"after an unclean shutdown: {progress.segments_recovered} segments "
               f"({progress.bytes_recovered / 1e6:.1f} MB) recovered")
        self.log(f"loaded {progress.partitions_loaded} partitions in {done - started:.2f} s "
                 f"{how}")
        if self.config.verbose:
            self.log(f"start-up phases: logs {logs_done - started:.3f} s, group coordinator "
                     f"{groups_done - logs_done:.3f} s ({len(self.groups.groups)} groups), "
                     f"transaction coordinator {done - groups_done:.3f} s "
                     f"({len(self.transactions.cache)} transactional ids)", style="dim")

    def _load_progress_reporter(self, started: float) -> Callable[[LoadProgress], None]:
        """A start-up progress line once loading has taken ``PROGRESS_AFTER_S``, then at most
        one a second (``LogManager``'s "Recovering segment ... X% done" lines)."""
        last = [started]

        def report(p: LoadProgress) -> None:
            now = time.monotonic()
            if now - started < PROGRESS_AFTER_S or now - last[0] < 1.0:
                return
            last[0] = now
            self.log(f"loading: {p.partitions_loaded}/{p.partitions_total} partitions, "
                     f"{p.segments_recovered} segments ({p.bytes_recovered / 1e6:.1f} MB) "
                     "recovered")
        return report

    def close(self) -> None:
        """Stop the coordinators' timers and close the log dir cleanly (called by ``stop``)."""
        self.groups.shutdown()
        self.logs.shutdown()

    def load_logs(self) -> None:
        """A cluster broker's load: its log dir only; the coordinators load the partitions it
        comes to lead (``Cluster`` gives it its roles)."""
        assert self.cluster is not None
        self.logs.replicated = True
        self.logs.cluster_id_for_new = self.cluster.cluster_id
        self.log(f"loading log dir {self.config.log_dir}")
        self.logs.start(LoadProgress())
        for problem in self.logs.load_problems:
            self.warn(problem)

    async def listen(self) -> None:
        self._server = await asyncio.start_server(self._accept, self.config.host,
                                                  self.config.port)
        sock = self._server.sockets[0]
        self.port = sock.getsockname()[1]
        assert self.logs.controller is not None
        # BrokerLifecycleManager: the broker registers once it listens; its epoch is the offset
        # of its RegisterBrokerRecord.
        self.logs.broker_epoch = self.logs.controller.register_broker(
            kafka_uuid(random_topic_id()), self.advertised_host, self.port)

    def start_tasks(self) -> None:
        self._tasks.append(asyncio.create_task(self._checkpoint_loop()))
        self._tasks.append(asyncio.create_task(self._transaction_loop()))
        self._tasks.append(asyncio.create_task(self._retention_loop()))
        self._tasks.append(asyncio.create_task(self._cleaner_loop()))
        if self.cluster is not None:
            self._tasks.append(asyncio.create_task(self.replicas.isr_loop()))

    async def start(self, stop: StopRequest | None = None) -> None:
        self.load(stop)
        await self.listen()
        self.start_tasks()

    async def _transaction_loop(self) -> None:
        """``TransactionCoordinator#startup``'s schedules: abort timed-out transactions every
        ``transaction.abort.timed.out.transaction.cleanup.interval.ms``, expire idle
        transactional ids every ``transaction.remove.expired.transaction.cleanup.interval.ms``."""
        abort_every = self.config.transaction_abort_interval_ms / 1000
        expire_every = self.config.remove_expired_interval_ms / 1000
        last_expire = time.monotonic()
        while True:
            await asyncio.sleep(abort_every)
            try:
                self.transactions.abort_timed_out_transactions()
                if time.monotonic() - last_expire >= expire_every:
                    self.transactions.remove_expired_transactional_ids()
                    last_expire = time.monotonic()
            except Exception as exc:
                self.warn(f"transaction coordinator task failed: {type(exc).__name__}: {exc}")

    async def _retention_loop(self) -> None:
        """``LogManager#startup``'s kafka-log-retention task: ``cleanupLogs`` every
        ``log.retention.check.interval.ms`` (the first run after one interval, where Kafka waits
        ``log.initial.task.delay.ms``)."""
        every = self.config.retention_check_interval_ms / 1000
        while True:
            await asyncio.sleep(every)
            try:
                deleted = await run_steps_in_slices(self.logs.cleanup_logs_steps(self.now_ms()))
                if deleted:
                    self.log(f"retention deleted {deleted} log segment(s)")
            except OSError as exc:
                self.warn(f"retention check failed: {exc}")

    async def _cleaner_loop(self) -> None:
        """``LogCleaner.CleanerThread#doWork``: clean the filthiest compacted log, again at once
        while there was one, else after ``log.cleaner.backoff.ms``."""
        backoff = self.config.cleaner_backoff_ms / 1000
        idle = False
        while True:
            cleaned = None
            started = time.monotonic()
            try:
                result = await run_steps_in_slices(
                    self.cleaner.clean_filthiest_steps(self.now_ms()))
                cleaned = result if isinstance(result, CleanResult) else None
            except OSError as exc:
                self.warn(f"log cleaner failed: {exc}")
            if self.cleaner.aborted:
                self.warn(f"log cleaner: {self.cleaner.aborted}; the clean is abandoned")
            if cleaned is not None:
                self.log(f"cleaned {cleaned.topic}-{cleaned.partition} offsets "
                         f"[{cleaned.first_dirty_offset}, {cleaned.end_offset}): "
                         f"{cleaned.segments_before} -> {cleaned.segments_after} segments "
                         f"in {time.monotonic() - started:.2f} s")
                await asyncio.sleep(0)
                idle = False
            else:
                if not idle and self.config.verbose:
                    self.log(f"log cleaner: nothing to clean; next round in "
                             f"{self.config.cleaner_backoff_ms} ms")
                idle = True
                await asyncio.sleep(backoff)

    async def _checkpoint_loop(self) -> None:
        """``ReplicaManager``'s high-watermark checkpoint, the flush of rolled segments
        (``UnifiedLog#roll`` schedules it; it advances the recovery point) and
        ``LogManager``'s recovery-point and log-start-offset checkpoints."""
        hw_every = self.config.hw_checkpoint_interval_s
        offsets_every = self.config.offset_checkpoint_interval_s
        last_offsets = time.monotonic()
        while True:
            await asyncio.sleep(hw_every)
            try:
                work, files = self.logs.flush_rolled()
                if files:
                    await asyncio.to_thread(fsync_files, files)
                for log, offset in work:
                    log.mark_flushed(offset)
                self.logs.checkpoint_high_watermarks()
                if time.monotonic() - last_offsets >= offsets_every:
                    self.logs.checkpoint_recovery_points()
                    self.logs.checkpoint_log_start_offsets()
                    last_offsets = time.monotonic()
            except OSError as exc:
                self.warn(f"checkpoint failed: {exc}")

    async def stop(self) -> None:
        """Stop accepting, close connections, then write snapshots and checkpoints."""
        await self._stop_serving()
        self.close()

    async def kill(self) -> None:
        """A cluster broker killed: it stops serving and fetching at once and writes nothing
        more (no snapshot, index or checkpoint, no clean-shutdown marker), as after SIGKILL;
        the next start recovers its log dir."""
        await self._stop_serving()
        self.groups.shutdown()
        for log in self.logs.all_logs():
            log.release()

    async def _stop_serving(self) -> None:
        self.stopping.set()
        await self.replicas.shutdown()
        await self.txn_verifier.close()
        await self.transactions.close()
        if self._server is not None:
            self._server.close()
        for task in self._tasks:
            task.cancel()
        for conn in list(self._connections):
            conn.writer.close()
            if conn.task is not None:
                conn.task.cancel()
        tasks = [c.task for c in self._connections if c.task is not None] + self._tasks
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2)

    # -- connections -------------------------------------------------------------------------

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peername = writer.get_extra_info("peername")
        peer = f"{peername[0]}:{peername[1]}" if peername else "?"
        conn = _Connection(peer, writer, asyncio.current_task())
        self._connections.add(conn)
        self.log(f"connection from {peer}")
        reason = "closed by client"
        try:
            reason = await self._serve(conn, reader)
        except asyncio.CancelledError:
            reason = "closed at shutdown"
        except (ConnectionError, asyncio.IncompleteReadError):
            reason = "closed by client"
        except Exception as exc:
            reason = f"closed after an internal error: {type(exc).__name__}: {exc}"
            if self.config.verbose:
                self.console.print(escape(traceback.format_exc()))
        finally:
            self._connections.discard(conn)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
            self.log(f"{peer} {reason} after {conn.requests} requests")

    async def _serve(self, conn: _Connection, reader: asyncio.StreamReader) -> str:
        idle_s = self.config.connections_max_idle_ms / 1000
        while True:
            try:
                size_bytes = await _read_exactly(reader, 4, idle_s)
            except asyncio.IncompleteReadError:
                return "closed by client"
            except TimeoutError:
                return f"closed: idle for {self.config.connections_max_idle_ms} ms"
            size = _SIZE.unpack(size_bytes)[0]
            if size < 0 or size > codec.MAX_FRAME_BYTES:
                self.warn(f"{conn.peer}: request size {size} is invalid; closing")
                return "closed: invalid frame size"
            # Kafka's MemoryPool: the connection is not read until the request fits.
            await self.request_memory.acquire(size)
            try:
                try:
                    payload = await _read_exactly(reader, size, idle_s)
                except TimeoutError:
                    return (f"closed: no byte of the request for "
                            f"{self.config.connections_max_idle_ms} ms")
                conn.requests += 1
                frame, close_reason = await self._handle_frame(conn, payload)
                del payload
                if frame:
                    for chunk in frame:
                        conn.writer.write(chunk)
                    await conn.writer.drain()
            finally:
                self.request_memory.release(size)
            if close_reason:
                return close_reason

    async def _handle_frame(self, conn: _Connection, payload: bytes) -> tuple[Frame | None,
                                                                               str | None]:
        """(response frame as chunks to write in order, or None; reason to close the connection
        or None)."""
        try:
            head = codec.peek_header(payload)
        except codec.RequestDecodeError as exc:
            self.warn(f"{conn.peer}: {exc}; closing")
            return None, "closed: unreadable request header"
        key, version, corr = head.api_key, head.api_version, head.correlation_id
        handler = self.handlers.get(key)
        if key == API_VERSIONS_KEY and (handler is None or not handler.supports(version)):
            self._verbose(conn, f"ApiVersions v{version} unsupported: v0 error reply")
            return [unsupported_version_reply(corr, self.handlers)], None
        request_cls = codec.request_type(key, version)
        if request_cls is None:
            self.warn(f"{conn.peer}: api key {key} version {version} is unknown; closing")
            return None, f"closed: unknown api key {key} v{version}"
        response_cls = codec.response_type(key, version)
        if handler is None or not handler.supports(version):
            # Processor#parseRequestHeader: UnsupportedVersionException (or
            # InvalidRequestException for an API not enabled), and the connection is closed.
            self.warn(f"{conn.peer}: {request_cls.__name__} v{version} is not supported; "
                      "closing")
            return None, f"closed: {request_cls.__name__} v{version} is not supported"
        try:
            header, body = codec.parse_request(payload, request_cls)
        except codec.RequestDecodeError as exc:
            # RequestContext#parseRequest: InvalidRequestException, the connection is closed.
            self.warn(f"{conn.peer}: cannot parse {request_cls.__name__} v{version}: {exc}; "
                      "closing")
            return None, f"closed: unparsable {request_cls.__name__} v{version}"
        ctx = RequestContext(key, version, corr, getattr(header, "client_id", None),
                             response_cls, conn.peer)
        if self.config.verbose:
            self._verbose(conn, f"{request_cls.__name__} v{version} corr={corr} "
                                f"client={ctx.client_id}")
        rejected = self.faults.rejection(key)
        if rejected is not None:
            self._verbose(conn, f"fault injected: {request_cls.__name__} answered with "
                                f"{rejected.name.upper()}")
            if key == 0 and getattr(body, "acks", 1) == 0:
                # Kafka closes the connection of an acks=0 produce that fails.
                return None, "closed: fault injected on an acks=0 produce"
            return codec.encode_response_chunks(corr, reject_response(ctx, body, rejected)), None
        refused = not_coordinator_response(self, ctx, body)
        if refused is not None:
            self._verbose(conn, f"{request_cls.__name__}: NOT_COORDINATOR")
            return codec.encode_response_chunks(corr, refused), None
        try:
            response = await handler.handle(self, ctx, body)
            unreplicated = await await_coordinator_replication(self, ctx, body)
            if unreplicated != ErrorCode.none:
                response = reject_response(ctx, body, unreplicated)
        except asyncio.CancelledError:
            raise
        except codec.CloseConnection as exc:
            self.warn(f"{conn.peer}: {exc}; closing")
            return None, f"closed: {exc}"
        except Exception as exc:
            self.warn(f"{conn.peer}: {request_cls.__name__} v{version} failed: "
                      f"{type(exc).__name__}: {exc}")
            if self.config.verbose:
                self.console.print(escape(traceback.format_exc()))
            response = codec.error_response(response_cls, ErrorCode.unknown_server_error)
        if response is None:
            return None, None
        return codec.encode_response_chunks(corr, response), None

    def _verbose(self, conn: _Connection, message: str) -> None:
        if self.config.verbose:
            self.log(f"{conn.peer} {message}", style="dim")
