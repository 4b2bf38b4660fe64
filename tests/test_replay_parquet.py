"""``replay -o DIR``: records.parquet from the C extension's columns is the table the
per-record path writes (``record_row`` of each replayed record), and the text printed beside
it is unchanged."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.analysis.consumer_view import ConsumerView, ReplayedRecord, classify
from kafkatx.cli import replay_parquet
from kafkatx.cli.main import cli
from kafkatx.cli.replay_parquet import ParquetRecords
from kafkatx.cli.replay_writer import ReplayWriter
from kafkatx.engines.tables import record_row, records_table
from kafkatx.formats.batchscan import HeaderColumns
from kafkatx.semantics.read_committed import DECISIONS
from tests.formats.test_record_decode import damaged
from tests.formats.test_record_format import _exact, batches, segment_case

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _python_records(data: bytes, headers: HeaderColumns, rows: list[int], codes: list[int],
                    beyond: list[bool], lo: int, hi: int | None, view: ConsumerView
                    ) -> tuple[list[ReplayedRecord], bool]:
    """What replay_segment yields for batches left to Python; whether it stopped."""
    out = []
    for j, code, past in zip(rows, codes, beyond, strict=True):
        for rec in _exact(data[int(headers.position[j]):]) or []:
            if rec.offset < lo:
                continue
            if hi is not None and rec.offset > hi:
                return out, True
            out.append(classify(rec, 7, 1, True, DECISIONS[code], past, view, None, None))
    return out, False


def test_the_extension_has_record_columns() -> None:
    assert replay_parquet._record_columns is not None, "pip install -e . rebuilds it"


parts = st.lists(st.one_of(batches(), st.tuples(
    batches(), st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), max_size=3),
    st.one_of(st.none(), st.integers(-1, 12))).map(lambda b: damaged(*b))),
    min_size=1, max_size=6)


@settings(max_examples=300, deadline=None)
@given(parts, st.sampled_from(["jsonl", "csv"]), st.integers(1, 12), st.data())
def test_columns_write_the_table_the_records_did(tmp_path_factory: pytest.TempPathFactory,
                                                 segment: list[bytes], fmt: str, row_group: int,
                                                 draw: st.DataObject) -> None:
    """Every codec, headers, nulls, text and binary, control batches, aborted and beyond the
    HW or LSO, damaged batches: the C columns, their compressed and left-over batches, row
    groups cut anywhere (``ROW_GROUP``), against ``record_row`` of the Python records."""
    data, headers, codes, beyond, lo, hi, view = segment_case(segment, draw)
    n = len(headers)
    rows = np.arange(n)
    target = tmp_path_factory.mktemp("pq") / "out"
    fast_text, slow_text = io.StringIO(), io.StringIO()
    printer = ReplayWriter(fmt, view, fast_text)
    old_group = replay_parquet.ROW_GROUP
    replay_parquet.ROW_GROUP = row_group
    try:
        with ParquetRecords(str(target)) as out:
            run = out.tee_formatter(printer.segment, view)(
                data, headers, rows, codes, beyond, lo, hi, "f")
            step = draw.draw(st.integers(1, 6))  # replay_segment's ROWS_AT_ONCE
            i = 0
            while i < n:
                end = min(i + step, n)
                i, stopped = run(i, end)
                if stopped:
                    break
                if i == end:
                    continue
                records, stopped = _python_records(data, headers, [i], [int(codes[i])],
                                                   [bool(beyond[i])], lo, hi, view)
                for r in records:
                    out.add(r)
                    printer.write(r)
                if stopped:
                    break
                i += 1
    finally:
        replay_parquet.ROW_GROUP = old_group
    printer.close()
    want, _ = _python_records(data, headers, rows.tolist(), codes.tolist(), beyond.tolist(), lo,
                              hi, view)
    slow = ReplayWriter(fmt, view, slow_text)
    for r in want:
        slow.write(r)
    slow.close()
    assert fast_text.getvalue() == slow_text.getvalue()
    got = pq.read_table(target / "records.parquet")
    expected = records_table(record_row(r.to_dict()) for r in want)
    assert got.schema.equals(expected.schema)
    assert got.to_pylist() == expected.to_pylist()


def test_replay_output_holds_the_jsonl_records(tmp_path: Path) -> None:
    """End to end on a log dir with aborted and committed transactions: the Parquet rows are
    the jsonl objects (``record_row``), in order, whatever the printed format."""
    args = ["replay", str(FIXTURES / "logdir"), "--topic", "payments", "--partition", "0",
            "--show-hidden"]
    jsonl = CliRunner().invoke(cli, [*args, "--format", "jsonl"])
    assert jsonl.exit_code == 0, jsonl.output
    lines = [json.loads(line) for line in jsonl.stdout.splitlines()]
    assert {d["visible"] for d in lines} == {True, False}
    expected = records_table(record_row(d) for d in lines).to_pylist()
    for k, fmt in enumerate(["jsonl", "table"]):
        result = CliRunner().invoke(cli, [*args, "--format", fmt, "-o", str(tmp_path / str(k))])
        assert result.exit_code == 0, result.output
        assert pq.read_table(tmp_path / str(k) / "records.parquet").to_pylist() == expected
    assert result.stdout == CliRunner().invoke(cli, args).stdout
