"""``replay`` and ``dump`` in a real terminal: a progress bar on stderr while the records
stream into a file or a pipe, never when they come to the terminal itself (issue 26 item 7).

``KAFKATX_PROGRESS_AFTER_S=0`` draws the bar at once (it waits half a second otherwise, longer
than these fixtures take).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.terminal import ROOT, run_in_terminal

PARTITION = ROOT / "fixtures" / "logdir" / "payments-0"
NOW = {"KAFKATX_PROGRESS_AFTER_S": "0"}
COMMANDS = {
    "replaying": ["replay", str(PARTITION.parent), "-t", "payments", "-p", "0", "-f", "jsonl",
                  "--show-hidden"],
    "decoding": ["dump", "--records", "-f", "jsonl", str(PARTITION)],
}


def _piped(args: list[str]) -> bytes:
    return subprocess.run([sys.executable, "-m", "kafkatx", *args], cwd=ROOT, check=True,
                          capture_output=True, env={**os.environ, **NOW}).stdout


@pytest.mark.parametrize("verb", sorted(COMMANDS))
def test_the_bar_shows_on_a_terminal_stderr_and_the_records_are_whole(
        verb: str, tmp_path: Path) -> None:
    out = tmp_path / "records.jsonl"
    status, terminal, _ = run_in_terminal(COMMANDS[verb], 100, env=NOW, stdout_to=out)
    assert status == 0, terminal
    assert f"{verb} payments-0" in terminal  # the bar, with the partition (dir) it reads
    assert out.read_bytes() == _piped(COMMANDS[verb])  # no bar in the records
    assert out.read_bytes().count(b"\n") > 5


@pytest.mark.parametrize("verb", sorted(COMMANDS))
def test_no_bar_when_the_records_come_to_the_terminal(verb: str) -> None:
    status, terminal, _ = run_in_terminal(COMMANDS[verb], 100, env=NOW, stderr_too=True)
    assert status == 0, terminal
    assert verb not in terminal
    assert '"offset":' in terminal


def test_no_bar_in_pipes() -> None:
    done = subprocess.run([sys.executable, "-m", "kafkatx", *COMMANDS["replaying"]], cwd=ROOT,
                          check=True, capture_output=True, text=True, env={**os.environ, **NOW})
    assert "replaying" not in done.stderr
