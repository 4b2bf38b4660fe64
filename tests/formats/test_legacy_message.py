from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Iterator

import pytest
from aiokafka.record.legacy_records import LegacyRecordBatchBuilder as AioLegacyBuilder
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.legacy_records import LegacyRecordBatch as KafkaPythonLegacyBatch
from kafka.record.legacy_records import LegacyRecordBatchBuilder as KafkaPythonLegacyBuilder

from kafkatx.errors import FormatError
from kafkatx.formats import legacy_message as lm
from kafkatx.formats.compression import Codec, compress
from kafkatx.formats.legacy_message import (
    CREATE_TIME,
    LOG_APPEND_TIME,
    LegacyEntry,
    build_legacy_entry,
    build_legacy_message,
    encode_legacy_entry,
    parse_legacy_entry,
)
from kafkatx.formats.primitives import parse_exact
from tests.formats.roundtrip import assert_roundtrip

LEGACY_CODECS = [Codec.GZIP, Codec.SNAPPY, Codec.LZ4]

blobs = st.none() | st.binary(max_size=60)
timestamps = st.integers(1_500_000_000_000, 2_000_000_000_000)
offsets = st.integers(0, 2**40)
records = st.lists(st.tuples(blobs, blobs, timestamps), min_size=1, max_size=12)


def _parse0(data: bytes) -> LegacyEntry:
    return parse_legacy_entry(data, 0)


def _entries(buf: bytes) -> Iterator[LegacyEntry]:
    pos = 0
    while pos < len(buf):
        entry = parse_legacy_entry(buf, pos)
        yield entry
        pos += entry.message.entry_size


def _set_wrapper(
    buf: bytearray, *, offset: int, timestamp: int | None = None, log_append: bool = False
) -> bytes:
    """What a broker does to a producer's v1 wrapper: assign the last offset, maybe set
    LogAppendTime (attribute bit + timestamp), and recompute the wrapper CRC."""
    struct.pack_into(">q", buf, 0, offset)
    if log_append:
        buf[17] |= 0x08
    if timestamp is not None:
        struct.pack_into(">q", buf, 18, timestamp)
    struct.pack_into(">I", buf, 12, zlib.crc32(buf[16:]))
    return bytes(buf)


# --- round trips --------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(
    magic=st.sampled_from([0, 1]),
    offset=offsets,
    key=blobs,
    value=blobs,
    timestamp=timestamps,
    ts_type=st.sampled_from([CREATE_TIME, LOG_APPEND_TIME]),
)
def test_uncompressed_roundtrip(
    magic: int, offset: int, key: bytes | None, value: bytes | None, timestamp: int, ts_type: int
) -> None:
    data = build_legacy_entry(
        offset=offset,
        magic=magic,
        key=key,
        value=value,
        timestamp=timestamp,
        timestamp_type=ts_type,
    )
    entry = _parse0(data)
    m = entry.message
    assert (m.offset, m.magic, m.key, m.value, m.position) == (offset, magic, key, value, 0)
    assert m.size == len(data) - 12 == m.entry_size - 12
    assert m.crc_valid
    assert m.compression == "none"
    assert entry.inner == ()
    assert entry.records == (m,)
    assert (entry.base_offset, entry.last_offset, entry.count) == (offset, offset, 1)
    if magic == 0:
        assert (m.timestamp, m.timestamp_type, m.effective_timestamp) == (-1, "NoTimestampType", -1)
        assert m.attributes == 0
    else:
        assert m.timestamp == m.effective_timestamp == timestamp
        assert m.timestamp_type == ("CreateTime" if ts_type == CREATE_TIME else "LogAppendTime")
    assert_roundtrip(entry, encode_legacy_entry, _parse0, size=len(data))


@st.composite
def wrappers(draw: st.DrawFn) -> dict:
    recs = draw(records)
    return {
        "magic": draw(st.sampled_from([0, 1])),
        "compression": draw(st.sampled_from(LEGACY_CODECS)),
        "offset": draw(st.integers(len(recs) - 1, 2**40)),
        "timestamp": draw(timestamps),
        "timestamp_type": draw(st.sampled_from([CREATE_TIME, LOG_APPEND_TIME])),
        "key": draw(st.none() | st.binary(max_size=8)),
        "inner": recs,
    }


