"""The metadata log joined with the partition dirs beside it (`inspect`/`verify` on the KRaft
fixture and on aged or altered copies of it), as a real process; JSON parsed back."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from fixtures.generate_kraft import PID_NEW, PID_OLD, PID_ROGUE, T0, TOPIC, data_partition
from kafkatx.analysis.cluster_joins import GENERIC_GAP_CAUSE, annotate_offset_gaps
from kafkatx.analysis.cluster_view import ClusterView
from kafkatx.analysis.findings import Finding
from kafkatx.engines.local import AnalysisOptions
from kafkatx.formats.checkpoints import EpochEntry, build_leader_epoch_checkpoint
from kafkatx.formats.metadata_records import MetadataRecord
from kafkatx.formats.record_batch import ControlType, Record, build_batch
from kafkatx.formats.record_batch import build_control_batch as marker_batch
from kafkatx.semantics.cluster_metadata import ClusterImage, Where
from tests.readonly import snapshot_tree
from tests.test_cli_dump import FIX, run

KRAFT = FIX / "kraft"
NOW = "2025-11-21T05:00:00Z"


def findings(path: Path, command: str = "inspect") -> tuple[int, list[dict]]:
    proc = run(command, "--format", "json", "--now", NOW, str(path))
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)["findings"]


def of(found: list[dict], kind: str, topic: str | None = None) -> list[dict]:
    return [f for f in found if f["kind"] == kind and (topic is None or f["topic"] == topic)]


def test_recreated_topic_dir_is_reported() -> None:
    """UnifiedLog#initializeTopicId: orders-0's partition.metadata holds the first orders id;
    the metadata log deleted that topic (RemoveTopicRecord at 75) and re-created orders with a
    new id (76): the directory is the deleted topic's data. verify fails on it."""
    before = snapshot_tree(KRAFT)
    rc, found = findings(KRAFT, "verify")
    assert snapshot_tree(KRAFT) == before
    (f,) = of(found, "topic_id_mismatch")
    assert (f["topic"], f["partition"], f["severity"]) == ("orders", 0, "error")
    assert TOPIC["orders@1"] in f["message"] and TOPIC["orders@2"] in f["message"]
    assert "deleted at metadata offset 75" in f["message"]
    assert f["location"].endswith("orders-0/partition.metadata")
    assert rc == 1
    assert of(found, "topic_id_mismatch", "payments") == []


def test_marker_written_in_the_new_leader_epoch_is_consistent() -> None:
    """payments-0: a transaction in leader epoch 0, its COMMIT marker appended in epoch 2 after
    the leader change (PartitionRegistration#merge: 0 -> 1 (no leader) -> 2): every epoch the data
    and leader-epoch-checkpoint use is one the controller gave a leader."""
    _, found = findings(KRAFT)
    assert of(found, "leader_epoch_mismatch") == []


def _altered_payments(tmp_path: Path, *, batch_epoch: int, checkpoint_epochs: list[int]) -> Path:
    root = tmp_path / "node1"
    shutil.copytree(KRAFT, root)
    part = root / "payments-0"
    log = part / "00000000000000000000.log"
    extra = build_batch([Record(offset=7, timestamp=1_763_699_000_000, key=b"k", value=b"v")],
                        partition_leader_epoch=batch_epoch)
    log.write_bytes(log.read_bytes() + extra)
    (part / "leader-epoch-checkpoint").write_bytes(build_leader_epoch_checkpoint(
        [EpochEntry(epoch=e, start_offset=i * 4) for i, e in enumerate(checkpoint_epochs)]))
    return root


def test_data_appended_in_an_epoch_without_leader_is_reported(tmp_path: Path) -> None:
    """A batch stamped with leader epoch 1, when the metadata log says payments-0 had no leader
    (PartitionChangeRecord Leader=-1 at 81): no broker could have appended it."""
    root = _altered_payments(tmp_path, batch_epoch=1, checkpoint_epochs=[0, 2])
    _, found = findings(root)
    (f,) = of(found, "leader_epoch_mismatch")
    assert f["offset"] == 7 and "had no leader" in f["message"]
    assert "metadata offset 81" in f["message"]


