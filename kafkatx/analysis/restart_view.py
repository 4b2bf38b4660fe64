"""The restart view: a discovered partition dir through the model of Kafka's log load.

:func:`load_after_restart` hands :func:`kafkatx.semantics.log_load.load_partition` the
evidence (:mod:`kafkatx.storage.partition_files`, read-only) and what the log dir says (the
clean-shutdown marker, the recovery point and log start checkpoints): what a broker starting on
exactly these files has once it has loaded them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import field, replace
from functools import partial
from pathlib import Path

import numpy as np

from kafkatx.analysis.findings import Finding
from kafkatx.analysis.replay import ALL_SETTLED, PartitionReplayer
from kafkatx.analysis.replay_result import ReplayResult, Transaction
from kafkatx.analysis.stable_offsets import StableOffsets, stable_offsets
from kafkatx.formats.batchscan import HeaderColumns
from kafkatx.formats.record_batch import ControlType
from kafkatx.formats.segment_scan import SegmentScan
from kafkatx.formats.txn_index import AbortedTxnEntry
from kafkatx.lazy_dataclass import dataclass
from kafkatx.semantics.log_load import LoadInputs, LoadOutcome, PartitionName, load_partition
from kafkatx.semantics.producer_state import INVALID_TXN_STATE, ProducerStateManager
from kafkatx.semantics.producer_state_load import LoadFailure, replay, replay_rows
from kafkatx.storage.discovery import PartitionDir
from kafkatx.storage.partition_files import EvidenceFiles, load_checkpoints


def _rows_of(scan: SegmentScan, keep: np.ndarray) -> SegmentScan:
    """``scan`` reduced to the rows ``keep`` (ascending), without its problems. The load replays
    whole segments or their tails: a run of consecutive rows is taken as views (the scan itself
    when it is every row, its derived columns shared), so the second load of a partition holds
    no second copy of its columns; any other selection is copied."""
    first, last = int(keep[0]), int(keep[-1])
    h = scan.headers
    if last - first + 1 == len(keep):
        if len(keep) == len(h):
            return replace(scan, problems=())
        rows: slice | np.ndarray = slice(first, last + 1)
    else:
        rows = keep
    return SegmentScan(path=scan.path,
                       headers=HeaderColumns(**{n: getattr(h, n)[rows]
                                                for n in HeaderColumns.COLUMNS}),
                       control_type=scan.control_type[rows],
                       coordinator_epoch=scan.coordinator_epoch[rows], problems=(),
                       size=scan.size)


def columnar_replay(psm: ProducerStateManager, scan: SegmentScan, start: int,
                    upto: int | None, aborted: list[AbortedTxnEntry] | None, *,
                    end: int | None = None, advance_high_watermark: bool = True,
                    high_watermark: int | None = None) -> int:
    """The load model's batch replay (:func:`kafkatx.semantics.producer_state_load.replay`)
    on the columnar path (:class:`~kafkatx.analysis.replay.PartitionReplayer`): the same state
    and ``.txnindex`` entries, proven equal on the oracle's log dirs. A scan holding a batch
    the load throws on (a control batch that is no marker) takes the batch-by-batch path; a
    non-transactional write inside a transaction (``InvalidTxnStateException``) fails.
    ``high_watermark``: the HW the broker gets right after the load (its checkpoint;
    ``ALL_SETTLED``: the log end): the transactions completed below it are dropped as they are
    replayed, as ``onHighWatermarkUpdated`` drops them then (None: kept, as during a load)."""
    h = scan.headers
    rows = replay_rows(scan, start, upto, end)
    if rows is None:
        return 0
    odd = (rows & h.is_control & (h.producer_id >= 0) & (h.magic >= 2) & (h.records_count > 0)
           & ~np.isin(scan.control_type, (ControlType.COMMIT, ControlType.ABORT)))
    if odd.any():
        return replay(psm, scan, start, upto, aborted, end=end,
                      advance_high_watermark=advance_high_watermark)
    keep = np.flatnonzero(rows)
    sub = _rows_of(scan, keep)
    map_end = psm.last_map_offset
    replayer = PartitionReplayer(state=psm, high_watermark=high_watermark)
    replayer.feed(sub)
    for event in replayer.result.events:
        if event.kind == INVALID_TXN_STATE:
            raise LoadFailure(f"{event.message} (InvalidTxnStateException)")
    if aborted is not None:
        aborted.extend(AbortedTxnEntry(producer_id=e.producer_id, first_offset=e.first_offset,
                                       last_offset=e.last_offset,
                                       last_stable_offset=e.last_stable_offset)
                       for e in replayer.result.expected_aborted)
    v2 = sub.headers.magic >= 2
    psm.update_map_end_offset(int(sub.headers.last_offset[v2][-1]) + 1 if v2.any() else map_end)
    if advance_high_watermark:
        psm.on_high_watermark_updated(int(sub.headers.last_offset[-1]) + 1)
    return len(keep)


def load_after_restart(pdir: PartitionDir, *, now_ms: int | None = None,
                       scan: Callable[[Path], SegmentScan] | None = None,
                       chunks: Callable[[Path, int], Iterator[SegmentScan]] | None = None,
                       max_transaction_timeout_ms: int = 900_000,
                       columnar: bool = True,
                       high_watermark: int | None = None) -> LoadOutcome:
    """``LogManager#loadLog`` of ``pdir``, modelled; the evidence is only read. A segment is
    walked in the chunks ``chunks`` gives (a ``.log`` path, a position), else whole (its
    ``scan``). ``columnar`` False replays batch by batch (as ``kafkatx serve`` does).
    ``high_watermark``: as ``columnar_replay`` takes it (columnar only)."""
    cp = load_checkpoints(pdir)
    inputs = LoadInputs(had_clean_shutdown=cp.had_clean_shutdown,
                        recovery_point=cp.recovery_point, log_start_offset=cp.log_start_offset,
                        now_ms=now_ms, notes=cp.notes)
    name = PartitionName(topic=pdir.topic, partition=pdir.partition, state=pdir.state,
                         path=str(pdir.path))
    return load_partition(name, EvidenceFiles(pdir, scan, chunks), inputs,
                          max_transaction_timeout_ms=max_transaction_timeout_ms,
                          replay_segment=(partial(columnar_replay, high_watermark=high_watermark)
                                          if columnar else replay))


@dataclass(slots=True, kw_only=True)
class RestartPrediction:
    """What a broker restart on the evidence changes, against the view as found."""

    outcome: LoadOutcome
    stable: StableOffsets | None = None  # None when the load fails
    open_transactions: list[Transaction] = field(default_factory=list)  # open after restart
    forgotten: list[Transaction] = field(default_factory=list)  # open as found, not after
    reopened: list[Transaction] = field(default_factory=list)  # open after, not as found
    hidden_aborts: list[AbortedTxnEntry] = field(default_factory=list)  # new .txnindex entries
    dropped_aborts: list[AbortedTxnEntry] = field(default_factory=list)  # entries that go

    @property
    def failed(self) -> bool:
        return self.outcome.failure is not None


def _key(e: AbortedTxnEntry) -> tuple[int, int]:
    return e.producer_id, e.last_offset


def predict_restart(pdir: PartitionDir, replay: ReplayResult, *, high_watermark: int | None,
                    found_aborts: list[AbortedTxnEntry], now_ms: int | None = None,
                    chunks: Callable[[Path, int], Iterator[SegmentScan]] | None = None
                    ) -> RestartPrediction:
    """The restart view of ``pdir`` and how it differs from ``replay`` (the view as found)."""
    outcome = load_after_restart(pdir, now_ms=now_ms, chunks=chunks,
                                 high_watermark=(ALL_SETTLED if high_watermark is None
                                                 else high_watermark))
    out = RestartPrediction(outcome=outcome)
    if outcome.failure is not None:
        return out
    state = outcome.state
    out.stable = stable_offsets(state, outcome.log_end_offset, high_watermark,
                                outcome.log_start_offset, outcome.offset_metadata)
    open_by_producer = {t.producer_id: t for t in replay.open_transactions}
    for t in replay.open_transactions:
        entry = state.producers.get(t.producer_id)
        first = None if entry is None else entry.current_txn_first_offset
        if first is None:
            out.forgotten.append(t)
        else:
            out.open_transactions.append(replace(t, first_offset=first))
    for txn in state.ongoing_txns.values():
        if txn.producer_id in open_by_producer:
            continue
        entry = state.producers.get(txn.producer_id)
        last_ts = -1 if entry is None else entry.last_timestamp
        last_data = -1 if entry is None else entry.last_data_offset
        reopened = Transaction(
            producer_id=txn.producer_id,
            producer_epoch=-1 if entry is None else entry.producer_epoch,
            first_offset=txn.first_offset,
            last_data_offset=last_data if last_data >= 0 else txn.first_offset,
            first_timestamp=last_ts, last_timestamp=last_ts)
        out.reopened.append(reopened)
        out.open_transactions.append(reopened)
    out.open_transactions.sort(key=lambda t: t.first_offset)
    before = {_key(e): e for e in found_aborts if e.last_offset < outcome.log_end_offset}
    after = {_key(e): e for e in outcome.aborted}
    out.hidden_aborts = [after[k] for k in sorted(after.keys() - before.keys(),
                                                  key=lambda k: k[1])]
    out.dropped_aborts = [before[k] for k in sorted(before.keys() - after.keys(),
                                                    key=lambda k: k[1])]
    return out


def _txn(t: Transaction) -> str:
    return f"{t.producer_id}/{t.producer_epoch}@{t.first_offset}"


def _list(items: list[str], limit: int = 4) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def restart_findings(prediction: RestartPrediction, *, topic: str, partition: int, path: str,
                     as_found: StableOffsets, log_end_offset: int, view: str,
                     records_between: Callable[[int, int], int],
                     abort_records: Callable[[AbortedTxnEntry], int]) -> list[Finding]:
    """``restart_changes`` when a restart changes what the broker serves (what, and the Kafka
    steps why), ``restart_keeps_transaction`` when the transaction holding the LSO survives
    it (a restart would not help)."""
    outcome = prediction.outcome
    del view  # both views report the same prediction
    if outcome.failure is not None:
        return [Finding(kind="restart_changes", severity="error", topic=topic,
                        partition=partition, location=path,
                        message=f"a broker restarting on these files would not bring "
                                f"{topic}-{partition} online: {outcome.failure}")]
    stable = prediction.stable
    assert stable is not None
    changes: list[str] = []
    old, new = as_found.last_stable_offset, stable.last_stable_offset
    if new != old:
        lo, hi = min(old, new), max(old, new)
        moved = records_between(lo, hi)
        direction = "readable" if new > old else "unreadable"
        changes.append(f"the LSO moves from {old} to {new} ({moved} record(s) become {direction} "
                       "for read_committed consumers)")
    if outcome.log_end_offset != log_end_offset:
        changes.append(f"the log end offset moves from {log_end_offset} to "
                       f"{outcome.log_end_offset}")
    holder = as_found.holder_first_offset
    for t in prediction.forgotten:
        held = " (it holds the LSO)" if holder is not None and t.first_offset == holder else ""
        served = (f"its {t.records} record(s) are served to read_committed consumers as if "
                  "committed" if t.records else "read_committed consumers read past it")
        changes.append(f"the open transaction {_txn(t)}{held} is forgotten (no ABORT marker, "
                       f"no .txnindex entry): {served}")
    for t in prediction.reopened:
        changes.append(f"the transaction {_txn(t)} is open again after the load")
    # an entry matters to consumers only where the log still holds that transaction's records
    hidden = [f"{e.producer_id}@{e.first_offset}..{e.last_offset} ({abort_records(e)} "
              "record(s))" for e in prediction.hidden_aborts if abort_records(e)]
    if hidden:
        changes.append(f"aborted transaction(s) {_list(hidden)} get .txnindex entries: "
                       "read_committed consumers stop receiving their records")
    dropped = [f"{e.producer_id}@{e.first_offset}..{e.last_offset} ({abort_records(e)} "
               "record(s))" for e in prediction.dropped_aborts if abort_records(e)]
    if dropped:
        changes.append(f".txnindex entries {_list(dropped)} go: read_committed consumers "
                       "receive those aborted records")
    files = outcome.file_changes()
    touched = [f"{kind} {_list(names, 3)}" for kind, names in files.items() if names]
    findings: list[Finding] = []
    if changes:
        why = "; ".join(outcome.steps)
        message = (f"a broker restart on these files changes what {topic}-{partition} serves: "
                   + "; ".join(changes))
        if touched:
            message += "; files: " + "; ".join(touched)
        findings.append(Finding(kind="restart_changes", topic=topic, partition=partition,
                                location=path, message=f"{message}. Why: {why}",
                                offset=min((t.first_offset for t in prediction.forgotten),
                                           default=None)))
    kept = [t for t in prediction.open_transactions
            if stable.holder_first_offset is not None
            and t.first_offset == stable.holder_first_offset]
    if kept and holder is not None:
        t = kept[0]
        source = (f"the producer snapshot at offset {outcome.snapshot_offset}"
                  if outcome.snapshot_offset is not None else "the log's batches")
        findings.append(Finding(
            kind="restart_keeps_transaction", topic=topic, partition=partition, location=path,
            producer_id=t.producer_id, producer_epoch=t.producer_epoch, offset=t.first_offset,
            message=f"a broker restart would not help: the transaction {_txn(t)} "
                    f"is rebuilt open from {source} and still holds the LSO at "
                    f"{stable.last_stable_offset}; only a marker closes it: its coordinator's "
                    "(on loading __transaction_state it completes a Prepare* and aborts a "
                    "timed-out transaction) or, for a hanging one, kafka-transactions.sh abort"))
    return findings
