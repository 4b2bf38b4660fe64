from __future__ import annotations

import struct

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.errors import CorruptSnapshotError, FormatError
from kafkatx.formats.producer_snapshot import (
    ENTRY_SIZE,
    HEADER_SIZE,
    ProducerSnapshotEntry,
    build_producer_snapshot,
    read_producer_snapshot,
    snapshot_file_name,
    snapshot_offset_from_name,
)
from tests.formats.roundtrip import assert_roundtrip

TS = 1_700_000_000_000


def _entry(pid: int, **kw: int) -> ProducerSnapshotEntry:
    values = {"producer_epoch": 3, "last_sequence": 41, "last_offset": 5000, "offset_delta": 9,
              "timestamp": TS, "coordinator_epoch": 7, "current_txn_first_offset": -1}
    values.update(kw)
    return ProducerSnapshotEntry(producer_id=pid, **values)


entries_strategy = st.lists(
    st.builds(
        ProducerSnapshotEntry,
        producer_id=st.integers(0, 2**40),
        producer_epoch=st.integers(0, 32767),
        last_sequence=st.integers(-1, 2**31 - 1),
        last_offset=st.integers(-1, 2**50),
        offset_delta=st.integers(0, 10_000),
        timestamp=st.integers(1_500_000_000_000, 2_000_000_000_000) | st.just(-1),
        coordinator_epoch=st.integers(-1, 1000),
        current_txn_first_offset=st.integers(-1, 2**50),
    ),
    max_size=25,
    unique_by=lambda e: e.producer_id,
)


def test_crc32c_is_castagnoli() -> None:
    assert crc32c.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value


def test_hand_assembled_bytes_match_builder() -> None:
    a = _entry(1000, current_txn_first_offset=4990)
    b = _entry(1001, producer_epoch=0, last_offset=-1, coordinator_epoch=-1)
    body = struct.pack(">i", 2) + b"".join(
        struct.pack(">qhiqiqiq", e.producer_id, e.producer_epoch, e.last_sequence, e.last_offset,
                    e.offset_delta, e.timestamp, e.coordinator_epoch, e.current_txn_first_offset)
        for e in (a, b))
    expected = struct.pack(">hI", 1, crc32c.crc32c(body)) + body
    assert build_producer_snapshot([a, b]) == expected
    snap = read_producer_snapshot(expected, path="00000000000000005001.snapshot")
    assert snap.problems == () and snap.crc_valid and snap.loadable
    assert snap.version == 1 and list(snap.entries) == [a, b]
    assert [e.file_position for e in snap.entries] == [HEADER_SIZE, HEADER_SIZE + ENTRY_SIZE]
    assert snap.entries[0].has_ongoing_txn and not snap.entries[1].has_batch_metadata
    assert snap.entries[0].to_dict() == {
        "producer_id": 1000, "producer_epoch": 3, "last_sequence": 41, "last_offset": 5000,
        "offset_delta": 9, "timestamp": TS, "coordinator_epoch": 7,
        "current_txn_first_offset": 4990}


def test_empty_snapshot_with_no_producers() -> None:
    data = build_producer_snapshot([])
    assert len(data) == HEADER_SIZE
    snap = read_producer_snapshot(data)
    assert snap.entries == () and snap.problems == () and snap.crc_valid


@settings(max_examples=100)
@given(entries_strategy)
def test_roundtrip(entries: list[ProducerSnapshotEntry]) -> None:
    assert_roundtrip(tuple(entries), build_producer_snapshot,
                     lambda b: read_producer_snapshot(b).entries,
                     size=HEADER_SIZE + ENTRY_SIZE * len(entries))


@settings(max_examples=100)
@given(entries_strategy.filter(bool), st.data())
def test_flipped_entry_byte_is_a_crc_problem_but_entries_survive(
    entries: list[ProducerSnapshotEntry], data: st.DataObject
) -> None:
    raw = bytearray(build_producer_snapshot(entries))
    at = data.draw(st.integers(HEADER_SIZE, len(raw) - 1))
    raw[at] ^= 1 << data.draw(st.integers(0, 7))
    snap = read_producer_snapshot(bytes(raw), path="s")
    assert not snap.crc_valid and not snap.loadable
    assert [type(p) for p in snap.problems] == [CorruptSnapshotError]
    assert snap.problems[0].position == 2 and snap.problems[0].path == "s"
    assert len(snap.entries) == len(entries)
    assert snap.entries != tuple(entries)


