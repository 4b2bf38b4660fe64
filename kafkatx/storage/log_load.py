"""What a broker starting on a partition directory makes of it: Kafka's log load, as one model.

Mirrors ``LogManager#loadLogs`` / ``#loadLog`` and ``UnifiedLog.create`` -> ``LogLoader#load``
(Kafka 4.0 to 4.4 run the same steps), step by step:

1. the clean-shutdown marker (``CleanShutdownFileHandler``): present, nothing is recovered;
2. the recovery point (``recovery-point-offset-checkpoint``, 0 when the partition has no line
   or the file does not read) and the log start (``log-start-offset-checkpoint``, likewise);
3. ``.deleted``, ``.cleaned`` and ``.swap`` files (``removeTempFilesAndCollectSwapFiles`` and
   the swap passes, planned by :mod:`kafkatx.semantics.swap_recovery`);
4. ``loadSegmentFiles``: an index file without its ``.log`` is deleted; a segment whose
   ``.index`` is missing, or whose ``.txnindex`` fails ``TransactionIndex#sanityCheck`` (an
   entry ending below the segment's base offset), is recovered on the spot
   (``LogLoader#recoverSegment``); a missing ``.timeindex`` is created empty;
5. ``recoverLog`` after an unclean shutdown: every segment from the one holding the recovery
   point is recovered (``LogSegment#recover``: batches checked, indexes and ``.txnindex``
   rebuilt, the bytes after the first invalid batch cut off); once a segment had bytes cut off,
   the segments after it are deleted (``removeAndDeleteSegmentsAsync``); each recovery rebuilds
   the producer state up to the segment from the newest snapshot at or below it, which deletes
   the snapshots above it (``ProducerStateManager#truncateAndReload``), and writes a snapshot at
   its end; a log end below the log start checkpoint deletes every segment
   (``deleteSegmentsIfLogStartGreaterThanLogEnd``);
6. the log start: ``max(checkpoint, first segment's base offset)``;
7. ``ProducerStateManager#removeStraySnapshots``, then ``UnifiedLog.rebuildProducerState`` up to
   the log end: after a clean shutdown without any snapshot nothing is replayed (no producer
   is known, no transaction is open), else the newest snapshot that reads (in (log start,
   log end]) plus the batches after it;
8. ``UnifiedLog``'s constructor: a first unstable offset below the log start is the log start.

Partition directories named ``-delete`` are loaded without ``recoverLog`` (they are deleted
afterwards), ``-future`` ones become future logs and ``-stray`` ones are not served; a live
directory whose topic the cluster no longer has is renamed ``-stray`` (that needs the metadata
image and is not predicted here).

Pure: the evidence is read, never written. Every file the load would create, rewrite, truncate
or delete is a :class:`FileAction` naming the Kafka step; ``kafkatx serve`` carries them out
(:mod:`kafkatx.broker.log_loader`), ``--after-restart`` reports them.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kafkatx.formats.offset_index import read_offset_index
from kafkatx.formats.producer_snapshot import snapshot_file_name
from kafkatx.formats.segment_scan import SegmentScan, scan_segment
from kafkatx.formats.txn_index import AbortedTxnEntry, read_txn_index
from kafkatx.formats.txn_index import sanity_check as txn_index_sanity
from kafkatx.semantics.producer_state import ProducerStateError, ProducerStateManager
from kafkatx.semantics.swap_recovery import SWAP_SUFFIX, plan_swap_recovery
from kafkatx.storage.discovery import PartitionDir, read_root_checkpoints
from kafkatx.storage.files import open_bytes
from kafkatx.storage.layout import parse_offset_file_name
from kafkatx.storage.producer_state_load import (
    FileAction,
    LoadFailure,
    LoadingProducerState,
    SnapshotDir,
    rebuild_producer_state,
    replay,
)
from kafkatx.storage.segment_writer import segment_name

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")

ScanOf = Callable[[Path], SegmentScan]


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadInputs:
    """What ``LogManager#loadLogs`` gives ``UnifiedLog.create`` for one partition."""

    had_clean_shutdown: bool
    recovery_point: int
    log_start_offset: int
    now_ms: int | None = None  # the broker's clock (producer expiry on snapshot load)
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {"had_clean_shutdown": self.had_clean_shutdown,
                "recovery_point_checkpoint": self.recovery_point,
                "log_start_offset_checkpoint": self.log_start_offset, "notes": list(self.notes)}


