"""One segment of a partition the broker serves: its file, its batches' offsets, its indexes.

Mirrors Kafka's ``LogSegment``: a segment is opened without reading its batches (the sparse
``.index`` / ``.timeindex`` are trusted, ``LogSegment#sanityCheck``); ``readNextOffset`` starts
from the offset index's last entry; ``maxTimestampSoFar`` comes from the time index's last entry
(``LogSegment#maxTimestampAndOffsetSoFar``). Unlike Kafka, which translates an offset to a
position through the offset index on every read, the first read of a segment scans its batch
headers once (the columnar C scan) into a table of offsets and positions; the tables of a few
recently read segments are kept.
"""

from __future__ import annotations

import mmap
import os
import time
from array import array
from dataclasses import field
from pathlib import Path

from kafkatx.formats.batch_layout import (
    FRAME,
    LAST_OFFSET_DELTA_FIELD,
    LAST_OFFSET_DELTA_OFFSET,
    LOG_OVERHEAD,
    MAX_TIMESTAMP_FIELD,
    MAX_TIMESTAMP_OFFSET,
)
from kafkatx.formats.offset_index import ENTRY_STRUCT as OFFSET_ENTRY
from kafkatx.formats.segment_scan import SegmentScan, scan_segment
from kafkatx.formats.time_index import ENTRY_STRUCT as TIME_ENTRY
from kafkatx.formats.txn_index import AbortedTxnEntry
from kafkatx.lazy_dataclass import dataclass
from kafkatx.semantics.log_retention import SegmentExtent
from kafkatx.storage.segment_writer import segment_name


class CorruptIndexError(Exception):
    """``CorruptIndexException``: an index file the segment cannot trust."""


@dataclass(slots=True)
class BatchTable:
    """The batches of one segment in file order: offsets, positions, sizes, max timestamps."""

    base: array = field(default_factory=lambda: array("q"))
    last: array = field(default_factory=lambda: array("q"))
    position: array = field(default_factory=lambda: array("q"))
    size: array = field(default_factory=lambda: array("q"))
    max_timestamp: array = field(default_factory=lambda: array("q"))

    @classmethod
    def from_scan(cls, scan: SegmentScan, end: int) -> BatchTable:
        h = scan.headers
        keep = h.next_position <= end
        table = cls()
        for name, column in (("base", h.base_offset), ("last", h.last_offset),
                             ("position", h.position), ("size", h.size),
                             ("max_timestamp", h.max_timestamp)):
            getattr(table, name).frombytes(column[keep].astype("=i8").tobytes())
        return table

    def add(self, base: int, last: int, position: int, size: int, max_timestamp: int) -> None:
        self.base.append(base)
        self.last.append(last)
        self.position.append(position)
        self.size.append(size)
        self.max_timestamp.append(max_timestamp)

    def __len__(self) -> int:
        return len(self.base)


def modified_ms(path: Path, now_ms: int) -> int:
    """``File#lastModified`` in ms (a segment file not there yet: now)."""
    try:
        return path.stat().st_mtime_ns // 1_000_000
    except FileNotFoundError:
        return now_ms


_UNREAD = -2  # the first batch's timestamp has not been read yet


