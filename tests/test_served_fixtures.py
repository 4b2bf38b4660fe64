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
from tests.broker.kafkatx_cli import lso_rows, run_cli
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
    # a restart keeps it: the snapshot and the log hold it (UnifiedLog#loadProducerState)
    assert located(found) == {("hanging_transaction", "payments", 0, 0),
                              ("open_transaction", "payments", 0, 0),
                              ("restart_keeps_transaction", "payments", 0, 0)}
    hanging = by_kind(found, "hanging_transaction")
    assert hanging["transactional_id"] == "checkout" and hanging["severity"] == "error"
    assert "no COMMIT marker reached payments-0" in hanging["message"]
    assert hanging["remediation"].endswith(
        "abort --topic payments --partition 0 --start-offset 0")
    # librdkafka committed it (TransactionCoordinator#endTransaction: CompleteCommit after the
    # markers): the abort would discard committed records, so the export and live checks come
    # first (issue #11 item 4).
    assert "COMMITTED: its COMMIT marker did reach orders-0 (offset 6)" in hanging["message"]
    assert "discards records 0..2 of a committed transaction" in hanging["message"]
    assert hanging["remediation"].startswith("export the records first: kafkatx dump ")
    assert "find-hanging --topic payments --partition 0" in hanging["remediation"]
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
        ("open_transaction", "orders", 0, 3), ("open_transaction", "payments", 0, 2),
        ("restart_keeps_transaction", "orders", 0, 3),
        ("restart_keeps_transaction", "payments", 0, 2)}
    # The active segments' indexes were never written (the metadata log's too): Kafka's
    # recovery rebuilds them.
    assert {(f["topic"], f["severity"]) for f in found if f["kind"] == "index_mismatch"} == {
        ("__transaction_state", "info"), ("orders", "info"), ("payments", "info"),
        ("__cluster_metadata", "info")}
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
    assert "past its 2s transaction timeout (deadline " in timed_out["message"]
    assert "and fenced epoch 0 (its markers carry 1)" in timed_out["message"]
    rows = timeline(path)
    assert [(r["producer_epoch"], r["outcome"], markers(r)) for r in rows] == [
        (0, "committed", {"reports-0": ("COMMIT", 2, 0)}),
        (0, "aborted", {"reports-0": ("ABORT", 6, 1)}),
        (2, "committed", {"reports-0": ("COMMIT", 10, 2)})]
    assert coordinator_story(rows[1])[-2:] == [("PrepareAbort", 1), ("CompleteAbort", 1)]


# -- aged log dirs: retention and the log cleaner ----------------------------------------------

Row = tuple[int, str, str | None]  # offset, key, value


def replay_rows(path: Path, topic: str, isolation: str = "read_committed") -> list[Row]:
    run = run_cli("replay", str(path), "--topic", topic, "--partition", "0", "--format", "jsonl",
                  "--isolation", isolation)
    assert run.returncode == 0, run.stderr.decode()
    return [(r["offset"], r["key"], r["value"])
            for r in map(json.loads, run.stdout.decode().splitlines())]


def inventory_history() -> list[tuple[int, str, str | None, bool]]:
    """What ``serve_scenarios._inventory_rounds`` produced: transaction n at offsets 5n..5n+3
    (its marker at 5n+4), item (4n+i) % 6, a tombstone when (n+i) % 7 == 6, every third
    aborted."""
    out = []
    for n in range(15):
        for i in range(4):
            item = f"item-{(n * 4 + i) % 6}"
            value = None if (n + i) % 7 == 6 else f'{{"id":"{item}","stock":{n * 10 + i}}}'
            out.append((5 * n + i, item, value, n % 3 != 2))
    return out


