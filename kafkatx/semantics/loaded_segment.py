"""A segment as the log load sees it: its files by name, its valid bytes, its next offset.

Mirrors what ``LogLoader#load`` asks of ``LogSegment`` (Kafka 4.x): ``readNextOffset`` (the
batches after the offset index's last entry, read as ``FileLogInputStream`` reads them: sizes
only, no CRC), ``recover``'s valid bytes (the batches up to the first partial or invalid one,
``RecordBatch#ensureValid``) and what it throws on the way (``LogSegmentOffsetOverflowException``,
``InvalidOffsetException``), and ``LogFileUtils``' file names. Pure: files are read through a
:class:`PartitionFiles` reader, never written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import field
from typing import Protocol

import numpy as np

from kafkatx.formats.batch_layout import (
    BASE_OFFSET_FIELD,
    BASE_OFFSET_OFFSET,
    HEADER_SIZE_UP_TO_MAGIC,
    LAST_OFFSET_DELTA_FIELD,
    LAST_OFFSET_DELTA_OFFSET,
    LENGTH_FIELD,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V2,
)
from kafkatx.formats.batchscan import HeaderColumns
from kafkatx.formats.offset_index import read_offset_index
from kafkatx.formats.segment_scan import SegmentScan, scan_segment
from kafkatx.formats.txn_index import AbortedTxnEntry, read_txn_index
from kafkatx.lazy_dataclass import dataclass
from kafkatx.semantics.producer_state_load import LoadFailure
from kafkatx.semantics.swap_recovery import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    SWAP_SUFFIX,
    offset_from_file,
)

INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")
TRANSIENT_SUFFIXES = (DELETED_SUFFIX, CLEANED_SUFFIX, SWAP_SUFFIX)
FILE_KINDS = (".log", *INDEX_SUFFIXES, ".snapshot")


class PartitionFiles(Protocol):
    """The regular files of one partition directory, read-only, by name: ``read`` its bytes
    from ``start`` on, ``scan`` a segment's batches whole, ``chunks`` them in consecutive
    chunks (:func:`~kafkatx.formats.segment_scan.scan_segment_chunks`) from the batch boundary
    ``start`` on."""

    def names(self) -> Iterable[str]: ...
    def size(self, name: str) -> int: ...
    def read(self, name: str, start: int = 0) -> bytes: ...
    def scan(self, name: str) -> SegmentScan: ...
    def chunks(self, name: str, start: int = 0) -> Iterator[SegmentScan]: ...
    def where(self, name: str) -> str: ...


def file_name(base_offset: int, kind: str) -> str:
    """``LogFileUtils``: the offset in 20 digits, then the kind (``.log``, ``.index``, ...)."""
    return f"{base_offset:020d}{kind}"


def parse_file_name(name: str) -> tuple[int, str, str | None] | None:
    """(offset, kind, ``.deleted``/``.cleaned``/``.swap`` or None) of a segment or snapshot
    file name (``LogFileUtils.offsetFromFile`` and its suffixes); None for anything else."""
    transient = next((t for t in TRANSIENT_SUFFIXES if name.endswith(t)), None)
    plain = name[:-len(transient)] if transient else name
    kind = next((k for k in FILE_KINDS if plain.endswith(k)), None)
    offset = offset_from_file(plain)
    if kind is None or offset is None or plain != file_name(offset, kind)[-len(plain):]:
        return None
    return offset, kind, transient


@dataclass(slots=True, eq=False)
class LoadedSegment:
    """A segment as the load leaves it: ``size`` valid bytes of the evidence file ``log``,
    and the ``.txnindex`` entries the broker serves from. ``log``, ``index``, ``timeindex``
    and ``txnindex`` name the files holding them in ``files`` (a swapped-in segment's are
    ``.swap`` files; an index the load creates names a file the evidence does not have)."""

    base_offset: int
    log: str
    file_size: int
    files: PartitionFiles | None = field(default=None, repr=False)  # None: made by the load
    index: str | None = None
    timeindex: str | None = None
    txnindex: str | None = None
    size: int = -1
    recovered: bool = False
    original_size: int = -1  # the file's size before the load
    _aborted: list[AbortedTxnEntry] | None = None
    _next_offset: int | None = None  # a recovered segment's, noted by its recovery walk

    def __post_init__(self) -> None:
        if self.size < 0:
            self.size = self.file_size
        if self.original_size < 0:
            self.original_size = self.file_size

    @property
    def name(self) -> str:
        return file_name(self.base_offset, ".log")

    def scan(self) -> SegmentScan:
        """The segment's batches (``rows`` says which lie within its valid bytes)."""
        if self.files is None:
            return scan_segment(b"", path=None)
        return self.files.scan(self.log)

    def chunks(self, start: int = 0) -> Iterator[SegmentScan]:
        """The segment's batches a chunk at a time, up to the chunk holding its valid bytes'
        end (rows past ``size`` may follow in it)."""
        if self.files is None or self.size <= start:
            return
        for chunk in self.files.chunks(self.log, start):
            yield chunk
            if chunk.size >= self.size:
                return

    def recover(self, replay_chunk: Callable[[SegmentScan, int], object],
                index_interval: int) -> int:
        """``LogSegment#recover``'s loop over the batches, a chunk of them at a time, in its
        order per batch: ``RecordBatch#ensureValid`` (the batches up to the first partial or
        invalid one: their end, the valid bytes, is returned), ``ensureOffsetInRange``
        (``LogSegmentOffsetOverflowException``), the offset index's entry every
        ``index_interval`` bytes (``InvalidOffsetException``), then ``updateProducerState``:
        ``replay_chunk(chunk, end)`` replays the chunk's batches ending by byte ``end``. Notes
        the next offset."""
        walk = _RecoveryWalk(self, index_interval)
        for chunk in self.chunks():
            end, error = walk.feed(chunk)
            if end is not None:
                replay_chunk(chunk, end)
            if error is not None:
                raise error
            if walk.done:
                break
        self._next_offset = walk.next_offset
        return walk.valid

    def rows(self) -> np.ndarray:
        return self.scan().headers.next_position <= self.size

    @property
    def aborted(self) -> list[AbortedTxnEntry]:
        """The ``.txnindex`` entries (as found, or as recovery rebuilt them)."""
        if self._aborted is None:
            self._aborted = []
            if self.txnindex is not None and self.files is not None:
                read = read_txn_index(self.files.read(self.txnindex),
                                      path=self.files.where(self.txnindex),
                                      base_offset=self.base_offset)
                self._aborted = list(read.entries)
        return self._aborted

    def next_offset(self) -> int:
        """``LogSegment#readNextOffset``: the next offset after the last whole batch, read from
        the offset index's last entry on (``FileLogInputStream``: sizes only, no CRC)."""
        if self.recovered:
            return self.base_offset if self._next_offset is None else self._next_offset
        start = min(self._last_index_position(), self.size)
        data = b"" if self.files is None else self.files.read(self.log, start)[:self.size - start]
        last = None
        for position, _size in _walk(data, 0, self._where(), start):
            last = position
        return self.base_offset if last is None else _next_offset_at(data, last)

    def _where(self) -> str:
        return self.log if self.files is None else self.files.where(self.log)

    def _last_index_position(self) -> int:
        if self.index is None or self.files is None:
            return 0
        read = read_offset_index(self.files.read(self.index), base_offset=self.base_offset,
                                 path=self.files.where(self.index))
        return read.entries[-1].position if read.entries else 0


