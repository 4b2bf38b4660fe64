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
The replication side (:mod:`~kafkatx.broker.logs.log_replication`) and the reads
(:mod:`~kafkatx.broker.logs.log_reads`) are mixins in modules of their own; what appends and
reads return is in :mod:`~kafkatx.broker.logs.log_values`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

from kio.schema.errors import ErrorCode

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
from kafkatx.broker.logs.log_loader import (
    LoadedLog,
    LoadProgress,
    LogLoader,
    LogLoadError,
    snapshot_offsets,
)
from kafkatx.broker.logs.log_reads import LogReads
from kafkatx.broker.logs.log_replication import LogReplication
from kafkatx.broker.logs.log_segment import BatchTable, LogSegment
from kafkatx.broker.logs.log_values import (
    _PRODUCER_STATE_ERRORS,
    HIGH_WATERMARK,
    NO_TIMESTAMP,
    AppendError,
    AppendResult,
    LogConfig,
)
from kafkatx.errors import FormatError
from kafkatx.formats.producer_snapshot import build_producer_snapshot, snapshot_file_name
from kafkatx.formats.record_batch import (
    ControlType,
    build_control_batch,
    iter_records,
    parse_header,
)
from kafkatx.formats.record_decode import check_records
from kafkatx.formats.txn_index import AbortedTxnEntry
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
    ProducerStateError,
    ProducerStateManager,
)
from kafkatx.semantics.read_committed import (
    collect_aborted_entries,
)
from kafkatx.storage.segment_writer import PartitionWriter, segment_name

__all__ = ["AppendError", "LogConfig", "LogLoadError", "PartitionLog"]


class PartitionLog(LogReplication, LogReads):
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
        """Load the directory as ``LogLoader#load`` does (see
        :mod:`kafkatx.broker.logs.log_loader`),
        then start a new active segment at the log end offset. Unlike Kafka, which appends to the
        last segment, appends continue in a fresh segment.

        Without a clean shutdown and with recovery point 0 (the defaults) every segment is
        recovered. The log start offset is ``max(checkpoint, first segment's base offset)``.
        """
        loader = LogLoader(self.dir, self.producer_state, had_clean_shutdown=had_clean_shutdown,
                           recovery_point=recovery_point,
                           log_start_offset=log_start_offset_checkpoint, now_ms=now_ms,
                           progress=progress)
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
        self.log_start_offset = loaded.log_start_offset

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
        if origin == AppendOrigin.CLIENT:
            self._validate_records(records)
        if self.config.compact:
            self._validate_keys(records)

    def _validate_records(self, records: bytes) -> None:
        """``LogValidator#validateMessagesAndAssignOffsets``: every record of the batch is
        decoded (decompressed first) before anything is appended. A record that does not
        decode is ``InvalidRecordException`` (INVALID_RECORD); compressed bytes that do not
        decompress are a ``KafkaException`` from the codec stream, which Kafka answers with
        UNKNOWN_SERVER_ERROR (both as real Kafka 4.0 and 4.4 answer, issue 25)."""
        try:
            check_records(records, 0, parse_header(records, 0))
        except FormatError as exc:
            if exc.field == "compression":
                raise AppendError(ErrorCode.unknown_server_error,
                                  f"Failed to decompress the records of the batch in topic "
                                  f"partition {self.name}: {exc.message}") from None
            raise AppendError(ErrorCode.invalid_record,
                              f"The records of the batch in topic partition {self.name} do not "
                              f"decode: {exc.message}") from None

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
