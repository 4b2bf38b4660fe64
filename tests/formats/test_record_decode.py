"""The C record decoder equals construct's ``iter_records`` on any batch.

Follows ``DefaultRecord#readFrom`` / ``DefaultRecordBatch`` through
:func:`kafkatx.formats.record_batch.iter_records` (construct, the definition): batches built by
kafkatx's own builder with every codec (none, gzip, snappy, lz4, zstd), CreateTime and
LogAppendTime, null and empty keys and values, headers (UTF-8 keys, null values), control
batches; then the same batches with bytes of their records section changed or their record
count patched. :func:`kafkatx.formats.record_decode.read_records` (and ``parse_batch(...,
decode_records=True)``, which reads through it: the internal topics' loads, coordinator
evidence, ``groups``) must give the same records (offset, timestamp, key, value, headers,
attributes and position) or the same ``FormatError``.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.errors import FormatError
from kafkatx.formats.batch_layout import HEADER_SIZE
from kafkatx.formats.record_batch import (
    ControlType,
    Record,
    build_batch,
    build_control_batch,
    iter_records,
    parse_batch,
    parse_header,
)
from kafkatx.formats.record_decode import HAVE_FAST_DECODER, read_records

T0 = 1_763_700_000_000
RECORDS_COUNT_AT = 57  # the header's records count field

keys_values = st.one_of(st.none(), st.binary(max_size=40))
headers = st.lists(st.tuples(st.text(max_size=12), keys_values), max_size=3)


@st.composite
def record_lists(draw: st.DrawFn) -> list[Record]:
    n = draw(st.integers(0, 8))
    base = draw(st.integers(0, 2**40))
    offsets = sorted(draw(st.lists(st.integers(0, 2**31 - 1), min_size=n, max_size=n)))
    return [Record(offset=base + off, timestamp=draw(st.integers(T0 - 10**9, T0 + 10**9)),
                   key=draw(keys_values), value=draw(keys_values), headers=tuple(draw(headers)),
                   attributes=draw(st.integers(-128, 127)))
            for off in offsets]


@st.composite
def batches(draw: st.DrawFn) -> bytes:
    if draw(st.integers(0, 9)) == 0:
        return build_control_batch(
            base_offset=draw(st.integers(0, 2**40)), producer_id=draw(st.integers(0, 10**6)),
            producer_epoch=3, timestamp=T0,
            control_type=draw(st.sampled_from([ControlType.COMMIT, ControlType.ABORT,
                                               ControlType.LEADER_CHANGE])),
            coordinator_epoch=draw(st.integers(-1, 100)))
    records = draw(record_lists())
    log_append = draw(st.one_of(st.none(), st.integers(T0, T0 + 10**9)))
    return build_batch(records, compression_id=draw(st.integers(0, 4)),
                       log_append_time=log_append, is_transactional=draw(st.booleans()),
                       producer_id=7, producer_epoch=1, base_sequence=0)


def _decoded(data: bytes) -> list[tuple[object, ...]] | str:
    """Every field of every record (position included), or the error, of both readers."""
    header = parse_header(data, 0)

    def fields(records: list[Record]) -> list[tuple[object, ...]]:
        return [(r.offset, r.timestamp, r.key, r.value, r.headers, r.attributes, r.position)
                for r in records]

    try:
        exact: list[tuple[object, ...]] | str = fields(list(iter_records(data, 0, header)))
    except FormatError as exc:
        exact = f"{exc.position}: {exc}"
    try:
        fast: list[tuple[object, ...]] | str = fields(read_records(data, 0, header))
    except FormatError as exc:
        fast = f"{exc.position}: {exc}"
    try:
        batch = parse_batch(data, 0, decode_records=True, decode_control=False).records
        parsed: list[tuple[object, ...]] | str = fields(list(batch or ()))
    except FormatError as exc:
        parsed = f"{exc.position}: {exc}"
    assert fast == exact
    assert parsed == exact  # parse_batch(decode_records=True) reads through read_records
    return fast


def test_the_extension_has_the_decoder() -> None:
    """The C decoder is built (CI builds the extension), so the tests below exercise it."""
    assert HAVE_FAST_DECODER, (
        "kafkatx.formats._batchscan has no decode_records: the extension was built from an "
        "older _batchscan.c; rebuild it (pip install -e .)")


@settings(max_examples=400, deadline=None)
@given(batches())
def test_built_batches_decode_the_same(data: bytes) -> None:
    """``DefaultRecord#readFrom`` on well-formed batches of every codec."""
    assert isinstance(_decoded(data), list)


@settings(max_examples=600, deadline=None)
@given(batches(), st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1,
                           max_size=4),
       st.one_of(st.none(), st.integers(-2, 12)))
def test_damaged_batches_fail_or_decode_the_same(data: bytes, edits: list[tuple[int, int]],
                                                  count: int | None) -> None:
    """Changed bytes in the records section (and a patched record count): the same records
    or the same ``FormatError`` (the C decoder hands what it does not accept to construct)."""
    _decoded(damaged(data, edits, count))


def damaged(data: bytes, edits: list[tuple[int, int]], count: int | None) -> bytes:
    """``data`` with bytes of its records section set (at positions modulo its length) and
    its record count patched."""
    buf = bytearray(data)
    body = len(buf) - HEADER_SIZE
    if body:
        for at, value in edits:
            buf[HEADER_SIZE + at % body] = value
    if count is not None:
        struct.pack_into(">i", buf, RECORDS_COUNT_AT, count)
    return bytes(buf)


@pytest.mark.parametrize("payload", [
    b"\x80\x80\x80\x80\x80\x01",  # a record length varint longer than 5 bytes
    # attributes, a 10-byte timestamp delta above 2^64, offset delta, null key, null value,
    # no headers: Python keeps the big integer, C hands it over
    b"\x1e\x00" + b"\xff" * 9 + b"\x7f" + b"\x00\x01\x01\x00",
    b"\x16\x00\x00\x00\x01\x01\x02\x06\xff\xfe\xfd\x01",  # a header key that is not UTF-8
])
def test_edge_cases_decode_the_same(payload: bytes) -> None:
    """``ByteUtils.readVarint``/``readVarlong`` limits and header keys (``DefaultRecord``)."""
    batch = bytearray(build_batch([Record(offset=0, timestamp=T0, key=None, value=None)]))
    batch[HEADER_SIZE:] = payload
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    _decoded(bytes(batch))
