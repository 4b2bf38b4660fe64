from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.errors import FormatError
from kafkatx.formats.offset_index import (
    ENTRY_SIZE,
    OffsetIndexEntry,
    build_offset_index,
    read_offset_index,
    sanity_check,
)
from tests.formats.roundtrip import assert_roundtrip

BASE = 5_367_851


def _entries(base: int, pairs: list[tuple[int, int]]) -> list[OffsetIndexEntry]:
    return [OffsetIndexEntry.make(base_offset=base, offset=base + r, position=p) for r, p in pairs]


@st.composite
def index_entries(draw: st.DrawFn) -> tuple[int, list[OffsetIndexEntry]]:
    base = draw(st.integers(0, 2**40))
    rels = sorted(draw(st.sets(st.integers(0, 2**31 - 1), max_size=40)))
    positions = sorted(draw(st.lists(st.integers(0, 2**31 - 1), min_size=len(rels),
                                     max_size=len(rels))))
    return base, _entries(base, list(zip(rels, positions, strict=True)))


def test_hand_assembled_bytes_match_builder() -> None:
    expected = struct.pack(">ii", 5, 4200) + struct.pack(">ii", 100, 9000)
    data = build_offset_index(_entries(1000, [(5, 4200), (100, 9000)]), 1000)
    assert data == expected
    read = read_offset_index(expected, base_offset=1000)
    assert [(e.offset, e.position, e.file_position) for e in read.entries] == [
        (1005, 4200, 0), (1100, 9000, 8)]
    assert read.entries[1].to_dict() == {"offset": 1100, "relative_offset": 100,
                                         "position": 9000}


@settings(max_examples=100)
@given(index_entries())
def test_roundtrip(case: tuple[int, list[OffsetIndexEntry]]) -> None:
    base, entries = case
    assert_roundtrip(
        tuple(entries),
        lambda es: build_offset_index(es, base),
        lambda b: read_offset_index(b, base_offset=base).entries,
        size=ENTRY_SIZE * len(entries),
    )
    read = read_offset_index(build_offset_index(entries, base), base_offset=base)
    assert read.problems == () and read.preallocated_tail_bytes == 0


@settings(max_examples=60)
@given(index_entries(), st.integers(0, 4000))
def test_preallocated_zero_tail_is_not_a_problem(
    case: tuple[int, list[OffsetIndexEntry]], extra: int
) -> None:
    base, entries = case
    if not entries:  # entry 0 is always kept; covered by test_all_zero_file
        return
    size = ENTRY_SIZE * len(entries) + extra
    data = build_offset_index(entries, base, preallocate_to=size)
    read = read_offset_index(data, base_offset=base)
    assert list(read.entries) == entries
    assert read.problems == ()
    assert read.preallocated_tail_bytes == len(data) - ENTRY_SIZE * len(entries)


def test_all_zero_file_keeps_entry_zero() -> None:
    read = read_offset_index(bytes(10485760 // 1024), base_offset=BASE)
    assert [(e.offset, e.position) for e in read.entries] == [(BASE, 0)]
    assert read.preallocated_tail_bytes == 10485760 // 1024 - ENTRY_SIZE
    assert read.problems == ()


def test_empty_file_is_valid() -> None:
    read = read_offset_index(b"", base_offset=BASE)
    assert read.entries == () and read.problems == () and read.preallocated_tail_bytes == 0
    assert sanity_check(b"", base_offset=BASE) == []


def test_non_increasing_nonzero_entry_is_a_problem_and_skipped() -> None:
    data = build_offset_index(_entries(BASE, [(10, 100), (20, 200)]), BASE)
    data += struct.pack(">ii", 15, 300) + struct.pack(">ii", 30, 400)
    read = read_offset_index(data, base_offset=BASE, path="x.index")
    assert [e.relative_offset for e in read.entries] == [10, 20, 30]
    assert len(read.problems) == 1
    problem = read.problems[0]
    assert problem.position == 16 and problem.path == "x.index"
    assert "15" in problem.message and "20" in problem.message
    assert read.preallocated_tail_bytes == 0


def test_zero_entry_followed_by_data_is_not_a_tail() -> None:
    data = build_offset_index(_entries(BASE, [(10, 100)]), BASE)
    data += bytes(ENTRY_SIZE) + struct.pack(">ii", 30, 400)
    read = read_offset_index(data, base_offset=BASE)
    assert [e.relative_offset for e in read.entries] == [10, 30]
    assert [p.position for p in read.problems] == [8]
    assert read.preallocated_tail_bytes == 0


def test_negative_values_are_problems() -> None:
    data = struct.pack(">ii", -4, 0) + struct.pack(">ii", 5, -1) + struct.pack(">ii", 6, 10)
    read = read_offset_index(data, base_offset=BASE)
    assert [e.relative_offset for e in read.entries] == [6]
    assert [(p.position, p.field) for p in read.problems] == [
        (0, "relative_offset"), (8, "position")]


def test_length_not_multiple_of_entry_size() -> None:
    data = build_offset_index(_entries(BASE, [(1, 10), (2, 20)]), BASE) + b"\x00\x01\x02"
    read = read_offset_index(data, base_offset=BASE)
    assert len(read.entries) == 2
    assert [(p.position, p.field) for p in read.problems] == [(16, "length")]
    assert [p.position for p in sanity_check(data, base_offset=BASE)] == [16]


def test_sanity_check_mirrors_kafka() -> None:
    good = build_offset_index(_entries(BASE, [(1, 10), (2, 20)]), BASE)
    assert sanity_check(good, base_offset=BASE) == []
    # Kafka does not notice a zero tail: the last slot decodes to the base offset itself.
    assert sanity_check(good + bytes(80), base_offset=BASE) == []
    bad = good + struct.pack(">ii", -1, 30)
    problems = sanity_check(bad, base_offset=BASE, path="p")
    assert len(problems) == 1
    assert problems[0].position == 16 and str(BASE - 1) in problems[0].message


def test_builder_rejects_inconsistent_entries() -> None:
    with pytest.raises(ValueError):
        build_offset_index([OffsetIndexEntry(offset=10, relative_offset=3, position=0)], 0)
    with pytest.raises(ValueError):
        build_offset_index(_entries(0, [(2**31, 0)]), 0)
    with pytest.raises(ValueError):
        build_offset_index(_entries(0, [(1, 0), (2, 0)]), 0, preallocate_to=8)


@settings(max_examples=150)
@given(st.binary(max_size=300), st.integers(0, 2**40))
def test_garbage_never_raises(data: bytes, base: int) -> None:
    read = read_offset_index(data, base_offset=base)
    assert all(isinstance(p, FormatError) for p in read.problems)
    rels = [e.relative_offset for e in read.entries]
    assert rels == sorted(set(rels))
    assert all(e.position >= 0 for e in read.entries)
    assert read.preallocated_tail_bytes + ENTRY_SIZE * len(read.entries) <= len(data)
    sanity_check(data, base_offset=base)
