"""`kafkatx dump` on a KRaft metadata log dir (``__cluster_metadata-0``): segments, ``.checkpoint``
snapshots, ``quorum-state``, as a real process; JSON parsed back."""

from __future__ import annotations

import json
from pathlib import Path

from kafkatx.formats.checkpoints import uuid_from_bytes
from kafkatx.formats.metadata_records import (
    SnapshotId,
    build_kraft_control_batch,
    build_metadata_batch,
    build_raw_metadata_record,
    build_snapshot,
    snapshot_file_name,
)
from kafkatx.formats.quorum_state import QuorumState, build_quorum_state
from kafkatx.formats.record_batch import ControlType, parse_batch
from tests.readonly import snapshot_tree
from tests.test_cli_dump import run

TS = 1_763_700_000_000
TOPIC_ID = uuid_from_bytes(b"\x11" * 16)


def _metadata_dir(root: Path) -> Path:
    part = root / "__cluster_metadata-0"
    part.mkdir(parents=True)
    log = b"".join([
        build_kraft_control_batch([(ControlType.LEADER_CHANGE, {
            "version": 0, "leader_id": 1, "voters": [{"voter_id": 1}],
            "granting_voters": [{"voter_id": 1}]})], base_offset=0, leader_epoch=1,
            timestamp=TS),
        build_metadata_batch([("FeatureLevelRecord", 0, {"name": "metadata.version",
                                                         "feature_level": 25}),
                              ("TopicRecord", 0, {"name": "payments", "topic_id": TOPIC_ID}),
                              build_raw_metadata_record(99, 0, b"\x01\x02")],
                             base_offset=1, leader_epoch=1, timestamp=TS + 1),
    ])
    (part / "00000000000000000000.log").write_bytes(log)
    snap = build_snapshot([[("TopicRecord", 0, {"name": "payments", "topic_id": TOPIC_ID})]],
                          epoch=1, last_contained_log_timestamp=TS + 1, timestamp=TS + 2)
    (part / snapshot_file_name(SnapshotId(4, 1))).write_bytes(snap)
    (part / "quorum-state").write_bytes(build_quorum_state(QuorumState(
        data_version=1, leader_id=1, leader_epoch=1, voted_id=1,
        voted_directory_id=uuid_from_bytes(b"\x22" * 16))))
    return part


def _jsonl(*args: str) -> list[dict]:
    proc = run("dump", "--format", "jsonl", *args)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_metadata_log_records_are_decoded(tmp_path: Path) -> None:
    """MetadataRecordSerde framing inside the batches of __cluster_metadata-0; a KRaft control
    batch's LeaderChangeMessage decoded (ControlRecordUtils); unknown type kept raw."""
    part = _metadata_dir(tmp_path)
    before = snapshot_tree(part)
    items = _jsonl(str(part / "00000000000000000000.log"))
    assert snapshot_tree(part) == before
    control, data = [i for i in items if i["kind"] == "batch"]
    assert control["control"]["type"] == "LEADER_CHANGE"
    assert control["control"]["data"]["leader_id"] == 1
    assert control["records"][0]["control_type"] == "LEADER_CHANGE"
    recs = data["records"]
    assert [r["type"] for r in recs] == ["FeatureLevelRecord", "TopicRecord", "UNKNOWN"]
    assert recs[0]["data"] == {"name": "metadata.version", "feature_level": 25}
    assert recs[1]["data"]["topic_id"] == TOPIC_ID and recs[1]["offset"] == 2
    assert recs[2] == {"offset": 3, "timestamp": TS + 1, "type": "UNKNOWN", "type_id": 99,
                       "version": 0, "raw": "AQI="}


def test_snapshot_and_quorum_state_files(tmp_path: Path) -> None:
    """A .checkpoint snapshot (RecordsSnapshotWriter: header, records, footer from offset 0) and
    quorum-state (FileQuorumStateStore, data_version 1) from a directory walk."""
    part = _metadata_dir(tmp_path)
    items = _jsonl(str(tmp_path))
    snap = [i for i in items if i["file"].endswith(".checkpoint")]
    assert [b["base_offset"] for b in snap] == [0, 1, 2]
    assert snap[0]["records"][0]["control_type"] == "SNAPSHOT_HEADER"
    assert snap[0]["records"][0]["data"]["last_contained_log_timestamp"] == TS + 1
    assert snap[1]["records"][0]["data"]["name"] == "payments"
    assert snap[2]["control"]["type"] == "SNAPSHOT_FOOTER"
    (qs,) = [i for i in items if i["kind"] == "quorum_state"]
    assert qs["file"] == str(part / "quorum-state")
    assert (qs["data_version"], qs["leader_id"], qs["leader_epoch"], qs["voted_id"]) == (
        1, 1, 1, 1)
    assert qs["voted_directory_id"] == uuid_from_bytes(b"\x22" * 16)


def test_table_output_names_each_record(tmp_path: Path) -> None:
    """The table shows one line per metadata record with its type, version and fields."""
    part = _metadata_dir(tmp_path)
    proc = run("dump", str(part))
    assert proc.returncode == 0, proc.stderr
    assert "FeatureLevelRecord v0 name=metadata.version feature_level=25" in proc.stdout
    assert "UNKNOWN type 99 v0" in proc.stdout
    assert "leader_epoch" in proc.stdout  # the quorum-state table
    assert "None" not in proc.stdout  # a null field is null, as in the JSON


def test_damaged_metadata_record_and_quorum_state_are_reported(tmp_path: Path) -> None:
    """A record whose value does not decode keeps its bytes with decode_error and is an
    invalid_record problem at its position (MetadataRecordSerde throws on it); a quorum-state
    of an unknown data_version is a one-line problem (FileQuorumStateStore refuses it)."""
    part = tmp_path / "__cluster_metadata-0"
    part.mkdir()
    bad = build_metadata_batch([b"\x01\x02\x00\x09"], base_offset=0, leader_epoch=1,
                               timestamp=TS)
    (part / "00000000000000000000.log").write_bytes(bad)
    (part / "quorum-state").write_text('{"leaderId":1,"data_version":7}')
    items = _jsonl(str(part))
    (batch,) = [i for i in items if i["kind"] == "batch"]
    assert "decode_error" in batch["records"][0] and batch["records"][0]["value"]
    record, problem = [i for i in items if i["kind"] == "problem"]
    assert record["problem"] == "invalid_record" and record["position"] == 61
    assert record["message"].startswith("offset 0: record does not decode: ")
    assert problem["problem"] == "invalid_quorum_state" and "data_version" in problem["message"]


def test_cluster_names_the_byte_of_an_undecodable_metadata_record(tmp_path: Path) -> None:
    """MetadataRecordSerde throws on a record it cannot read; ``cluster`` goes on and says where
    the record is: its own byte position in an uncompressed batch, not the batch's."""
    part = tmp_path / "__cluster_metadata-0"
    part.mkdir()
    good = ("FeatureLevelRecord", 0, {"name": "metadata.version", "feature_level": 25})
    log = build_metadata_batch([good, good, b"\x01\x02\x00\x09"], base_offset=0, leader_epoch=1,
                               timestamp=TS)
    (part / "00000000000000000000.log").write_bytes(log)
    proc = run("cluster", str(part), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    third = parse_batch(log, decode_records=True).records[2]
    expected = f"{part / '00000000000000000000.log'}:{third.position}: offset 2: "
    assert third.position > 61
    assert any(p.startswith(expected) for p in json.loads(proc.stdout)[0]["problems"])
