"""--now (issue 26 item 2): ages are measured from the capture time by default (the evidence's
newest file time), said in the header; ``now`` and relative forms are accepted; a --now before
the data is a usage error; file times older than the data fall back to the newest record."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.command import kafkatx

ROOT = Path(__file__).resolve().parent.parent
LOGDIR = ROOT / "fixtures" / "logdir"
FIRST_MS = 1763700360900  # 2025-11-21T04:46:00.900Z: ledger-writer's open transaction starts
NEWEST_MS = 1763700430050  # 2025-11-21T04:47:10.050Z: the newest record of fixtures/logdir
DAY_MS = 86_400_000


def run(*args: str | Path, env_now: str | None = None) -> subprocess.CompletedProcess[str]:
    return kafkatx(*args, env={"KAFKATX_NOW": env_now})


def copy_with_mtime(tmp_path: Path, mtime_ms: int) -> Path:
    target = tmp_path / "logdir"
    shutil.copytree(LOGDIR, target)
    for path in target.rglob("*"):
        os.utime(path, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    return target


def test_the_default_is_the_capture_time_said_in_the_header(tmp_path: Path) -> None:
    captured = NEWEST_MS + DAY_MS  # copied a day after the last write
    copy = copy_with_mtime(tmp_path, captured)
    table = run("inspect", copy)
    assert table.returncode == 0, table.stderr
    assert ("ages at: 2025-11-22T04:47:10.050Z (capture time: the evidence's newest file "
            "time; --now to change)") in table.stdout
    assert "4003/7@19 (24h01m)" in table.stdout  # a day and a minute, not 3s
    doc = json.loads(run("inspect", copy, "--format", "json").stdout)
    assert doc["now"] == {"ms": captured, "source": "capture"}
    assert "ages at: 2025-11-22T04:47:10.050Z" in run("lso", copy).stdout
    # the transaction is a day old at capture: past find-hanging's 15 minutes, lso_pinned
    verify = json.loads(run("verify", copy, "--format", "json").stdout)
    assert "lso_pinned" in {f["kind"] for f in verify["findings"]}


def test_file_times_older_than_the_data_fall_back_to_the_newest_record(tmp_path: Path) -> None:
    copy = copy_with_mtime(tmp_path, FIRST_MS - DAY_MS)  # a copy that lost its file times
    doc = json.loads(run("inspect", copy, "--format", "json").stdout)
    assert doc["now"] == {"ms": None, "source": "data"}
    assert "ages at: each partition's newest record" in run("inspect", copy).stdout


def test_now_and_relative_forms() -> None:
    before = int(time.time() * 1000)
    doc = json.loads(run("inspect", LOGDIR, "--now", "now", "--format", "json").stdout)
    assert doc["now"]["source"] == "given" and before <= doc["now"]["ms"] <= before + 120_000
    doc = json.loads(run("inspect", LOGDIR, "--now", "now-2h", "--format", "json").stdout)
    assert abs(doc["now"]["ms"] - (before - 7_200_000)) < 120_000
    doc = json.loads(run("inspect", LOGDIR, "--now", "90m ago", "--format", "json").stdout)
    assert abs(doc["now"]["ms"] - (before - 5_400_000)) < 120_000
    doc = json.loads(run("inspect", LOGDIR, "--now", "data", "--format", "json").stdout)
    assert doc["now"] == {"ms": None, "source": "data"}
    doc = json.loads(run("inspect", LOGDIR, "--format", "json", env_now="data").stdout)
    assert doc["now"] == {"ms": None, "source": "data"}
    timeline = run("timeline", LOGDIR, "--now", "now", "--format", "jsonl")
    assert timeline.returncode == 0, timeline.stderr


@pytest.mark.parametrize("command", ["inspect", "lso", "verify", "timeline", "groups"])
def test_a_now_before_the_data_is_a_usage_error(command: str) -> None:
    proc = run(command, LOGDIR, "--now", "2025-11-21T03:00:00Z")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert ("is before the newest record of the evidence (2025-11-21T04:47:10.050Z)"
            in proc.stderr)
    assert proc.stdout == ""
    bad = run(command, LOGDIR, "--now", "now-2x")
    assert bad.returncode == 2 and "is not a duration" in bad.stderr