def test_checkpoint_epoch_the_controller_never_reached_is_reported(tmp_path: Path) -> None:
    """LeaderEpochFileCache entries must be epochs the metadata log assigned; 7 is beyond the
    newest (2)."""
    root = _altered_payments(tmp_path, batch_epoch=2, checkpoint_epochs=[0, 2, 7])
    _, found = findings(root)
    (f,) = of(found, "leader_epoch_mismatch")
    assert f["location"].endswith("payments-0/leader-epoch-checkpoint")
    assert "never gave payments-0 (its newest is 2)" in f["message"]


def test_producer_ids_are_checked_against_the_blocks() -> None:
    """ProducerIdControlManager: ids below the newest NextProducerId (2000) were handed out;
    5000 never was."""
    _, found = findings(KRAFT)
    flagged = {f["producer_id"] for f in of(found, "producer_id_unallocated")}
    assert flagged == {PID_ROGUE}
    assert PID_OLD not in flagged and PID_NEW not in flagged


def test_offset_gaps_are_judged_by_the_topics_cleanup_policy() -> None:
    """LogConfig cleanup.policy from the metadata log: gaps in the compacted ledger are normal
    (info); gaps in events (cleanup.policy=delete) are records missing (warning)."""
    _, found = findings(KRAFT)
    (ledger,) = of(found, "offset_gap", "ledger")
    assert ledger["severity"] == "info" and "ledger is compacted" in ledger["message"]
    (events,) = of(found, "offset_gap", "events")
    assert events["severity"] == "warning"
    assert "records are missing" in events["message"]


def test_joins_on_an_aged_metadata_log(tmp_path: Path) -> None:
    """The metadata log's first segment deleted after the snapshot at 80: the joins still hold,
    from the snapshot on (the deleted orders id is no longer in the history, so the message
    says the metadata log never gave it)."""
    root = tmp_path / "node1"
    shutil.copytree(KRAFT, root)
    for f in (root / "__cluster_metadata-0").glob("00000000000000000000.*"):
        f.unlink()
    _, found = findings(root)
    (f,) = of(found, "topic_id_mismatch")
    assert "never gave orders the id" in f["message"]
    assert of(found, "leader_epoch_mismatch") == []
    assert {g["producer_id"] for g in of(found, "producer_id_unallocated")} == {PID_ROGUE}
    assert of(found, "offset_gap", "ledger")[0]["severity"] == "info"


def test_without_a_metadata_log_nothing_changes() -> None:
    """No __cluster_metadata dir: no join findings, no finding speaks of a metadata log."""
    _, found = findings(FIX / "corrupt")
    assert not [f for f in found if f["kind"] in ("topic_id_mismatch", "leader_epoch_mismatch",
                                                  "producer_id_unallocated")]
    assert of(found, "offset_gap")
    assert all("metadata log" not in f["message"] for f in found)


# --- cleanup.policy resolution, unit by unit ---------------------------------------------------

def _view(*configs: tuple[int, str, str, str | None]) -> ClusterView:
    image = ClusterImage()
    for i, (rtype, rname, name, value) in enumerate(configs):
        image.replay(MetadataRecord(type_id=4, version=0, data={
            "resource_type": rtype, "resource_name": rname, "name": name, "value": value}),
            Where(i, 0, 1))
    return ClusterView(path="m", image=image, history=image, snapshot=None,
                       snapshot_end_offset=None, history_start_offset=0, log_start_offset=0,
                       log_end_offset=len(configs), as_of_offset=None, quorum_state=None)


