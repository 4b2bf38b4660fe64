"""Property: ageing a log dir as Kafka ages it changes none of the answers Kafka keeps.

Random histories (plain, idempotent and transactional writes on a few keys, commits, aborts,
markers for transactions that wrote nothing here, segment rolls with the snapshot
``UnifiedLog#roll`` takes, a clean-shutdown snapshot or a crash) are written once as they are and
once aged: compacted by the cleaner model (:mod:`tests.analysis.cleaner_model`, up to a segment
boundary at or below the first unstable offset, as ``LogCleanerManager`` bounds a round; one or
two rounds, a delete retention apart), with or without ``cleaner-offset-checkpoint``, and cut by
retention at a segment boundary (``UnifiedLog#deleteOldSegments``; a snapshot above the new log
start survives, as on a broker). Kafka's rules then say:

- the open transactions, with their first offsets, are the same (``ProducerStateManager
  #truncateAndReload`` + the snapshot; ``#onLogStartOffsetIncremented`` keeps ongoing ones), and
  the LSO is the un-aged one raised to the log start (``UnifiedLog
  #maybeIncrementFirstUnstableOffset``);
- a read_committed consumer sees nothing it did not see before, and the same last value of
  every key (``Cleaner#shouldRetainRecord`` keeps each key's latest record, aborted data goes);
- ageing adds no warning or error kind (no ``sequence_gap``, ``snapshot_mismatch``,
  ``txnindex_mismatch`` for what the cleaner and retention legitimately leave).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkatx.analysis.findings import ERROR, WARNING
from kafkatx.engines.local import Inspection, LocalEngine
from kafkatx.formats.checkpoints import CheckpointEntry, build_offset_checkpoint
from kafkatx.semantics.read_committed import IsolationLevel
from kafkatx.storage.discovery import discover
from tests.analysis.cleaner_model import copy_cleaned
from tests.analysis.logdirs import T0, LogDirBuilder, PartitionBuilder

TXN_PIDS = (1, 2, 3)
KEYS = ("a", "b", "c", "d")

ops = st.lists(st.one_of(
    st.tuples(st.just("plain"), st.sampled_from(KEYS)),
    st.tuples(st.just("idempotent"), st.sampled_from(KEYS)),
    st.tuples(st.just("txn"), st.sampled_from(TXN_PIDS), st.sampled_from(KEYS)),
    st.tuples(st.just("end"), st.sampled_from(TXN_PIDS), st.booleans()),
    st.tuples(st.just("roll")),
), min_size=4, max_size=28)


def write_history(p: PartitionBuilder, history: list[tuple], *, shutdown_snapshot: bool) -> None:
    segment_start = 0
    for op in history:
        if op[0] == "plain":
            p.data(n=1, key=op[1])
        elif op[0] == "idempotent":
            p.data(pid=10, n=1, key=op[1])
        elif op[0] == "txn":
            p.data(pid=op[1], n=1, txn=True, key=op[2])
        elif op[0] == "end":
            (p.commit if op[2] else p.abort)(pid=op[1], epoch=0)
        elif p.log_end_offset > segment_start:  # roll, with the snapshot a roll takes
            segment_start = p.log_end_offset
            p.roll().snapshot()
    if shutdown_snapshot and p.log_end_offset > segment_start:
        p.snapshot()


def inspect(root: Path) -> Inspection:
    return LocalEngine().inspect([root])


def visible(root: Path) -> list[tuple[int, bytes | None, bytes | None]]:
    """What a read_committed consumer gets (``kafkatx replay``); the ``.txnindex`` files the
    broker serves from agree with the markers."""
    [pdir] = discover([root]).all_partitions()
    report = inspect(root).partitions[0]
    engine = LocalEngine()
    view = engine.consumer_view(pdir, isolation=IsolationLevel.READ_COMMITTED,
                                high_watermark=report.high_watermark,
                                log_start_offset=report.log_start_offset)
    assert view.disagreements == []
    assert view.last_stable_offset == report.last_stable_offset
    return [(r.record.offset, r.record.key, r.record.value)
            for r in engine.replay_records(pdir, view)]


# What a restart would change is a prediction, not damage: after retention a restart can
# legitimately forget a transaction whose start it deleted (truncateAndReload drops the
# snapshots at or below the log start), which the copy as it was never shows.
PREDICTIONS = {"restart_changes", "restart_keeps_transaction"}


def serious_kinds(result: Inspection) -> set[str]:
    return {f.kind for f in result.findings
            if f.level in (ERROR, WARNING) and f.kind not in PREDICTIONS}


def open_txns(result: Inspection) -> set[tuple[int, int]]:
    return {(t.producer_id, t.first_offset) for t in result.partitions[0].open_transactions}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=ops, shutdown_snapshot=st.booleans(), rounds=st.integers(0, 2),
       checkpoint=st.booleans(), clean_pick=st.integers(0, 10), retain_pick=st.integers(-1, 10))
def test_ageing_keeps_what_kafka_keeps(history: list[tuple], shutdown_snapshot: bool,
                                       rounds: int, checkpoint: bool, clean_pick: int,
                                       retain_pick: int) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="aged-property-"))
    try:
        _check(tmp, history, shutdown_snapshot=shutdown_snapshot, rounds=rounds,
               checkpoint=checkpoint, clean_pick=clean_pick, retain_pick=retain_pick)
    finally:
        shutil.rmtree(tmp)


def _check(tmp: Path, history: list[tuple], *, shutdown_snapshot: bool, rounds: int,
           checkpoint: bool, clean_pick: int, retain_pick: int) -> None:
    plain_b = LogDirBuilder(tmp / "plain")
    src = plain_b.partition("t", 0, start_ms=T0)
    write_history(src, history, shutdown_snapshot=shutdown_snapshot)
    plain_b.build()
    plain = inspect(tmp / "plain")
    [row] = plain.partitions
    if row.log_end_offset == 0:
        return
    bases = sorted(int(f.name.split(".")[0]) for f in src.dir.glob("*.log"))
    first_unstable = min((t.first_offset for t in row.open_transactions),
                         default=row.log_end_offset)
    # A round cleans whole segments below the first uncleanable offset, never the active one.
    cleanable = [b for b in bases[1:] if b <= first_unstable]
    upper = cleanable[clean_pick % len(cleanable)] if cleanable and rounds else None
    snapshots = sorted(int(f.name.split(".")[0]) for f in src.dir.glob("*.snapshot"))
    # Retention deletes whole segments; keep a snapshot above the new log start to load from.
    retainable = [b for b in bases[1:] if snapshots and b < snapshots[-1]]
    log_start = (retainable[retain_pick % len(retainable)]
                 if retainable and retain_pick >= 0 else None)

    aged_b = LogDirBuilder(tmp / "aged")
    dst = aged_b.partition("t", 0)
    copy_cleaned(src.dir, dst, uppers=[upper] * rounds if upper is not None else [],
                 now_ms=T0 + 3_600_000)
    if log_start is not None:
        dst.delete_segments_before(log_start)
    aged_b.build()
    if checkpoint and upper is not None:
        (tmp / "aged" / "cleaner-offset-checkpoint").write_bytes(build_offset_checkpoint(
            [CheckpointEntry(topic="t", partition=0, offset=upper)]))
    aged = inspect(tmp / "aged")
    [aged_row] = aged.partitions

    start = aged_row.log_start_offset
    assert open_txns(aged) == open_txns(plain)
    assert aged_row.last_stable_offset == max(row.last_stable_offset, start)
    assert serious_kinds(aged) <= serious_kinds(plain), [
        f for f in aged.findings if f.level in (ERROR, WARNING) and f.kind not in PREDICTIONS]

    seen_before = visible(tmp / "plain")
    seen_after = visible(tmp / "aged")
    assert set(seen_after) <= set(seen_before)
    last_before = {k: (o, v) for o, k, v in seen_before if o >= start}
    last_after = {k: (o, v) for o, k, v in seen_after}
    assert last_after == last_before
