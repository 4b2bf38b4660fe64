"""`kafkatx replay` as a user runs it on the bundled fixtures."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path

import pytest

from tests.command import kafkatx
from tests.readonly import assert_unchanged, snapshot_tree

ROOT = Path(__file__).resolve().parent.parent
LOGDIR = ROOT / "fixtures" / "logdir"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return kafkatx("replay", *args, columns=200)


def jsonl(*args: str) -> list[dict]:
    proc = run(str(LOGDIR), "--topic", "payments", "--partition", "0", "--format", "jsonl", *args)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_visible_records_follow_the_contract() -> None:
    recs = jsonl()
    assert [r["offset"] for r in recs] == [0, 1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 15, 16, 17, 18]
    r = recs[7]
    assert r == {**r, "offset": 7, "producer_id": 4001, "producer_epoch": 2, "key": "pay-7",
                 "visible": True}
    assert r["headers"] == [{"key": "trace-id", "value": "t0007"}]
    assert json.loads(r["value"])["id"] == 7
    assert "reason" not in r


def test_show_hidden_explains_each_record() -> None:
    hidden = {r["offset"]: r for r in jsonl("--show-hidden") if not r["visible"]}
    assert hidden[9]["reason"] == "aborted" and hidden[9]["abort_marker_offset"] == 13
    assert hidden[9]["transaction_first_offset"] == 9
    assert hidden[19]["reason"] == "beyond_lso"
    assert hidden[19]["pinned_by"] == {"producer_id": 4003, "first_offset": 19}
    assert sorted(hidden) == [9, 10, *range(19, 32)]


def test_read_uncommitted_sees_the_aborted_and_open_data() -> None:
    recs = jsonl("--isolation", "read_uncommitted")
    assert [r["offset"] for r in recs] == [o for o in range(32) if o not in (13, 14)]


def test_as_of_offset() -> None:
    proc = run(str(LOGDIR), "--topic", "payments", "--partition", "0", "--format", "jsonl",
               "--as-of-offset", "13")
    assert proc.returncode == 0
    assert [json.loads(x)["offset"] for x in proc.stdout.splitlines()] == list(range(7))
    assert "last stable offset 7" in proc.stderr


def test_diff_groups_by_transaction() -> None:
    groups = jsonl("--diff")
    assert [(g["reason"], g["producer_id"], g["records"]) for g in groups] == [
        ("aborted", 4002, 2), ("beyond_lso", 4003, 3), ("beyond_lso", -1, 2),
        ("beyond_lso", 5000, 8)]
    proc = run(str(LOGDIR), "--topic", "payments", "--partition", "0", "--diff")
    assert "2 aborted, 13 beyond_lso" in proc.stderr
    assert "ABORT at 13" in proc.stdout


def test_csv() -> None:
    proc = run(str(LOGDIR), "--topic", "payments", "--partition", "0", "--format", "csv",
               "--show-hidden")
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert len(rows) == 30
    aborted = [r for r in rows if r["reason"] == "aborted"]
    assert [r["offset"] for r in aborted] == ["9", "10"] and aborted[0]["visible"] == "false"


def test_table_and_header() -> None:
    proc = run(str(LOGDIR), "--topic", "payments", "--partition", "0", "--show-hidden",
               "--records")
    assert proc.returncode == 0
    assert "aborted (marker 13)" in proc.stdout and "key=" not in proc.stdout
    assert "refund-9" in proc.stdout
    assert "last stable offset 19, held by the open transaction of producer 4003" in proc.stderr


def test_unknown_partition_is_one_line_exit_2() -> None:
    proc = run(str(LOGDIR), "--topic", "nope", "--partition", "3")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "kafkatx: error: no partition nope-3 under the given paths"


def test_missing_required_option_is_usage_error() -> None:
    proc = run(str(LOGDIR), "--topic", "payments")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


@pytest.mark.parametrize("extra", [[], ["--show-hidden", "--index-source", "rebuild"], ["--diff"]])
def test_replay_changes_nothing(extra: list[str]) -> None:
    before = snapshot_tree(LOGDIR)
    proc = run(str(LOGDIR), "--topic", "payments", "--partition", "0", *extra)
    assert proc.returncode == 0, proc.stderr
    assert_unchanged(LOGDIR, before)