def _gap(cause: str = GENERIC_GAP_CAUSE) -> Finding:
    return Finding(kind="offset_gap", topic="t", partition=0, offset=9,
                   message="1 gap in the offsets of x.log (2 offsets skipped): " + cause)


def test_cleanup_policy_resolution_follows_log_config() -> None:
    """LogConfig: the topic's cleanup.policy, else a broker's dynamic log.cleanup.policy, else
    the cluster default; with none in the metadata log the gap is only likely missing data."""
    (none,) = annotate_offset_gaps([_gap()], _view())
    assert none.level == "warning" and "Kafka's default is delete" in none.message
    (default,) = annotate_offset_gaps([_gap()], _view((4, "", "log.cleanup.policy", "compact")))
    assert default.level == "info" and "cluster-default log.cleanup.policy" in default.message
    (topic,) = annotate_offset_gaps([_gap()], _view((4, "", "log.cleanup.policy", "compact"),
                                                    (2, "t", "cleanup.policy", "delete")))
    assert topic.level == "warning" and "cleanup.policy=delete, topic config" in topic.message


def test_a_topic_compacted_earlier_explains_its_gaps() -> None:
    """A topic once compacted keeps the gaps compaction left even after it moved to delete."""
    (f,) = annotate_offset_gaps([_gap()], _view((2, "t", "cleanup.policy", "compact"),
                                                (2, "t", "cleanup.policy", "delete")))
    assert f.level == "info" and "was compacted (cleanup.policy=compact set at metadata " \
                                 "offset 0)" in f.message


def test_a_gap_explained_by_damage_is_left_alone() -> None:
    """offset_gap whose cause is damage in the copy keeps its message."""
    damaged = _gap("the bytes before the next batch are damaged (crc_mismatch at 10)")
    assert annotate_offset_gaps([damaged], _view()) == [damaged]


def test_joins_on_a_retention_aged_partition(tmp_path: Path) -> None:
    """payments-0 after retention deleted its first batches (log start 4, the leader-epoch
    checkpoint truncated from the start as LeaderEpochFileCache#truncateFromStart does): the
    COMMIT marker in epoch 2 is still consistent, producer 5000 still unallocated."""
    root = tmp_path / "node1"
    shutil.copytree(KRAFT, root)
    shutil.rmtree(root / "payments-0")
    t2 = T0 + 950_000
    data_partition(root, "payments-0", "payments", [
        marker_batch(base_offset=4, producer_id=PID_OLD, producer_epoch=0,
                     control_type=ControlType.COMMIT, timestamp=t2, coordinator_epoch=1,
                     partition_leader_epoch=2),
        build_batch([Record(offset=5, timestamp=t2 + 100, key=b"e", value=b"5")],
                    producer_id=PID_NEW, producer_epoch=0, base_sequence=0,
                    partition_leader_epoch=2),
        build_batch([Record(offset=6, timestamp=t2 + 200, key=b"f", value=b"6")],
                    producer_id=PID_ROGUE, producer_epoch=0, base_sequence=0,
                    partition_leader_epoch=2),
    ], [(2, 4)])
    assert [p.name for p in (root / "payments-0").glob("*.log")] == [
        "00000000000000000004.log"]
    _, found = findings(root)
    assert of(found, "leader_epoch_mismatch") == []
    assert {f["producer_id"] for f in of(found, "producer_id_unallocated")} == {PID_ROGUE}


def _payments_with_commit(tmp_path: Path, *, marker_epoch: int, marker_ts: int) -> Path:
    root = tmp_path / "node1"
    shutil.copytree(KRAFT, root)
    shutil.rmtree(root / "payments-0")
    data_partition(root, "payments-0", "payments", [
        build_batch([Record(offset=0, timestamp=T0 + 200_000, key=b"c", value=b"3")],
                    producer_id=PID_OLD, producer_epoch=0, base_sequence=0,
                    is_transactional=True, partition_leader_epoch=0),
        marker_batch(base_offset=1, producer_id=PID_OLD, producer_epoch=marker_epoch,
                     control_type=ControlType.COMMIT, timestamp=marker_ts, coordinator_epoch=1,
                     partition_leader_epoch=2),
    ], [(0, 0), (2, 1)])
    return root


