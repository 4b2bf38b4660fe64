"""Exit statuses and errors as scripts read them (docs/README.md#exit-status): 0 nothing at
error level, 1 error findings, 2 a usage error or evidence that cannot be analysed, 3 an
internal error; with --format json/jsonl the error is also a JSON object on stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.command import kafkatx

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures"
LOGDIR = FIX / "logdir"


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return kafkatx(*args, timeout=300)


def error_of(proc: subprocess.CompletedProcess[str], status: int) -> dict[str, object]:
    assert proc.returncode == status, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    doc = json.loads(proc.stdout)
    assert set(doc) == {"error"}, doc
    error: dict[str, object] = doc["error"]
    assert error["exit_status"] == status and error["message"]
    assert str(error["message"]).splitlines()[0] in proc.stderr  # the same line on stderr
    return error


@pytest.mark.parametrize("command", ["verify", "inspect", "lso", "groups"])
def test_a_file_given_as_evidence_exits_2_with_a_json_error(command: str) -> None:
    error = error_of(run(command, LOGDIR / "meta.properties", "--format", "json"), 2)
    assert error["kind"] == "evidence" and error["path"] == str(LOGDIR / "meta.properties")


def test_an_empty_dir_exits_2_not_1_as_error_findings_do(tmp_path: Path) -> None:
    error = error_of(run("verify", tmp_path, "--format", "json"), 2)
    assert error["kind"] == "evidence" and "no Kafka data" in str(error["message"])
    assert run("verify", tmp_path).returncode == 2
    assert run("verify", LOGDIR).returncode == 1  # the hanging transaction: an error finding
    assert run("verify", FIX / "legacy").returncode == 0


def test_usage_errors_are_json_too() -> None:
    error = error_of(run("inspect", "--now", "yesterday", LOGDIR, "--format=json"), 2)
    assert error["kind"] == "usage" and "--now" in str(error["message"])
    error = error_of(run("lso", "no/such/dir", "--format", "json"), 2)
    assert error["kind"] == "usage" and error["path"] == "no/such/dir"
    line = run("timeline", "no/such/dir", "--format", "jsonl")
    assert line.returncode == 2 and len(line.stdout.splitlines()) == 1
    assert json.loads(line.stdout)["error"]["kind"] == "usage"
    plain = run("lso", "no/such/dir")
    assert plain.returncode == 2 and plain.stdout == ""  # tables: stderr only


def test_dump_names_the_file_it_cannot_read_inside_its_json(tmp_path: Path) -> None:
    fifo = tmp_path / "t-0" / "00000000000000000000.index"
    fifo.parent.mkdir()
    os.mkfifo(fifo)
    proc = run("dump", fifo.parent, "--format", "json")
    assert proc.returncode == 2, proc.stderr
    [item] = json.loads(proc.stdout)
    assert item["kind"] == "error" and item["error"]["kind"] == "evidence"
    assert str(fifo) in item["error"]["message"]


def test_an_internal_error_exits_3_with_a_json_error() -> None:
    """A bug of kafkatx (here a command raising what no command raises on purpose)."""
    code = ("import sys\nimport click\nfrom kafkatx.cli import main\n"
            "@click.command('boom')\n@click.option('--format')\ndef boom(format):\n"
            "    raise RuntimeError('boom')\n"
            "main.cli.get_command = lambda ctx, name: boom\n"
            "main.COMMANDS['boom'] = ('', '', 'boom')\n"
            "main.main(['boom', '--format', 'json'])\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    error = error_of(proc, 3)
    assert error["kind"] == "internal" and error["message"] == "RuntimeError: boom"
    assert "please report it" in proc.stderr
