"""PartitionLog without a server: appends, duplicates, markers, .txnindex, reads, reopening."""

from __future__ import annotations

from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from kafkatx.broker.logs.batch_header import split_batches
from kafkatx.broker.logs.log_values import AppendError, LogConfig
from kafkatx.broker.logs.partition_log import LogLoadError, PartitionLog
from kafkatx.formats.producer_snapshot import read_producer_snapshot
from kafkatx.formats.record_batch import Record, build_batch, parse_batch
from kafkatx.formats.txn_index import read_txn_index
from kafkatx.semantics.read_committed import AbortedTransaction, IsolationLevel

T0 = 1_760_000_000_000
RC = IsolationLevel.READ_COMMITTED
RU = IsolationLevel.READ_UNCOMMITTED


def batch(n: int, *, pid: int = -1, epoch: int = -1, seq: int = -1, txn: bool = False,
          ts: int = T0, compression: int = 0) -> bytes:
    records = [Record(offset=i, timestamp=ts + i, key=b"k%d" % i, value=b"v" * 50)
               for i in range(n)]
    return build_batch(records, base_offset=0, producer_id=pid, producer_epoch=epoch,
                       base_sequence=seq, is_transactional=txn, compression_id=compression)


def new_log(path: Path, segment_bytes: int = 1 << 20, *, append_time: bool = False,
            segment_ms: int = 604_800_000) -> PartitionLog:
    log = PartitionLog("t", 0, path, LogConfig(segment_bytes=segment_bytes,
                                               max_message_bytes=1_048_588,
                                               log_append_time=append_time,
                                               segment_ms=segment_ms))
    log.open()
    return log


def offsets_in(data: bytes) -> list[tuple[int, int]]:
    headers, _ = split_batches(data)
    return [(h.base_offset, h.last_offset) for h in headers]


def test_offsets_are_assigned_and_duplicates_return_the_original(tmp_path: Path) -> None:
    log = new_log(tmp_path / "t-0")
    assert log.append_as_leader(batch(3), T0).first_offset == 0
    first = log.append_as_leader(batch(2, pid=7, epoch=0, seq=0), T0)
    assert (first.first_offset, first.last_offset, first.duplicate) == (3, 4, False)
    dup = log.append_as_leader(batch(2, pid=7, epoch=0, seq=0), T0)
    assert (dup.first_offset, dup.last_offset, dup.duplicate) == (3, 4, True)
    assert log.log_end_offset == 5 and log.high_watermark == 5
    with pytest.raises(AppendError) as gap:
        log.append_as_leader(batch(1, pid=7, epoch=0, seq=5), T0)
    assert gap.value.error == ErrorCode.out_of_order_sequence_number
    assert log.append_as_leader(batch(1, pid=7, epoch=1, seq=0), T0).first_offset == 5
    with pytest.raises(AppendError) as fenced:
        log.append_as_leader(batch(1, pid=7, epoch=0, seq=2), T0)
    assert fenced.value.error == ErrorCode.invalid_producer_epoch
    assert log.log_end_offset == 6
    data = log.read(0, 1 << 20, RU, min_one_message=True).records
    assert offsets_in(data) == [(0, 2), (3, 4), (5, 5)]
    assert all(parse_batch(data, h.position).crc_valid for h in split_batches(data)[0])


def test_client_batches_are_validated_like_kafka(tmp_path: Path) -> None:
    log = new_log(tmp_path / "t-0")
    good = bytearray(batch(2))
    corrupt = bytes(good[:-1]) + bytes([good[-1] ^ 0xFF])
    cases = {
        corrupt: ErrorCode.corrupt_message,
        bytes(good) * 2: ErrorCode.invalid_record,
        b"": ErrorCode.invalid_record,
        batch(2, pid=3, epoch=0, seq=-1): ErrorCode.invalid_record,
    }
    shifted = bytearray(good)
    shifted[7] = 5  # base offset 5: clients must send 0
    cases[bytes(shifted)] = ErrorCode.invalid_record
    for data, error in cases.items():
        with pytest.raises(AppendError) as exc:
            log.append_as_leader(data, T0)
        assert exc.value.error == error
    assert log.log_end_offset == 0


