"""`kafkatx lso`, `inspect` and `verify` as a user runs them: real processes on the fixtures."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from kafkatx.cli.progress import ScanProgress
from kafkatx.semantics.coordinator_partition import partition_for
from tests.command import kafkatx
from tests.readonly import assert_unchanged, snapshot_tree

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures"
LOGDIR = FIX / "logdir"
CORRUPT = FIX / "corrupt"
FIXTURE_DIRS = [LOGDIR, CORRUPT, FIX / "legacy"]
NOW = "2025-11-21T05:00:00Z"
NOW_MS = "1763701200000"  # the same instant
LATER = "2025-11-21T05:10:00Z"  # ledger-writer's last write is then over 15 minutes old
LATER_MS = "1763701800000"
SHORT = ("--max-transaction-timeout-ms", "60000")  # judge after the 60 s transaction timeout
ABORT = ("kafka-transactions.sh --bootstrap-server <broker:9092> abort --topic payments "
         "--partition 0 --start-offset 19")

LSO_KEYS = {"topic", "partition", "log_start_offset", "log_end_offset", "high_watermark",
            "last_stable_offset", "lso_source", "hw_minus_lso", "records_pending",
            "open_transactions"}
OPEN_TXN_KEYS = {"producer_id", "producer_epoch", "first_offset", "last_offset",
                 "first_timestamp", "last_timestamp"}
FINDING_KEYS = {"kind", "severity", "topic", "partition", "producer_id", "producer_epoch",
                "transactional_id", "offset", "location", "message", "remediation"}
INSPECT_PARTITION_KEYS = LSO_KEYS | {"segments", "size_bytes", "producers",
                                     "transactions_committed", "transactions_aborted",
                                     "transactions_open", "longest_transaction_ms"}
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return kafkatx(*args, columns=200)


def run_json(*args: str | Path, expect: int = 0) -> object:
    proc = run(*args, "--format", "json")
    assert proc.returncode == expect, proc.stderr
    return json.loads(proc.stdout)


def by_partition(rows: list[dict], topic: str) -> dict[int, dict]:
    return {r["partition"]: r for r in rows if r["topic"] == topic}


# lso ------------------------------------------------------------------------------------------


def test_help_lists_the_commands() -> None:
    proc = run("--help")
    assert proc.returncode == 0
    for name in ("lso", "inspect", "verify"):
        assert re.search(rf"^\s+{name}\s", proc.stdout, re.M), proc.stdout
    proc = run("lso", "--help")
    assert proc.returncode == 0 and "--transaction-timeout-ms" in proc.stdout
    assert "lso_pinned" in proc.stdout and "--manifest" in proc.stdout


def test_lso_json_contract_on_logdir() -> None:
    rows = run_json("lso", LOGDIR)
    assert isinstance(rows, list)
    assert [(r["topic"], r["partition"]) for r in rows] == sorted(
        (r["topic"], r["partition"]) for r in rows)
    assert len(rows) == 6
    for r in rows:
        assert r.keys() >= LSO_KEYS
    payments = by_partition(rows, "payments")
    p0 = payments[0]
    assert (p0["log_start_offset"], p0["log_end_offset"], p0["high_watermark"]) == (0, 32, 32)
    assert p0["last_stable_offset"] == 19 and p0["lso_source"] == "open_transaction"
    assert p0["hw_minus_lso"] == 13 and p0["records_pending"] == 13
    [txn] = p0["open_transactions"]
    assert txn.keys() == OPEN_TXN_KEYS
    assert (txn["producer_id"], txn["producer_epoch"]) == (4003, 7)
    assert (txn["first_offset"], txn["last_offset"]) == (19, 21)
    p1 = payments[1]
    assert p1["last_stable_offset"] == p1["high_watermark"] == 3
    assert p1["lso_source"] == "high_watermark" and p1["open_transactions"] == []
    assert p1["hw_minus_lso"] == 0 and p1["records_pending"] == 0


def test_lso_csv_parses() -> None:
    proc = run("lso", "--format", "csv", LOGDIR)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    assert len(rows) == 6
    p0 = next(r for r in rows if (r["topic"], r["partition"]) == ("payments", "0"))
    assert p0["high_watermark"] == "32" and p0["last_stable_offset"] == "19"
    assert p0["lso_source"] == "open_transaction" and p0["records_pending"] == "13"
    assert p0["open_transactions"] == "1"
    assert (p0["oldest_open_first_offset"], p0["oldest_open_producer_id"]) == ("19", "4003")
    p1 = next(r for r in rows if (r["topic"], r["partition"]) == ("payments", "1"))
    assert p1["open_transactions"] == "0" and p1["oldest_open_first_offset"] == ""


def test_lso_table_shows_the_numbers() -> None:
    proc = run("lso", LOGDIR)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # not a TTY: no progress bar, and nothing to warn about
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("payments ")
                and "4003" in ln)
    assert re.search(r"\b0\s+32\s+32\s+19\s+open transaction\s+13\s+13\s+4003/7@19\b", line), line
    assert "HW unknown" not in proc.stdout


def test_lso_without_checkpoint_says_the_leo_was_used() -> None:
    rows = run_json("lso", LOGDIR / "payments-0")
    assert rows[0]["high_watermark"] is None and rows[0]["last_stable_offset"] == 19
    proc = run("lso", LOGDIR / "payments-0")
    assert proc.returncode == 0
    assert re.search(r"\b32\s+-\s+19\b", proc.stdout)
    assert "HW unknown for 1 partition(s) (payments-0)" in proc.stdout
    assert "log end offset was used" in proc.stdout


def test_several_log_dirs_sorted_with_their_labels(tmp_path: Path) -> None:
    for broker in ("broker-2", "broker-1"):
        shutil.copytree(LOGDIR, tmp_path / broker)
    rows = run_json("lso", tmp_path / "broker-2", tmp_path / "broker-1")
    keys = [(r["topic"], r["partition"], r["broker"]) for r in rows]
    assert keys == sorted(keys) and len(keys) == 12
    assert [k for k in keys if k[0] == "payments"] == [
        ("payments", 0, "broker-1"), ("payments", 0, "broker-2"),
        ("payments", 1, "broker-1"), ("payments", 1, "broker-2")]
    proc = run("lso", tmp_path)
    assert "log dir" in proc.stdout and "broker-1" in proc.stdout


# inspect --------------------------------------------------------------------------------------


def test_inspect_json_contract() -> None:
    doc = run_json("inspect", LOGDIR)
    assert isinstance(doc, dict) and doc.keys() >= {"partitions", "findings", "problems"}
    assert doc["problems"] == []
    parts = {(p["topic"], p["partition"]): p for p in doc["partitions"]}
    for p in parts.values():
        assert p.keys() >= INSPECT_PARTITION_KEYS
    p0 = parts[("payments", 0)]
    assert (p0["transactions_committed"], p0["transactions_aborted"],
            p0["transactions_open"]) == (1, 1, 1)
    assert p0["segments"] == 2 and p0["last_stable_offset"] == 19
    for f in doc["findings"]:
        assert f.keys() >= FINDING_KEYS
    ranks = [SEVERITY_ORDER[f["severity"]] for f in doc["findings"]]
    assert ranks == sorted(ranks)
    opened = [f for f in doc["findings"] if f["kind"] == "open_transaction"]
    assert [(f["topic"], f["partition"], f["producer_id"], f["offset"], f["transactional_id"])
            for f in opened] == [("payments", 0, 4003, 19, "ledger-writer")]
    # The coordinator aborted ledger-writer's transaction but no marker reached payments-0.
    errors = [(f["kind"], f["transactional_id"]) for f in doc["findings"]
              if f["severity"] == "error"]
    assert errors == [("hanging_transaction", "ledger-writer")]


@pytest.mark.parametrize("now", [LATER, LATER_MS])
def test_inspect_now_turns_the_hanging_transaction_into_lso_pinned(now: str) -> None:
    """``TransactionsCommand`` find-hanging: judged once the last write is older than 15
    minutes (its ``--max-transaction-timeout`` default); ledger-writer last wrote at 04:46:01."""
    assert not [f for f in run_json("inspect", "--now", NOW, LOGDIR)["findings"]
                if f["kind"] == "lso_pinned"]
    doc = run_json("inspect", "--now", now, LOGDIR)
    pinned = [f for f in doc["findings"] if f["kind"] == "lso_pinned"]
    assert len(pinned) == 1
    [f] = pinned
    assert (f["topic"], f["partition"], f["producer_id"], f["producer_epoch"], f["offset"]) == (
        "payments", 0, 4003, 7, 19)
    assert f["severity"] == "error" and f["remediation"] == ABORT
    hanging = doc["findings"][0]  # the headline: the coordinator has moved on
    assert hanging["kind"] == "hanging_transaction" and hanging["remediation"] == ABORT
    assert doc["findings"][1] == f  # errors rank first
    assert not [f for f in doc["findings"] if f["kind"] == "open_transaction"]


def test_inspect_table_is_one_screen_with_remediation() -> None:
    proc = run("inspect", "--now", NOW, *SHORT, LOGDIR)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "partitions: 6, segments: 7" in out
    assert "findings (2 errors, 1 warning, 1 info)" in out
    lines = out.splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.startswith("error"))
    assert re.match(r"error\s+hanging_transaction payments-0 offset 19: ledger-writer "
                    r"\(producer 4003 epoch 7\)", lines[i])
    assert lines[i + 1].strip() == "remediation: " + ABORT
    i = next(i for i, ln in enumerate(lines) if re.match(r"error\s+lso_pinned", ln))
    assert re.match(r"error\s+lso_pinned payments-0 offset 19: producer 4003 epoch 7", lines[i])
    assert f"({LOGDIR / 'payments-0'})" in lines[i]
    assert lines[i + 1].strip() == "remediation: " + ABORT
    assert "4003/7@19 (13m58s)" in out  # age against --now


@pytest.mark.parametrize(("args", "pinned"), [
    ((), False),  # last write 14 minutes before NOW: not yet past find-hanging's 15 minutes
    (SHORT, True),  # max(60 s recorded in __transaction_state, 60 s) is past
    (("--max-transaction-timeout-ms", "3600000", "--now", LATER), False),
    # __transaction_state records 60 s for ledger-writer: the assumed timeout does not apply
    (("--transaction-timeout-ms", "3600000", *SHORT), True),
])
def test_the_threshold_decides_what_is_pinned(args: tuple[str, ...], pinned: bool) -> None:
    """``TransactionsCommand`` find-hanging's threshold: the larger of the transaction's timeout
    and ``--max-transaction-timeout-ms``, against the last write (the coordinator's log says it
    is hanging whatever the age)."""
    doc = run_json("inspect", "--now", NOW, *args, LOGDIR)
    assert [f["kind"] for f in doc["findings"] if f["partition"] == 0
            and f["topic"] == "payments"] == ["hanging_transaction",
                                              "lso_pinned" if pinned else "open_transaction",
                                              "restart_keeps_transaction"]


def test_transaction_state_partitions_detected_or_given(tmp_path: Path) -> None:
    """``TransactionStateManager#partitionFor`` with 10 partitions: detected from the log dir
    (every ``__transaction_state-N`` directory 0..9 present), or given on every command that
    joins the coordinator."""
    from tests.analysis.test_partition_count import ten_partition_cluster
    from tests.analysis.test_timeline import Scenario

    sc = Scenario(tmp_path / "broker")
    ten_partition_cluster(sc)
    root = sc.build()
    doc = run_json("inspect", root)
    assert doc["coordinator"]["num_partitions"] == 10
    assert doc["coordinator"]["source"] == "directories"
    assert doc["coordinator"]["partitions_present"] == list(range(10))
    assert "wrong_coordinator_partition" not in {f["kind"] for f in doc["findings"]}
    doc = run_json("verify", "--transaction-state-partitions", "50", root, expect=1)
    assert "wrong_coordinator_partition" in {f["kind"] for f in doc["findings"]}
    proc = run("inspect", root)
    assert "coordinator: 10 __transaction_state partition(s) of 10 (every partition " \
           "directory 0..9 is present)" in proc.stdout
    proc = run("timeline", "--format", "jsonl", "--transaction-state-partitions", "10", root)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert {r["coordinator_partition"] for r in rows if r["transactional_id"]} == {
        partition_for("payments-writer", 10)}


def test_inspect_corrupt_reports_and_exits_zero() -> None:
    doc = run_json("inspect", CORRUPT)
    kinds = {f["kind"] for f in doc["findings"]}
    assert {"crc_mismatch", "corrupt_region", "truncated_batch"} <= kinds
    crc = next(f for f in doc["findings"] if f["kind"] == "crc_mismatch")
    assert crc["location"].endswith("damaged-0/00000000000000000000.log:710")
    proc = run("inspect", CORRUPT)
    assert proc.returncode == 0 and "crc_mismatch" in proc.stdout
    assert "HW unknown for 1 partition(s) (damaged-0)" in proc.stdout


def test_findings_are_capped_per_kind_unless_all(tmp_path: Path) -> None:
    # the same damaged partition copied under many names: many findings of each kind
    for i in range(12):
        shutil.copytree(CORRUPT / "damaged-0", tmp_path / f"damaged-{i}")
    proc = run("inspect", tmp_path)
    assert proc.returncode == 0, proc.stderr
    shown = [ln for ln in proc.stdout.splitlines() if re.match(r"error\s+crc_mismatch", ln)]
    assert len(shown) == 10
    assert "(+2 more crc_mismatch; --all shows every finding)" in proc.stdout
    everything = run("inspect", "--all", tmp_path)
    assert len([ln for ln in everything.stdout.splitlines()
                if re.match(r"error\s+crc_mismatch", ln)]) == 12
    doc = run_json("inspect", tmp_path)
    assert len([f for f in doc["findings"] if f["kind"] == "crc_mismatch"]) == 12


# verify ---------------------------------------------------------------------------------------


def test_verify_logdir_fails_on_the_hanging_transaction() -> None:
    proc = run("verify", LOGDIR)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert re.search(r"error\s+hanging_transaction payments-0 offset 19", proc.stdout)
    assert re.search(r"warning\s+open_transaction payments-0 offset 19", proc.stdout)
    assert re.search(r"^1 error, \d+ warnings?, \d+ info in 6 partitions$", proc.stdout, re.M)
    doc = run_json("verify", LOGDIR, expect=1)
    assert doc["ok"] is False and doc["summary"]["errors"] == 1
    assert doc["summary"]["partitions"] == 6 and doc["summary"]["warnings"] >= 1


def test_verify_passes_without_errors() -> None:
    legacy = LOGDIR.parent / "legacy"
    proc = run("verify", legacy)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"^0 errors, 0 warnings, \d+ info in 1 partition$", proc.stdout, re.M)


def test_verify_fails_on_errors() -> None:
    proc = run("verify", CORRUPT)
    assert proc.returncode == 1
    assert re.search(r"^error\s+crc_mismatch damaged-0", proc.stdout, re.M)
    m = re.search(r"^(\d+) errors?, \d+ warnings?, \d+ info in 1 partition$", proc.stdout, re.M)
    assert m and int(m.group(1)) >= 3
    doc = run_json("verify", CORRUPT, expect=1)
    assert doc["ok"] is False and doc["summary"]["errors"] == int(m.group(1))
    pinned = run("verify", "--now", LATER, LOGDIR)  # the hanging transaction is now an error
    assert pinned.returncode == 1 and "lso_pinned" in pinned.stdout


# bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["lso", "inspect", "verify"])
def test_missing_path_is_one_line(command: str) -> None:
    """A path that does not exist is a usage error: exit 2, click's convention."""
    proc = run(command, "no/such/dir")
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == ["kafkatx: error: no/such/dir: no such file or directory"]
    assert proc.stdout == ""