@settings(max_examples=150, deadline=None)
@given(spec=wrappers())
def test_compressed_wrapper_roundtrip(spec: dict) -> None:
    data = build_legacy_entry(**spec)
    entry = _parse0(data)
    m, inner, n = entry.message, spec["inner"], len(spec["inner"])
    assert m.crc_valid
    assert m.compression == Codec(spec["compression"]).name.lower()
    assert m.key == spec["key"]
    assert entry.count == n
    assert [i.offset for i in entry.inner] == list(
        range(spec["offset"] - n + 1, spec["offset"] + 1)
    )
    assert (entry.base_offset, entry.last_offset) == (spec["offset"] - n + 1, spec["offset"])
    assert [(i.key, i.value) for i in entry.inner] == [(k, v) for k, v, _ in inner]
    assert all(i.crc_valid and i.magic == spec["magic"] and i.position == 0 for i in entry.inner)
    if spec["magic"] == 0:
        assert all(i.effective_timestamp == -1 for i in entry.inner)
        assert {i.timestamp_type for i in entry.inner} == {"NoTimestampType"}
    elif spec["timestamp_type"] == LOG_APPEND_TIME:
        assert [i.effective_timestamp for i in entry.inner] == [spec["timestamp"]] * n
        assert [i.timestamp for i in entry.inner] == [ts for _, _, ts in inner]  # as stored
        assert {i.timestamp_type for i in entry.inner} == {"LogAppendTime"}
    else:
        assert [i.effective_timestamp for i in entry.inner] == [ts for _, _, ts in inner]
        assert {i.timestamp_type for i in entry.inner} == {"CreateTime"}
    assert_roundtrip(entry, encode_legacy_entry, _parse0, size=len(data))


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
def test_stored_inner_offsets(magic: int, codec: int) -> None:
    data = build_legacy_entry(
        offset=502,
        magic=magic,
        compression=codec,
        timestamp=1_600_000_000_000,
        inner=[
            (b"k", b"a", 1_600_000_000_000),
            (None, b"b", 1_600_000_000_001),
            (b"k", None, 1_600_000_000_002),
        ],
    )
    value = _parse0(data).message.value
    assert value is not None
    raw = lm.decompress(codec, value, magic=magic)
    stored, pos = [], 0
    while pos < len(raw):
        off, size = struct.unpack_from(">qi", raw, pos)
        stored.append(off)
        pos += 12 + size
    # Relative inner offsets for v1 wrappers, absolute ones for v0 (DeepRecordsIterator).
    assert stored == ([0, 1, 2] if magic == 1 else [500, 501, 502])
    assert [m.offset for m in _parse0(data).inner] == [500, 501, 502]


def test_message_set_at_positions_in_a_larger_buffer() -> None:
    a = build_legacy_entry(offset=7, magic=0, key=None, value=b"one")
    b = build_legacy_entry(
        offset=10,
        magic=1,
        compression=Codec.GZIP,
        timestamp=1_600_000_000_000,
        inner=[(None, b"two", 1_600_000_000_000), (None, b"three", 1_600_000_000_000)],
    )
    buf = b"\xff" * 33 + a + b + b"\x00" * 5
    view = memoryview(buf)
    first = parse_legacy_entry(view, 33, path="seg.log")
    second = parse_legacy_entry(view, 33 + len(a))
    assert (first.position, first.offset, first.message.value) == (33, 7, b"one")
    assert second.position == 33 + len(a)
    assert [m.position for m in second.inner] == [second.position] * 2
    assert [m.value for m in second.inner] == [b"two", b"three"]


def test_to_dict_contract() -> None:
    data = build_legacy_entry(
        offset=42,
        magic=1,
        compression=Codec.SNAPPY,
        timestamp=1_700_000_000_000,
        timestamp_type=LOG_APPEND_TIME,
        inner=[(b"k", b"v", 1_600_000_000_000)],
    )
    entry = _parse0(data)
    d = entry.to_dict()
    json.dumps(d)
    assert set(d) == {
        "offset",
        "position",
        "size",
        "magic",
        "crc",
        "computed_crc",
        "crc_valid",
        "attributes",
        "compression",
        "timestamp",
        "timestamp_type",
        "base_offset",
        "last_offset",
        "count",
        "inner",
    }
    assert d["compression"] == "snappy"
    assert d["timestamp_type"] == "LogAppendTime"
    assert d["size"] == len(data) - 12
    assert (d["base_offset"], d["last_offset"], d["count"]) == (42, 42, 1)
    (inner,) = d["inner"]
    assert "key" not in inner and "value" not in inner
    assert inner["timestamp"] == 1_700_000_000_000  # the wrapper's LogAppendTime
    assert inner["offset"] == 42 and inner["compression"] == "none" and inner["crc_valid"]
    v0 = _parse0(build_legacy_entry(offset=1, magic=0, value=b"x")).message.to_dict()
    assert (v0["timestamp"], v0["timestamp_type"]) == (-1, "NoTimestampType")


