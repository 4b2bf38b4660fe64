"""``replay``'s table from the C formatter's rows (``TableWriter``) is the text of the Python
table (``_render_table``: each record classified, chunks of rows rendered by FitTable, plain
or through rich), on consoles of every width, with and without colours, on segments of
batches of every codec, decision and fetch bound (tests/formats/test_record_format.py's
batches), and chunks small enough that a segment spans several; and the C formatter's
table mode writes timestamps as ``iso_ms`` does, refusing what it cannot vouch for."""

from __future__ import annotations

import io

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from kafkatx.analysis.consumer_view import classify
from kafkatx.analysis.timefmt import iso_ms
from kafkatx.cli.replay_cmd import _render_table, table_cells
from kafkatx.cli.replay_table import TableWriter
from kafkatx.formats.batchscan import scan_v2_run
from kafkatx.formats.record_batch import Record, build_batch
from kafkatx.formats.record_format import Templates, format_batch
from kafkatx.semantics.read_committed import DECISIONS
from tests.formats.test_record_format import _exact, batches, segment_case


def _console(width: int, colour: bool) -> Console:
    return Console(file=io.StringIO(), width=width, color_system="truecolor" if colour else None,
                   force_terminal=colour, no_color=not colour, highlight=False)


@settings(max_examples=300, deadline=None)
@given(st.lists(batches(), min_size=1, max_size=6), st.data())
def test_table_rows_from_the_formatter_print_as_the_python_table(parts: list[bytes],
                                                                  draw: st.DataObject) -> None:
    data, headers, codes, beyond, lo, hi, view = segment_case(parts, draw)
    n = len(headers)
    rows = np.arange(n)
    width = draw.draw(st.sampled_from([20, 40, 60, 80, 220]))
    colour = draw.draw(st.booleans())
    chunk = draw.draw(st.sampled_from([1, 3, 7, 500]))
    fast_out, slow_out = _console(width, colour), _console(width, colour)
    fast = TableWriter(view, fast_out, table_cells, chunk=chunk)

    def python_records(batch_rows: list[int]) -> list:  # what replay_segment decodes itself
        out = []
        for j in batch_rows:
            for rec in _exact(data[int(headers.position[j]):]) or []:
                if rec.offset < lo:
                    continue
                if hi is not None and rec.offset > hi:
                    return [*out, None]
                out.append(classify(rec, 7, 1, True, DECISIONS[int(codes[j])],
                                    bool(beyond[j]), view, None, None))
        return out

    run = fast.segment(data, headers, rows, codes, beyond, lo, hi, "f")
    i = 0
    while i < n:
        i, stopped = run(i, n)
        if stopped or i >= n:
            break
        left = python_records([i])
        for r in left:
            if r is not None:
                fast.write(r)
        if left and left[-1] is None:
            break
        i += 1
    fast.close()
    slow = [r for r in python_records(rows.tolist()) if r is not None]
    _render_table(slow, records=False, out=slow_out, chunk=chunk)
    assert fast.count == len(slow)
    assert fast_out.file.getvalue() == slow_out.file.getvalue()


@settings(max_examples=500, deadline=None)
@given(st.lists(st.one_of(st.integers(-2**62, 2**62), st.integers(-5, 2**43),
                          st.sampled_from([0, 2**42 - 1, 2**42, 951782400000, 4107542399999])),
                min_size=1, max_size=20))
def test_table_mode_timestamps_are_iso_ms(timestamps: list[int]) -> None:
    """The C formatter's table mode writes each timestamp as ``iso_ms`` does, or refuses the
    batch (left to the Python table) when one is outside what it vouches for."""
    records = [Record(offset=k, timestamp=t, key=None, value=None)
               for k, t in enumerate(timestamps)]
    data = build_batch(records, producer_id=7, producer_epoch=1, base_sequence=0)
    headers, _, _ = scan_v2_run(data, 0, len(data))
    out = format_batch(data, headers, 0, Templates(b"", b" ", b"", b"\n", b"\n", table=True))
    if not all(0 <= t < 2**42 for t in timestamps):
        assert out is None
        return
    assert out is not None
    assert out.text == "".join(f"{k} {iso_ms(t)}\n" for k, t in enumerate(timestamps))


def test_no_emoji_name_is_two_digits() -> None:
    """What fast_chunk_text relies on to show ISO timestamps (``T12:34:56``) unchecked."""
    from rich._emoji_codes import EMOJI

    assert not [name for name in EMOJI if len(name) == 2 and name.isdigit()]
