"""Loading a partition as Kafka's ``LogLoader`` does: what a clean or an unclean start recovers,
and that the state it ends with equals a full replay's."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from kafkatx.broker.logs.log_values import LogConfig
from kafkatx.broker.logs.partition_log import PartitionLog
from kafkatx.formats.record_batch import Record, build_batch, iter_key_values, iter_records
from kafkatx.formats.record_batch import parse_header as parse_batch_header
from kafkatx.semantics.read_committed import IsolationLevel

T0 = 1_760_000_000_000
RC = IsolationLevel.READ_COMMITTED


def batch(n: int, *, pid: int = -1, epoch: int = -1, seq: int = -1, txn: bool = False,
          ts: int = T0, compression: int = 0) -> bytes:
    records = [Record(offset=i, timestamp=ts + i, key=b"k%d" % i, value=b"v" * 40)
               for i in range(n)]
    return build_batch(records, base_offset=0, producer_id=pid, producer_epoch=epoch,
                       base_sequence=seq, is_transactional=txn, compression_id=compression)


def new_log(path: Path) -> PartitionLog:
    return PartitionLog("t", 0, path, LogConfig(segment_bytes=2048, max_message_bytes=1 << 20))


def write_history(path: Path, seed: int, rounds: int = 60) -> PartitionLog:
    """Idempotent and transactional producers (commits, aborts, one left open) over many
    small segments."""
    rng = random.Random(seed)
    log = new_log(path)
    log.open()
    seqs = {pid: 0 for pid in (11, 12, 13)}
    open_txn: set[int] = set()
    for i in range(rounds):
        pid = rng.choice((11, 12, 13))
        ts = T0 + 10 * i
        if pid == 11:  # idempotent only
            log.append_as_leader(batch(2, pid=pid, epoch=0, seq=seqs[pid], ts=ts), ts)
            seqs[pid] += 2
            continue
        log.append_as_leader(batch(1, pid=pid, epoch=0, seq=seqs[pid], txn=True, ts=ts), ts)
        seqs[pid] += 1
        open_txn.add(pid)
        if rng.random() < 0.5:
            log.append_end_txn_marker(producer_id=pid, producer_epoch=0, coordinator_epoch=3,
                                      commit=rng.random() < 0.6, now_ms=ts)
            open_txn.discard(pid)
    return log


def state_of(log: PartitionLog) -> dict[str, object]:
    psm = log.producer_state
    return {
        "log_end_offset": log.log_end_offset,
        "lso": log.last_stable_offset,
        "producers": psm.snapshot_entries(),
        "ongoing": [(t.producer_id, t.first_offset) for t in psm.ongoing_txns.values()],
        "aborted": [(s.base_offset, [(e.producer_id, e.first_offset, e.last_offset,
                                      e.last_stable_offset) for e in s.aborted])
                    for s in log.segments if s.aborted],
        "read_committed": log.read(log.log_start_offset, 1 << 20, RC,
                                   min_one_message=True).aborted_transactions,
    }


def full_replay(path: Path, tmp: Path) -> dict[str, object]:
    """The state a load from the first batch, without any snapshot, ends with."""
    copy = tmp / "replay" / path.name
    shutil.copytree(path, copy)
    for snap in copy.glob("*.snapshot"):
        snap.unlink()
    log = new_log(copy)
    log.open(had_clean_shutdown=False, recovery_point=0)
    return state_of(log)


def test_clean_shutdown_trusts_snapshots_and_indexes(tmp_path: Path) -> None:
    """``LogLoader#recoverLog`` skips recovery after a clean shutdown and
    ``UnifiedLog#rebuildProducerState`` loads the snapshot at the log end: nothing replayed."""
    d = tmp_path / "t-0"
    log = write_history(d, seed=1)
    log.close()
    expected = full_replay(d, tmp_path)
    again = new_log(d)
    again.open(had_clean_shutdown=True, recovery_point=0)
    assert again.loaded is not None
    assert (again.loaded.recovered_segments, again.loaded.replayed_batches) == (0, 0)
    assert again.loaded.snapshot_offset == expected["log_end_offset"]
    assert all(s.table is None for s in again.segments[:-1])  # no segment was read
    assert state_of(again) == expected


@pytest.mark.parametrize("seed", [2, 3, 4])
def test_unclean_shutdown_recovers_from_the_recovery_point_only(tmp_path: Path,
                                                                seed: int) -> None:
    """``LogLoader#recoverLog``: the segments from the one holding the recovery point on are
    recovered (``LogSegment#recover``), producer state comes from the newest snapshot below
    them; the result equals a full replay."""
    d = tmp_path / "t-0"
    log = write_history(d, seed=seed)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) > 4
    recovery_point = bases[-3] + 1
    log.release()  # a SIGKILL: no snapshot at the log end, the active segment without indexes
    expected = full_replay(d, tmp_path)
    again = new_log(d)
    again.open(had_clean_shutdown=False, recovery_point=recovery_point)
    assert again.loaded is not None
    assert again.loaded.recovered_segments == 3
    assert [s.table is not None for s in again.segments] == [False] * (len(bases) - 1) + [True] * 2
    assert again.loaded.snapshot_offset == bases[-3]
    assert again.recovery_point == recovery_point
    assert state_of(again) == expected
    assert (d / f"{bases[-1]:020d}.index").exists()


