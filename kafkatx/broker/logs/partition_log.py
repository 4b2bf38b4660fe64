"""One partition of the embedded broker: append as leader, read, offsets, producer state, files.

Mirrors Kafka's ``UnifiedLog`` (``appendAsLeader`` / ``append`` / ``analyzeAndValidateRecords`` /
``analyzeAndValidateProducerState`` / ``read`` / ``fetchOffsetByTimestamp`` /
``lastStableOffset`` / ``maybeIncrementLogStartOffset`` / ``deleteOldSegments``), the
``LogValidator`` checks of a v2 batch appended in place, and
``LocalLog#collectAbortedTransactions`` through :mod:`kafkatx.semantics.read_committed`. Batches
are kept as the bytes the producer sent: only the base offset, the partition leader epoch and,
for LogAppendTime topics, the max timestamp (with a new CRC) are patched, exactly the fields
Kafka's in-place path rewrites. A single node is its own ISR, so the high watermark is the log
end offset after every append. Producer state, duplicate detection and the LSO come from
:mod:`kafkatx.semantics.producer_state`; files are written through
:class:`kafkatx.storage.segment_writer.PartitionWriter` and the ``kafkatx.formats`` builders.
"""

from __future__ import annotations

import bisect
import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from kio.schema.errors import ErrorCode

from kafkatx.broker.config.broker_config import DEFAULT_SEGMENT_MS
from kafkatx.broker.log_loader import (
    LoadedLog,
    LoadProgress,
    LogLoader,
    LogLoadError,
    replay,
    snapshot_offsets,
)
from kafkatx.broker.logs.batch_header import (
    BatchFrameError,
    BatchHeader,
    crc_valid,
    read_header,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
    split_batches,
)
from kafkatx.broker.logs.files import atomic_write
from kafkatx.broker.logs.log_segment import BatchTable, LogSegment, modified_ms
from kafkatx.errors import FormatError
from kafkatx.formats.checkpoints import (
    LEADER_EPOCH_CHECKPOINT_FILE,
    EpochEntry,
    build_leader_epoch_checkpoint,
    read_leader_epoch_checkpoint,
)
from kafkatx.formats.producer_snapshot import build_producer_snapshot, snapshot_file_name
from kafkatx.formats.record_batch import (
    ControlType,
    Record,
    RecordBatch,
    build_control_batch,
    iter_key_values,
    iter_records,
    parse_batch,
    parse_header,
)
from kafkatx.formats.segment_scan import scan_segment
from kafkatx.formats.txn_index import AbortedTxnEntry, build_txn_index
from kafkatx.semantics.cleaner_selection import segment_range
from kafkatx.semantics.leader_epochs import EpochCache
from kafkatx.semantics.log_retention import (
    DeletionReason,
    deletable_count,
    predicate_for,
    retention_rules,
)
from kafkatx.semantics.producer_state import (
    AppendOrigin,
    CompletedTxn,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    ProducerStateError,
    ProducerStateManager,
    TransactionCoordinatorFencedError,
    last_stable_offset,
)
from kafkatx.semantics.read_committed import (
    AbortedTransaction,
    IsolationLevel,
    collect_aborted_entries,
    collect_aborted_transactions,
    max_fetch_offset,
)
from kafkatx.storage.segment_writer import PartitionWriter, segment_name

EARLIEST_TIMESTAMP = -2  # ListOffsetsRequest.EARLIEST_TIMESTAMP
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3
NO_TIMESTAMP = -1
HIGH_WATERMARK = -1  # DeleteRecordsRequest.HIGH_WATERMARK
_CACHED_TABLES = 8

_PRODUCER_STATE_ERRORS: dict[type[ProducerStateError], ErrorCode] = {
    OutOfOrderSequenceError: ErrorCode.out_of_order_sequence_number,
    InvalidProducerEpochError: ErrorCode.invalid_producer_epoch,
    InvalidTxnStateError: ErrorCode.invalid_txn_state,
    TransactionCoordinatorFencedError: ErrorCode.transaction_coordinator_fenced,
}


__all__ = ["AppendError", "LogConfig", "LogLoadError", "PartitionLog"]


class AppendError(Exception):
    """An append the leader refuses, with the Kafka error code its exception maps to;
    ``record_errors`` (batch index, message) for a ``RecordValidationException``, which Kafka
    answers with the partition's log start offset (``ReplicaManager#appendToLocalLog``)."""

    def __init__(self, error: ErrorCode, message: str, *,
                 record_errors: tuple[tuple[int, str | None], ...] = (),
                 log_start_offset: int = -1) -> None:
        super().__init__(message)
        self.error = error
        self.message = message
        self.record_errors = record_errors
        self.log_start_offset = log_start_offset


@dataclass(frozen=True, slots=True, kw_only=True)
class LogConfig:
    """The topic configs this log acts on (``LogConfig``)."""

    segment_bytes: int
    max_message_bytes: int
    log_append_time: bool = False  # message.timestamp.type=LogAppendTime
    segment_ms: int = DEFAULT_SEGMENT_MS  # segment.ms (log.roll.ms)
    delete: bool = True  # cleanup.policy includes "delete" (LogConfig#delete)
    compact: bool = False  # cleanup.policy includes "compact" (LogConfig#compact)
    retention_ms: int = 604_800_000  # retention.ms (-1: no time limit)
    retention_bytes: int = -1  # retention.bytes (-1: no size limit)
    delete_retention_ms: int = 86_400_000  # delete.retention.ms (tombstones, markers)
    min_cleanable_dirty_ratio: float = 0.5  # min.cleanable.dirty.ratio
    min_compaction_lag_ms: int = 0  # min.compaction.lag.ms
    max_compaction_lag_ms: int = 2**63 - 1  # max.compaction.lag.ms


@dataclass(frozen=True, slots=True, kw_only=True)
class AppendResult:
    """``LogAppendInfo`` as the produce response needs it."""

    first_offset: int
    last_offset: int
    log_append_time: int
    log_start_offset: int
    duplicate: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadResult:
    """``LogReadInfo``: bytes (possibly ending in a partial batch, as Kafka's slice can) and
    offsets; ``aborted_transactions`` is None unless the read was read_committed;
    ``first_entry_incomplete`` when the first batch did not fit (``FetchDataInfo``)."""

    records: bytes
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted_transactions: list[AbortedTransaction] | None
    first_entry_incomplete: bool = False