class InvalidOffset(Exception):
    """``InvalidOffsetException`` while a segment's indexes are rebuilt."""


class _RecoveryWalk:
    """What :meth:`LoadedSegment.recover` carries from one chunk to the next: where the
    valid batches end, the smallest position the scanner stopped at, and the offset index
    being rebuilt (its last entry; tracked only once the offsets stop growing: while they
    grow no entry can fail, and the entries before are then found by walking again)."""

    def __init__(self, seg: LoadedSegment, index_interval: int) -> None:
        self.seg = seg
        self.interval = index_interval
        self.where = seg._where()
        self.stop = seg.file_size
        self.valid = 0
        self.done = False
        self.next_offset: int | None = None
        self.prev_last: int | None = None  # the last valid batch's last offset
        self.growing = True
        self.entry_offset: int | None = None
        self.entry_at = 0

    def feed(self, chunk: SegmentScan) -> tuple[int | None, Exception | None]:
        """(where the chunk's batches to replay end: None for none, the error that stops the
        recovery after them)."""
        h = chunk.headers
        for problem in chunk.problems:  # the scanner stops where FileLogInputStream cannot go
            if problem.position is not None:
                self.stop = min(self.stop, problem.position)
        if not len(h):
            return None, None
        chained = h.position == np.concatenate(([self.valid], h.next_position[:-1]))
        good = (h.next_position <= self.stop) & h.crc_valid & chained & (
            (h.magic < 2) | (h.size >= 61))
        k = len(h) if good.all() else int(np.argmin(good))
        self.done = k < len(h)
        if not k:
            return None, None
        last = h.last_offset[:k]
        relative = last - self.seg.base_offset
        out_of_range = (relative < 0) | (relative > INT32_MAX)
        error: Exception | None = None
        r = k
        if out_of_range.any():
            r = int(out_of_range.argmax())
            error = LoadFailure(f"{self.where}: offset {int(last[r])} cannot be relative to the "
                                f"base offset {self.seg.base_offset} "
                                "(LogSegmentOffsetOverflowException)")
        failed = self._index(h, r)
        if failed is not None:
            r, error = failed
        if error is None:
            self.valid = int(h.next_position[k - 1])
            self.next_offset = int(last[-1]) + 1
            self.prev_last = int(last[-1])
            return self.valid, None
        self.done = True
        return (int(h.position[r]) if r else None), error

    def _index(self, h: HeaderColumns, rows: int) -> tuple[int, InvalidOffset] | None:
        """The offset index's entries for the chunk's first ``rows`` batches: the first that is
        not above the previous entry (its row and the error), else None."""
        if not rows:
            return None
        last = h.last_offset[:rows]
        if self.growing:
            if (self.prev_last is None or int(last[0]) > self.prev_last) and bool(
                    (np.diff(last) > 0).all()):
                return None
            self.growing = False
            start = int(h.position[0])
            for chunk in self.seg.chunks():  # the entries before: from the growing batches
                before = chunk.headers
                n = int(np.searchsorted(before.position, start))
                self._entries(before.position[:n].tolist(), before.last_offset[:n].tolist())
                if n < len(before):
                    break
        return self._entries(h.position[:rows].tolist(), last.tolist())

    def _entries(self, positions: list[int], lasts: list[int]
                 ) -> tuple[int, InvalidOffset] | None:
        for j, (position, last) in enumerate(zip(positions, lasts, strict=True)):
            if position - self.entry_at > self.interval:
                if self.entry_offset is not None and last <= self.entry_offset:
                    return j, InvalidOffset(f"{self.where}: offset {last} is not above the "
                                            f"previous index entry's {self.entry_offset}")
                self.entry_offset, self.entry_at = last, position
        return None