# --- CRC ----------------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(
    magic=st.sampled_from([0, 1]),
    value=st.binary(min_size=1, max_size=40),
    where=st.integers(0, 10_000),
    flip=st.integers(1, 255),
)
def test_crc_flip_is_reported_not_raised(magic: int, value: bytes, where: int, flip: int) -> None:
    data = bytearray(build_legacy_entry(offset=3, magic=magic, key=b"key", value=value))
    # Flip a byte of the CRC itself or of the key/value payload (never a length/magic field).
    header = 12 + (6 if magic == 0 else 14)
    payload = [12, 13, 14, 15, *range(header + 4, header + 7), *range(header + 11, len(data))]
    data[payload[where % len(payload)]] ^= flip
    entry = _parse0(bytes(data))
    assert not entry.message.crc_valid
    assert entry.message.crc != entry.message.computed_crc == zlib.crc32(bytes(data[16:]))


def test_inner_crc_flip_is_reported() -> None:
    inner_set = bytearray(
        struct.pack(">qi", 0, 0) + build_legacy_message(magic=1, timestamp=5, value=b"abc")
    )
    struct.pack_into(">i", inner_set, 8, len(inner_set) - 12)
    inner_set[-1] ^= 0x01
    wrapper = build_legacy_message(
        magic=1, attributes=Codec.GZIP, timestamp=5, value=compress(Codec.GZIP, bytes(inner_set))
    )
    entry = _parse0(struct.pack(">qi", 9, len(wrapper)) + wrapper)
    assert entry.message.crc_valid
    assert [m.crc_valid for m in entry.inner] == [False]
    assert entry.inner[0].value == b"abb"
    assert entry.inner[0].offset == 9


# --- interoperability with kafka-python / aiokafka ----------------------------------------------


@pytest.mark.parametrize("magic", [0, 1])
def test_kafka_python_uncompressed_message_set(magic: int) -> None:
    builder = KafkaPythonLegacyBuilder(magic, 0, 1 << 20)
    rows = [(b"k%d" % i if i % 2 else None, b"v" * i, 1_600_000_000_000 + i) for i in range(5)]
    for i, (k, v, ts) in enumerate(rows):
        builder.append(100 + i, timestamp=ts, key=k, value=v)
    entries = list(_entries(bytes(builder.build())))
    assert [e.offset for e in entries] == [100, 101, 102, 103, 104]
    assert [(e.message.key, e.message.value) for e in entries] == [(k, v) for k, v, _ in rows]
    assert all(e.message.crc_valid and e.magic == magic for e in entries)
    expected_ts = [ts if magic == 1 else -1 for _, _, ts in rows]
    assert [e.message.effective_timestamp for e in entries] == expected_ts


def _builder(library: str, magic: int, codec: int) -> object:
    if library == "aiokafka":
        return AioLegacyBuilder(magic, codec, 1 << 20)
    return KafkaPythonLegacyBuilder(magic, codec, 1 << 20)


# kafka-python writes snappy only with python-snappy and 0.8/0.9 LZ4 only with xxhash; aiokafka's
# builder (cramjam) covers snappy. Neither writes LZ4 for magic 0 without xxhash.
PRODUCERS = [
    ("kafka-python", Codec.GZIP),
    ("kafka-python", Codec.LZ4),
    ("aiokafka", Codec.GZIP),
    ("aiokafka", Codec.SNAPPY),
    ("aiokafka", Codec.LZ4),
]


