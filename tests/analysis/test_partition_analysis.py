"""Whole partitions end to end: LSO, what pins it, transaction counts and findings.

The issue's "Done when" scenarios, each built as a real log dir (see ``logdirs.py``) and analysed
on both engines (the ``engine`` fixture); expected values are worked out by hand from Kafka's rules
(``UnifiedLog#lastStableOffset``, ``ProducerStateManager#lastStableOffset``), not taken from the
code under test. Every analysis proves the log dir was left untouched.
"""

from __future__ import annotations

from pathlib import Path

from kafkatx.analysis.findings import Finding
from kafkatx.analysis.partition_report import PartitionReport
from kafkatx.engines.base import Engine
from kafkatx.engines.local import Inspection
from kafkatx.formats.producer_snapshot import snapshot_file_name
from kafkatx.formats.txn_index import read_txn_index
from tests.analysis.logdirs import T0, LogDirBuilder
from tests.readonly import assert_unchanged, snapshot_tree

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
HOUR_MS = 3_600_000


def inspect(root: Path, engine: Engine) -> Inspection:
    """``engine.inspect`` (each test runs on the local and the Spark engine)."""
    before = snapshot_tree(root)
    result = engine.inspect([root])
    assert_unchanged(root, before)
    return result


def only(result: Inspection) -> PartitionReport:
    [row] = result.partitions
    return row


def kinds(result: Inspection) -> set[str]:
    return {f.kind for f in result.findings}


def serious(result: Inspection) -> list[Finding]:
    return [f for f in result.findings if f.level in ("error", "warning")]


def txn_index(root: Path, base: int) -> list[tuple[int, int, int, int]]:
    data = (root / "t-0" / f"{base:020d}.txnindex").read_bytes()
    return [(e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset)
            for e in read_txn_index(data).entries]


def test_committed_transaction(tmp_path: Path, engine: Engine) -> None:
    b = LogDirBuilder(tmp_path)
    b.partition("t", 0).data(pid=1, n=3, txn=True).data(pid=1, n=2, txn=True).commit(
        pid=1, epoch=0)
    b.build()
    result = inspect(tmp_path, engine)
    row = only(result)
    assert row.lso_row() == {
        "broker": row.broker,
        "topic": "t", "partition": 0, "log_start_offset": 0, "log_end_offset": 6,
        "high_watermark": 6, "high_watermark_source": "checkpoint", "last_stable_offset": 6,
        "lso_source": "high_watermark",
        "hw_minus_lso": 0, "records_pending": 0, "open_transactions": []}
    assert (row.transactions_committed, row.transactions_aborted, row.producers,
            row.batches, row.data_records) == (1, 0, 1, 3, 5)
    assert serious(result) == []
    assert not (tmp_path / "t-0" / "00000000000000000000.txnindex").exists()


def test_aborted_transaction(tmp_path: Path, engine: Engine) -> None:
    b = LogDirBuilder(tmp_path)
    b.partition("t", 0).data(pid=1, n=3, txn=True).abort(pid=1, epoch=0).data(n=2)
    b.build()
    result = inspect(tmp_path, engine)
    row = only(result)
    assert (row.last_stable_offset, row.lso_source) == (6, "high_watermark")
    assert (row.transactions_committed, row.transactions_aborted) == (0, 1)
    assert txn_index(tmp_path, 0) == [(1, 0, 3, 4)]  # nothing else open: LSO = marker + 1
    assert serious(result) == []


def test_open_transaction_pins_the_lso(tmp_path: Path, engine: Engine) -> None:
    b = LogDirBuilder(tmp_path)
    b.partition("t", 0).data(n=2).data(pid=1, epoch=3, n=2, txn=True, at=T0 + 10).data(
        n=3, at=T0 + 20)
    b.build()
    result = inspect(tmp_path, engine)
    row = only(result).lso_row()
    assert (row["last_stable_offset"], row["lso_source"], row["high_watermark"]) == (
        2, "open_transaction", 7)
    assert row["open_transactions"] == [{
        "producer_id": 1, "producer_epoch": 3, "first_offset": 2, "last_offset": 3,
        "first_timestamp": T0 + 11, "last_timestamp": T0 + 11}]
    assert (row["hw_minus_lso"], row["records_pending"]) == (5, 5)
    [f] = [f for f in result.findings if f.kind == "open_transaction"]
    assert f.producer_id == 1 and f.offset == 2 and "holds the LSO at 2" in f.message


