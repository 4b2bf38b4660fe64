"""Producer state as a broker's log load rebuilds it: snapshots, replays and the files they touch.

Mirrors, for :mod:`kafkatx.semantics.log_load`, the parts of Kafka 4.x that the load runs:
``ProducerStateManager`` (its map of snapshot files: ``truncateAndReload``, ``loadFromSnapshot``,
``takeSnapshot``, ``removeStraySnapshots``, ``truncateFullyAndStartAt``,
``removeAndMarkSnapshotForDeletion``), ``UnifiedLog.rebuildProducerState`` with
``loadProducersFromRecords``, and ``LogSegment#updateProducerState`` as ``LogSegment#recover``
calls it. The rules themselves are :mod:`kafkatx.semantics.producer_state`; this module only
keeps Kafka's bookkeeping around them.

Nothing here writes: the partition dir's snapshot files are a :class:`SnapshotDir`, the files
as found plus what the load would write and delete, so the evidence stays untouched while every
later step sees the files the earlier ones left (a snapshot written while one segment is
recovered is what the next one loads). ``kafkatx serve`` carries out the same writes for real.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Protocol

from kafkatx.formats.producer_snapshot import (
    ProducerSnapshotEntry,
    read_producer_snapshot,
    snapshot_file_name,
)
from kafkatx.formats.record_batch import ControlType
from kafkatx.formats.segment_scan import SegmentScan
from kafkatx.formats.txn_index import AbortedTxnEntry
from kafkatx.lazy_dataclass import dataclass
from kafkatx.semantics.producer_state import TV_UNKNOWN, AppendOrigin, ProducerStateManager

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class LoadFailure(Exception):
    """Kafka's load would throw here: the partition does not come online."""


class FileReader(Protocol):
    def read(self, name: str) -> bytes: ...
    def where(self, name: str) -> str: ...


@dataclass(slots=True)
class SnapshotFile:
    """One ``<offset>.snapshot``: found in the evidence (``name`` in ``files``) or written by
    the load (``entries``)."""

    offset: int
    name: str | None = None  # the evidence file (None: written by the load)
    files: FileReader | None = field(default=None, repr=False)
    entries: tuple[ProducerSnapshotEntry, ...] | None = None  # what the load wrote
    problem: str | None = None  # why it does not load (CorruptSnapshotException)
    changed: bool = False  # written by the load with other bytes than the file it replaced

    def read(self) -> tuple[ProducerSnapshotEntry, ...] | None:
        """``ProducerStateManager.readSnapshot``: the entries, or None when Kafka throws
        ``CorruptSnapshotException`` (``problem`` says why)."""
        if self.entries is not None:
            return self.entries
        assert self.name is not None and self.files is not None
        where = self.files.where(self.name)
        snap = read_producer_snapshot(self.files.read(self.name), path=where)
        if not snap.loadable:
            self.problem = str(snap.problems[0])
            return None
        return tuple(snap.entries)


@dataclass(frozen=True, slots=True)
class FileAction:
    """A change the load makes to one file of the partition dir, and the Kafka step doing it."""

    kind: str  # created | deleted | rewritten | truncated | renamed
    name: str
    step: str  # the Kafka method
    detail: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "file": self.name, "step": self.step, "detail": self.detail}


