"""The broker's log cleaner: compacts the logs whose cleanup.policy has ``compact``.

Mirrors ``LogCleaner``'s ``CleanerThread#cleanFilthiestLog`` (the filthiest log by cleanable
ratio, then ``deleteOldSegments`` on every compacted log), ``LogCleanerManager`` (the first dirty
offsets in ``cleaner-offset-checkpoint``, ``doneCleaning``) and ``Cleaner#doClean`` /
``#cleanSegments`` / ``#cleanInto`` with the rules of :mod:`kafkatx.semantics.log_cleaning` and
:mod:`kafkatx.semantics.cleaner_selection`: each group of segments is cleaned into
``<base>.log.cleaned`` (with its indexes and ``.txnindex``), flushed, given the last old
segment's modification time, then swapped in through ``.swap`` files
(:mod:`kafkatx.broker.logs.segment_swap`).

Kafka cleans on background threads. Here a clean is a generator of steps (:data:`Step`): it
stops after every batch it reads, so the event loop can serve requests between two slices of
work (:func:`run_steps` runs it through at once, ``Server``'s cleaner loop a few milliseconds
at a time), and hands the fsyncs of its new files to the caller (a worker thread). Requests
served meanwhile may truncate, shrink or delete the log; as ``LogCleanerManager
#abortAndPauseCleaning`` aborts a clean then, each step checks the segments it works on are
still those it started from, and a clean that finds them changed removes its ``.cleaned``
files and ends without swapping anything or moving the checkpoint.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Generator, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from kafkatx.broker.logdir.work_steps import Step, Steps, run_steps
from kafkatx.broker.logs.batch_header import BatchHeader, split_batches
from kafkatx.broker.logs.files import fsync_dir
from kafkatx.broker.logs.log_segment import LogSegment
from kafkatx.broker.logs.partition_log import PartitionLog
from kafkatx.broker.logs.segment_swap import change_suffix, segment_files
from kafkatx.formats.record_batch import Record, parse_batch
from kafkatx.formats.txn_index import AbortedTxnEntry, build_txn_index
from kafkatx.lazy_dataclass import dataclass
from kafkatx.semantics.cleaner_selection import (
    LogToClean,
    SegmentInfo,
    group_segments_by_size,
    log_to_clean,
)
from kafkatx.semantics.log_cleaning import (
    BatchDecision,
    CleanedTransactionMetadata,
    LastRecord,
    OffsetMap,
    check_batch_retention,
    filter_batch,
    last_records_of_active_producers,
    map_batch,
)
from kafkatx.semantics.swap_recovery import CLEANED_SUFFIX, DELETED_SUFFIX, SWAP_SUFFIX
from kafkatx.storage.segment_writer import PartitionWriter

if TYPE_CHECKING:
    from kafkatx.broker.logdir.log_manager import LogManager

# The points a ``crash-after:cleaned|swap`` fault stops a clean at.
AFTER_CLEANED = "cleaned"
AFTER_SWAP = "swap"

#: A batch with at least this many records is decoded in a worker thread (smaller ones are
#: quicker in the event loop than a thread hand-off).
THREAD_RECORDS = 64


class CleanAborted(Exception):
    """The log changed under the clean (truncated, retention, deleted)."""


class _Guard:
    """The segments below the first uncleanable offset as the clean found them
    (``LogCleanerManager`` marks the log in progress; truncation and deletion abort it)."""

    def __init__(self, logs: LogManager | None, log: PartitionLog, upper: int) -> None:
        self.logs = logs
        self.log = log
        self.upper = upper
        self.shape = self._shape()

    def _shape(self) -> tuple[tuple[int, int, int], ...]:
        return tuple((seg.base_offset, id(seg), seg.size) for seg in self.log.segments
                     if seg.base_offset < self.upper)

    def refresh(self) -> None:
        """After the clean's own swap of a group."""
        self.shape = self._shape()

    def check(self) -> None:
        if self.logs is not None and self.logs.get(self.log.topic,
                                                  self.log.partition) is not self.log:
            raise CleanAborted(f"{self.log.name} was deleted")
        if self._shape() != self.shape:
            raise CleanAborted(f"{self.log.name} changed (truncated or segments deleted)")


