"""A FitTable printed without rich (kafkatx.cli.plain_table) is byte for byte what rich prints.

No Kafka rule here: terminal output. rich stays the definition; the plain writer is proven
equal to it on random tables, and refuses (None) what it cannot write exactly.
"""

from __future__ import annotations

import io
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

from kafkatx.analysis.partition_report import PartitionReport
from kafkatx.analysis.replay_result import Transaction
from kafkatx.cli import render
from kafkatx.cli.lso_cmd import print_table
from kafkatx.cli.output import StdoutLines, stdout_console
from kafkatx.cli.plain_table import plain_table_text
from kafkatx.cli.render import TABLE_GAP, Col, FitTable

CELL = st.one_of(
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=30),
    st.text(alphabet=st.sampled_from("ab :[]\u21b3\u2026\u2212"), max_size=8),
    st.sampled_from(["[green]visible[/]", "[red]aborted[/] (marker 7)", "a:smile:b",
                     "2025-11-21T04:40:00.000Z", "x\ty", "é", "漢字", "[bold]", "-", "",
                     "\u21b3 12", "key=abc\u2026", "[bold red]BAD[/]"]),
)
COLUMNS = st.lists(st.builds(Col, name=st.text(alphabet="abcdef /()", min_size=1, max_size=12),
                             justify=st.sampled_from(["left", "right"]),
                             give_way=st.integers(0, 2), wrap=st.booleans()),
                   min_size=1, max_size=5)


def _rich_text(columns: list[Col], rows: list[list[str]], header: bool, width: int) -> str:
    buf = io.StringIO()
    out = Console(file=buf, soft_wrap=False, width=width, highlight=False)
    table = FitTable(columns, show_header=header)
    for row in rows:
        table.add_row(*row)
    table, _, needed = table.fit(width)
    out.print(table) if needed <= width else out.print(table, width=needed, crop=False)
    return buf.getvalue()


@settings(max_examples=200, deadline=None)
@given(COLUMNS, st.data(), st.booleans(), st.sampled_from([40, 80, 220]))
def test_plain_text_is_riches(columns: list[Col], data: st.DataObject, header: bool,
                              width: int) -> None:
    rows = data.draw(st.lists(st.lists(CELL, min_size=len(columns), max_size=len(columns)),
                              min_size=1, max_size=6))
    out = Console(file=io.StringIO(), soft_wrap=False, width=width, highlight=False)
    plain = plain_table_text(out, columns, rows, show_header=header, gap=TABLE_GAP)
    if plain is not None:
        assert plain == _rich_text(columns, rows, header, width)


def test_it_writes_the_common_tables_and_refuses_colour() -> None:
    columns = [Col("offset", "right"), Col("status", wrap=True)]
    rows = [["1", "[green]visible[/]"], ["12", "[yellow]beyond LSO[/] (pinned by 1@2)"]]
    out = Console(file=io.StringIO(), soft_wrap=False, width=220, highlight=False)
    assert plain_table_text(out, columns, rows, show_header=True, gap=TABLE_GAP) == \
        _rich_text(columns, rows, True, 220)
    coloured = Console(file=io.StringIO(), force_terminal=True, color_system="standard")
    assert plain_table_text(coloured, columns, rows, show_header=True, gap=TABLE_GAP) is None
    wide = [["1", "x" * 300]]
    assert plain_table_text(out, columns, wide, show_header=True, gap=TABLE_GAP) is None


# lso's table as a pipe gets it (kafkatx.cli.lso_cmd.print_table on a StdoutLines): topics,
# log dir labels and paths with markup, backslashes, emoji codes, wide characters or a length
# that makes the table wider than the pipe's 220 columns.
KAFKA_NAME = st.text(alphabet="abxyz019._-", min_size=1, max_size=20)  # as topics are named
NAME = st.one_of(*[KAFKA_NAME] * 6,
                 st.text(alphabet=st.sampled_from("ab-_.[]\\:/ é中"), max_size=14),
                 st.sampled_from(["__transaction_state", "a:smile:b", "x\\", "[bold]t[/]",
                                  "t" * 230]))
OFFSET = st.integers(0, 10**12)
TIMESTAMP = st.integers(-1, 2 * 10**12)
TRANSACTION = st.builds(Transaction, producer_id=st.integers(0, 10**6),
                        producer_epoch=st.integers(0, 32767), first_offset=OFFSET,
                        last_data_offset=OFFSET, first_timestamp=TIMESTAMP,
                        last_timestamp=TIMESTAMP)
REPORT = st.builds(PartitionReport, topic=NAME, partition=st.integers(0, 999), path=NAME,
                   broker=st.none() | NAME, log_start_offset=OFFSET, log_end_offset=OFFSET,
                   high_watermark=st.none() | OFFSET, last_stable_offset=OFFSET,
                   lso_source=st.sampled_from(["open_transaction", "high_watermark",
                                               "log_end_offset"]),
                   records_pending=st.integers(0, 10**6),
                   open_transactions=st.lists(TRANSACTION, max_size=3))
AGES = st.sampled_from(2 * ["ages at: 2026-11-29T03:56:31.775Z (capture time: the evidence's "
                        "newest file time; --now to change)",
                        "ages at: each partition's newest record; --now to change"]
                       + ["ages at: [now] :smile:", "ages at: " + "x" * 230])


def _lso_table(reports: list[PartitionReport], now_ms: int | None, ages: str,
               out: Console | StdoutLines) -> str:
    print_table(reports, now_ms, ages, out)
    return out.file.getvalue()  # type: ignore[union-attr]


@settings(max_examples=150, deadline=None)
@given(st.lists(REPORT, max_size=6), st.none() | TIMESTAMP, AGES)
def test_lso_piped_table_is_riches(reports: list[PartitionReport], now_ms: int | None,
                                   ages: str) -> None:
    """``lso``'s table, "ages at" line and footer on a pipe, written plainly where they can
    be, are the bytes rich's stdout console prints (its own Table, the plain writer off)."""
    plain = _lso_table(reports, now_ms, ages, StdoutLines(io.StringIO()))
    with mock.patch.object(render, "plain_table_text", return_value=None):  # rich's own table
        assert plain == _lso_table(reports, now_ms, ages, stdout_console(io.StringIO()))


def test_lso_piped_table_of_plain_partitions_needs_no_rich() -> None:
    """The other side: partitions named in printable ASCII are written without rich's
    console (and so without importing rich: tests/test_cli_startup.py)."""
    open_txn = Transaction(producer_id=4003, producer_epoch=7, first_offset=19,
                           last_data_offset=31, first_timestamp=10**12, last_timestamp=10**12)
    stuck = PartitionReport(topic="payments", partition=0, path="/d/payments-0",
                            log_end_offset=32, last_stable_offset=19,
                            lso_source="open_transaction", records_pending=13,
                            open_transactions=[open_txn])
    lines = StdoutLines(io.StringIO())
    text = _lso_table([stuck], 10**12 + 90_000, "ages at: 2001-09-09T01:48:10.000Z", lines)
    assert lines._console is None
    assert "4003/7@19 (90s)" in text and "HW unknown for 1 partition(s) (payments-0)" in text


@given(st.text(alphabet=st.sampled_from("ab[]\\/#@ :"), max_size=12) | st.text(max_size=20))
def test_escape_is_riches(text: str) -> None:
    """``render.escape`` (rich not imported where it leaves the text as it is) is rich's."""
    from rich.markup import escape as rich_escape

    assert render.escape(text) == rich_escape(text)
