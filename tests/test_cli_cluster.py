"""`kafkatx cluster` on the KRaft fixture (fixtures/kraft) and aged copies of it, as a real
process; JSON parsed back. The fixture's story is in fixtures/README.md."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from fixtures.generate_kraft import (
    CLUSTER_ID,
    T0,
    TOPIC,
    config,
    register_broker,
    topic_record,
)
from kafkatx.formats.metadata_records import SnapshotId, build_snapshot, snapshot_file_name
from tests.readonly import snapshot_tree
from tests.test_cli_dump import FIX, run

KRAFT = FIX / "kraft"
META = KRAFT / "__cluster_metadata-0"


def cluster(*args: str) -> list[dict]:
    proc = run("cluster", "--format", "json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _topic(c: dict, name: str) -> dict:
    (t,) = [t for t in c["topics"] if t["topic"] == name]
    return t


def _epochs(t: dict, partition: int) -> list[tuple[int, int, int | None]]:
    (p,) = [p for p in t["partitions"] if p["partition"] == partition]
    return [(e["leader_epoch"], e["leader"], e["metadata_offset"])
            for e in p["leader_epoch_history"]]


def test_cluster_view_of_the_fixture() -> None:
    """MetadataLoader: newest snapshot (offset 80) + log tail; the image agrees with the log
    replayed from offset 0 (MetadataDelta#replay of every record)."""
    before = snapshot_tree(KRAFT)
    (c,) = cluster(str(KRAFT))
    assert snapshot_tree(KRAFT) == before
    assert c["problems"] == [] and c["replay_problems"] == []
    s = c["source"]
    assert (s["snapshot_end_offset"], s["log_start_offset"], s["log_end_offset"],
            s["history_start_offset"]) == (80, 0, 200, 0)
    assert c["metadata_version"] == {"level": 25, "release": "4.0-IV3"}
    # the bootstrap snapshot 0-0 (kafka-storage format) is where the history starts
    assert (c["feature_history"][0]["feature"], c["feature_history"][0]["from_snapshot"]) == (
        "metadata.version", True)
    assert c["features"] == {"group.version": 1, "metadata.version": 25,
                             "transaction.version": 2}
    assert [(f["feature"], f["level"], f["metadata_offset"]) for f in c["feature_history"]
            if f["feature"] == "transaction.version"] == [("transaction.version", 1, 2),
                                                           ("transaction.version", 2, 192)]
    assert sorted(t["topic"] for t in c["topics"]) == ["__transaction_state", "events",
                                                       "ledger", "orders", "payments"]
    payments = _topic(c, "payments")
    assert payments["topic_id"] == TOPIC["payments"] and payments["partition_count"] == 2
    assert payments["configs"] == {"message.timestamp.type": "LogAppendTime"}
    assert payments["created"]["metadata_offset"] == 6
    assert _epochs(payments, 0) == [(0, 1, 7), (1, -1, 81), (2, 1, 138)]
    assert _topic(c, "orders")["topic_id"] == TOPIC["orders@2"]
    assert _topic(c, "ledger")["configs"]["cleanup.policy"] == "compact"
    assert _topic(c, "__transaction_state")["partition_count"] == 50
    assert [(e["event"], e["topic_id"]) for e in c["topic_history"]
            if e["topic"] == "orders"] == [("created", TOPIC["orders@1"]),
                                           ("deleted", TOPIC["orders@1"]),
                                           ("created", TOPIC["orders@2"])]
    assert [(b["first_producer_id"], b["last_producer_id"], b["broker_epoch"])
            for b in c["producer_id_blocks"]] == [(0, 999, 10), (1000, 1999, 57)]
    assert c["next_producer_id"] == 2000
    (broker,) = c["brokers"]
    assert (broker["broker_id"], broker["broker_epoch"], broker["fenced"]) == (1, 57, False)
    assert broker["endpoints"] == ["PLAINTEXT://localhost:9092"]
    assert c["configs"] == [{"resource_type": "broker", "resource_name": "",
                             "configs": {"log.retention.ms": "259200000"}}]
    assert [(r["epoch"], r["leader_id"], r["metadata_offset"]) for r in c["raft_leaders"]] == [
        (1, 1, 0), (2, 1, 135)]
    assert c["quorum_state"]["leader_epoch"] == 2


def test_as_of_offset_shows_the_cluster_then() -> None:
    """--as-of-offset N: the newest snapshot at or below N+1, then the log up to N."""
    (before_fence,) = cluster(str(META), "--as-of-offset", "79")
    payments = _topic(before_fence, "payments")
    assert payments["configs"] == {"retention.ms": "604800000"}
    assert payments["partitions"][0]["leader"] == 1
    assert before_fence["features"]["transaction.version"] == 1
    (fenced,) = cluster(str(META), "--as-of-offset", "100")
    assert _topic(fenced, "payments")["partitions"][0]["leader"] == -1
    assert fenced["brokers"][0]["fenced"] is True
    (early,) = cluster(str(META), "--as-of-offset", "74")
    assert early["source"]["snapshot"].endswith("00000000000000000000-0000000000.checkpoint")
    assert _topic(early, "orders")["topic_id"] == TOPIC["orders@1"]


def _aged_copy(tmp_path: Path) -> Path:
    root = tmp_path / "node1"
    shutil.copytree(KRAFT, root)
    for f in (root / "__cluster_metadata-0").glob("00000000000000000000.*"):
        f.unlink()  # the segment below the snapshot deleted, as KafkaMetadataLog cleans up
    return root


def test_aged_metadata_log_is_read_from_its_snapshot(tmp_path: Path) -> None:
    """A log whose first segment was deleted after the snapshot at 80 (KafkaMetadataLog
    #deleteBeforeSnapshot): the same image, history from the snapshot on."""
    (fresh,) = cluster(str(KRAFT))
    (aged,) = cluster(str(_aged_copy(tmp_path)))
    assert aged["problems"] == []
    assert aged["source"]["history_start_offset"] == 80
    assert aged["source"]["log_start_offset"] == 80
    for key in ("features", "brokers", "next_producer_id", "configs"):
        assert aged[key] == fresh[key], key
    assert [(t["topic"], t["topic_id"], t["configs"]) for t in aged["topics"]] == [
        (t["topic"], t["topic_id"], t["configs"]) for t in fresh["topics"]]
    assert _epochs(_topic(aged, "payments"), 0) == [(0, 1, None), (1, -1, 81), (2, 1, 138)]
    assert [(b["first_producer_id"], b["metadata_offset"]) for b in
            aged["producer_id_blocks"]] == [(0, None), (1000, 193)]


def test_a_gap_before_the_log_is_reported(tmp_path: Path) -> None:
    """No snapshot reaches the log's first offset: the view says what it misses."""
    root = _aged_copy(tmp_path)
    (root / "__cluster_metadata-0" / "00000000000000000080-0000000001.checkpoint").unlink()
    (c,) = cluster(str(root))
    assert any("starts at offset 80" in p for p in c["problems"])


def test_a_snapshot_that_disagrees_with_its_log_is_reported(tmp_path: Path) -> None:
    """A snapshot is the log's replay up to its offset; one that is not (here: a config the
    log never set) is reported, and the image shown is still Kafka's (snapshot + tail)."""
    root = tmp_path / "node1"
    shutil.copytree(KRAFT, root)
    snap = build_snapshot([[("FeatureLevelRecord", 0, {"name": "metadata.version",
                                                       "feature_level": 25})],
                           [register_broker(10, CLUSTER_ID)],
                           [topic_record("payments")],
                           [config(2, "payments", "cleanup.policy", "compact")]],
                          epoch=1, last_contained_log_timestamp=T0, timestamp=T0)
    (root / "__cluster_metadata-0" / snapshot_file_name(SnapshotId(80, 1))).write_bytes(snap)
    (c,) = cluster(str(root))
    assert any("disagree" in p for p in c["problems"])
    assert _topic(c, "payments")["configs"]["cleanup.policy"] == "compact"


def test_table_output_and_errors(tmp_path: Path) -> None:
    """The table names the release, the topics and each partition's leader epochs; a dir with
    no metadata log is evidence that cannot be analysed (a one-line error, exit 2, as a missing
    path or a negative offset, the usage errors)."""
    proc = run("cluster", str(KRAFT))
    assert proc.returncode == 0, proc.stderr
    assert "metadata.version: 25 (4.0-IV3)" in proc.stdout
    assert "payments-0" in proc.stdout and "0:1@7 1:-1@81 2:1@138" in proc.stdout
    assert "topic orders deleted" in proc.stdout
    proc = run("cluster", str(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "no __cluster_metadata" in proc.stderr
    assert run("cluster", str(tmp_path / "missing")).returncode == 2  # usage errors
    assert run("cluster", "--as-of-offset", "-1", str(KRAFT)).returncode == 2


def test_inspect_has_a_cluster_section_when_a_metadata_log_is_there() -> None:
    """inspect shows the metadata log's summary (release, transaction.version since when,
    deleted topics); JSON carries the whole cluster object; none without a metadata log."""
    proc = run("inspect", "--format", "json", str(KRAFT))
    assert proc.returncode == 0, proc.stderr
    (c,) = json.loads(proc.stdout)["cluster"]
    assert c["features"]["transaction.version"] == 2
    proc = run("inspect", str(KRAFT))
    assert "metadata.version 25 (4.0-IV3); transaction.version 2 since metadata offset 192 " \
           "(1 before)" in proc.stdout
    assert f"orders (id {TOPIC['orders@1']}, metadata offset 75)" in proc.stdout
    # KafkaRaftClient keeps the metadata log's HW in memory: no checkpoint entry is missing;
    # node 1 leads every data partition as its only replica: their HW is their log end
    assert "HW unknown" not in proc.stdout + proc.stderr
    proc = run("inspect", "--format", "json", str(FIX / "logdir"))
    assert json.loads(proc.stdout)["cluster"] == []


def test_copies_from_several_nodes(tmp_path: Path) -> None:
    """A folder of two nodes' copies: one view per metadata log; inspect joins with the most
    up-to-date one (node2's replica lags: its log ends at the snapshot, offset 80)."""
    shutil.copytree(KRAFT, tmp_path / "node1")
    shutil.copytree(KRAFT, tmp_path / "node2")
    for f in (tmp_path / "node2" / "__cluster_metadata-0").glob("00000000000000000080.*"):
        f.unlink()
    views = cluster(str(tmp_path))
    assert [v["source"]["log_end_offset"] for v in views] == [200, 80]
    assert views[1]["features"]["transaction.version"] == 1
    proc = run("inspect", "--format", "json", str(tmp_path))
    doc = json.loads(proc.stdout)
    assert len(doc["cluster"]) == 2
    mismatches = [f for f in doc["findings"] if f["kind"] == "topic_id_mismatch"]
    assert len(mismatches) == 2  # orders-0 in each copy
    assert all("created at metadata offset 76" in f["message"] for f in mismatches)
