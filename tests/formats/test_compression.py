from __future__ import annotations

import gzip
import struct
from collections.abc import Callable
from typing import Any

import aiokafka.codec as aiocodec
import cramjam
import kafka.codec as kcodec
import lz4.frame
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.errors import FormatError
from kafkatx.formats.compression import (
    XERIAL_HEADER,
    Codec,
    compress,
    decompress,
    name_for,
    xxh32,
)

Coder = Callable[[Any], Any]

CODECS = [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD]
REAL_CODECS = [Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD]

# Mostly-compressible payloads (repeated chunks) and arbitrary bytes.
payloads = st.one_of(
    st.binary(max_size=2000),
    st.builds(lambda chunk, n: chunk * n, st.binary(min_size=1, max_size=40), st.integers(1, 500)),
)


def _big(n: int) -> bytes:
    # Semi-compressible data large enough to span several blocks.
    return b"".join(b"key-%d=value-%d;" % (i, i % 97) for i in range(n // 10))[:n]


def test_codec_ids_and_names() -> None:
    assert [int(c) for c in CODECS] == [0, 1, 2, 3, 4]
    assert [name_for(c) for c in range(8)] == [
        "none",
        "gzip",
        "snappy",
        "lz4",
        "zstd",
        "unknown(5)",
        "unknown(6)",
        "unknown(7)",
    ]


@pytest.mark.parametrize("codec", [5, 6, 7, -1])
def test_invalid_codec_ids(codec: int) -> None:
    with pytest.raises(FormatError, match="unknown compression codec"):
        decompress(codec, b"abc")
    with pytest.raises(ValueError):
        compress(codec, b"abc")


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("magic", [0, 1, 2])
@settings(max_examples=40, deadline=None)
@given(data=payloads)
def test_roundtrip(codec: int, magic: int, data: bytes) -> None:
    packed = compress(codec, data, magic=magic)
    assert decompress(codec, packed, magic=magic) == data


@pytest.mark.parametrize("codec", REAL_CODECS)
def test_roundtrip_multi_block(codec: int) -> None:
    data = _big(300_000)  # > 4 LZ4 64 KB blocks, > 9 xerial 32 KB blocks
    packed = compress(codec, data)
    assert len(packed) < len(data)
    assert decompress(codec, memoryview(packed)) == data


# --- independent producers / consumers ----------------------------------------------------------

INDEPENDENT_ENCODERS = [
    (Codec.GZIP, kcodec.gzip_encode),
    (Codec.LZ4, kcodec.lz4_encode),  # lz4.frame with content size stored
    (Codec.ZSTD, kcodec.zstd_encode),  # zstandard one-shot: content size stored
    (Codec.GZIP, aiocodec.gzip_encode),
    (Codec.SNAPPY, aiocodec.snappy_encode),  # xerial framing (cramjam)
    (Codec.SNAPPY, lambda d: aiocodec.snappy_encode(d, xerial_compatible=False)),  # raw snappy
    (Codec.LZ4, aiocodec.lz4_encode),  # cramjam lz4 frame
    (Codec.ZSTD, aiocodec.zstd_encode),  # cramjam zstd
]


@pytest.mark.parametrize(("codec", "encode"), INDEPENDENT_ENCODERS)
@settings(max_examples=25, deadline=None)
@given(data=payloads)
def test_decompresses_other_clients_output(codec: int, encode: Coder, data: bytes) -> None:
    assert decompress(codec, bytes(encode(data))) == data


@pytest.mark.parametrize(("codec", "encode"), INDEPENDENT_ENCODERS)
def test_decompresses_other_clients_large_output(codec: int, encode: Coder) -> None:
    data = _big(200_000)
    assert decompress(codec, bytes(encode(data))) == data


INDEPENDENT_DECODERS = [
    (Codec.GZIP, kcodec.gzip_decode),
    (Codec.LZ4, kcodec.lz4_decode),
    (Codec.ZSTD, kcodec.zstd_decode),
    (Codec.SNAPPY, aiocodec.snappy_decode),
    (Codec.LZ4, aiocodec.lz4_decode),
    (Codec.ZSTD, aiocodec.zstd_decode),
]


@pytest.mark.parametrize(("codec", "decode"), INDEPENDENT_DECODERS)
def test_other_clients_read_our_output(codec: int, decode: Coder) -> None:
    # (No empty payload: aiokafka takes a header-only xerial stream for raw snappy.)
    for data in (b"x", _big(150_000)):
        assert bytes(decode(compress(codec, data))) == data


def test_kafka_python_old_kafka_lz4_matches() -> None:
    if kcodec.xxhash is None:
        pytest.skip("kafka-python needs the xxhash package for its 0.8/0.9 LZ4 framing")
    data = _big(100_000)
    assert decompress(Codec.LZ4, kcodec.lz4_encode_old_kafka(data), magic=0) == data
    assert kcodec.lz4_decode_old_kafka(compress(Codec.LZ4, data, magic=0)) == data


# --- framing details ----------------------------------------------------------------------------


def test_xxh32_known_values() -> None:
    assert xxh32(b"") == 0x02CC5D05
    assert xxh32(b"a") == 0x550D7456
    assert xxh32(b"abc") == 0x32D153FF
    assert xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F


@pytest.mark.parametrize(
    "kwargs", [{}, {"store_size": False}, {"content_checksum": True}, {"block_checksum": True}]
)
def test_xxh32_reproduces_lz4_header_checksum(kwargs: dict[str, bool]) -> None:
    frame = lz4.frame.compress(b"payload" * 10, **kwargs)
    end = 6 + (8 if frame[4] & 0x08 else 0)
    assert frame[end] == (xxh32(frame[4:end]) >> 8) & 0xFF


def test_lz4_frame_as_kafka_writes_it() -> None:
    v1 = compress(Codec.LZ4, b"hello" * 100, magic=1)
    # magic, FLG = version 1 + block independence, BD = 64 KB blocks, then HC over FLG+BD.
    assert v1[:6] == b"\x04\x22\x4d\x18\x60\x40"
    assert v1[6] == (xxh32(v1[4:6]) >> 8) & 0xFF
    v0 = compress(Codec.LZ4, b"hello" * 100, magic=0)
    # Kafka 0.8-0.9's broken HC: computed over magic + FLG + BD.
    assert v0[:6] == v1[:6]
    assert v0[6] == (xxh32(v0[0:6]) >> 8) & 0xFF
    assert v0[6] != v1[6]
    assert v0[7:] == v1[7:]
    with pytest.raises(RuntimeError):  # a standard reader rejects the broken header
        lz4.frame.decompress(v0)


def test_lz4_magic0_ignores_header_checksum_magic1_validates_it() -> None:
    data = _big(100_000)
    frame = bytearray(lz4.frame.compress(data, store_size=True, block_linked=False))
    hc_pos = 6 + 8  # FLG says content size is present
    assert frame[4] & 0x08
    frame[hc_pos] ^= 0x5A  # a hand-broken descriptor checksum
    assert decompress(Codec.LZ4, bytes(frame), magic=0) == data
    with pytest.raises(FormatError, match="descriptor checksum"):
        decompress(Codec.LZ4, bytes(frame), magic=1)
    with pytest.raises(FormatError, match="descriptor checksum"):
        decompress(Codec.LZ4, compress(Codec.LZ4, data, magic=0), magic=2)


def test_lz4_truncated_and_bad_magic() -> None:
    frame = compress(Codec.LZ4, _big(10_000))
    with pytest.raises(FormatError, match="truncated"):
        decompress(Codec.LZ4, frame[:-4])  # end mark missing
    with pytest.raises(FormatError, match="truncated"):
        decompress(Codec.LZ4, frame[:5])
    with pytest.raises(FormatError, match="invalid magic"):
        decompress(Codec.LZ4, b"\x00" * 20)
    # Bytes after the end mark are not read (Lz4BlockInputStream stops at the end mark).
    assert decompress(Codec.LZ4, frame + b"junk") == _big(10_000)


def test_snappy_xerial_header_and_blocks() -> None:
    assert XERIAL_HEADER == b"\x82SNAPPY\x00" + b"\x00\x00\x00\x01" * 2
    assert compress(Codec.SNAPPY, b"") == XERIAL_HEADER
    data = _big(70_000)
    packed = compress(Codec.SNAPPY, data)
    assert packed.startswith(XERIAL_HEADER)
    pos, blocks = 16, []
    while pos < len(packed):
        (size,) = struct.unpack_from(">i", packed, pos)
        blocks.append(bytes(cramjam.snappy.decompress_raw(packed[pos + 4 : pos + 4 + size])))
        pos += 4 + size
    assert [len(b) for b in blocks] == [32768, 32768, 70_000 - 65536]
    assert b"".join(blocks) == data


def test_snappy_variants() -> None:
    a, b = _big(40_000), b"second stream"
    xa, xb = compress(Codec.SNAPPY, a), compress(Codec.SNAPPY, b)
    assert decompress(Codec.SNAPPY, xa + xb) == a + b  # concatenated xerial streams
    assert decompress(Codec.SNAPPY, xa + b"\x00\x00") == a  # < 4 trailing bytes end the stream
    raw_small = bytes(cramjam.snappy.compress_raw(b"hi"))
    assert len(raw_small) < 16
    assert decompress(Codec.SNAPPY, raw_small) == b"hi"
    assert decompress(Codec.SNAPPY, b"\x00") == b""  # raw snappy of nothing
    with pytest.raises(FormatError, match="runs past the end"):
        decompress(Codec.SNAPPY, xa[:-1])
    with pytest.raises(FormatError, match="negative chunk size"):
        decompress(Codec.SNAPPY, XERIAL_HEADER + b"\xff\xff\xff\xf0")
    with pytest.raises(FormatError, match="version"):
        decompress(Codec.SNAPPY, b"\x82SNAPPY\x00" + b"\x00" * 8)
    with pytest.raises(FormatError):
        decompress(Codec.SNAPPY, b"")


def test_gzip_members_and_trailing_bytes() -> None:
    one, two = gzip.compress(b"first "), gzip.compress(b"second")
    assert decompress(Codec.GZIP, one + two) == b"first second"
    # GZIPInputStream#readTrailer ignores bytes after a member that are not a gzip header.
    assert decompress(Codec.GZIP, one + b"garbage that is long enough") == b"first "
    with pytest.raises(FormatError, match="truncated"):
        decompress(Codec.GZIP, one[:-3])
    with pytest.raises(FormatError):
        decompress(Codec.GZIP, one + two[:12])  # a second member that is cut short
    with pytest.raises(FormatError):
        decompress(Codec.GZIP, b"")


def test_zstd_frames() -> None:
    data = _big(50_000)
    packed = compress(Codec.ZSTD, data)
    params = zstandard.get_frame_parameters(packed)
    assert params.content_size == zstandard.CONTENTSIZE_UNKNOWN  # as zstd-jni's stream writes
    assert decompress(Codec.ZSTD, packed + packed) == data + data
    with pytest.raises(FormatError, match="truncated"):
        decompress(Codec.ZSTD, packed[:-3])
    with pytest.raises(FormatError):
        decompress(Codec.ZSTD, packed + b"garbage")
    with pytest.raises(FormatError):
        decompress(Codec.ZSTD, b"")


@pytest.mark.parametrize("codec", REAL_CODECS)
def test_max_size(codec: int) -> None:
    data = b"\x00" * 100_001
    packed = compress(codec, data)
    assert decompress(codec, packed, max_size=100_001) == data
    with pytest.raises(FormatError, match="exceeds the limit"):
        decompress(codec, packed, max_size=100_000)


# --- garbage never escapes as anything but FormatError ------------------------------------------


def _decompress_or_format_error(codec: int, data: bytes, magic: int) -> None:
    try:
        out = decompress(codec, data, magic=magic, max_size=1 << 20)
    except FormatError as exc:
        assert str(exc)
    else:
        assert isinstance(out, bytes)


@pytest.mark.parametrize("codec", [*REAL_CODECS, 5])
@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=300), magic=st.sampled_from([0, 1, 2]))
def test_random_bytes(codec: int, data: bytes, magic: int) -> None:
    _decompress_or_format_error(codec, data, magic)


