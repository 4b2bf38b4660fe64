"""Loading a partition directory at start-up, as Kafka's ``LogLoader`` does.

Mirrors ``LogLoader#load`` / ``#loadSegmentFiles`` / ``#recoverLog`` / ``#recoverSegment``,
``LogSegment#recover`` and ``UnifiedLog#rebuildProducerState``:

* every segment is opened without reading its batches; its indexes are sanity-checked
  (``LogSegment#sanityCheck``) and the log end offset is read from the last segment's offset
  index onwards (``LogSegment#readNextOffset``);
* after a clean shutdown (``.kafka_cleanshutdown``) nothing is recovered: producer state comes
  from the newest producer snapshot at or below the log end offset (after a clean shutdown the
  one at the log end offset), nothing is replayed;
* after an unclean shutdown, the segments from the one holding the recovery point
  (``recovery-point-offset-checkpoint``) to the end are recovered: their batches are scanned and
  checked (CRC), a partial batch at the end of the log is cut off, their ``.index`` /
  ``.timeindex`` / ``.txnindex`` are rebuilt, and producer state is rebuilt from the newest
  snapshot at or below the first recovered segment through every recovered batch. A segment whose
  indexes are missing or corrupt is recovered in both cases (from it to the end; Kafka recovers
  that segment alone).

Producer state is rebuilt with :mod:`kafkatx.semantics.producer_state` (origin REPLICATION, as
``LogSegment#updateProducerState``). Where kafkatx differs from Kafka: damage other than a partial
tail is refused (``LogLoadError``) rather than truncated away, and the snapshot named by the
first segment's base offset is used even when that is the log start offset (so producers whose
batches went with deleted segments stay known).
"""

from __future__ import annotations

import bisect
import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kafkatx.broker.logs.files import atomic_write
from kafkatx.broker.logs.log_segment import BatchTable, CorruptIndexError, LogSegment
from kafkatx.broker.logs.segment_swap import recover_interrupted_swaps
from kafkatx.errors import KafkatxError
from kafkatx.formats.producer_snapshot import read_producer_snapshot, snapshot_file_name
from kafkatx.formats.record_batch import ControlType
from kafkatx.formats.segment import TRUNCATED_BATCH, ZERO_PADDING
from kafkatx.formats.segment_scan import SegmentScan
from kafkatx.formats.txn_index import AbortedTxnEntry, build_txn_index, read_txn_index
from kafkatx.semantics.producer_state import TV_UNKNOWN, AppendOrigin, ProducerStateManager
from kafkatx.storage.segment_writer import SegmentIndexes


class LogLoadError(KafkatxError):
    """An existing partition directory the broker will not append to (damage other than a
    partial tail, a legacy segment that needs recovery)."""


class LoadInterrupted(KafkatxError):
    """A stop was requested while the log dir was loading."""


@dataclass(slots=True)
class LoadProgress:
    """How far loading the log dir got; ``step`` reports it and stops the load when a stop was
    requested (``LogManager#loadLogs``' ``numRemainingSegments`` / progress logging)."""

    partitions_total: int = 0
    partitions_loaded: int = 0
    segments_recovered: int = 0
    bytes_recovered: int = 0
    report: Callable[[LoadProgress], None] | None = None
    should_stop: Callable[[], bool] = lambda: False

    def step(self) -> None:
        if self.should_stop():
            raise LoadInterrupted("stop requested while loading the log dir")
        if self.report is not None:
            self.report(self)


@dataclass(slots=True)
class LoadedLog:
    """What loading a partition directory found (``LoadedLogOffsets`` and more)."""

    segments: list[LogSegment]
    log_end_offset: int
    recovery_point: int
    recovered_segments: int = 0
    recovered_bytes: int = 0
    replayed_batches: int = 0
    snapshot_offset: int | None = None
    problems: list[str] = field(default_factory=list)


def segment_files(directory: Path) -> list[LogSegment]:
    """The ``<base>.log`` files of ``directory`` in offset order, opened without reading."""
    found = []
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.name.endswith(".log") and entry.is_file():
                with contextlib.suppress(ValueError):
                    found.append(LogSegment(int(entry.name[:-4]), Path(entry.path),
                                            size=entry.stat().st_size))
    found.sort(key=lambda s: s.base_offset)
    return found


