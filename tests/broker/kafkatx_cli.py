"""kafkatx's own commands on a log dir written by ``kafkatx serve``, run through the CLI
(in this process: the interpreter start-up and imports would cost more than the commands)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from kafkatx.cli.main import cli


@dataclass
class _Run:
    returncode: int
    stdout: bytes
    stderr: bytes


def run_cli(*args: str) -> _Run:
    """``kafkatx ARGS...``: exit status, stdout and stderr bytes."""
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return _Run(result.exit_code, result.stdout_bytes, result.stderr_bytes)


def replay_visible(log_dir: Path, topic: str, partition: int,
                   isolation: str = "read_committed") -> list[tuple[int, bytes]]:
    """(offset, value) of every record ``kafkatx replay --format jsonl`` says a consumer gets."""
    run = run_cli("replay", str(log_dir), "--topic", topic, "--partition", str(partition),
               "--isolation", isolation, "--format", "jsonl")
    assert run.returncode == 0, run.stderr.decode()
    out = []
    for line in run.stdout.decode().splitlines():
        item = json.loads(line)
        assert item["visible"] is True and "value_encoding" not in item, item
        out.append((item["offset"], item["value"].encode()))
    return out


def lso_rows(path: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """``kafkatx lso --format json`` by (topic, partition)."""
    run = run_cli("lso", "--format", "json", str(path))
    assert run.returncode == 0, run.stderr.decode()
    return {(r["topic"], r["partition"]): r for r in json.loads(run.stdout)}


def verify(path: Path) -> dict[str, Any]:
    """``kafkatx verify --format json`` (the document, whatever the exit status)."""
    run = run_cli("verify", "--format", "json", str(path))
    doc: dict[str, Any] = json.loads(run.stdout)
    assert run.returncode == (0 if doc["ok"] else 1), run.stderr.decode()
    return doc


def finding_kinds(doc: dict[str, Any]) -> set[tuple[str, str]]:
    """(kind, topic) of every finding of a verify/inspect document."""
    return {(f["kind"], f["topic"]) for f in doc["findings"]}
