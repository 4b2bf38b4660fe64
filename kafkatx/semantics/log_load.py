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
(:mod:`kafkatx.broker.logs.log_loader`), ``--after-restart`` reports them.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import field

import numpy as np

from kafkatx.formats.producer_snapshot import snapshot_file_name
from kafkatx.formats.segment_scan import SegmentScan
from kafkatx.formats.txn_index import AbortedTxnEntry
from kafkatx.formats.txn_index import sanity_check as txn_index_sanity
from kafkatx.lazy_dataclass import dataclass
from kafkatx.semantics.loaded_segment import (
    INDEX_INTERVAL_BYTES,
    INDEX_SUFFIXES,
    InvalidOffset,
    LoadedSegment,
    PartitionFiles,
    file_name,
    parse_file_name,
)
from kafkatx.semantics.producer_state import ProducerStateError, ProducerStateManager
from kafkatx.semantics.producer_state_load import (
    FileAction,
    LoadFailure,
    LoadingProducerState,
    ReplayFn,
    SnapshotDir,
    rebuild_producer_state,
    replay,
)
from kafkatx.semantics.swap_recovery import SWAP_SUFFIX, plan_swap_recovery


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
    # evidence files the load deleted, then made again under the same name with other bytes
    replaced: set[str] = field(default_factory=set)
    snapshot_offset: int | None = None  # the snapshot the final rebuild started from
    found_snapshot: int | None = None  # the last snapshot of the evidence a rebuild loaded
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
            if a.kind == "created" and a.name in deleted:  # the name again, new bytes or none
                deleted.discard(a.name)
                if a.name in self.replaced:
                    truncated.add(a.name)  # only segments are made again (_new_segment)
            elif a.kind == "created":
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
        for offset in set(snaps.found) - set(snaps.files):
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
            for chunk in seg.chunks():
                h = chunk.headers
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


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionName:
    """Which partition directory is loaded: ``state`` is live, delete, future or stray."""

    topic: str
    partition: int
    state: str = "live"
    path: str = ""


def load_partition(name: PartitionName, files: PartitionFiles, inputs: LoadInputs, *,
                   max_transaction_timeout_ms: int = 900_000,
                   progress: Callable[[], None] | None = None,
                   state: ProducerStateManager | None = None,
                   replay_segment: ReplayFn = replay) -> LoadOutcome:
    """``LogManager#loadLog`` of one partition directory (see the module doc); ``files`` are
    only read. ``state`` becomes the partition's producer state (a new one by default);
    ``replay_segment`` replays batches into it (default: batch by batch, :func:`replay`)."""
    loader = _Loader(name, files, inputs, max_transaction_timeout_ms, progress, state)
    loader.replay_segment = replay_segment
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
    loader.out.found_snapshot = (loader.snapshots.loaded_found[-1]
                                 if loader.snapshots.loaded_found else None)
    return loader.out