@dataclass(frozen=True, slots=True, kw_only=True)
class CleanResult:
    """One log cleaned: [first dirty offset, end offset) and the segments before and after."""

    topic: str
    partition: int
    first_dirty_offset: int
    end_offset: int
    segments_before: int
    segments_after: int


class LogCleaner:
    """The cleaner of one log dir; ``crash_at(step)`` is asked at each crash point."""

    def __init__(self, logs: LogManager,
                 crash_at: Callable[[str], None] = lambda _step: None) -> None:
        self.logs = logs
        self.crash_at = crash_at
        self.aborted: str | None = None  # why the last clean was abandoned

    def checkpoints(self) -> dict[tuple[str, int], int]:
        """``LogCleanerManager#allCleanerCheckpoints``."""
        return self.logs.cleaner_checkpoints()

    def update_checkpoint(self, log: PartitionLog, offset: int) -> None:
        """``LogCleanerManager#updateCheckpoints``."""
        self.logs.update_cleaner_checkpoints({(log.topic, log.partition): offset})

    # -- choosing -----------------------------------------------------------------------------

    def _to_clean(self, log: PartitionLog, checkpoint: int | None, now_ms: int) -> LogToClean:
        config = log.config
        return log_to_clean(
            [_segment_info(seg, now_ms) for seg in log.segments], checkpoint=checkpoint,
            log_start_offset=log.log_start_offset, log_end_offset=log.log_end_offset,
            last_stable_offset=log.last_stable_offset, now_ms=now_ms,
            min_compaction_lag_ms=config.min_compaction_lag_ms,
            max_compaction_lag_ms=config.max_compaction_lag_ms)

    def grab_filthiest(self, now_ms: int) -> tuple[PartitionLog, LogToClean] | None:
        """``LogCleanerManager#grabFilthiestCompactedLog``."""
        checkpoints = self.checkpoints()
        best: tuple[PartitionLog, LogToClean] | None = None
        for log in self.logs.all_logs():
            if not log.config.compact:
                continue
            ltc = self._to_clean(log, checkpoints.get((log.topic, log.partition)), now_ms)
            if ltc.force_update_checkpoint:
                self.update_checkpoint(log, ltc.first_dirty_offset)
            if not ltc.should_clean(log.config.min_cleanable_dirty_ratio):
                continue
            if best is None or ltc.cleanable_ratio > best[1].cleanable_ratio:
                best = (log, ltc)
        return best

    def clean_filthiest(self, now_ms: int) -> CleanResult | None:
        """The whole of :meth:`clean_filthiest_steps` at once."""
        result = run_steps(self.clean_filthiest_steps(now_ms))
        assert result is None or isinstance(result, CleanResult)
        return result

    def clean_filthiest_steps(self, now_ms: int
                              ) -> Generator[Step, None, CleanResult | None]:
        """``CleanerThread#cleanFilthiestLog``: clean the filthiest log (its checkpoint set to the
        end offset, ``doneCleaning``), then ``deleteOldSegments`` on the compacted logs. A clean
        aborted because the log changed meanwhile leaves the checkpoint alone; the log is
        chosen again on a later round."""
        chosen = self.grab_filthiest(now_ms)
        result = None
        self.aborted = None
        if chosen is not None:
            log, ltc = chosen
            before = len(log.segments)
            try:
                end: int | None = yield from clean_log_steps(
                    log, ltc.first_dirty_offset, ltc.first_uncleanable_offset, now_ms,
                    self.crash_at, self.logs)
            except CleanAborted as exc:
                self.aborted = str(exc)
                end = None
            if end is not None:
                self.update_checkpoint(log, end)
                result = CleanResult(topic=log.topic, partition=log.partition,
                                     first_dirty_offset=ltc.first_dirty_offset,
                                     end_offset=end, segments_before=before,
                                     segments_after=len(log.segments))
        yield from self.logs.cleanup_logs_steps(now_ms, compacted=True)
        return result