@pytest.mark.parametrize(("library", "codec"), PRODUCERS)
def test_other_clients_v1_wrappers(library: str, codec: int) -> None:
    builder = _builder(library, 1, codec)
    rows = [(None, b"value-%d" % i * 7, 1_600_000_000_000 + i) for i in range(6)]
    for i, (k, v, ts) in enumerate(rows):
        builder.append(i, timestamp=ts, key=k, value=v)  # type: ignore[attr-defined]
    produced = bytearray(builder.build())  # type: ignore[attr-defined]

    # As produced: wrapper offset 0 (the librdkafka special case) -> absolute base 0.
    entry = _parse0(bytes(produced))
    assert entry.message.crc_valid and all(m.crc_valid for m in entry.inner)
    assert [m.offset for m in entry.inner] == list(range(6))
    assert [(m.key, m.value) for m in entry.inner] == [(k, v) for k, v, _ in rows]
    assert [m.effective_timestamp for m in entry.inner] == [ts for _, _, ts in rows]
    assert {m.timestamp_type for m in entry.inner} == {"CreateTime"}

    # As a broker stores it: wrapper offset = last absolute offset.
    stored = _set_wrapper(bytearray(produced), offset=2005, timestamp=1_600_000_000_005)
    entry = _parse0(stored)
    assert entry.message.crc_valid
    assert [m.offset for m in entry.inner] == list(range(2000, 2006))
    assert (entry.base_offset, entry.last_offset, entry.count) == (2000, 2005, 6)

    # With LogAppendTime the wrapper's timestamp wins for every inner message.
    stored = _set_wrapper(
        bytearray(produced), offset=2005, timestamp=1_700_000_000_000, log_append=True
    )
    entry = _parse0(stored)
    assert entry.message.crc_valid and entry.message.timestamp_type == "LogAppendTime"
    assert [m.effective_timestamp for m in entry.inner] == [1_700_000_000_000] * 6
    assert {m.timestamp_type for m in entry.inner} == {"LogAppendTime"}


@pytest.mark.parametrize(("library", "codec"), [p for p in PRODUCERS if p[1] != Codec.LZ4])
def test_other_clients_v0_wrappers(library: str, codec: int) -> None:
    builder = _builder(library, 0, codec)
    for i in range(4):
        builder.append(300 + i, timestamp=None, key=b"k", value=b"v%d" % i)  # type: ignore[attr-defined]
    produced = bytearray(builder.build())  # type: ignore[attr-defined]
    struct.pack_into(">q", produced, 0, 303)  # the wrapper offset is its last inner offset
    entry = _parse0(bytes(produced))
    assert entry.magic == 0 and entry.message.crc_valid
    assert [m.offset for m in entry.inner] == [300, 301, 302, 303]  # absolute, as stored
    assert [m.value for m in entry.inner] == [b"v0", b"v1", b"v2", b"v3"]
    assert all(m.effective_timestamp == -1 and m.crc_valid for m in entry.inner)


def test_kafka_python_v0_lz4_wrapper() -> None:
    import kafka.codec

    assert kafka.codec.xxhash is not None, "the test extra installs xxhash for this"
    builder = KafkaPythonLegacyBuilder(0, Codec.LZ4, 1 << 20)
    for i in range(3):
        builder.append(i, timestamp=None, key=None, value=b"x%d" % i)
    entry = _parse0(bytes(builder.build()))
    assert [m.value for m in entry.inner] == [b"x0", b"x1", b"x2"]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [Codec.NONE, Codec.GZIP, Codec.LZ4])
def test_kafka_python_reads_what_we_build(magic: int, codec: int) -> None:
    rows = [(b"k", b"value-%d" % i, 1_600_000_000_000 + i) for i in range(3)]
    if codec == Codec.NONE:
        k, v, ts = rows[0]
        data = build_legacy_entry(offset=77, magic=magic, key=k, value=v, timestamp=ts)
        rows = rows[:1]
    else:
        data = build_legacy_entry(
            offset=79, magic=magic, compression=codec, timestamp=1_600_000_000_002, inner=rows
        )
    records = list(KafkaPythonLegacyBatch(data, magic))
    assert [r.offset for r in records] == list(range(77, 77 + len(rows)))
    assert [(r.key, r.value) for r in records] == [(k, v) for k, v, _ in rows]
    if magic == 1:
        assert [r.timestamp for r in records] == [ts for _, _, ts in rows]
    assert all(r.validate_crc() for r in records)


# --- structural errors --------------------------------------------------------------------------


def _error(data: bytes, pos: int = 0) -> FormatError:
    with pytest.raises(FormatError) as info:
        parse_legacy_entry(data, pos, path="00.log")
    assert info.value.path == "00.log"
    return info.value


