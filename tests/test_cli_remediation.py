"""Remediation as numbered steps (issue 26 item 3): one whole command a line, the tool's name
and --bootstrap-server every time; one plan per transaction however many copies hold it, with
an export file of its own per copy; the same steps in JSON as a list."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

from tests.command import kafkatx

ROOT = Path(__file__).resolve().parent.parent
HANGING = Path("fixtures/served/hanging")


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return kafkatx(*args)


def plan(stdout: str) -> list[str]:
    """The numbered steps under the first multi-step ``remediation:`` line."""
    lines = stdout.splitlines()
    start = lines.index("        remediation:")
    steps = []
    for line in lines[start + 1:]:
        if not line.startswith("          "):
            break
        steps.append(line.strip())
    return steps


def test_a_committed_hanging_transaction_is_numbered_whole_commands() -> None:
    proc = run("inspect", HANGING)
    assert proc.returncode == 0, proc.stderr
    steps = plan(proc.stdout)
    numbered = [s for s in steps if re.match(r"\d+\. ", s)]
    commands = [s for s in steps if not re.match(r"\d+\. ", s)]
    assert [s.split(".")[0] for s in numbered] == ["1", "2", "3", "4"]
    assert len(commands) == 4
    assert commands[0].startswith(f"kafkatx dump {HANGING}/payments-0/*.log ")
    for command in commands[1:]:
        assert command.startswith("kafka-transactions.sh --bootstrap-server <broker:9092> ")
    assert [c.split()[3] for c in commands[1:]] == ["find-hanging", "describe-producers",
                                                   "abort"]
    doc = json.loads(run("inspect", HANGING, "--format", "json").stdout)
    hanging = next(f for f in doc["findings"] if f["kind"] == "hanging_transaction")
    assert [s["command"] for s in hanging["remediation_steps"]] == commands
    assert hanging["remediation"].startswith("export the records first: kafkatx dump ")


def test_one_plan_for_a_transaction_held_by_several_copies(tmp_path: Path) -> None:
    for broker in ("broker-1", "broker-2"):
        shutil.copytree(ROOT / HANGING, tmp_path / broker)
    proc = run("inspect", tmp_path, "--all")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("        remediation:\n") == 1  # one plan, not one per copy
    steps = plan(proc.stdout)
    exports = [s for s in steps if s.startswith("kafkatx dump ")]
    aborts = [s for s in steps if " abort " in s and not re.match(r"\d+\. ", s)]
    assert len(exports) == 1 and len(aborts) == 1, steps  # one plan, not one per copy
    doc = json.loads(run("inspect", tmp_path, "--format", "json").stdout)
    held = [f for f in doc["findings"] if f["kind"] == "hanging_transaction"]
    assert len(held) == 1
    # each copy inspected on its own exports to a file of its own
    files = set()
    for broker in ("broker-1", "broker-2"):
        alone = json.loads(run("inspect", tmp_path / broker, "--format", "json").stdout)
        [hanging] = [f for f in alone["findings"] if f["kind"] == "hanging_transaction"]
        files.add(hanging["remediation_steps"][0]["command"].rsplit("> ", 1)[1])
    assert files == {"payments-0-txn-0-0-broker-1.jsonl", "payments-0-txn-0-0-broker-2.jsonl"}


def test_a_single_command_stays_on_its_remediation_line() -> None:
    proc = run("inspect", ROOT / "fixtures" / "logdir")
    assert ("        remediation: kafka-transactions.sh --bootstrap-server <broker:9092> abort "
            "--topic payments --partition 0 --start-offset 19") in proc.stdout.splitlines()
    doc = json.loads(run("inspect", ROOT / "fixtures" / "logdir", "--format", "json").stdout)
    hanging = next(f for f in doc["findings"] if f["kind"] == "hanging_transaction")
    assert hanging["remediation_steps"] == [{
        "what": "abort it", "command": "kafka-transactions.sh --bootstrap-server "
        "<broker:9092> abort --topic payments --partition 0 --start-offset 19"}]
