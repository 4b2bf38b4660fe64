"""``replay`` as a table (without ``--records``), its rows taken from the C formatter.

:class:`TableWriter` is the ``formatter`` of ``consumer_view.replay_segment`` as
:class:`~kafkatx.cli.replay_writer.ReplayWriter` is for jsonl, with templates that make the C
extension write ``OFFSET ISO-TIMESTAMP CELLS`` a line (its table mode); the
producer and status cells of each template are cut from the Python rendering of a sample
record (``replay_cmd.table_cells``), so the two paths cannot disagree on them. Rows are
printed in chunks of :data:`CHUNK`, each sized on its own cells exactly as
:class:`~kafkatx.cli.render.FitTable` sizes it. A chunk of the C formatter's lines only is
padded in C (``format_replay_table``, _replaytable.c, with _dumptable.c's padding); one it
refuses or holding rows made in Python goes to :func:`fast_chunk_text`, and a chunk that
cannot tell (colours, cells that are not plain ASCII, a table wider than the console) to
FitTable. tests/test_replay_table.py proves the text equal to FitTable's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kafkatx.analysis.consumer_view import ConsumerView, ReplayedRecord, classify
from kafkatx.cli.plain_table import cell_text
from kafkatx.cli.render import TABLE_GAP, Col, FitTable
from kafkatx.cli.replay_writer import ReplayWriter
from kafkatx.formats.batchscan import HAVE_EXTENSION, _ext
from kafkatx.formats.record_format import INT64_MIN, Templates
from kafkatx.formats.record_values import Record
from kafkatx.semantics.read_committed import Decision

if TYPE_CHECKING:
    from rich.console import Console

_replay_table: Any = getattr(_ext, "format_replay_table", None) if HAVE_EXTENSION else None

CHUNK = 500  # rows sized and printed together
COLUMNS = (Col("offset", "right"), Col("timestamp (UTC)", give_way=1),
           Col("pid/epoch", "right"), Col("status", wrap=True))


def _integers(texts: list[str]) -> np.ndarray:
    """Decimal int64 texts (written by the C formatter) as an array, parsed in C."""
    return np.fromstring(" ".join(texts), dtype=np.int64, sep=" ")


def fast_chunk_text(out: Console, columns: Sequence[list[str]], *, show_header: bool
                    ) -> str | None:
    """``FitTable(COLUMNS)``'s text for the rows of ``columns`` (offset, timestamp, pid/epoch
    and status cells) on a console without colours, or None."""
    if out.color_system is not None or not columns[0]:
        return None
    offsets, timestamps, pids, statuses = columns
    # Offsets (integers) and timestamps (iso_ms: "-", "Nms" or ISO text, whose only ":x:"
    # spans hold two digits, no emoji name: tests/test_replay_table.py) are shown as they
    # are when printable ASCII without markup; pid/epoch and status cells repeat: each
    # distinct one is checked as plain_table checks it.
    numbers = "".join(offsets) + "".join(timestamps)
    if not (numbers.isascii() and numbers.isprintable()) or "[" in numbers or " " in numbers:
        return None
    shown = [offsets, timestamps]
    for column in (pids, statuses):
        known = {cell: cell_text(out, cell) for cell in set(column)}
        if None in known.values():
            return None
        shown.append([known[cell] for cell in column])  # type: ignore[misc]
    widths = [max(map(len, texts)) for texts in shown]
    if show_header:
        widths = [max(w, len(c.name)) for w, c in zip(widths, COLUMNS, strict=True)]
    if 0 in widths or sum(widths) + TABLE_GAP * (len(widths) - 1) > out.width:
        return None
    w0, w1, w2, w3 = widths
    gap = " " * TABLE_GAP
    fmt = f"%{w0}s{gap}%-{w1}s{gap}%{w2}s{gap}%-{w3}s"
    lines = [fmt % tuple(c.name for c in COLUMNS)] if show_header else []
    lines += [fmt % line for line in zip(*shown, strict=True)]
    return "\n".join(lines) + "\n"


class TableWriter(ReplayWriter):
    """Replayed records as ``replay``'s table: rows from the C formatter where it takes a
    batch, from :func:`cells` for the records it leaves to Python. The C formatter's lines
    wait in ``pending`` (after the Python-made rows of ``columns``, if any) until a whole
    chunk of them is padded by ``format_replay_table`` (_replaytable.c); a chunk it refuses,
    or one holding a row made in Python, goes through :func:`fast_chunk_text` or FitTable."""

    def __init__(self, consumer: ConsumerView, out: Console,
                 cells: Callable[[ReplayedRecord], list[str]], *, chunk: int = CHUNK) -> None:
        super().__init__("jsonl", consumer, _Discard())
        self.mode = 2  # the C formatter's table rows
        self.chunk = chunk
        self.console = out
        self.cells = cells
        self.out = _RowSink(self)  # type: ignore[assignment]
        # offset, timestamp, pid/epoch and status cells of rows not printed yet, before
        # `pending`'s
        self.columns: list[list[str]] = [[], [], [], []]
        self.pending = ""  # OFFSET TIMESTAMP K lines of the C formatter not printed yet
        self.pending_rows = 0
        self.printed = 0
        self._pid_cells = np.empty(0, dtype=object)  # of each template
        self._status_cells = np.empty(0, dtype=object)  # of each template: low, high
        # the same cells as rich shows them, UTF-8 (None: not plain), for the C function
        self._pid_plain: list[bytes | None] = []
        self._status_plain: list[bytes | None] = []
        self._names = "\n".join(c.name for c in COLUMNS).encode()
        self._justify = "".join("r" if c.justify == "right" else "l" for c in COLUMNS).encode()

    def write(self, r: ReplayedRecord) -> None:
        self._take_pending(self.pending_rows)
        for column, cell in zip(self.columns, self.cells(r), strict=True):
            column.append(cell)
        self.count += 1
        self._print_full()

    def add_lines(self, text: str) -> None:
        """Rows of ``OFFSET TIMESTAMP K`` lines written by the C formatter's table mode (the
        timestamp as ``iso_ms`` writes it; K: twice the template, plus 1 from its split
        offset)."""
        if not text:
            return
        self.pending += text
        self.pending_rows += text.count("\n")
        if self.columns[0]:  # the chunk begun in Python is filled from these lines
            self._take_pending(min(self.pending_rows, self.chunk - len(self.columns[0])))
            self._print_full()
        if self.columns[0]:
            return
        chunk = self.chunk
        while self.pending_rows >= chunk:
            self._print_pending(chunk)
        if not self.pending_rows:
            self.pending = ""

    def close(self) -> None:
        if self.columns[0]:
            self._take_pending(self.pending_rows)
            self._print(self.columns)
            self.columns = [[], [], [], []]
        elif self.pending_rows:
            self._print_pending(self.pending_rows)
        self.pending, self.pending_rows = "", 0

    def _print_pending(self, rows: int) -> None:
        """The first ``rows`` lines of ``pending`` printed as one chunk."""
        first = self.printed == 0
        out = self.console
        done = None if _replay_table is None or out.color_system is not None else _replay_table(
            self.pending, 0, rows, self._pid_plain, self._status_plain, self._names,
            self._justify, first, out.width)
        if done is None:
            self._take_pending(rows)
            self._print(self.columns)
            self.columns = [[], [], [], []]
            return
        text, end = done
        self.printed += rows
        self.pending = self.pending[end:]
        self.pending_rows -= rows
        out.file.write(text.decode("utf-8"))

    def _take_pending(self, rows: int) -> None:
        """The first ``rows`` lines of ``pending`` moved to ``columns``."""
        if rows <= 0:
            return
        end = -1
        for _ in range(rows):
            end = self.pending.index("\n", end + 1)
        parts = self.pending[:end + 1].split()
        self.pending = self.pending[end + 1:]
        self.pending_rows -= rows
        cells = _integers(parts[2::3])
        offsets, timestamps, pids, statuses = self.columns
        offsets += parts[0::3]
        timestamps += parts[1::3]
        pids += self._pid_cells[cells >> 1].tolist()
        statuses += self._status_cells[cells].tolist()

    def _print_full(self) -> None:
        chunk = self.chunk
        size = len(self.columns[0])
        if size < chunk:
            return
        columns = self.columns
        for start in range(0, size - chunk + 1, chunk):
            self._print([column[start:start + chunk] for column in columns])
        self.columns = [column[size - size % chunk:] for column in columns]

    def _print(self, columns: list[list[str]]) -> None:
        first = self.printed == 0
        self.printed += len(columns[0])
        text = fast_chunk_text(self.console, columns, show_header=first)
        if text is not None:
            self.console.file.write(text)
            return
        table = FitTable(COLUMNS, show_header=first)
        for row in zip(*columns, strict=True):
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
        k = len(self._pid_cells)
        self._pid_cells = np.append(self._pid_cells, np.array([low[2]], dtype=object))
        self._status_cells = np.append(self._status_cells,
                                       np.array([low[3], high[3]], dtype=object))
        self._pid_plain.append(self._plain(low[2]))
        self._status_plain += [self._plain(low[3]), self._plain(high[3])]
        return Templates(b"", b" ", b"", f" {2 * k}\n".encode(), f" {2 * k + 1}\n".encode(),
                         split, table=True)


    def _plain(self, cell: str) -> bytes | None:
        text = cell_text(self.console, cell)
        return None if text is None else text.encode("utf-8")


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


__all__ = ["CHUNK", "COLUMNS", "TableWriter", "fast_chunk_text"]