@pytest.mark.parametrize("command", ["lso", "inspect", "verify"])
def test_path_without_kafka_data_is_one_clear_line(command: str, tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("not kafka")
    proc = run(command, LOGDIR, tmp_path)
    assert proc.returncode == 2
    [line] = proc.stderr.splitlines()
    assert line.startswith(f"kafkatx: error: no Kafka data in {tmp_path}: looked for")
    assert "meta.properties" in line and "<topic>-<partition>" in line


def test_file_instead_of_directory_is_one_line() -> None:
    proc = run("inspect", LOGDIR / "meta.properties")
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1
    assert "not a directory" in proc.stderr


@pytest.mark.parametrize("args", [
    ["lso"],
    ["lso", "--format", "xml", str(LOGDIR)],
    ["inspect", "--format", "csv", str(LOGDIR)],
    ["inspect", "--now", "yesterday", str(LOGDIR)],
    ["verify", "--now", "1763701200", str(LOGDIR)],  # seconds, not milliseconds
    ["lso", "--transaction-timeout-ms", "0", str(LOGDIR)],
    ["inspect", "--max-transaction-timeout-ms", "0", str(LOGDIR)],
    ["verify", "--transaction-state-partitions", "0", str(LOGDIR)],
    ["timeline", "--transaction-state-partitions", "x", str(LOGDIR)],
])
def test_usage_errors_exit_2(args: list[str]) -> None:
    proc = run(*args)
    assert proc.returncode == 2 and "Error:" in proc.stderr and proc.stdout == ""


# read-only and the manifest -------------------------------------------------------------------


@pytest.mark.parametrize("fixture", FIXTURE_DIRS, ids=lambda p: p.name)
@pytest.mark.parametrize("command", ["lso", "inspect", "verify"])
def test_commands_leave_the_evidence_alone(command: str, fixture: Path, tmp_path: Path) -> None:
    before = snapshot_tree(fixture)
    proc = run(command, "--now", NOW, "--manifest", tmp_path / "m.sha256", fixture)
    assert proc.returncode in (0, 1), proc.stderr
    assert_unchanged(fixture, before)
    assert (tmp_path / "m.sha256").is_file()


def test_manifest_is_a_sha256sum_file_of_every_file_read(tmp_path: Path) -> None:
    target = tmp_path / "evidence.sha256"
    proc = run("inspect", "--manifest", target, LOGDIR)
    assert proc.returncode == 0, proc.stderr
    assert f"written to {target}" in proc.stderr
    header, *lines = target.read_text().splitlines()
    assert header.startswith("# kafkatx")
    listed = {}
    for line in lines:
        digest, path = line.split("  ", 1)
        listed[Path(path)] = digest
    segments = set(LOGDIR.glob("*/*.log"))
    assert segments <= set(listed)  # every segment was read
    assert all(p.is_relative_to(LOGDIR) for p in listed)
    for path, digest in listed.items():
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, path


def test_manifest_inside_the_inspected_tree_is_refused() -> None:
    for target in (LOGDIR / "manifest.sha256", LOGDIR / "payments-0" / "m.txt"):
        proc = run("lso", "--manifest", target, LOGDIR)
        assert proc.returncode == 2 and "refusing to write the manifest" in proc.stderr
        assert not target.exists()


# the progress bar -----------------------------------------------------------------------------


def test_progress_bar_draws_only_when_enabled() -> None:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=100)
    with ScanProgress(1000, console=console, enabled=True, delay_s=0) as bar:
        bar.advance(400)
        assert bar.shown and bar.done == 400
    assert "scanning" in buf.getvalue()
    quiet = io.StringIO()
    with ScanProgress(1000, console=Console(file=quiet, force_terminal=True),
                      enabled=False, delay_s=0) as bar:
        bar.advance(1000)
        assert not bar.shown
    assert quiet.getvalue() == ""
    with ScanProgress(1000, console=Console(file=quiet, force_terminal=True), enabled=True,
                      delay_s=60) as bar:  # a scan that ends before the delay draws nothing
        bar.advance(1000)
        assert not bar.shown
    assert quiet.getvalue() == ""