def test_markers_write_the_txn_index_and_bound_read_committed(tmp_path: Path) -> None:
    log = new_log(tmp_path / "t-0")
    log.append_as_leader(batch(2), T0)  # 0-1
    log.append_as_leader(batch(2, pid=10, epoch=0, seq=0, txn=True), T0)  # 2-3 aborted later
    log.append_as_leader(batch(1, pid=11, epoch=0, seq=0, txn=True), T0)  # 4 committed later
    assert (log.last_stable_offset, log.high_watermark) == (2, 5)
    assert offsets_in(log.read(0, 1 << 20, RC, min_one_message=True).records) == [(0, 1)]
    assert log.offset_for_timestamp(-1, RC).offset == 2  # type: ignore[union-attr]
    assert log.offset_for_timestamp(-1, RU).offset == 5  # type: ignore[union-attr]
    assert log.append_end_txn_marker(producer_id=10, producer_epoch=0, coordinator_epoch=3,
                                     commit=False, now_ms=T0 + 10) == 5
    assert log.last_stable_offset == 4  # pid 11 still open
    assert log.append_end_txn_marker(producer_id=11, producer_epoch=0, coordinator_epoch=3,
                                     commit=True, now_ms=T0 + 11) == 6
    assert log.last_stable_offset == log.high_watermark == 7
    result = log.read(0, 1 << 20, RC, min_one_message=True)
    assert result.aborted_transactions == [AbortedTransaction(first_offset=2, producer_id=10)]
    assert offsets_in(result.records)[-1] == (6, 6)
    assert log.read(0, 1 << 20, RU, min_one_message=True).aborted_transactions is None
    txn = read_txn_index((tmp_path / "t-0" / "00000000000000000000.txnindex").read_bytes(),
                         base_offset=0)
    assert [(e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset)
            for e in txn.entries] == [(10, 2, 5, 4)]
    with pytest.raises(AppendError) as exc:  # a zombie coordinator
        log.append_end_txn_marker(producer_id=11, producer_epoch=0, coordinator_epoch=2,
                                  commit=True, now_ms=T0 + 12)
    assert exc.value.error == ErrorCode.transaction_coordinator_fenced
    # Reloaded from the log alone (no snapshot, as after a SIGKILL), the markers keep their
    # coordinator epoch: the zombie coordinator is still fenced, the snapshot records epoch 3.
    log.close()
    for snap in (tmp_path / "t-0").glob("*.snapshot"):
        snap.unlink()
    again = new_log(tmp_path / "t-0")
    with pytest.raises(AppendError) as exc:
        again.append_end_txn_marker(producer_id=11, producer_epoch=0, coordinator_epoch=2,
                                    commit=True, now_ms=T0 + 13)
    assert exc.value.error == ErrorCode.transaction_coordinator_fenced
    again.close()
    (snap,) = (tmp_path / "t-0").glob("*.snapshot")
    entries = read_producer_snapshot(snap.read_bytes()).entries
    assert {e.producer_id: e.coordinator_epoch for e in entries} == {10: 3, 11: 3}


def test_reads_respect_max_bytes_and_min_one_message(tmp_path: Path) -> None:
    log = new_log(tmp_path / "t-0")
    for _ in range(4):
        log.append_as_leader(batch(3), T0)
    size = len(batch(3))
    whole = log.read(0, 10, RU, min_one_message=True).records
    assert len(whole) == size and offsets_in(whole) == [(0, 2)]
    assert log.read(0, 10, RU, min_one_message=False).records == whole[:10]
    part = log.read(4, size + 10, RU, min_one_message=False).records
    assert offsets_in(part) == [(3, 5)] and len(part) == size + 10  # ends in a partial batch
    assert log.read(12, 100, RU, min_one_message=True).records == b""
    with pytest.raises(AppendError) as exc:
        log.read(13, 100, RU, min_one_message=True)
    assert exc.value.error == ErrorCode.offset_out_of_range


