"""``replay`` as a table (without ``--records``), its rows taken from the C formatter.

:class:`TableWriter` is the ``formatter`` of ``consumer_view.replay_segment`` as
:class:`~kafkatx.cli.replay_writer.ReplayWriter` is for jsonl, with templates that make the C
extension write ``TEMPLATE OFFSET TIMESTAMP <key, value, headers> LOW_OR_HIGH`` a line; the
producer and status cells of each template are cut from the Python rendering of a sample
record (``replay_cmd.table_cells``), so the two paths cannot disagree on them. Rows are
printed in chunks of :data:`CHUNK`, each sized on its own cells exactly as
:class:`~kafkatx.cli.render.FitTable` sizes it; a chunk :func:`fast_chunk_text` cannot tell
(colours, cells that are not plain ASCII, a table wider than the console) goes to FitTable.
tests/cli/test_replay_table.py proves the text equal to FitTable's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from rich.console import Console

from kafkatx.analysis.consumer_view import ConsumerView, ReplayedRecord, classify
from kafkatx.analysis.timefmt import iso_ms
from kafkatx.cli.plain_table import cell_text
from kafkatx.cli.render import TABLE_GAP, Col, FitTable
from kafkatx.cli.replay_writer import ReplayWriter
from kafkatx.formats.record_batch import Record
from kafkatx.formats.record_format import INT64_MIN, Templates
from kafkatx.semantics.read_committed import Decision

CHUNK = 500  # rows sized and printed together
COLUMNS = (Col("offset", "right"), Col("timestamp (UTC)", give_way=1),
           Col("pid/epoch", "right"), Col("status", wrap=True))
# Python's iso_ms goes through a float of seconds: exact to the millisecond below 2**42 ms
_NUMPY_ISO_BELOW = 1 << 42


def iso_column(timestamps: np.ndarray) -> list[str]:
    """``iso_ms`` of each timestamp (ms), through numpy where that gives the same text."""
    plain = (timestamps >= 0) & (timestamps < _NUMPY_ISO_BELOW)
    texts = np.datetime_as_string(np.where(plain, timestamps, 0).astype("datetime64[ms]"),
                                  unit="ms").tolist()
    if plain.all():
        return [t + "Z" for t in texts]
    return [t + "Z" if ok else iso_ms(int(ts))
            for t, ok, ts in zip(texts, plain.tolist(), timestamps.tolist(), strict=True)]


def fast_chunk_text(out: Console, rows: Sequence[Sequence[str]], *, show_header: bool
                    ) -> str | None:
    """``FitTable(COLUMNS)``'s text for ``rows`` on a console without colours, or None."""
    if out.color_system is not None or not rows:
        return None
    known: dict[str, str | None] = {}
    columns: list[list[str]] = []
    for i, col in enumerate(zip(*rows, strict=True)):
        texts = []
        for cell in (col if i != 1 else ()):  # timestamps: iso text or "-" or "Nms"
            text = known[cell] if cell in known else known.setdefault(cell, cell_text(out, cell))
            if text is None:
                return None
            texts.append(text)
        columns.append(texts if i != 1 else list(col))
    if not all(t.isascii() and t.isprintable() and t == t.strip(" ") for t in set(columns[1])):
        return None
    widths = [max(map(len, texts)) for texts in columns]
    if show_header:
        widths = [max(w, len(c.name)) for w, c in zip(widths, COLUMNS, strict=True)]
    if 0 in widths or sum(widths) + TABLE_GAP * (len(widths) - 1) > out.width:
        return None
    w0, w1, w2, w3 = widths
    gap = " " * TABLE_GAP
    fmt = f"%{w0}s{gap}%-{w1}s{gap}%{w2}s{gap}%-{w3}s"
    lines = [fmt % tuple(c.name for c in COLUMNS)] if show_header else []
    lines += [fmt % line for line in zip(*columns, strict=True)]
    return "\n".join(lines) + "\n"


class TableWriter(ReplayWriter):
    """Replayed records as ``replay``'s table: rows from the C formatter where it takes a
    batch, from :func:`cells` for the records it leaves to Python."""

    def __init__(self, consumer: ConsumerView, out: Console,
                 cells: Callable[[ReplayedRecord], list[str]], *, chunk: int = CHUNK) -> None:
        super().__init__("jsonl", consumer, _Discard())
        self.chunk = chunk
        self.console = out
        self.cells = cells
        self.out = _RowSink(self)  # type: ignore[assignment]
        self.rows: list[list[str]] = []  # offset, timestamp, pid, status of rows not printed
        self.printed = 0
        self._template_cells: list[tuple[str, str, str]] = []

    def write(self, r: ReplayedRecord) -> None:
        self.rows.append(self.cells(r))
        self.count += 1
        self._print_full()

    def add_lines(self, text: str) -> None:
        """Rows of ``TEMPLATE OFFSET TIMESTAMP ... L`` lines written by the C formatter."""
        if not text:
            return
        lines = text.split("\n")
        lines.pop()  # after the last newline
        parts = [line.split(" ", 3) for line in lines]
        timestamps = np.array([p[2] for p in parts], dtype=np.int64)
        template_cells = self._template_cells
        self.rows += [[p[1], iso, *(template_cells[int(p[0])][::2] if line[-1] == "0"
                                    else template_cells[int(p[0])][:2])]
                      for p, iso, line in zip(parts, iso_column(timestamps), lines,
                                              strict=True)]
        self._print_full()

    def close(self) -> None:
        if self.rows:
            self._print(self.rows)
            self.rows = []

    def _print_full(self) -> None:
        chunk = self.chunk
        if len(self.rows) < chunk:
            return
        rows, self.rows = self.rows, []
        for start in range(0, len(rows) - chunk + 1, chunk):
            self._print(rows[start:start + chunk])
        self.rows = rows[len(rows) - len(rows) % chunk:]

    def _print(self, rows: list[list[str]]) -> None:
        first = self.printed == 0
        self.printed += len(rows)
        text = fast_chunk_text(self.console, rows, show_header=first)
        if text is not None:
            self.console.file.write(text)
            return
        table = FitTable(COLUMNS, show_header=first)
        for row in rows:
            table.add_row(*row)
        table.render(self.console, note=first)

    def _make_templates(self, producer_id: int, producer_epoch: int, is_transactional: bool,
                        decision: Decision, beyond: bool) -> Templates:
        split = self.consumer.high_watermark if beyond else INT64_MIN
        low, high = (self.cells(classify(
            Record(offset=offset, timestamp=0, key=None, value=None), producer_id,
            producer_epoch, is_transactional, decision, beyond, self.consumer, None, None))
            for offset in (split - 1, split))
        if low[2] != high[2]:
            raise AssertionError("a batch's producer cell depends on the record's offset")
        k = len(self._template_cells)
        self._template_cells.append((low[2], high[3], low[3]))
        return Templates(f"{k} ".encode(), b" ", b" ", b" 0\n", b" 1\n", split)


class _RowSink:
    def __init__(self, writer: TableWriter) -> None:
        self.writer = writer

    def put(self, text: str) -> None:
        self.writer.add_lines(text)


class _Discard:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


__all__ = ["CHUNK", "COLUMNS", "TableWriter", "fast_chunk_text", "iso_column"]