def test_flipped_crc_byte() -> None:
    raw = bytearray(build_producer_snapshot([_entry(1)]))
    raw[3] ^= 0x80
    snap = read_producer_snapshot(bytes(raw))
    assert not snap.crc_valid and snap.crc != snap.computed_crc
    assert snap.entries == (_entry(1),)


def test_wrong_version_is_corrupt_but_parsed() -> None:
    data = build_producer_snapshot([_entry(1)], version=2)
    snap = read_producer_snapshot(data)
    assert snap.version == 2 and snap.crc_valid
    assert [(type(p), p.position, p.field) for p in snap.problems] == [
        (CorruptSnapshotError, 0, "version")]
    assert snap.entries == (_entry(1),)


def test_empty_file_is_a_problem() -> None:
    snap = read_producer_snapshot(b"")
    assert snap.version is None and snap.entries == ()
    assert [type(p) for p in snap.problems] == [CorruptSnapshotError]
    assert not snap.loadable


@settings(max_examples=100)
@given(entries_strategy.filter(bool), st.data())
def test_truncated_file(entries: list[ProducerSnapshotEntry], data: st.DataObject) -> None:
    full = build_producer_snapshot(entries)
    cut = data.draw(st.integers(1, len(full) - 1))
    snap = read_producer_snapshot(full[:cut])
    assert not snap.loadable
    assert all(isinstance(p, CorruptSnapshotError) for p in snap.problems)
    whole = max(0, (cut - HEADER_SIZE) // ENTRY_SIZE)
    assert snap.entries == tuple(entries[:whole])
    structural = [p for p in snap.problems if p.field in ("header", "entries")]
    assert len(structural) == 1
    expected_at = cut if cut < HEADER_SIZE else HEADER_SIZE + whole * ENTRY_SIZE
    assert structural[0].position == expected_at


def test_negative_count() -> None:
    body = struct.pack(">i", -1)
    data = struct.pack(">hI", 1, crc32c.crc32c(body)) + body
    snap = read_producer_snapshot(data)
    assert [(p.field, p.position) for p in snap.problems] == [("count", 6)]
    assert not snap.loadable


def test_trailing_bytes_are_reported_but_kafka_would_load() -> None:
    body = struct.pack(">i", 0) + b"\x00\x00\x01"
    data = struct.pack(">hI", 1, crc32c.crc32c(body)) + body
    snap = read_producer_snapshot(data)
    assert snap.crc_valid and snap.loadable
    assert [(type(p), p.position) for p in snap.problems] == [(FormatError, HEADER_SIZE)]


def test_to_dict() -> None:
    d = read_producer_snapshot(build_producer_snapshot([_entry(9)])).to_dict()
    assert d["crc_valid"] is True and d["version"] == 1 and d["problems"] == []
    assert d["entries"] == [_entry(9).to_dict()]


def test_builder_rejects_out_of_range() -> None:
    with pytest.raises(ValueError):
        build_producer_snapshot([_entry(1, producer_epoch=40000)])


def test_file_names() -> None:
    assert snapshot_file_name(1234) == "00000000000000001234.snapshot"
    assert snapshot_offset_from_name("00000000000000001234.snapshot") == 1234
    assert snapshot_offset_from_name("/x/t-0/00000000000000005000.snapshot.deleted") == 5000
    for bad in ("00000000000000001234.log", "abc.snapshot", "1234", "-12.snapshot",
                "00000000000000001234.snapshotx", "99999999999999999999.snapshot"):
        with pytest.raises(FormatError):
            snapshot_offset_from_name(bad)


@given(st.integers(0, 2**63 - 1))
def test_file_name_roundtrip(offset: int) -> None:
    name = snapshot_file_name(offset)
    assert len(name) == 20 + len(".snapshot")
    assert snapshot_offset_from_name(name) == offset


@settings(max_examples=200)
@given(st.binary(max_size=200))
def test_garbage_never_raises(data: bytes) -> None:
    snap = read_producer_snapshot(data)
    assert all(isinstance(p, FormatError) for p in snap.problems)
    snap.to_dict()


@settings(max_examples=100)
@given(st.binary(max_size=150))
def test_garbage_behind_a_valid_header_never_raises(tail: bytes) -> None:
    body = struct.pack(">i", len(tail) // ENTRY_SIZE + 1) + tail
    snap = read_producer_snapshot(struct.pack(">hI", 1, crc32c.crc32c(body)) + body)
    assert snap.crc_valid
    assert len(snap.entries) == len(tail) // ENTRY_SIZE
    assert not snap.loadable
