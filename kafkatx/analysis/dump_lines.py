"""``dump --records -f json|jsonl`` of a data segment: many batches' JSON items per C call.

The segment is scanned a window at a time (:func:`kafkatx.formats.segment_scan.
scan_segment_chunks`: columns of one window held at once, so memory stays flat in the
segment's size), and each window's uncompressed v2 batches -- data batches and transaction
markers -- are written whole, batch fields and records, by the C extension's
``format_dump_batches`` (``_dumpfmt.c``) from the scan's header columns: the text
:class:`kafkatx.cli.output.JsonWriter` writes for the items :mod:`kafkatx.analysis.dump` builds
for them. Every other row (legacy entries, compressed batches, other control batches, records
the C decoder refuses) and every problem goes through dump's Python items, in file order.
Equality with the Python path is proven by tests/analysis/test_dump_lines.py.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from kafkatx.formats.batch_layout import COMPRESSION_MASK, CONTROL_FLAG
from kafkatx.formats.batch_values import ControlType
from kafkatx.formats.batchscan import HAVE_EXTENSION, HeaderColumns, _ext
from kafkatx.formats.record_format import INT64_MAX, INT64_MIN
from kafkatx.formats.segment_scan import SegmentScan

if TYPE_CHECKING:
    from kafkatx.analysis.dump_filter import DumpFilter
    from kafkatx.formats.segment import SegmentProblem

_format: Any = getattr(_ext, "format_dump_batches", None) if HAVE_EXTENSION else None
_table: Any = getattr(_ext, "format_dump_table", None) if HAVE_EXTENSION else None
HAVE_LINES = _format is not None
HAVE_TABLE = _table is not None

WINDOW = 16 << 20  # bytes of a segment scanned, and held as columns, at a time
TEXT_AT_ONCE = 1 << 20  # bytes of JSON text per C call (then handed to the writer)

# The rows of the columns handed to the C functions, in _dumpcols.h's order.
COLUMNS = ("position", "size", "attributes", "count", "base_offset", "last_offset",
           "base_timestamp", "max_timestamp", "producer_id", "producer_epoch", "base_sequence",
           "last_sequence", "partition_leader_epoch", "crc", "crc_valid", "control_type",
           "coordinator_epoch", "route")
_ROW = {name: k for k, name in enumerate(COLUMNS)}

SlowItems = Callable[[SegmentScan, npt.NDArray[np.intp]], Iterator[dict]]


def kept_rows(h: HeaderColumns, flt: DumpFilter) -> npt.NDArray[np.intp]:
    """The rows of ``h`` whose batches ``flt`` keeps (by offsets and producer)."""
    keep = np.ones(len(h), dtype=bool)
    if flt.from_offset is not None:
        keep &= h.last_offset >= flt.from_offset
    if flt.to_offset is not None:
        keep &= h.base_offset <= flt.to_offset
    if flt.producer_ids is not None:
        keep &= np.isin(h.producer_id, list(flt.producer_ids)) & (h.magic == 2)
    if flt.producer_epoch is not None:
        keep &= (h.producer_epoch == flt.producer_epoch) & (h.magic == 2)
    return np.flatnonzero(keep)


def batch_columns(scan: SegmentScan, rows: npt.NDArray[np.intp]) -> npt.NDArray[np.int64]:
    """The C function's columns of ``rows`` (int64, one row per name of ``COLUMNS``); route
    -1 for a batch left to Python: not v2, compressed, or a control batch other than a
    COMMIT/ABORT marker."""
    h = scan.headers
    out = np.empty((len(COLUMNS), len(rows)), dtype=np.int64)
    sources = {"size": h.size, "count": h.records_count, "last_offset": h.last_offset,
               "last_sequence": h.last_sequence, "control_type": scan.control_type,
               "coordinator_epoch": scan.coordinator_epoch}
    for name in COLUMNS[:-1]:
        out[_ROW[name]] = (sources.get(name) if name in sources else getattr(h, name))[rows]
    attributes, control = out[_ROW["attributes"]], out[_ROW["control_type"]]
    marker = (control == ControlType.ABORT) | (control == ControlType.COMMIT)
    fast = ((h.magic[rows] == 2) & (attributes & COMPRESSION_MASK == 0)
            & ((attributes & CONTROL_FLAG == 0) | marker))
    out[_ROW["route"]] = np.where(fast, 0, -1)
    return out


class TableRun:
    """A run of batches the C function may write as ``dump``'s table (``_dumptable.c``'s
    ``format_dump_table``), taken from its start a chunk at a time: as padded table text, or
    as dump's Python items (``items``) where the caller's table is not plain.

    Where a chunk of the table ends is the caller's (a chunk a fixed number of batches, and
    one ends where the table does); the run says what follows it: ``closes`` -- a problem or
    the end of the file (the chunk ends with the run, so its last may be short); ``continues``
    -- the next scanned window's batches (what the caller leaves of it comes again, joined
    with them: :func:`table_items`); neither -- batches left to Python, the chunk going on
    with them. ``sources``: each scanned window's scan and rows of the run, from the run's
    column ``first`` on."""

    def __init__(self, data: Any, sources: list[tuple[int, SegmentScan, npt.NDArray[np.intp]]],
                 cols: npt.NDArray[np.int64], span: tuple[int, int], offsets: tuple[int, int],
                 slow: SlowItems, *, closes: bool = False, continues: bool = False) -> None:
        self.data, self.sources, self.cols, self.slow = data, sources, cols, slow
        self.next, self.stop = span
        self.offsets = offsets
        self.closes, self.continues = closes, continues

    @property
    def left(self) -> int:
        return self.stop - self.next

    def table_text(self, k: int, names: bytes, justify: bytes, show_header: bool,
                   glyphs: tuple[str, str], width: int) -> bytes | None:
        """The next ``k`` batches' rows padded as ``plain_table`` pads them (UTF-8), or None
        (and nothing taken) where only rich can tell."""
        low, high = self.offsets
        text = _table(self.data, self.cols, self.cols.shape[1], low, high, self.next,
                      self.next + k, names, justify, show_header, glyphs[0].encode(),
                      glyphs[1].encode(), width)
        if text is None:
            return None
        self.next += k
        return text

    def items(self, k: int) -> Iterator[dict]:
        """dump's items of the next ``k`` batches."""
        start, stop = self.next, self.next + k
        self.next = stop
        for first, scan, rows in self.sources:
            lo, hi = max(start, first), min(stop, first + len(rows))
            if lo < hi:
                yield from self.slow(scan, rows[lo - first:hi - first])

    def joined(self, later: TableRun) -> TableRun:
        """What is left of this run, then ``later`` (untaken), as one run."""
        assert later.next == 0
        cols = np.ascontiguousarray(np.concatenate(
            [self.cols[:, self.next:self.stop], later.cols[:, :later.stop]], axis=1))
        n = self.left
        sources = [(first - self.next, scan, rows) for first, scan, rows in self.sources
                   if first + len(rows) > self.next]
        sources += [(first + n, scan, rows) for first, scan, rows in later.sources]
        return TableRun(self.data, sources, cols, (0, n + later.left), self.offsets, self.slow,
                        closes=later.closes, continues=later.continues)