def test_open_transaction_older_than_the_timeout_is_lso_pinned(tmp_path: Path,
                                                               engine: Engine) -> None:
    b = LogDirBuilder(tmp_path)
    b.partition("t", 0).data(pid=1, n=2, txn=True, at=T0).data(n=3, at=T0 + 2 * HOUR_MS)
    b.build()
    result = inspect(tmp_path, engine)
    [f] = [f for f in result.findings if f.kind == "lso_pinned"]
    assert f.level == "error" and f.remediation is not None
    assert "--topic t --partition 0 --start-offset 0" in f.remediation


def test_interleaved_producers(tmp_path: Path, engine: Engine) -> None:
    b = LogDirBuilder(tmp_path)
    p = b.partition("t", 0)
    p.data(pid=1, n=2, txn=True)  # 0-1  A
    p.data(pid=2, n=2, txn=True)  # 2-3  B
    p.data(pid=3, n=1, txn=True)  # 4    C
    p.data(pid=1, n=2, txn=True)  # 5-6  A
    p.abort(pid=2, epoch=0)  # 7: B aborted while A (from 0) is open -> its LSO is 0
    p.commit(pid=1, epoch=0)  # 8
    p.data(pid=3, n=1, txn=True)  # 9
    p.commit(pid=3, epoch=0)  # 10
    p.data(pid=4, n=2, txn=True)  # 11-12 D, still open
    p.abort(pid=5, epoch=0)  # 13: nothing to close for producer 5
    b.build()
    result = inspect(tmp_path, engine)
    row = only(result)
    assert txn_index(tmp_path, 0) == [(2, 2, 7, 0)]
    assert (row.transactions_committed, row.transactions_aborted, row.producers) == (2, 1, 5)
    assert (row.last_stable_offset, row.lso_source, row.log_end_offset) == (
        11, "open_transaction", 14)
    assert [t.producer_id for t in row.open_transactions] == [4]
    assert "txnindex_mismatch" not in kinds(result)


def test_transaction_spanning_segments(tmp_path: Path, engine: Engine) -> None:
    b = LogDirBuilder(tmp_path)
    p = b.partition("t", 0)
    p.data(pid=1, n=3, txn=True).data(pid=2, n=1, txn=True).roll()
    p.data(pid=1, n=2, txn=True).abort(pid=1, epoch=0)  # 4-5, marker 6 in segment 4
    p.commit(pid=2, epoch=0)  # 7
    b.build()
    result = inspect(tmp_path, engine)
    row = only(result)
    # The entry lives with the ABORT marker; pid 2 (from 3) was still open when it was written.
    assert not (tmp_path / "t-0" / "00000000000000000000.txnindex").exists()
    assert txn_index(tmp_path, 4) == [(1, 0, 6, 3)]
    assert (row.segments, row.transactions_aborted, row.transactions_committed) == (2, 1, 1)
    assert (row.last_stable_offset, row.lso_source) == (8, "high_watermark")
    assert serious(result) == []


def test_epoch_bumps_with_v1_markers_and_a_zombie(tmp_path: Path, engine: Engine) -> None:
    b = LogDirBuilder(tmp_path)
    p = b.partition("t", 0)
    p.data(pid=5, epoch=0, n=2, txn=True).commit(pid=5, epoch=0)  # 0-1, 2 (same epoch: v1)
    p.data(pid=5, epoch=0, n=2, txn=True).commit(pid=5, epoch=0)  # 3-4 (seq 2..3), 5
    p.data(pid=5, epoch=1, n=2, txn=True)  # 6-7: a restarted producer, new epoch, seq 0
    p.abort(pid=5, epoch=2)  # 8: InitProducerId fenced it; the coordinator aborts at epoch 2
    p.data(pid=5, epoch=2, n=1, txn=True).commit(pid=5, epoch=2)  # 9, 10
    p.data(pid=5, epoch=1, n=1, txn=True)  # 11: the fenced instance writes again (a zombie)
    b.build()
    result = inspect(tmp_path, engine)
    row = only(result)
    assert (row.transactions_committed, row.transactions_aborted) == (3, 1)
    assert txn_index(tmp_path, 0) == [(5, 6, 8, 9)]
    [zombie] = [f for f in result.findings if f.kind == "invalid_epoch"]
    assert (zombie.offset, zombie.producer_epoch, zombie.level) == (11, 1, "error")
    assert "sequence_gap" not in kinds(result)
    assert (row.last_stable_offset, row.lso_source) == (11, "open_transaction")


