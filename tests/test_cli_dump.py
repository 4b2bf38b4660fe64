"""`kafkatx dump` as a user runs it: a real process on the bundled fixtures, JSON parsed back."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from tests.command import kafkatx

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures"
P0 = FIX / "logdir" / "payments-0"
SEG0 = P0 / "00000000000000000000.log"

BATCH_KEYS = {"base_offset", "last_offset", "count", "producer_id", "producer_epoch",
              "base_sequence", "last_sequence", "partition_leader_epoch", "is_transactional",
              "is_control", "position", "size", "magic", "compression", "max_timestamp", "crc",
              "crc_valid"}


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return kafkatx(*args, columns=200)


def jsonl(*args: str) -> list[dict]:
    proc = run("dump", "--format", "jsonl", *args)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_help_works() -> None:
    proc = run("--help")
    assert proc.returncode == 0 and "dump" in proc.stdout
    proc = run("dump", "--help")
    assert proc.returncode == 0 and "--transactional-id" in proc.stdout


def test_segment_batches_follow_the_contract() -> None:
    items = jsonl(str(SEG0))
    batches = [i for i in items if i["kind"] == "batch"]
    assert [b["base_offset"] for b in batches] == [0, 3, 5, 7, 9, 11, 13, 14]
    for b in batches:
        assert b.keys() >= BATCH_KEYS
        assert b["crc_valid"] is True and b["file"] == str(SEG0)
    assert [b["compression"] for b in batches[:3]] == ["none", "gzip", "snappy"]
    abort, commit = batches[-2:]
    assert abort["control"] == {"type": "ABORT", "coordinator_epoch": 3}
    assert commit["control"] == {"type": "COMMIT", "coordinator_epoch": 3}
    assert (abort["producer_id"], commit["producer_id"]) == (4002, 4001)
    assert abort["size"] == 78 and abort["is_transactional"] and abort["is_control"]
    assert [i for i in items if i["kind"] == "problem"] == []


def test_records_are_decoded_on_request() -> None:
    plain = jsonl(str(SEG0))
    assert all("records" not in b for b in plain)
    batches = jsonl("--records", str(SEG0))
    first = batches[0]["records"]
    assert [r["offset"] for r in first] == [0, 1, 2]
    assert first[0]["key"] == "plain-0" and json.loads(first[0]["value"])["id"] == 0
    assert first[0]["headers"] == [{"key": "trace-id", "value": "t0000"}]
    control = batches[-1]["records"][0]
    assert control["key_encoding"] == "base64"  # binary control key: base64, flagged


def test_producer_and_offset_filters() -> None:
    by_pid = jsonl("--producer-id", "4001", str(P0))
    assert {b["producer_id"] for b in by_pid if b["kind"] == "batch"} == {4001}
    assert {i["kind"] for i in by_pid} >= {"batch", "producer"}
    window = [b for b in jsonl("--from-offset", "10", "--to-offset", "17", str(SEG0.parent))
              if b["kind"] == "batch"]
    assert [(b["base_offset"], b["last_offset"]) for b in window] == [
        (9, 10), (11, 12), (13, 13), (14, 14), (15, 16), (17, 18)]


def test_transactional_id_uses_the_coordinator_log() -> None:
    items = jsonl("--transactional-id", "ledger-writer", str(FIX / "logdir"))
    data = [i for i in items if i["kind"] == "batch" and "payments-0" in i["file"]]
    assert data and {b["producer_id"] for b in data} == {4003}
    coordinator = [i for i in items if i["kind"] == "batch" and "__transaction_state" in i["file"]]
    states = [r["value"]["state"] for b in coordinator for r in b["records"]]
    assert states == ["Empty", "Ongoing", "PrepareAbort", "CompleteAbort"]
    assert {r["key"]["transactional_id"] for b in coordinator for r in b["records"]} == {
        "ledger-writer"}


def test_transactional_id_without_coordinator_partitions_is_a_usage_error() -> None:
    proc = run("dump", "--transactional-id", "x", str(FIX / "legacy"))
    assert proc.returncode == 2 and "__transaction_state" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_transaction_state_values_are_decoded_objects() -> None:
    items = jsonl(str(FIX / "logdir" / "__transaction_state-15"))
    recs = [r for b in items if b["kind"] == "batch" for r in b["records"]]
    assert recs[0]["key"] == {"version": 0, "transactional_id": "payments-writer"}
    v = recs[2]["value"]
    assert v["state"] == "Ongoing" and v["producer_id"] == 4001 and v["producer_epoch"] == 2
    assert v["partitions"] == {"payments": [0, 1], "__consumer_offsets": [41]}
    assert v["transaction_timeout_ms"] == 60000 and v["version"] == 1
    assert recs[0]["value"]["partitions"] == {}


def test_consumer_offsets_records_are_decoded() -> None:
    items = jsonl(str(FIX / "logdir" / "__consumer_offsets-41" / "00000000000000000000.log"))
    batches = [b for b in items if b["kind"] == "batch"]
    commit = batches[1]
    assert commit["is_transactional"] and commit["producer_id"] == 4001
    assert [(r["key"]["topic"], r["key"]["partition"], r["value"]["offset"])
            for r in commit["records"]] == [("payments", 0, 15), ("payments", 1, 3)]
    assert batches[0]["records"][0]["value"]["protocol_type"] == "consumer"


def test_index_txnindex_snapshot_contracts() -> None:
    items = jsonl(str(P0))
    aborted = [i for i in items if i["kind"] == "aborted_txn"]
    assert [{k: a[k] for k in ("producer_id", "first_offset", "last_offset",
                               "last_stable_offset")} for a in aborted] == [
        {"producer_id": 4002, "first_offset": 9, "last_offset": 13, "last_stable_offset": 7}]
    producers = [i for i in items if i["kind"] == "producer" and i["file"].endswith("32.snapshot")]
    ledger = next(p for p in producers if p["producer_id"] == 4003)
    assert ledger["current_txn_first_offset"] == 19 and ledger["producer_epoch"] == 7
    assert {"producer_id", "producer_epoch", "last_sequence", "last_offset", "offset_delta",
            "timestamp", "coordinator_epoch", "current_txn_first_offset"} <= ledger.keys()
    index = [i for i in items if i["kind"] == "index_entry"]
    batches = {b["position"]: b for b in items if b["kind"] == "batch"
               and b["file"].endswith("00000000000000000000.log")}
    seg0_index = [i for i in index if i["file"].endswith("00000000000000000000.index")]
    assert seg0_index
    for entry in seg0_index:  # Kafka 4.x: (last offset of the batch, its position)
        assert batches[entry["position"]]["last_offset"] == entry["offset"]
    times = [i for i in items if i["kind"] == "time_index_entry"]
    assert times and all({"timestamp", "offset"} <= t.keys() for t in times)


def test_checkpoints_and_meta_properties() -> None:
    items = jsonl(str(FIX / "logdir" / "replication-offset-checkpoint"),
                  str(FIX / "logdir" / "meta.properties"))
    hw = {(i["topic"], i["partition"]): i["offset"] for i in items
          if i["kind"] == "checkpoint_entry"}
    assert hw[("payments", 0)] == 32 and hw[("payments", 1)] == 3
    meta = next(i for i in items if i["kind"] == "meta_properties")
    assert meta["properties"]["node.id"] == "1"


def test_legacy_messages() -> None:
    batches = [b for b in jsonl("--records", str(FIX / "legacy")) if b["kind"] == "batch"]
    rows = [(b["magic"], b["base_offset"], b["last_offset"], b["compression"]) for b in batches]
    assert rows == [
        (0, 0, 0, "none"), (0, 1, 2, "gzip"), (1, 3, 3, "none"), (1, 4, 6, "snappy"),
        (1, 7, 8, "lz4"), (2, 9, 10, "none")]
    assert all(b["crc_valid"] for b in batches)
    assert [r["value"] for r in batches[3]["records"]] == ["snappy 4", "snappy 5", "snappy 6"]


def test_corrupt_files_are_reported_not_raised() -> None:
    proc = run("dump", "--format", "jsonl", str(FIX / "corrupt"))
    assert proc.returncode == 0
    assert "Traceback" not in proc.stderr
    items = [json.loads(line) for line in proc.stdout.splitlines()]
    problems = {(Path(i["file"]).name, i["problem"]) for i in items if i["kind"] == "problem"}
    assert problems == {
        ("00000000000000000000.log", "crc_mismatch"),
        ("00000000000000000000.log", "corrupt_region"),
        ("00000000000000000000.log", "truncated_batch"),
        ("00000000000000000030.snapshot", "invalid_snapshot"),
        ("00000000000000000100.log", "corrupt_region"),
    }
    lines = [ln for ln in proc.stderr.splitlines() if ": crc_mismatch:" in ln]
    assert lines and lines[0].split(":")[1].isdigit()  # path:position: ...
    good = [b for b in items
            if b["kind"] == "batch" and b["file"].endswith("00000000000000000000.log")]
    assert len(good) == 7  # 10 batches: 2 zeroed, 1 truncated; the CRC-damaged one is shown
    assert [b["crc_valid"] for b in good].count(False) == 1


def test_missing_file_is_one_line_and_exit_2() -> None:
    proc = run("dump", "does/not/exist.log")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("kafkatx: error: does/not/exist.log")
    assert "Traceback" not in proc.stderr


def test_usage_error_exit_2() -> None:
    proc = run("dump", "--format", "xml", str(SEG0))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_table_output_is_readable() -> None:
    proc = run("dump", "--records", str(SEG0))
    assert proc.returncode == 0
    assert "2025-11-21T04:41:02.000Z" in proc.stdout
    assert "ABORT coord_epoch=3" in proc.stdout and "key=plain-0" in proc.stdout


def test_json_is_one_array() -> None:
    proc = run("dump", "--format", "json", str(SEG0))
    data = json.loads(proc.stdout)
    assert isinstance(data, list) and len(data) == 8


def _snapshot(tree: Path) -> dict[str, tuple[str, int]]:
    out = {}
    for p in sorted(tree.rglob("*")):
        if p.is_file():
            out[str(p)] = (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
    return out


@pytest.mark.parametrize("fmt", ["table", "jsonl"])
def test_dump_changes_nothing_it_reads(fmt: str) -> None:
    before = _snapshot(FIX)
    proc = run("dump", "--records", "--format", fmt, str(FIX))
    assert proc.returncode == 0, proc.stderr
    assert _snapshot(FIX) == before


def test_a_coordinator_record_of_an_unknown_value_version_is_an_invalid_record(
        tmp_path: Path) -> None:
    """``GroupCoordinatorRecordSerde#readValue`` throws on an OffsetCommitValue version it does
    not know: dump keeps the record's bytes and says where it is, as an ``invalid_record``."""
    from kafkatx.formats.consumer_offsets import (
        OffsetCommitKey,
        OffsetCommitValue,
        build_key,
        build_value,
    )
    from kafkatx.formats.record_batch import Record, build_batch, parse_batch

    part = tmp_path / "__consumer_offsets-3"
    part.mkdir()
    key = build_key(OffsetCommitKey(group="g", topic="t", partition=0))
    good = build_value(OffsetCommitValue(version=3, offset=5, metadata="",
                                         commit_timestamp_ms=1_763_700_000_000, leader_epoch=0))
    bad = b"\x00\x63" + good[2:]  # version 99
    records = [Record(offset=i, timestamp=1_763_700_000_000, key=key, value=v)
               for i, v in enumerate((good, bad))]
    (part / "00000000000000000000.log").write_bytes(build_batch(records))
    proc = run("dump", "--format", "jsonl", str(part))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    items = [json.loads(line) for line in proc.stdout.splitlines()]
    (batch,) = [i for i in items if i["kind"] == "batch"]
    assert batch["records"][0]["value"]["offset"] == 5
    assert "unknown value version 99" in batch["records"][1]["decode_error"]
    (problem,) = [i for i in items if i["kind"] == "problem"]
    assert problem["problem"] == "invalid_record" and problem["message"].startswith("offset 1:")
    raw = (part / "00000000000000000000.log").read_bytes()
    second = parse_batch(raw, decode_records=True).records[1]
    assert problem["position"] == second.position and second.position > 61
    log = part / "00000000000000000000.log"
    assert f"{log}:{problem['position']}: invalid_record: offset 1:" in proc.stderr


def test_a_filter_writes_no_entries_it_cannot_select() -> None:
    """Checkpoints, partition.metadata, meta.properties and quorum-state carry no producer and
    no record offset; index entries carry no producer: under a filter none is written."""
    kinds = {i["kind"] for i in jsonl("--transactional-id", "checkout",
                                      str(FIX / "served" / "hanging"))}
    assert kinds == {"batch", "producer"}
    kinds = {i["kind"] for i in jsonl("--producer-id", "4003", str(P0))}
    assert kinds <= {"batch", "producer", "aborted_txn"} and "batch" in kinds
    kinds = {i["kind"] for i in jsonl("--from-offset", "19", "--to-offset", "21", str(P0))}
    assert "index_entry" in kinds or "time_index_entry" in kinds
    assert not kinds & {"checkpoint_entry", "leader_epoch_entry", "partition_metadata"}