def test_a_v2_commit_before_the_cluster_finalized_transaction_version_2(tmp_path: Path) -> None:
    """TransactionVersion#supportsEpochBump: only TV2 commits with the epoch bumped (KIP-890);
    the fixture finalizes transaction.version 2 at metadata offset 192 (04:20 UTC), so a bumped
    COMMIT at 04:15:50 is reported, one at 04:21:40 is not, and a TV1 commit never is."""
    root = _payments_with_commit(tmp_path, marker_epoch=1, marker_ts=T0 + 950_000)
    _, found = findings(root)
    (f,) = of(found, "transaction_version_mismatch")
    assert (f["topic"], f["offset"], f["producer_id"]) == ("payments", 1, PID_OLD)
    assert "transaction.version was 1 then (since at metadata offset 2" in f["message"]
    assert "it became 2 at metadata offset 192, 250s later" in f["message"]
    later = _payments_with_commit(tmp_path / "later", marker_epoch=1, marker_ts=T0 + 1_300_000)
    assert of(findings(later)[1], "transaction_version_mismatch") == []
    _, fixture = findings(KRAFT)
    assert of(fixture, "transaction_version_mismatch") == []


def test_transaction_version_join_on_an_aged_metadata_log(tmp_path: Path) -> None:
    """With the metadata log read from its snapshot (first segment deleted), the snapshot says
    transaction.version 1 as of its own time: a bumped COMMIT after it is still reported, one
    from before the snapshot is not judged."""
    root = _payments_with_commit(tmp_path, marker_epoch=1, marker_ts=T0 + 950_000)
    for f in (root / "__cluster_metadata-0").glob("00000000000000000000.*"):
        f.unlink()
    (f,) = of(findings(root)[1], "transaction_version_mismatch")
    assert "since in the snapshot" in f["message"]
    early = _payments_with_commit(tmp_path / "early", marker_epoch=1, marker_ts=T0 + 90_000)
    for f in (early / "__cluster_metadata-0").glob("00000000000000000000.*"):
        f.unlink()
    assert of(findings(early)[1], "transaction_version_mismatch") == []


def test_both_engines_give_the_same_joins(engine: Any) -> None:
    """The joins run after either engine's inspection (local and Spark) with the same result."""
    from kafkatx.engines.cluster_metadata import join_inspection

    result = engine.inspect([str(KRAFT)], options=AnalysisOptions(now_ms=T0 + 3_600_000))
    join_inspection([str(KRAFT)], result)
    kinds = sorted((f.kind, f.topic, f.offset) for f in result.findings
                   if f.kind in ("topic_id_mismatch", "producer_id_unallocated", "offset_gap"))
    assert kinds == [("offset_gap", "events", 5), ("offset_gap", "ledger", 4),
                     ("producer_id_unallocated", "payments", 6),
                     ("topic_id_mismatch", "orders", None)]
    assert len(result.clusters) == 1 and result.clusters[0].log_end_offset == 200


def test_only_partitions_of_the_metadata_logs_cluster_are_joined(tmp_path: Path) -> None:
    """Evidence of two clusters (meta.properties cluster.id differ) and a log dir naming none:
    only the KRaft node's own partitions are joined with its metadata log."""
    for name in ("kraft", "logdir", "corrupt"):
        shutil.copytree(FIX / name, tmp_path / name)
    _, found = findings(tmp_path)
    joined = [f for f in found if f["kind"] in (
        "topic_id_mismatch", "topic_not_in_metadata", "leader_epoch_mismatch",
        "producer_id_unallocated", "transaction_version_mismatch")
        or "metadata log" in f["message"]]
    assert joined and all("/kraft/" in f["location"] for f in joined)
