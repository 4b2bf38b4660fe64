"""A partition's segments walked in chunks of their columns, so the analysis holds a window of
batches, not a segment of them.

The local engine walks each segment once in chunks of ``CHUNK_BYTES`` of the file
(``scan_segment_chunks``), noting where each chunk starts and the highest offset it reaches
(:class:`WalkedSegment`: a few numbers per chunk). A phase that needs the batches again from
some offset on (the producer-state rebuild from a snapshot, the records pending between LSO and
HW) walks again from the first chunk reaching that offset (:func:`chunks_from`), instead of
keeping every column of the segment for it. An engine that already holds whole scans (Spark)
hands them as one chunk each (:func:`whole_scans`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import field
from pathlib import Path

from kafkatx.formats.segment_scan import SegmentScan, page_releaser, scan_segment_chunks
from kafkatx.lazy_dataclass import dataclass
from kafkatx.storage.files import open_bytes

CHUNK_BYTES = 4 << 20  # bytes of a segment file whose columns are held at once
# A segment's chunks from a position on (a chunk's start: a batch boundary); a source may also
# yield batches before it, which every consumer leaves out by offset.
ChunksOf = Callable[[Path, int], Iterator[SegmentScan]]
ScanOf = Callable[[Path], SegmentScan]  # a segment's scan by its .log path


def file_chunks(window: int = CHUNK_BYTES) -> ChunksOf:
    """Chunks of about ``window`` bytes read from the file (mapped, its pages dropped once
    walked: ``page_releaser``)."""

    def chunks(path: Path, start: int = 0) -> Iterator[SegmentScan]:
        with open_bytes(path) as data:
            yield from scan_segment_chunks(data, path=str(path), window=window,
                                           release=page_releaser(data), start=start)

    return chunks


def whole_scans(scan_of: ScanOf) -> ChunksOf:
    """Each segment as one chunk: its whole scan, from ``scan_of``."""

    def chunks(path: Path, start: int = 0) -> Iterator[SegmentScan]:
        yield scan_of(path)

    return chunks


@dataclass(slots=True)
class WalkedSegment:
    """What the first walk of a segment notes for walking it again: per chunk, where it
    starts in the file and the highest last offset of its batches."""

    path: Path
    starts: list[int] = field(default_factory=list)
    reach: list[int] = field(default_factory=list)
    batches: int = 0
    first_offset: int | None = None  # the first batch's base offset
    last_offset: int | None = None  # the last batch's last offset
    end: int = 0  # where the walk ended: the file's size

    def add(self, chunk: SegmentScan) -> None:
        h = chunk.headers
        if len(h):
            last = h.last_offset
            self.starts.append(int(h.position[0]))
            self.reach.append(int(last.max()))
            if self.first_offset is None:
                self.first_offset = int(h.base_offset[0])
            self.last_offset = int(last[-1])
            self.batches += len(h)
        self.end = chunk.size


def chunks_from(walked: list[WalkedSegment], offset: int, chunks_of: ChunksOf,
                upto: int | None = None) -> Iterator[SegmentScan]:
    """The chunks of the segments whose last batch ends at or above ``offset`` (and, with
    ``upto``, whose first batch starts below it), each from its first chunk reaching
    ``offset``: every batch before lies wholly below ``offset``."""
    for seg in walked:
        if seg.last_offset is None or seg.last_offset < offset:
            continue
        if upto is not None and seg.first_offset is not None and seg.first_offset >= upto:
            continue
        k = next(k for k, reach in enumerate(seg.reach) if reach >= offset)
        yield from chunks_of(seg.path, seg.starts[k])