def snapshot_offsets(directory: Path) -> list[int]:
    out = []
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.name.endswith(".snapshot"):
                with contextlib.suppress(ValueError):
                    out.append(int(entry.name.split(".")[0]))
    return sorted(out)


class LogLoader:
    """Loads one partition directory into ``producer_state`` and a list of segments."""

    def __init__(self, directory: Path, producer_state: ProducerStateManager, *,
                 had_clean_shutdown: bool, recovery_point: int, now_ms: int | None = None,
                 progress: LoadProgress | None = None) -> None:
        self.dir = directory
        self.psm = producer_state
        self.had_clean_shutdown = had_clean_shutdown
        self.recovery_point_checkpoint = recovery_point
        self.now_ms = now_ms
        self.progress = progress or LoadProgress()
        self.problems: list[str] = []

    def load(self) -> LoadedLog:
        # removeTempFilesAndCollectSwapFiles and the swap passes (an interrupted cleaning).
        self.problems.extend(recover_interrupted_swaps(self.dir))
        segments = segment_files(self.dir)
        if not segments:
            self.psm.truncate_fully_and_start_at(0)
            return LoadedLog(segments=[], log_end_offset=0, recovery_point=0)
        first_recovered = self._first_segment_to_recover(segments)
        target = (segments[first_recovered].base_offset if first_recovered < len(segments)
                  else None)
        loaded = LoadedLog(segments=segments, log_end_offset=0, recovery_point=0,
                           problems=self.problems)
        if target is None:
            end = segments[-1].read_next_offset()
            loaded.snapshot_offset = self._rebuild_producer_state(segments, end, loaded,
                                                                  at_log_end=True)
            loaded.log_end_offset = end
        else:
            loaded.snapshot_offset = self._rebuild_producer_state(segments, target, loaded,
                                                                  at_log_end=False)
            loaded.log_end_offset = self._recover(segments, first_recovered, loaded)
        for seg in segments[:first_recovered]:
            self._read_txn_index(seg)
            seg.load_max_timestamp()
        self._delete_snapshots_after(loaded.log_end_offset)
        if self.had_clean_shutdown and first_recovered == len(segments):
            loaded.recovery_point = loaded.log_end_offset
        else:
            loaded.recovery_point = min(self.recovery_point_checkpoint, loaded.log_end_offset)
        return loaded

    # -- which segments ------------------------------------------------------------------------

    def _first_segment_to_recover(self, segments: list[LogSegment]) -> int:
        """``recoverLog``'s ``segments.values(recoveryPoint, ...)`` after an unclean shutdown, or
        the first segment whose indexes fail ``sanityCheck`` (``loadSegmentFiles``)."""
        first = len(segments)
        if not self.had_clean_shutdown:
            bases = [s.base_offset for s in segments]
            first = max(bisect.bisect_right(bases, self.recovery_point_checkpoint) - 1, 0)
        for i, seg in enumerate(segments[:first]):
            try:
                seg.sanity_check()
            except FileNotFoundError:
                self.problems.append(f"{seg.path}: rebuilding its .index and .timeindex "
                                     "(an index file is missing)")
                return i
            except CorruptIndexError as exc:
                self.problems.append(f"{exc}; rebuilding the segment's indexes")
                return i
        return first

    # -- producer state -----------------------------------------------------------------------

    def _rebuild_producer_state(self, segments: list[LogSegment], upto: int,
                                loaded: LoadedLog, *, at_log_end: bool) -> int | None:
        """``UnifiedLog#rebuildProducerState`` up to ``upto``: the newest loadable snapshot at
        or below it (from the first segment's base offset on), then the batches after it.
        Returns the snapshot's offset (None when the state was rebuilt from the first segment).
        After a clean shutdown without any snapshot (a log written before producer snapshots
        existed) nothing is replayed, as Kafka does."""
        first_base = segments[0].base_offset
        candidates = [o for o in snapshot_offsets(self.dir) if first_base <= o <= upto]
        if not candidates and self.had_clean_shutdown and at_log_end:
            self.psm.truncate_fully_and_start_at(upto)
            return None
        start = first_base
        used = None
        self.psm.truncate_fully_and_start_at(first_base)
        for offset in reversed(candidates):
            path = self.dir / snapshot_file_name(offset)
            snap = read_producer_snapshot(path.read_bytes(), path=str(path))
            if snap.loadable:
                self.psm.load_snapshot(list(snap.entries), offset, self.now_ms)
                start, used = offset, offset
                break
            self.problems.append(f"{snap.problems[0]}; an older snapshot is used")
        if start < upto:
            for seg in segments:
                nxt = _next_base(segments, seg)
                if nxt is not None and nxt <= start:
                    continue
                if seg.base_offset >= upto:
                    break
                scan = seg.scan()
                loaded.replayed_batches += replay(self.psm, scan, start, upto, None)
        self.psm.update_map_end_offset(upto)
        return used

    # -- recovery -----------------------------------------------------------------------------

    def _recover(self, segments: list[LogSegment], first: int, loaded: LoadedLog) -> int:
        """``recoverLog`` from ``segments[first]``: returns the log end offset."""
        end = segments[first].base_offset
        for i in range(first, len(segments)):
            self.progress.step()
            seg = segments[i]
            last = i == len(segments) - 1
            scan = seg.scan()
            valid = self._valid_bytes(seg, scan, last=last)
            if valid < seg.size:
                self.problems.append(f"{seg.path}: truncated to {valid} of {seg.size} bytes "
                                     "(a partial batch after an unclean shutdown)")
                with open(seg.path, "r+b") as f:
                    f.truncate(valid)
                seg.size = valid
            if not (seg.file(".index").exists() and seg.file(".timeindex").exists()):
                self.problems.append(f"{seg.path}: rebuilding its .index and .timeindex")
            seg.table = BatchTable.from_scan(scan, valid)
            aborted: list[AbortedTxnEntry] = []
            loaded.replayed_batches += replay(self.psm, scan, seg.base_offset, None, aborted,
                                              end=valid)
            self._rebuild_indexes(seg)
            self._rewrite_txn_index(seg, aborted)
            loaded.recovered_segments += 1
            loaded.recovered_bytes += valid
            self.progress.segments_recovered += 1
            self.progress.bytes_recovered += valid
            end = seg.table.last[-1] + 1 if len(seg.table) else max(end, seg.base_offset)
            if not last:
                seg.table = None  # read again when a fetch needs it: memory stays bounded
        self.psm.update_map_end_offset(end)
        return end

    @staticmethod
    def _valid_bytes(seg: LogSegment, scan: SegmentScan, *, last: bool) -> int:
        """``LogSegment#recover``'s valid bytes: where the first problem starts. A partial batch
        or zeros at the end of the last segment (what a killed process leaves) are cut off;
        any other damage is refused."""
        legacy = scan.headers.magic < 2
        if legacy.any():
            position = int(scan.headers.position[legacy.argmax()])
            raise LogLoadError(f"{seg.path}:{position}: a legacy (v0/v1) message; kafkatx serve "
                               "only appends to logs of v2 batches")
        if not scan.problems:
            return seg.size
        problem = scan.problems[0]
        if last and problem.kind in (TRUNCATED_BATCH, ZERO_PADDING):
            return problem.position
        raise LogLoadError(f"{problem}; kafkatx serve only appends to logs without damage (use "
                        "`kafkatx inspect` on this log dir)")

    def _rebuild_indexes(self, seg: LogSegment) -> None:
        """``LogSegment#recover``: offset and time index entries as the appends made them."""
        table = seg.batches()
        indexes = SegmentIndexes(base_offset=seg.base_offset)
        for position, size, last, max_ts in zip(table.position, table.size, table.last,
                                                table.max_timestamp, strict=True):
            indexes.on_append(position, size, last, max_ts)
        indexes.write_indexes(self.dir)
        seg.max_timestamp_so_far = indexes.max_timestamp_so_far
        seg.offset_of_max_timestamp_so_far = indexes.offset_of_max_timestamp_so_far
        if len(table):
            seg.first_batch_timestamp = table.max_timestamp[0]

    def _rewrite_txn_index(self, seg: LogSegment, aborted: list[AbortedTxnEntry]) -> None:
        """``LogSegment#recover`` resets the ``.txnindex`` and appends what the replay aborts."""
        path = seg.file(".txnindex")
        wanted = build_txn_index(aborted)
        current = path.read_bytes() if path.exists() else None
        if current != wanted and (current is not None or aborted):
            atomic_write(path, wanted)
        seg.aborted = list(aborted)

    def _read_txn_index(self, seg: LogSegment) -> None:
        path = seg.file(".txnindex")
        if path.exists():
            read = read_txn_index(path.read_bytes(), base_offset=seg.base_offset, path=str(path))
            seg.aborted = list(read.entries)

    def _delete_snapshots_after(self, log_end_offset: int) -> None:
        """``ProducerStateManager#truncateAndReload``: snapshots past the log end go."""
        for offset in snapshot_offsets(self.dir):
            if offset > log_end_offset:
                (self.dir / snapshot_file_name(offset)).unlink(missing_ok=True)


