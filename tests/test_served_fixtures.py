"""The log dirs under fixtures/served/, written by ``kafkatx serve`` under librdkafka
(``fixtures/serve_scenarios.py``): what ``kafkatx inspect``/``verify``/``timeline`` report on
each, and that reading them changes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from kafkatx.semantics.coordinator_partition import partition_for
from tests.broker.kafkatx_cli import run_cli
from tests.readonly import assert_unchanged, snapshot_tree

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SERVED = FIXTURES / "served"
CHECKOUT_STATE = f"__transaction_state-{partition_for('checkout')}"
Finding = tuple[str, str, int | None, int | None]  # kind, topic, partition, offset


def _command(command: str, path: Path, expected_status: int) -> Any:
    """``kafkatx COMMAND --format json PATH`` (jsonl for timeline), leaving PATH unchanged."""
    before = snapshot_tree(path)
    fmt = "jsonl" if command == "timeline" else "json"
    run = run_cli(command, "--format", fmt, str(path))
    assert run.returncode == expected_status, run.stderr.decode()
    assert_unchanged(path, before)
    if command == "timeline":
        return [json.loads(line) for line in run.stdout.decode().splitlines()]
    return json.loads(run.stdout)


def findings(path: Path, *, verify_status: int) -> list[dict[str, Any]]:
    """inspect's findings, checked to be verify's too (and verify's exit status)."""
    inspected = _command("inspect", path, 0)["findings"]
    verified = _command("verify", path, verify_status)
    assert verified["ok"] is (verify_status == 0)
    assert verified["findings"] == inspected
    return list(inspected)


def located(found: list[dict[str, Any]]) -> set[Finding]:
    return {(f["kind"], f["topic"], f["partition"], f["offset"]) for f in found}


def by_kind(found: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (one,) = [f for f in found if f["kind"] == kind]
    return one


def timeline(path: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = _command("timeline", path, 0)
    return rows


def coordinator_story(row: dict[str, Any]) -> list[tuple[str, int]]:
    return [(s["state"], s["producer_epoch"]) for s in row["coordinator_states"]]


def markers(row: dict[str, Any]) -> dict[str, tuple[str | None, int | None, int | None]]:
    """partition -> (marker type, its offset, its producer epoch)."""
    return {f"{p['topic']}-{p['partition']}": (p["marker_type"], p["marker_offset"],
                                               p["marker_producer_epoch"])
            for p in row["partitions"]}


def test_clean_has_no_finding_and_commits_offsets_in_transactions() -> None:
    path = SERVED / "clean"
    assert findings(path, verify_status=0) == []
    rows = timeline(path)
    assert [(r["transactional_id"], r["outcome"]) for r in rows] == [
        ("checkout", "committed"), ("checkout", "committed"), ("checkout", "aborted"),
        ("checkout", "committed"),
        ("fulfilment-writer", "committed"), ("fulfilment-writer", "committed"),
        ("fulfilment-writer", "committed")]
    assert markers(rows[2]) == {"orders-0": ("ABORT", 10, 0), "payments-0": ("ABORT", 7, 0)}
    group_partition = f"__consumer_offsets-{partition_for('fulfilment')}"
    # Each consume-transform-produce transaction committed the group's offset on orders-0 in
    # __consumer_offsets, just past the three orders it shipped (the aborted 8..9 skipped).
    for row, shipped_to in zip(rows[4:], (3, 7, 14), strict=True):
        assert markers(row)[group_partition][0] == "COMMIT"
        commits = [(c["group"], c["topic"], c["partition"], c["offset"], c["visible"])
                   for c in row["offset_commits"]]
        assert commits == [("fulfilment", "orders", 0, shipped_to, True)], row["offset_commits"]


def test_hanging_payments_transaction() -> None:
    path = SERVED / "hanging"
    found = findings(path, verify_status=1)
    assert located(found) == {("hanging_transaction", "payments", 0, 0),
                              ("open_transaction", "payments", 0, 0)}
    hanging = by_kind(found, "hanging_transaction")
    assert hanging["transactional_id"] == "checkout" and hanging["severity"] == "error"
    assert "no COMMIT marker reached payments-0" in hanging["message"]
    assert hanging["remediation"].endswith(
        "abort --topic payments --partition 0 --start-offset 0")
    outcomes = [(r["outcome"], markers(r)) for r in timeline(path)]
    assert outcomes[1] == ("hanging", {"orders-0": ("COMMIT", 6, 0),
                                       "payments-0": (None, None, None)})


def test_stuck_prepare_after_the_crash() -> None:
    path = SERVED / "stuck-prepare"
    assert not (path / ".kafka_cleanshutdown").exists()  # the broker died
    found = findings(path, verify_status=0)
    stuck = by_kind(found, "stuck_prepare")
    assert (stuck["topic"], stuck["partition"], stuck["transactional_id"]) == (
        CHECKOUT_STATE.rsplit("-", 1)[0], partition_for("checkout"), "checkout")
    assert "missing from orders-0, payments-0" in stuck["message"]
    assert {f for f in located(found) if f[0] != "index_mismatch"} == {
        ("stuck_prepare", "__transaction_state", partition_for("checkout"), stuck["offset"]),
        ("open_transaction", "orders", 0, 3), ("open_transaction", "payments", 0, 2)}
    # The active segments' indexes were never written: Kafka's recovery rebuilds them.
    assert {(f["topic"], f["severity"]) for f in found if f["kind"] == "index_mismatch"} == {
        ("__transaction_state", "info"), ("orders", "info"), ("payments", "info")}
    last = timeline(path)[-1]
    assert coordinator_story(last)[-1] == ("PrepareCommit", 0)
    assert last["outcome"] == "open"


def test_zombie_write_after_the_fence() -> None:
    path = SERVED / "zombie"
    found = findings(path, verify_status=1)
    assert located(found) == {("zombie_write", "audit", 0, 0)}
    zombie = by_kind(found, "zombie_write")
    assert (zombie["transactional_id"], zombie["producer_epoch"]) == ("ledger-writer", 0)
    assert "after the coordinator had fenced epoch 0 (PrepareAbort" in zombie["message"]
    fenced, successor = timeline(path)
    # InitProducerId of the new instance: the open transaction aborted with the next epoch,
    # whose ABORT marker ledger-0 got at once and audit-0 late, after the zombie's write at 1.
    assert coordinator_story(fenced)[-2:] == [("PrepareAbort", 1), ("CompleteAbort", 1)]
    assert markers(fenced) == {"audit-0": ("ABORT", 2, 1), "ledger-0": ("ABORT", 3, 1)}
    audit = next(p for p in fenced["partitions"] if p["topic"] == "audit")
    assert audit["last_offset"] == 1
    assert [f["kind"] for f in fenced["findings"]] == ["zombie_write"]
    assert (successor["producer_epoch"], successor["outcome"]) == (2, "committed")
    assert markers(successor) == {"ledger-0": ("COMMIT", 6, 2)}


def test_timeout_abort_bumps_the_epoch() -> None:
    path = SERVED / "timeout-abort"
    found = findings(path, verify_status=0)
    assert {(f["kind"], f["topic"], f["partition"]) for f in found} == {
        ("transaction_timeout_exceeded", "__transaction_state", partition_for("report-writer"))}
    timed_out = by_kind(found, "transaction_timeout_exceeded")
    assert timed_out["transactional_id"] == "report-writer"
    assert "past its 2s transaction timeout, and fenced epoch 0" in timed_out["message"]
    rows = timeline(path)
    assert [(r["producer_epoch"], r["outcome"], markers(r)) for r in rows] == [
        (0, "committed", {"reports-0": ("COMMIT", 2, 0)}),
        (0, "aborted", {"reports-0": ("ABORT", 6, 1)}),
        (2, "committed", {"reports-0": ("COMMIT", 10, 2)})]
    assert coordinator_story(rows[1])[-2:] == [("PrepareAbort", 1), ("CompleteAbort", 1)]


def test_the_served_tree_is_small() -> None:
    files = [p for p in SERVED.rglob("*") if p.is_file()]
    assert sorted(p.name for p in SERVED.iterdir() if p.is_dir()) == [
        "clean", "hanging", "stuck-prepare", "timeout-abort", "zombie"]
    assert sum(p.stat().st_size for p in files) < 200_000


def test_the_script_regenerates_a_scenario(tmp_path: Path) -> None:
    script = FIXTURES / "serve_scenarios.py"
    run = subprocess.run([sys.executable, str(script), "--out", str(tmp_path), "hanging"],
                         capture_output=True, timeout=60, check=False)
    assert run.returncode == 0, run.stderr.decode()
    fresh = located(findings(tmp_path / "hanging", verify_status=1))
    assert fresh == located(findings(SERVED / "hanging", verify_status=1))
