"""CLI conventions shared by every command: exit codes, offset ranges, ``--version``.

Usage errors and evidence that cannot be analysed exit 2 (docs/README.md#exit-status).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.command import kafkatx

ROOT = Path(__file__).resolve().parent.parent
LOGDIR = ROOT / "fixtures" / "logdir"


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return kafkatx(*args)


@pytest.mark.parametrize("command", [
    ["dump", LOGDIR / "payments-0"],
    ["replay", LOGDIR, "--topic", "payments", "--partition", "0"],
])
def test_backwards_offset_range_is_a_usage_error(command: list[str | Path]) -> None:
    proc = run(*command, "--from-offset", "10", "--to-offset", "5")
    assert proc.returncode == 2, proc.stderr
    assert "--from-offset 10 is after --to-offset 5" in proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr


@pytest.mark.parametrize("option", ["--from-offset", "--to-offset"])
def test_negative_offset_is_a_usage_error(option: str) -> None:
    proc = run("replay", LOGDIR, "--topic", "payments", "--partition", "0", option, "-1")
    assert proc.returncode == 2 and "-1 is not in the range" in proc.stderr


def test_equal_bounds_are_a_valid_range() -> None:
    proc = run("dump", LOGDIR / "payments-0", "--from-offset", "19", "--to-offset", "19",
               "--format", "jsonl")
    assert proc.returncode == 0, proc.stderr
    assert '"base_offset":19' in proc.stdout


def test_dump_of_only_undecodable_files_fails(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not kafka")
    proc = run("dump", notes, ROOT / "README.md")
    assert proc.returncode == 2
    assert "nothing to decode" in proc.stderr
    assert f"ignoring unknown file {notes}" in proc.stderr


def test_dump_with_one_decodable_file_succeeds(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not kafka")
    proc = run("dump", notes, LOGDIR / "replication-offset-checkpoint")
    assert proc.returncode == 0, proc.stderr
    assert f"ignoring unknown file {notes}" in proc.stderr


def test_version_names_the_supported_kafka_versions() -> None:
    proc = run("--version")
    assert proc.returncode == 0
    first, second = proc.stdout.splitlines()
    assert first.startswith("kafkatx 0.")
    assert "Apache Kafka 0.8 to 4.4" in second and "KIP-890" in second


@pytest.mark.parametrize("command", [
    ["inspect", LOGDIR, "--now"],
    ["timeline", LOGDIR, "--until"],
])
def test_an_epoch_beyond_year_9999_is_a_usage_error(command: list[str | Path]) -> None:
    """Epoch milliseconds past what ISO-8601 (and Kafka's long timestamps as dates) can say
    are refused, not turned into transaction ages of a million days."""
    proc = run(*command, "99999999999999999999")
    assert proc.returncode == 2, proc.stderr
    assert "is after the year 9999" in proc.stderr and "Traceback" not in proc.stderr


def test_a_negative_partition_is_a_usage_error() -> None:
    """TopicPartition numbers are >= 0 (LocalLog#parseTopicPartitionName rejects others)."""
    proc = run("replay", LOGDIR, "--topic", "payments", "--partition", "-1")
    assert proc.returncode == 2 and "-1 is not in the range x>=0" in proc.stderr


# one set of conventions (issue 26 item 5) -----------------------------------------------------


def test_a_mistyped_command_gets_a_suggestion() -> None:
    proc = run("inspct", LOGDIR)
    assert proc.returncode == 2
    assert "No such command 'inspct'. Did you mean 'inspect'?" in proc.stderr
    assert "Did you mean" not in run("zzz", LOGDIR).stderr


def test_global_options_after_the_command() -> None:
    proc = run("lso", LOGDIR, "-v", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == run("-v", "lso", LOGDIR, "--format", "json").stdout


def test_short_flags_mean_the_long_ones(tmp_path: Path) -> None:
    assert run("lso", LOGDIR, "-f", "csv").stdout == run("lso", LOGDIR, "--format", "csv").stdout
    short = run("replay", LOGDIR, "-t", "payments", "-p", "0", "-f", "jsonl")
    long = run("replay", LOGDIR, "--topic", "payments", "--partition", "0", "--format", "jsonl")
    assert short.returncode == 0 and short.stdout == long.stdout
    proc = run("timeline", LOGDIR, "-f", "jsonl", "-o", tmp_path / "t.jsonl")
    assert proc.returncode == 0 and (tmp_path / "t.jsonl").read_text()


def test_shell_completion_knows_commands_and_options() -> None:
    env_run = {"COMP_WORDS": "kafkatx inspect --transaction-t", "COMP_CWORD": "2",
               "_KAFKATX_COMPLETE": "bash_complete"}
    proc = subprocess.run([sys.executable, "-m", "kafkatx"], capture_output=True, text=True,
                          timeout=60, cwd=ROOT, env={**os.environ, **env_run})
    assert "plain,--transaction-timeout-ms" in proc.stdout.splitlines(), proc.stderr
