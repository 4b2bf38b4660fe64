"""Scale of output (issue 26 item 6): ``--stuck`` keeps only the partitions whose LSO is behind
the HW in ``inspect``'s and ``lso``'s tables (findings stay in full); more partitions than a
screenful are summed up, the worst first."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.command import kafkatx

ROOT = Path(__file__).resolve().parent.parent
LOGDIR = ROOT / "fixtures" / "logdir"


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return kafkatx(*args, timeout=300)


def table_rows(stdout: str) -> list[str]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("topic "))
    rows = []
    for line in lines[start + 1:]:
        if not re.match(r"\S+\s+\d+\s", line):  # topic, partition: a row of the table
            break
        rows.append(line)
    return rows


@pytest.mark.parametrize("command", ["inspect", "lso"])
def test_stuck_keeps_the_partitions_behind_the_hw(command: str) -> None:
    proc = run(command, LOGDIR, "--stuck")
    assert proc.returncode == 0, proc.stderr
    rows = table_rows(proc.stdout)
    assert len(rows) == 1 and rows[0].split()[:2] == ["payments", "0"], proc.stdout
    everything = run(command, LOGDIR)
    assert len(table_rows(everything.stdout)) > 1
    if command == "inspect":  # the findings stay in full
        assert proc.stdout.split("findings (")[1] == everything.stdout.split("findings (")[1]


def test_more_than_a_screenful_is_summed_up_worst_first(tmp_path: Path) -> None:
    copy = tmp_path / "logdir"
    shutil.copytree(LOGDIR, copy)
    for n in range(60):
        shutil.copytree(LOGDIR / "payments-1", copy / f"bulk-{n}")
    proc = run("inspect", copy)
    assert proc.returncode == 0, proc.stderr
    rows = table_rows(proc.stdout.split("(the most records behind the LSO first):", 1)[1])
    assert len(rows) == 50 and rows[0].split()[:2] == ["payments", "0"]  # the stuck one first
    assert "16 more partition(s) not shown; --all, --stuck or --format json" in proc.stdout
    assert len(table_rows(run("inspect", copy, "--all").stdout)) == 66