def test_epoch_bumps_with_v2_markers(tmp_path: Path, engine: Engine) -> None:
    """KIP-890 (transactions v2): each marker carries epoch + 1, which the next transaction uses."""
    b = LogDirBuilder(tmp_path)
    p = b.partition("t", 0)
    p.data(pid=6, epoch=5, n=2, txn=True).commit(pid=6, epoch=6)  # 0-1, 2
    p.data(pid=6, epoch=6, n=2, txn=True).abort(pid=6, epoch=7)  # 3-4, 5
    p.data(pid=6, epoch=7, n=1, txn=True).commit(pid=6, epoch=8)  # 6, 7
    b.build()
    result = inspect(tmp_path, engine)
    row = only(result)
    assert (row.transactions_committed, row.transactions_aborted) == (2, 1)
    assert txn_index(tmp_path, 0) == [(6, 3, 5, 6)]
    assert (row.last_stable_offset, row.lso_source) == (8, "high_watermark")
    assert serious(result) == []


def test_markers_with_no_transaction(tmp_path: Path, engine: Engine) -> None:
    """A marker that closes nothing is what Kafka writes to a partition added to a transaction
    that got no data (``TransactionMarkerChannelManager`` writes to every partition of the
    transaction; ``ProducerAppendInfo#appendEndTxnMarker`` completes nothing): info, never a
    warning, whether or not the producer wrote here before."""
    b = LogDirBuilder(tmp_path)
    p = b.partition("t", 0)
    p.commit(pid=42, epoch=0)  # 0: a producer this partition never saw
    p.data(pid=1, n=2, txn=True).commit(pid=1, epoch=0).commit(pid=1, epoch=0)  # 1-2, 3, 4
    b.build()
    result = inspect(tmp_path, engine)
    row = only(result)
    empty = [f for f in result.findings if f.kind == "empty_transaction"]
    assert [(f.producer_id, f.offset, f.level) for f in empty] == [(42, 0, "info"),
                                                                    (1, 4, "info")]
    assert "added to the transaction and wrote nothing here" in empty[0].message
    # the same marker again with no data between: what a coordinator that took over a
    # prepared transaction writes (it resends every marker; real Kafka in
    # tests/realkafka/test_cluster_faults.py)
    assert "repeats the COMMIT marker at offset 3 that closed the transaction (offsets 1..2)" \
        in empty[1].message
    assert (row.transactions_committed, row.last_stable_offset, row.lso_source) == (
        1, 5, "high_watermark")


def test_high_watermark_inside_the_log(tmp_path: Path, engine: Engine) -> None:
    b = LogDirBuilder(tmp_path)
    b.partition("t", 0).data(n=10).hw(6)
    b.build()
    row = only(inspect(tmp_path, engine))
    assert (row.high_watermark, row.last_stable_offset, row.lso_source) == (
        6, 6, "high_watermark")
    assert (row.hw_minus_lso, row.records_pending) == (0, 0)


def test_committed_transaction_with_its_marker_at_the_high_watermark(tmp_path: Path,
                                                                     engine: Engine) -> None:
    """A completed transaction stays unstable until the HW passes its marker."""
    for hw, lso, source, pending in ((5, 0, "unreplicated_transaction", 5),
                                     (6, 6, "high_watermark", 0)):
        root = tmp_path / f"hw{hw}"
        b = LogDirBuilder(root)
        # 0-2 txn, 3-4 plain, 5 COMMIT, 6-7 plain
        b.partition("t", 0).data(pid=1, n=3, txn=True).data(n=2).commit(pid=1, epoch=0).data(
            n=2).hw(hw)
        b.build()
        row = only(inspect(root, engine))
        assert (row.high_watermark, row.last_stable_offset, row.lso_source) == (hw, lso, source)
        assert row.open_transactions == []
        assert row.records_pending == pending


def test_open_transaction_above_the_high_watermark(tmp_path: Path, engine: Engine) -> None:
    b = LogDirBuilder(tmp_path)
    b.partition("t", 0).data(n=8).data(pid=1, n=2, txn=True).hw(6)
    b.build()
    row = only(inspect(tmp_path, engine))
    assert (row.last_stable_offset, row.lso_source) == (6, "high_watermark")
    assert [t.first_offset for t in row.open_transactions] == [8]


def test_missing_checkpoints_fall_back_to_the_log_end(tmp_path: Path, engine: Engine) -> None:
    b = LogDirBuilder(tmp_path, checkpoints=False)
    b.partition("t", 0).data(n=4).data(pid=1, n=2, txn=True).commit(pid=1, epoch=0)
    b.build()
    result = inspect(tmp_path, engine)
    row = only(result)
    assert (row.high_watermark, row.last_stable_offset, row.lso_source) == (
        None, 7, "log_end_offset")
    assert row.lso_row()["high_watermark"] is None


