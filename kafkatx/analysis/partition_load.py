"""A partition's producer state as the running broker had it, and the LSO that follows from it.

The running broker's state is rebuilt from the files as ``UnifiedLog#rebuildProducerState`` ->
``ProducerStateManager#loadFromSnapshot`` rebuilds it: the newest snapshot in [log start, log
end] that reads without ``CorruptSnapshotException`` is loaded, and the batches from its offset
to the log end are replayed on top (origin REPLICATION). A snapshot *at* the log start offset
counts: the broker wrote it when it rolled the segment that starts there (``UnifiedLog#roll``),
with every producer of the segments retention deleted since, and the running broker still has
them (``#onLogStartOffsetIncremented`` drops only completed transactions). So a transaction that
began in a deleted segment lives on with its real first offset, and
``UnifiedLog#maybeIncrementFirstUnstableOffset`` holds the LSO at the log start offset, as real
Kafka answers on a live copy. (A restarting broker deletes a snapshot at the log start first,
``#truncateAndReload``, and forgets that transaction: a restart's view, not this one.) Without a
loadable snapshot the broker rebuilds from the log start, which is the whole-log replay itself.

The whole-log replay (every retained batch, from a fresh state) stays what the checks audit;
its transactions are reconciled here with the loaded state, so that every command reports an
open transaction with the first offset the broker has (``currentTxnFirstOffset``, what
``kafka-transactions.sh abort --start-offset`` must be given). This is the one place the
engines and the consumer replay compute open transactions and the LSO.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from kafkatx.analysis.checks import SnapshotFile
from kafkatx.analysis.replay import PartitionReplayer
from kafkatx.analysis.replay_result import ReplayResult, Transaction
from kafkatx.analysis.stable_offsets import StableOffsets, stable_offsets
from kafkatx.analysis.transaction_table import MarkerRows
from kafkatx.formats.segment_scan import SegmentScan
from kafkatx.lazy_dataclass import dataclass
from kafkatx.semantics.producer_state import ProducerStateManager
from kafkatx.storage.readers import read_snapshot_file

TailScans = Callable[[int], Iterable[SegmentScan]]  # the segments holding offsets >= the arg


@dataclass(slots=True, kw_only=True)
class LoadedPartition:
    """The broker's view after loading: its producer state and the LSO."""

    state: ProducerStateManager
    stable: StableOffsets
    snapshot_replay: ReplayResult | None = None  # from the loaded snapshot plus the log tail
    snapshot_offset: int | None = None


def read_snapshots(snapshots: Iterable[tuple[int, Path]]) -> list[SnapshotFile]:
    """A partition dir's ``<offset>.snapshot`` files, parsed (problems kept, never raised)."""
    out: list[SnapshotFile] = []
    for offset, path in snapshots:
        out.append(SnapshotFile(offset=offset, path=str(path),
                                snapshot=read_snapshot_file(path)))
    return out


def loadable_snapshot(snapshots: Iterable[SnapshotFile], log_start_offset: int,
                      log_end_offset: int) -> SnapshotFile | None:
    """``loadFromSnapshot``: the newest snapshot in [log start, log end] that reads without
    ``CorruptSnapshotException`` (one at the log start is the running broker's state there)."""
    usable = [s for s in snapshots if log_start_offset <= s.offset <= log_end_offset
              and s.snapshot.loadable]
    return max(usable, key=lambda s: s.offset) if usable else None


def replay_from_snapshot(snap: SnapshotFile, tail: TailScans,
                         forget_settled: int | None = None) -> ReplayResult:
    """The snapshot's producers, then every batch from its offset on (``forget_settled``: as
    ``PartitionReplayer`` takes it).

    Producers are not expired on load (the broker's clock at restart is unknown offline).
    """
    state = ProducerStateManager()
    state.load_snapshot(list(snap.snapshot.entries), snap.offset)
    replayer = PartitionReplayer(state=state, start_offset=snap.offset,
                                 forget_settled=forget_settled)
    for scan in tail(snap.offset):
        replayer.feed(scan)
    return replayer.result


