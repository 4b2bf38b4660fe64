"""A segment as the log load sees it: its files by name, its valid bytes, its next offset.

Mirrors what ``LogLoader#load`` asks of ``LogSegment`` (Kafka 4.x): ``readNextOffset`` (the
batches after the offset index's last entry, read as ``FileLogInputStream`` reads them: sizes
only, no CRC), ``recover``'s valid bytes (the batches up to the first partial or invalid one,
``RecordBatch#ensureValid``) and what it throws on the way (``LogSegmentOffsetOverflowException``,
``InvalidOffsetException``), and ``LogFileUtils``' file names. Pure: files are read through a
:class:`PartitionFiles` reader, never written.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
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
from kafkatx.formats.offset_index import read_offset_index
from kafkatx.formats.segment_scan import SegmentScan, scan_segment
from kafkatx.formats.txn_index import AbortedTxnEntry, read_txn_index
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
    """The regular files of one partition directory, read-only, by name."""

    def names(self) -> Iterable[str]: ...
    def size(self, name: str) -> int: ...
    def read(self, name: str) -> bytes: ...
    def scan(self, name: str) -> SegmentScan: ...
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

    def _bytes(self) -> bytes:
        if self.files is None:
            return b""
        return self.files.read(self.log)[:self.size]

    def next_offset(self) -> int:
        """``LogSegment#readNextOffset``: the next offset after the last whole batch, read from
        the offset index's last entry on (``FileLogInputStream``: sizes only, no CRC)."""
        if self.recovered:
            h = self.scan().headers
            valid = np.flatnonzero(self.rows())
            return int(h.last_offset[valid[-1]]) + 1 if len(valid) else self.base_offset
        data = self._bytes()
        last = None
        for position, _size in _walk(data, self._last_index_position(), self._where()):
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

    def check_offsets(self, valid: int, index_interval: int) -> None:
        """What ``LogSegment#recover`` throws on its way through the valid batches:
        ``LogSegmentOffsetOverflowException`` (an offset too far from the base for the
        indexes) and ``InvalidOffsetException`` (an index entry not above the previous one,
        at every ``index.interval.bytes``)."""
        h = self.scan().headers
        rows = np.flatnonzero(h.next_position <= valid)
        relative = h.last_offset[rows] - self.base_offset
        out_of_range = (relative < 0) | (relative > INT32_MAX)
        if out_of_range.any():
            last = int(h.last_offset[rows[out_of_range.argmax()]])
            raise LoadFailure(f"{self._where()}: offset {last} cannot be relative to the base "
                              f"offset {self.base_offset} (LogSegmentOffsetOverflowException)")
        if len(rows) < 2 or bool((np.diff(h.last_offset[rows]) > 0).all()):
            return  # offsets only grow: no index entry can fail to
        last_entry_offset: int | None = None
        last_entry_at = 0
        for j in rows.tolist():
            last = int(h.last_offset[j])
            position = int(h.position[j])
            if position - last_entry_at > index_interval:
                if last_entry_offset is not None and last <= last_entry_offset:
                    raise InvalidOffset(f"{self._where()}: offset {last} is not above the previous "
                                        f"index entry's {last_entry_offset}")
                last_entry_offset, last_entry_at = last, position

    def valid_bytes(self) -> int:
        """``LogSegment#recover``'s valid bytes: up to the first batch that is partial, cannot
        be read (``FileLogInputStream``) or does not check (``RecordBatch#ensureValid``: CRC,
        size)."""
        scan = self.scan()
        h = scan.headers
        stop = self.file_size
        for problem in scan.problems:  # the scanner stops where FileLogInputStream cannot go on
            if problem.position is not None:
                stop = min(stop, problem.position)
        # whole batches one after the other from byte 0, each checking, up to the first stop
        inside = h.next_position <= stop
        chained = np.concatenate(([True], h.position[1:] == h.next_position[:-1])) \
            if len(h) else np.zeros(0, dtype=bool)
        good = inside & h.crc_valid & chained & ((h.magic < 2) | (h.size >= 61))
        if not len(h) or h.position[0] != 0:
            return 0
        first_bad = int(np.argmin(good)) if not good.all() else len(h)
        return int(h.next_position[first_bad - 1]) if first_bad else 0


class InvalidOffset(Exception):
    """``InvalidOffsetException`` while a segment's indexes are rebuilt."""


INT32_MAX = 2**31 - 1
INDEX_INTERVAL_BYTES = 4096  # index.interval.bytes, Kafka's default
MIN_RECORD_OVERHEAD = 14  # LegacyRecord.RECORD_OVERHEAD_V0


def _walk(data: bytes, start: int, where: str) -> Iterator[tuple[int, int]]:
    """``FileLogInputStream#nextBatch`` from ``start``: (position, size field) of each whole
    batch; a size field below 14 throws ``CorruptRecordException`` (``LoadFailure`` here)."""
    end = len(data)
    position = start
    while position < end - HEADER_SIZE_UP_TO_MAGIC:
        size = LENGTH_FIELD.unpack_from(data, position + LENGTH_OFFSET)[0]
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
    offset = BASE_OFFSET_FIELD.unpack_from(data, position + BASE_OFFSET_OFFSET)[0]
    if data[position + MAGIC_OFFSET] >= MAGIC_V2:
        delta = LAST_OFFSET_DELTA_FIELD.unpack_from(data, position + LAST_OFFSET_DELTA_OFFSET)[0]
        return offset + delta + 1
    return offset + 1
