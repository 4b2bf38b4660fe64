"""Kafka's own log load (``java/LoadDriver.java``) on a bundled log dir: the oracle answers."""

from __future__ import annotations

from pathlib import Path

from .storage import KafkaLoad

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "logdir"
NOW_MS = 1_763_700_400_000


def test_kafka_loads_a_copy_and_leaves_the_evidence_alone(kafka_load: KafkaLoad) -> None:
    before = {p.name: p.stat().st_mtime_ns for p in (FIXTURE / "payments-0").iterdir()}
    answer = kafka_load.load(FIXTURE, NOW_MS)
    assert {p.name: p.stat().st_mtime_ns for p in (FIXTURE / "payments-0").iterdir()} == before
    assert answer["had_clean_shutdown"] is False
    payments = answer["partitions"]["payments-0"]
    # UnifiedLog#lastStableOffset: ledger-writer's open transaction from 19 holds it
    assert payments["last_stable_offset"] == 19
    assert payments["producers"]["4003"]["current_txn_first_offset"] == 19
    # LogSegment#recover of the segment holding the recovery point (32) rewrote its snapshot
    assert "00000000000000000032.snapshot" in payments["files"]["rewritten"]
    # read(TXN_COMMITTED): the first segment's fetch carries 4002's aborted transaction
    first = payments["fetches"][0]
    assert first["fetch_offset"] == 0 and first["aborted"] == [[4002, 9]]
    assert max(b[1] for f in payments["fetches"] for b in f["batches"]) == 18