def load_partition(
    full: ReplayResult,
    snapshots: list[SnapshotFile],
    tail: TailScans,
    *,
    log_start_offset: int,
    log_end_offset: int,
    high_watermark: int | None,
    forget_settled: int | None = None,
) -> LoadedPartition:
    """The state a broker loading this partition has, its LSO, and ``full``'s transactions
    reconciled with it (in place). ``forget_settled``: ``full`` was replayed so (its settled
    transactions forgotten), and the snapshot's tail is replayed so too."""
    snap = loadable_snapshot(snapshots, log_start_offset, log_end_offset)
    if snap is None:
        state = full.state
        snap_replay = None
    else:
        snap_replay = replay_from_snapshot(snap, tail, forget_settled)
        state = snap_replay.state
        _keep_unreplicated(state, full.state, snap.offset)
        _reconcile(full, snap_replay)
    stable = stable_offsets(state, log_end_offset, high_watermark, log_start_offset)
    return LoadedPartition(state=state, stable=stable, snapshot_replay=snap_replay,
                           snapshot_offset=None if snap is None else snap.offset)


def _keep_unreplicated(state: ProducerStateManager, full: ProducerStateManager,
                       snapshot_offset: int) -> None:
    """Completed transactions whose marker lies between the HW and the snapshot: the running
    broker still counts them unstable (``unreplicatedTxns``) though the snapshot cannot say so."""
    for first, txn in full.unreplicated_txns.items():
        if txn.last_offset is not None and txn.last_offset < snapshot_offset:
            state.unreplicated_txns.put(first, txn)


def _reconcile(full: ReplayResult, loaded: ReplayResult) -> None:
    """Give ``full``'s transactions the first offsets the loaded state has, add the ones it
    never saw start (their batches lie below the log start offset), and take the loaded
    replay's ``.txnindex`` entries for the markers it replayed (it knows what they closed)."""
    table = full.transactions
    theirs = loaded.transactions
    with_marker = np.flatnonzero(~theirs.is_null("marker_offset"))
    mine = MarkerRows(table).last_rows(theirs.column("marker_offset")[with_marker],
                                       theirs.column("producer_id")[with_marker])
    firsts = table.column("first_offset")
    their_firsts = theirs.column("first_offset")[with_marker]
    # Only the markers full missed, or whose transaction began earlier in the loaded view.
    need = (mine < 0) | (their_firsts < firsts[np.maximum(mine, 0)]) if len(firsts) else mine < 0
    for i in np.flatnonzero(need).tolist():
        row, t = int(mine[i]), theirs[int(with_marker[i])]
        if row < 0:
            table.append(t)  # full saw a marker closing nothing: drop that event
            full.events = [e for e in full.events if not (
                e.kind == "empty_transaction" and e.batch.producer_id == t.producer_id
                and e.batch.base_offset == t.marker_offset)]
        elif t.first_offset < firsts[row]:
            table.set_field(row, "first_offset", t.first_offset)
            firsts[row] = t.first_offset
    table.settle()
    tail_entries = {(a.producer_id, a.last_offset): a for a in loaded.expected_aborted}
    full.expected_aborted = [tail_entries.pop((a.producer_id, a.last_offset), a)
                             for a in full.expected_aborted] + list(tail_entries.values())
    full.expected_aborted.sort(key=lambda a: a.last_offset)
    open_in_full = {t.producer_id: t for t in full.open_transactions}
    for txn in loaded.state.ongoing_txns.values():
        entry = loaded.state.producers.get(txn.producer_id)
        t = open_in_full.get(txn.producer_id)
        if t is not None:
            t.first_offset = txn.first_offset
            continue
        last_ts = entry.last_timestamp if entry is not None else -1
        last_data = entry.last_data_offset if entry is not None else -1
        full.transactions.append(Transaction(
            producer_id=txn.producer_id,
            producer_epoch=entry.producer_epoch if entry is not None else -1,
            first_offset=txn.first_offset,
            last_data_offset=last_data if last_data >= 0 else txn.first_offset,
            first_timestamp=last_ts, last_timestamp=last_ts))
    full.transactions.sort_by_first_offset()

