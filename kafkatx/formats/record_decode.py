"""The records of a v2 batch, decoded fast: the C decoder, construct for anything else.

:func:`kafkatx.formats.record_batch.iter_records` (construct, ``DefaultRecord#readFrom``) stays
the definition of the record layout. :func:`read_records` runs the C extension's
``decode_records`` over the (decompressed) records section instead -- some twenty times faster
per record -- and hands the batch to ``iter_records`` whenever the C decoder does not accept it
(a malformed varint, a length out of range, bytes left over, a header key that is not UTF-8,
an offset or timestamp beyond int64), so errors are reported exactly as before and results are
equal (proven by tests/formats/test_record_decode.py). Without the extension (or with
``KAFKATX_NO_EXTENSION=1``) every batch goes through ``iter_records``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkatx.formats.batch_layout import COMPRESSION_MASK, TIMESTAMP_TYPE_MASK
from kafkatx.formats.batchscan import HeaderColumns
from kafkatx.formats.record_values import (
    HAVE_FAST_DECODER,  # noqa: F401 (callers ask here)
    Record,
    _decode,
    decoded_in_c,
    payload_at,
)

if TYPE_CHECKING:
    from kafkatx.formats.record_batch import RecordBatchHeader



def _fast(buf: bytes | memoryview, pos: int, size: int, attributes: int, count: int,
          base_offset: int, base_timestamp: int, max_timestamp: int, path: str | None
          ) -> list[Record] | None:
    """The C decoder's records, or None: not built (``_decode`` None here too), or a batch it
    hands to construct (record_batch, imported only then)."""
    if _decode is None:
        return None
    return decoded_in_c(buf, pos, size, attributes, count, base_offset, base_timestamp,
                        max_timestamp, path)


def read_records(buf: bytes | memoryview, pos: int, header: RecordBatchHeader, *,
                 path: str | None = None) -> list[Record]:
    """The records of the batch at ``pos``, as ``list(iter_records(...))`` gives them (same
    values, same ``FormatError`` for a batch that does not decode)."""
    fast = _fast(buf, pos, header.size, header.attributes, header.records_count,
                 header.base_offset, header.base_timestamp, header.max_timestamp, path)
    if fast is not None:
        return fast
    from kafkatx.formats.record_batch import iter_records

    return list(iter_records(buf, pos, header, path=path))


def read_records_at(buf: bytes | memoryview, headers: HeaderColumns, row: int, *,
                    path: str | None = None) -> list[Record]:
    """:func:`read_records` of the v2 batch at ``row`` of a scan's columns (the header is
    taken from the columns; parsed again only for a batch the C decoder hands over)."""
    pos = int(headers.position[row])
    fast = _fast(buf, pos, int(headers.batch_length[row]) + 12, int(headers.attributes[row]),
                 int(headers.records_count[row]), int(headers.base_offset[row]),
                 int(headers.base_timestamp[row]), int(headers.max_timestamp[row]), path)
    if fast is not None:
        return fast
    from kafkatx.formats.record_batch import iter_records, parse_header

    return list(iter_records(buf, pos, parse_header(buf, pos, path=path), path=path))


def check_records(buf: bytes | memoryview, pos: int, header: RecordBatchHeader, *,
                  path: str | None = None) -> None:
    """Raise the ``FormatError`` :func:`read_records` would for the batch at ``pos``, without
    building its records (the C decoder's rows are dropped; a batch it hands over is walked
    by ``iter_records``)."""
    _check(buf, pos, header.size, header.attributes, header.records_count, header.base_offset,
           header.base_timestamp, header.max_timestamp, path)


def check_records_at(buf: bytes | memoryview, headers: HeaderColumns, row: int, *,
                     path: str | None = None) -> None:
    """:func:`check_records` of the v2 batch at ``row`` of a scan's columns."""
    _check(buf, int(headers.position[row]), int(headers.batch_length[row]) + 12,
           int(headers.attributes[row]), int(headers.records_count[row]),
           int(headers.base_offset[row]), int(headers.base_timestamp[row]),
           int(headers.max_timestamp[row]), path)


def _check(buf: bytes | memoryview, pos: int, size: int, attributes: int, count: int,
           base_offset: int, base_timestamp: int, max_timestamp: int, path: str | None) -> None:
    if _decode is not None:
        data, _ = payload_at(buf, pos, size, attributes & COMPRESSION_MASK, path)
        if _decode(data, count, base_offset, base_timestamp, max_timestamp,
                   bool(attributes & TIMESTAMP_TYPE_MASK)) is not None:
            return
    from kafkatx.formats.record_batch import iter_records, parse_header

    for _ in iter_records(buf, pos, parse_header(buf, pos, path=path), path=path):
        pass