@pytest.mark.parametrize("codec", REAL_CODECS)
@settings(max_examples=150, deadline=None)
@given(
    data=payloads,
    magic=st.sampled_from([0, 1]),
    edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=4),
    cut=st.integers(0, 10_000),
)
def test_damaged_streams(
    codec: int, data: bytes, magic: int, edits: list[tuple[int, int]], cut: int
) -> None:
    packed = bytearray(compress(codec, data, magic=magic))
    for where, byte in edits:
        packed[where % len(packed)] = byte
    _decompress_or_format_error(
        codec, bytes(packed[: len(packed) - cut % (len(packed) + 1)]), magic
    )


@pytest.mark.parametrize("codec", REAL_CODECS)
@settings(max_examples=60, deadline=None)
@given(header_tail=st.binary(max_size=40))
def test_valid_looking_headers_with_garbage(codec: int, header_tail: bytes) -> None:
    prefix = {
        Codec.GZIP: b"\x1f\x8b\x08",
        Codec.SNAPPY: XERIAL_HEADER,
        Codec.LZ4: b"\x04\x22\x4d\x18",
        Codec.ZSTD: b"\x28\xb5\x2f\xfd",
    }[codec]
    for magic in (0, 1):
        _decompress_or_format_error(codec, prefix + header_tail, magic)
