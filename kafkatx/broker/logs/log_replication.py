"""A partition log's replication side: its leader epoch cache, follower appends and truncation
(``UnifiedLog#appendAsFollower``, ``truncateTo``, ``truncateFullyAndStartAt``,
``LeaderEpochFileCache``). A mixin of :class:`kafkatx.broker.logs.partition_log.PartitionLog`."""

from __future__ import annotations

import bisect

from kio.schema.errors import ErrorCode

from kafkatx.broker.logs.batch_header import (
    BatchFrameError,
    split_batches,
)
from kafkatx.broker.logs.files import atomic_write
from kafkatx.broker.logs.log_loader import (
    replay,
    snapshot_offsets,
)
from kafkatx.broker.logs.log_values import (
    AppendError,
)
from kafkatx.formats.checkpoints import (
    LEADER_EPOCH_CHECKPOINT_FILE,
    EpochEntry,
    build_leader_epoch_checkpoint,
    read_leader_epoch_checkpoint,
)
from kafkatx.formats.producer_snapshot import snapshot_file_name
from kafkatx.formats.segment_scan import scan_segment
from kafkatx.formats.txn_index import AbortedTxnEntry, build_txn_index
from kafkatx.semantics.leader_epochs import EpochCache
from kafkatx.semantics.producer_state import (
    CompletedTxn,
)
from kafkatx.storage.segment_writer import PartitionWriter, segment_name


class LogReplication:
    """Leader epochs, follower appends and truncation of a :class:`PartitionLog`."""

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
        :func:`kafkatx.broker.logs.log_loader.replay`), a ``.txnindex`` entry for each abort, the
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