def test_inspect_table_leaves_out_empty_partitions_unless_all(tmp_path: Path) -> None:
    """A broker's log dir holds every partition of its internal topics, most of them empty
    (``GroupCoordinator``/``TransactionStateManager`` create all 50): inspect's table shows the
    partitions with records or something to say and counts the empty ones in one line;
    ``--all`` shows every row. JSON always holds every partition."""
    logdir = tmp_path / "logdir"
    shutil.copytree(LOGDIR, logdir)
    for n in (0, 1, 2):
        (logdir / f"__consumer_offsets-{n}").mkdir()
        (logdir / f"__consumer_offsets-{n}" / "00000000000000000000.log").write_bytes(b"")
    short, full = run("inspect", logdir), run("inspect", "--all", logdir)
    assert short.returncode == full.returncode == 0, short.stderr
    assert "3 empty partition dir(s) not shown (__consumer_offsets 3); --all shows them" \
        in short.stdout
    assert re.search(r"^__consumer_offsets\s+1\s", full.stdout, re.M)
    assert not re.search(r"^__consumer_offsets\s+1\s", short.stdout, re.M)
    assert re.search(r"^payments\s+0\s", short.stdout, re.M) and "not shown" not in full.stdout
    doc = run_json("inspect", "--format", "json", logdir)
    assert sum(p["topic"] == "__consumer_offsets" for p in doc["partitions"]) == 4  # type: ignore