def clean_log(log: PartitionLog, first_dirty_offset: int, first_uncleanable_offset: int,
              now_ms: int, crash_at: Callable[[str], None] = lambda _step: None) -> int:
    """The whole of :func:`clean_log_steps` at once (nothing else runs meanwhile)."""
    end = run_steps(clean_log_steps(log, first_dirty_offset, first_uncleanable_offset, now_ms,
                                    crash_at))
    assert isinstance(end, int)
    return end


def clean_log_steps(log: PartitionLog, first_dirty_offset: int, first_uncleanable_offset: int,
                    now_ms: int, crash_at: Callable[[str], None] = lambda _step: None,
                    logs: LogManager | None = None) -> Steps:
    """``Cleaner#doClean``: the offset map of [first dirty, first uncleanable), then every
    segment below its end cleaned group by group. Returns the end offset (the next first dirty
    offset); raises :class:`CleanAborted` when the log changed meanwhile (the groups already
    swapped in stay, as in Kafka)."""
    upper = first_uncleanable_offset
    guard = _Guard(logs, log, upper)
    offset_map = yield from _build_offset_map(log, first_dirty_offset, upper, guard)
    end = offset_map.latest_offset + 1
    transactions = CleanedTransactionMetadata()
    active = last_records_of_active_producers(
        {pid: (e.last_data_offset, e.producer_epoch)
         for pid, e in log.producer_state.producers.items()})
    infos = [_segment_info(seg, now_ms) for seg in log.segments if seg.base_offset < end]
    for group in group_segments_by_size(infos, log.config.segment_bytes, upper):
        yield from _clean_segments(log, [g.base_offset for g in group], offset_map,
                                   transactions, active, upper, now_ms, crash_at, guard)
    return end


def _build_offset_map(log: PartitionLog, start: int, end: int, guard: _Guard
                      ) -> Generator[Step, object, OffsetMap]:
    """``Cleaner#buildOffsetMap`` / ``#buildOffsetMapForSegment``."""
    offset_map = OffsetMap()
    transactions = CleanedTransactionMetadata()
    transactions.add_aborted_transactions(log.aborted_entries(start, end))
    dirty = log.segments_in(start, end)
    for i, seg in enumerate(dirty):
        following = dirty[i + 1].base_offset if i + 1 < len(dirty) else end
        for data, pos, header, control_type in _batches(seg.path):
            if header.last_offset < start:
                continue

            def records(data: bytes = data, pos: int = pos) -> list[Record]:
                return list(parse_batch(data, pos, decode_records=True).records or ())

            if header.records_count >= THREAD_RECORDS and not header.is_control:
                yield functools.partial(map_batch, offset_map, header, control_type, records,
                                        transactions, start)
            else:
                map_batch(offset_map, header, control_type, records, transactions, start)
            yield None
            guard.check()
        offset_map.update_latest_offset(following - 1)
    return offset_map


def _clean_segments(log: PartitionLog, bases: list[int], offset_map: OffsetMap,
                    transactions: CleanedTransactionMetadata,
                    active: Mapping[int, LastRecord], upper: int, now_ms: int,
                    crash_at: Callable[[str], None], guard: _Guard
                    ) -> Generator[Step, object, None]:
    """``Cleaner#cleanSegments``: the group cleaned into one ``.cleaned`` segment named by its
    first base offset, flushed, given the last old segment's modification time, then
    ``replaceSegments`` (after a last check that the log is as the clean found it)."""
    first = bases[0]
    for stale in segment_files(log.dir, first, CLEANED_SUFFIX):
        stale.unlink()
    writer = PartitionWriter(log.dir, segment_bytes=1 << 62, file_suffix=CLEANED_SUFFIX)
    writer.roll(first)
    try:  # aborted, or closed by a stopping broker: the .cleaned files go (Cleaner#cleanSegments)
        yield from _filter_group(log, bases, offset_map, transactions, active, upper, now_ms,
                                 writer, guard)
        writer.close()
        if transactions.cleaned_index:
            (log.dir / f"{first:020d}.txnindex{CLEANED_SUFFIX}").write_bytes(
                build_txn_index(transactions.cleaned_index))
        new_files = segment_files(log.dir, first, CLEANED_SUFFIX)
        yield new_files
        guard.check()
    except BaseException:
        writer.close()
        for path in segment_files(log.dir, first, CLEANED_SUFFIX):
            path.unlink(missing_ok=True)
        raise
    segments = {seg.base_offset: seg for seg in log.segments}
    modified = segments[bases[-1]].path.stat().st_mtime_ns
    for path in new_files:
        os.utime(path, ns=(modified, modified))
    crash_at(AFTER_CLEANED)
    _replace_segments(log, bases, new_files, list(transactions.cleaned_index), crash_at)
    guard.refresh()