def test_a_torn_tail_is_cut_and_the_txn_index_rebuilt(tmp_path: Path) -> None:
    """``LogSegment#recover`` truncates at the first invalid byte of the last segment and
    rebuilds its ``.txnindex`` from the replay."""
    d = tmp_path / "t-0"
    log = write_history(d, seed=5)
    last = log.segments[-1]
    log.append_as_leader(batch(1), T0)
    log.release()
    whole = last.path.read_bytes()
    last.path.write_bytes(whole[:-7])  # the last batch half written
    for txn_index in d.glob("*.txnindex"):
        txn_index.unlink()  # recovery writes what the replay finds again
    expected = full_replay(d, tmp_path)
    again = new_log(d)
    again.open(had_clean_shutdown=False, recovery_point=0)
    assert any("truncated" in p for p in again.load_problems)
    assert state_of(again) == expected
    assert again.log_end_offset == log.log_end_offset - 1


def test_an_aged_log_loads_the_same_clean_and_unclean(tmp_path: Path) -> None:
    """A log whose start moved (``deleteLogStartOffsetBreachedSegments``) loads the same
    producers and transactions clean or not. Recovery rebuilds the ``.txnindex`` of each
    segment it recovers (``LogSegment#recover``) from the state it has there: snapshots at or
    below the log start are deleted (``ProducerStateManager#truncateAndReload``) and batches
    below it are not read, so a stored LSO can move up to what the log still holds."""
    d = tmp_path / "t-0"
    log = write_history(d, seed=6)
    start = log.segments[3].base_offset + 1
    log.delete_records_before(start)
    log.close()
    clean = new_log(d)
    clean.open(start, had_clean_shutdown=True)
    clean_state = state_of(clean)
    clean.close()
    unclean = new_log(d)
    unclean.open(start, had_clean_shutdown=False, recovery_point=0)
    assert unclean.log_start_offset == start
    unclean_state = state_of(unclean)

    def without_stored_lso(state: dict[str, object]) -> dict[str, object]:
        aborted = [(base, [entry[:3] for entry in entries])
                   for base, entries in state["aborted"]]  # type: ignore[attr-defined]
        return {**state, "aborted": aborted}

    assert without_stored_lso(unclean_state) == without_stored_lso(clean_state)
    for (_, recovered), (_, written) in zip(unclean_state["aborted"],  # type: ignore[call-overload]
                                            clean_state["aborted"], strict=True):
        assert all(r[3] >= min(w[3], start) for r, w in zip(recovered, written, strict=True))


def test_a_missing_index_is_rebuilt_even_after_a_clean_shutdown(tmp_path: Path) -> None:
    """``LogLoader#loadSegmentFiles``: a segment whose index is missing is recovered."""
    d = tmp_path / "t-0"
    log = write_history(d, seed=7)
    log.close()
    index = next(iter(sorted(d.glob("*.index"))[2:3]))
    wanted = index.read_bytes()
    index.unlink()
    again = new_log(d)
    again.open(had_clean_shutdown=True)
    assert index.read_bytes() == wanted
    assert again.loaded is not None and again.loaded.recovered_segments > 0


@pytest.mark.parametrize("compression", [0, 1, 3])
def test_key_values_decode_as_the_exact_record_parser(compression: int) -> None:
    """``DefaultRecord#readFrom``'s layout walked directly equals :func:`iter_records`."""
    records = [Record(offset=i, timestamp=T0 + i, key=None if i % 3 == 0 else b"k" * (i * 50),
                      value=None if i % 4 == 1 else b"v" * (i * 70), headers=((f"h{i}", b"x"),))
               for i in range(9)]
    data = build_batch(records, base_offset=1000, compression_id=compression)
    header = parse_batch_header(data, 0)
    assert list(iter_key_values(data, 0, header)) == [
        (r.offset, r.key, r.value) for r in iter_records(data, 0, header)]


def test_a_roll_flush_moves_the_recovery_point_so_a_crash_recovers_the_tail(
        tmp_path: Path) -> None:
    """``UnifiedLog#roll`` schedules ``flushUptoOffsetExclusive(newSegment.baseOffset)``, which
    advances the recovery point (``updateRecoveryPoint``); after a crash ``LogLoader`` recovers
    the active segment only."""
    from kafkatx.broker.logs.partition_log import fsync_files

    d = tmp_path / "t-0"
    log = write_history(d, seed=8)
    assert log.recovery_point == 0
    upto = log.rolled_flush_point()
    assert upto == log.segments[-1].base_offset > 0
    files = log.unflushed_files(upto)
    assert d / "00000000000000000000.log" in files
    assert log.segments[-1].path not in files
    fsync_files(files)
    log.mark_flushed(upto)
    assert log.recovery_point == upto and log.unflushed_files(upto) == []
    log.release()
    again = new_log(d)
    again.open(had_clean_shutdown=False, recovery_point=upto)
    assert again.loaded is not None and again.loaded.recovered_segments == 1
    assert state_of(again) == full_replay(d, tmp_path)