def compaction_model(cleaned_below: int, mapped_below: int) -> list[Row]:
    """Kafka's cleaner rules over the produced history, independent of the cleaner's code:
    below ``cleaned_below`` only the last committed record of each key in [0, mapped_below)
    (tombstones too, inside delete.retention.ms), above it every committed record."""
    history = inventory_history()
    latest = {key: offset for offset, key, _, committed in history
              if committed and offset < mapped_below}
    return [(offset, key, value) for offset, key, value, committed in history
            if committed and (offset >= cleaned_below or latest.get(key) == offset)]


def cleaner_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    from kafkatx.formats.checkpoints import read_offset_checkpoint

    data = (path / "cleaner-offset-checkpoint").read_bytes()
    return read_offset_checkpoint(data).as_map()


def test_retention_deleted_the_start_of_a_hanging_transaction() -> None:
    """retention.bytes deleted payments-0's first segments (``UnifiedLog#deleteOldSegments``),
    the hanging transaction's batch with them: the log starts at 7, the producer snapshot still
    holds the transaction open from 0 (``ProducerStateManager#onLogStartOffsetIncremented``
    keeps ongoing transactions), so the LSO stays at the log start
    (``UnifiedLog#maybeIncrementFirstUnstableOffset``); the coordinator committed it and no
    marker reached payments-0: a hanging transaction whose abort needs start offset 0."""
    path = SERVED / "retention-hanging"
    found = findings(path, verify_status=1)
    assert {(f["kind"], f["topic"], f["partition"], f["offset"]) for f in found} == {
        ("hanging_transaction", "payments", 0, 0), ("open_transaction", "payments", 0, 0),
        ("restart_keeps_transaction", "payments", 0, 0)}
    hanging = by_kind(found, "hanging_transaction")
    assert hanging["remediation"].endswith("--topic payments --partition 0 --start-offset 0")
    # its records went with the deleted segments: no kafkatx dump that would export nothing
    assert hanging["remediation"].startswith("nothing to export from this copy: retention "
                                             "deleted records 0..2 (the log starts at 7)")
    assert "holds the LSO at 7" in hanging["message"]
    assert "below the log start offset 7" in by_kind(found, "open_transaction")["message"]
    names = sorted(p.name for p in (path / "payments-0").glob("*.log"))
    assert names[0] == "00000000000000000007.log"
    row = lso_rows(path)[("payments", 0)]
    assert (row["log_start_offset"], row["last_stable_offset"], row["high_watermark"]) == (
        7, 7, 23)
    # read_committed consumers get nothing past the LSO; the refunds producer's batches n of
    # two records are at 3 + 2n, those from 7 on remain for read_uncommitted ones.
    assert replay_rows(path, "payments") == []
    assert [r[:2] for r in replay_rows(path, "payments", "read_uncommitted")] == [
        (o, f"r-{(o - 3) // 2}-{(o - 3) % 2}") for o in range(7, 23)]


def test_compacted_transactional_topic_matches_the_model() -> None:
    """inventory-0 cleaned up to its active segment (``cleaner-offset-checkpoint`` 69): a
    read_committed consumer gets exactly what Kafka's rules leave of the produced history (the
    last committed value of each item, the delisting tombstone of item-4, no aborted stock), the
    aborted transaction in the active segment is in its ``.txnindex``, and nothing is an
    error."""
    path = SERVED / "compacted"
    assert cleaner_checkpoint(path)[("inventory", 0)] == 69
    assert replay_rows(path, "inventory") == compaction_model(69, 69)
    found = findings(path, verify_status=0)
    assert "offset_gap" in {f["kind"] for f in found}
    # What the cleaner leaves is judged by its rules (Cleaner#cleanInto): infos only.
    assert [f for f in found if f["severity"] != "info"] == []