def load_inputs(pdir: PartitionDir, *, now_ms: int | None = None) -> LoadInputs:
    """The clean-shutdown marker and checkpoints of the log dir holding ``pdir``
    (``LogManager#loadLogs``: a checkpoint that does not read counts as empty; a partition
    without a line gets 0)."""
    log_dir = pdir.log_dir
    notes: list[str] = []
    if log_dir is None:
        notes.append("the partition directory was given without its log dir: no clean-shutdown "
                     "marker and no checkpoints, so recovery starts at offset 0")
        return LoadInputs(had_clean_shutdown=False, recovery_point=0, log_start_offset=0,
                          now_ms=now_ms, notes=tuple(notes))
    checkpoints = read_root_checkpoints(log_dir)
    values: dict[str, int] = {}
    for name in (RECOVERY_POINT_CHECKPOINT, LOG_START_CHECKPOINT):
        cp = checkpoints.get(name)
        if cp is not None and cp.problems:
            notes.append(f"{name} does not read ({cp.problems[0]}): the broker takes it as empty")
            cp = None
        values[name] = 0 if cp is None else cp.as_map().get((pdir.topic, pdir.partition), 0)
    return LoadInputs(had_clean_shutdown=log_dir.clean_shutdown,
                      recovery_point=values[RECOVERY_POINT_CHECKPOINT],
                      log_start_offset=values[LOG_START_CHECKPOINT], now_ms=now_ms,
                      notes=tuple(notes))


