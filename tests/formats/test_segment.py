"""Whole-segment reading: every entry in order, and damage reported with positions, never raised."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.formats.record_batch import (
    ControlType,
    Record,
    RecordBatch,
    build_batch,
    build_control_batch,
)
from kafkatx.formats.segment import (
    CORRUPT_REGION,
    CRC_MISMATCH,
    INVALID_BATCH,
    TRUNCATED_BATCH,
    ZERO_PADDING,
    SegmentProblem,
    iter_segment,
)
from kafkatx.formats.segment_scan import SegmentScan, scan_segment_chunks

TS = 1_700_000_000_000


def make_segment(n: int = 10, *, start: int = 0) -> tuple[bytes, list[int]]:
    """n batches (a mix of plain, transactional and a COMMIT marker); returns bytes + positions."""
    out = bytearray()
    positions = []
    offset = start
    for i in range(n):
        positions.append(len(out))
        if i % 4 == 3:
            out += build_control_batch(base_offset=offset, producer_id=1000, producer_epoch=1,
                                       control_type=ControlType.COMMIT, timestamp=TS + i,
                                       coordinator_epoch=2)
            offset += 1
            continue
        recs = [Record(offset=offset + j, timestamp=TS + i, key=b"k%d" % j, value=b"v" * (20 + i))
                for j in range(3)]
        out += build_batch(recs, producer_id=1000, producer_epoch=1, base_sequence=3 * i,
                           is_transactional=i % 2 == 0, compression_id=i % 5)
        offset += 3
    return bytes(out), positions


def split(items: list) -> tuple[list[RecordBatch], list[SegmentProblem]]:
    batches = [x for x in items if not isinstance(x, SegmentProblem)]
    problems = [x for x in items if isinstance(x, SegmentProblem)]
    return batches, problems


def test_clean_segment_reads_every_batch_in_order() -> None:
    data, positions = make_segment(12)
    batches, problems = split(list(iter_segment(data, path="s.log")))
    assert problems == []
    assert [b.position for b in batches] == positions
    assert all(b.crc_valid for b in batches)
    offsets = [(b.header.base_offset, b.header.last_offset) for b in batches]
    assert all(a[1] + 1 == b[0] for a, b in itertools.pairwise(offsets))


def test_empty_file_has_no_entries_and_no_problems() -> None:
    assert list(iter_segment(b"", path="empty.log")) == []


def test_flipped_byte_reports_crc_mismatch_and_keeps_going() -> None:
    data, positions = make_segment(8)
    bad = bytearray(data)
    bad[positions[2] + 65] ^= 0x55
    batches, problems = split(list(iter_segment(bytes(bad), path="s.log")))
    assert len(batches) == 8
    assert [p.kind for p in problems] == [CRC_MISMATCH]
    assert problems[0].position == positions[2]
    assert str(problems[0]).startswith(f"s.log:{positions[2]}: CRC mismatch")


def test_truncated_tail_is_a_trailing_partial_batch() -> None:
    data, positions = make_segment(6)
    cut = data[: positions[5] + 40]
    batches, problems = split(list(iter_segment(cut, path="s.log")))
    assert len(batches) == 5
    assert [(p.kind, p.position) for p in problems] == [(TRUNCATED_BATCH, positions[5])]
    assert "trailing partial batch" in problems[0].message


def test_tail_shorter_than_a_header() -> None:
    data, _ = make_segment(3)
    batches, problems = split(list(iter_segment(data + b"\x00\x00\x00\x00\x00\x00\x00\x07\x01",
                                                path="s.log")))
    assert len(batches) == 3 and [p.kind for p in problems] == [TRUNCATED_BATCH]


def test_zeroed_region_is_skipped_to_the_next_valid_batch() -> None:
    data, positions = make_segment(9)
    bad = bytearray(data)
    bad[positions[3] : positions[5]] = bytes(positions[5] - positions[3])
    batches, problems = split(list(iter_segment(bytes(bad), path="s.log")))
    assert [b.position for b in batches] == positions[:3] + positions[5:]
    assert [(p.kind, p.position, p.length) for p in problems] == [
        (CORRUPT_REGION, positions[3], positions[5] - positions[3])]


def test_zero_tail_is_padding_not_corruption() -> None:
    data, _ = make_segment(3)
    batches, problems = split(list(iter_segment(data + bytes(4096), path="s.log")))
    assert len(batches) == 3
    assert [(p.kind, p.length) for p in problems] == [(ZERO_PADDING, 4096)]


def test_garbage_file_reports_one_region_and_no_batches() -> None:
    garbage = os.urandom(1) * 0 + bytes((i * 131 + 7) % 251 for i in range(5000))
    batches, problems = split(list(iter_segment(garbage, path="g.log")))
    assert batches == []
    assert problems and problems[0].position == 0
    assert sum(p.length for p in problems) == len(garbage)


def test_corrupt_length_in_the_middle_resynchronises() -> None:
    data, positions = make_segment(6)
    bad = bytearray(data)
    bad[positions[2] + 8 : positions[2] + 12] = (10**9).to_bytes(4, "big")
    batches, problems = split(list(iter_segment(bytes(bad), path="s.log")))
    assert [b.position for b in batches] == positions[:2] + positions[3:]
    assert [(p.kind, p.position) for p in problems] == [(CORRUPT_REGION, positions[2])]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_random_damage_never_raises_and_accounts_for_every_byte(data: st.DataObject) -> None:
    seg, _positions = make_segment(6)
    buf = bytearray(seg)
    for _ in range(data.draw(st.integers(0, 4))):
        i = data.draw(st.integers(0, len(buf) - 1))
        buf[i] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        buf = buf[: data.draw(st.integers(0, len(buf)))]
    items = list(iter_segment(bytes(buf), path="r.log"))
    covered = 0
    for x in items:
        if isinstance(x, SegmentProblem):
            if x.kind not in (CRC_MISMATCH, INVALID_BATCH):  # these annotate a yielded batch
                assert x.position == covered
                covered += x.length
        else:
            assert x.position == covered
            covered += x.header.size if isinstance(x, RecordBatch) else 12 + x.message.size
    assert covered == len(buf)


# --- the fast scanner equals the exact construct path ---------------------------------------

def _exact_rows(buf: bytes) -> tuple[list[dict], list[SegmentProblem]]:
    from kafkatx.formats.legacy_message import LegacyEntry

    rows, problems = [], []
    for x in iter_segment(buf, path="eq.log"):
        if isinstance(x, SegmentProblem):
            problems.append(x)
        elif isinstance(x, LegacyEntry):
            m = x.message
            rows.append({"position": m.position, "base_offset": x.base_offset, "magic": m.magic,
                         "last_offset_delta": x.last_offset - x.base_offset, "crc": m.crc,
                         "crc_valid": m.crc_valid, "producer_id": -1, "records_count": x.count,
                         "batch_length": m.size, "control": (-1, -1)})
        else:
            h = x.header
            ctl = (x.control.type_id, x.control.coordinator_epoch
                   if x.control.coordinator_epoch is not None else -1) if x.control else (-1, -1)
            rows.append({"position": x.position, "base_offset": h.base_offset, "magic": h.magic,
                         "last_offset_delta": h.last_offset_delta, "crc": h.crc,
                         "crc_valid": x.crc_valid, "producer_id": h.producer_id,
                         "records_count": h.records_count, "batch_length": h.batch_length,
                         "control": ctl})
    return rows, problems


def _scan_rows(buf: bytes) -> tuple[list[dict], list[SegmentProblem]]:
    from kafkatx.formats.segment_scan import scan_segment

    return _rows_of(scan_segment(buf, path="eq.log"))


def _rows_of(scan: SegmentScan) -> tuple[list[dict], list[SegmentProblem]]:
    h = scan.headers
    rows = [{"position": int(h.position[i]), "base_offset": int(h.base_offset[i]),
             "magic": int(h.magic[i]), "last_offset_delta": int(h.last_offset_delta[i]),
             "crc": int(h.crc[i]), "crc_valid": bool(h.crc_valid[i]),
             "producer_id": int(h.producer_id[i]), "records_count": int(h.records_count[i]),
             "batch_length": int(h.batch_length[i]),
             "control": (int(scan.control_type[i]), int(scan.coordinator_epoch[i]))}
            for i in range(len(h))]
    return rows, list(scan.problems)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_fast_scan_equals_construct_path_on_random_segments(data: st.DataObject) -> None:
    from kafkatx.formats.legacy_message import build_legacy_entry

    start = data.draw(st.integers(0, 2**40))
    seg, _ = make_segment(data.draw(st.integers(1, 12)), start=start)
    legacy = b""
    if data.draw(st.booleans()):
        # Old-format entries before the v2 ones, as in a topic upgraded from 0.10 to 0.11+.
        legacy = build_legacy_entry(offset=start - 3, magic=0, key=b"k", value=b"old")
        legacy += build_legacy_entry(offset=start - 1, magic=1, compression=1,
                                     timestamp=TS, inner=[(b"a", b"1", TS), (None, b"2", TS)])
    buf = bytearray(legacy + seg)
    for _ in range(data.draw(st.integers(0, 3))):
        i = data.draw(st.integers(0, len(buf) - 1))
        buf[i] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        buf = buf[: data.draw(st.integers(0, len(buf)))]
    exact_rows, exact_problems = _exact_rows(bytes(buf))
    scan_rows, scan_problems = _scan_rows(bytes(buf))
    assert scan_rows == exact_rows
    assert sorted(map(str, scan_problems)) == sorted(map(str, exact_problems))


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_a_segment_scanned_in_chunks_is_the_whole_scan(data: st.DataObject) -> None:
    """``scan_segment_chunks``: chunks of a window far smaller than the segment (or a batch),
    one after the other, hold the rows and problems of one whole scan, in the same order --
    legacy entries, markers, damage and a cut tail included -- and each ends where the next
    begins."""
    from kafkatx.formats.legacy_message import build_legacy_entry

    seg, _ = make_segment(data.draw(st.integers(1, 12)), start=100)
    legacy = build_legacy_entry(offset=97, magic=1, compression=1, timestamp=TS,
                                inner=[(b"a", b"1", TS), (None, b"2", TS)])
    buf = bytearray(seg[:200] + legacy + seg[200:] if data.draw(st.booleans()) else seg)
    buf += data.draw(control_batches())
    for _ in range(data.draw(st.integers(0, 3))):
        i = data.draw(st.integers(0, len(buf) - 1))
        buf[i] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        buf = buf[: data.draw(st.integers(0, len(buf)))]
    if data.draw(st.booleans()):
        buf += bytes(data.draw(st.integers(1, 300)))
    want_rows, want_problems = _scan_rows(bytes(buf))
    rows: list[dict] = []
    problems: list[SegmentProblem] = []
    window = data.draw(st.sampled_from([1, 61, 150, 700, 10**6]))
    for chunk in scan_segment_chunks(bytes(buf), path="eq.log", window=window):
        got = _rows_of(chunk)
        assert all(r["position"] < chunk.size for r in got[0])
        rows += got[0]
        problems += got[1]
    assert rows == want_rows
    assert list(map(str, problems)) == list(map(str, want_problems))


@st.composite
def control_batches(draw: st.DrawFn) -> bytes:
    """Control batches of every shape: Kafka's marker layout and its near misses (other types,
    key versions, short or longer keys and values, timestamp deltas, headers, compression)."""
    import struct

    out = bytearray()
    offset = draw(st.integers(0, 2**40))
    for i in range(draw(st.integers(1, 6))):
        if draw(st.booleans()):
            out += build_control_batch(
                base_offset=offset, producer_id=draw(st.integers(0, 2**40)),
                producer_epoch=draw(st.integers(0, 2**15 - 1)),
                control_type=draw(st.sampled_from([ControlType.ABORT, ControlType.COMMIT])),
                timestamp=TS + i, coordinator_epoch=draw(st.integers(-(2**31), 2**31 - 1)))
        else:
            key = struct.pack(">hh", draw(st.integers(-2, 3)), draw(st.integers(-1, 7)))
            key = key[:draw(st.integers(0, 4))] + draw(st.binary(max_size=3))
            value = draw(st.one_of(st.none(), st.binary(max_size=9)))
            record = Record(offset=offset, timestamp=TS + draw(st.integers(0, 200)), key=key,
                            value=value, headers=tuple(draw(st.lists(
                                st.tuples(st.just("h"), st.just(b"x")), max_size=1))))
            out += build_batch([record], base_offset=offset, base_timestamp=TS,
                               is_transactional=True, is_control=True, producer_id=9,
                               producer_epoch=1, compression_id=draw(st.sampled_from([0, 0, 1])))
        offset += 1
    return bytes(out)


@settings(max_examples=150, deadline=None)
@given(control_batches())
def test_marker_fast_decode_equals_the_construct_path(buf: bytes) -> None:
    """``EndTransactionMarker``/``ControlRecordType`` read from fixed positions give what the
    full record decode (``DefaultRecordBatch`` + ``ControlRecordUtils``) gives, layout or not."""
    exact_rows, exact_problems = _exact_rows(buf)
    scan_rows, scan_problems = _scan_rows(buf)
    assert scan_rows == exact_rows
    assert sorted(map(str, scan_problems)) == sorted(map(str, exact_problems))


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_mapped_segment_scanned_in_windows_equals_bytes(data: st.DataObject) -> None:
    """A mapped segment is walked window by window, its pages dropped behind the walk and its
    markers decoded in groups (``page_releaser``): the same scan as the bytes in memory, with
    windows and groups far smaller than a batch or a segment, damage included."""
    import mmap
    import tempfile

    from kafkatx.formats import batchscan, segment_scan

    seg, _ = make_segment(data.draw(st.integers(1, 40)))
    buf = bytearray(seg + data.draw(control_batches()) + make_segment(5, start=10_000)[0])
    for _ in range(data.draw(st.integers(0, 2))):
        i = data.draw(st.integers(0, len(buf) - 1))
        buf[i] = data.draw(st.integers(0, 255))
    want = _scan_rows(bytes(buf))
    saved = batchscan.RELEASE_WINDOW, segment_scan.MARKER_GROUP
    batchscan.RELEASE_WINDOW = data.draw(st.sampled_from([61, 100, 4096]))
    segment_scan.MARKER_GROUP = data.draw(st.sampled_from([1, 2, 3]))
    try:
        with tempfile.TemporaryFile() as f:
            f.write(buf)
            f.flush()
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                assert segment_scan.page_releaser(mapped) is not None
                got = _scan_rows(mapped)  # type: ignore[arg-type]
    finally:
        batchscan.RELEASE_WINDOW, segment_scan.MARKER_GROUP = saved
    assert got[0] == want[0]
    assert list(map(str, got[1])) == list(map(str, want[1]))


def test_a_refused_page_release_is_no_error(tmp_path: Path) -> None:
    """Dropping pages is a hint: a system refusing it leaves the scan as it is."""
    import mmap

    from kafkatx.formats import batchscan

    class Refusing(mmap.mmap):
        calls = 0

        def madvise(self, *args: int) -> None:
            Refusing.calls += 1
            raise OSError(22, "Invalid argument")

    seg, _ = make_segment(300)
    assert len(seg) > 3 * mmap.PAGESIZE
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(seg)
    saved = batchscan.RELEASE_WINDOW
    batchscan.RELEASE_WINDOW = 4096
    try:
        with open(path, "rb") as f, Refusing(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            got = _scan_rows(mapped)  # type: ignore[arg-type]
    finally:
        batchscan.RELEASE_WINDOW = saved
    assert Refusing.calls == 1 and got[0] == _scan_rows(seg)[0]
