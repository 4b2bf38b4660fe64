"""Offset and time index files as numpy columns, for the analysis of whole segments.

The per-entry readers (:func:`kafkatx.formats.offset_index.read_offset_index`,
:func:`kafkatx.formats.time_index.read_time_index`) stay the definition of what a file holds.
Here the common case -- a file of well-formed entries (``OffsetIndex`` / ``TimeIndex`` as
``AbstractIndex#append`` writes them), then at most a preallocated zero tail -- is read at once
with numpy; any other file (an entry a reader would skip or report, a ragged length) is read by
the per-entry reader and turned into columns, so both give the same entries, problems and tail
(proven by tests/formats/test_index_columns.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from kafkatx.errors import FormatError
from kafkatx.formats import offset_index, time_index
from kafkatx.formats.offset_index import OffsetIndexEntry, OffsetIndexRead, read_offset_index
from kafkatx.formats.time_index import TimeIndexEntry, TimeIndexRead, read_time_index
from kafkatx.formats.zero_tail import zero_tail_start
from kafkatx.lazy_dataclass import dataclass

I64 = npt.NDArray[np.int64]
_OFFSET_ENTRY = np.dtype([("relative_offset", ">i4"), ("position", ">i4")])
_TIME_ENTRY = np.dtype([("timestamp", ">i8"), ("relative_offset", ">i4")])
assert _OFFSET_ENTRY.itemsize == offset_index.ENTRY_SIZE
assert _TIME_ENTRY.itemsize == time_index.ENTRY_SIZE


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class _IndexColumns:
    """What both index kinds hold: absolute offsets, where each entry sits in the file, and
    what the reader reported."""

    base_offset: int
    offset: I64
    file_position: I64
    problems: tuple[FormatError, ...] = ()
    preallocated_tail_bytes: int = 0
    path: str | None = field(default=None, compare=False)

    def __len__(self) -> int:
        return len(self.offset)

    def entry(self, k: int) -> OffsetIndexEntry | TimeIndexEntry:
        raise NotImplementedError

    def _read(self, read_type: type[OffsetIndexRead] | type[TimeIndexRead]
              ) -> OffsetIndexRead | TimeIndexRead:
        return read_type(base_offset=self.base_offset,
                         entries=tuple(self.entry(k) for k in range(len(self))),  # type: ignore[arg-type]
                         problems=self.problems,
                         preallocated_tail_bytes=self.preallocated_tail_bytes, path=self.path)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class OffsetIndexColumns(_IndexColumns):
    """An offset index's accepted entries as columns (absolute offsets, positions, and where
    each entry sits in the file), plus what the reader reported."""

    position: I64

    def entry(self, k: int) -> OffsetIndexEntry:
        offset = int(self.offset[k])
        return OffsetIndexEntry(offset=offset, relative_offset=offset - self.base_offset,
                                position=int(self.position[k]),
                                file_position=int(self.file_position[k]))

    def to_read(self) -> OffsetIndexRead:
        """The per-entry reader's result (entries as objects)."""
        return self._read(OffsetIndexRead)  # type: ignore[return-value]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class TimeIndexColumns(_IndexColumns):
    """A time index's accepted entries as columns (timestamps, absolute offsets, where each
    entry sits in the file), plus what the reader reported."""

    timestamp: I64

    def entry(self, k: int) -> TimeIndexEntry:
        offset = int(self.offset[k])
        return TimeIndexEntry(timestamp=int(self.timestamp[k]), offset=offset,
                              relative_offset=offset - self.base_offset,
                              file_position=int(self.file_position[k]))

    def to_read(self) -> TimeIndexRead:
        """The per-entry reader's result (entries as objects)."""
        return self._read(TimeIndexRead)  # type: ignore[return-value]


def _entries_before_zero_tail(data: bytes, entry_size: int) -> tuple[int, int]:
    """(whole entries in the file, index of the first entry lying wholly in its zero tail)."""
    whole = len(data) - len(data) % entry_size
    zero_from = zero_tail_start(data, whole)
    return whole // entry_size, -(-zero_from // entry_size)


def _positions(count: int, entry_size: int) -> I64:
    return np.arange(count, dtype=np.int64) * entry_size