@dataclass(slots=True, eq=False)
class LoadedSegment:
    """A segment as the load leaves it: ``size`` valid bytes of ``log`` (an evidence file),
    and the ``.txnindex`` entries the broker serves from."""

    base_offset: int
    log: Path
    file_size: int
    index: Path | None = None
    timeindex: Path | None = None
    txnindex: Path | None = None
    size: int = -1
    recovered: bool = False
    _aborted: list[AbortedTxnEntry] | None = None
    _scan_of: ScanOf | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.size < 0:
            self.size = self.file_size

    @property
    def name(self) -> str:
        return segment_name(self.base_offset, ".log")

    def scan(self) -> SegmentScan:
        """The segment's batches within its valid bytes."""
        assert self._scan_of is not None
        return self._scan_of(self.log)

    def rows(self) -> np.ndarray:
        return self.scan().headers.next_position <= self.size

    @property
    def aborted(self) -> list[AbortedTxnEntry]:
        """The ``.txnindex`` entries (as found, or as recovery rebuilt them)."""
        if self._aborted is None:
            self._aborted = []
            if self.txnindex is not None:
                with open_bytes(self.txnindex) as data:
                    read = read_txn_index(bytes(data), path=str(self.txnindex),
                                          base_offset=self.base_offset)
                self._aborted = list(read.entries)
        return self._aborted

    def _bytes(self) -> bytes:
        with open_bytes(self.log) as data:
            return bytes(data[:self.size])

    def next_offset(self) -> int:
        """``LogSegment#readNextOffset``: the next offset after the last whole batch, read from
        the offset index's last entry on (``FileLogInputStream``: sizes only, no CRC)."""
        if self.recovered:
            h = self.scan().headers
            valid = np.flatnonzero(self.rows())
            return int(h.last_offset[valid[-1]]) + 1 if len(valid) else self.base_offset
        data = self._bytes()
        last = None
        for position, _size in _walk(data, self._last_index_position(), str(self.log)):
            last = position
        return self.base_offset if last is None else _next_offset_at(data, last)

    def _last_index_position(self) -> int:
        if self.index is None:
            return 0
        with open_bytes(self.index) as data:
            read = read_offset_index(bytes(data), base_offset=self.base_offset,
                                     path=str(self.index))
        return read.entries[-1].position if read.entries else 0

    def check_offsets(self, valid: int, index_interval: int) -> None:
        """What ``LogSegment#recover`` throws on its way through the valid batches:
        ``LogSegmentOffsetOverflowException`` (an offset too far from the base for the
        indexes) and ``InvalidOffsetException`` (an index entry not above the previous one,
        at every ``index.interval.bytes``)."""
        h = self.scan().headers
        rows = np.flatnonzero(h.next_position <= valid)
        last_entry_offset: int | None = None
        last_entry_at = 0
        for j in rows.tolist():
            last = int(h.last_offset[j])
            if not 0 <= last - self.base_offset <= INT32_MAX:
                raise LoadFailure(f"{self.log}: offset {last} cannot be relative to the base "
                                  f"offset {self.base_offset} (LogSegmentOffsetOverflowException)")
            position = int(h.position[j])
            if position - last_entry_at > index_interval:
                if last_entry_offset is not None and last <= last_entry_offset:
                    raise InvalidOffset(f"{self.log}: offset {last} is not above the previous "
                                        f"index entry's {last_entry_offset}")
                last_entry_offset, last_entry_at = last, position

    def valid_bytes(self) -> int:
        """``LogSegment#recover``'s valid bytes: up to the first batch that is partial, cannot
        be read (``FileLogInputStream``) or does not check (``RecordBatch#ensureValid``: CRC,
        size)."""
        data = self._bytes()
        scan = self.scan()
        crc_ok = dict(zip(scan.headers.position.tolist(), scan.headers.crc_valid.tolist(),
                          strict=True))
        valid = 0
        try:
            for position, size in _walk(data, 0, str(self.log)):
                magic = data[position + 16]
                if not crc_ok.get(position, False) or (magic >= 2 and size + 12 < 61):
                    break
                valid = position + size + 12
        except LoadFailure:
            pass  # LogSegment#recover catches CorruptRecordException: the valid bytes end here
        return valid


class InvalidOffset(Exception):
    """``InvalidOffsetException`` while a segment's indexes are rebuilt."""


INT32_MAX = 2**31 - 1
INDEX_INTERVAL_BYTES = 4096  # index.interval.bytes, Kafka's default
LOG_OVERHEAD = 12  # offset + size
HEADER_SIZE_UP_TO_MAGIC = 17
MIN_RECORD_OVERHEAD = 14  # LegacyRecord.RECORD_OVERHEAD_V0


def _walk(data: bytes, start: int, where: str) -> Iterator[tuple[int, int]]:
    """``FileLogInputStream#nextBatch`` from ``start``: (position, size field) of each whole
    batch; a size field below 14 throws ``CorruptRecordException`` (``LoadFailure`` here)."""
    end = len(data)
    position = start
    while position < end - HEADER_SIZE_UP_TO_MAGIC:
        size = int.from_bytes(data[position + 8:position + 12], "big", signed=True)
        if size < MIN_RECORD_OVERHEAD:
            raise LoadFailure(f"{where}:{position}: record size {size} smaller than the minimum "
                              "record overhead (14): CorruptRecordException")
        if position > end - LOG_OVERHEAD - size:
            return
        yield position, size
        position += LOG_OVERHEAD + size


def _next_offset_at(data: bytes, position: int) -> int:
    """``RecordBatch#nextOffset`` of the entry at ``position``: v2, base offset + last offset
    delta + 1; v0/v1, the (wrapper) offset + 1."""
    offset = int.from_bytes(data[position:position + 8], "big", signed=True)
    if data[position + 16] >= 2:
        return offset + int.from_bytes(data[position + 23:position + 27], "big", signed=True) + 1
    return offset + 1