def test_rolls_snapshot_and_reopen(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = new_log(d, segment_bytes=600)
    for i in range(6):
        log.append_as_leader(batch(2, pid=5, epoch=0, seq=2 * i), T0)
    log.append_as_leader(batch(1, pid=6, epoch=0, seq=0, txn=True), T0)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) > 2
    log.close()
    snaps = sorted(p.name for p in d.glob("*.snapshot"))
    assert snaps == [f"{b:020d}.snapshot" for b in bases[1:]] + ["00000000000000000013.snapshot"]
    final = read_producer_snapshot((d / snaps[-1]).read_bytes())
    assert [(e.producer_id, e.last_sequence, e.last_offset, e.current_txn_first_offset)
            for e in final.entries] == [(5, 11, 11, -1), (6, 0, 12, 12)]
    # Reopen: offsets, producer state and the open transaction come back.
    again = new_log(d, segment_bytes=600)
    assert again.log_end_offset == 13 and again.last_stable_offset == 12
    assert again.append_as_leader(batch(2, pid=5, epoch=0, seq=12), T0).first_offset == 13
    dup = again.append_as_leader(batch(2, pid=5, epoch=0, seq=12), T0)
    assert dup.duplicate and dup.first_offset == 13
    assert offsets_in(again.read(0, 1 << 20, RU, min_one_message=True).records)[0] == (0, 1)
    again.close()


def test_segments_roll_by_time_between_batch_timestamps(tmp_path: Path) -> None:
    """``LogSegment#shouldRoll``: a batch whose max timestamp is more than segment.ms after the
    first batch of the active segment starts a new segment."""
    d = tmp_path / "t-0"
    log = new_log(d, segment_ms=1000)
    log.append_as_leader(batch(1, ts=T0), T0)  # 0
    log.append_as_leader(batch(1, ts=T0 + 1000), T0)  # 1: exactly segment.ms, same segment
    log.append_as_leader(batch(1, ts=T0 + 1001), T0)  # 2: a new segment
    log.append_as_leader(batch(1, ts=T0 + 1500), T0)  # 3
    log.append_as_leader(batch(1, ts=T0 + 2001), T0)  # 4: 1000 after offset 2's, same segment
    log.append_as_leader(batch(1, ts=T0 + 2002), T0)  # 5: a new segment
    assert [s.base_offset for s in log.segments] == [0, 2, 5]
    log.close()
    assert sorted(p.name for p in d.glob("*.log")) == [
        "00000000000000000000.log", "00000000000000000002.log", "00000000000000000005.log"]


def test_log_append_time_rewrites_the_timestamp_and_crc(tmp_path: Path) -> None:
    log = new_log(tmp_path / "t-0", append_time=True)
    result = log.append_as_leader(batch(2, compression=1), T0 + 5000)
    assert result.log_append_time == T0 + 5000
    data = log.read(0, 1 << 20, RU, min_one_message=True).records
    parsed = parse_batch(data, 0, decode_records=True)
    assert parsed.crc_valid and parsed.header.timestamp_type == "LogAppendTime"
    assert parsed.header.max_timestamp == T0 + 5000
    assert [r.timestamp for r in parsed.records or ()] == [T0 + 5000] * 2


def test_offset_for_timestamp(tmp_path: Path) -> None:
    log = new_log(tmp_path / "t-0")
    log.append_as_leader(batch(3, ts=T0), T0)  # timestamps T0..T0+2
    log.append_as_leader(batch(3, ts=T0 + 100, compression=3), T0)  # T0+100..T0+102
    found = log.offset_for_timestamp(T0 + 1, RU)
    assert found is not None and (found.offset, found.timestamp) == (1, T0 + 1)
    found = log.offset_for_timestamp(T0 + 50, RU)
    assert found is not None and (found.offset, found.timestamp) == (3, T0 + 100)
    found = log.offset_for_timestamp(-3, RU)
    assert found is not None and (found.offset, found.timestamp) == (5, T0 + 102)
    assert log.offset_for_timestamp(T0 + 1000, RU) is None
    earliest = log.offset_for_timestamp(-2, RU)
    assert earliest is not None and earliest.offset == 0


