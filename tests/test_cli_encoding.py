"""Any terminal encoding works (issue 26 item 9): with ``PYTHONIOENCODING=ascii`` (or latin-1)
``lso`` crashed on "HW−LSO"; every command now prints, with ASCII stand-ins in tables and
backslash escapes elsewhere (still valid JSON)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run(encoding: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONIOENCODING": encoding}
    return subprocess.run([sys.executable, "-m", "kafkatx", *args], capture_output=True,
                          timeout=120, cwd=ROOT, env=env, text=True, encoding="latin-1")


@pytest.mark.parametrize("args", [
    ["lso", "fixtures/logdir"], ["inspect", "fixtures/logdir"], ["verify", "fixtures/logdir"],
    ["timeline", "fixtures/logdir"], ["groups", "fixtures/logdir"], ["cluster", "fixtures/kraft"],
    ["dump", "fixtures/kraft/__cluster_metadata-0"],
    ["replay", "fixtures/logdir", "--topic", "payments", "--partition", "0", "--records",
     "--show-hidden"],
])
def test_an_ascii_terminal_gets_every_table(args: list[str]) -> None:
    proc = run("ascii", *args)
    assert proc.returncode in (0, 1), proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout.isascii()
    if args[0] == "lso":
        assert "HW-LSO" in proc.stdout.splitlines()[0]
    if args[0] == "dump":
        assert "->" in proc.stdout


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_json_stays_json_in_any_encoding(encoding: str) -> None:
    proc = run(encoding, "inspect", "fixtures/logdir", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["partitions"]