@dataclass(slots=True, eq=False)
class LogSegment:
    base_offset: int
    path: Path
    size: int = 0
    # LogSegment's rollingBasedTimestamp (the first batch's max timestamp), read on first use.
    _first_batch_timestamp: int | None = _UNREAD
    created_ms: int = field(default_factory=lambda: int(time.time() * 1000))
    max_timestamp_so_far: int = -1
    offset_of_max_timestamp_so_far: int = -1
    aborted: list[AbortedTxnEntry] = field(default_factory=list)
    fd: int | None = None
    table: BatchTable | None = None  # None until a read needs it (never for the active one)

    @property
    def first_batch_timestamp(self) -> int | None:
        """``LogSegment#getFirstBatchTimestamp`` / ``rollingBasedTimestamp``: the first batch's
        max timestamp (None for an empty segment), read from the file the first time."""
        if self._first_batch_timestamp == _UNREAD:
            end = MAX_TIMESTAMP_OFFSET + MAX_TIMESTAMP_FIELD.size
            head = self.pread(end, 0) if self.size else b""
            self._first_batch_timestamp = (
                MAX_TIMESTAMP_FIELD.unpack_from(head, MAX_TIMESTAMP_OFFSET)[0]
                if len(head) == end else None)
        return self._first_batch_timestamp

    @first_batch_timestamp.setter
    def first_batch_timestamp(self, value: int | None) -> None:
        self._first_batch_timestamp = value

    def extent(self, now_ms: int) -> SegmentExtent:
        """``LogSegment#largestTimestamp``: the max timestamp, else the file's last modified."""
        largest = (self.max_timestamp_so_far if self.max_timestamp_so_far >= 0
                   else modified_ms(self.path, now_ms))
        return SegmentExtent(base_offset=self.base_offset, size=self.size,
                             largest_timestamp=largest)

    def file(self, suffix: str) -> Path:
        return self.path.with_name(segment_name(self.base_offset, suffix))

    def pread(self, size: int, position: int) -> bytes:
        if self.fd is None:
            self.fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        return os.pread(self.fd, size, position)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    # -- opening without reading the batches ---------------------------------------------------

    def sanity_check(self) -> None:
        """``LogSegment#sanityCheck``: both indexes exist with whole entries, none pointing
        below the base offset or past the file. Raises ``FileNotFoundError`` /
        ``CorruptIndexError``."""
        index = self.file(".index").stat().st_size
        time_index = self.file(".timeindex").stat().st_size
        if index % OFFSET_ENTRY.size:
            raise CorruptIndexError(f"{self.file('.index')}: size {index} is not a multiple of "
                                    f"{OFFSET_ENTRY.size}")
        if time_index % TIME_ENTRY.size:
            raise CorruptIndexError(f"{self.file('.timeindex')}: size {time_index} is not a "
                                    f"multiple of {TIME_ENTRY.size}")
        last = self._last_index_entry()
        if last is not None and (last[0] < 0 or not 0 <= last[1] <= self.size):
            raise CorruptIndexError(f"{self.file('.index')}: last entry {last} is outside "
                                    f"the segment of {self.size} bytes")

    def _last_entry_bytes(self, suffix: str, entry_size: int) -> bytes | None:
        with open(self.file(suffix), "rb") as f:
            end = f.seek(0, os.SEEK_END)
            if end < entry_size:
                return None
            f.seek(end - entry_size)
            return f.read(entry_size)

    def _last_index_entry(self) -> tuple[int, int] | None:
        raw = self._last_entry_bytes(".index", OFFSET_ENTRY.size)
        return None if raw is None else OFFSET_ENTRY.unpack(raw)

    def load_max_timestamp(self) -> None:
        """``maxTimestampAndOffsetSoFar`` from the time index's last entry (-1 when empty)."""
        raw = self._last_entry_bytes(".timeindex", TIME_ENTRY.size)
        if raw is not None:
            timestamp, relative = TIME_ENTRY.unpack(raw)
            self.max_timestamp_so_far = timestamp
            self.offset_of_max_timestamp_so_far = self.base_offset + relative

    def read_next_offset(self) -> int:
        """``LogSegment#readNextOffset``: from the offset index's last entry, walk the batch
        headers to the end of the file; the last batch's last offset + 1 (the base offset for
        an empty segment)."""
        if self.table is not None:
            return self.table.last[-1] + 1 if len(self.table) else self.base_offset
        last = self._last_index_entry()
        position = last[1] if last is not None else 0
        nxt = self.base_offset
        head_size = LAST_OFFSET_DELTA_OFFSET + LAST_OFFSET_DELTA_FIELD.size
        while position + head_size <= self.size:
            head = self.pread(head_size, position)
            base, length = FRAME.unpack_from(head, 0)
            delta = LAST_OFFSET_DELTA_FIELD.unpack_from(head, LAST_OFFSET_DELTA_OFFSET)[0]
            if position + LOG_OVERHEAD + length > self.size:
                break
            nxt = base + delta + 1
            position += LOG_OVERHEAD + length
        return nxt

    # -- the batch table ----------------------------------------------------------------------

    def scan(self) -> SegmentScan:
        """Every batch of the file up to ``size``, as columns (the columnar scan)."""
        if self.size == 0:
            return scan_segment(b"", path=str(self.path))
        with (open(self.path, "rb") as f,
              mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm,
              memoryview(mm) as view, view[:self.size] as part):
            return scan_segment(part, path=str(self.path))

    def batches(self) -> BatchTable:
        if self.table is None:
            self.table = BatchTable.from_scan(self.scan(), self.size)
        return self.table