def test_reopen_cuts_a_partial_tail_but_refuses_damage(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = new_log(d)
    for _ in range(3):
        log.append_as_leader(batch(2), T0)
    log.close()
    seg = d / "00000000000000000000.log"
    whole = seg.read_bytes()
    seg.write_bytes(whole + batch(2)[:30])  # a write cut short by a kill
    again = new_log(d)
    assert again.log_end_offset == 6 and seg.stat().st_size == len(whole)
    assert any("truncated" in p for p in again.load_problems)
    again.close()
    damaged = bytearray(seg.read_bytes())
    damaged[len(batch(2)) - 3] ^= 0xFF  # inside the first batch: a CRC mismatch
    seg.write_bytes(bytes(damaged))
    with pytest.raises(LogLoadError, match=r"(?i)crc"):
        new_log(d)
    assert seg.read_bytes() == bytes(damaged)  # nothing was cut


def test_delete_records_moves_the_log_start_and_deletes_whole_segments(tmp_path: Path) -> None:
    """``Partition#deleteRecordsOnLeader`` / ``UnifiedLog#maybeIncrementLogStartOffset`` and
    ``deleteLogStartOffsetBreachedSegments``; reopening keeps the start offset it is given."""
    d = tmp_path / "t-0"
    log = new_log(d, segment_bytes=600)
    log.append_as_leader(batch(2, pid=9, epoch=0, seq=0), T0)  # pid 9 lives in segment 0 only
    for i in range(1, 7):
        log.append_as_leader(batch(2, pid=5, epoch=0, seq=2 * i - 2, ts=T0 + 100 * i), T0)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) >= 3 and log.high_watermark == 14
    for bad in (15, -2):
        with pytest.raises(AppendError) as out_of_range:
            log.delete_records_before(bad)
        assert out_of_range.value.error == ErrorCode.offset_out_of_range
    target = bases[2] + 1  # inside a batch of the third segment
    assert log.delete_records_before(target) == target
    assert log.delete_records_before(1) == target  # never lowered
    assert [s.base_offset for s in log.segments] == bases[2:]
    left = {p.name for p in d.iterdir()}
    for base in bases[:2]:
        assert not any(name.startswith(f"{base:020d}.") for name in left), (base, left)
    assert f"{bases[2]:020d}.snapshot" in left and f"{bases[2]:020d}.log" in left
    with pytest.raises(AppendError) as below:
        log.read(target - 1, 1 << 20, RU, min_one_message=True)
    assert below.value.error == ErrorCode.offset_out_of_range
    read = log.read(target, 1 << 20, RU, min_one_message=True)
    assert read.log_start_offset == target and offsets_in(read.records)[0] == (target - 1, target)
    assert log.offset_for_timestamp(-2, RU).offset == target  # EARLIEST_TIMESTAMP
    assert log.offset_for_timestamp(T0, RU).offset == target  # the search starts there too
    assert log.append_as_leader(batch(2, pid=9, epoch=0, seq=0), T0).duplicate
    assert log.delete_records_before(-1) == 14  # the high watermark
    log.close()
    # The start offset comes from log-start-offset-checkpoint, else the first segment's base.
    # The snapshot written at close (offset 14) still knows producer 9, unless the log start
    # is 14 too: ProducerStateManager#truncateAndReload deletes every snapshot at or below the
    # log start, and nothing is left to replay, so the restarted broker forgets producer 9.
    for checkpoint, start, knows_9 in ((0, log.segments[0].base_offset, True), (14, 14, False)):
        again = PartitionLog("t", 0, d, log.config)
        again.open(checkpoint)
        assert again.log_start_offset == start and again.log_end_offset == 14
        dup = again.append_as_leader(batch(2, pid=9, epoch=0, seq=0), T0)
        assert dup.duplicate == knows_9 and (dup.first_offset == 0) == knows_9
        again.close()


def test_delete_records_policy_and_the_first_unstable_offset(tmp_path: Path) -> None:
    compacted = PartitionLog("c", 0, tmp_path / "c-0", LogConfig(
        segment_bytes=1 << 20, max_message_bytes=1_048_588, delete=False))
    compacted.open()
    compacted.append_as_leader(batch(1), T0)
    with pytest.raises(AppendError) as policy:
        compacted.delete_records_before(1)
    assert policy.value.error == ErrorCode.policy_violation and compacted.log_start_offset == 0
    compacted.close()
    log = new_log(tmp_path / "t-0")
    log.append_as_leader(batch(1, pid=6, epoch=0, seq=0, txn=True), T0)
    log.append_as_leader(batch(2), T0)
    assert log.last_stable_offset == 0
    assert log.delete_records_before(2) == 2
    # UnifiedLog#maybeIncrementFirstUnstableOffset: never below the log start offset.
    assert log.last_stable_offset == 2
    log.close()
