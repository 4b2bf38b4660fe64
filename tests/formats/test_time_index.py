from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.errors import FormatError
from kafkatx.formats.time_index import (
    ENTRY_SIZE,
    TimeIndexEntry,
    build_time_index,
    read_time_index,
    sanity_check,
)
from tests.formats.roundtrip import assert_roundtrip

BASE = 1_000_000
TS = 1_700_000_000_000


def _entries(base: int, pairs: list[tuple[int, int]]) -> list[TimeIndexEntry]:
    return [TimeIndexEntry.make(base_offset=base, timestamp=t, offset=base + r) for t, r in pairs]


@st.composite
def index_entries(draw: st.DrawFn) -> tuple[int, list[TimeIndexEntry]]:
    base = draw(st.integers(0, 2**40))
    stamps = sorted(draw(st.sets(st.integers(1_500_000_000_000, 2_000_000_000_000),
                                 max_size=40)))
    rels = sorted(draw(st.lists(st.integers(0, 2**31 - 1), min_size=len(stamps),
                                max_size=len(stamps))))
    return base, _entries(base, list(zip(stamps, rels, strict=True)))


def test_hand_assembled_bytes_match_builder() -> None:
    expected = struct.pack(">qi", TS, 0) + struct.pack(">qi", TS + 250, 17)
    data = build_time_index(_entries(BASE, [(TS, 0), (TS + 250, 17)]), BASE)
    assert data == expected
    read = read_time_index(expected, base_offset=BASE)
    assert [(e.timestamp, e.offset, e.file_position) for e in read.entries] == [
        (TS, BASE, 0), (TS + 250, BASE + 17, 12)]
    assert read.entries[1].to_dict() == {"timestamp": TS + 250, "offset": BASE + 17,
                                         "relative_offset": 17}


@settings(max_examples=100)
@given(index_entries())
def test_roundtrip(case: tuple[int, list[TimeIndexEntry]]) -> None:
    base, entries = case
    assert_roundtrip(
        tuple(entries),
        lambda es: build_time_index(es, base),
        lambda b: read_time_index(b, base_offset=base).entries,
        size=ENTRY_SIZE * len(entries),
    )


@settings(max_examples=60)
@given(index_entries(), st.integers(0, 4000))
def test_preallocated_zero_tail(case: tuple[int, list[TimeIndexEntry]], extra: int) -> None:
    base, entries = case
    data = build_time_index(entries, base, preallocate_to=ENTRY_SIZE * len(entries) + extra)
    read = read_time_index(data, base_offset=base)
    assert list(read.entries) == entries
    assert read.problems == ()
    assert read.preallocated_tail_bytes == len(data) - ENTRY_SIZE * len(entries)


def test_all_zero_file_has_no_entries() -> None:
    read = read_time_index(bytes(ENTRY_SIZE * 800), base_offset=BASE)
    assert read.entries == ()
    assert read.problems == ()
    assert read.preallocated_tail_bytes == ENTRY_SIZE * 800


def test_empty_file_is_valid() -> None:
    read = read_time_index(b"", base_offset=BASE)
    assert read.entries == () and read.problems == ()
    assert sanity_check(b"", base_offset=BASE) == []


def test_decreasing_timestamp_is_a_problem() -> None:
    data = build_time_index(_entries(BASE, [(TS, 1), (TS + 10, 2)]), BASE)
    data += struct.pack(">qi", TS + 5, 3) + struct.pack(">qi", TS + 20, 4)
    read = read_time_index(data, base_offset=BASE, path="t")
    assert [e.timestamp for e in read.entries] == [TS, TS + 10, TS + 20]
    assert [(p.position, p.path) for p in read.problems] == [(24, "t")]
    assert "timestamp" in read.problems[0].message


