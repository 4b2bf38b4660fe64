"""A partition directory's files for the load model, read-only, and what the log dir tells it.

:class:`EvidenceFiles` gives :func:`kafkatx.semantics.log_load.load_partition` the files of a
discovered partition dir by name (sizes from the listing, bytes through
:func:`kafkatx.storage.files.open_bytes`, segment scans cached one at a time, or from a given
scanner). :func:`load_checkpoints` reads what ``LogManager#loadLogs`` reads from the log dir for
it: the clean-shutdown marker, ``recovery-point-offset-checkpoint`` and
``log-start-offset-checkpoint`` (a file that does not read counts as empty; a partition without a
line gets 0).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from kafkatx.formats.segment_scan import SegmentScan
from kafkatx.lazy_dataclass import dataclass
from kafkatx.storage.discovery import PartitionDir, read_root_checkpoints
from kafkatx.storage.files import open_bytes
from kafkatx.storage.readers import scan_segment_file

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"


class LastScan:
    """The scan of the segment asked for last, kept until another is asked for (the load
    model asks for one segment's scan several times in a row)."""

    def __init__(self, scan: Callable[[Path], SegmentScan] = scan_segment_file) -> None:
        self._scan = scan
        self._last: tuple[str, SegmentScan] | None = None

    def get(self, name: str, path: Path) -> SegmentScan:
        if self._last is None or self._last[0] != name:
            self._last = (name, self._scan(path))
        return self._last[1]


def whole_scan(scan: SegmentScan, start: int = 0) -> Iterator[SegmentScan]:
    """``PartitionFiles.chunks`` of a segment scanned whole: its scan as one chunk (a chunk
    walk from ``start`` leaves out the batches before it by their offsets)."""
    del start
    yield scan


class EvidenceFiles:
    """The regular files of ``pdir`` by name (``PartitionFiles`` of the load model). A
    segment's chunks come from ``chunks`` (a ``.log`` path and a position: the local engine's
    walk), else each is the segment's whole scan."""

    def __init__(self, pdir: PartitionDir, scan: Callable[[Path], SegmentScan] | None = None,
                 chunks: Callable[[Path, int], Iterator[SegmentScan]] | None = None) -> None:
        self.paths: dict[str, Path] = {}
        self.sizes: dict[str, int] = {}
        for seg in (*pdir.segments, *pdir.other_segments):
            for path in seg.files:
                self.paths[path.name] = path
            if seg.log is not None:
                self.sizes[seg.log.name] = seg.log_size
        for _, path in (*pdir.snapshots, *pdir.other_snapshots):
            self.paths[path.name] = path
        self._scans = LastScan(scan or scan_segment_file)
        self._chunks = chunks

    def names(self) -> Iterable[str]:
        return list(self.paths)

    def size(self, name: str) -> int:
        if name not in self.sizes:
            self.sizes[name] = len(self.read(name))
        return self.sizes[name]

    def read(self, name: str, start: int = 0) -> bytes:
        with open_bytes(self.paths[name]) as data:
            return bytes(data[start:])

    def scan(self, name: str) -> SegmentScan:
        return self._scans.get(name, self.paths[name])

    def chunks(self, name: str, start: int = 0) -> Iterator[SegmentScan]:
        if self._chunks is not None:
            return self._chunks(self.paths[name], start)
        return whole_scan(self.scan(name), start)

    def where(self, name: str) -> str:
        path = self.paths.get(name)
        return str(path) if path is not None else name


@dataclass(frozen=True, slots=True, kw_only=True)
class LoadCheckpoints:
    """What the log dir tells the load of one partition."""

    had_clean_shutdown: bool
    recovery_point: int
    log_start_offset: int
    notes: tuple[str, ...] = ()


def load_checkpoints(pdir: PartitionDir) -> LoadCheckpoints:
    """The clean-shutdown marker and checkpoints of the log dir holding ``pdir``."""
    log_dir = pdir.log_dir
    if log_dir is None:
        return LoadCheckpoints(
            had_clean_shutdown=False, recovery_point=0, log_start_offset=0,
            notes=("the partition directory was given without its log dir: no clean-shutdown "
                   "marker and no checkpoints, so recovery starts at offset 0",))
    notes: list[str] = []
    checkpoints = read_root_checkpoints(log_dir)
    values: dict[str, int] = {}
    for name in (RECOVERY_POINT_CHECKPOINT, LOG_START_CHECKPOINT):
        cp = checkpoints.get(name)
        if cp is not None and cp.problems:
            notes.append(f"{name} does not read ({cp.problems[0]}): the broker takes it as empty")
            cp = None
        values[name] = 0 if cp is None else cp.as_map().get((pdir.topic, pdir.partition), 0)
    return LoadCheckpoints(had_clean_shutdown=log_dir.clean_shutdown,
                           recovery_point=values[RECOVERY_POINT_CHECKPOINT],
                           log_start_offset=values[LOG_START_CHECKPOINT], notes=tuple(notes))
