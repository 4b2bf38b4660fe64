"""The broker's log cleaner on partition logs, ported from Kafka's ``LogCleanerTest`` (the
transaction cases) plus the ``.cleaned``/``.swap`` recovery of ``LogLoader``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkatx.broker.logdir.log_cleaner import CleanAborted, clean_log, clean_log_steps
from kafkatx.broker.logdir.work_steps import run_steps
from kafkatx.broker.logs.batch_header import split_batches
from kafkatx.broker.logs.log_values import LogConfig
from kafkatx.broker.logs.partition_log import PartitionLog
from kafkatx.broker.logs.segment_swap import recover_interrupted_swaps
from kafkatx.formats.record_batch import Record, build_batch, parse_batch

T0 = 1_760_000_000_000
DELETE_RETENTION = 86_400_000
LARGE = T0 + 1_000  # LogCleanerTest.largeTimestamp: after every record's timestamp


def new_log(path: Path, segment_bytes: int = 1 << 20) -> PartitionLog:
    log = PartitionLog("t", 0, path, LogConfig(segment_bytes=segment_bytes,
                                               max_message_bytes=1_048_588, delete=False,
                                               compact=True))
    log.open()
    return log


class Producer:
    """``appendTransactionalAsLeader`` / ``record(key, value, producerId, ...)``."""

    def __init__(self, log: PartitionLog, pid: int, epoch: int = 0, *, txn: bool = True):
        self.log, self.pid, self.epoch, self.txn, self.seq = log, pid, epoch, txn, 0

    def __call__(self, keys: list[int], value: bytes | None = b"v") -> None:
        records = [Record(offset=i, timestamp=T0, key=b"%d" % k, value=value)
                   for i, k in enumerate(keys)]
        self.log.append_as_leader(build_batch(
            records, producer_id=self.pid, producer_epoch=self.epoch, base_sequence=self.seq,
            is_transactional=self.txn), T0)
        self.seq += len(keys)

    def marker(self, commit: bool) -> None:
        self.log.append_end_txn_marker(producer_id=self.pid, producer_epoch=self.epoch,
                                       coordinator_epoch=0, commit=commit, now_ms=T0)


def batches(log: PartitionLog) -> list[tuple[object, list[Record]]]:
    out = []
    for seg in log.segments:
        data = seg.path.read_bytes()
        for h in split_batches(data)[0]:
            out.append((h, list(parse_batch(data, h.position, decode_records=True).records
                                or ())))
    return out


def offsets_in_log(log: PartitionLog) -> list[int]:
    """``LogCleanerTest#offsetsInLog``: records with a key and a value (markers included)."""
    return [r.offset for _, rs in batches(log) for r in rs
            if r.key is not None and r.value is not None]


def keys_in_log(log: PartitionLog) -> list[int]:
    """``LogTestUtils#keysInLog``: keys of data records with a value."""
    return [int(r.key) for h, rs in batches(log) if not h.is_control for r in rs
            if r.key is not None and r.value is not None]


def clean(log: PartitionLog, dirty: int, now: int) -> int:
    return clean_log(log, dirty, log.segments[-1].base_offset, now)


def test_commit_marker_removal(tmp_path: Path) -> None:
    """``LogCleanerTest#testCommitMarkerRemoval``: a commit marker stays while records of its
    transaction do, then until its delete horizon (set by the pass that found it removable)."""
    log = new_log(tmp_path / "t-0", 256)
    p = Producer(log, 1)
    p([1])
    p([2, 3])
    p.marker(True)
    p([2])
    p.marker(True)
    log.roll()
    dirty = clean(log, 0, LARGE)
    assert keys_in_log(log) == [1, 3, 2]
    assert offsets_in_log(log) == [0, 2, 3, 4, 5]
    p([1, 3])
    p.marker(True)
    log.roll()
    dirty = clean(log, dirty, LARGE)
    assert keys_in_log(log) == [2, 1, 3]
    assert offsets_in_log(log) == [3, 4, 5, 6, 7, 8]
    # A pass over the whole log finds the marker's transaction data gone and sets its delete
    # horizon (the marker stays); a pass after the horizon removes it. Kafka's test runs these
    # passes from the dirty offset 9 and still cleans, because its FakeOffsetMap keeps the last
    # offset across clear(); SkimpyOffsetMap resets it, so a pass over an empty dirty range
    # cleans nothing (end offset 0), as here.
    assert clean(log, dirty, LARGE) == 0
    clean(log, 0, LARGE)
    assert offsets_in_log(log) == [3, 4, 5, 6, 7, 8]
    clean(log, 0, LARGE + DELETE_RETENTION + 1)
    assert keys_in_log(log) == [2, 1, 3]
    assert offsets_in_log(log) == [4, 5, 6, 7, 8]
    log.close()


