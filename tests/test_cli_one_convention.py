"""One set of conventions on every command (issue 26 item 5): the same ``--format`` choices
(a format a command has no form for is a one-line usage error, exit 2), ``-o/--output PATH``
whose suffix says the format, one option name per concept, examples in every ``--help``, and
``serve``'s log lines in UTC, said so."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from kafkatx.cli.main import COMMANDS
from tests.broker.serve_process import ServeProcess
from tests.test_cli_conventions import LOGDIR, ROOT, run

ANALYSES = ["inspect", "lso", "verify", "groups", "timeline"]


@pytest.mark.parametrize("command", sorted(set(COMMANDS) - {"serve"}))  # serve prints no result
def test_every_command_takes_the_same_format_choices(command: str) -> None:
    text = " ".join(run(command, "--help").stdout.split())
    (choices,) = re.findall(r"-f, --format \[([a-z|]+)\]", text)
    assert choices.split("|") == ["table", "json", "jsonl", "csv"] + (
        ["html"] if command == "timeline" else [])


@pytest.mark.parametrize(("argv", "fmt"), [
    (["inspect", LOGDIR], "csv"), (["inspect", LOGDIR], "jsonl"), (["dump", LOGDIR], "csv"),
    (["replay", LOGDIR, "-t", "payments", "-p", "0"], "json"), (["timeline", LOGDIR], "csv"),
    (["cluster", ROOT / "fixtures" / "kraft"], "csv"),
])
def test_a_format_with_no_form_is_a_one_line_usage_error(argv: list, fmt: str) -> None:
    proc = run(*argv, "-f", fmt)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and f"--format {fmt} does not apply to kafkatx {argv[0]}" in lines[0]
    if fmt == "json":  # scripts asking for JSON get the error as JSON too
        assert json.loads(proc.stdout)["error"]["exit_status"] == 2


@pytest.mark.parametrize("command", ["lso", "groups", "verify"])
def test_jsonl_is_json_one_item_a_line(command: str) -> None:
    whole = run(command, LOGDIR, "--now", "data", "-f", "json")
    lines = run(command, LOGDIR, "--now", "data", "-f", "jsonl")
    assert whole.returncode == lines.returncode and whole.returncode in (0, 1)
    items = json.loads(whole.stdout)
    items = items["findings"] if command == "verify" else items
    assert [json.loads(line) for line in lines.stdout.splitlines()] == [
        {**i, "view": "as_found"} if command == "verify" else i for i in items]


def test_timeline_json_is_its_jsonl_as_one_array() -> None:
    whole = run("timeline", LOGDIR, "--now", "data", "-f", "json")
    lines = run("timeline", LOGDIR, "--now", "data", "-f", "jsonl")
    assert json.loads(whole.stdout) == [json.loads(x) for x in lines.stdout.splitlines()]


@pytest.mark.parametrize("command", ["lso", "verify", "inspect", "timeline"])
def test_output_suffix_says_the_format(command: str, tmp_path: Path) -> None:
    """``-o FILE.json`` writes what ``-f json`` prints; the table is FILE.txt; a --format
    that contradicts the suffix is a usage error and nothing is written."""
    target = tmp_path / "out.json"
    proc = run(command, LOGDIR, "--now", "data", "-o", target)
    assert proc.returncode in (0, 1) and proc.stdout == "", proc.stderr
    assert f"wrote {target}" in proc.stderr
    printed = run(command, LOGDIR, "--now", "data", "-f", "json").stdout
    assert json.loads(target.read_text()) == json.loads(printed)
    table = tmp_path / "out.txt"
    assert run(command, LOGDIR, "--now", "data", "-o", table).returncode in (0, 1)
    assert table.read_text() == run(command, LOGDIR, "--now", "data").stdout
    clash = run(command, LOGDIR, "-f", "table", "-o", tmp_path / "x.json")
    assert clash.returncode == 2 and "--output" in clash.stderr
    assert not (tmp_path / "x.json").exists()


def test_parquet_output_is_a_directory_beside_the_table(tmp_path: Path) -> None:
    target = tmp_path / "inspect.parquet"
    proc = run("inspect", LOGDIR, "--now", "data", "-o", target)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("kafkatx inspect")
    assert sorted(p.name for p in target.iterdir()) == ["findings.parquet",
                                                        "partitions.parquet"]


def test_txn_partition_names_as_the_other_commands() -> None:
    """--transactional-id ID as timeline's, --group NAME as groups', the partition counts as
    --transaction-state-partitions (the analyses' name) and --consumer-offsets-partitions."""
    def placed(*args: str) -> dict:
        proc = run("txn-partition", *args, "-f", "json")
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    assert placed("--transactional-id", "TesttranId") == placed("TesttranId")
    assert placed("TesttranId", "--transaction-state-partitions", "7")["partition"] == (
        368658648 % 7)
    group = placed("--group", "payments-app", "--consumer-offsets-partitions", "50")
    assert (group["topic"], group["partition"]) == ("__consumer_offsets", 41)
    assert run("txn-partition", "a", "--group", "b").returncode == 2
    wrong = run("txn-partition", "--group", "b", "--transaction-state-partitions", "3")
    assert wrong.returncode == 2 and "--consumer-offsets-partitions" in wrong.stderr
    for command in [*ANALYSES, "txn-partition"]:
        text = run(command, "--help").stdout
        assert "--partitions " not in text, command


def _examples(command: str) -> list[str]:
    text = run(command, "--help").stdout
    assert "Examples:" in text, command
    block = text[text.index("Examples:"):].splitlines()[1:]
    return [line.strip() for line in block if line.strip().startswith("kafkatx ")]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_help_ends_with_examples_that_run(command: str, tmp_path: Path) -> None:
    """Each example of a command reading the fixtures runs as printed (from the repository's
    root, writing into a scratch directory) with exit status 0 or 1."""
    examples = _examples(command)
    assert examples and all(e.split()[1] == command for e in examples)
    for example in examples:
        if "fixtures/" not in example or command == "serve":
            continue
        argv = shlex.split(example.split(";")[0].split("|")[0].split(">")[0])[1:]
        argv = [str(tmp_path / a) if re.fullmatch(r"[\w.-]+\.(json|jsonl|csv|html)", a)
                else a for a in argv]
        proc = run(*argv)
        assert proc.returncode in (0, 1), (example, proc.stderr[-800:])


def test_serve_log_lines_say_utc(tmp_path: Path) -> None:
    serve = ServeProcess(tmp_path / "data").start()
    try:
        pass
    finally:
        serve.stop()
    stamped = [line for line in serve.stderr().splitlines() if line.strip()]
    assert stamped, "serve logged nothing"
    assert all(re.match(r"\d\d:\d\d:\d\dZ ", line) for line in stamped), stamped[:5]