def table_items(data: Any, scans: Iterable[SegmentScan], flt: DumpFilter, file: str,
                slow: SlowItems, problem: Callable[[SegmentProblem, str], dict], *,
                closes_at_end: bool) -> Iterator[dict]:
    """:func:`line_items` with ``table`` of each of ``scans`` (a segment's windows, in file
    order), what the caller leaves of a run at a window's end (``continues``) joined with the
    next window's first run where nothing comes between them, so that a chunk of the table
    does not have to end at a window's end; ``closes_at_end``: no item of the same table
    follows the file's (a run at the file's end ``closes``)."""
    held: dict | None = None  # a run that continues, as the caller left it
    for scan in scans:
        first = True
        for item in line_items(data, scan, flt, file, "", slow, problem, table=True):
            if held is not None:
                if held["run"].left and first and item["kind"] == "batch_run":
                    item = {**item, "run": held["run"].joined(item["run"])}
                elif held["run"].left:
                    held["run"].continues = False
                    held["run"].closes = item["kind"] == "problem"
                    yield held
                held = None
            first = False
            if item["kind"] == "batch_run" and item["run"].continues:
                held = item
            yield item
    if held is not None and held["run"].left:
        held["run"].continues = False
        held["run"].closes = closes_at_end
        yield held


def line_items(data: Any, scan: SegmentScan, flt: DumpFilter, file: str, separator: str,
               slow: SlowItems, problem: Callable[[SegmentProblem, str], dict], *,
               table: bool = False) -> Iterator[dict]:
    """dump's items of one scanned chunk of ``data``: runs of batches the C function writes as
    ``{"kind": "encoded", "text": ...}`` items (JSON items joined by ``separator``, as UTF-8
    bytes; ``position`` the last batch's) -- with ``table``, as ``{"kind": "batch_run", "run":
    TableRun}`` items --, the rest through ``slow(scan, rows)``, problems (``problem``) before
    the first batch at or past their position, as dump's own walk places them."""
    rows = kept_rows(scan.headers, flt)
    cols = np.ascontiguousarray(batch_columns(scan, rows))
    positions, route = cols[_ROW["position"]], cols[_ROW["route"]]
    fast_rows = np.flatnonzero(route >= 0)
    slow_rows = np.flatnonzero(route < 0)
    problems = scan.problems
    cuts = np.searchsorted(positions, [p.position for p in problems], side="left").tolist()
    head = ('{"kind":"batch","file":' + json.dumps(file, ensure_ascii=False)
            + ',"base_offset":').encode()
    sep = separator.encode()
    low = INT64_MIN if flt.from_offset is None else flt.from_offset
    high = INT64_MAX if flt.to_offset is None else flt.to_offset
    m, i, p = len(rows), 0, 0
    while True:
        while p < len(problems) and cuts[p] <= i:
            yield problem(problems[p], file)
            p += 1
        if i >= m:
            return
        stop = cuts[p] if p < len(problems) else m
        if route[i] < 0:  # up to the next fast row (or problem) the slow way
            k = int(np.searchsorted(fast_rows, i))
            j = min(stop, int(fast_rows[k]) if k < len(fast_rows) else m)
            yield from slow(scan, rows[i:j])
            i = j
            continue
        if table:
            k = int(np.searchsorted(slow_rows, i))
            j = min(stop, int(slow_rows[k]) if k < len(slow_rows) else m)
            after = p < len(problems) and j == stop  # a problem after the run
            run = TableRun(data, [(i, scan, rows[i:j])], cols, (i, j), (low, high), slow,
                           closes=after, continues=j == m and not after)
            yield {"kind": "batch_run", "file": file, "position": int(positions[j - 1]),
                   "run": run}
            i = j
            continue
        while i < stop and route[i] >= 0:
            text, nxt = _format(data, cols, m, head, sep, low, high, i, stop, TEXT_AT_ONCE)
            if nxt > i:
                yield {"kind": "encoded", "file": file, "position": int(positions[nxt - 1]),
                       "text": text}
                i = nxt
            else:  # records the C decoder refuses: this batch the slow way
                yield from slow(scan, rows[i:i + 1])
                i += 1
