"""Kafka's compression codecs, framed the way Kafka's clients write and read them.

Mirrors ``org.apache.kafka.common.record.CompressionType`` (codec ids) and the stream wrappers in
``org.apache.kafka.common.compress`` (``GzipCompression``/``KafkaGZIPInputStream``,
``SnappyCompression`` = snappy-java ``SnappyInputStream``/``SnappyOutputStream``,
``Lz4Compression`` = ``Lz4BlockInputStream``/``Lz4BlockOutputStream`` (formerly
``KafkaLZ4BlockInputStream``/``KafkaLZ4BlockOutputStream``), ``ZstdCompression``).

Whatever the input, :func:`decompress` raises only :class:`~kafkatx.errors.FormatError`.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from enum import IntEnum

import cramjam
import lz4.frame
import zstandard

from kafkatx.errors import FormatError
from kafkatx.formats.varints import read_uvarint

DEFAULT_MAX_SIZE = 256 * 1024 * 1024


class Codec(IntEnum):
    """Compression codec ids (Kafka ``CompressionType#forId``); 5-7 are invalid."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


def name_for(codec: int) -> str:
    """Kafka's lowercase codec name (``CompressionType.name``), ``unknown(N)`` for others."""
    try:
        return Codec(codec).name.lower()
    except ValueError:
        return f"unknown({codec})"


def decompress(
    codec: int, data: bytes | memoryview, *, magic: int = 2, max_size: int = DEFAULT_MAX_SIZE
) -> bytes:
    """Decompress a Kafka payload (a v2 batch's records or a legacy wrapper's value).

    ``magic`` matters for LZ4 only (magic 0 frames carry a wrong descriptor checksum).
    Output longer than ``max_size`` bytes is refused. Errors carry no position: the caller
    knows where the compressed bytes are.
    """
    data = bytes(data)
    if codec == Codec.NONE:
        return data
    try:
        if codec == Codec.GZIP:
            return _gunzip(data, max_size)
        if codec == Codec.SNAPPY:
            return _unsnappy(data, max_size)
        if codec == Codec.LZ4:
            return _unlz4(data, magic, max_size)
        if codec == Codec.ZSTD:
            return _unzstd(data, max_size)
    except FormatError as exc:  # positions inside the compressed data mean nothing to callers
        name = name_for(codec)
        message = exc.message if exc.message.startswith(name) else f"{name}: {exc.message}"
        raise FormatError(message, field="compression") from None
    except Exception as exc:  # a codec library's own error type on garbage input
        raise FormatError(
            f"{name_for(codec)} data is corrupt: {exc or type(exc).__name__}", field="compression"
        ) from None
    raise FormatError(f"unknown compression codec id {codec}", field="compression")


def compress(codec: int, data: bytes | memoryview, *, magic: int = 2) -> bytes:
    """Compress ``data`` as a Kafka Java producer would frame it (``magic`` matters for LZ4).

    Raises ``ValueError`` for a codec id Kafka cannot write.
    """
    data = bytes(data)
    if codec == Codec.NONE:
        return data
    if codec == Codec.GZIP:
        # Java's GZIPOutputStream with Deflater.DEFAULT_COMPRESSION (level 6), mtime 0.
        return gzip.compress(data, compresslevel=6, mtime=0)
    if codec == Codec.SNAPPY:
        return _snappy_xerial(data)
    if codec == Codec.LZ4:
        return _lz4_kafka(data, magic)
    if codec == Codec.ZSTD:
        # zstd-jni's streaming ZstdOutputStream: level 3, no content size, no checksum.
        cobj = zstandard.ZstdCompressor(level=3).compressobj()
        return cobj.compress(data) + cobj.flush()
    raise ValueError(f"cannot compress with codec id {codec}")


def _too_big(max_size: int) -> FormatError:
    return FormatError(
        f"decompressed data exceeds the limit of {max_size} bytes", field="compression"
    )


# --- gzip ---------------------------------------------------------------------------------------


def _gunzip(data: bytes, max_size: int) -> bytes:
    """``KafkaGZIPInputStream``: members may be concatenated; bytes after the last member that do
    not start a gzip header are ignored, as Java's ``GZIPInputStream#readTrailer`` does."""
    out = bytearray()
    rest = data
    while True:
        d = zlib.decompressobj(wbits=31)
        chunk = rest
        while True:
            out += d.decompress(chunk, max_size + 1 - len(out))
            if len(out) > max_size:
                raise _too_big(max_size)
            if d.eof:
                break
            chunk = d.unconsumed_tail
            if not chunk:
                raise FormatError("gzip data is truncated", field="compression")
        rest = d.unused_data
        if not (len(rest) >= 10 and rest[:3] == b"\x1f\x8b\x08"):
            return bytes(out)


# --- snappy (snappy-java "xerial" stream framing) -------------------------------------------------

# snappy-java SnappyCodec: MAGIC_HEADER = {-126, 'S','N','A','P','P','Y', 0}, then int32 version
# and int32 minimum compatible version (both 1), big-endian; HEADER_SIZE = 16.
XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
XERIAL_BLOCK_SIZE = 32 * 1024  # SnappyOutputStream.DEFAULT_BLOCK_SIZE


def _raw_snappy(block: bytes, limit: int, max_size: int) -> bytes:
    # The raw format starts with the uncompressed length as a uvarint: check it before allocating.
    length, _ = read_uvarint(block, 0, 5)
    if length > limit:
        raise _too_big(max_size)
    return bytes(cramjam.snappy.decompress_raw(block))


def _unsnappy(data: bytes, max_size: int) -> bytes:
    """snappy-java ``SnappyInputStream``: a xerial stream (header, then int32-length-prefixed raw
    snappy blocks, possibly concatenated streams), or else the whole input is one raw block."""
    if len(data) < len(XERIAL_HEADER) or data[: len(XERIAL_MAGIC)] != XERIAL_MAGIC:
        return _raw_snappy(data, max_size, max_size)
    version = struct.unpack_from(">i", data, 8)[0]
    if version < 1:
        raise FormatError(f"snappy-java stream version {version} is not supported")
    out = bytearray()
    pos = len(XERIAL_HEADER)
    while len(data) - pos >= 4:  # fewer than 4 trailing bytes end the stream (hasNextChunk)
        if data[pos : pos + 4] == XERIAL_MAGIC[:4]:
            # Another stream's header: concatenated xerial streams.
            if len(data) - pos < len(XERIAL_HEADER):
                raise FormatError("snappy-java stream: truncated header of a concatenated stream")
            if data[pos : pos + len(XERIAL_MAGIC)] != XERIAL_MAGIC:
                break
            if struct.unpack_from(">i", data, pos + 8)[0] < 1:
                raise FormatError("snappy-java stream: unsupported version in concatenated stream")
            pos += len(XERIAL_HEADER)
            continue
        size = struct.unpack_from(">i", data, pos)[0]
        pos += 4
        if size < 0:
            raise FormatError(f"snappy-java stream: negative chunk size {size}")
        if size > len(data) - pos:
            raise FormatError(
                f"snappy-java stream: chunk of {size} bytes runs past the end of the data"
            )
        out += _raw_snappy(data[pos : pos + size], max_size - len(out), max_size)
        pos += size
    return bytes(out)


def _snappy_xerial(data: bytes) -> bytes:
    parts = [XERIAL_HEADER]
    for i in range(0, len(data), XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(data[i : i + XERIAL_BLOCK_SIZE]))
        parts.append(struct.pack(">i", len(block)))
        parts.append(block)
    return b"".join(parts)


# --- lz4 (LZ4 frame format with Kafka's magic-0 descriptor-checksum quirk) -----------------------

LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"  # 0x184D2204 little-endian
_FLG_CONTENT_SIZE = 0x08
_FLG_DICT_ID = 0x01


def _lz4_descriptor_end(data: bytes) -> int:
    """Position of the header-checksum (HC) byte of the frame at the start of ``data``."""
    if len(data) < 7:
        raise FormatError("lz4 frame is truncated (header)", field="compression")
    if data[:4] != LZ4_FRAME_MAGIC:
        raise FormatError("not an lz4 frame (invalid magic bytes)", field="compression")
    flg = data[4]
    end = 6 + (8 if flg & _FLG_CONTENT_SIZE else 0) + (4 if flg & _FLG_DICT_ID else 0)
    if len(data) <= end:
        raise FormatError("lz4 frame is truncated (header)", field="compression")
    return end


def _lz4_hc(descriptor: bytes) -> int:
    return (xxh32(descriptor) >> 8) & 0xFF


def _unlz4(data: bytes, magic: int, max_size: int) -> bytes:
    """``Lz4BlockInputStream``: for magic 0 the descriptor checksum is ignored
    (``ignoreFlagDescriptorChecksum``), otherwise it must match. Bytes after the frame's end
    mark are not read, as in Kafka."""
    end = _lz4_descriptor_end(data)
    expected = _lz4_hc(data[4:end])
    if data[end] != expected:
        if magic != 0:
            raise FormatError(
                f"lz4 frame descriptor checksum mismatch (stored {data[end]:#04x}, "
                f"computed {expected:#04x})",
                field="compression",
            )
        data = data[:end] + bytes([expected]) + data[end + 1 :]
    dec = lz4.frame.LZ4FrameDecompressor()
    out = dec.decompress(data, max_length=max_size + 1)
    if len(out) > max_size:
        raise _too_big(max_size)
    if not dec.eof:
        raise FormatError("lz4 frame is truncated (no end mark)", field="compression")
    return bytes(out)


def _lz4_kafka(data: bytes, magic: int) -> bytes:
    """``Lz4BlockOutputStream``: 64 KB independent blocks, no content size or checksums; for
    magic 0 the HC byte is computed over magic + FLG + BD (``useBrokenFlagDescriptorChecksum``).
    """
    frame = lz4.frame.compress(
        data,
        block_size=lz4.frame.BLOCKSIZE_MAX64KB,
        block_linked=False,
        content_checksum=False,
        block_checksum=False,
        store_size=False,
    )
    if magic == 0:
        end = _lz4_descriptor_end(frame)
        frame = frame[:end] + bytes([_lz4_hc(frame[:end])]) + frame[end + 1 :]
    return frame


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 (the hash of the LZ4 frame format's checksums); pure Python, for short inputs."""
    n = len(data)
    i = 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        while i + 16 <= n:
            for lane in range(4):
                word = int.from_bytes(data[i : i + 4], "little")
                v[lane] = (_rotl((v[lane] + word * _P2) & _M32, 13) * _P1) & _M32
                i += 4
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        word = int.from_bytes(data[i : i + 4], "little")
        h = (_rotl((h + word * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


# --- zstd ---------------------------------------------------------------------------------------

_ZSTD_FEED = 1024  # compressed bytes fed per step: bounds the overshoot past max_size


def _unzstd(data: bytes, max_size: int) -> bytes:
    """zstd-jni ``ZstdInputStream``: one or more frames, content size optional; a truncated
    frame is an error."""
    if not data:
        raise FormatError("zstd data is empty", field="compression")
    out = bytearray()
    rest = data
    while rest:
        d = zstandard.ZstdDecompressor().decompressobj()
        pos = 0
        while not d.eof:
            if pos >= len(rest):
                raise FormatError("zstd frame is truncated", field="compression")
            out += d.decompress(rest[pos : pos + _ZSTD_FEED])
            pos += _ZSTD_FEED
            if len(out) > max_size:
                raise _too_big(max_size)
        rest = d.unused_data + rest[pos:]
    return bytes(out)