def test_cleaned_consumer_offsets_keep_the_last_commits() -> None:
    """__consumer_offsets-12 cleaned (600-byte segments): the fulfilment group's older
    transactional offset commits are gone, the last ones and the aborted last transaction's
    pending commit are there, and nothing is an error."""
    path = SERVED / "cleaned-offsets"
    group_partition = ("__consumer_offsets", partition_for("fulfilment"))
    assert cleaner_checkpoint(path)[group_partition] > 0
    commits = [(c["offset"], c["visible"]) for r in timeline(path)
               for c in r["offset_commits"]]
    assert commits[-1] == (25, False) and (24, True) in commits
    assert (3, True) not in commits  # the first transaction's commit was cleaned away
    found = findings(path, verify_status=0)
    assert [f for f in found if f["severity"] != "info"] == []


def test_crash_in_the_middle_of_a_clean_then_recovered() -> None:
    """The cleaner died once its first group's ``.swap`` files were complete
    (``crash-after:swap``); the restart completed the swap (``LogLoader``), no
    ``.cleaned``/``.swap``/``.deleted`` file is left, and, the topic's configs coming back from
    the metadata log (``ConfigurationControlManager``), its cleaner cleaned the whole log up to
    the active segment (``LogCleaner``; checkpoint 75): every key's last committed record in
    0..74 and nothing else there."""
    path = SERVED / "crash-cleaning"
    names = [p.name for p in (path / "inventory-0").iterdir()]
    assert not [n for n in names if n.endswith((".cleaned", ".swap", ".deleted"))]
    assert cleaner_checkpoint(path)[("inventory", 0)] == 75
    assert replay_rows(path, "inventory") == compaction_model(75, 75)
    found = findings(path, verify_status=0)
    assert [f for f in found if f["severity"] != "info"] == []


def test_the_served_tree_is_small() -> None:
    files = [p for p in SERVED.rglob("*") if p.is_file()]
    assert sorted(p.name for p in SERVED.iterdir() if p.is_dir()) == [
        "clean", "cleaned-offsets", "compacted", "crash-cleaning", "hanging",
        "retention-hanging", "stuck-prepare", "timeout-abort", "zombie"]
    assert sum(p.stat().st_size for p in files) < 300_000


def test_the_script_regenerates_a_scenario(tmp_path: Path) -> None:
    script = FIXTURES / "serve_scenarios.py"
    run = subprocess.run([sys.executable, str(script), "--out", str(tmp_path), "hanging"],
                         capture_output=True, timeout=60, check=False)
    assert run.returncode == 0, run.stderr.decode()
    fresh = located(findings(tmp_path / "hanging", verify_status=1))
    assert fresh == located(findings(SERVED / "hanging", verify_status=1))


def test_every_served_log_dir_carries_its_metadata_log() -> None:
    """Each served log dir is a KRaft combined node's (``KafkaRaftServer``): ``inspect`` shows
    its cluster section, every partition directory's topic and ``partition.metadata`` id is the
    metadata log's (``TopicsImage``), and the joins of ``kafkatx.analysis.cluster_joins`` find
    nothing (ids, leader epochs, producer-id blocks, transaction.version all as serve wrote)."""
    from kafkatx.formats.checkpoints import read_partition_metadata

    joins = {"topic_id_mismatch", "topic_not_in_metadata", "leader_epoch_mismatch",
             "producer_id_unallocated", "transaction_version_mismatch"}
    for path in sorted(p for p in SERVED.iterdir() if p.is_dir()):
        [cluster] = _command("inspect", path, 0)["cluster"]
        ids = {t["topic"]: t["topic_id"] for t in cluster["topics"]}
        for pdir in path.iterdir():
            if not pdir.is_dir() or pdir.name.startswith("__cluster_metadata"):
                continue
            topic = pdir.name.rsplit("-", 1)[0]
            meta = read_partition_metadata((pdir / "partition.metadata").read_bytes())
            assert meta.topic_id == ids[topic], pdir
        assert [b["first_producer_id"] for b in cluster["producer_id_blocks"]] == [0], path
        assert not cluster["problems"] and not cluster["replay_problems"], path
        found = _command("inspect", path, 0)["findings"]
        assert not {f["kind"] for f in found} & joins, path