class _Loader:
    def __init__(self, pdir: PartitionName, files: PartitionFiles, inputs: LoadInputs,
                 max_transaction_timeout_ms: int, progress: Callable[[], None] | None,
                 state: ProducerStateManager | None = None) -> None:
        self.pdir = pdir
        self.state = state
        self.replay_segment: ReplayFn = replay
        self.evidence = files
        self.inputs = inputs
        self.timeout = max_transaction_timeout_ms
        self.progress = progress
        self.actions: list[FileAction] = []
        self.files: dict[str, str] = {}  # file name now -> the evidence file holding it
        self.snapshots = SnapshotDir()
        self.out = LoadOutcome(topic=pdir.topic, partition=pdir.partition, path=pdir.path,
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
        for name in self.evidence.names():
            self.files[name] = name

    def _leftovers(self) -> None:
        if not any(p is not None and p[2] is not None for p in map(parse_file_name, self.files)):
            return
        step = "LogLoader#removeTempFilesAndCollectSwapFiles"
        plan = plan_swap_recovery(self.files, self._swap_next_offset)
        for names, why in ((plan.deleted_leftovers, "left by an interrupted segment deletion"),
                           (plan.incomplete_swaps, "an incomplete swap"),
                           (plan.cleaned, "an interrupted clean")):
            for name in names:
                self.files.pop(name, None)
                self.act("deleted", name, step, why)
        for name in plan.replaced:
            self.files.pop(name, None)
            self.act("deleted", name, "LogLoader#load", "replaced by a cleaned segment")
            parsed = parse_file_name(name)
            if parsed is not None and parsed[1] == ".snapshot":
                self.snapshots.delete(parsed[0], "LogLoader#load", "in the swapped-in range")
        for name in plan.swaps:
            path = self.files.pop(name)
            self.files[name[:-len(SWAP_SUFFIX)]] = path
            self.act("renamed", name, "LogLoader#load", f"to {name[:-len(SWAP_SUFFIX)]}")
        if not plan.empty:
            self.step("interrupted cleaning or deletion finished (LogLoader#load's first passes)")

    def _swap_next_offset(self, name: str) -> int:
        """``LogSegment#readNextOffset`` of the ``.log.swap`` segment ``name``."""
        parsed = parse_file_name(name)
        base = parsed[0] if parsed is not None else 0
        index = self.files.get(file_name(base, ".index") + SWAP_SUFFIX)
        seg = LoadedSegment(base_offset=base, log=self.files[name],
                            file_size=self.evidence.size(self.files[name]), index=index,
                            files=self.evidence)
        return seg.next_offset()

    # -- the load ------------------------------------------------------------------------------

    def load(self) -> None:
        self._list_files()
        found = [(p[0], name) for name in self.files
                 if (p := parse_file_name(name)) is not None and p[1] == ".snapshot"
                 and p[2] is None]
        self.main = LoadingProducerState(
            SnapshotDir.of(sorted(found), self.evidence), now_ms=self.inputs.now_ms,
            max_transaction_timeout_ms=self.timeout, state=self.state)
        self.snapshots = self.main.dir
        self._leftovers()
        segments = self._load_segment_files()
        inputs = self.inputs
        if self.pdir.state == "delete":
            if not segments:
                segments.append(self._new_segment(0, "LogLoader#load (a -delete directory)"))
            next_offset, recovery_point = 0, 0
        else:
            next_offset, recovery_point = self._recover_log(segments)
        log_start = max(inputs.log_start_offset, segments[0].base_offset)
        main = self.main
        main.remove_stray_snapshots([s.base_offset for s in segments])
        clean_no_snapshot = inputs.had_clean_shutdown and main.latest_snapshot_offset() is None
        self.out.replayed_batches += rebuild_producer_state(
            main, segments, log_start, next_offset,
            reload_from_clean_shutdown=inputs.had_clean_shutdown, progress=self.progress,
            replay_segment=self.replay_segment)
        self.out.snapshot_offset = main.loaded_snapshot
        if clean_no_snapshot:
            self.step("clean shutdown without any producer snapshot: the producer state is not "
                      "rebuilt (UnifiedLog.rebuildProducerState); no producer is known and no "
                      "transaction is open")
        elif main.loaded_snapshot is not None:
            written = ("" if main.loaded_snapshot in self.snapshots.found
                       and self.snapshots.files[main.loaded_snapshot].name is not None
                       else " (written by the recovery)")
            self.step(f"producer state from snapshot {main.loaded_snapshot}{written}, then the "
                      f"batches up to {next_offset} (UnifiedLog.rebuildProducerState)")
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
        name = file_name(base, ".log")
        if name in self.evidence.names() and self.evidence.size(name) > 0:
            # a segment of that name deleted above (recovery cut the log below the log start):
            # Kafka leaves a file of the same name, empty
            self.out.replaced.add(name)
        self.act("created", name, step, "an empty segment")
        return LoadedSegment(base_offset=base, log=file_name(base, ".log"), file_size=0,
                             recovered=True, _aborted=[])

    def _load_segment_files(self) -> list[LoadedSegment]:
        """``LogLoader#loadSegmentFiles``."""
        step = "LogLoader#loadSegmentFiles"
        parsed: dict[int, dict[str, str]] = {}
        for name in sorted(self.files):
            p = parse_file_name(name)
            if p is None or p[2] is not None or p[1] == ".snapshot":
                continue
            parsed.setdefault(p[0], {})[p[1]] = self.files[name]
        segments: list[LoadedSegment] = []
        for base in sorted(parsed):
            kinds = parsed[base]
            if ".log" not in kinds:
                for kind in INDEX_SUFFIXES:
                    if kind in kinds:
                        self.act("deleted", file_name(base, kind), step,
                                 "an index file without its .log (orphaned)")
                continue
            log = kinds[".log"]
            seg = LoadedSegment(base_offset=base, log=log, file_size=self.evidence.size(log),
                                files=self.evidence, index=kinds.get(".index"),
                                timeindex=kinds.get(".timeindex"),
                                txnindex=kinds.get(".txnindex"))
            reason = self._sanity(seg)
            if reason is not None:
                self.step(f"segment {base}: {reason}: recovered (LogLoader#loadSegmentFiles)")
                try:
                    self._recover_segment(seg, segments)
                except InvalidOffset as exc:
                    raise LoadFailure(f"{exc} (InvalidOffsetException)") from None
            elif seg.timeindex is None:
                self.act("created", file_name(base, ".timeindex"), step, "empty")
                seg.timeindex = file_name(base, ".timeindex")
            segments.append(seg)
        return segments

    def _sanity(self, seg: LoadedSegment) -> str | None:
        """``LogSegment#sanityCheck``: why the segment is recovered (None: it is not)."""
        if seg.index is None:
            return "its .index is missing"
        if seg.txnindex is None:
            return None
        assert seg.files is not None
        problems = txn_index_sanity(seg.files.read(seg.txnindex), base_offset=seg.base_offset,
                                    path=seg.files.where(seg.txnindex))
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
        before = len(self.snapshots.actions)
        rebuild_producer_state(psm, segments, self.inputs.log_start_offset, seg.base_offset,
                               reload_from_clean_shutdown=False, progress=self.progress,
                               replay_segment=self.replay_segment)
        gone = [a for a in self.snapshots.actions[before:] if a.kind == "deleted"]
        if gone:
            names = ", ".join(f"{a.name.split('.')[0].lstrip('0') or '0'} ({a.detail})"
                              for a in gone)
            self.step(f"recovering segment {seg.base_offset} rebuilds the producer state up to "
                      f"it from the newest snapshot at or below it, deleting snapshot(s) {names} "
                      "(ProducerStateManager#truncateAndReload)")
        truncated = self._recover(seg, psm.state)
        psm.take_snapshot("LogLoader#recoverSegment")
        self.out.recovered.append(seg.base_offset)
        return truncated

    def _recover(self, seg: LoadedSegment, state: ProducerStateManager) -> int:
        """``LogSegment#recover``."""
        step = "LogSegment#recover"
        if self.progress is not None:
            self.progress()
        aborted: list[AbortedTxnEntry] = []
        replayed: list[int] = []

        def replay_chunk(chunk: SegmentScan, end: int) -> None:
            replayed.append(self.replay_segment(state, chunk, seg.base_offset, None, aborted,
                                                end=end, advance_high_watermark=False))

        valid = seg.recover(replay_chunk, INDEX_INTERVAL_BYTES)
        self.out.replayed_batches += sum(replayed)
        truncated = seg.file_size - valid
        if truncated > 0:
            self.act("truncated", seg.name, step, f"to {valid} of {seg.file_size} bytes (the "
                     "bytes from the first invalid or partial batch on)")
        for kind, path in ((".index", seg.index), (".timeindex", seg.timeindex)):
            self.act("rewritten" if path is not None else "created",
                     file_name(seg.base_offset, kind), step, "rebuilt from the batches")
        before = seg.aborted if seg.txnindex is not None else None
        if before is not None and before != aborted:
            self.act("rewritten", file_name(seg.base_offset, ".txnindex"), step,
                     f"rebuilt from the ABORT markers: {len(before)} -> {len(aborted)} entries")
        elif before is None and aborted:
            self.act("created", file_name(seg.base_offset, ".txnindex"), step,
                     f"rebuilt from the ABORT markers: {len(aborted)} entries")
        seg.index = seg.index or file_name(seg.base_offset, ".index")
        seg.timeindex = seg.timeindex or file_name(seg.base_offset, ".timeindex")
        if seg.txnindex is None and aborted:
            seg.txnindex = file_name(seg.base_offset, ".txnindex")
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
            self.act("rewritten", file_name(seg.base_offset, ".txnindex"),
                     "LogSegment#truncateTo", "emptied")
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
            for kind, held in ((".log", seg.log), (".index", seg.index),
                               (".timeindex", seg.timeindex), (".txnindex", seg.txnindex)):
                if held is not None:
                    self.act("renamed", file_name(seg.base_offset, kind), step,
                             "to .deleted, removed by the scheduler")
            self.main.remove_and_mark_for_deletion(seg.base_offset,
                                                   "UnifiedLog.deleteProducerSnapshots")
