"""Tests for the columnar v2 header scanner: C extension and Python fallback must agree."""

from __future__ import annotations

import itertools
import json
import mmap
import os
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import crc32c
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from kafkatx.formats import batchscan
from kafkatx.formats.batchscan import (
    HAVE_EXTENSION,
    HeaderColumns,
    StopReason,
    scan_v2_run,
    scan_v2_run_python,
)
from kafkatx.formats.record_batch import increment_sequence
from tests.formats.batch_edits import recrc

ROOT = Path(__file__).resolve().parents[2]
INT32_MAX = 2**31 - 1
needs_ext = pytest.mark.skipif(not HAVE_EXTENSION, reason="C extension not built")
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CODECS = (0, 1, 3, 4)  # none, gzip, lz4, zstd (kafka-python here has no snappy library)


def make_batch(
    base_offset: int = 0,
    *,
    records: int = 1,
    codec: int = 0,
    transactional: bool = False,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    leader_epoch: int = 0,
    timestamp: int = 1_700_000_000_000,
    value_size: int = 20,
) -> bytes:
    """A v2 batch built by kafka-python, with the offset and leader epoch a broker would set."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=transactional,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        batch_size=1 << 20,
    )
    for i in range(records):
        builder.append(i, timestamp + 3 * i, b"key-%d" % i, bytes([i % 251]) * value_size, [])
    buf = builder.build()
    struct.pack_into(">q", buf, 0, base_offset)  # outside the CRC, like the broker's assignment
    struct.pack_into(">i", buf, 12, leader_epoch)
    return bytes(buf)


batch_params = st.fixed_dictionaries(
    {
        "records": st.integers(1, 6),
        "codec": st.sampled_from(CODECS),
        "kind": st.sampled_from(["plain", "idempotent", "transactional"]),
        "producer_id": st.integers(0, 2**40),
        "producer_epoch": st.integers(0, 32767),
        "base_sequence": st.one_of(st.integers(0, 1000), st.integers(INT32_MAX - 10, INT32_MAX)),
        "leader_epoch": st.integers(-1, 1000),
        "timestamp": st.integers(1_500_000_000_000, 2_000_000_000_000),
        "value_size": st.integers(0, 300),
    }
)


def batch_from(params: dict[str, Any], base_offset: int) -> bytes:
    kind = params["kind"]
    idempotent = kind != "plain"
    return make_batch(
        base_offset,
        records=params["records"],
        codec=params["codec"],
        transactional=kind == "transactional",
        producer_id=params["producer_id"] if idempotent else -1,
        producer_epoch=params["producer_epoch"] if idempotent else -1,
        base_sequence=params["base_sequence"] if idempotent else -1,
        leader_epoch=params["leader_epoch"],
        timestamp=params["timestamp"],
        value_size=params["value_size"],
    )


def segment_of(batches: list[bytes]) -> tuple[bytes, list[int]]:
    positions = []
    pos = 0
    for b in batches:
        positions.append(pos)
        pos += len(b)
    return b"".join(batches), positions


def assert_columns_equal(a: HeaderColumns, b: HeaderColumns) -> None:
    for name in HeaderColumns.COLUMNS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, name
        np.testing.assert_array_equal(x, y, err_msg=name)


def scan_both(buf: Any, start: int = 0, end: int | None = None, **kw: Any) -> Any:
    """Scan with the Python fallback and (when built) the C path; require identical results."""
    py = scan_v2_run_python(buf, start, end, **kw)
    if HAVE_EXTENSION:
        c = scan_v2_run(buf, start, end, **kw)
        assert_columns_equal(c[0], py[0])
        assert c[1:] == py[1:]
    assert isinstance(py[2], StopReason)
    return py


def assert_walk_invariants(cols: HeaderColumns, start: int, stop: int) -> None:
    """Rows are consecutive whole batches from ``start`` to ``stop``."""
    if len(cols) == 0:
        assert stop == start
        return
    assert cols.position[0] == start
    np.testing.assert_array_equal(cols.position[1:], cols.next_position[:-1])
    assert cols.next_position[-1] == stop
    assert (cols.batch_length >= 49).all()
    assert (cols.magic == 2).all()


# --- CRC-32C ----------------------------------------------------------------------------------


@needs_ext
@pytest.mark.parametrize("force_table", [False, True])
def test_crc32c_check_value(force_table: bool) -> None:
    assert batchscan._ext._crc32c(b"123456789", force_table=force_table) == 0xE3069283
    assert batchscan._ext._crc32c(b"", force_table=force_table) == 0


@needs_ext
def test_crc32c_matches_package_across_block_boundaries() -> None:
    rng = np.random.default_rng(7)
    blob = rng.integers(0, 256, 3 * 4096 * 2 + 64, dtype=np.uint8).tobytes()
    lengths = [1, 7, 8, 9, 63, 255, 256, 767, 768, 769, 3 * 256 * 5 + 3, 3 * 4096 - 1]
    lengths += [3 * 4096, 3 * 4096 + 1, 3 * 4096 + 3 * 256 + 17, len(blob) - 8]
    for n in lengths:
        for shift in range(4):  # unaligned starts exercise the alignment prologue
            data = memoryview(blob)[shift : shift + n]
            want = crc32c.crc32c(data)
            assert batchscan._ext._crc32c(data) == want, (n, shift)
            assert batchscan._ext._crc32c(data, force_table=True) == want, (n, shift)


@needs_ext
@SETTINGS
@given(st.binary(max_size=20000))
def test_crc32c_hardware_and_table_paths_agree(data: bytes) -> None:
    want = crc32c.crc32c(data)
    assert batchscan._ext._crc32c(data) == want
    assert batchscan._ext._crc32c(data, force_table=True) == want


# --- batches built by kafka-python ------------------------------------------------------------


def kafka_mix() -> list[bytes]:
    return [
        make_batch(0, records=3),
        make_batch(3, records=2, codec=1, producer_id=77, producer_epoch=1, base_sequence=0),
        make_batch(
            5, records=4, codec=4, transactional=True, producer_id=78, producer_epoch=2,
            base_sequence=INT32_MAX - 1, leader_epoch=9,
        ),
        make_batch(9, records=1, codec=3, producer_id=77, producer_epoch=1, base_sequence=2),
        make_batch(10, records=5, transactional=True, producer_id=2**40, producer_epoch=32767,
                   base_sequence=INT32_MAX, leader_epoch=-1),
    ]  # fmt: skip


def test_kafka_built_batches_match_kafka_python_reader() -> None:
    batches = kafka_mix()
    data, positions = segment_of(batches)
    cols, stop, reason = scan_both(data)
    assert (stop, reason) == (len(data), StopReason.END)
    assert len(cols) == len(batches)
    assert cols.position.tolist() == positions
    assert cols.crc_valid.all()
    for i, raw in enumerate(batches):
        ref = DefaultRecordBatch(raw)
        assert cols.base_offset[i] == ref.base_offset
        assert cols.batch_length[i] == len(raw) - 12 == ref.size_in_bytes - 12
        assert cols.size[i] == len(raw)
        assert cols.partition_leader_epoch[i] == ref.leader_epoch
        assert cols.crc[i] == ref.crc
        assert cols.attributes[i] == ref.attributes
        assert cols.last_offset_delta[i] == ref.last_offset_delta
        assert cols.last_offset[i] == ref.last_offset
        assert cols.base_timestamp[i] == ref.first_timestamp
        assert cols.max_timestamp[i] == ref.max_timestamp
        assert cols.producer_id[i] == ref.producer_id
        assert cols.producer_epoch[i] == ref.producer_epoch
        assert cols.base_sequence[i] == ref.base_sequence
        assert cols.last_sequence[i] == ref.last_sequence
        assert cols.records_count[i] == ref.records_count
        assert cols.compression[i] == ref.compression_type
        assert cols.timestamp_type[i] == ref.timestamp_type
        assert cols.is_transactional[i] == ref.is_transactional
        assert cols.is_control[i] == ref.is_control_batch
    assert cols.last_sequence.tolist() == [-1, 1, 1, 2, 3]  # INT32_MAX-1 + 3 wraps to 1


@given(st.lists(batch_params, min_size=1, max_size=6), st.integers(0, 2**40))
@SETTINGS
def test_random_kafka_batches_scan_clean(params: list[dict[str, Any]], first: int) -> None:
    batches = []
    offset = first
    for p in params:
        batches.append(batch_from(p, offset))
        offset += p["records"]
    data, positions = segment_of(batches)
    cols, stop, reason = scan_both(data)
    assert (stop, reason) == (len(data), StopReason.END)
    assert cols.position.tolist() == positions
    assert cols.crc_valid.all()
    assert (cols.last_offset[:-1] + 1 == cols.base_offset[1:]).all()
    assert cols.records_count.tolist() == [p["records"] for p in params]


# --- corruption -------------------------------------------------------------------------------


@st.composite
def corrupted_segments(draw: st.DrawFn) -> tuple[bytes, list[int], dict[str, Any]]:
    params = draw(st.lists(batch_params, min_size=1, max_size=5))
    batches = [batch_from(p, i * 10) for i, p in enumerate(params)]
    data, positions = segment_of(batches)
    kind = draw(st.sampled_from(["flip_body", "flip_crc", "flip_unchecked", "truncate",
                                 "magic1", "bad_length", "garbage_tail"]))  # fmt: skip
    i = draw(st.integers(0, len(batches) - 1))
    pos, size = positions[i], len(batches[i])
    buf = bytearray(data)
    info: dict[str, Any] = {"kind": kind, "index": i}
    if kind == "flip_body":
        at = draw(st.integers(21, size - 1))
        buf[pos + at] ^= draw(st.integers(1, 255))
    elif kind == "flip_crc":
        buf[pos + draw(st.integers(17, 20))] ^= draw(st.integers(1, 255))
    elif kind == "flip_unchecked":  # base offset / leader epoch: outside the CRC
        at = draw(st.one_of(st.integers(0, 7), st.integers(12, 15)))
        buf[pos + at] ^= draw(st.integers(1, 255))
    elif kind == "truncate":
        cut = draw(st.integers(1, len(buf) - 1))
        del buf[cut:]
        info["cut"] = cut
    elif kind == "magic1":
        buf[pos + 16] = 1
    elif kind == "bad_length":
        struct.pack_into(">i", buf, pos + 8, draw(st.integers(-(2**31), 48)))
    else:
        buf += draw(st.binary(min_size=1, max_size=200))
    return bytes(buf), positions, info


@given(corrupted_segments())
@SETTINGS
def test_corrupted_segments(case: tuple[bytes, list[int], dict[str, Any]]) -> None:
    data, positions, info = case
    cols, stop, reason = scan_both(data)
    assert_walk_invariants(cols, 0, stop)
    kind, i = info["kind"], info["index"]
    n = len(positions)
    if kind in ("flip_body", "flip_crc"):
        assert reason == StopReason.END and len(cols) == n
        assert cols.crc_valid.tolist() == [j != i for j in range(n)]
    elif kind == "flip_unchecked":
        assert reason == StopReason.END and len(cols) == n and cols.crc_valid.all()
    elif kind in ("magic1", "bad_length"):
        assert len(cols) == i and stop == positions[i]
        want = StopReason.NOT_V2 if kind == "magic1" else StopReason.BAD_LENGTH
        assert reason == want
    elif kind == "truncate":
        cut = info["cut"]
        whole = [p for p in positions[1:] if p <= cut]
        last_start = max([0, *whole])
        assert stop == last_start and len(cols) == len(whole)
        left = cut - last_start
        if left == 0:
            assert reason == StopReason.END
        elif left < 61:
            assert reason == StopReason.SHORT_HEADER
        else:
            assert reason == StopReason.PAST_END
    else:  # garbage tail: all real batches are read, then whatever the garbage is
        assert len(cols) >= n and cols.crc_valid[:n].all() and reason != StopReason.CAPACITY


def test_stop_reasons_explicit() -> None:
    good = make_batch(5, records=2)
    assert scan_both(b"")[1:] == (0, StopReason.END)
    assert scan_both(good)[1:] == (len(good), StopReason.END)
    for tail in (1, 16):
        assert scan_both(good + good[:tail])[1:] == (len(good), StopReason.SHORT_HEADER)
    for tail in (17, 60):  # the magic byte is there, the header is not complete
        assert scan_both(good + good[:tail])[1:] == (len(good), StopReason.SHORT_HEADER)
    assert scan_both(good + good[:61])[1:] == (len(good), StopReason.PAST_END)
    assert scan_both(good + good[:-1])[1:] == (len(good), StopReason.PAST_END)
    legacy = bytearray(good[:40])
    legacy[16] = 1  # a v1 entry is only 12 + 22 bytes at the least: NOT_V2 wins over length
    assert scan_both(good + bytes(legacy))[1:] == (len(good), StopReason.NOT_V2)
    for length in (48, 0, -1, -(2**31)):
        bad = bytearray(good)
        struct.pack_into(">i", bad, 8, length)
        assert scan_both(good + bytes(bad))[1:] == (len(good), StopReason.BAD_LENGTH)
    minimal = bytearray(61)  # batchLength 49: a header with no records is a whole batch
    struct.pack_into(">qiib", minimal, 0, 0, 49, 0, 2)
    cols, stop, reason = scan_both(bytes(minimal))
    assert (len(cols), stop, reason) == (1, 61, StopReason.END)
    assert not cols.crc_valid[0]
    assert scan_both(recrc(minimal))[0].crc_valid[0]


def test_start_end_subrange_and_absolute_positions() -> None:
    batches = kafka_mix()
    data, positions = segment_of(batches)
    cols, stop, reason = scan_both(data, positions[1], positions[4])
    assert cols.position.tolist() == positions[1:4]
    assert (stop, reason) == (positions[4], StopReason.END)
    cols, stop, reason = scan_both(data, positions[2], positions[4] - 1)
    assert cols.position.tolist() == positions[2:3]
    assert (stop, reason) == (positions[3], StopReason.PAST_END)
    cols, stop, reason = scan_both(data, len(data), len(data))
    assert (len(cols), stop, reason) == (0, len(data), StopReason.END)


@pytest.mark.parametrize("chunk", [1, 2, 3, 4, 100])
def test_chunking_gives_the_same_columns(chunk: int) -> None:
    data, _ = segment_of(kafka_mix() * 3)
    whole = scan_both(data)
    for result in (scan_v2_run(data, chunk=chunk), scan_v2_run_python(data, chunk=chunk)):
        assert_columns_equal(result[0], whole[0])
        assert result[1:] == whole[1:]


@needs_ext
@given(corrupted_segments(), st.sampled_from([1, 17, 61, 100, 333]), st.data())
@SETTINGS
def test_release_windows_give_the_same_walk(case: tuple[bytes, list[int], dict[str, Any]],
                                            window: int, draw: st.DataObject) -> None:
    """Walked window by window with ``release`` (windows smaller than a batch too), a scan gives
    the columns, stop and reason of one walk, and hands back every byte it walked, once, in
    order: the ranges are consecutive from ``start`` to the stop."""
    data = case[0]
    start = draw.draw(st.sampled_from([0, *(p for p in case[1] if p <= len(data))]))
    chunk = draw.draw(st.sampled_from([1, 2, batchscan.DEFAULT_CHUNK]))
    whole = scan_v2_run(data, start, chunk=chunk)
    released: list[tuple[int, int]] = []
    saved = batchscan.RELEASE_WINDOW
    batchscan.RELEASE_WINDOW = window
    try:
        cols, stop, reason = scan_v2_run(data, start, chunk=chunk,
                                         release=lambda lo, hi: released.append((lo, hi)))
    finally:
        batchscan.RELEASE_WINDOW = saved
    assert_columns_equal(cols, whole[0])
    assert (stop, reason) == whole[1:]
    assert released and released[0][0] == start and released[-1][1] == stop
    assert all(a[1] == b[0] for a, b in itertools.pairwise(released))
    assert all(lo <= hi for lo, hi in released)


# --- fuzzing ----------------------------------------------------------------------------------


@given(st.binary(max_size=400), st.data())
@SETTINGS
def test_random_bytes_never_crash(data: bytes, draw: st.DataObject) -> None:
    start = draw.draw(st.integers(0, len(data)))
    end = draw.draw(st.integers(start, len(data)))
    cols, stop, _ = scan_both(data, start, end)
    assert_walk_invariants(cols, start, stop)
    assert start <= stop <= end


@st.composite
def header_soup(draw: st.DrawFn) -> bytes:
    """Headers with magic 2 and plausible lengths over random bodies: long walks of junk."""
    out = bytearray()
    for _ in range(draw(st.integers(0, 8))):
        body_len = draw(st.integers(40, 120))
        body = bytearray(draw(st.binary(min_size=body_len, max_size=body_len)))
        if len(body) >= 17:
            body[16] = draw(st.sampled_from([2, 2, 2, 1, 0, 255]))
        if len(body) >= 12:
            length = draw(st.one_of(st.just(body_len - 12), st.integers(-5, 200)))
            struct.pack_into(">i", body, 8, length)
        out += body
    return bytes(out)


@given(header_soup())
@SETTINGS
def test_header_soup_agrees(data: bytes) -> None:
    cols, stop, reason = scan_both(data)
    assert_walk_invariants(cols, 0, stop)
    assert reason != StopReason.CAPACITY


# --- inputs and arguments ---------------------------------------------------------------------


def test_accepts_bytes_like_inputs_and_mmap(tmp_path: Path) -> None:
    data, positions = segment_of(kafka_mix())
    want = scan_both(data)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        for buf in (bytearray(data), memoryview(data), np.frombuffer(data, np.uint8), mm):
            for scan in (scan_v2_run, scan_v2_run_python):
                got = scan(buf)
                assert_columns_equal(got[0], want[0])
                assert got[1:] == want[1:]
        # no buffer export may outlive the scan: closing the mmap must succeed
    padded = b"\xff" * 7 + data
    got = scan_both(memoryview(padded)[7:])
    assert got[0].position.tolist() == positions


@pytest.mark.parametrize("scan", [scan_v2_run, scan_v2_run_python])
def test_bad_arguments_raise_value_error(scan: Any) -> None:
    data = make_batch()
    for start, end in ((-1, None), (5, 4), (0, len(data) + 1), (len(data) + 1, None)):
        with pytest.raises(ValueError):
            scan(data, start, end)
    with pytest.raises(ValueError):
        scan(data, chunk=0)


@needs_ext
def test_c_function_validates_buffers() -> None:
    data = make_batch() * 3
    ext = batchscan._ext

    def outs(n: int, short: int | None = None) -> list[np.ndarray]:
        cols = [np.zeros(n, dtype=t) for _, t in batchscan._C_COLUMNS]
        if short is not None:
            cols[short] = cols[short][: n - 1]
        return cols

    for i in range(len(batchscan._C_COLUMNS)):
        with pytest.raises(ValueError, match="capacity"):
            ext.scan_v2(data, 0, len(data), 4, *outs(4, short=i))
    for start, end, cap in ((0, len(data) + 1, 4), (-1, 10, 4), (10, 5, 4), (0, 10, -1)):
        with pytest.raises(ValueError):
            ext.scan_v2(data, start, end, cap, *outs(4))
    with pytest.raises(TypeError):  # out buffers must be writable
        ext.scan_v2(data, 0, len(data), 1, *([b"\0" * 8] * 14))
    assert ext.scan_v2(data, 0, len(data), 0, *outs(0)) == (0, 0, StopReason.CAPACITY)
    assert ext.scan_v2(data, 0, 0, 0, *outs(0)) == (0, 0, StopReason.END)
    n, stop, reason = ext.scan_v2(data, 0, len(data), 2, *outs(2))
    assert (n, stop, reason) == (2, 2 * len(data) // 3, StopReason.CAPACITY)
    # Unaligned out buffers (numpy views one byte into a bytearray) are written correctly.
    raw = [bytearray(1 + 8 * 3) for _ in range(14)]
    views = [memoryview(r)[1:] for r in raw]
    assert ext.scan_v2(data, 0, len(data), 3, *views)[2] == StopReason.END
    positions = np.frombuffer(bytes(raw[0][1:]), dtype=np.int64)
    assert positions.tolist() == [0, len(data) // 3, 2 * len(data) // 3]


# --- HeaderColumns ----------------------------------------------------------------------------


def java_increment_sequence(sequence: int, increment: int) -> int:
    """DefaultRecordBatch.incrementSequence with Java 32-bit int arithmetic."""

    def wrap(v: int) -> int:
        return (v + 2**31) % 2**32 - 2**31

    if sequence > wrap(INT32_MAX - increment):
        return wrap(increment - wrap(INT32_MAX - sequence) - 1)
    return wrap(sequence + increment)


int32s = st.integers(-(2**31), INT32_MAX)
sequences = st.one_of(st.just(-1), st.integers(INT32_MAX - 9, INT32_MAX), int32s)


@given(st.lists(st.tuples(sequences, st.one_of(st.integers(0, 100), int32s)), min_size=1))
@SETTINGS
def test_last_sequence_follows_kafka(pairs: list[tuple[int, int]]) -> None:
    base = np.array([p[0] for p in pairs], dtype=np.int32)
    delta = np.array([p[1] for p in pairs], dtype=np.int32)
    n = len(pairs)
    cols = HeaderColumns(
        **{name: np.zeros(n, dtype=batchscan._DTYPES[name]) for name in HeaderColumns.COLUMNS}
        | {"base_sequence": base, "last_offset_delta": delta}
    )
    want = [-1 if b == -1 else java_increment_sequence(b, d) for b, d in pairs]
    assert cols.last_sequence.tolist() == want
    # and the exact reader's (RecordBatchHeader.last_sequence) gives the same
    assert [-1 if b == -1 else increment_sequence(b, d) for b, d in pairs] == want
    assert cols.last_sequence.dtype == np.int32


def test_attribute_bits() -> None:
    attrs = np.array([0x00, 0x01, 0x0C, 0x10, 0x30, 0x40, 0x7F], dtype=np.int16)
    n = len(attrs)
    cols = HeaderColumns(
        **{name: np.zeros(n, dtype=batchscan._DTYPES[name]) for name in HeaderColumns.COLUMNS}
        | {"attributes": attrs}
    )
    assert cols.compression.tolist() == [0, 1, 4, 0, 0, 0, 7]
    assert cols.timestamp_type.tolist() == [0, 0, 1, 0, 0, 0, 1]
    assert cols.is_transactional.tolist() == [False, False, False, True, True, False, True]
    assert cols.is_control.tolist() == [False, False, False, False, True, False, True]
    assert cols.has_delete_horizon.tolist() == [False] * 5 + [True, True]


def test_header_columns_container_behaviour() -> None:
    empty = HeaderColumns.empty()
    assert len(empty) == 0
    assert all(getattr(empty, n).dtype == batchscan._DTYPES[n] for n in HeaderColumns.COLUMNS)
    data, _ = segment_of(kafka_mix())
    cols = scan_both(data)[0]
    both = HeaderColumns.concat([cols, empty, cols])
    assert len(both) == 2 * len(cols)
    assert both.position.tolist() == cols.position.tolist() * 2
    assert len(HeaderColumns.concat([])) == 0
    with pytest.raises(ValueError):
        cols.position[0] = 1  # read-only arrays: the dataclass is frozen all the way down
    d = cols.to_dict()
    assert set(d) == set(HeaderColumns.COLUMNS)
    assert json.loads(json.dumps(d)) == d
    assert d["crc_valid"] == [True] * len(cols)
    fields = {n: getattr(cols, n).copy() for n in HeaderColumns.COLUMNS}
    with pytest.raises(ValueError, match="rows"):
        HeaderColumns(**(fields | {"crc": fields["crc"][:-1]}))
    with pytest.raises(ValueError, match="dtype"):
        HeaderColumns(**(fields | {"crc": fields["crc"].astype(np.int64)}))


# --- environment ------------------------------------------------------------------------------


def test_env_var_forces_python_fallback() -> None:
    code = (
        "from kafkatx.formats import batchscan as b;"
        "c, p, r = b.scan_v2_run(bytes(10));"
        "print(b.HAVE_EXTENSION, len(c), p, int(r))"
    )
    env = dict(os.environ, KAFKATX_NO_EXTENSION="1")
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["False", "0", "0", str(int(StopReason.SHORT_HEADER))]


def test_extension_is_built_by_the_install() -> None:
    # pip builds the extension with the machine's C compiler (setup.py, optional=True); without
    # it kafkatx still works, ~20x slower on scans. The project's install must give the fast path.
    if os.environ.get("KAFKATX_NO_EXTENSION", "") not in ("", "0"):
        assert not HAVE_EXTENSION
    else:
        assert HAVE_EXTENSION, "the C extension was not built: is a C compiler installed?"


@needs_ext
def test_benchmark_smoke() -> None:
    out = subprocess.run(
        [sys.executable, "benchmarks/scan.py", "--mb", "0.5", "--repeat", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "kafkatx C" in out.stdout and "aiokafka C" in out.stdout
