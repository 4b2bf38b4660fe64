"""``dump``'s table without rich: the same text rich prints.

rich stays the definition: the table of dump items with records (``dump_cmd._render_tables``)
through the plain writer (``plain_table``, ``_iso_ms``), and through the C function's padded
chunks (``_dumpfmt.c``'s ``format_dump_table``), is the table rich renders for the same items,
on generated segments of every kind of batch, damage, text and filter, in chunks of any size.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.analysis import dump_lines
from kafkatx.analysis.dump import DumpFilter, DumpStats, dump
from kafkatx.analysis.timefmt import iso_ms
from kafkatx.cli import dump_cmd, render
from kafkatx.cli.output import stderr_console
from tests.analysis.test_dump_lines import FIXTURES, filters, segments


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.integers(-(2**63), 2**63 - 1), st.integers(-5, 2**42 + 5),
                 st.integers(1_700_000_000_000, 1_800_000_000_000)))
def test_a_records_iso_text_is_iso_ms(ms: int) -> None:
    assert dump_cmd._iso_ms(ms) == iso_ms(ms)


def _table(seg: Path | list[str], flt: DumpFilter | None = None, *,
           table_runs: bool = False, utf8_stream: bool = False) -> str:
    """The table on a text stream; ``utf8_stream``: a UTF-8 one over bytes (the C chunks
    then go to its buffer as bytes, as onto stdout)."""
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8") if utf8_stream else io.StringIO()
    paths = seg if isinstance(seg, list) else [str(seg)]
    items = dump(paths, flt or DumpFilter(), records=True, stats=DumpStats(), encoded=True,
                 table_runs=table_runs)
    with contextlib.redirect_stdout(out):
        dump_cmd._render_tables(items, stderr_console())
    if isinstance(out, io.TextIOWrapper):
        out.flush()
        return raw.getvalue().decode()
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


def _counting_c_chunks(mp: pytest.MonkeyPatch) -> list[int]:
    """A list that gets an entry per chunk the C function writes."""
    written: list[int] = []
    table_text = dump_lines.TableRun.table_text

    def counted(self: dump_lines.TableRun, *args: object) -> str | None:
        text = table_text(self, *args)  # type: ignore[arg-type]
        if text is not None:
            written.append(1)
        return text

    mp.setattr(dump_lines.TableRun, "table_text", counted)
    return written


@settings(max_examples=150, deadline=None)
@given(segments(), filters, st.integers(1, 6), st.sampled_from([4096, 1 << 24]))
def test_c_chunks_are_riches(data: bytes, flt: DumpFilter, chunk: int, window: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        seg = Path(tmp) / "t-0" / "00000000000000000000.log"
        seg.parent.mkdir()
        seg.write_bytes(data)
        mp.setattr(dump_cmd, "TABLE_CHUNK", chunk)
        mp.setattr(dump_lines, "WINDOW", window)
        fast = _table(seg, flt, table_runs=True)
        mp.setattr(render, "plain_table_text", lambda *args, **kwargs: None)
        assert fast == _table(seg, flt)


def test_fixture_tables_from_c_chunks_are_riches(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundled log dirs of data, damage, legacy entries and real Kafka's (markers,
    internal topics, indexes between), chunks of 3 and small windows: rich's text, the data
    segments' runs of batches written by the C function."""
    monkeypatch.setattr(dump_cmd, "TABLE_CHUNK", 3)
    monkeypatch.setattr(dump_lines, "WINDOW", 4096)
    paths = [str(FIXTURES / d) for d in ("logdir", "corrupt", "legacy", "realkafka")]
    written = _counting_c_chunks(monkeypatch)
    fast = _table(paths, table_runs=True, utf8_stream=True)
    assert len(written) >= 5
    monkeypatch.setattr(render, "plain_table_text", lambda *args, **kwargs: None)
    assert fast == _table(paths, utf8_stream=True)
    assert "\u21b3" in fast


def test_a_file_given_twice_keeps_one_table(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same segment given twice (and again after another file) is one table going on,
    as rich's: its last chunk then does not end with the file, in C or in Python."""
    monkeypatch.setattr(dump_cmd, "TABLE_CHUNK", 4)
    monkeypatch.setattr(dump_lines, "WINDOW", 4096)
    seg = str(FIXTURES / "logdir" / "payments-1" / "00000000000000000000.log")
    other = str(FIXTURES / "logdir" / "payments-0" / "00000000000000000000.log")
    paths = [seg, seg, other, seg]
    written = _counting_c_chunks(monkeypatch)
    fast = _table(paths, table_runs=True, utf8_stream=True)
    assert written
    monkeypatch.setattr(render, "plain_table_text", lambda *args, **kwargs: None)
    assert fast == _table(paths, utf8_stream=True)
    assert fast.count(f"{seg} (batch)") == 2


# Keys, values and headers of what rich may read as markup or an emoji code (":smile:",
# ":+1:", "a:b c:d", "[x]", a trailing space), where the C function's check of a cell decides.
_RICH_TEXT = st.lists(st.sampled_from([*":a1_+-. [x]", "smile", "+1", ":smile:", ":+1:",
                                        "thumbs_up", ":12:"]),
                      max_size=6).map(lambda parts: "".join(parts).encode())


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.tuples(_RICH_TEXT, _RICH_TEXT, _RICH_TEXT), min_size=1,
                         max_size=4), min_size=1, max_size=6))
def test_c_cells_rich_would_change_are_riches(batches: list[list[tuple[bytes, ...]]]) -> None:
    from kafkatx.formats.record_batch import Record, build_batch

    data, offset = b"", 0
    for cells in batches:
        records = [Record(offset=offset + i, timestamp=1_763_700_000_000 + i, key=key,
                          value=value, headers=(("h", header),))
                   for i, (key, value, header) in enumerate(cells)]
        data += build_batch(records)
        offset += len(records)
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        seg = Path(tmp) / "t-0" / "00000000000000000000.log"
        seg.parent.mkdir()
        seg.write_bytes(data)
        mp.setattr(dump_cmd, "TABLE_CHUNK", 2)
        fast = _table(seg, table_runs=True)
        mp.setattr(render, "plain_table_text", lambda *args, **kwargs: None)
        assert fast == _table(seg)
