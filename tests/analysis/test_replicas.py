"""Several brokers' copies of a partition compared offline, as replication reconciles them.

Copies are hand-built with the project's writers (``LogDirBuilder``), each batch carrying the
partition leader epoch it was written in, and a ``leader-epoch-checkpoint`` where a broker
became leader without appending.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkatx.cli.main import cli
from kafkatx.formats.checkpoints import EpochEntry, build_leader_epoch_checkpoint
from kafkatx.formats.record_batch import ControlType, Record, build_batch, build_control_batch
from kafkatx.semantics.leader_epochs import EpochCache, truncation_offset
from tests.analysis.logdirs import T0, LogDirBuilder, PartitionBuilder

REPLICA_KINDS = {"replica_lagging", "replica_divergence", "replica_lost_committed_records",
                 "replica_content_mismatch", "replica_marker_mismatch",
                 "replica_outcome_mismatch"}


def run(*args: str | Path, expect: int = 0) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == expect, (result.stdout, result.stderr)
    return result.stdout


def append(p: PartitionBuilder, epoch: int, n: int = 1, *, pid: int = -1, txn: bool = False,
           marker: ControlType | None = None, tag: str = "") -> PartitionBuilder:
    """A batch of ``n`` records (or a marker) written in leader epoch ``epoch``."""
    base = p.log_end_offset
    if marker is not None:
        return p.raw(build_control_batch(base_offset=base, producer_id=pid, producer_epoch=0,
                                         control_type=marker, timestamp=T0 + base,
                                         partition_leader_epoch=epoch))
    records = [Record(offset=base + i, timestamp=T0 + base + i, key=f"{tag}{base + i}".encode(),
                      value=b"v") for i in range(n)]
    return p.raw(build_batch(records, base_offset=base, partition_leader_epoch=epoch,
                             producer_id=pid, producer_epoch=0,
                             base_sequence=base if pid >= 0 else -1, is_transactional=txn))


def broker(root: Path, name: str) -> tuple[LogDirBuilder, PartitionBuilder]:
    b = LogDirBuilder(root / name)
    return b, b.partition("t", 0)


def unclean_election(root: Path) -> None:
    """broker-1: 0..9 in epoch 0 (HW 10); broker-2: 0..5 in epoch 0, then 6..8 in epoch 1."""
    b1, p1 = broker(root, "broker-1")
    append(p1, 0, 6, tag="a")
    append(p1, 0, 4, tag="a")
    b1.build()
    b2, p2 = broker(root, "broker-2")
    append(p2, 0, 6, tag="a")
    append(p2, 1, 3, tag="b")
    b2.build()


def epochs_file(p: PartitionBuilder, *entries: tuple[int, int]) -> None:
    p.dir.mkdir(parents=True, exist_ok=True)
    (p.dir / "leader-epoch-checkpoint").write_bytes(build_leader_epoch_checkpoint(
        EpochEntry(epoch=e, start_offset=s) for e, s in entries))


def inspect(root: Path) -> dict:
    return json.loads(run("inspect", root, "--format", "json"))


def replica_findings(doc: dict) -> list[dict]:
    return [f for f in doc["findings"] if f["kind"] in REPLICA_KINDS]


def roles(doc: dict) -> dict[str, tuple[str, int | None]]:
    (comp,) = doc["replicas"]
    return {c["broker"]: (c["role"], c["truncation_offset"]) for c in comp["copies"]}


# -- the epoch cache and the truncation point --------------------------------------------------


def test_end_offset_for_follows_the_leader_epoch_file_cache() -> None:
    """``LeaderEpochFileCache#endOffsetFor``: the latest epoch ends at the log end; an older
    epoch at the next epoch's start, reported as the largest epoch <= the one asked; an epoch
    older than all gives the first start; newer than all, undefined."""
    cache = EpochCache.from_batches([(1, 0), (1, 5), (3, 10), (3, 12), (5, 20)])
    assert cache.entries == [(1, 0), (3, 10), (5, 20)]
    assert cache.end_offset_for(5, 30) == (5, 30)
    assert cache.end_offset_for(3, 30) == (3, 20)
    assert cache.end_offset_for(4, 30) == (3, 20)
    assert cache.end_offset_for(0, 30) == (0, 0)
    assert cache.end_offset_for(7, 30) == (-1, -1)
    assert cache.end_offset_for(-1, 30) == (-1, -1)


def test_a_new_epoch_at_an_earlier_offset_replaces_later_entries() -> None:
    """``LeaderEpochFileCache#assign`` / ``maybeTruncateNonMonotonicEntries``."""
    cache = EpochCache.from_batches([(1, 0), (2, 10), (4, 20)])
    cache.assign(3, 15)
    assert cache.entries == [(1, 0), (2, 10), (3, 15)]