def test_abort_marker_removal(tmp_path: Path) -> None:
    """``LogCleanerTest#testAbortMarkerRemoval``: aborted records go at once, the abort marker
    after two passes (the first sets its delete horizon)."""
    log = new_log(tmp_path / "t-0", 256)
    p = Producer(log, 1)
    p([1])
    p([2, 3])
    p.marker(False)
    p([3])
    p.marker(True)
    log.roll()
    dirty = clean(log, 0, LARGE)
    assert keys_in_log(log) == [3]
    assert offsets_in_log(log) == [3, 4, 5]
    assert dirty == 6  # (Kafka's test cleans again from 6: see test_commit_marker_removal)
    clean(log, 0, LARGE)  # the abort marker's delete horizon is set
    assert offsets_in_log(log) == [3, 4, 5]
    clean(log, 0, LARGE + DELETE_RETENTION + 1)
    assert keys_in_log(log) == [3]
    assert offsets_in_log(log) == [4, 5]
    log.close()


def test_cleaner_retains_the_producers_last_sequence(tmp_path: Path) -> None:
    """``LogCleanerTest#testLogCleanerRetainsProducerLastSequence``: the last batch of each
    active producer stays (empty when superseded), keeping its last sequence."""
    log = new_log(tmp_path / "t-0", 1024)
    Producer(log, -1, -1, txn=False)([0])  # offset 0, no producer
    for pid in (1, 2, 3):
        Producer(log, pid, txn=False)([0])  # offsets 1, 2, 3
    p2 = Producer(log, 2, txn=False)
    p2.seq = 1
    p2([1])  # offset 4
    log.roll()
    clean(log, 0, T0)
    assert [h.last_offset for h, _ in batches(log)] == [1, 3, 4]
    assert {h.producer_id: h.last_sequence for h, _ in batches(log)} == {1: 0, 2: 1, 3: 0}
    assert keys_in_log(log) == [0, 1] and offsets_in_log(log) == [3, 4]
    log.close()


def test_cleaner_retains_the_last_sequence_of_an_aborted_transaction(tmp_path: Path) -> None:
    """``LogCleanerTest#testLogCleanerRetainsLastSequenceEvenIfTransactionAborted``: the aborted
    transaction's last batch stays empty while it is the producer's last data; a later batch
    lets it go."""
    log = new_log(tmp_path / "t-0", 1024)
    p = Producer(log, 1)
    p([1])
    p([2, 3])
    p.marker(False)
    log.roll()
    clean(log, 0, T0)
    assert [h.last_offset for h, _ in batches(log)] == [2, 3]
    assert keys_in_log(log) == [] and offsets_in_log(log) == [3]
    p([1, 5])
    log.roll()
    clean(log, 0, T0)
    assert [h.last_offset for h, _ in batches(log)] == [3, 5]
    assert {h.producer_id: h.last_sequence for h, _ in batches(log) if not h.is_control} == {
        1: 4}
    assert keys_in_log(log) == [1, 5] and offsets_in_log(log) == [3, 4, 5]
    log.close()