def test_open_transaction_without_a_checkpoint(tmp_path: Path, engine: Engine) -> None:
    b = LogDirBuilder(tmp_path, checkpoints=False)
    b.partition("t", 0).data(n=4).data(pid=1, n=2, txn=True)
    b.build()
    row = only(inspect(tmp_path, engine))
    assert (row.high_watermark, row.last_stable_offset, row.lso_source) == (
        None, 4, "open_transaction")


def test_garbled_checkpoint(tmp_path: Path, engine: Engine) -> None:
    b = LogDirBuilder(tmp_path)
    b.partition("t", 0).data(n=4)
    b.build()
    (tmp_path / "replication-offset-checkpoint").write_bytes(b"0\n1\nt zero 3\n")
    result = inspect(tmp_path, engine)
    row = only(result)
    assert (row.high_watermark, row.last_stable_offset, row.lso_source) == (
        None, 4, "log_end_offset")
    assert any(f.kind == "checkpoint_problem" and "replication-offset-checkpoint" in f.message
               for f in result.findings)


def test_missing_txnindex(tmp_path: Path, engine: Engine) -> None:
    b = LogDirBuilder(tmp_path)
    b.partition("t", 0).data(pid=1, n=3, txn=True).abort(pid=1, epoch=0).data(n=1)
    b.build()
    (tmp_path / "t-0" / "00000000000000000000.txnindex").unlink()
    result = inspect(tmp_path, engine)
    [f] = [f for f in result.findings if f.kind == "txnindex_mismatch"]
    assert f.level == "error" and f.producer_id == 1 and f.offset == 0
    assert "read_committed consumers will see the aborted records" in f.message
    assert only(result).transactions_aborted == 1


def test_corrupt_snapshot(tmp_path: Path, engine: Engine) -> None:
    b = LogDirBuilder(tmp_path)
    p = b.partition("t", 0)
    p.data(pid=1, n=2, txn=True).roll().snapshot().data(pid=2, n=2).roll().snapshot()
    b.build()
    path = tmp_path / "t-0" / snapshot_file_name(4)
    path.write_bytes(path.read_bytes()[:-7])  # cut inside the last entry
    result = inspect(tmp_path, engine)
    [f] = [f for f in result.findings if f.kind == "corrupt_snapshot"]
    assert f.level == "warning" and f.offset == 4
    assert "falls back to 00000000000000000002.snapshot" in f.message
    assert {"snapshot_mismatch"}.isdisjoint(kinds(result))
    assert (only(result).last_stable_offset, only(result).lso_source) == (0, "open_transaction")


# -- the bundled fixtures ---------------------------------------------------------------------


def test_fixture_logdir(engine: Engine) -> None:
    result = inspect(FIXTURES / "logdir", engine)
    rows = {(r.topic, r.partition): r for r in result.partitions}
    p0 = rows[("payments", 0)].lso_row()
    assert (p0["last_stable_offset"], p0["lso_source"], p0["high_watermark"],
            p0["log_end_offset"]) == (19, "open_transaction", 32, 32)
    assert [(t["producer_id"], t["producer_epoch"], t["first_offset"], t["last_offset"])
            for t in p0["open_transactions"]] == [(4003, 7, 19, 21)]
    assert (rows[("payments", 1)].last_stable_offset,
            rows[("payments", 1)].lso_source) == (3, "high_watermark")
    found = kinds(result)
    assert {"txnindex_mismatch", "snapshot_mismatch", "corrupt_snapshot",
            "index_mismatch", "offset_regression"}.isdisjoint(found)
    assert "open_transaction" in found or "lso_pinned" in found


def test_fixture_corrupt(engine: Engine) -> None:
    result = inspect(FIXTURES / "corrupt", engine)
    found = kinds(result)
    assert {"crc_mismatch", "truncated_batch", "corrupt_region", "corrupt_snapshot",
            "index_mismatch"} <= found
    assert all(f.location for f in result.findings if f.kind != "checkpoint_problem")
    [snap] = [f for f in result.findings if f.kind == "corrupt_snapshot"]
    assert snap.location is not None and "00000000000000000030.snapshot" in snap.location


def test_fixture_legacy(engine: Engine) -> None:
    result = inspect(FIXTURES / "legacy", engine)
    row = only(result)
    assert (row.log_end_offset, row.last_stable_offset) == (11, 11)
    assert serious(result) == []
