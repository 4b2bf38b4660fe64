"""The cluster log dirs under fixtures/served-replicas/, written by ``kafkatx serve --brokers 3``
under librdkafka (``fixtures/replica_scenarios.py``): what the replica comparison of ``kafkatx
inspect``/``verify`` reports on each, and that reading them changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kafkatx.formats.checkpoints import read_leader_epoch_checkpoint
from kafkatx.formats.segment_scan import scan_segment
from tests.test_served_fixtures import findings

REPLICAS = Path(__file__).resolve().parent.parent / "fixtures" / "served-replicas"


def copies(case: str, partition_dir: str) -> dict[str, Path]:
    return {b.name: b / partition_dir for b in sorted((REPLICAS / case).glob("broker-*"))
            if (b / partition_dir).is_dir()}


def log_bytes(path: Path) -> bytes:
    return b"".join(f.read_bytes() for f in sorted(path.glob("*.log")))


def epochs(path: Path) -> list[tuple[int, int]]:
    read = read_leader_epoch_checkpoint((path / "leader-epoch-checkpoint").read_bytes())
    return [(e.epoch, e.start_offset) for e in read.entries]


def markers(path: Path) -> list[tuple[int, int, int]]:
    """(offset, control type, partition leader epoch) of each control batch."""
    out = []
    for f in sorted(path.glob("*.log")):
        scan = scan_segment(f.read_bytes())
        h = scan.headers
        for i in range(len(h)):
            if scan.control_type[i] >= 0:
                out.append((int(h.base_offset[i]), int(scan.control_type[i]),
                            int(h.partition_leader_epoch[i])))
    return out


def kinds(found: list[dict[str, Any]]) -> set[tuple[str, str, int | None]]:
    return {(f["kind"], f["topic"], f["offset"]) for f in found}


def test_leader_change_during_a_commit() -> None:
    """``TransactionMarkerChannelManager`` retries a marker until the partition's new leader
    takes it: payments-0's COMMIT marker of the second transaction, delayed past the clean stop
    of its leader (``PartitionChangeBuilder#electLeader`` from the ISR), is at offset 4 in the
    new leader's epoch 1 on every copy, after the old leader rejoined (``ReplicaFetcherThread``);
    the copies are identical and the replica comparison finds nothing."""
    payments = copies("leader-change-commit", "payments-0")
    assert len(payments) == 3
    assert len({log_bytes(p) for p in payments.values()}) == 1
    for path in payments.values():
        assert markers(path) == [(1, 1, 0), (4, 1, 1), (6, 1, 1)]
        assert epochs(path) == [(0, 0), (1, 4)]
    assert findings(REPLICAS / "leader-change-commit", verify_status=0) == []


def test_unclean_election_loses_a_marker() -> None:
    """``unclean.leader.election.enable``: the killed leader alone had the COMMIT marker
    (offset 5) of a transaction whose records every replica has; the uncleanly elected leader
    (epoch 1) holds the transaction open: ``hanging_transaction`` on its copy,
    ``replica_marker_mismatch`` (the marker only on the lost leader's copy), and that copy's
    divergent tail (``replica_divergence``, ``replica_lost_committed_records``), as
    ``AbstractFetcherThread#getOffsetTruncationState`` would truncate it."""
    payments = copies("unclean-lost-marker", "payments-0")
    by_epoch = {name: epochs(path)[-1][0] for name, path in payments.items()}
    (new_leader,) = [n for n, e in by_epoch.items() if e == 1]
    (old_leader,) = [n for n, p in payments.items() if markers(p)[-1][0] == 5]
    assert new_leader != old_leader
    assert [m[0] for m in markers(payments[new_leader])] == [2]
    found = findings(REPLICAS / "unclean-lost-marker", verify_status=1)
    assert {("hanging_transaction", "payments", 3), ("replica_marker_mismatch", "payments", 3),
            ("replica_divergence", "payments", 5),
            ("replica_lost_committed_records", "payments", 5)} <= kinds(found)
    # the killed leader wrote no replication-offset-checkpoint: its HW is unknown and said so
    (lost,) = [f for f in found if f["kind"] == "replica_lost_committed_records"]
    assert "may have been acknowledged" in lost["message"] and "None" not in lost["message"]
    hanging = [f for f in found if f["kind"] == "hanging_transaction"]
    assert any(new_leader in (f["location"] or "") or new_leader in (f["remediation"] or "")
               for f in hanging)


def test_follower_truncated_after_rejoining() -> None:
    """``AbstractFetcherThread#maybeTruncate`` (OffsetsForLeaderEpoch) and
    ``UnifiedLog#truncateTo``: the old leader's three acks=1 records of epoch 0 (offsets 2..4)
    are gone from its copy after it rejoined under the unclean leader of epoch 1, which wrote
    offsets 2..3; every copy is byte-identical, with the same leader epoch cache, and the
    replica comparison finds nothing."""
    audit = copies("follower-truncated", "audit-0")
    assert len(audit) == 3
    contents = {log_bytes(p) for p in audit.values()}
    assert len(contents) == 1
    (content,) = contents
    assert b"lost" not in content and content.count(b"after") == 2
    assert {tuple(epochs(p)) for p in audit.values()} == {((0, 0), (1, 2))}
    assert findings(REPLICAS / "follower-truncated", verify_status=0) == []
