"""Message format conversion in process: ``RecordsUtil#downConvert`` inside
``LazyDownConversionRecords(Send)`` and ``LogValidator``'s up-conversion, on the edge cases the
wire tests do not reach."""

from __future__ import annotations

import struct

import pytest
from kio.schema.errors import ErrorCode

from kafkatx.broker.logs.legacy_records import (
    MAX_READ_SIZE,
    UnsupportedCompression,
    down_convert,
    up_convert,
)
from kafkatx.broker.logs.log_values import AppendError
from kafkatx.formats.legacy_message import build_legacy_entry, parse_legacy_entry
from kafkatx.formats.record_batch import (
    Record,
    build_batch,
    build_control_batch,
    iter_records,
    parse_header,
)

T0 = 1_760_000_000_000


def _batch(n: int, base: int = 0, *, header_bytes: int = 0, compression: int = 0) -> bytes:
    headers = (("h", b"x" * header_bytes),) if header_bytes else ()
    return build_batch([Record(offset=base + i, timestamp=T0 + i, key=b"k", value=b"v%d" % i,
                               headers=headers) for i in range(n)], base_offset=base,
                       compression_id=compression)


def test_nothing_to_convert() -> None:
    """No batch: nothing; only a control batch or only a cut batch: what
    ``LazyDownConversionRecords`` declares then (an overflow entry, or nothing)."""
    assert down_convert(b"", 1, 0) == b""
    marker = build_control_batch(base_offset=0, producer_id=1, producer_epoch=0,
                                 control_type=1, timestamp=T0)
    assert down_convert(marker, 1, 0) == struct.pack(">qi", -1, 61)
    assert down_convert(_batch(2)[:-5], 0, 0) == b""


def test_padding_larger_than_a_read_chunk() -> None:
    """Headers are dropped by the conversion: the answer keeps the v2 size, padded with as many
    overflow entries as ``LazyDownConversionRecordsSend`` builds (each at most
    ``MAX_READ_SIZE``)."""
    data = _batch(1, header_bytes=300_000)
    out = down_convert(data, 1, 0)
    assert len(out) == len(data)
    entry = parse_legacy_entry(out, 0)
    assert [(m.offset, m.key, m.value) for m in entry.records] == [(0, b"k", b"v0")]
    first_pad = entry.message.entry_size
    assert struct.unpack_from(">qi", out, first_pad) == (-1, len(data) - first_pad + 1)
    second_pad = first_pad + MAX_READ_SIZE
    assert struct.unpack_from(">q", out, second_pad) == (-1,)


def test_zstd_first_batch_is_refused_later_ones_end_the_conversion() -> None:
    with pytest.raises(UnsupportedCompression):
        down_convert(_batch(1, compression=4), 1, 0)
    data = _batch(1) + _batch(1, base=1, compression=4)
    out = down_convert(data, 1, 0)
    assert parse_legacy_entry(out, 0).message.offset == 0
    assert len(out) == len(data)


def test_up_convert_keeps_records_and_refuses_an_empty_set() -> None:
    entries = b"".join(build_legacy_entry(offset=7, magic=1, key=b"k%d" % i, value=b"v",
                                          timestamp=T0 + i) for i in range(3))
    batch = up_convert(entries, "t-0", 1 << 20)
    header = parse_header(batch, 0)
    assert (header.base_offset, header.producer_id, header.records_count) == (0, -1, 3)
    assert [(r.offset, r.timestamp, r.key) for r in iter_records(batch, 0, header)] == [
        (0, T0, b"k0"), (1, T0 + 1, b"k1"), (2, T0 + 2, b"k2")]
    with pytest.raises(AppendError) as exc:
        up_convert(entries[:20], "t-0", 1 << 20)  # only a cut entry
    assert exc.value.error == ErrorCode.invalid_record