@dataclass(slots=True, kw_only=True)
class LoadOutcome:
    """What the broker has once the partition is loaded."""

    topic: str
    partition: int
    path: str
    state_name: str  # live | delete | future | stray
    inputs: LoadInputs
    log_start_offset: int = 0
    log_end_offset: int = 0
    recovery_point: int = 0
    segments: list[LoadedSegment] = field(default_factory=list)
    state: ProducerStateManager = field(default_factory=ProducerStateManager)
    actions: list[FileAction] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)  # what the load did, naming the Kafka step
    recovered: list[int] = field(default_factory=list)  # base offsets of recovered segments
    deleted_segments: list[int] = field(default_factory=list)
    snapshot_offset: int | None = None  # the snapshot the final rebuild started from
    replayed_batches: int = 0
    failure: str | None = None  # the load throws: the partition stays offline
    snapshots: SnapshotDir = field(default_factory=SnapshotDir)  # the .snapshot files after

    def file_changes(self) -> dict[str, list[str]]:
        """The net change to each file name: created, deleted (or renamed ``.deleted``),
        truncated, rewritten (a ``.txnindex`` or snapshot with other bytes than before)."""
        created: set[str] = set()
        deleted: set[str] = set()
        truncated: set[str] = set()
        rewritten: set[str] = set()
        for a in self.actions:
            if a.name.endswith(".snapshot"):
                continue
            if a.kind == "created":
                created.add(a.name)
                deleted.discard(a.name)
            elif a.kind in ("deleted", "renamed"):
                if a.name in created:
                    created.discard(a.name)
                else:
                    deleted.add(a.name)
            elif a.kind == "truncated":
                truncated.add(a.name)
            elif a.kind == "rewritten" and a.name.endswith(".txnindex"):
                rewritten.add(a.name)
        snaps = self.snapshots
        for offset in snaps.found - set(snaps.files):
            deleted.add(snapshot_file_name(offset))
        for offset, snap in snaps.files.items():
            if offset not in snaps.found:
                created.add(snapshot_file_name(offset))
            elif snap.entries is not None and snap.changed:
                rewritten.add(snapshot_file_name(offset))
        return {"created": sorted(created), "deleted": sorted(deleted),
                "truncated": sorted(truncated - deleted), "rewritten": sorted(rewritten - deleted)}

    @property
    def aborted(self) -> list[AbortedTxnEntry]:
        return [e for seg in self.segments for e in seg.aborted]

    def offset_metadata(self, offset: int) -> int:
        """``UnifiedLog#maybeConvertToOffsetMetadata`` -> ``LocalLog#read``: the offset Kafka
        keeps for ``offset`` (``FileRecords#searchForOffsetFromPosition``): the base offset of
        the batch holding it, else of the next batch, else the log end offset."""
        if offset >= self.log_end_offset:
            return offset
        bases = [s.base_offset for s in self.segments]
        first = max(bisect.bisect_right(bases, offset) - 1, 0)
        for seg in self.segments[first:]:
            h = seg.scan().headers
            rows = np.flatnonzero((h.next_position <= seg.size) & (h.last_offset >= offset))
            if len(rows):
                return int(h.base_offset[rows[0]])
        return self.log_end_offset

    def txn_indexes(self) -> list[tuple[int, list[AbortedTxnEntry]]]:
        return [(seg.base_offset, seg.aborted) for seg in self.segments]

    def to_dict(self) -> dict[str, object]:
        return {
            "topic": self.topic, "partition": self.partition, "path": self.path,
            "state": self.state_name, "inputs": self.inputs.to_dict(),
            "log_start_offset": self.log_start_offset, "log_end_offset": self.log_end_offset,
            "recovery_point": self.recovery_point, "failure": self.failure,
            "recovered_segments": self.recovered, "deleted_segments": self.deleted_segments,
            "snapshot_offset": self.snapshot_offset, "steps": self.steps,
            "files": [a.to_dict() for a in self.actions],
        }


