"""Named log dirs on which kafkatx's model of Kafka's load once disagreed with Kafka, with
Kafka's recorded answer for each pinned version (``load_regressions.json``).

``python -m tests.realkafka.load_regressions`` (with Java and Maven Central) loads every case
with Kafka's own storage classes again and rewrites the recorded answers; review the diff.
``test_load_regressions.py`` compares kafkatx with the recorded answers, without Java.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from .logdirs import PARTITION, TOPIC, LogDirSpec, build

RECORDED = Path(__file__).with_name("load_regressions.json")
PARTITION_DIR = f"{TOPIC}-{PARTITION}"

# name -> (what Kafka does that kafkatx once did not, the log dir)
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "clean_shutdown_without_snapshot": (
        "UnifiedLog.rebuildProducerState skips the rebuild after a clean shutdown when no "
        "snapshot is left: nothing is open after the load, the LSO is the high watermark",
        {"ops": [["txn", 0, 2], ["idem", 1, 1], ["txn", 2, 1]], "clean_shutdown": True,
         "missing_snapshots": [0], "recovery_point": 3}),
    "crash_with_the_active_txnindex_missing": (
        "LogLoader#recoverLog recovers the active segment (LogSegment#recover), which rebuilds "
        "its .txnindex: the aborted records are hidden again",
        {"ops": [["txn", 0, 2], ["roll"], ["txn", 1, 2], ["abort", 1], ["idem", 2, 1]],
         "clean_shutdown": False, "recovery_point": 2, "missing_txnindex": [1]}),
    "txnindex_failing_its_sanity_check": (
        "TransactionIndex#sanityCheck (an entry ending below the segment's base) makes "
        "LogLoader#loadSegmentFiles recover the segment and rebuild the index",
        {"ops": [["txn", 0, 1], ["commit", 0], ["roll"], ["txn", 0, 2], ["commit", 0],
                 ["txn", 1, 1], ["abort", 1]],
         "clean_shutdown": True, "recovery_point": 3, "bad_txnindex": [1]}),
    "crash_with_the_recovery_point_below_the_snapshots": (
        "each recovered segment's rebuild deletes the snapshots above it and at or below the "
        "log start (ProducerStateManager#truncateAndReload): the transaction only they "
        "remembered (its start deleted by retention) is forgotten and the LSO moves",
        {"ops": [["txn", 0, 1], ["roll"], ["idem", 1, 2], ["roll"], ["idem", 1, 1]],
         "retention_segments": 1, "clean_shutdown": False, "recovery_point": 0}),
    "retention_below_an_open_transaction_clean": (
        "after a clean shutdown the snapshot at the log end keeps a transaction whose start "
        "retention deleted: the LSO stays at the log start",
        {"ops": [["txn", 0, 1], ["roll"], ["idem", 1, 2], ["roll"], ["idem", 1, 1]],
         "retention_segments": 1, "clean_shutdown": True, "recovery_point": 3}),
    "zero_bytes_after_a_clean_shutdown": (
        "LogSegment#readNextOffset (FileLogInputStream) ends at fewer than 17 bytes left: a "
        "short zero tail is not read, nothing fails",
        {"ops": [["txn", 0, 1]], "clean_shutdown": True, "torn_tail": -12}),
    "log_start_inside_a_batch": (
        "UnifiedLog#maybeIncrementFirstUnstableOffset converts the first unstable offset to "
        "offset metadata: the base offset of the batch holding the log start, below it",
        {"ops": [["txn", 0, 1], ["txn", 0, 3], ["txn", 1, 2], ["txn", 0, 1], ["abort", 0],
                 ["txn", 1, 1]], "log_start": 6, "recovery_point": 0}),
    "torn_tail_below_the_log_start": (
        "recovery cuts the partial batch, the log end falls below the log start checkpoint and "
        "LogLoader#deleteSegmentsIfLogStartGreaterThanLogEnd deletes every segment",
        {"ops": [["txn", 0, 1]], "log_start": 1, "torn_tail": 1, "recovery_point": 0}),
    "follower_txnindex_kept_after_a_clean_shutdown": (
        "a follower appends a fetched chunk whole and only then writes each aborted "
        "transaction's .txnindex entry (UnifiedLog#append): its LSO counts a transaction "
        "another producer began later in the chunk (3, where the leader wrote 2); a clean "
        "load serves the entry as written (issue 24, follower indexes)",
        {"ops": [["txn", 0, 1], ["abort", 0], ["plain", 1], ["txn", 1, 1], ["commit", 1],
                 ["roll"], ["plain", 1]], "follower_chunk": 5, "recovery_point": 0,
         "clean_shutdown": True}),
    "follower_txnindex_rebuilt_by_recovery": (
        "the same follower's segment after a crash below it: LogSegment#recover rebuilds the "
        ".txnindex batch by batch, as a leader writes it (LSO 2): the file is rewritten",
        {"ops": [["txn", 0, 1], ["abort", 0], ["plain", 1], ["txn", 1, 1], ["commit", 1],
                 ["roll"], ["plain", 1]], "follower_chunk": 5, "recovery_point": 0}),
    "partial_last_batch_read_through_a_gap": (
        "a documented difference (docs/analysis.md), pinned: after a clean shutdown the last "
        "segment's partial batch makes its base the log end (2), but a fetch at the gap "
        "recovery left below it (1) reads the segment's bytes up to its size and Kafka serves "
        "offsets 2 and 3 past the log end; kafkatx bounds reads by the log end",
        {"ops": [["txn", 0, 1], ["txn", 0, 1], ["roll"], ["txn", 0, 1], ["txn", 0, 1],
                 ["txn", 0, 1]], "clean_shutdown": True, "flipped": [0], "missing_index": [0],
         "recovery_point": 0, "torn_tail": 1}),
    "corrupt_segment_below_the_log_start_made_again": (
        "recovery cuts the first segment at a flipped byte and deletes the segments after it; "
        "the log end falls below the log start, LogLoader#deleteSegmentsIfLogStartGreaterThan"
        "LogEnd deletes every segment and a new empty one opens at the log start, under the "
        "name of a segment just deleted: the file is there, with other bytes (soak, 2026-11-28)",
        {"ops": [["txn", 0, 1], ["roll"], ["txn", 0, 1]], "flipped": [0], "log_start": 1,
         "recovery_point": 0}),
    "clean_shutdown_with_a_partial_last_batch": (
        "readNextOffset starts at the offset index's last entry: when that entry is the partial "
        "batch, the segment reads as empty and the log end falls below the log start",
        {"ops": [["txn", 0, 1], ["txn", 0, 2], ["txn", 0, 1], ["txn", 0, 1], ["txn", 0, 1]],
         "clean_shutdown": True, "log_start": 2, "torn_tail": 1}),
    "segment_recovered_twice": (
        "a segment recovered by loadSegmentFiles (its .txnindex fails the sanity check) is "
        "recovered again by recoverLog: its bytes are already cut, the segments after it stay",
        {"ops": [["txn", 0, 1], ["roll"], ["txn", 0, 1], ["txn", 0, 1], ["txn", 0, 1],
                 ["txn", 0, 1], ["txn", 0, 1], ["roll"], ["txn", 0, 1], ["txn", 0, 1],
                 ["txn", 0, 1], ["txn", 0, 1]],
         "bad_txnindex": [0], "flipped": [0], "retention_segments": 1, "recovery_point": 0}),
    "corrupt_marker_below_the_recovery_point": (
        "the rebuild reads a marker whose control record no longer decodes "
        "(EndTransactionMarker.deserialize throws): the partition does not load",
        {"ops": [["txn", 0, 1], ["roll"], ["commit", 0], ["roll"], ["txn", 0, 1]],
         "flipped": [1], "missing_snapshots": [0, 1, 2], "recovery_point": 3}),
    "producers_idle_a_day_expire_on_load": (
        "ProducerStateManager#loadFromSnapshot drops producers idle for producer.id.expiration.ms "
        "(a day) without an open transaction; the one with a transaction open stays",
        {"ops": [["idem", 0, 2], ["txn", 1, 1], ["roll"], ["idem", 0, 1], ["roll"],
                 ["idem", 2, 1]], "clean_shutdown": True, "recovery_point": 3,
         "hours_later": 48}),
    "cleaned_segment_and_a_crash": (
        "a segment the cleaner emptied of an aborted transaction's data keeps the marker and "
        "its .txnindex entry; recovery rebuilds the entry from the marker alone",
        {"ops": [["txn", 0, 2], ["abort", 0], ["txn", 1, 1], ["commit", 1], ["roll"],
                 ["txn", 2, 1]], "cleaned": [0], "recovery_point": 0}),
}


def spec_of(name: str) -> LogDirSpec:
    return LogDirSpec.from_json(json.dumps(CASES[name][1]))


def build_case(name: str, where: Path) -> Path:
    """The case's log dir under ``where``; returns the log dir."""
    log_dir = where / name
    build(spec_of(name), log_dir)
    return log_dir


def recorded() -> dict[str, dict[str, Any]]:
    return json.loads(RECORDED.read_text()) if RECORDED.exists() else {}


def record(versions: list[str]) -> None:
    from .load_compare import kafka_view
    from .storage import KafkaLoad

    answers: dict[str, dict[str, Any]] = {}
    for version in versions:
        load = KafkaLoad(version)
        try:
            with tempfile.TemporaryDirectory() as tmp:
                for name in CASES:
                    log_dir = build_case(name, Path(tmp))
                    answer = load.load(log_dir, spec_of(name).now_ms)
                    answer = answer["partitions"][PARTITION_DIR]
                    answers.setdefault(name, {})[version] = kafka_view(answer)
        finally:
            load.close()
    RECORDED.write_text(json.dumps(answers, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    from .dist import KAFKA_VERSIONS

    record(sys.argv[1:] or list(KAFKA_VERSIONS))
