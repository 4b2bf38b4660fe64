"""The columnar index readers equal the per-entry readers on any file.

Follows ``OffsetIndex`` / ``TimeIndex`` (``AbstractIndex#append``, a preallocated zero tail
after an unclean shutdown) through :mod:`kafkatx.formats.offset_index` and
:mod:`kafkatx.formats.time_index`, the definitions: for well-formed files, files with a zero
tail, damaged entries, ragged lengths and random bytes, :mod:`kafkatx.formats.index_columns`
must give the same entries (with their file positions), problems and tail bytes, and take its
vectorised path on every well-formed file.
"""

from __future__ import annotations

import struct
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.formats.index_columns import (
    offset_index_common_case,
    read_offset_index_columns,
    read_time_index_columns,
    time_index_common_case,
)
from kafkatx.formats.offset_index import read_offset_index
from kafkatx.formats.time_index import read_time_index

T0 = 1_763_700_000_000


def _problems(read: object) -> list[tuple[object, ...]]:
    return [(p.path, p.position, p.field, p.message) for p in read.problems]  # type: ignore[attr-defined]


def _index_file(draw: st.DrawFn, entries: list[bytes], size: int) -> tuple[bytes, bool]:
    """``entries`` (well formed) with damaged entries inserted, a zero tail and maybe a ragged
    end; and whether the result is still well formed."""
    well_formed = True
    for _ in range(draw(st.integers(0, 3))):  # damage: any entry-sized bytes anywhere
        entries.insert(draw(st.integers(0, len(entries))),
                       draw(st.binary(min_size=size, max_size=size)))
        well_formed = False
    data = b"".join(entries) + bytes(size * draw(st.integers(0, 5)))
    if draw(st.booleans()):
        data += draw(st.binary(min_size=1, max_size=size - 1))
        well_formed = False
    return data, well_formed


@st.composite
def offset_files(draw: st.DrawFn) -> tuple[bytes, bool]:
    """An offset index's bytes, and whether they are well formed (increasing, then zeros)."""
    rels = sorted(draw(st.sets(st.integers(0, 2**31 - 1), max_size=30)))
    positions = sorted(draw(st.lists(st.integers(0, 2**31 - 1), min_size=len(rels),
                                     max_size=len(rels))))
    return _index_file(draw, [struct.pack(">ii", r, p)
                              for r, p in zip(rels, positions, strict=True)], 8)


@st.composite
def time_files(draw: st.DrawFn) -> tuple[bytes, bool]:
    """A time index's bytes, and whether they are well formed."""
    stamps = sorted(draw(st.sets(st.integers(T0, T0 + 10**9), max_size=30)))
    rels = sorted(draw(st.lists(st.integers(0, 2**31 - 1), min_size=len(stamps),
                                max_size=len(stamps))))
    return _index_file(draw, [struct.pack(">qi", t, r)
                              for t, r in zip(stamps, rels, strict=True)], 12)


@settings(max_examples=300, deadline=None)
@given(st.one_of(offset_files(), st.binary(max_size=120).map(lambda b: (b, False))),
       st.integers(0, 2**40))
def test_offset_index_columns_equal_the_entry_reader(case: tuple[bytes, bool], base: int
                                                     ) -> None:
    """``OffsetIndex`` entries as ``read_offset_index`` reads them, columnar."""
    _assert_columns_equal_entries(case, base, read_offset_index, read_offset_index_columns,
                                  offset_index_common_case, "x.index",
                                  ("offset", "relative_offset", "position", "file_position"))


@settings(max_examples=300, deadline=None)
@given(st.one_of(time_files(), st.binary(max_size=120).map(lambda b: (b, False))),
       st.integers(0, 2**40))
def test_time_index_columns_equal_the_entry_reader(case: tuple[bytes, bool], base: int) -> None:
    """``TimeIndex`` entries as ``read_time_index`` reads them, columnar."""
    _assert_columns_equal_entries(case, base, read_time_index, read_time_index_columns,
                                  time_index_common_case, "x.timeindex",
                                  ("timestamp", "offset", "relative_offset", "file_position"))


def _assert_columns_equal_entries(case: tuple[bytes, bool], base: int, read_entries: Any,
                                  read_columns: Any, common_case: Any, path: str,
                                  fields: tuple[str, ...]) -> None:
    """The columns read back as the entries the per-entry reader reads, with the same problems
    and tail; a well-formed file takes the numpy path."""
    data, well_formed = case
    exact = read_entries(data, base_offset=base, path=path)
    cols = read_columns(data, base_offset=base, path=path)
    assert [tuple(getattr(e, f) for f in fields) for e in exact.entries] == [
        tuple(getattr(e, f) for f in fields) for e in cols.to_read().entries]
    assert _problems(cols) == _problems(exact)
    assert cols.preallocated_tail_bytes == exact.preallocated_tail_bytes
    if well_formed:
        assert common_case(data) is not None


def test_all_zero_offset_index_keeps_entry_zero_on_the_fast_path() -> None:
    """``AbstractIndex``: a preallocated, never written offset index; entry 0 is taken."""
    data = bytes(8 * 4)
    assert offset_index_common_case(data) is not None
    cols = read_offset_index_columns(data, base_offset=100)
    assert cols.offset.tolist() == [100] and cols.preallocated_tail_bytes == 24


@given(st.binary(max_size=64), st.integers(0, 3_000_000), st.binary(max_size=8))
@settings(max_examples=60, deadline=None)
def test_zero_tail_start_is_where_the_zeros_to_the_end_begin(head: bytes, zeros: int,
                                                             after: bytes) -> None:
    """Searched from the end a megabyte at a time, it agrees with stripping the zeros."""
    from kafkatx.formats.zero_tail import zero_tail_start

    data = head + bytes(zeros) + after
    for end in (len(data), len(head) + zeros, len(head) // 2):
        assert zero_tail_start(data, end) == len(data[:end].rstrip(b"\0"))