@dataclass(slots=True)
class SnapshotDir:
    """The partition dir's ``.snapshot`` files as the load goes: found, written, deleted."""

    files: dict[int, SnapshotFile] = field(default_factory=dict)
    actions: list[FileAction] = field(default_factory=list)
    found: dict[int, SnapshotFile] = field(default_factory=dict)
    loaded_found: list[int] = field(default_factory=list)  # found snapshots a rebuild loaded

    @classmethod
    def of(cls, snapshots: Sequence[tuple[int, str]], files: FileReader) -> SnapshotDir:
        found = {offset: SnapshotFile(offset, name=name, files=files)
                 for offset, name in snapshots}
        return cls(files=dict(found), found=found)

    def offsets(self) -> list[int]:
        return sorted(self.files)

    def write(self, offset: int, entries: tuple[ProducerSnapshotEntry, ...], step: str) -> None:
        kind = "rewritten" if offset in self.files else "created"
        changed = True
        if offset in self.found:  # the file found is replaced (perhaps deleted before)
            found = self.found[offset].read()
            changed = found is None or _sorted(found) != _sorted(entries)
        self.files[offset] = SnapshotFile(offset, entries=entries, changed=changed)
        self.actions.append(FileAction(kind, snapshot_file_name(offset), step,
                                       f"{len(entries)} producer(s)"))

    def delete(self, offset: int, step: str, detail: str = "", *, rename: bool = False) -> None:
        if self.files.pop(offset, None) is None:
            return
        self.actions.append(FileAction("renamed" if rename else "deleted",
                                       snapshot_file_name(offset), step, detail))


def _sorted(entries: Sequence[ProducerSnapshotEntry]) -> list[ProducerSnapshotEntry]:
    return sorted(entries, key=lambda e: e.producer_id)


class LoadingProducerState:
    """A ``ProducerStateManager`` with its snapshot map, as the load creates one (the map is
    the directory's snapshots when it is created)."""

    def __init__(self, snapshots: SnapshotDir, *, now_ms: int | None,
                 max_transaction_timeout_ms: int = 900_000,
                 state: ProducerStateManager | None = None) -> None:
        self.dir = snapshots
        self.now_ms = now_ms
        self.state = state if state is not None else ProducerStateManager(
            max_transaction_timeout_ms=max_transaction_timeout_ms)
        self.state.truncate_fully_and_start_at(0)
        self.snapshots: set[int] = set(snapshots.files)  # ProducerStateManager#loadSnapshots
        self.loaded_snapshot: int | None = None

    # -- ProducerStateManager ---------------------------------------------------------------

    def is_empty(self) -> bool:
        return not self.state.producers and not len(self.state.unreplicated_txns)

    def latest_snapshot_offset(self) -> int | None:
        return max(self.snapshots, default=None)

    def _remove_and_delete(self, offset: int, step: str, detail: str) -> None:
        if offset in self.snapshots:
            self.snapshots.discard(offset)
            self.dir.delete(offset, step, detail)

    def truncate_and_reload(self, log_start: int, log_end: int) -> None:
        """``ProducerStateManager#truncateAndReload``."""
        for offset in sorted(self.snapshots):
            if offset > log_end or offset <= log_start:
                where = (f"past {log_end}" if offset > log_end
                         else f"at or below the log start {log_start}")
                self._remove_and_delete(offset, "ProducerStateManager#truncateAndReload", where)
        if log_end != self.state.last_map_offset:
            self.state.truncate_fully_and_start_at(self.state.last_map_offset)
            self._load_from_snapshot(log_start)
        else:
            self.state.on_log_start_offset_incremented(log_start)
            self.state.last_snap_offset = (log_start if self.latest_snapshot_offset() is None
                                           else self.latest_snapshot_offset())

    def _load_from_snapshot(self, log_start: int) -> None:
        """``ProducerStateManager#loadFromSnapshot``: the newest snapshot that reads; a corrupt
        one is deleted and the next older tried."""
        while self.snapshots:
            offset = max(self.snapshots)
            entries = self.dir.files[offset].read()
            if entries is None:
                self._remove_and_delete(offset, "ProducerStateManager#loadFromSnapshot",
                                        self.dir.files[offset].problem or "corrupt")
                continue
            self.state.load_snapshot(list(entries), offset, self.now_ms)
            self.loaded_snapshot = offset
            if self.dir.files[offset].name is not None:
                self.dir.loaded_found.append(offset)
            return
        self.state.last_snap_offset = log_start
        self.state.last_map_offset = log_start

    def take_snapshot(self, step: str) -> None:
        """``ProducerStateManager#takeSnapshot``: only when the map moved past the last one."""
        state = self.state
        if state.last_map_offset > state.last_snap_offset:
            entries = tuple(p.to_snapshot_entry() for p in state.producers.values())
            self.dir.write(state.last_map_offset, entries, step)
            self.snapshots.add(state.last_map_offset)
            state.last_snap_offset = state.last_map_offset

    def truncate_fully_and_start_at(self, offset: int, step: str) -> None:
        for snap in sorted(self.snapshots):
            self._remove_and_delete(snap, step, "every snapshot goes")
        self.state.truncate_fully_and_start_at(offset)

    def remove_stray_snapshots(self, segment_bases: Sequence[int]) -> None:
        """``ProducerStateManager#removeStraySnapshots``: the map is read from the directory
        again; snapshots at no segment's base offset go, except the newest such one when it
        is at or above the last segment's base."""
        step = "ProducerStateManager#removeStraySnapshots"
        bases = set(segment_bases)
        self.snapshots = set(self.dir.files)
        latest_stray: int | None = None
        for offset in sorted(self.snapshots):
            if offset in bases:
                continue
            if latest_stray is not None:
                self._remove_and_delete(latest_stray, step, "at no segment's base offset")
            latest_stray = offset
        if latest_stray is not None and bases and latest_stray < max(bases):
            self._remove_and_delete(latest_stray, step, "at no segment's base offset")

    def remove_and_mark_for_deletion(self, offset: int, step: str) -> None:
        """``removeAndMarkSnapshotForDeletion``: renamed ``.deleted`` (removed a minute later)."""
        if offset in self.snapshots:
            self.snapshots.discard(offset)
            self.dir.delete(offset, step, "renamed .deleted, removed by the scheduler", rename=True)