def test_tombstones_stay_until_their_delete_horizon_and_a_restart_reads_the_result(
        tmp_path: Path) -> None:
    """``Cleaner#shouldRetainRecord`` (KIP-534): a tombstone gets a delete horizon of now +
    delete.retention.ms in the pass that first keeps it, and goes in a pass after it; the
    cleaned log loads again with the same producer state and reads."""
    d = tmp_path / "t-0"
    log = new_log(d, 300)
    p = Producer(log, 4, txn=False)
    p([1, 2])
    p([1], value=None)
    p([3])
    log.roll()
    clean(log, 0, T0)
    tomb = [(h, r) for h, rs in batches(log) for r in rs if r.value is None]
    assert [r.offset for _, r in tomb] == [2]
    assert tomb[0][0].delete_horizon_ms == T0 + DELETE_RETENTION
    clean(log, 0, T0 + DELETE_RETENTION - 1)
    assert any(r.value is None for _, rs in batches(log) for r in rs)
    clean(log, 0, T0 + DELETE_RETENTION + 1)
    assert not any(r.value is None for _, rs in batches(log) for r in rs)
    assert keys_in_log(log) == [2, 3]
    log.close()
    again = PartitionLog("t", 0, d, replace(log.config))
    again.open()
    assert again.producer_state.producers[4].last_seq == 3
    assert again.log_end_offset == 4
    again.close()


def test_interrupted_swap_recovery(tmp_path: Path) -> None:
    """``LogLoader#removeTempFilesAndCollectSwapFiles`` and the swap passes of ``load``:
    ``.cleaned`` files (and ``.swap`` files above them) are removed, leaving the old segments;
    complete ``.swap`` files replace the segments whose offsets they cover."""
    d = tmp_path / "t-0"
    d.mkdir()
    for name in ("00000000000000000000.log", "00000000000000000000.index",
                 "00000000000000000005.log", "00000000000000000010.log"):
        (d / name).write_bytes(b"old")
    (d / "00000000000000000000.log.cleaned").write_bytes(b"")
    (d / "00000000000000000003.log.deleted").write_bytes(b"")
    recover_interrupted_swaps(d)
    assert sorted(p.name for p in d.iterdir()) == [
        "00000000000000000000.index", "00000000000000000000.log",
        "00000000000000000005.log", "00000000000000000010.log"]
    swap = build_batch([Record(offset=6, timestamp=T0, key=b"k", value=b"v")], base_offset=6)
    (d / "00000000000000000000.log.swap").write_bytes(swap)
    (d / "00000000000000000000.index.swap").write_bytes(b"")
    recover_interrupted_swaps(d)
    assert sorted(p.name for p in d.iterdir()) == [
        "00000000000000000000.index", "00000000000000000000.log", "00000000000000000010.log"]
    assert (d / "00000000000000000000.log").read_bytes() == swap


def test_segment_ms_makes_a_quiet_log_cleanable_and_the_lags_hold_it(tmp_path: Path) -> None:
    """``LogCleanerManager#grabFilthiestCompactedLog`` with ``segment.ms``: the active segment is
    never cleaned, so a compacted log becomes cleanable when a batch past ``segment.ms`` rolls
    it (``LogSegment#shouldRoll``); ``min.compaction.lag.ms`` keeps a segment younger than it
    dirty, ``max.compaction.lag.ms`` makes an old one due below ``min.cleanable.dirty.ratio``;
    a clean writes ``cleaner-offset-checkpoint``."""
    from kafkatx.broker.config.broker_config import BrokerConfig
    from kafkatx.broker.logdir.log_cleaner import LogCleaner
    from kafkatx.broker.logdir.log_manager import LogManager

    logs = LogManager(BrokerConfig(log_dir=tmp_path / "logs"))
    logs.start()
    topic = logs.create_topic("stock", 1, {"cleanup.policy": "compact", "segment.ms": "1000"})
    log = topic.logs[0]
    cleaner = LogCleaner(logs)
    p = Producer(log, 3, txn=False)
    p([1, 2])
    p([1, 2])
    assert len(log.segments) == 1 and cleaner.grab_filthiest(T0 + 10_000) is None
    later = Record(offset=0, timestamp=T0 + 2_000, key=b"9", value=b"v")
    log.append_as_leader(build_batch([later], producer_id=3, producer_epoch=0,
                                     base_sequence=4), T0 + 2_000)
    assert [s.base_offset for s in log.segments] == [0, 4]  # rolled by segment.ms
    chosen = cleaner.grab_filthiest(T0 + 10_000)
    assert chosen is not None and chosen[1].first_uncleanable_offset == 4
    young = replace(log.config, min_compaction_lag_ms=60_000)
    log.update_config(young)
    assert cleaner.grab_filthiest(T0 + 10_000) is None  # segment 0 is younger than the lag
    log.update_config(replace(young, min_compaction_lag_ms=0, min_cleanable_dirty_ratio=1.0,
                              max_compaction_lag_ms=5_000))
    result = cleaner.clean_filthiest(T0 + 10_000)  # due: older than max.compaction.lag.ms
    assert result is not None and result.end_offset == 4
    assert cleaner.checkpoints() == {("stock", 0): 4}
    assert keys_in_log(log) == [1, 2, 9]
    # LogManager#asyncDelete: a deleted topic leaves cleaner-offset-checkpoint.
    logs.delete_topic("stock")
    assert cleaner.checkpoints() == {}
    logs.shutdown()


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.lists(st.tuples(st.integers(0, 5), st.booleans()), min_size=1,
                                   max_size=4), st.booleans(), st.booleans()),
                min_size=1, max_size=14),
       st.integers(200, 700))