def test_bad_sizes_and_magic() -> None:
    good = b"\x00" * 5 + build_legacy_entry(offset=1, magic=0, value=b"abc")
    small = bytearray(good)
    struct.pack_into(">i", small, 5 + 8, 13)
    assert _error(bytes(small), 5).position == 5 + 8
    assert _error(good[:-1], 5).position == 5 + 8  # the size runs past the end
    assert _error(good[:14], 5).position == 5
    assert _error(good, len(good) - 3).position == len(good) - 3
    assert _error(good, -1).position == -1
    bad_magic = bytearray(good)
    bad_magic[5 + 16] = 2
    err = _error(bytes(bad_magic), 5)
    assert (err.position, err.field) == (5 + 16, "magic")


def test_bad_key_length_and_trailing_bytes() -> None:
    msg = bytearray(build_legacy_message(magic=0, key=b"ab", value=b"cd"))
    struct.pack_into(">i", msg, 6, -2)
    err = _error(struct.pack(">qi", 0, len(msg)) + bytes(msg))
    assert err.position == 12 + 6
    msg = build_legacy_message(magic=1, timestamp=1, key=None, value=b"cd") + b"\x00"
    err = _error(struct.pack(">qi", 0, len(msg)) + msg)
    assert "trailing" in err.message and err.position == 12 + len(msg) - 1
    msg = build_legacy_message(magic=1, timestamp=1, key=None, value=b"cd")[:-1]
    err = _error(struct.pack(">qi", 0, len(msg)) + msg)
    assert "truncated" in err.message


def _wrapper(value: bytes | None, *, attributes: int, magic: int = 1, offset: int = 10) -> bytes:
    msg = build_legacy_message(
        magic=magic, attributes=attributes, timestamp=1, key=b"kk", value=value
    )
    return struct.pack(">qi", offset, len(msg)) + msg


def test_wrapper_errors() -> None:
    value_pos = 12 + 14 + 4 + 2 + 4
    inner_ok = struct.pack(">qi", 0, 22) + build_legacy_message(magic=1, timestamp=1, value=b"")
    assert _parse0(_wrapper(compress(Codec.GZIP, inner_ok), attributes=1)).count == 1

    err = _error(_wrapper(compress(Codec.ZSTD, inner_ok), attributes=4))
    assert (err.position, err.field) == (12 + 5, "attributes")
    assert _error(_wrapper(b"x", attributes=5)).position == 12 + 5
    err = _error(_wrapper(None, attributes=1))
    assert err.position == value_pos - 4
    err = _error(_wrapper(b"not gzip at all", attributes=1))
    assert err.position == value_pos and "gzip" in err.message
    err = _error(_wrapper(compress(Codec.LZ4, inner_ok, magic=0), attributes=3, magic=1))
    assert err.position == value_pos and "checksum" in err.message

    nested = struct.pack(">qi", 0, 22) + build_legacy_message(magic=1, attributes=1, timestamp=1)
    err = _error(_wrapper(compress(Codec.GZIP, nested), attributes=1))
    assert "must not be compressed" in err.message and err.position == value_pos
    err = _error(_wrapper(compress(Codec.GZIP, b""), attributes=1))
    assert "no inner messages" in err.message
    err = _error(_wrapper(compress(Codec.GZIP, inner_ok + inner_ok[:20]), attributes=1))
    assert "byte 34" in err.message and err.position == value_pos
    err = _error(_wrapper(compress(Codec.GZIP, inner_ok + b"\x00" * 5), attributes=1))
    assert "truncated" in err.message
    bad_inner = bytearray(inner_ok)
    bad_inner[16] = 7  # inner magic
    err = _error(_wrapper(compress(Codec.GZIP, inner_ok + bytes(bad_inner)), attributes=1))
    assert "byte 34" in err.message and "invalid magic 7" in err.message
    assert "decompressed byte 50" in err.message


def test_v1_wrapper_offset_below_last_relative_offset() -> None:
    inner = b"".join(
        struct.pack(">qi", i, 22) + build_legacy_message(magic=1, timestamp=1, value=b"")
        for i in range(5)
    )
    err = _error(_wrapper(compress(Codec.GZIP, inner), attributes=1, offset=3))
    assert err.field == "offset" and err.position == 0
    # Wrapper offset 0 is the librdkafka special case: base 0, relative offsets as they are.
    at_zero = _parse0(_wrapper(compress(Codec.GZIP, inner), attributes=1, offset=0))
    assert [m.offset for m in at_zero.inner] == [0, 1, 2, 3, 4]
    assert _parse0(_wrapper(compress(Codec.GZIP, inner), attributes=1, offset=4)).base_offset == 0