# -- replays ------------------------------------------------------------------------------


class ReplayFn(Protocol):
    """:func:`replay`'s signature: another implementation (the analysis' columnar replay)
    must leave the same state and entries, and raise ``LoadFailure`` where it raises."""

    def __call__(self, psm: ProducerStateManager, scan: SegmentScan, start: int,
                 upto: int | None, aborted: list[AbortedTxnEntry] | None, *,
                 end: int | None = None, advance_high_watermark: bool = True) -> int: ...


def replay_rows(scan: SegmentScan, start: int, upto: int | None,
                end: int | None) -> npt.NDArray[np.bool_] | None:
    """Which batches of ``scan`` a replay from ``start`` (below ``upto``, ending by byte
    ``end``) takes: a mask over its headers, ``None`` when it takes none."""
    h = scan.headers
    if not len(h):
        return None
    rows = h.last_offset >= start
    if upto is not None:
        rows &= h.base_offset < upto
    if end is not None:
        rows &= h.next_position <= end
    return rows if rows.any() else None


def replay(psm: ProducerStateManager, scan: SegmentScan, start: int, upto: int | None,
           aborted: list[AbortedTxnEntry] | None, *, end: int | None = None,
           advance_high_watermark: bool = True) -> int:
    """``LogSegment#updateProducerState`` (or ``UnifiedLog#loadProducersFromRecords``) for the
    batches of ``scan`` whose last offset is at or above ``start``, whose base offset is below
    ``upto`` and that end by byte ``end``: each producer batch through ``ProducerAppendInfo``
    (origin REPLICATION; markers keep their coordinator epoch); an abort adds its ``.txnindex``
    entry to ``aborted``. Returns the number of batches replayed. The load passes
    ``advance_high_watermark`` False (``LogSegment#recover`` leaves completed transactions
    unreplicated); a broker appending as leader moves its high watermark with its log end."""
    h = scan.headers
    rows = replay_rows(scan, start, upto, end)
    if rows is None:
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
    count = h.records_count[rows].tolist()
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
            elif count[i] > 0:
                raise LoadFailure(f"{scan.path}: the control batch at offset {base[i]} of "
                                  f"producer {pid[i]} is no COMMIT or ABORT marker "
                                  "(EndTransactionMarker.deserialize throws "
                                  "IllegalArgumentException)")
            psm.update(info)
            if completed is not None:
                if completed.is_aborted and aborted is not None:
                    aborted.append(AbortedTxnEntry(
                        producer_id=completed.producer_id, first_offset=completed.first_offset,
                        last_offset=completed.last_offset,
                        last_stable_offset=psm.last_stable_offset(completed)))
                psm.complete_txn(completed)
        if magic[i] >= 2:
            psm.update_map_end_offset(last[i] + 1)
        if advance_high_watermark:
            psm.on_high_watermark_updated(last[i] + 1)
    return len(base)