def _default_scan(path: Path) -> SegmentScan:
    with open_bytes(path) as data:
        return scan_segment(data, path=str(path))


class _OneScan:
    """Keeps the scan read last (the load reads a segment several times in a row)."""

    def __init__(self, scan_of: ScanOf) -> None:
        self.scan_of = scan_of
        self.path: Path | None = None
        self.scan: SegmentScan | None = None

    def __call__(self, path: Path) -> SegmentScan:
        if path != self.path or self.scan is None:
            self.scan = self.scan_of(path)
            self.path = path
        return self.scan


def load_partition_dir(pdir: PartitionDir, inputs: LoadInputs | None = None, *,
                       scan: ScanOf | None = None, max_transaction_timeout_ms: int = 900_000,
                       progress: Callable[[], None] | None = None) -> LoadOutcome:
    """``LogManager#loadLog`` of ``pdir`` (see the module doc), without touching it."""
    inputs = inputs or load_inputs(pdir)
    loader = _Loader(pdir, inputs, _OneScan(scan or _default_scan), max_transaction_timeout_ms,
                     progress)
    try:
        try:
            loader.load()
        except ProducerStateError as exc:  # Kafka throws it from the replay too (any origin)
            raise LoadFailure(f"{exc} ({exc.kafka_error})") from None
    except LoadFailure as exc:
        loader.out.failure = str(exc)
        loader.out.steps.append(f"the load throws: {exc}; the partition does not come online")
    loader.out.actions = loader.actions + loader.snapshots.actions
    loader.out.snapshots = loader.snapshots
    return loader.out


