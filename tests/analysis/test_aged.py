"""Kafka's answers on aged log dirs (issue 11): retention-deleted starts, compaction, follower
copies and copies taken mid-transaction, built with the project's writers (``LogDirBuilder``:
real batches, indexes, snapshots and checkpoints) and judged against the Kafka rule each test's
docstring names. Every analysis also proves the log dir was left untouched.
"""

from __future__ import annotations

from pathlib import Path

from kafkatx.analysis.findings import ERROR, WARNING, Finding
from kafkatx.engines.base import Engine
from kafkatx.engines.local import Inspection
from tests.analysis.logdirs import LogDirBuilder
from tests.readonly import assert_unchanged, snapshot_tree


def inspect(root: Path, engine: Engine | None = None) -> Inspection:
    from kafkatx.engines.local import LocalEngine

    before = snapshot_tree(root)
    result = (engine or LocalEngine()).inspect([root])
    assert_unchanged(root, before)
    return result


def of_kind(result: Inspection, *kinds: str) -> list[Finding]:
    return [f for f in result.findings if f.kind in kinds]


def serious(result: Inspection) -> list[Finding]:
    return [f for f in result.findings if f.level in (ERROR, WARNING)]


# -- item 7: the checkpointed high watermark --------------------------------------------------


def test_high_watermark_below_the_log_start_is_raised_to_it(tmp_path: Path,
                                                            engine: Engine) -> None:
    """``UnifiedLog#updateHighWatermark`` (called from ``Partition#createLog`` with the
    checkpoint's value) raises a HW below the log start offset to the log start; the LSO is
    computed with that HW, and the stale checkpoint is reported."""
    b = LogDirBuilder(tmp_path)
    p = b.partition("t", 0)
    p.data(n=5).roll().data(n=5).roll().data(pid=3, n=2, txn=True).commit(pid=3, epoch=0)
    p.delete_segments_before(10).hw(4)
    b.build()
    result = inspect(tmp_path, engine)
    [row] = result.partitions
    assert (row.log_start_offset, row.log_end_offset) == (10, 13)
    assert (row.high_watermark, row.last_stable_offset, row.lso_source) == (
        10, 10, "high_watermark")
    [f] = of_kind(result, "high_watermark_below_log_start")
    assert f.offset == 4 and f.level == WARNING and "raises it to 10" in f.message
    assert of_kind(result, "high_watermark_beyond_log_end") == []


def test_high_watermark_beyond_the_log_end_is_lowered_to_it(tmp_path: Path,
                                                            engine: Engine) -> None:
    """``UnifiedLog#updateHighWatermark`` lowers a HW at or above the log end offset to the log
    end offset (a copy older than its checkpoint); on an aged log the LSO then follows the
    open transaction, not the checkpoint."""
    b = LogDirBuilder(tmp_path)
    p = b.partition("t", 0)
    p.data(n=4).roll().data(n=3).data(pid=8, n=2, txn=True)  # 4-6, 7-8 open
    p.delete_segments_before(4).hw(40)
    b.build()
    result = inspect(tmp_path, engine)
    [row] = result.partitions
    assert (row.high_watermark, row.last_stable_offset, row.lso_source) == (
        9, 7, "open_transaction")
    assert (row.hw_minus_lso, row.records_pending) == (2, 2)
    [f] = of_kind(result, "high_watermark_beyond_log_end")
    assert f.offset == 40 and "lowers the HW to 9" in f.message


def test_high_watermark_inside_the_log_is_kept(tmp_path: Path) -> None:
    """``UnifiedLog#updateHighWatermark`` keeps a HW in [log start, log end): no finding."""
    b = LogDirBuilder(tmp_path)
    p = b.partition("t", 0)
    p.data(n=4).roll().data(n=6).delete_segments_before(4).hw(4)
    b.build()
    result = inspect(tmp_path)
    assert result.partitions[0].high_watermark == 4
    assert serious(result) == []


# -- item 9: markers in partitions that got no data -------------------------------------------


def test_markers_in_a_partition_the_transaction_wrote_nothing_to(tmp_path: Path,
                                                                 engine: Engine) -> None:
    """A partition added to a transaction that wrote nothing there still gets the COMMIT/ABORT
    marker (``TransactionMarkerChannelManager`` sends one per partition of the transaction;
    ``ProducerAppendInfo#appendEndTxnMarker`` then completes no transaction): Kafka-normal,
    reported as ``empty_transaction`` (info) also on an aged log where the producer's older
    batches were deleted by retention; ``verify``-worthy findings: none."""
    b = LogDirBuilder(tmp_path)
    p = b.partition("t", 0)
    p.data(pid=5, n=2, txn=True).commit(pid=5, epoch=0).roll()  # 0-1, 2
    p.data(n=3).commit(pid=5, epoch=0).abort(pid=77, epoch=3)  # 3-5, 6 (5: nothing), 7 (77)
    p.delete_segments_before(3)
    b.build()
    result = inspect(tmp_path, engine)
    empty = of_kind(result, "empty_transaction")
    assert sorted((f.producer_id, f.offset) for f in empty) == [(5, 6), (77, 7)]
    assert serious(result) == []
    [row] = result.partitions
    assert (row.last_stable_offset, row.lso_source) == (8, "high_watermark")