def offset_index_common_case(data: bytes) -> tuple[I64, I64, int] | None:
    """(relative offsets, positions, tail bytes) of a well-formed offset index: whole entries,
    relative offsets and positions >= 0, offsets strictly increasing, then zeros; None for any
    other file. Entry 0 is always an entry (``read_offset_index``), a zero one too."""
    size = offset_index.ENTRY_SIZE
    if len(data) % size:
        return None
    count, first_zero = _entries_before_zero_tail(data, size)
    raw = np.frombuffer(data, dtype=_OFFSET_ENTRY, count=count)
    rel = raw["relative_offset"][:first_zero].astype(np.int64)
    pos = raw["position"][:first_zero].astype(np.int64)
    if (rel < 0).any() or (pos < 0).any() or (rel[1:] <= rel[:-1]).any():
        return None
    if first_zero == 0 and count:
        rel, pos, first_zero = np.zeros(1, np.int64), np.zeros(1, np.int64), 1
    return rel, pos, (count - first_zero) * size


def time_index_common_case(data: bytes) -> tuple[I64, I64, int] | None:
    """(timestamps, relative offsets, tail bytes) of a well-formed time index: whole entries,
    timestamps strictly increasing from above -1, offsets >= 0 never going back, then zeros;
    None for any other file."""
    size = time_index.ENTRY_SIZE
    if len(data) % size:
        return None
    count, first_zero = _entries_before_zero_tail(data, size)
    raw = np.frombuffer(data, dtype=_TIME_ENTRY, count=count)
    ts = raw["timestamp"][:first_zero].astype(np.int64)
    rel = raw["relative_offset"][:first_zero].astype(np.int64)
    if ((rel < 0).any() or (len(ts) and ts[0] <= time_index.NO_TIMESTAMP)
            or (ts[1:] <= ts[:-1]).any() or (rel[1:] < rel[:-1]).any()):
        return None
    return ts, rel, (count - first_zero) * size


def _columns(entries: tuple[object, ...], *names: str) -> dict[str, I64]:
    """The per-entry reader's entries as one int64 column per field."""
    return {name: np.array([getattr(e, name) or 0 for e in entries], dtype=np.int64)
            for name in names}


def read_offset_index_columns(data: bytes | memoryview, *, base_offset: int,
                              path: str | None = None) -> OffsetIndexColumns:
    """:func:`read_offset_index` as columns (same entries, problems and tail)."""
    return _index_columns(OffsetIndexColumns, data, base_offset, path)


def read_time_index_columns(data: bytes | memoryview, *, base_offset: int,
                            path: str | None = None) -> TimeIndexColumns:
    """:func:`read_time_index` as columns (same entries, problems and tail)."""
    return _index_columns(TimeIndexColumns, data, base_offset, path)


def _index_columns(kind: type[_Columns], data: bytes | memoryview, base_offset: int,
                   path: str | None) -> _Columns:
    """An index file's columns: numpy over a well-formed file, else the per-entry reader's
    entries (with its problems). The first two columns are what the entry holds (one of them
    the offset relative to ``base_offset``)."""
    data = bytes(data)
    common_case, read, entry_size, names = _INDEX_KINDS[kind]
    common = common_case(data)
    if common is None:
        read_back = read(data, base_offset=base_offset, path=path)
        return kind(base_offset=base_offset, problems=read_back.problems, path=path,
                    preallocated_tail_bytes=read_back.preallocated_tail_bytes,
                    **_columns(read_back.entries, *names, "file_position"))
    *stored, tail = common
    columns = dict(zip(names, stored, strict=True))
    columns["offset"] = columns["offset"] + base_offset
    return kind(base_offset=base_offset, file_position=_positions(len(stored[0]), entry_size),
                preallocated_tail_bytes=tail, path=path, **columns)


_Columns = TypeVar("_Columns", OffsetIndexColumns, TimeIndexColumns)
# columns type -> (numpy reader of a well-formed file, per-entry reader, entry size, the
# columns of an entry in the order the numpy reader returns them)
_INDEX_KINDS: dict[type, tuple[Callable, Callable, int, tuple[str, str]]] = {
    OffsetIndexColumns: (offset_index_common_case, read_offset_index, offset_index.ENTRY_SIZE,
                         ("offset", "position")),
    TimeIndexColumns: (time_index_common_case, read_time_index, time_index.ENTRY_SIZE,
                       ("timestamp", "offset")),
}