@dataclass(frozen=True, slots=True)
class OffsetAndTimestamp:
    offset: int
    timestamp: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class StoredBatch:
    """One batch as stored: its header (position in ``data``) and its bytes."""

    header: BatchHeader
    data: bytes


class PartitionLog:
    """A partition's log as its (only) leader sees it."""

    def __init__(
        self,
        topic: str,
        partition: int,
        directory: Path,
        config: LogConfig,
        *,
        leader_epoch: int = 0,
        max_transaction_timeout_ms: int = 900_000,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.dir = directory
        self.config = config
        self.leader_epoch = leader_epoch
        self.producer_state = ProducerStateManager(
            max_transaction_timeout_ms=max_transaction_timeout_ms)
        self.writer = PartitionWriter(directory, segment_bytes=config.segment_bytes,
                                      keep_open=True)
        self.segments: list[LogSegment] = []
        self._bases: list[int] = []  # the segments' base offsets, for bisect
        self.log_start_offset = 0
        self.log_end_offset = 0
        self.high_watermark = 0
        # LogLoader's recovery point, then the base of the newest segment known to be flushed
        # (UnifiedLog#flush advances it; a crash recovers from here).
        self.recovery_point = 0
        self._tables: list[LogSegment] = []  # segments whose batch tables are cached, oldest first
        self.loaded: LoadedLog | None = None
        self.load_problems: list[str] = []
        # One replica (kafkatx serve's single node) is its whole ISR: the high watermark follows
        # the log end offset. A replicated partition's leader moves it from its followers' fetch
        # offsets and a follower takes the leader's (kafkatx.broker.replication.replica_manager).
        self.high_watermark_follows_log_end = True
        self.epochs: EpochCache | None = None  # LeaderEpochFileCache, replicated partitions only
        self.on_append: Callable[[], None] | None = None  # a replicated leader's HW check

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    def update_config(self, config: LogConfig) -> None:
        """``UnifiedLog#updateConfig``: the next append rolls, sizes and validates by it."""
        self.config = config
        self.writer.segment_bytes = config.segment_bytes

    # -- opening -----------------------------------------------------------------------------

    def open(self, log_start_offset_checkpoint: int = 0, *, recovery_point: int = 0,
             had_clean_shutdown: bool = False, now_ms: int | None = None,
             progress: LoadProgress | None = None) -> None:
        """Load the directory as ``LogLoader#load`` does (see :mod:`kafkatx.broker.log_loader`),
        then start a new active segment at the log end offset. Unlike Kafka, which appends to the
        last segment, appends continue in a fresh segment.

        Without a clean shutdown and with recovery point 0 (the defaults) every segment is
        recovered. The log start offset is ``max(checkpoint, first segment's base offset)``.
        """
        loader = LogLoader(self.dir, self.producer_state, had_clean_shutdown=had_clean_shutdown,
                           recovery_point=recovery_point, now_ms=now_ms, progress=progress)
        loaded = loader.load()
        self.loaded = loaded
        self.load_problems.extend(loaded.problems)
        self.segments = loaded.segments
        if self.segments and self.segments[-1].size == 0:
            self.segments.pop()
        self._bases = [seg.base_offset for seg in self.segments]
        self.log_end_offset = loaded.log_end_offset
        self.writer.log_end_offset = self.log_end_offset
        self.recovery_point = loaded.recovery_point
        self.high_watermark = self.log_end_offset
        psm = self.producer_state
        psm.update_map_end_offset(self.log_end_offset)
        psm.last_snap_offset = max((snapshot_offsets(self.dir) or [0])[-1], 0)
        psm.on_high_watermark_updated(self.high_watermark)
        self._roll(self.log_end_offset)
        first_base = self.segments[0].base_offset
        if log_start_offset_checkpoint > self.log_end_offset:
            # Kafka deletes every segment then (LogLoader#deleteSegmentsIfLogStartGreaterThan-
            # LogEnd); a forensic tool keeps the data and ignores the checkpoint instead.
            self.load_problems.append(
                f"{self.name}: log start offset checkpoint {log_start_offset_checkpoint} is past "
                f"the log end offset {self.log_end_offset}; ignored")
            log_start_offset_checkpoint = 0
        self.log_start_offset = max(log_start_offset_checkpoint, first_base)

    # -- appends -----------------------------------------------------------------------------

    def append_as_leader(self, records: bytes, now_ms: int, *,
                         origin: AppendOrigin = AppendOrigin.CLIENT,
                         batches: tuple[list[BatchHeader], int] | None = None) -> AppendResult:
        """``UnifiedLog#appendAsLeader`` for a client produce (origin CLIENT), a coordinator's
        records (origin COORDINATOR: no duplicate detection and no sequence checks, as
        ``UnifiedLog#analyzeAndValidateProducerState`` and ``ProducerAppendInfo`` skip them) or
        the KRaft leader's metadata batches (origin RAFT_LEADER: control batches allowed).
        ``batches`` is ``split_batches(records)`` when the caller has already split them."""
        if batches is None:
            try:
                batches = split_batches(records)
            except BatchFrameError as exc:
                raise AppendError(ErrorCode.corrupt_message, str(exc)) from None
        headers, valid = batches
        if not headers:
            raise AppendError(ErrorCode.invalid_record, "Record batch has no batches at all")
        if len(headers) > 1:
            raise AppendError(ErrorCode.invalid_record,
                              "Compressed outer record has more than one batch")
        h = headers[0]
        self._analyze_and_validate(records, h, origin)
        # The stored batch is the client's with the fields patched below; its header is not
        # read again: only the base offset (so the last offset) and, for LogAppendTime, the
        # max timestamp differ from ``h``.
        offset = self.log_end_offset
        last_offset = offset + h.last_offset_delta
        append_time = now_ms if self.config.log_append_time else NO_TIMESTAMP
        max_timestamp = now_ms if self.config.log_append_time else h.max_timestamp
        if h.size > self.config.segment_bytes:
            raise AppendError(ErrorCode.record_list_too_large,
                              f"Message batch size is {h.size} bytes in append to partition "
                              f"{self.name}, which exceeds the maximum configured segment size "
                              f"of {self.config.segment_bytes}.")
        self._maybe_roll(h.size, max_timestamp, now_ms)
        if h.has_producer_id:
            entry = self.producer_state.last_entry(h.producer_id)
            if entry is not None and origin == AppendOrigin.CLIENT:
                dup = entry.find_duplicate_batch(h.producer_epoch, h.base_sequence,
                                                 h.last_sequence)
                if dup is not None:
                    # UnifiedLog#append sets the log append time of a duplicate to the original
                    # batch's timestamp, whatever the topic's timestamp type.
                    return AppendResult(first_offset=dup.first_offset,
                                        last_offset=dup.last_offset,
                                        log_append_time=dup.timestamp,
                                        log_start_offset=self.log_start_offset, duplicate=True)
            info = self.producer_state.prepare_update(h.producer_id, origin)
            try:
                info.append_data_batch(h.producer_epoch, h.base_sequence, h.last_sequence,
                                       max_timestamp, offset, last_offset, h.is_transactional)
            except ProducerStateError as exc:
                code = _PRODUCER_STATE_ERRORS.get(type(exc), ErrorCode.unknown_server_error)
                raise AppendError(code, str(exc)) from None
        else:
            info = None
        buf = bytearray(records) if valid == len(records) else bytearray(records[:valid])
        set_base_offset(buf, 0, offset)
        set_partition_leader_epoch(buf, 0, self.leader_epoch)
        if self.config.log_append_time:
            set_log_append_time(buf, h, now_ms)
        self._write(buf, offset, last_offset, max_timestamp)
        if info is not None:
            self.producer_state.update(info)
        self._after_append(last_offset)
        return AppendResult(first_offset=offset, last_offset=last_offset,
                            log_append_time=append_time, log_start_offset=self.log_start_offset)

    def append_end_txn_marker(
        self,
        *,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        commit: bool,
        now_ms: int,
        transaction_version: int = 0,
    ) -> int:
        """``UnifiedLog#appendAsLeader`` of a COMMIT/ABORT marker (origin COORDINATOR);
        ``.txnindex`` gets an entry when the marker aborts an open transaction. Returns the
        marker's offset. Raises ``AppendError`` as Kafka's WriteTxnMarkers path would."""
        offset = self.log_end_offset
        batch = build_control_batch(
            base_offset=offset, producer_id=producer_id, producer_epoch=producer_epoch,
            control_type=int(ControlType.COMMIT if commit else ControlType.ABORT),
            timestamp=now_ms, coordinator_epoch=coordinator_epoch,
            partition_leader_epoch=self.leader_epoch)
        h = read_header(batch, 0)
        self._maybe_roll(h.size, now_ms, now_ms)
        info = self.producer_state.prepare_update(producer_id, AppendOrigin.COORDINATOR)
        try:
            completed = info.append_end_txn_marker(
                is_commit=commit, coordinator_epoch=coordinator_epoch,
                producer_epoch=producer_epoch, offset=offset, timestamp=now_ms,
                transaction_version=transaction_version)
        except ProducerStateError as exc:
            code = _PRODUCER_STATE_ERRORS.get(type(exc), ErrorCode.unknown_server_error)
            raise AppendError(code, str(exc)) from None
        self._write(batch, h.base_offset, h.last_offset, h.max_timestamp)
        self.producer_state.update(info)
        if completed is not None:
            lso = self.producer_state.last_stable_offset(completed)
            if completed.is_aborted:
                self._append_txn_index(completed, lso)
            self.producer_state.complete_txn(completed)
        self._after_append(offset)
        return offset

    def _analyze_and_validate(self, records: bytes, h: BatchHeader,
                              origin: AppendOrigin = AppendOrigin.CLIENT) -> None:
        """``UnifiedLog#analyzeAndValidateRecords`` + ``LogValidator#validateBatch``."""
        if h.base_offset != 0:
            raise AppendError(ErrorCode.invalid_record,
                              f"The baseOffset of the record batch in the append to {self.name} "
                              f"should be 0, but it is {h.base_offset}")
        if h.size > self.config.max_message_bytes:
            raise AppendError(ErrorCode.message_too_large,
                              f"The record batch size in the append to {self.name} is {h.size} "
                              "bytes which exceeds the maximum configured value of "
                              f"{self.config.max_message_bytes}.")
        if not crc_valid(records, h):
            raise AppendError(ErrorCode.corrupt_message,
                              f"Record is corrupt (stored crc = {h.crc}) in topic partition "
                              f"{self.name}.")
        if h.compression_id > 4:
            raise AppendError(ErrorCode.corrupt_message,
                              f"Unknown compression type id: {h.compression_id}")
        count_from_offsets = h.last_offset_delta + 1
        if count_from_offsets <= 0:
            raise AppendError(ErrorCode.invalid_record,
                              f"Batch has an invalid offset range: [0, {h.last_offset_delta}] in "
                              f"topic partition {self.name}")
        if h.records_count <= 0:
            raise AppendError(ErrorCode.invalid_record,
                              f"Invalid reported count for record batch: {h.records_count} in "
                              f"topic partition {self.name}")
        if count_from_offsets != h.records_count:
            raise AppendError(ErrorCode.invalid_record,
                              f"Inconsistent batch offset range [0, {h.last_offset_delta}] and "
                              f"count of records {h.records_count} in topic partition "
                              f"{self.name}")
        if h.is_control and origin == AppendOrigin.CLIENT:
            raise AppendError(ErrorCode.invalid_record,
                              "Clients are not allowed to write control records in topic "
                              f"partition {self.name}")
        if h.has_producer_id and h.base_sequence < 0:
            raise AppendError(ErrorCode.invalid_record,
                              f"Invalid sequence number {h.base_sequence} in record batch with "
                              f"producerId {h.producer_id} in topic partition {self.name}")
        if self.config.compact:
            self._validate_keys(records)

    def _validate_keys(self, records: bytes) -> None:
        """``LogValidator#validateKey`` + ``#processRecordErrors`` for a compacted topic: every
        record needs a key; the batch is refused with INVALID_RECORD and one ``RecordError`` per
        keyless record (its index in the batch). Kafka 3.5+ wording (3.0-3.4 ended the message
        with a period)."""
        try:
            keyless = tuple(i for i, record in enumerate(iter_records(records, 0,
                                                                      parse_header(records, 0)))
                            if record.key is None)
        except FormatError as exc:
            raise AppendError(ErrorCode.corrupt_message,
                              f"Record is corrupt in topic partition {self.name}: {exc}") from None
        if not keyless:
            return
        message = ("Compacted topic cannot accept message without key in topic partition "
                   f"{self.name}")
        errors = tuple((i, message) for i in keyless)
        shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
        raise AppendError(ErrorCode.invalid_record,
                          f"One or more records have been rejected due to {len(errors)} record "
                          f"errors in total, and only showing the first three errors at most: "
                          f"[{shown}]", record_errors=errors,
                          log_start_offset=self.log_start_offset)

    def _maybe_roll(self, size: int, max_timestamp: int, now_ms: int) -> None:
        """``UnifiedLog#maybeRoll`` / ``LogSegment#shouldRoll``: a segment that would outgrow
        segment.bytes, or a non-empty one older than segment.ms (measured from its first batch's
        max timestamp to this batch's, or on the clock when its first batch has none), is closed
        and a new one started at the log end offset, after a producer snapshot named by that
        offset (``roll``)."""
        active = self.segments[-1]
        if active.size > 0 and (active.size + size > self.config.segment_bytes
                                or self._waited_for_roll(active, max_timestamp, now_ms)
                                > self.config.segment_ms):
            self._roll(self.log_end_offset)
            active = self.segments[-1]
        if active.first_batch_timestamp is None:
            active.first_batch_timestamp = max_timestamp

    @staticmethod
    def _waited_for_roll(segment: LogSegment, max_timestamp: int, now_ms: int) -> int:
        """``LogSegment#timeWaitedForRoll``."""
        first = segment.first_batch_timestamp
        if first is not None and first >= 0:
            return max_timestamp - first
        return now_ms - segment.created_ms

    def roll(self) -> None:
        """``UnifiedLog#roll``: a new active segment at the log end offset."""
        self._roll(self.log_end_offset)

    def _roll(self, base_offset: int) -> None:
        if self.segments and self.segments[-1].base_offset == base_offset:
            return
        self.writer.roll(base_offset)
        self.segments.append(LogSegment(base_offset, self.dir / segment_name(base_offset, ".log"),
                                        table=BatchTable()))
        self._bases.append(base_offset)
        self.producer_state.update_map_end_offset(base_offset)
        self.take_snapshot()

    def _write(self, batch: bytes | bytearray, base_offset: int, last_offset: int,
               max_timestamp: int) -> None:
        seg = self.segments[-1]
        position = self.writer.append(batch)
        seg.batches().add(base_offset, last_offset, position, len(batch), max_timestamp)
        seg.size = position + len(batch)
        if max_timestamp > seg.max_timestamp_so_far:
            seg.max_timestamp_so_far = max_timestamp
            seg.offset_of_max_timestamp_so_far = last_offset

    def _after_append(self, last_offset: int) -> None:
        self.log_end_offset = last_offset + 1
        self.producer_state.update_map_end_offset(self.log_end_offset)
        if self.high_watermark_follows_log_end:
            # The only replica is the whole ISR: the high watermark follows the log end offset.
            self.high_watermark = self.log_end_offset
            self.producer_state.on_high_watermark_updated(self.high_watermark)
        elif self.on_append is not None:
            self.on_append()

    # -- replication (leader epochs, follower appends, truncation) ------------------------------

    def load_epoch_cache(self) -> EpochCache:
        """``LeaderEpochFileCache`` read from ``leader-epoch-checkpoint`` (empty if absent)."""
        path = self.dir / LEADER_EPOCH_CHECKPOINT_FILE
        cache = EpochCache()
        if path.exists():
            read = read_leader_epoch_checkpoint(path.read_bytes(), path=str(path))
            cache = EpochCache([(e.epoch, e.start_offset) for e in read.entries])
        self.epochs = cache
        return cache

    def _write_epoch_cache(self) -> None:
        assert self.epochs is not None
        atomic_write(self.dir / LEADER_EPOCH_CHECKPOINT_FILE, build_leader_epoch_checkpoint(
            [EpochEntry(epoch=e, start_offset=o) for e, o in self.epochs.entries]))

    def assign_epoch(self, epoch: int, start_offset: int) -> None:
        """``LeaderEpochFileCache#assign`` (``UnifiedLog#maybeAssignEpochStartOffset``), the
        checkpoint file rewritten when the cache changed."""
        cache = self.epochs if self.epochs is not None else self.load_epoch_cache()
        before = list(cache.entries)
        cache.assign(epoch, start_offset)
        if cache.entries != before:
            self._write_epoch_cache()

    def truncate_epochs_from_start(self) -> None:
        """``LeaderEpochFileCache#truncateFromStart`` at the log start offset: epochs wholly
        below it go, the one holding it starts there."""
        assert self.epochs is not None
        start = self.log_start_offset
        kept = [(e, s) for e, s in self.epochs.entries if s >= start]
        below = [(e, s) for e, s in self.epochs.entries if s < start]
        if below and (not kept or kept[0][1] > start):
            kept.insert(0, (below[-1][0], start))
        if kept != self.epochs.entries:
            self.epochs.entries = kept
            self._write_epoch_cache()

    def update_high_watermark(self, high_watermark: int) -> bool:
        """``UnifiedLog#updateHighWatermark``: clamped to [log start, log end]; producer state
        learns it (``ProducerStateManager#onHighWatermarkUpdated``). True when it moved."""
        hw = max(self.log_start_offset, min(high_watermark, self.log_end_offset))
        if hw == self.high_watermark:
            return False
        self.high_watermark = hw
        self.producer_state.on_high_watermark_updated(hw)
        return True

    def append_as_follower(self, records: bytes, now_ms: int) -> int:
        """``UnifiedLog#appendAsFollower``: the leader's batches stored byte for byte at the
        offsets they carry (no offset assignment, no validation beyond framing and order);
        producer state through the same core as the loader's replay (origin REPLICATION,
        :func:`kafkatx.broker.log_loader.replay`), a ``.txnindex`` entry for each abort, the
        leader epoch cache from each batch's partition leader epoch. Unlike Kafka, which rolls
        by the size of the whole fetched chunk, each batch is rolled as the leader rolled it,
        so the segment files stay byte-identical to the leader's. Returns the number of
        batches appended; ``AppendError`` OFFSET_OUT_OF_RANGE when the first batch does not
        start at the log end offset (``UnexpectedAppendOffsetException``)."""
        try:
            headers, valid = split_batches(records)
        except BatchFrameError as exc:
            raise AppendError(ErrorCode.corrupt_message, str(exc)) from None
        if not headers:
            return 0
        scan = scan_segment(memoryview(records)[:valid])
        for h in headers:
            if h.base_offset != self.log_end_offset:
                raise AppendError(ErrorCode.offset_out_of_range,
                                  f"{self.name}: the leader's batch at offset {h.base_offset} "
                                  f"does not follow the log end offset {self.log_end_offset}")
            self._maybe_roll(h.size, h.max_timestamp, now_ms)
            self._write(records[h.position:h.position + h.size], h.base_offset, h.last_offset,
                        h.max_timestamp)
            self.assign_epoch(h.partition_leader_epoch, h.base_offset)
            aborted: list[AbortedTxnEntry] = []
            replay(self.producer_state, scan, h.base_offset, h.base_offset + 1, aborted,
                   advance_high_watermark=False)
            for entry in aborted:
                self._add_txn_index_entry(entry)
            self._after_append(h.last_offset)
        return len(headers)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """``UnifiedLog#truncateFullyAndStartAt``: every segment and snapshot deleted, an empty
        log starting at ``offset`` (a follower whose leader's log starts past its end)."""
        self.writer.release()
        for seg in self.segments:
            seg.close()
            for suffix in (".log", ".index", ".timeindex", ".txnindex"):
                seg.file(suffix).unlink(missing_ok=True)
        for snap in snapshot_offsets(self.dir):
            (self.dir / snapshot_file_name(snap)).unlink(missing_ok=True)
        self.writer = PartitionWriter(self.dir, segment_bytes=self.config.segment_bytes,
                                      keep_open=True)
        self.writer.log_end_offset = offset
        self.segments, self._bases, self._tables = [], [], []
        self.producer_state.truncate_fully_and_start_at(offset)
        self.log_start_offset = self.log_end_offset = self.high_watermark = offset
        self.recovery_point = offset
        self._roll(offset)
        if self.epochs is not None:
            self.epochs.entries = []
            self._write_epoch_cache()

    def truncate_to(self, offset: int, now_ms: int | None = None) -> None:
        """``UnifiedLog#truncateTo``: drop every offset at or above ``offset``. Segments above it
        are deleted, the one holding it cut at its first batch at or past it; the log is then
        reloaded by ``LogLoader`` recovering from that segment (indexes, ``.txnindex`` and
        producer state rebuilt from the newest snapshot below the cut, as
        ``UnifiedLog#loadProducerState`` does), the leader epoch cache truncated from the end
        (``LeaderEpochFileCache#truncateFromEnd``) and the high watermark kept at most there."""
        if offset >= self.log_end_offset:
            return
        offset = max(offset, self.log_start_offset)
        hw = min(self.high_watermark, offset)
        self.writer.release()
        for seg in self.segments:
            if seg.base_offset > offset or (seg.base_offset == offset
                                            and seg is not self.segments[0]):
                seg.close()
                for suffix in (".log", ".index", ".timeindex", ".txnindex"):
                    seg.file(suffix).unlink(missing_ok=True)
                continue
            table = self._batches_of(seg)
            i = bisect.bisect_left(table.last, offset)
            if i < len(table):
                cut = table.position[i]  # LogSegment#truncateTo: the whole batch holding it
                seg.close()
                with open(seg.path, "r+b") as f:
                    f.truncate(cut)
                for suffix in (".index", ".timeindex"):
                    seg.file(suffix).unlink(missing_ok=True)
            seg.close()
        for snap in snapshot_offsets(self.dir):
            if snap > offset:
                (self.dir / snapshot_file_name(snap)).unlink(missing_ok=True)
        self.writer = PartitionWriter(self.dir, segment_bytes=self.config.segment_bytes,
                                      keep_open=True)
        self.segments, self._bases, self._tables = [], [], []
        follows = self.high_watermark_follows_log_end
        self.open(self.log_start_offset, recovery_point=min(self.recovery_point, offset),
                  had_clean_shutdown=False, now_ms=now_ms)
        self.high_watermark_follows_log_end = follows
        self.high_watermark = min(hw, self.log_end_offset)
        if self.epochs is not None:
            before = list(self.epochs.entries)
            self.epochs.truncate_from_end(self.log_end_offset)
            if self.epochs.entries != before:
                self._write_epoch_cache()

    def _append_txn_index(self, completed: CompletedTxn, lso: int) -> None:
        """``LogSegment#updateTxnIndex``: the segment holding the marker gets the entry."""
        self._add_txn_index_entry(AbortedTxnEntry(
            producer_id=completed.producer_id, first_offset=completed.first_offset,
            last_offset=completed.last_offset, last_stable_offset=lso))

    def _add_txn_index_entry(self, entry: AbortedTxnEntry) -> None:
        seg = self.segments[-1]
        seg.aborted.append(entry)
        with open(self.dir / segment_name(seg.base_offset, ".txnindex"), "ab") as f:
            f.write(build_txn_index([entry]))

    # -- reads -------------------------------------------------------------------------------

    @property
    def last_stable_offset(self) -> int:
        """``UnifiedLog#maybeIncrementFirstUnstableOffset`` keeps the first unstable offset at or
        above the log start offset."""
        first_unstable = self.producer_state.first_unstable_offset()
        if first_unstable is not None:
            first_unstable = max(first_unstable, self.log_start_offset)
        return last_stable_offset(first_unstable, self.high_watermark)

    def read(
        self,
        fetch_offset: int,
        max_bytes: int,
        isolation: IsolationLevel,
        *,
        min_one_message: bool,
        log_end: bool = False,
    ) -> ReadResult:
        """``UnifiedLog#read`` + ``LocalLog#read`` for a consumer, or with ``log_end`` for a
        follower (``FetchIsolation.LOG_END``: up to the log end offset); raises
        ``AppendError`` with OFFSET_OUT_OF_RANGE outside [log start, log end]."""
        if fetch_offset < self.log_start_offset or fetch_offset > self.log_end_offset:
            raise AppendError(ErrorCode.offset_out_of_range,
                              f"Received request for offset {fetch_offset} for partition "
                              f"{self.name}, but we only have log segments in the range "
                              f"{self.log_start_offset} to {self.log_end_offset}.")
        hw = self.high_watermark
        lso = self.last_stable_offset
        bound = self.log_end_offset if log_end else max_fetch_offset(isolation, hw, lso)
        committed = isolation == IsolationLevel.READ_COMMITTED and not log_end
        empty = ReadResult(records=b"", high_watermark=hw, last_stable_offset=lso,
                           log_start_offset=self.log_start_offset,
                           aborted_transactions=[] if committed else None)
        found = self._locate(fetch_offset) if fetch_offset < bound else None
        if found is None:
            return empty
        k, seg, i = found
        table = self._batches_of(seg)
        first_position, first_size = table.position[i], table.size[i]
        j = bisect.bisect_left(table.last, bound)
        max_position = table.position[j] if j < len(table) else seg.size
        limit = max(max_bytes, first_size) if min_one_message else max_bytes
        size = min(max_position - first_position, limit)
        if size <= 0:
            return empty
        data = seg.pread(size, first_position)
        aborted = None
        if committed:
            upper = self._fetch_upper_bound(k, table, first_position + size)
            aborted = collect_aborted_transactions(
                [(s.base_offset, s.aborted) for s in self.segments], fetch_offset, upper)
        return ReadResult(records=data, high_watermark=hw, last_stable_offset=lso,
                          log_start_offset=self.log_start_offset, aborted_transactions=aborted,
                          first_entry_incomplete=limit < first_size)

    def _locate(self, offset: int) -> tuple[int, LogSegment, int] | None:
        """``LocalLog#read``'s walk: from the floor segment of ``offset`` on, the first batch
        whose last offset is at or above it (segment index, segment, batch index)."""
        k = max(bisect.bisect_right(self._bases, offset) - 1, 0)
        while k < len(self.segments):
            seg = self.segments[k]
            table = self._batches_of(seg)
            i = bisect.bisect_left(table.last, offset)
            if i < len(table):
                return k, seg, i
            k += 1
        return None

    def _batches_of(self, seg: LogSegment) -> BatchTable:
        """The segment's batch table, scanned on first use; only the tables of the last few
        segments read stay in memory (the active segment's always does)."""
        if seg.table is not None:
            return seg.table
        table = seg.batches()
        self._tables.append(seg)
        while len(self._tables) > _CACHED_TABLES:
            old = self._tables.pop(0)
            if old is not self.segments[-1]:
                old.table = None
        return table

    def _fetch_upper_bound(self, k: int, table: BatchTable, end_position: int) -> int:
        """``LogSegment#fetchUpperBoundOffset`` at batch granularity: the first batch at or past
        ``end_position``, else the next segment's base offset or the log end offset
        (``LocalLog#addAbortedTransactions``)."""
        i = bisect.bisect_left(table.position, end_position)
        if i < len(table):
            return table.base[i]
        return (self.segments[k + 1].base_offset if k + 1 < len(self.segments)
                else self.log_end_offset)

    def offset_for_timestamp(self, timestamp: int,
                             isolation: IsolationLevel | None) -> OffsetAndTimestamp | None:
        """``Partition#fetchOffsetForTimestamp`` + ``UnifiedLog#fetchOffsetByTimestamp``."""
        if isolation == IsolationLevel.READ_COMMITTED:
            last_fetchable = self.last_stable_offset
        elif isolation == IsolationLevel.READ_UNCOMMITTED:
            last_fetchable = self.high_watermark
        else:
            last_fetchable = self.log_end_offset
        if timestamp == LATEST_TIMESTAMP:
            return OffsetAndTimestamp(last_fetchable, NO_TIMESTAMP, self.leader_epoch)
        if timestamp == EARLIEST_TIMESTAMP:
            return OffsetAndTimestamp(self.log_start_offset, NO_TIMESTAMP, self.leader_epoch)
        if timestamp == MAX_TIMESTAMP:
            found = self._max_timestamp_offset()
        elif timestamp >= 0:
            found = self._search_timestamp(timestamp)
        else:
            return None
        if found is None or found.offset >= last_fetchable:
            return None
        return found

    def legacy_offsets_before(self, timestamp: int, max_num_offsets: int,
                              now_ms: int) -> list[int]:
        """``UnifiedLog#legacyFetchOffsetsBefore`` (ListOffsets v0): each segment's base offset
        (at least the log start offset) with its file's modification time, plus the log end
        offset at ``now_ms`` when the active segment holds data; the latest -1, the earliest -2,
        else the last entry modified at or before ``timestamp``, and the entries before it, at
        most ``max_num_offsets`` of them, in descending order."""
        pairs = [(max(seg.base_offset, self.log_start_offset), modified_ms(seg.path, now_ms))
                 for seg in self.segments]
        if self.segments and self.segments[-1].size > 0:
            pairs.append((self.log_end_offset, now_ms))
        if timestamp == LATEST_TIMESTAMP:
            start = len(pairs) - 1
        elif timestamp == EARLIEST_TIMESTAMP:
            start = 0
        else:
            start = len(pairs) - 1
            while start >= 0 and pairs[start][1] > timestamp:
                start -= 1
        count = min(max_num_offsets, start + 1)
        if count < 0:
            raise ValueError(f"negative number of offsets: {count}")  # NegativeArraySize
        return sorted((pairs[start - j][0] for j in range(count)), reverse=True)

    def iter_stored_batches(self, warn: Callable[[str], None] | None = None
                            ) -> Iterator[StoredBatch]:
        """Every batch of every segment, in offset order, its header read and its bytes shared
        with the rest of its segment (what a coordinator reads when it loads its partition:
        ``UnifiedLog#read`` with ``FetchIsolation.LOG_END``). Decode records with
        ``iter_key_values(batch.data, batch.header.position, batch.header)``. What cannot be
        read goes to ``warn`` (default: ``load_problems``)."""
        report = warn or self.load_problems.append
        for seg in list(self.segments):
            if seg.size == 0:
                continue
            data = seg.pread(seg.size, 0)
            try:
                headers, _ = split_batches(data)
            except BatchFrameError as exc:
                report(f"{seg.path}: {exc}")
                continue
            for header in headers:
                yield StoredBatch(header, data)

    def iter_batches(self) -> Iterator[RecordBatch]:
        """Every stored batch with its records decoded (the exact parser); a batch that does not
        decode is reported in ``load_problems`` and skipped."""
        for batch in self.iter_stored_batches():
            try:
                yield parse_batch(batch.data, batch.header.position, decode_records=True)
            except FormatError as exc:
                self.load_problems.append(f"{self.name} offset {batch.header.base_offset}: {exc}")

    def iter_key_values(self, warn: Callable[[str], None] | None = None) -> Iterator[
            tuple[StoredBatch, list[tuple[int, bytes | None, bytes | None]]]]:
        """Each stored batch with its records' (offset, key, value); a batch whose records do
        not decode goes to ``warn`` (default: ``load_problems``) and is skipped."""
        report = warn or self.load_problems.append
        for batch in self.iter_stored_batches(report):
            try:
                records = list(iter_key_values(batch.data, batch.header.position, batch.header))
            except FormatError as exc:
                report(f"{self.name} offset {batch.header.base_offset}: {exc}")
                continue
            yield batch, records

    def _records_at(self, seg: LogSegment, position: int, size: int) -> Iterator[Record]:
        """The records of one stored batch (decompressed); FormatError if they do not decode."""
        data = seg.pread(size, position)
        return iter_records(data, 0, parse_header(data, 0))

    def _max_timestamp_offset(self) -> OffsetAndTimestamp | None:
        """``UnifiedLog#fetchOffsetByTimestamp(MAX_TIMESTAMP)``: the (first) segment with the
        largest ``maxTimestampSoFar``, then the record holding it."""
        best: LogSegment | None = None
        for seg in self.segments:
            if best is None or seg.max_timestamp_so_far > best.max_timestamp_so_far:
                best = seg
        if best is None or best.max_timestamp_so_far < 0:
            return None
        table = self._batches_of(best)
        try:
            i = table.max_timestamp.index(best.max_timestamp_so_far)
        except ValueError:
            return OffsetAndTimestamp(best.offset_of_max_timestamp_so_far,
                                      best.max_timestamp_so_far, self.leader_epoch)
        try:
            for record in self._records_at(best, table.position[i], table.size[i]):
                if record.timestamp == table.max_timestamp[i]:
                    return OffsetAndTimestamp(record.offset, record.timestamp, self.leader_epoch)
        except FormatError:
            pass
        return OffsetAndTimestamp(table.last[i], table.max_timestamp[i], self.leader_epoch)

    def _search_timestamp(self, target: int) -> OffsetAndTimestamp | None:
        """``LogSegment#findOffsetByTimestamp`` from the log start offset: segments whose
        ``maxTimestampSoFar`` is below the target are skipped without reading them."""
        k = max(bisect.bisect_right(self._bases, self.log_start_offset) - 1, 0)
        for seg in self.segments[k:]:
            if seg.max_timestamp_so_far < target:
                continue
            table = self._batches_of(seg)
            start = bisect.bisect_left(table.last, self.log_start_offset)
            for i in range(start, len(table)):
                if table.max_timestamp[i] < target:
                    continue
                try:
                    for record in self._records_at(seg, table.position[i], table.size[i]):
                        if record.timestamp >= target and record.offset >= self.log_start_offset:
                            return OffsetAndTimestamp(record.offset, record.timestamp,
                                                      self.leader_epoch)
                except FormatError:
                    continue
        return None

    # -- deleting records ---------------------------------------------------------------------

    def delete_records_before(self, offset: int) -> int:
        """``Partition#deleteRecordsOnLeader``: ``offset`` (-1: the high watermark) becomes the log
        start offset unless it is lower (``UnifiedLog#maybeIncrementLogStartOffset``, reason
        ClientRecordDeletion), then segments wholly below it are deleted
        (``UnifiedLog#deleteLogStartOffsetBreachedSegments``, which Kafka's retention thread runs
        later). Returns the log start offset, the low watermark of a one-replica partition.
        Raises ``AppendError`` POLICY_VIOLATION or OFFSET_OUT_OF_RANGE as Kafka does."""
        if not self.config.delete:
            raise AppendError(ErrorCode.policy_violation,
                              f"Records of partition {self.name} can not be deleted due to the "
                              "configured policy")
        target = self.high_watermark if offset == HIGH_WATERMARK else offset
        if target < 0:
            raise AppendError(ErrorCode.offset_out_of_range,
                              f"The offset {target} for partition {self.name} is not valid")
        if target > self.log_start_offset:
            self.maybe_increment_log_start_offset(target)
            self._delete_old_segments_by(DeletionReason.LOG_START_OFFSET_BREACH, 0)
        return self.log_start_offset

    def maybe_increment_log_start_offset(self, offset: int) -> bool:
        """``UnifiedLog#maybeIncrementLogStartOffset``: raise the log start offset, trimming
        producer state (``ProducerStateManager#onLogStartOffsetIncremented``: completed
        transactions below it leave the unreplicated set; producers and ongoing transactions
        stay, a transaction whose start is gone keeps the LSO at the log start offset)."""
        if offset <= self.log_start_offset:
            return False
        if offset > self.high_watermark:
            raise AppendError(ErrorCode.offset_out_of_range,
                              f"Cannot increment the log start offset to {offset} of partition "
                              f"{self.name} since it is larger than the high watermark "
                              f"{self.high_watermark}")
        self.log_start_offset = offset
        psm = self.producer_state
        psm.on_log_start_offset_incremented(offset)
        psm.last_snap_offset = (snapshot_offsets(self.dir) or [offset])[-1]
        return True

    def delete_old_segments(self, now_ms: int) -> int:
        """``UnifiedLog#deleteOldSegments``: the log-start-offset breach, then with
        cleanup.policy delete the retention.bytes and retention.ms breaches. Returns how many
        segments were deleted."""
        return sum(self._delete_old_segments_by(reason, now_ms)
                   for reason in retention_rules(self.config.delete))

    def _delete_old_segments_by(self, reason: DeletionReason, now_ms: int) -> int:
        extents = [seg.extent(now_ms) for seg in self.segments]
        predicate = predicate_for(reason, extents, log_start_offset=self.log_start_offset,
                                  now_ms=now_ms, retention_ms=self.config.retention_ms,
                                  retention_bytes=self.config.retention_bytes)
        if predicate is None:
            return 0
        count = deletable_count(extents, predicate, high_watermark=self.high_watermark,
                                log_end_offset=self.log_end_offset)
        if count:
            self._delete_segments(count)
        return count

    def _delete_segments(self, count: int) -> None:
        """``UnifiedLog#deleteSegments``: when every segment goes, a new one is rolled at the log
        end offset first (a log always has one); the log start offset moves to the first kept
        segment's base before the oldest ``count`` segments are removed. Their files go at once
        (Kafka renames them ``.deleted`` and removes them ``file.delete.delay.ms`` later), with the
        producer snapshots named by their base offsets (``UnifiedLog#deleteProducerSnapshots``)."""
        if count == len(self.segments):
            self._roll(self.log_end_offset)
        gone, self.segments = self.segments[:count], self.segments[count:]
        self._bases = self._bases[count:]
        self._tables = [seg for seg in self._tables if seg not in gone]
        self.maybe_increment_log_start_offset(self.segments[0].base_offset)
        for seg in gone:
            seg.close()
            for suffix in (".log", ".index", ".timeindex", ".txnindex"):
                (self.dir / segment_name(seg.base_offset, suffix)).unlink(missing_ok=True)
            (self.dir / snapshot_file_name(seg.base_offset)).unlink(missing_ok=True)

    # -- the log cleaner's view -----------------------------------------------------------------

    def segments_in(self, start: int, end: int) -> list[LogSegment]:
        """``UnifiedLog#logSegments(from, to)``: the segments holding offsets in [start, end)."""
        return self.segments[segment_range([s.base_offset for s in self.segments], start, end)]

    def aborted_entries(self, start: int, upper: int) -> list[AbortedTxnEntry]:
        """``UnifiedLog#collectAbortedTransactions`` with the full ``.txnindex`` entries."""
        return collect_aborted_entries([(s.base_offset, s.aborted) for s in self.segments],
                                       start, upper)

    def replace_with_cleaned(self, first: int, replaced: list[int],
                             aborted: list[AbortedTxnEntry]) -> None:
        """``UnifiedLog#replaceSegments`` once the files are swapped: the segments ``replaced``
        give way to the cleaned segment at ``first`` (now in its plain files, ``.txnindex``
        entries ``aborted``; opened from its indexes, its batches read when first needed); the
        producer snapshots of the replaced segments other than ``first`` are deleted
        (``deleteProducerSnapshots``)."""
        gone = {seg.base_offset: seg for seg in self.segments if seg.base_offset in replaced}
        for seg in gone.values():
            seg.close()
        path = self.dir / segment_name(first, ".log")
        seg = LogSegment(first, path, size=path.stat().st_size, aborted=list(aborted))
        seg.load_max_timestamp()
        self.segments = sorted([s for s in self.segments if s.base_offset not in gone] + [seg],
                               key=lambda s: s.base_offset)
        self._bases = [s.base_offset for s in self.segments]
        self._tables = [s for s in self._tables if s.base_offset not in gone]
        for base in gone:
            if base != first:
                (self.dir / snapshot_file_name(base)).unlink(missing_ok=True)

    # -- snapshots, flush, close ---------------------------------------------------------------

    def take_snapshot(self) -> Path | None:
        """``ProducerStateManager#takeSnapshot``: only when the map end offset moved on."""
        psm = self.producer_state
        if psm.last_map_offset <= psm.last_snap_offset:
            return None
        path = self.dir / snapshot_file_name(psm.last_map_offset)
        atomic_write(path, build_producer_snapshot(psm.snapshot_entries()))
        psm.last_snap_offset = psm.last_map_offset
        return path

    def unflushed_files(self, upto: int) -> list[Path]:
        """The files ``LocalLog#flush`` would sync to make offsets below ``upto`` durable:
        segments (with their indexes) that hold offsets at or above the recovery point."""
        files = []
        for k, seg in enumerate(self.segments):
            nxt = self.segments[k + 1].base_offset if k + 1 < len(self.segments) else None
            if seg.base_offset >= upto or (nxt is not None and nxt <= self.recovery_point):
                continue
            files += [seg.path] + [seg.file(suffix) for suffix in (".index", ".timeindex",
                                                                   ".txnindex")]
        return files

    def rolled_flush_point(self) -> int:
        """Where ``UnifiedLog#roll``'s scheduled flush brings the recovery point: the active
        segment's base offset (every segment below it is complete)."""
        return self.segments[-1].base_offset if self.segments else 0

    def mark_flushed(self, offset: int) -> None:
        """``UnifiedLog#updateRecoveryPoint`` after a flush up to ``offset``."""
        self.recovery_point = max(self.recovery_point, min(offset, self.log_end_offset))

    def flush(self) -> None:
        """``UnifiedLog#flush`` up to the log end offset."""
        fsync_files(self.unflushed_files(self.log_end_offset + 1))
        self.mark_flushed(self.log_end_offset)

    def close(self) -> None:
        """``UnifiedLog#close``: producer snapshot at the log end offset, indexes trimmed."""
        self.take_snapshot()
        self.writer.close()
        self.flush()
        for seg in self.segments:
            seg.close()

    def release(self) -> None:
        """Drop open descriptors without writing anything (the partition is being deleted)."""
        self.writer.release()
        for seg in self.segments:
            seg.close()



def fsync_files(paths: list[Path]) -> None:
    """fsync each file that still exists (a file deleted meanwhile needs no flush)."""
    for path in paths:
        with contextlib.suppress(FileNotFoundError), open(path, "rb") as f:
            os.fsync(f.fileno())