def test_truncation_asks_again_for_an_epoch_the_follower_lacks() -> None:
    """``AbstractFetcherThread#getOffsetTruncationState``: the leader answers epoch 1 ending
    at 8, which the follower (epochs 0 and 2) does not know: it truncates to the end of its
    epoch 0 (5) and asks again, then stops at min(leader end 8... its own) = 5."""
    leader = EpochCache([(0, 0), (1, 5), (3, 8)])
    follower = EpochCache([(0, 0), (2, 5)])
    t = truncation_offset(leader, 12, follower, 9, 5)
    assert (t.offset, t.rounds) == (5, 2)
    same = truncation_offset(leader, 12, EpochCache([(0, 0), (1, 5), (3, 8)]), 10, 10)
    assert (same.offset, same.rounds) == (10, 1)  # a prefix of the leader: nothing to cut


# -- copies compared -------------------------------------------------------------------------


def test_identical_and_lagging_copies(tmp_path: Path) -> None:
    """Followers fetch the leader's batches as they are (``ReplicaFetcherThread`` appends with
    ``appendAsFollower``): a copy that is a prefix of the leader's only lags."""
    for name, n in (("broker-1", 6), ("broker-2", 6), ("broker-3", 4)):
        b, p = broker(tmp_path, name)
        append(p, 0, 3)
        append(p, 1, 1)
        if n == 6:
            append(p, 1, 2)
        b.build()
    doc = inspect(tmp_path)
    assert roles(doc) == {"broker-1": ("authoritative", None), "broker-2": ("in_sync", 6),
                          "broker-3": ("lagging", 4)}
    assert [(f["kind"], f["offset"]) for f in replica_findings(doc)] == [
        ("replica_lagging", 4)]


def test_unclean_election_lost_acknowledged_records(tmp_path: Path) -> None:
    """broker-1 led epoch 0 and acknowledged 0..9 (its HW 10); broker-2, out of sync at 6, was
    elected uncleanly in epoch 1 and appended 6..8. Following broker-2, broker-1 truncates to 6
    (OffsetsForLeaderEpoch: epoch 0 ends at 6 on the leader): 6..9 were committed and are lost
    (``AbstractFetcherThread#getOffsetTruncationState``, ``LeaderEpochFileCache#endOffsetFor``)."""
    unclean_election(tmp_path)
    doc = inspect(tmp_path)
    assert roles(doc) == {"broker-2": ("authoritative", None), "broker-1": ("diverged", 6)}
    kinds = {f["kind"]: f for f in replica_findings(doc)}
    assert set(kinds) == {"replica_divergence", "replica_lost_committed_records"}
    lost = kinds["replica_lost_committed_records"]
    assert lost["severity"] == "error" and lost["offset"] == 6
    assert "offsets 6..9 below its high watermark 10" in lost["message"]
    (comp,) = doc["replicas"]
    b1row = next(c for c in comp["copies"] if c["broker"] == "broker-1")
    assert (b1row["divergent_records"], b1row["acknowledged_divergent_records"]) == (4, 4)
    verify = CliRunner().invoke(cli, ["verify", str(tmp_path)])
    assert verify.exit_code == 1 and "replica_lost_committed_records" in verify.stdout
    # replay each copy: broker-1's consumers saw a6..a9, broker-2's see b6..b8 instead
    keys = {}
    for name in ("broker-1", "broker-2"):
        out = run("replay", tmp_path, "--topic", "t", "--partition", "0", "--broker", name,
                  "--format", "jsonl")
        keys[name] = [json.loads(line)["key"] for line in out.splitlines()]
    assert keys["broker-1"][6:] == ["a6", "a7", "a8", "a9"]
    assert keys["broker-2"][6:] == ["b6", "b7", "b8"]
    # without --broker: the authoritative copy, what a consumer of the new leader reads
    result = CliRunner().invoke(cli, ["replay", str(tmp_path), "--topic", "t", "--partition",
                                      "0", "--format", "jsonl"])
    assert result.exit_code == 0, result.stderr
    assert [json.loads(line)["key"] for line in result.stdout.splitlines()] == keys["broker-2"]
    assert "replaying broker-2's copy, the authoritative one" in result.stderr


