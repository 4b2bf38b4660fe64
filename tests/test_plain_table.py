"""A FitTable printed without rich (kafkatx.cli.plain_table) is byte for byte what rich prints.

No Kafka rule here: terminal output. rich stays the definition; the plain writer is proven
equal to it on random tables, and refuses (None) what it cannot write exactly.
"""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console

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