class _Loader:
    def __init__(self, pdir: PartitionDir, inputs: LoadInputs, scan_of: ScanOf,
                 max_transaction_timeout_ms: int, progress: Callable[[], None] | None) -> None:
        self.pdir = pdir
        self.inputs = inputs
        self.scan_of = scan_of
        self.timeout = max_transaction_timeout_ms
        self.progress = progress
        self.actions: list[FileAction] = []
        self.files: dict[str, Path] = {}
        self.snapshots = SnapshotDir()
        self.out = LoadOutcome(topic=pdir.topic, partition=pdir.partition, path=str(pdir.path),
                               state_name=pdir.state, inputs=inputs)
        # UnifiedLog.create makes the partition's ProducerStateManager before LogLoader runs:
        # its snapshot map is the directory's snapshots at that moment.
        self.main: LoadingProducerState | None = None

    def act(self, kind: str, name: str, step: str, detail: str = "") -> None:
        self.actions.append(FileAction(kind, name, step, detail))

    def step(self, text: str) -> None:
        self.out.steps.append(text)

    # -- 3. leftovers --------------------------------------------------------------------------

    def _list_files(self) -> None:
        pdir = self.pdir
        for seg in (*pdir.segments, *pdir.other_segments):
            for path in seg.files:
                self.files[path.name] = path
        for _, path in (*pdir.snapshots, *pdir.other_snapshots):
            self.files[path.name] = path

    def _leftovers(self) -> None:
        if not self.pdir.other_segments and not self.pdir.other_snapshots:
            return
        step = "LogLoader#removeTempFilesAndCollectSwapFiles"
        plan = plan_swap_recovery(self.files, self._swap_next_offset)
        for names, why in ((plan.deleted_leftovers, "left by an interrupted deletion"),
                           (plan.incomplete_swaps, "an incomplete swap (at or above a .cleaned)"),
                           (plan.cleaned, "an interrupted clean")):
            for name in names:
                self.files.pop(name, None)
                self.act("deleted", name, step, why)
        for name in plan.replaced:
            self.files.pop(name, None)
            self.act("deleted", name, "LogLoader#load", "replaced by the cleaned segment being "
                     "swapped in")
        for name in plan.swaps:
            path = self.files.pop(name)
            self.files[name[:-len(SWAP_SUFFIX)]] = path
            self.act("renamed", name, "LogLoader#load", f"to {name[:-len(SWAP_SUFFIX)]}")
        if not plan.empty:
            self.step("interrupted cleaning or deletion finished (LogLoader#load's first passes)")

    def _swap_next_offset(self, name: str) -> int:
        """``LogSegment#readNextOffset`` of the ``.log.swap`` segment ``name``."""
        parsed = parse_offset_file_name(name)
        base = parsed[0] if parsed is not None else 0
        index = self.files.get(segment_name(base, ".index") + SWAP_SUFFIX)
        seg = LoadedSegment(base_offset=base, log=self.files[name],
                            file_size=_size(self.files[name]), index=index,
                            _scan_of=self.scan_of)
        return seg.next_offset()

    # -- the load ------------------------------------------------------------------------------

    def load(self) -> None:
        self._list_files()
        self.main = LoadingProducerState(
            SnapshotDir.of([(o, p) for o, p in self.pdir.snapshots]), now_ms=self.inputs.now_ms,
            max_transaction_timeout_ms=self.timeout)
        self.snapshots = self.main.dir
        self._leftovers()
        segments = self._load_segment_files()
        inputs = self.inputs
        if self.pdir.state == "delete":
            if not segments:
                segments.append(self._new_segment(0, "LogLoader#load"))
            next_offset, recovery_point = 0, 0
        else:
            next_offset, recovery_point = self._recover_log(segments)
        log_start = max(inputs.log_start_offset, segments[0].base_offset)
        main = self.main
        main.remove_stray_snapshots([s.base_offset for s in segments])
        clean_no_snapshot = inputs.had_clean_shutdown and main.latest_snapshot_offset() is None
        self.out.replayed_batches += rebuild_producer_state(
            main, segments, log_start, next_offset,
            reload_from_clean_shutdown=inputs.had_clean_shutdown, progress=self.progress)
        self.out.snapshot_offset = main.loaded_snapshot
        if clean_no_snapshot:
            self.step("clean shutdown without any producer snapshot: the producer state is not "
                      "rebuilt (UnifiedLog.rebuildProducerState); no producer is known and no "
                      "transaction is open")
        elif main.loaded_snapshot is not None:
            self.step(f"producer state from snapshot {main.loaded_snapshot}, then the batches "
                      f"up to {next_offset} (UnifiedLog.rebuildProducerState)")
        else:
            self.step(f"producer state rebuilt from the log start {log_start} without a "
                      "snapshot (UnifiedLog.rebuildProducerState)")
        out = self.out
        out.segments = segments
        out.state = main.state
        out.log_start_offset = log_start
        out.log_end_offset = next_offset
        out.recovery_point = max(recovery_point, log_start)  # UnifiedLog#updateLogStartOffset

    def _new_segment(self, base: int, step: str) -> LoadedSegment:
        self.act("created", segment_name(base, ".log"), step, "an empty segment")
        seg = LoadedSegment(base_offset=base, log=Path("/dev/null"), file_size=0, recovered=True,
                            _aborted=[], _scan_of=_empty_scan)
        return seg

    def _load_segment_files(self) -> list[LoadedSegment]:
        """``LogLoader#loadSegmentFiles``."""
        step = "LogLoader#loadSegmentFiles"
        parsed: dict[int, dict[str, Path]] = {}
        for name in sorted(self.files):
            p = parse_offset_file_name(name)
            if p is None or p[2] is not None or p[1] == ".snapshot":
                continue
            parsed.setdefault(p[0], {})[p[1]] = self.files[name]
        segments: list[LoadedSegment] = []
        for base in sorted(parsed):
            kinds = parsed[base]
            if ".log" not in kinds:
                for kind in INDEX_SUFFIXES:
                    if kind in kinds:
                        self.act("deleted", kinds[kind].name, step,
                                 "an index file without its .log (orphaned)")
                continue
            log = kinds[".log"]
            seg = LoadedSegment(base_offset=base, log=log, file_size=_size(log),
                                index=kinds.get(".index"), timeindex=kinds.get(".timeindex"),
                                txnindex=kinds.get(".txnindex"), _scan_of=self.scan_of)
            reason = self._sanity(seg)
            if reason is not None:
                self.step(f"segment {base}: {reason}: recovered (LogLoader#loadSegmentFiles)")
                try:
                    self._recover_segment(seg, segments)
                except InvalidOffset as exc:
                    raise LoadFailure(f"{exc} (InvalidOffsetException)") from None
            elif seg.timeindex is None:
                self.act("created", segment_name(base, ".timeindex"), step, "empty")
                seg.timeindex = Path(self.pdir.path) / segment_name(base, ".timeindex")
            segments.append(seg)
        return segments

    def _sanity(self, seg: LoadedSegment) -> str | None:
        """``LogSegment#sanityCheck``: why the segment is recovered (None: it is not)."""
        if seg.index is None:
            return "its .index is missing"
        if seg.txnindex is None:
            return None
        with open_bytes(seg.txnindex) as data:
            problems = txn_index_sanity(bytes(data), base_offset=seg.base_offset,
                                        path=str(seg.txnindex))
        if not problems:
            return None
        problem = problems[0]
        if "version" in str(problem):
            raise LoadFailure(f"{problem}: TransactionIndex cannot read it")
        return f"its .txnindex fails TransactionIndex#sanityCheck ({problem.message})"

    def _recover_segment(self, seg: LoadedSegment, segments: list[LoadedSegment]) -> int:
        """``LogLoader#recoverSegment``: returns the bytes cut off."""
        psm = LoadingProducerState(self.snapshots, now_ms=self.inputs.now_ms,
                                   max_transaction_timeout_ms=self.timeout)
        rebuild_producer_state(psm, segments, self.inputs.log_start_offset, seg.base_offset,
                               reload_from_clean_shutdown=False, progress=self.progress)
        truncated = self._recover(seg, psm.state)
        psm.take_snapshot("LogLoader#recoverSegment")
        self.out.recovered.append(seg.base_offset)
        return truncated

    def _recover(self, seg: LoadedSegment, state: ProducerStateManager) -> int:
        """``LogSegment#recover``."""
        step = "LogSegment#recover"
        if self.progress is not None:
            self.progress()
        valid = seg.valid_bytes()
        seg.check_offsets(valid, INDEX_INTERVAL_BYTES)
        aborted: list[AbortedTxnEntry] = []
        self.out.replayed_batches += replay(state, seg.scan(), seg.base_offset, None, aborted,
                                            end=valid, advance_high_watermark=False)
        truncated = seg.file_size - valid
        if truncated > 0:
            self.act("truncated", seg.name, step, f"to {valid} of {seg.file_size} bytes (the "
                     "bytes from the first invalid or partial batch on)")
        for kind, path in ((".index", seg.index), (".timeindex", seg.timeindex)):
            self.act("rewritten" if path is not None else "created",
                     segment_name(seg.base_offset, kind), step, "rebuilt from the batches")
        before = seg.aborted if seg.txnindex is not None else None
        if before is not None and before != aborted:
            self.act("rewritten", seg.txnindex.name if seg.txnindex else "", step,
                     f"rebuilt from the ABORT markers: {len(before)} -> {len(aborted)} entries")
        elif before is None and aborted:
            self.act("created", segment_name(seg.base_offset, ".txnindex"), step,
                     f"rebuilt from the ABORT markers: {len(aborted)} entries")
        where = Path(self.pdir.path)
        seg.index = seg.index or where / segment_name(seg.base_offset, ".index")
        seg.timeindex = seg.timeindex or where / segment_name(seg.base_offset, ".timeindex")
        if seg.txnindex is None and aborted:
            seg.txnindex = where / segment_name(seg.base_offset, ".txnindex")
        seg.size = seg.file_size = valid  # LogSegment#recover truncates the file
        seg.recovered = True
        seg._aborted = aborted
        return truncated

    def _empty(self, seg: LoadedSegment) -> int:
        """``LogSegment#truncateTo(baseOffset)``: returns the bytes cut off."""
        cut = seg.file_size
        if cut:
            self.act("truncated", seg.name, "LogSegment#truncateTo", "to 0 bytes")
        if seg.txnindex is not None and seg.aborted:
            self.act("rewritten", seg.txnindex.name, "LogSegment#truncateTo", "emptied")
        seg.size = seg.file_size = 0
        seg.recovered = True
        seg._aborted = []
        return cut

    def _recover_log(self, segments: list[LoadedSegment]) -> tuple[int, int]:
        """``LogLoader#recoverLog``: (log end offset, recovery point)."""
        inputs = self.inputs
        assert self.main is not None
        if not inputs.had_clean_shutdown and segments:
            bases = [s.base_offset for s in segments]
            first = max(bisect.bisect_right(bases, inputs.recovery_point) - 1, 0)
            unflushed = segments[first:]
            if unflushed:
                self.step(f"no clean-shutdown marker: segments from {unflushed[0].base_offset} "
                          f"(holding the recovery point {inputs.recovery_point}) are recovered "
                          "(LogLoader#recoverLog)")
            for i, seg in enumerate(unflushed):
                try:
                    cut = self._recover_segment(seg, segments)
                except InvalidOffset as exc:
                    self.step(f"{exc}: the segment is emptied (LogLoader#recoverLog)")
                    cut = self._empty(seg)
                if cut > 0:
                    dropped = unflushed[i + 1:]
                    self.step(f"segment {seg.base_offset} had {cut} bytes "
                              "cut off after its last valid batch"
                              + (f"; the {len(dropped)} segment(s) after it are deleted"
                                 if dropped else "") + " (LogLoader#recoverLog)")
                    self._delete_segments(dropped, segments, "LogLoader#recoverLog")
                    break
        if segments:
            end = segments[-1].next_offset()
            if end < inputs.log_start_offset:
                self.step(f"the log end {end} is below the log start checkpoint "
                          f"{inputs.log_start_offset}: every segment is deleted "
                          "(LogLoader#deleteSegmentsIfLogStartGreaterThanLogEnd)")
                self._delete_segments(list(segments), segments,
                                      "LogLoader#deleteSegmentsIfLogStartGreaterThanLogEnd")
                self.main.truncate_fully_and_start_at(
                    inputs.log_start_offset,
                    "LogLoader#deleteSegmentsIfLogStartGreaterThanLogEnd")
                segments.append(self._new_segment(inputs.log_start_offset, "LogLoader#recoverLog"))
                end_found = None
            else:
                end_found = end
        else:
            segments.append(self._new_segment(inputs.log_start_offset, "LogLoader#recoverLog"))
            end_found = None
        if inputs.had_clean_shutdown and end_found is not None:
            return end_found, end_found
        end = end_found if end_found is not None else segments[-1].next_offset()
        return end, min(inputs.recovery_point, end)

    def _delete_segments(self, dropped: list[LoadedSegment], segments: list[LoadedSegment],
                         step: str) -> None:
        """``removeAndDeleteSegmentsAsync``: files renamed ``.deleted``, snapshots too."""
        assert self.main is not None
        for seg in dropped:
            segments.remove(seg)
            self.out.deleted_segments.append(seg.base_offset)
            for path in (seg.log, seg.index, seg.timeindex, seg.txnindex):
                if path is not None and path.name != "null":
                    self.act("renamed", path.name, step, "to .deleted, removed by the scheduler")
            self.main.remove_and_mark_for_deletion(seg.base_offset,
                                                   "UnifiedLog.deleteProducerSnapshots")


def _size(path: Path) -> int:
    try:
        return os.stat(path).st_size
    except (OSError, TypeError):  # a remote path: its bytes
        with open_bytes(path) as data:
            return len(data)


def _empty_scan(_path: Path) -> SegmentScan:
    return scan_segment(b"", path=None)
