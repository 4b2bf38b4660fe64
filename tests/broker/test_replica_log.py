"""A replica's log in a ``--brokers N`` serve: follower appends, truncation, the leader epoch
cache, the high watermark (``PartitionLog`` driven directly, no sockets)."""

from __future__ import annotations

from pathlib import Path

from kafkatx.broker.logs.log_values import LogConfig
from kafkatx.broker.logs.partition_log import PartitionLog
from kafkatx.formats.checkpoints import read_leader_epoch_checkpoint
from kafkatx.formats.record_batch import Record, build_batch
from kafkatx.formats.txn_index import read_txn_index
from kafkatx.semantics.read_committed import IsolationLevel

T0 = 1_760_000_000_000
CONFIG = LogConfig(segment_bytes=400, max_message_bytes=1 << 20)


def leader_log(path: Path, epoch: int = 0) -> PartitionLog:
    log = PartitionLog("t", 0, path / "t-0", CONFIG, leader_epoch=epoch)
    log.open()
    log.load_epoch_cache()
    log.assign_epoch(epoch, 0)
    return log


def follower_log(path: Path) -> PartitionLog:
    log = PartitionLog("t", 0, path / "t-0", CONFIG)
    log.open()
    log.load_epoch_cache()
    log.high_watermark_follows_log_end = False
    return log


def append_txn(log: PartitionLog, pid: int, first_seq: int, count: int) -> None:
    for i in range(count):
        batch = build_batch([Record(offset=0, timestamp=T0, key=b"k", value=b"v" * 20)],
                            base_offset=0, producer_id=pid, producer_epoch=0,
                            base_sequence=first_seq + i, is_transactional=True)
        log.append_as_leader(batch, T0)


def replicate(leader: PartitionLog, follower: PartitionLog) -> None:
    """What the replica fetcher does: read from the follower's end, append as follower."""
    while follower.log_end_offset < leader.log_end_offset:
        read = leader.read(follower.log_end_offset, 1 << 20, IsolationLevel.READ_UNCOMMITTED,
                           min_one_message=True, log_end=True)
        follower.append_as_follower(read.records, T0)


def files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_follower_copy_is_byte_identical(tmp_path: Path) -> None:
    """``UnifiedLog#appendAsFollower``: the leader's batches at their offsets, producer state by
    the same core (origin REPLICATION), an aborted transaction's ``.txnindex`` entry
    (``LogSegment#updateTxnIndex``) and the leader epoch cache from the batches; rolled as the
    leader rolled, every file (segments, indexes, snapshots, checkpoint) ends identical."""
    leader = leader_log(tmp_path / "a")
    follower = follower_log(tmp_path / "b")
    append_txn(leader, 5, 0, 10)
    leader.append_end_txn_marker(producer_id=5, producer_epoch=0, coordinator_epoch=0,
                                 commit=False, now_ms=T0)
    replicate(leader, follower)
    assert len(leader.segments) == 3
    assert follower.producer_state.ongoing_txns.first() is None
    assert follower.high_watermark == 0  # the leader's high watermark comes with its fetches
    leader.close()
    follower.close()
    assert files(tmp_path / "a" / "t-0") == files(tmp_path / "b" / "t-0")


def test_truncation_rebuilds_producer_state_and_txnindex(tmp_path: Path) -> None:
    """``UnifiedLog#truncateTo`` below an ABORT marker: the marker's batch, its ``.txnindex``
    entry and the later segments go; producer state is rebuilt from the newest snapshot below
    the cut (the transaction is open again); the leader epoch cache is truncated from the end
    (``LeaderEpochFileCache#truncateFromEnd``)."""
    leader = leader_log(tmp_path / "a")
    append_txn(leader, 7, 0, 6)
    leader.append_end_txn_marker(producer_id=7, producer_epoch=0, coordinator_epoch=0,
                                 commit=False, now_ms=T0)
    follower = follower_log(tmp_path / "b")
    replicate(leader, follower)
    follower.assign_epoch(3, follower.log_end_offset)  # as a leader of epoch 3 would
    assert follower.epochs is not None and follower.epochs.entries == [(0, 0), (3, 7)]
    follower.truncate_to(5, T0)
    assert follower.log_end_offset == 5
    assert follower.producer_state.first_undecided_offset() == 0
    assert not [e for s in follower.segments for e in s.aborted]
    assert all(not (s.file(".txnindex").exists() and read_txn_index(
        s.file(".txnindex").read_bytes(), base_offset=s.base_offset).entries)
               for s in follower.segments)
    checkpoint = read_leader_epoch_checkpoint(
        (tmp_path / "b" / "t-0" / "leader-epoch-checkpoint").read_bytes())
    assert [(e.epoch, e.start_offset) for e in checkpoint.entries] == [(0, 0)]
    replicate(leader, follower)  # refetching the rest gives back the same log
    leader.close()
    follower.close()
    # The same batches; the follower's segments split at 5 too, since a reloaded log (here
    # after the truncation) appends to a new segment where Kafka appends to the last one.
    assert records(tmp_path / "a" / "t-0") == records(tmp_path / "b" / "t-0")
    assert [s.base_offset for s in follower.segments] == [0, 4, 5]


def records(directory: Path) -> tuple[bytes, list[object]]:
    """The .log bytes in offset order and every .txnindex entry."""
    logs = b"".join(p.read_bytes() for p in sorted(directory.glob("*.log")))
    entries = [(e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset)
               for p in sorted(directory.glob("*.txnindex"))
               for e in read_txn_index(p.read_bytes(), base_offset=int(p.stem)).entries]
    return logs, entries


def test_high_watermark_and_log_start_of_an_aged_leader(tmp_path: Path) -> None:
    """An aged leader (records deleted below offset 4, ``UnifiedLog#maybeIncrementLogStart-
    Offset``): a new follower whose end is below the leader's log start starts over there
    (``UnifiedLog#truncateFullyAndStartAt``, what ``AbstractFetcherThread#handleOutOfRange-
    Error`` does), then replicates the rest; the follower's high watermark is the leader's,
    clamped to its own log (``UnifiedLog#updateHighWatermark``)."""
    leader = leader_log(tmp_path / "a")
    leader.high_watermark_follows_log_end = True
    append_txn(leader, 9, 0, 6)
    leader.delete_records_before(4)
    follower = follower_log(tmp_path / "b")
    follower.truncate_fully_and_start_at(leader.log_start_offset)
    assert (follower.log_start_offset, follower.log_end_offset) == (4, 4)
    replicate(leader, follower)
    assert follower.log_end_offset == 6
    assert follower.update_high_watermark(100) and follower.high_watermark == 6
    assert follower.producer_state.first_undecided_offset() == 4