def test_repeated_or_negative_timestamp_is_a_problem() -> None:
    # TimeIndex#maybeAppend only appends a timestamp greater than the last one (-1 when empty).
    data = (struct.pack(">qi", -1, 0) + struct.pack(">qi", TS, 1) + struct.pack(">qi", TS, 2)
            + struct.pack(">qi", TS + 1, 2))
    read = read_time_index(data, base_offset=BASE)
    assert [(e.timestamp, e.relative_offset) for e in read.entries] == [(TS, 1), (TS + 1, 2)]
    assert [p.position for p in read.problems] == [0, 24]


def test_zero_run_before_junk_is_not_read_as_entries() -> None:
    data = bytes(ENTRY_SIZE * 50) + struct.pack(">qi", TS, 3)
    read = read_time_index(data, base_offset=BASE)
    assert [e.timestamp for e in read.entries] == [0, TS]  # entry 0 (ts 0) is plausible
    assert len(read.problems) == 49 and read.preallocated_tail_bytes == 0


def test_decreasing_offset_is_a_problem() -> None:
    data = build_time_index(_entries(BASE, [(TS, 10)]), BASE) + struct.pack(">qi", TS + 1, 9)
    read = read_time_index(data, base_offset=BASE)
    assert len(read.entries) == 1
    assert [p.position for p in read.problems] == [12]


def test_equal_offsets_are_accepted() -> None:
    data = build_time_index(_entries(BASE, [(TS, 10), (TS + 1, 10)]), BASE)
    read = read_time_index(data, base_offset=BASE)
    assert len(read.entries) == 2 and read.problems == ()


def test_zero_entry_in_the_middle_is_a_problem() -> None:
    data = (build_time_index(_entries(BASE, [(TS, 1)]), BASE) + bytes(ENTRY_SIZE)
            + struct.pack(">qi", TS + 9, 5))
    read = read_time_index(data, base_offset=BASE)
    assert [e.relative_offset for e in read.entries] == [1, 5]
    assert [p.position for p in read.problems] == [12]
    assert read.preallocated_tail_bytes == 0


def test_truncated_tail() -> None:
    data = build_time_index(_entries(BASE, [(TS, 1), (TS + 1, 2)]), BASE)[:-5]
    read = read_time_index(data, base_offset=BASE)
    assert len(read.entries) == 1
    assert [(p.position, p.field) for p in read.problems] == [(12, "length")]


def test_sanity_check_mirrors_kafka() -> None:
    good = build_time_index(_entries(BASE, [(TS, 1), (TS + 1, 2)]), BASE)
    assert sanity_check(good, base_offset=BASE) == []
    # Kafka counts the zero tail as entries: the last timestamp (0) is below the first.
    untrimmed = sanity_check(good + bytes(36), base_offset=BASE)
    assert [p.field for p in untrimmed] == ["timestamp"]
    assert untrimmed[0].position == len(good) + 24
    negative = good + struct.pack(">qi", TS + 2, -3)
    assert [p.field for p in sanity_check(negative, base_offset=BASE)] == ["relative_offset"]
    assert [p.field for p in sanity_check(good + b"\x01", base_offset=BASE)] == ["length"]


def test_builder_rejects_bad_entries() -> None:
    with pytest.raises(ValueError):
        build_time_index([TimeIndexEntry(timestamp=TS, offset=5, relative_offset=4)], 0)
    with pytest.raises(ValueError):
        build_time_index(_entries(10, [(TS, -1)]), 10)


@settings(max_examples=150)
@given(st.binary(max_size=300), st.integers(0, 2**40))
def test_garbage_never_raises(data: bytes, base: int) -> None:
    read = read_time_index(data, base_offset=base)
    assert all(isinstance(p, FormatError) for p in read.problems)
    stamps = [e.timestamp for e in read.entries]
    rels = [e.relative_offset for e in read.entries]
    assert stamps == sorted(set(stamps)) and rels == sorted(rels)
    assert all(t >= 0 for t in stamps)
    assert all(r >= 0 for r in rels)
    sanity_check(data, base_offset=base)
