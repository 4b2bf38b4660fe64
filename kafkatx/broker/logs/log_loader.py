"""Loading a partition directory at start-up: Kafka's ``LogLoader``, carried out.

What the load does is decided once, by the model of ``LogManager#loadLog`` /
``LogLoader#load`` in :mod:`kafkatx.semantics.log_load` (the same model ``--after-restart``
shows on evidence). This module hands it the broker's own partition directory, then carries
out the file changes it decided (``.deleted``/``.cleaned``/``.swap`` leftovers, the bytes cut
after the last valid batch, rebuilt ``.index``/``.timeindex``/``.txnindex`` files, segments
deleted, producer snapshots written and deleted) and opens the segments it leaves.

Where ``kafkatx serve`` differs from Kafka: damage other than a partial tail of the last
segment (zeros or a batch cut short) and legacy (v0/v1) batches in a segment to recover are
refused (``LogLoadError``) before anything is changed, rather than truncated away.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import field
from pathlib import Path

from kafkatx.broker.logs.files import atomic_write
from kafkatx.broker.logs.log_segment import BatchTable, LogSegment
from kafkatx.errors import KafkatxError
from kafkatx.formats.producer_snapshot import build_producer_snapshot, snapshot_file_name
from kafkatx.formats.segment import TRUNCATED_BATCH, ZERO_PADDING
from kafkatx.formats.segment_scan import SegmentScan
from kafkatx.formats.txn_index import build_txn_index
from kafkatx.lazy_dataclass import dataclass
from kafkatx.semantics.loaded_segment import LoadedSegment, file_name
from kafkatx.semantics.log_load import LoadInputs, LoadOutcome, PartitionName, load_partition
from kafkatx.semantics.producer_state import ProducerStateManager
from kafkatx.semantics.producer_state_load import replay
from kafkatx.storage.layout import parse_topic_partition_name
from kafkatx.storage.partition_files import LastScan, whole_scan
from kafkatx.storage.segment_writer import SegmentIndexes

__all__ = ["LoadInterrupted", "LoadProgress", "LoadedLog", "LogLoadError", "LogLoader",
           "replay", "snapshot_offsets"]


class LogLoadError(KafkatxError):
    """An existing partition directory the broker will not append to (damage other than a
    partial tail, a legacy segment that needs recovery, a load Kafka's would fail)."""


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
    log_start_offset: int = 0
    recovered_segments: int = 0
    recovered_bytes: int = 0
    replayed_batches: int = 0
    snapshot_offset: int | None = None  # the last snapshot found on disk the load started from
    problems: list[str] = field(default_factory=list)


def snapshot_offsets(directory: Path) -> list[int]:
    out = []
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.name.endswith(".snapshot"):
                with contextlib.suppress(ValueError):
                    out.append(int(entry.name.split(".")[0]))
    return sorted(out)


class _OwnFiles:
    """The broker's own partition directory as the load model reads it."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self._scans = LastScan()
        self.moved: dict[str, str] = {}  # a .swap file renamed by the load: its new name

    def _path(self, name: str) -> Path:
        return self.dir / self.moved.get(name, name)

    def names(self) -> Iterable[str]:
        with os.scandir(self.dir) as entries:
            return [e.name for e in entries if e.is_file()]

    def size(self, name: str) -> int:
        return self._path(name).stat().st_size

    def read(self, name: str, start: int = 0) -> bytes:
        with self._path(name).open("rb") as f:
            f.seek(start)
            return f.read()

    def scan(self, name: str) -> SegmentScan:
        return self._scans.get(name, self._path(name))

    def chunks(self, name: str, start: int = 0) -> Iterator[SegmentScan]:
        # serve opens each segment on its whole scan after the load: one chunk, kept
        return whole_scan(self.scan(name), start)

    def where(self, name: str) -> str:
        return str(self.dir / name)


class LogLoader:
    """Loads one partition directory into ``producer_state`` and a list of segments."""

    def __init__(self, directory: Path, producer_state: ProducerStateManager, *,
                 had_clean_shutdown: bool, recovery_point: int, log_start_offset: int = 0,
                 now_ms: int | None = None, progress: LoadProgress | None = None) -> None:
        self.dir = directory
        self.psm = producer_state
        self.inputs = LoadInputs(had_clean_shutdown=had_clean_shutdown,
                                 recovery_point=recovery_point,
                                 log_start_offset=log_start_offset, now_ms=now_ms)
        self.progress = progress or LoadProgress()

    def load(self) -> LoadedLog:
        files = _OwnFiles(self.dir)
        parsed = parse_topic_partition_name(self.dir.name)
        name = PartitionName(topic=parsed.topic if parsed else self.dir.name,
                             partition=parsed.partition if parsed else 0,
                             state=parsed.state if parsed else "live", path=str(self.dir))
        outcome = load_partition(name, files, self.inputs,
                                 max_transaction_timeout_ms=self.psm.max_transaction_timeout_ms,
                                 progress=self.progress.step, state=self.psm)
        if outcome.failure is not None:
            raise LogLoadError(f"{self.dir}: {outcome.failure}")
        self._refuse_damage(outcome)
        problems = self._carry_out(outcome, files)
        segments = [self._open(seg, seg is outcome.segments[-1]) for seg in outcome.segments]
        for seg in outcome.segments:
            if seg.recovered:
                self.progress.segments_recovered += 1
                self.progress.bytes_recovered += seg.size
        return LoadedLog(segments=segments, log_end_offset=outcome.log_end_offset,
                         recovery_point=outcome.recovery_point,
                         log_start_offset=outcome.log_start_offset,
                         recovered_segments=len(set(outcome.recovered)),
                         recovered_bytes=sum(s.size for s in outcome.segments if s.recovered),
                         replayed_batches=outcome.replayed_batches,
                         snapshot_offset=outcome.found_snapshot, problems=problems)

    def _refuse_damage(self, outcome: LoadOutcome) -> None:
        """serve appends only to logs of v2 batches whose only damage is a partial tail."""
        last = outcome.segments[-1] if outcome.segments else None
        for seg in outcome.segments:
            if not seg.recovered or seg.files is None:
                continue
            scan = seg.scan()
            legacy = (scan.headers.magic < 2) & seg.rows()
            if legacy.any():
                position = int(scan.headers.position[legacy.argmax()])
                raise LogLoadError(f"{self.dir / seg.log}:{position}: a legacy (v0/v1) message; "
                                   "kafkatx serve only appends to logs of v2 batches")
            if seg.size >= seg.original_size:
                continue
            problem = next((p for p in scan.problems if p.position == seg.size), None)
            tail = (seg is last and problem is not None
                    and problem.kind in (TRUNCATED_BATCH, ZERO_PADDING))
            if not tail:
                what = str(problem) if problem is not None else (
                    f"{self.dir / seg.log}:{seg.size}: a batch whose CRC does not check")
                raise LogLoadError(f"{what}; kafkatx serve only appends to logs without damage "
                                   "(use `kafkatx inspect` on this log dir)")

    def _carry_out(self, outcome: LoadOutcome, files: _OwnFiles) -> list[str]:
        """The file changes of the load, made; returns the problems to report."""
        problems: list[str] = []
        for action in outcome.actions:
            path = self.dir / action.name
            if action.name.endswith(".snapshot"):
                continue
            if action.kind == "deleted":
                path.unlink(missing_ok=True)
            elif action.kind == "renamed" and action.detail.startswith("to .deleted"):
                path.unlink(missing_ok=True)  # deleted at once: nothing reads it again
            elif action.kind == "renamed":
                os.replace(path, self.dir / action.detail.removeprefix("to "))
                files.moved[action.name] = action.detail.removeprefix("to ")
            if action.step in ("LogLoader#removeTempFilesAndCollectSwapFiles", "LogLoader#load"):
                problems.append(f"{path}: removed ({action.detail})" if action.kind == "deleted"
                                else f"{path}: swapped in (a clean interrupted after its swap "
                                     "files were complete)")
            elif action.kind == "created" and action.name.endswith(".index"):
                problems.append(f"{path}: rebuilding its .index and .timeindex (an index file "
                                "is missing)")
            elif action.kind in ("deleted", "renamed", "truncated"):
                problems.append(f"{path}: {action.kind} {action.detail} ({action.step})")
        for seg in outcome.segments:
            if seg.recovered:
                self._rewrite(seg)
            elif seg.timeindex is not None and not (self.dir / seg.timeindex).exists():
                (self.dir / seg.timeindex).write_bytes(b"")
        snaps = outcome.snapshots
        for offset in set(snaps.found) - set(snaps.files):
            (self.dir / snapshot_file_name(offset)).unlink(missing_ok=True)
        for offset, snap in snaps.files.items():
            if snap.entries is not None:
                atomic_write(self.dir / snapshot_file_name(offset),
                             build_producer_snapshot(snap.entries))
        return problems

    def _rewrite(self, seg: LoadedSegment) -> None:
        """``LogSegment#recover``'s files: the log cut after its last valid batch, its indexes
        rebuilt, its ``.txnindex`` reset and refilled."""
        log = self.dir / file_name(seg.base_offset, ".log")
        if not log.exists():
            log.touch()
        if log.stat().st_size > seg.size:
            with open(log, "r+b") as f:
                f.truncate(seg.size)
        indexes = SegmentIndexes(base_offset=seg.base_offset)
        if seg.size:
            h = seg.scan().headers
            keep = seg.rows()
            for position, size, last, max_ts in zip(
                    h.position[keep].tolist(), h.size[keep].tolist(),
                    h.last_offset[keep].tolist(), h.max_timestamp[keep].tolist(), strict=True):
                indexes.on_append(position, size, last, max_ts)
        indexes.write_indexes(self.dir)
        txn = self.dir / file_name(seg.base_offset, ".txnindex")
        wanted = build_txn_index(seg.aborted)
        current = txn.read_bytes() if txn.exists() else None
        if current != wanted and (current is not None or seg.aborted):
            atomic_write(txn, wanted)

    def _open(self, seg: LoadedSegment, last: bool) -> LogSegment:
        path = self.dir / file_name(seg.base_offset, ".log")
        opened = LogSegment(seg.base_offset, path, size=seg.size)
        opened.aborted = list(seg.aborted)
        if seg.recovered and seg.size:
            h = seg.scan().headers
            keep = seg.rows()
            if keep.any():
                ts = h.max_timestamp[keep]
                at = int(ts.argmax())
                opened.max_timestamp_so_far = int(ts[at])
                opened.offset_of_max_timestamp_so_far = int(h.last_offset[keep][at])
                opened.first_batch_timestamp = int(ts[0])
            if last:
                opened.table = BatchTable.from_scan(seg.scan(), seg.size)
        elif seg.size:
            opened.load_max_timestamp()
        return opened