class SegmentView(Protocol):
    """What the rebuild reads of a segment: its base offset, its valid bytes and their
    batches, a chunk at a time (in file order, up to the chunk holding the valid bytes' end)."""

    @property
    def base_offset(self) -> int: ...
    @property
    def size(self) -> int: ...
    def chunks(self) -> Iterator[SegmentScan]: ...


def first_position_at(scan: SegmentScan, offset: int, size: int) -> int | None:
    """``LogSegment#translateOffset``: the position of the first batch ending at or after
    ``offset`` (None: none in the segment's valid bytes; of a chunk: none in it)."""
    h = scan.headers
    rows = (h.last_offset >= offset) & (h.next_position <= size)
    if not rows.any():
        return None
    return int(h.position[rows.argmax()])


def rebuild_producer_state(psm: LoadingProducerState, segments: Sequence[SegmentView],
                           log_start: int, last_offset: int, *,
                           reload_from_clean_shutdown: bool,
                           progress: Callable[[], None] | None = None,
                           replay_segment: ReplayFn | None = None) -> int:
    """``UnifiedLog.rebuildProducerState``: returns the batches replayed."""
    step = "UnifiedLog.rebuildProducerState"
    state = psm.state
    to_snapshot: list[int] = []
    if segments:
        if len(segments) > 1:
            to_snapshot.append(segments[-2].base_offset)
        to_snapshot.append(segments[-1].base_offset)
    to_snapshot.append(last_offset)
    if psm.latest_snapshot_offset() is None and reload_from_clean_shutdown:
        for offset in to_snapshot:
            state.update_map_end_offset(offset)
            psm.take_snapshot(f"{step} (clean shutdown, no snapshot: nothing replayed)")
        return 0
    empty_before = psm.is_empty() and state.last_map_offset >= last_offset
    psm.truncate_and_reload(log_start, last_offset)
    replayed = 0
    if last_offset > state.last_map_offset and not empty_before:
        bases = [s.base_offset for s in segments]
        floor_of_last = _floor(bases, last_offset)
        for i in _values(bases, state.last_map_offset, last_offset):
            seg = segments[i]
            if progress is not None:
                progress()
            start = max(seg.base_offset, state.last_map_offset, log_start)
            state.update_map_end_offset(start)
            if seg.base_offset in to_snapshot:
                psm.take_snapshot(step)
            # LogSegment#translateOffset(last_offset) in the segment holding it bounds the
            # replay: the chunks up to the first batch ending at or after it
            for chunk in seg.chunks():
                at = (first_position_at(chunk, last_offset, seg.size)
                      if i == floor_of_last else None)
                replayed += (replay_segment or replay)(state, chunk, start, None, None,
                                                       end=seg.size if at is None else at,
                                                       advance_high_watermark=False)
                if at is not None:
                    break
    state.update_map_end_offset(last_offset)
    psm.take_snapshot(step)
    return replayed


def _floor(bases: list[int], offset: int) -> int | None:
    """``LogSegments#floorSegment``'s index."""
    found = None
    for i, base in enumerate(bases):
        if base <= offset:
            found = i
    return found


def _values(bases: list[int], start: int, end: int) -> list[int]:
    """``LogSegments#values(from, to)``: the segment holding ``start`` and the ones after it
    that begin below ``end``."""
    if start == end:
        return []
    floor = _floor(bases, start)
    first = 0 if floor is None else floor
    return [i for i in range(first, len(bases)) if bases[i] < end]
