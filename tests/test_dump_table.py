"""``dump``'s table without rich: the same text rich prints.

rich stays the definition: the table of dump items with records (``dump_cmd._render_tables``)
through the plain writer (``plain_table``, ``_iso_ms``) is the table rich renders for the same
items, on generated segments of every kind of batch, damage and text.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.analysis.dump import DumpFilter, DumpStats, dump
from kafkatx.analysis.timefmt import iso_ms
from kafkatx.cli import dump_cmd, render
from tests.analysis.test_dump_lines import segments


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(-5, 2**42 + 5),
                 st.integers(1_700_000_000_000, 1_800_000_000_000)))
def test_a_records_iso_text_is_iso_ms(ms: int) -> None:
    assert dump_cmd._iso_ms(ms) == iso_ms(ms)


def _table(seg: Path) -> str:
    out = io.StringIO()
    items = dump([str(seg)], DumpFilter(), records=True, stats=DumpStats(), encoded=True)
    with contextlib.redirect_stdout(out):
        dump_cmd._render_tables(items, dump_cmd.stderr_console())
    return out.getvalue()


@settings(max_examples=40, deadline=None)
@given(segments())
def test_dump_tables_are_riches(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        seg = Path(tmp) / "t-0" / "00000000000000000000.log"
        seg.parent.mkdir()
        seg.write_bytes(data)
        fast = _table(seg)
        mp.setattr(render, "plain_table_text", lambda *args, **kwargs: None)
        assert fast == _table(seg)
