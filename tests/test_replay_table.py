"""``replay``'s table from the C formatter's rows (``TableWriter``) is the text of the Python
table (``_render_table``: each record classified, chunks of rows rendered by FitTable, plain
or through rich), on consoles of every width, with and without colours, on segments of
batches of every codec, decision and fetch bound (tests/formats/test_record_format.py's
batches), and chunks small enough that a segment spans several; the C function padding a
chunk of the formatter's lines (``format_replay_table``, _replaytable.c) gives
``fast_chunk_text``'s text or refuses where it does; and the C formatter's table mode writes
timestamps as ``iso_ms`` does, refusing what it cannot vouch for."""

from __future__ import annotations

import io

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from kafkatx.analysis.consumer_view import classify
from kafkatx.analysis.timefmt import iso_ms
from kafkatx.cli.plain_table import cell_text
from kafkatx.cli.replay_cmd import _render_table, table_cells
from kafkatx.cli.replay_table import COLUMNS, TableWriter, _replay_table, fast_chunk_text
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


CELLS = ["7/1", "-", "12345678901/32767", "committed", "aborted (beyond HW)", "[bold]open[/]",
         "→ pending", "é", "a:100:b", " lead", "trail ", "x" * 90, "[red]", ":smile:"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 2**63 - 1), st.integers(0, 2**42 - 1),
                          st.integers(0, 7)), min_size=1, max_size=12),
       st.lists(st.sampled_from(CELLS), min_size=4, max_size=4),
       st.lists(st.sampled_from(CELLS), min_size=8, max_size=8),
       st.sampled_from([20, 40, 60, 80, 220]), st.booleans(), st.integers(0, 3),
       st.integers(0, 3))
def test_c_chunk_is_fast_chunk_text(rows: list[tuple[int, int, int]], pids: list[str],
                                    statuses: list[str], width: int, show_header: bool,
                                    before: int, after: int) -> None:
    """format_replay_table pads the chunk's lines as fast_chunk_text pads its cells (and
    refuses exactly where it does), from any start, with lines after the chunk left alone."""
    out = _console(width, False)
    lines = [f"{o} {iso_ms(t)} {k}\n" for o, t, k in rows]
    head = "".join(lines[:1] * before)
    text = head + "".join(lines) + "".join(lines[:1] * after)
    plain = [[None if (c := cell_text(out, cell)) is None else c.encode() for cell in cells]
             for cells in (pids, statuses)]
    done = _replay_table(text, len(head), len(rows), *plain,
                         "\n".join(c.name for c in COLUMNS).encode(), b"rlrl", show_header,
                         width)
    columns = [[str(o) for o, _, _ in rows], [iso_ms(t) for _, t, _ in rows],
               [pids[k >> 1] for _, _, k in rows], [statuses[k] for _, _, k in rows]]
    expected = fast_chunk_text(out, columns, show_header=show_header)
    if expected is None:
        assert done is None
        return
    assert done is not None
    assert done[0].decode() == expected
    assert done[1] == len(text) - len(lines[0]) * after


def test_c_chunk_refuses_what_it_cannot_vouch_for() -> None:
    names, justify = "\n".join(c.name for c in COLUMNS).encode(), b"rlrl"
    cells = [b"7/1"], [b"committed", b"aborted"]
    good = "5 2026-11-29T04:00:00.000Z 1\n"
    assert _replay_table(good, 0, 1, *cells, names, justify, False, 80) is not None
    for lines, rows in [(good, 2), ("5 2026-11-29T04:00:00.000Z 2\n", 1),
                        ("5 :100: 1\n", 1), ("5[ 2026 1\n", 1), ("5 2026 1", 1),
                        ("é 2026 1\n", 1)]:
        assert _replay_table(lines, 0, rows, *cells, names, justify, False, 80) is None
    assert _replay_table(good, 0, 1, [None], cells[1], names, justify, False, 80) is None


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
