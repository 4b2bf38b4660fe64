"""Hostile evidence: every command answers damaged or odd log dirs with a finding or one line.

Never a traceback, never a hang, and the evidence stays as it was (tests/readonly.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.readonly import assert_unchanged, snapshot_tree

ROOT = Path(__file__).resolve().parent.parent
LOGDIR = ROOT / "fixtures" / "logdir"
SEGMENT = "payments-0/00000000000000000000"


def run(*args: str | Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkatx", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def copy_logdir(tmp_path: Path) -> Path:
    target = tmp_path / "logdir"
    shutil.copytree(LOGDIR, target)
    return target


def assert_one_line_error(proc: subprocess.CompletedProcess[str], code: int, *parts: str) -> None:
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("kafkatx: error:")]
    assert len(errors) == 1, proc.stderr
    for part in parts:
        assert part in errors[0]


@pytest.mark.parametrize("command", [["inspect"], ["dump"], ["lso", "--format", "csv"]])
def test_a_fifo_named_as_an_index_is_refused_not_waited_on(tmp_path: Path,
                                                           command: list[str]) -> None:
    """LogLoader#loadSegmentFiles reads only regular files (File::isFile): a FIFO named
    ``<offset>.txnindex`` is one line naming it, not an open that waits for a writer forever."""
    logdir = copy_logdir(tmp_path)
    fifo = logdir / f"{SEGMENT}.txnindex"
    fifo.unlink()
    os.mkfifo(fifo)
    mtime = fifo.stat().st_mtime_ns
    proc = run(command[0], logdir, *command[1:], timeout=60)
    assert_one_line_error(proc, 1, str(fifo), "not a regular file (a FIFO)")
    assert fifo.stat().st_mtime_ns == mtime


def test_a_segment_file_linked_to_a_device_is_refused(tmp_path: Path) -> None:
    """LogLoader#loadSegmentFiles reads only regular files (File::isFile): a ``.timeindex``
    linked to /dev/zero is one line naming it instead of a read that never ends."""
    logdir = copy_logdir(tmp_path)
    link = logdir / f"{SEGMENT}.timeindex"
    link.unlink()
    link.symlink_to("/dev/zero")
    before = snapshot_tree(logdir)
    proc = run("inspect", logdir, "--format", "json", timeout=60)
    assert_one_line_error(proc, 1, str(link), "not a regular file (a character device)")
    assert_unchanged(logdir, before)