INT32_MAX = 2**31 - 1
INDEX_INTERVAL_BYTES = 4096  # index.interval.bytes, Kafka's default
MIN_RECORD_OVERHEAD = 14  # LegacyRecord.RECORD_OVERHEAD_V0


def _walk(data: bytes, start: int, where: str, at: int = 0) -> Iterator[tuple[int, int]]:
    """``FileLogInputStream#nextBatch`` from ``start``: (position, size field) of each whole
    batch; a size field below 14 throws ``CorruptRecordException`` (``LoadFailure`` here).
    ``data`` is the file from byte ``at`` on (positions are in ``data``)."""
    end = len(data)
    position = start
    while position < end - HEADER_SIZE_UP_TO_MAGIC:
        size = LENGTH_FIELD.unpack_from(data, position + LENGTH_OFFSET)[0]
        if size < MIN_RECORD_OVERHEAD:
            raise LoadFailure(f"{where}:{at + position}: record size {size} smaller than the "
                              "minimum record overhead (14): CorruptRecordException")
        if position > end - LOG_OVERHEAD - size:
            return
        yield position, size
        position += LOG_OVERHEAD + size


def _next_offset_at(data: bytes, position: int) -> int:
    """``RecordBatch#nextOffset`` of the entry at ``position``: v2, base offset + last offset
    delta + 1; v0/v1, the (wrapper) offset + 1."""
    offset = BASE_OFFSET_FIELD.unpack_from(data, position + BASE_OFFSET_OFFSET)[0]
    if data[position + MAGIC_OFFSET] >= MAGIC_V2:
        delta = LAST_OFFSET_DELTA_FIELD.unpack_from(data, position + LAST_OFFSET_DELTA_OFFSET)[0]
        return offset + delta + 1
    return offset + 1
