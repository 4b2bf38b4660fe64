"""Several brokers' copies of the coordinator's and the data partitions: the copy of the newest
leader epoch speaks for each partition (``replica_authority``), as on a real 3-broker Kafka
cluster whose coordinator's broker was killed between PrepareCommit and the markers
(``tests/realkafka/test_cluster_faults.py`` runs it on Kafka itself).

broker-1 is the old leader of both partitions (epoch 0), SIGKILLed: its ``__transaction_state``
copy holds a record the new leader never got (an unreplicated tail, so it is the larger copy),
and its data partition holds another producer's transaction above the point where the new
leader's log goes on. broker-2, the new leader (epoch 1), completed the commit: CompleteCommit
in its coordinator log and the COMMIT marker in the data partition.
"""

from __future__ import annotations

from pathlib import Path

from kafkatx.analysis.coordinator import TOPIC as TXN_TOPIC
from kafkatx.engines.local import AnalysisOptions, inspect_paths
from kafkatx.formats.checkpoints import EpochEntry, build_leader_epoch_checkpoint
from kafkatx.formats.transaction_log import (
    TransactionLogValue,
    TransactionState,
    TxnTopicPartitions,
)
from kafkatx.semantics.coordinator_partition import partition_for
from tests.analysis.logdirs import T0, LogDirBuilder, PartitionBuilder

S = TransactionState
PID, OTHER = 5000, 6000
TXN_PARTITION = partition_for("writer", 4)


def value(state: TransactionState, pid: int, at: int, parts: list[int] | None = None
          ) -> TransactionLogValue:
    return TransactionLogValue(
        version=0, producer_id=pid, producer_epoch=0, transaction_timeout_ms=60_000,
        state=int(state),
        partitions=None if parts is None else (TxnTopicPartitions(topic="t", partition_ids=tuple(
            parts)),),
        last_update_timestamp_ms=T0 + at, start_timestamp_ms=T0 + 1_000)


def coordinator_record(p: PartitionBuilder, tid: str, v: TransactionLogValue, epoch: int) -> None:
    p.txn_state(tid, v, partition_leader_epoch=epoch)


def epochs(p: PartitionBuilder, *entries: tuple[int, int]) -> None:
    (p.dir / "leader-epoch-checkpoint").write_bytes(build_leader_epoch_checkpoint(
        EpochEntry(epoch=e, start_offset=s) for e, s in entries))


def two_brokers(root: Path) -> None:
    for name in ("broker-1", "broker-2"):
        b = LogDirBuilder(root / name)
        coord = b.partition(TXN_TOPIC, TXN_PARTITION)
        coordinator_record(coord, "writer", value(S.ONGOING, PID, 1_000, [0]), 0)
        coordinator_record(coord, "writer", value(S.PREPARE_COMMIT, PID, 2_000, [0]), 0)
        data = b.partition("t", 0)
        data.data(pid=PID, n=3, txn=True, at=T0 + 1_100)
        if name == "broker-1":  # the killed old leader: tails nobody else has
            coordinator_record(coord, "other", value(S.ONGOING, OTHER, 2_100, [0]), 0)
            data.data(pid=OTHER, n=2, txn=True, at=T0 + 2_200)
            coord.hw(2)
            data.hw(3)
        else:  # the new leader of epoch 1 completes the commit
            coordinator_record(coord, "writer", value(S.COMPLETE_COMMIT, PID, 9_000, []), 1)
            data.commit(pid=PID, epoch=0, coordinator_epoch=1, at=T0 + 8_000)
        b.build()
        if name == "broker-2":
            epochs(coord, (0, 0), (1, 2))
            epochs(data, (0, 0), (1, 3))


def test_the_newest_leaders_copies_speak_for_the_partitions(tmp_path: Path) -> None:
    two_brokers(tmp_path)
    options = AnalysisOptions(transaction_state_partitions=4)
    result = inspect_paths([tmp_path], keep_timeline=True, options=options)
    # the new coordinator's log, not the larger copy of the killed one
    assert result.coordinator is not None
    assert Path(result.coordinator.sources[TXN_PARTITION]).parent.name == "broker-2"
    kinds = {(f.kind, f.topic, f.offset) for f in result.findings}
    # committed: no stuck PrepareCommit; the killed broker's divergent tail is told as such,
    # not as an open, orphaned or hanging transaction of the partition
    assert not {k for k, _, _ in kinds} & {"stuck_prepare", "open_transaction",
                                            "hanging_transaction", "orphan_transaction",
                                            "lso_pinned"}
    assert ("replica_divergence", "t", 3) in kinds
    assert ("replica_divergence", TXN_TOPIC, 2) in kinds
    roles = {(c.topic, c.copies[0].broker): [(x.broker, x.role) for x in c.copies]
             for c in result.replicas}
    assert roles[("t", "broker-1")] == [("broker-1", "diverged"), ("broker-2", "authoritative")]
    assert result.timeline is not None
    (row,) = [r for r in result.timeline.transactions if r.transactional_id == "writer"]
    assert row.outcome == "committed"
    assert [(e.topic, e.partition, e.marker_offset, e.status) for e in row.partitions] == [
        ("t", 0, 3, "committed")]
    # each copy alone is what that broker's files say
    alone = inspect_paths([tmp_path / "broker-1"], options=options)
    assert {"stuck_prepare", "open_transaction"} <= {f.kind for f in alone.findings}


def test_of_equal_logs_the_leaders_copy_has_the_highest_high_watermark(tmp_path: Path) -> None:
    """coord-data-1 on a real cluster: the leader and its follower hold the same batches in the
    same epoch, the follower's checkpoint an HW below the COMMIT marker (it learns the leader's
    HW with its next fetch): the follower's copy alone has the transaction unreplicated (LSO
    0), the partition's LSO is the leader's (3), whichever log dir comes first."""
    for name, hw in (("broker-1", 2), ("broker-2", 3)):
        b = LogDirBuilder(tmp_path / name)
        p = b.partition("t", 1)
        p.data(pid=PID, n=2, txn=True).commit(pid=PID, epoch=0).hw(hw)
        b.build()
        epochs(p, (0, 0))
    result = inspect_paths([tmp_path])
    ((comp,),) = [[c for c in result.replicas if c.topic == "t"]]
    assert [(c.broker, c.role) for c in comp.copies] == [("broker-1", "in_sync"),
                                                         ("broker-2", "authoritative")]
    lso = {r.broker: (r.last_stable_offset, r.lso_source) for r in result.partitions}
    assert lso == {"broker-1": (0, "unreplicated_transaction"), "broker-2": (3, "high_watermark")}
