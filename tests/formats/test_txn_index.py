from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.errors import FormatError
from kafkatx.formats.txn_index import (
    ENTRY_SIZE,
    AbortedTxnEntry,
    build_txn_index,
    read_txn_index,
    sanity_check,
)
from tests.formats.roundtrip import assert_roundtrip


def _txn(pid: int, first: int, last: int, lso: int, version: int = 0) -> AbortedTxnEntry:
    return AbortedTxnEntry(producer_id=pid, first_offset=first, last_offset=last,
                           last_stable_offset=lso, version=version)


@st.composite
def txn_entries(draw: st.DrawFn) -> list[AbortedTxnEntry]:
    lasts = sorted(draw(st.sets(st.integers(1, 2**50), max_size=30)))
    out = []
    for last in lasts:
        first = draw(st.integers(0, last - 1))
        lso = draw(st.integers(0, last))
        out.append(_txn(draw(st.integers(0, 2**40)), first, last, lso))
    return out


def test_hand_assembled_bytes_match_builder() -> None:
    expected = (struct.pack(">hqqqq", 0, 4001, 100, 180, 90)
                + struct.pack(">hqqqq", 0, 4002, 150, 200, 150))
    entries = [_txn(4001, 100, 180, 90), _txn(4002, 150, 200, 150)]
    assert build_txn_index(entries) == expected
    read = read_txn_index(expected, base_offset=0)
    assert list(read.entries) == entries and read.problems == ()
    assert [e.file_position for e in read.entries] == [0, ENTRY_SIZE]
    assert read.entries[0].to_dict() == {"version": 0, "producer_id": 4001, "first_offset": 100,
                                         "last_offset": 180, "last_stable_offset": 90}


@settings(max_examples=100)
@given(txn_entries())
def test_roundtrip(entries: list[AbortedTxnEntry]) -> None:
    assert_roundtrip(tuple(entries), build_txn_index, lambda b: read_txn_index(b).entries,
                     size=ENTRY_SIZE * len(entries))
    assert read_txn_index(build_txn_index(entries)).problems == ()


def test_empty_file_is_valid() -> None:
    read = read_txn_index(b"", base_offset=100)
    assert read.entries == () and read.problems == ()


def test_version_check_reads_only_the_first_byte() -> None:
    # AbortedTxn#version reads one (signed) byte: 0x0001 and 0xFF00 pass Kafka's "> 0" check.
    low = _txn(1, 0, 10, 0, version=0x0001)
    negative = _txn(2, 0, 20, 0, version=-256)
    rejected = _txn(3, 0, 30, 0, version=0x0100)
    data = build_txn_index([low, negative, rejected])
    read = read_txn_index(data, path="00.txnindex")
    assert [e.producer_id for e in read.entries] == [1, 2]
    assert [e.kafka_version for e in read.entries] == [0, -1]
    assert [(p.position, p.field, p.path) for p in read.problems] == [
        (2 * ENTRY_SIZE, "version", "00.txnindex")]
    assert "version 1" in read.problems[0].message


def test_trailing_partial_entry_is_reported() -> None:
    data = build_txn_index([_txn(1, 0, 10, 0), _txn(2, 5, 20, 5)])[:-7]
    read = read_txn_index(data)
    assert [e.producer_id for e in read.entries] == [1]
    assert [(p.position, p.field) for p in read.problems] == [(ENTRY_SIZE, "entry")]


def test_last_offset_must_increase() -> None:
    data = build_txn_index([_txn(1, 0, 10, 0), _txn(2, 0, 10, 0), _txn(3, 0, 9, 0)])
    read = read_txn_index(data)
    assert len(read.entries) == 3  # kept: each entry is still a fact about an abort
    assert [p.position for p in read.problems] == [ENTRY_SIZE, 2 * ENTRY_SIZE]


def test_sanity_check_and_base_offset() -> None:
    data = build_txn_index([_txn(1, 90, 99, 80), _txn(2, 95, 120, 95)])
    problems = sanity_check(data, base_offset=100, path="p")
    assert len(problems) == 1
    assert problems[0].position == 18 and "99" in problems[0].message
    assert sanity_check(data, base_offset=99) == []
    read = read_txn_index(data, base_offset=100)
    assert [p.field for p in read.problems] == ["last_offset"]
    assert read.to_dict()["problems"][0]["position"] == 18  # type: ignore[index]


def test_sanity_check_stops_at_unreadable_version() -> None:
    data = build_txn_index([_txn(1, 0, 500, 0, version=0x0200), _txn(2, 0, 1, 0)])
    assert [p.field for p in sanity_check(data, base_offset=100)] == ["version"]


def test_builder_rejects_out_of_range() -> None:
    with pytest.raises(ValueError):
        build_txn_index([_txn(2**63, 0, 1, 0)])


@settings(max_examples=150)
@given(st.binary(max_size=200), st.none() | st.integers(0, 2**40))
def test_garbage_never_raises(data: bytes, base: int | None) -> None:
    read = read_txn_index(data, base_offset=base)
    assert all(isinstance(p, FormatError) for p in read.problems)
    assert len(read.entries) <= len(data) // ENTRY_SIZE
    if base is not None:
        sanity_check(data, base_offset=base)