def test_a_clean_leaves_what_kafkas_rules_say(tmp_path_factory: pytest.TempPathFactory,
                                              history: list[tuple[list[tuple[int, bool]], bool,
                                                                  bool]],
                                              segment_bytes: int) -> None:
    """``Cleaner#doClean`` over random histories (transactional and idempotent batches of keyed
    records and tombstones, some transactions aborted), against a model that shares no code
    with the cleaner: below the first uncleanable offset exactly the last committed record of
    each key remains (tombstones within delete.retention.ms too), nothing of an aborted
    transaction, and the rest of the log is untouched; the cleaned log loads again."""
    d = tmp_path_factory.mktemp("clean") / "t-0"
    log = new_log(d, segment_bytes)
    txn_producer, plain = Producer(log, 1), Producer(log, 2, txn=False)
    written: list[tuple[int, bytes, bytes | None, bool]] = []
    for n, (records, transactional, commit) in enumerate(history):
        producer = txn_producer if transactional else plain
        start = log.log_end_offset
        for i, (key, tombstone) in enumerate(records):
            producer([key], value=None if tombstone else b"%d-%d" % (n, i))
        committed = commit or not transactional
        written += [(start + i, b"%d" % key, None if tomb else b"%d-%d" % (n, i), committed)
                    for i, (key, tomb) in enumerate(records)]
        if transactional:
            producer.marker(commit)
    log.roll()
    upper = log.segments[-1].base_offset
    clean_log(log, 0, upper, T0 + 1_000)
    latest = {key: offset for offset, key, _, ok in written if ok and offset < upper}
    expected = [(o, k, v) for o, k, v, ok in written
                if ok and (o >= upper or latest[k] == o)]
    got = [(r.offset, r.key, r.value) for h, rs in batches(log) if not h.is_control
           for r in rs]
    assert got == expected
    log.close()
    again = PartitionLog("t", 0, d, log.config)
    again.open()
    assert again.log_end_offset == log.log_end_offset
    again.close()


def test_a_clean_aborts_when_the_log_is_truncated_under_it(tmp_path: Path) -> None:
    """``LogCleanerManager#abortAndPauseCleaning`` (``LogManager#truncateTo``): a clean run in
    slices, the log truncated between two of them (a follower after a leader change), ends
    without swapping anything in: no ``.cleaned`` or ``.swap`` file is left, the truncated
    segments are as the truncation left them, and a clean run afterwards completes."""
    log = new_log(tmp_path / "t-0", segment_bytes=400)
    for i in range(12):
        log.append_as_leader(build_batch(
            [Record(offset=j, timestamp=T0, key=b"%d" % (j % 3), value=b"v%d" % i)
             for j in range(4)]), T0)
    assert len(log.segments) > 3
    upper = log.segments[-1].base_offset
    steps = clean_log_steps(log, 0, upper, LARGE)
    next(steps)
    steps.send(None)
    log.truncate_to(log.segments[2].base_offset + 1)
    files_after_truncation = sorted(p.name for p in (tmp_path / "t-0").iterdir())
    with pytest.raises(CleanAborted):
        run_steps(steps)
    assert sorted(p.name for p in (tmp_path / "t-0").iterdir()) == files_after_truncation
    assert clean(log, 0, LARGE) > 0
    assert not list((tmp_path / "t-0").glob("*.cleaned")) + list(
        (tmp_path / "t-0").glob("*.swap"))