def _next_base(segments: list[LogSegment], seg: LogSegment) -> int | None:
    i = segments.index(seg)
    return segments[i + 1].base_offset if i + 1 < len(segments) else None


def replay(psm: ProducerStateManager, scan: SegmentScan, start: int, upto: int | None,
           aborted: list[AbortedTxnEntry] | None, *, end: int | None = None,
           advance_high_watermark: bool = True) -> int:
    """``UnifiedLog#loadProducersFromRecords`` / ``LogSegment#updateProducerState`` for the
    batches of ``scan`` whose last offset is at or above ``start`` and whose base offset is
    below ``upto`` (and that end by byte ``end``): each producer batch through
    ``ProducerAppendInfo`` (origin REPLICATION; markers keep their coordinator epoch); an abort
    adds its ``.txnindex`` entry to ``aborted``. Returns the number of batches replayed.
    A follower's append (``UnifiedLog#appendAsFollower``) passes ``advance_high_watermark``
    False: its high watermark comes from the leader, not from its own log end."""
    h = scan.headers
    if not len(h):
        return 0
    rows = h.last_offset >= start
    if upto is not None:
        rows &= h.base_offset < upto
    if end is not None:
        rows &= h.next_position <= end
    if not rows.any():
        return 0
    base = h.base_offset[rows].tolist()
    last = h.last_offset[rows].tolist()
    pid = h.producer_id[rows].tolist()
    epoch = h.producer_epoch[rows].tolist()
    base_seq = h.base_sequence[rows].tolist()
    last_seq = h.last_sequence[rows].tolist()
    max_ts = h.max_timestamp[rows].tolist()
    is_txn = h.is_transactional[rows].tolist()
    is_ctl = h.is_control[rows].tolist()
    magic = h.magic[rows].tolist()
    control = scan.control_type[rows].tolist()
    coordinator = scan.coordinator_epoch[rows].tolist()
    for i in range(len(base)):
        if pid[i] >= 0 and magic[i] >= 2:
            info = psm.prepare_update(pid[i], AppendOrigin.REPLICATION)
            completed = None
            if not is_ctl[i]:
                info.append_data_batch(epoch[i], base_seq[i], last_seq[i], max_ts[i], base[i],
                                       last[i], is_txn[i])
            elif control[i] in (ControlType.COMMIT, ControlType.ABORT):
                completed = info.append_end_txn_marker(
                    is_commit=control[i] == ControlType.COMMIT, coordinator_epoch=coordinator[i],
                    producer_epoch=epoch[i], offset=base[i], timestamp=max_ts[i],
                    transaction_version=TV_UNKNOWN)
            psm.update(info)
            if completed is not None:
                if completed.is_aborted and aborted is not None:
                    aborted.append(AbortedTxnEntry(
                        producer_id=completed.producer_id, first_offset=completed.first_offset,
                        last_offset=completed.last_offset,
                        last_stable_offset=psm.last_stable_offset(completed)))
                psm.complete_txn(completed)
        psm.update_map_end_offset(last[i] + 1)
        if advance_high_watermark:
            psm.on_high_watermark_updated(last[i] + 1)
    return len(base)