def test_a_marker_on_the_old_leader_only(tmp_path: Path) -> None:
    """A leader change during a commit: broker-1 (epoch 0) wrote producer 7's COMMIT marker at
    2 but it never reached broker-2, the new leader of epoch 1 (``Partition#makeLeader`` puts
    epoch 1 at offset 2 in its cache, ``leader-epoch-checkpoint``). On broker-2 the transaction
    is open and its LSO stays at 0; broker-1 truncates the marker when it follows. broker-1's
    marker is not below its HW: the transaction is completed but unreplicated there, so its LSO
    is 0 too (``ProducerStateManager#firstUndecidedOffset``, ``UnifiedLog#updateHighWatermark``).
    """
    b1, p1 = broker(tmp_path, "broker-1")
    append(p1, 0, 2, pid=7, txn=True)
    append(p1, 0, pid=7, marker=ControlType.COMMIT)
    p1.hw(2)
    b1.build()
    b2, p2 = broker(tmp_path, "broker-2")
    append(p2, 0, 2, pid=7, txn=True)
    b2.build()
    epochs_file(p2, (0, 0), (1, 2))
    doc = inspect(tmp_path)
    assert roles(doc) == {"broker-2": ("authoritative", None), "broker-1": ("diverged", 2)}
    kinds = {f["kind"]: f for f in replica_findings(doc)}
    assert set(kinds) == {"replica_divergence", "replica_marker_mismatch"}
    mismatch = kinds["replica_marker_mismatch"]
    assert mismatch["producer_id"] == 7 and mismatch["offset"] == 0
    assert "open on broker-2" in mismatch["message"] and "COMMIT marker at offset 2" in \
        mismatch["message"]
    lso = {r["broker"]: r["last_stable_offset"] for r in json.loads(
        run("lso", tmp_path, "--format", "json"))}
    assert lso == {"broker-1": 0, "broker-2": 0}
    assert "unreplicated" in mismatch["message"] and "divergent tail (from 2)" in \
        mismatch["message"]


def test_an_abort_on_one_copy_and_a_commit_on_the_other(tmp_path: Path) -> None:
    """Issue 25's failover: broker-1, leader and coordinator in epoch 0, wrote producer 7's
    ABORT marker at 2 (the abort was confirmed) but never replicated it; broker-2 became
    leader in epoch 1 without it, the producer's next transaction went on from the same first
    offset and its COMMIT at 4 committed the aborted records too. Both copies have an ended
    transaction from offset 0, so neither is open anywhere; the comparison reports the two
    outcomes (and the divergence), where before it reported the divergence only."""
    b1, p1 = broker(tmp_path, "broker-1")
    append(p1, 0, 2, pid=7, txn=True, tag="aborted")
    append(p1, 0, pid=7, marker=ControlType.ABORT)
    p1.hw(2)
    b1.build()
    b2, p2 = broker(tmp_path, "broker-2")
    append(p2, 0, 2, pid=7, txn=True, tag="aborted")
    append(p2, 1, 2, pid=7, txn=True, tag="next")
    append(p2, 1, pid=7, marker=ControlType.COMMIT)
    b2.build()
    doc = inspect(tmp_path)
    assert roles(doc) == {"broker-2": ("authoritative", None), "broker-1": ("diverged", 2)}
    kinds = {f["kind"]: f for f in replica_findings(doc)}
    assert set(kinds) == {"replica_divergence", "replica_outcome_mismatch"}
    outcome = kinds["replica_outcome_mismatch"]
    assert (outcome["severity"], outcome["producer_id"], outcome["offset"]) == ("error", 7, 0)
    assert "committed on broker-2 (COMMIT marker at offset 4)" in outcome["message"]
    assert "aborted on broker-1 (ABORT marker at offset 2)" in outcome["message"]
    assert not json.loads(run("verify", tmp_path, "--format", "json", expect=1))["ok"]


def test_different_batches_where_the_copies_agree_by_epoch(tmp_path: Path) -> None:
    """Below the truncation point replicas hold the leader's batches byte for byte
    (``appendAsFollower`` keeps them as fetched): a CRC difference there is damage."""
    for name, tag in (("broker-1", "x"), ("broker-2", "y")):
        b, p = broker(tmp_path, name)
        append(p, 0, 2)
        append(p, 0, 2, tag=tag)
        b.build()
    kinds = [f["kind"] for f in replica_findings(inspect(tmp_path))]
    assert kinds == ["replica_content_mismatch"]


@pytest.mark.parametrize("label", ["broker-9", "nope"])
def test_replay_of_an_unknown_copy_is_one_line(tmp_path: Path, label: str) -> None:
    for name in ("broker-1", "broker-2"):
        b, p = broker(tmp_path, name)
        append(p, 0, 1)
        b.build()
    result = CliRunner().invoke(cli, ["replay", str(tmp_path), "--topic", "t", "--partition",
                                      "0", "--broker", label])
    assert result.exit_code == 1
    assert "(copies: broker-1, broker-2)" in str(result.exception)
