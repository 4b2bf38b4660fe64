"""The records of a v2 batch written straight out as JSON or CSV text by the C extension.

:func:`format_batch` decodes a batch's records as :func:`kafkatx.formats.record_decode.
read_records` does and writes each one through caller-given templates (what is constant in a
batch: producer, visibility...), rendering key, value and headers as ``Record.to_dict`` and
``render_bytes`` do, with no Python object per record. It returns None for every batch the C
decoder hands to construct (and for a CSV text field holding a CR): the caller then renders
that batch's records in Python, which reports the same errors as before. Byte-for-byte
equality with the Python rendering is proven by tests/formats/test_record_format.py.
"""

from __future__ import annotations

from typing import Any

from kafkatx.errors import FormatError
from kafkatx.formats.batch_layout import COMPRESSION_MASK, TIMESTAMP_TYPE_MASK
from kafkatx.formats.batchscan import HAVE_EXTENSION, HeaderColumns, _ext
from kafkatx.formats.raw_json import RawJsonList
from kafkatx.formats.record_values import payload_at
from kafkatx.lazy_dataclass import dataclass

_format: Any = getattr(_ext, "format_records", None) if HAVE_EXTENSION else None
HAVE_FORMATTER = _format is not None


def format_batches_function() -> Any:
    """The C extension's ``format_batches`` (many uncompressed batches of a segment in one
    call; see _recordfmt.c), or None: the caller then formats one batch at a time."""
    return getattr(_ext, "format_batches", None) if HAVE_EXTENSION else None

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

__all__ = ["HAVE_FORMATTER", "INT64_MAX", "INT64_MIN", "RECORD_JSON", "Formatted", "RawJsonList",
           "Templates", "format_batch", "format_batches_function",
           "format_records_at"]


@dataclass(frozen=True, slots=True)
class Templates:
    """What a record's text is made of around its offset, timestamp, key, value and headers:
    ``prefix OFFSET mid_timestamp TIMESTAMP mid_key KEY VALUE HEADERS suffix``, with
    ``suffix_low`` for offsets below ``split`` and ``separator`` between records."""

    prefix: bytes
    mid_timestamp: bytes
    mid_key: bytes
    suffix_low: bytes
    suffix_high: bytes
    split: int = INT64_MIN
    csv: bool = False
    separator: bytes = b""
    table: bool = False  # prefix OFFSET mid_timestamp ISO suffix (replay's table rows)

    @property
    def mode(self) -> int:
        """The C formatter's mode: 0 JSON, 1 CSV, 2 table."""
        return 2 if self.table else int(self.csv)


@dataclass(frozen=True, slots=True)
class Formatted:
    """A batch's records as JSON text, how many, and whether a bound stopped it."""

    text: str
    written: int
    stopped: bool  # a record above max_offset was met


def format_batch(buf: bytes | memoryview, headers: HeaderColumns, row: int, templates: Templates,
                 *, min_offset: int = INT64_MIN, max_offset: int = INT64_MAX,
                 stop_at_max: bool = True, path: str | None = None) -> Formatted | None:
    """The records of the v2 batch at ``row`` of a scan's columns whose offsets are within
    [``min_offset``, ``max_offset``] as text, or None (no extension, a legacy entry, a batch
    the C decoder refuses, a payload that does not decompress): render it in Python then."""
    if int(headers.magic[row]) != 2:
        return None
    return format_records_at(
        buf, int(headers.position[row]), int(headers.batch_length[row]) + 12,
        int(headers.attributes[row]), int(headers.records_count[row]),
        int(headers.base_offset[row]), int(headers.base_timestamp[row]),
        int(headers.max_timestamp[row]), templates, min_offset=min_offset,
        max_offset=max_offset, stop_at_max=stop_at_max, path=path)


def format_records_at(buf: bytes | memoryview, position: int, size: int, attributes: int,
                      count: int, base_offset: int, base_timestamp: int, max_timestamp: int,
                      templates: Templates, *, min_offset: int = INT64_MIN,
                      max_offset: int = INT64_MAX, stop_at_max: bool = True,
                      path: str | None = None) -> Formatted | None:
    """:func:`format_batch` of the v2 batch of ``size`` bytes at ``position`` whose header
    fields are given."""
    if _format is None:
        return None
    try:
        data, _ = payload_at(buf, position, size, attributes & COMPRESSION_MASK, path)
    except FormatError:
        return None
    t = templates
    out = _format(data, count, base_offset, base_timestamp, max_timestamp,
                  attributes & TIMESTAMP_TYPE_MASK != 0, min_offset, max_offset, stop_at_max,
                  t.mode, t.prefix, t.mid_timestamp, t.mid_key, t.suffix_low, t.suffix_high,
                  t.split, t.separator)
    if out is None:
        return None
    text, written, stopped = out
    return Formatted(text.decode("utf-8"), written, stopped)


#: ``Record.to_dict`` as JSON (compact separators), records separated by commas: the
#: ``records`` list of a ``dump`` batch.
RECORD_JSON = Templates(b'{"offset":', b',"timestamp":', b",", b"}", b"}", separator=b",")