@pytest.mark.parametrize(("magic", "inner_offsets", "wrapper_offset"), [
    (0, [0, 1], 2**40),             # v0: absolute inner offsets far below the wrapper's
    (1, [-(2**40), 0], 5),          # v1: relative offsets whose first lies 2^40 back
    (0, [2**31 + 1, 2**31 + 2], 0),  # v0: inner offsets past the wrapper by more than int32
])
def test_inner_offsets_beyond_an_int32_delta_are_a_located_error(
        magic: int, inner_offsets: list[int], wrapper_offset: int) -> None:
    """LogSegment#ensureOffsetInRange: no broker writes a wrapper whose offsets span more than
    an int32 delta; reading one is a FormatError at the wrapper, never an OverflowError."""
    inner = b"".join(
        struct.pack(">qi", o, 22) + build_legacy_message(magic=1, timestamp=1, value=b"")
        for o in inner_offsets) if magic == 1 else b"".join(
        struct.pack(">qi", o, 14) + build_legacy_message(magic=0, value=b"")
        for o in inner_offsets)
    msg = build_legacy_message(magic=magic, attributes=1, timestamp=1,
                               value=compress(Codec.GZIP, inner, magic=magic))
    err = _error(b"\x00" * 7 + struct.pack(">qi", wrapper_offset, len(msg)) + msg, 7)
    assert err.field == "offset" and err.position == 7
    assert "int32" in err.message and str(wrapper_offset) in err.message
    # the largest span Kafka can hold still reads
    inner = b"".join(struct.pack(">qi", o, 14) + build_legacy_message(magic=0, value=b"")
                     for o in (0, 1))
    msg = build_legacy_message(magic=0, attributes=1, value=compress(Codec.GZIP, inner, magic=0))
    entry = _parse0(struct.pack(">qi", 2**31 - 1, len(msg)) + msg)
    assert (entry.base_offset, entry.last_offset) == (0, 2**31 - 1)


# --- robustness ---------------------------------------------------------------------------------


def _parse_or_format_error(data: bytes, pos: int = 0) -> None:
    try:
        entry = parse_legacy_entry(data, pos, max_size=1 << 20)
    except FormatError as exc:
        assert exc.position is not None
    else:
        assert isinstance(entry.to_dict(), dict)


@settings(max_examples=200, deadline=None)
@given(
    offset=st.integers(-(2**63), 2**63 - 1),
    magic=st.sampled_from([0, 1]),
    attributes=st.integers(0, 255),
    body=st.binary(max_size=80),
)
def test_random_message_bodies(offset: int, magic: int, attributes: int, body: bytes) -> None:
    msg = b"\x00\x00\x00\x00" + bytes([magic, attributes]) + body
    _parse_or_format_error(struct.pack(">qi", offset, len(msg)) + msg)


@settings(max_examples=200, deadline=None)
@given(spec=wrappers(), edits=st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 255))))
def test_damaged_wrappers(spec: dict, edits: list[tuple[int, int]]) -> None:
    data = bytearray(build_legacy_entry(**spec))
    for where, byte in edits:
        data[12 + where % (len(data) - 12)] = byte  # keep the offset/size prefix intact
    _parse_or_format_error(bytes(data))


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=100), pos=st.integers(-2, 110))
def test_random_bytes(data: bytes, pos: int) -> None:
    _parse_or_format_error(data, pos)


@settings(max_examples=300, deadline=None)
@given(magic=st.sampled_from([0, 1]), body=st.binary(min_size=8, max_size=40))
def test_fast_path_agrees_with_construct(magic: int, body: bytes) -> None:
    data = body[:4] + bytes([magic]) + body[4:]
    fast = lm._fast_fields(data, magic)
    try:
        slow = parse_exact(lm._MESSAGE, data, what="legacy message")
    except FormatError:
        assert fast is None
    else:
        ts = -1 if slow.timestamp is None else slow.timestamp
        assert fast == (slow.crc, slow.attributes, ts, slow.key, slow.value)