def _filter_group(log: PartitionLog, bases: list[int], offset_map: OffsetMap,
                  transactions: CleanedTransactionMetadata, active: Mapping[int, LastRecord],
                  upper: int, now_ms: int, writer: PartitionWriter, guard: _Guard
                  ) -> Generator[Step, object, None]:
    """``Cleaner#cleanInto`` for each segment of the group: what is kept, into ``writer``."""
    transactions.cleaned_index = []
    segments = {seg.base_offset: seg for seg in log.segments}
    for i, base in enumerate(bases):
        batches = list(_batches(segments[base].path))
        following = (bases[i + 1] if i + 1 < len(bases)
                     else batches[-1][2].last_offset + 1 if batches else base)
        transactions.add_aborted_transactions(log.aborted_entries(base, following))
        for data, pos, header, control_type in batches:
            decision = check_batch_retention(
                header, control_type, transactions=transactions, active_producers=active,
                upper_bound_offset=upper, now_ms=now_ms)
            filtered = functools.partial(_filtered, data, pos, header, decision, offset_map,
                                         now_ms, log.config.delete_retention_ms)
            out = ((yield filtered) if header.records_count >= THREAD_RECORDS
                   and not decision.discard_records else filtered())
            assert out is None or isinstance(out, bytes)
            if out is not None:
                writer.append(out)
            yield None
            guard.check()


def _filtered(data: bytes, pos: int, header: BatchHeader, decision: BatchDecision,
              offset_map: OffsetMap, now_ms: int, delete_retention_ms: int) -> bytes | None:
    """One batch decoded and filtered (only the clean's own data: a worker thread may run
    it)."""
    records: list[Record] = []
    if not decision.discard_records:
        records = list(parse_batch(data, pos, decode_records=True).records or ())
    return filter_batch(data[pos:pos + header.size], header, records, decision, offset_map,
                        now_ms=now_ms, delete_retention_ms=delete_retention_ms)


def _replace_segments(log: PartitionLog, bases: list[int], cleaned: list[Path],
                      aborted: list[AbortedTxnEntry], crash_at: Callable[[str], None]) -> None:
    """``LocalLog#replaceSegments``: ``.cleaned`` -> ``.swap``, the old files ``.deleted`` and
    removed, ``.swap`` -> plain; the in-memory segments follow."""
    swaps = change_suffix(cleaned, CLEANED_SUFFIX, SWAP_SUFFIX)
    fsync_dir(log.dir)
    crash_at(AFTER_SWAP)
    for base in bases:
        for path in change_suffix(segment_files(log.dir, base), "", DELETED_SUFFIX):
            path.unlink()
    change_suffix(swaps, SWAP_SUFFIX, "")
    fsync_dir(log.dir)
    log.replace_with_cleaned(bases[0], bases, aborted)


def _segment_info(seg: LogSegment, now_ms: int) -> SegmentInfo:
    extent = seg.extent(now_ms)
    first = seg.first_batch_timestamp
    return SegmentInfo(base_offset=extent.base_offset, size=extent.size,
                       largest_timestamp=extent.largest_timestamp,
                       first_batch_timestamp=-1 if first is None else first)


def _batches(path: Path) -> Iterator[tuple[bytes, int, BatchHeader, int | None]]:
    """(segment bytes, position, header, control type or None) of every batch of a segment."""
    data = path.read_bytes()
    headers, _ = split_batches(data)
    for h in headers:
        control_type = None
        if h.is_control and h.records_count > 0:
            control = parse_batch(data, h.position).control
            control_type = control.type_id if control is not None else None
        yield data, h.position, h, control_type
