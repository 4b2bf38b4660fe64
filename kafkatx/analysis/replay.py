"""Rebuild a partition's producer state and transactions from its batch headers.

Runs :mod:`kafkatx.semantics.producer_state` over every batch in offset order, exactly as a
broker does while recovering a segment (``LogSegment#updateProducerState``: one append per
batch, origin REPLICATION, completed transactions written to the txn index with the LSO of that
moment), and records what a forensic reader needs on top: every transaction with its offsets,
timestamps and outcome, the .txnindex entries Kafka would have written, every rule a batch broke
(the audit), duplicates, and markers that closed nothing, in a
:class:`~kafkatx.analysis.replay_result.ReplayResult`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from kafkatx.analysis.replay_result import (
    ABORTED,
    COMMITTED,
    BatchRef,
    ExpectedAbortedTxn,
    ReplayEvent,
    ReplayResult,
    SnapshotCheckpoint,
    Transaction,
)
from kafkatx.formats.batch_values import ControlType
from kafkatx.formats.batchscan import HeaderColumns
from kafkatx.formats.internal_topics import GROUP_METADATA_TOPIC
from kafkatx.formats.segment_scan import SegmentScan
from kafkatx.semantics.producer_state import (
    AppendOrigin,
    CompletedTxn,
    ProducerStateEntry,
    ProducerStateError,
    ProducerStateManager,
    TxnMetadata,
    Violation,
)
from kafkatx.semantics.producer_state_columnar import (
    EVENT_EXACT,
    EVENT_MARKER,
    EVENT_NEW_PRODUCER,
    EVENT_TXN_START,
    RunColumns,
    RunPlan,
    finish_run,
    plan_run,
)

RUN_ROWS = 1 << 18  # batches the columnar replay plans at once
ALL_SETTLED = (1 << 63) - 1  # ``forget_settled``: every completed transaction, up to the log end


class OffsetsWentBack(Exception):
    """Raised by a replayer that forgets settled transactions (``forget_settled``) at a batch
    whose offsets are not above the previous one's: what it forgot may matter again."""


def run_columns(scan: SegmentScan, keep: npt.NDArray[np.intp] | None = None) -> RunColumns:
    """The columns the columnar replay reads, for the rows ``keep`` (default: all, as views of
    the scan's columns in their own dtypes: no copy)."""
    h = scan.headers

    def col(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
        return values if keep is None else values[keep]

    return RunColumns(
        base_offset=col(h.base_offset), last_offset=col(h.last_offset),
        producer_id=col(h.producer_id), producer_epoch=col(h.producer_epoch),
        base_sequence=col(h.base_sequence), last_sequence=col(h.last_sequence),
        max_timestamp=col(h.max_timestamp), records_count=col(h.records_count),
        is_transactional=col(h.is_transactional), is_control=col(h.is_control),
        magic=col(h.magic), control_type=col(scan.control_type),
        coordinator_epoch=col(scan.coordinator_epoch))


class PartitionReplayer:
    """Feeds scanned segments, in offset order, through Kafka's producer-state rules."""

    def __init__(
        self,
        *,
        state: ProducerStateManager | None = None,
        start_offset: int | None = None,
        snapshot_offsets: Iterable[int] = (),
        topic: str | None = None,
        columnar: bool = True,
        run_rows: int = RUN_ROWS,
        forget_settled: int | None = None,
        high_watermark: int | None = None,
    ) -> None:
        """``columnar``: replay the common case in bulk (:mod:`producer_state_columnar`);
        False: every batch through the per-batch core (the reference; same results).
        ``run_rows``: the columnar path plans at most this many batches at a time.
        ``forget_settled``: a high watermark the state will be read at (``ALL_SETTLED``: the
        log end): after each ``feed``, the transactions completed below it and below the log
        end so far are dropped from ``result.transactions`` and from the unreplicated ones of
        the state (``onHighWatermarkUpdated`` drops them anyway), so that what is kept is the
        open transactions, not all of them; only for offsets that only go up
        (``OffsetsWentBack`` otherwise)."""
        self.columnar = columnar
        self.run_rows = run_rows
        self.forget_settled = forget_settled
        self.high_watermark = high_watermark
        self._fed_end: int | None = None  # the last offset fed so far (forget_settled)
        self.result = ReplayResult(state=state or ProducerStateManager())
        # Offset commits in __consumer_offsets are appended by the group coordinator (origin
        # COORDINATOR: epochs checked, sequences not, every batch at base sequence 0).
        self.audit_origin = (AppendOrigin.COORDINATOR if topic == GROUP_METADATA_TOPIC
                             else AppendOrigin.CLIENT)
        self.start_offset = start_offset
        self._open: dict[int, Transaction] = {}
        self._last_closed: dict[int, Transaction] = {}  # producer id -> its last marker's
        self._snapshot_offsets = sorted(set(snapshot_offsets))
        self._current: BatchRef | None = None
        self._previous: int | None = None  # the current batch's producer's last data offset
        # producer id -> expected_aborted indexes whose follower LSO waits for the next
        # transaction another producer begins
        self._awaiting_next_txn: dict[int, list[int]] = {}
        for entry in self.result.state.producers.values():
            if entry.current_txn_first_offset is not None:
                # A transaction a snapshot remembers as open: its batches lie before the replay.
                self._open[entry.producer_id] = Transaction(
                    producer_id=entry.producer_id, producer_epoch=entry.producer_epoch,
                    first_offset=entry.current_txn_first_offset,
                    last_data_offset=entry.last_data_offset,
                    first_timestamp=entry.last_timestamp, last_timestamp=entry.last_timestamp)
                self.result.transactions.append(self._open[entry.producer_id])

    def _audit(self, violation: Violation) -> None:
        assert self._current is not None
        self.result.events.append(ReplayEvent(kind=violation.kind, batch=self._current,
                                              message=violation.message,
                                              previous_offset=self._previous))

    def _maybe_record_snapshot(self, next_offset: int) -> None:
        while self._snapshot_offsets and self._snapshot_offsets[0] <= next_offset:
            off = self._snapshot_offsets.pop(0)
            if off == next_offset:
                self.result.snapshot_states[off] = SnapshotCheckpoint(
                    offset=off, entries=self.result.state.snapshot_entries())

    def feed(self, scan: SegmentScan) -> None:
        """Replay one segment's batches (call in segment order; a segment may come in chunks
        of consecutive batches, ``segment_scan.scan_segment_chunks``)."""
        if self.forget_settled is not None:
            self._check_offsets_go_up(scan.headers)
        if self.columnar:
            self._feed_columnar(scan)
        else:
            self.feed_per_batch(scan)
        self.result.transactions.settle()
        if self.forget_settled is not None:
            self._forget_settled(min(self.forget_settled, self.result.log_end_offset))
        elif self.high_watermark is not None:
            self._settle_state(min(self.high_watermark, self.result.log_end_offset))

    def _check_offsets_go_up(self, h: HeaderColumns) -> None:
        if not len(h):
            return
        if self.start_offset is not None:
            keep = h.last_offset >= self.start_offset
            base, last = h.base_offset[keep], h.last_offset[keep]
        else:
            base, last = h.base_offset, h.last_offset
        if not len(base):
            return
        if (bool((base[1:] <= last[:-1]).any()) or bool((last < base).any())
                or (self._fed_end is not None and int(base[0]) <= self._fed_end)):
            raise OffsetsWentBack(f"offsets go back at or before offset {int(base[0])}")
        self._fed_end = int(last[-1])

    def _forget_settled(self, high_watermark: int) -> None:
        """Drop what no longer decides anything once the HW reaches ``high_watermark``: the
        completed transactions with their marker below it (the state's newest unreplicated
        one stays: ``_bulk`` compares offsets with it)."""
        table = self.result.transactions
        table.keep(table.is_null("marker_offset")
                   | (table.column("marker_offset") >= high_watermark))
        self._settle_state(high_watermark)

    def _settle_state(self, high_watermark: int) -> None:
        """``onHighWatermarkUpdated`` on the state, but for its newest unreplicated
        transaction (``_bulk`` compares offsets with it)."""
        res = self.result
        unreplicated = res.state.unreplicated_txns
        if len(unreplicated) > 1:
            res.state.on_high_watermark_updated(
                high_watermark, keep=unreplicated.values_by_key[unreplicated.keys[-1]])

    def _note_timestamps(self, h: HeaderColumns) -> None:
        res = self.result
        real = h.max_timestamp[h.max_timestamp >= 0]
        if len(real):
            res.max_timestamp = max(res.max_timestamp, int(real.max()))
            low = int(real.min())
            res.min_timestamp = low if res.min_timestamp < 0 else min(res.min_timestamp, low)

    def feed_per_batch(self, scan: SegmentScan) -> None:
        """Replay one segment batch by batch through the per-batch core (the reference the
        columnar path is proven equal to)."""
        h: HeaderColumns = scan.headers
        n = len(h)
        if not n:
            return
        base = h.base_offset.tolist()
        last = h.last_offset.tolist()
        pid = h.producer_id.tolist()
        epoch = h.producer_epoch.tolist()
        base_seq = h.base_sequence.tolist()
        last_seq = h.last_sequence.tolist()
        max_ts = h.max_timestamp.tolist()
        count = h.records_count.tolist()
        position = h.position.tolist()
        is_txn = h.is_transactional.tolist()
        is_ctl = h.is_control.tolist()
        magic = h.magic.tolist()
        ctl_type = scan.control_type.tolist()
        coord = scan.coordinator_epoch.tolist()
        res = self.result
        psm = res.state
        self._note_timestamps(h)
        for i in range(n):
            if self.start_offset is not None and last[i] < self.start_offset:
                continue
            if res.first_offset is None:
                res.first_offset = base[i]
            res.batches += 1
            if not is_ctl[i]:
                res.data_records += count[i]
            if pid[i] >= 0 and magic[i] >= 2:
                self._batch(scan.path, position[i], base[i], last[i], pid[i], epoch[i],
                            base_seq[i], last_seq[i], max_ts[i], count[i], is_txn[i], is_ctl[i],
                            ctl_type[i], coord[i])
            psm.update_map_end_offset(last[i] + 1)
            res.log_end_offset = last[i] + 1
            self._maybe_record_snapshot(last[i] + 1)

    def _batch(self, path: str | None, position: int, base: int, last: int, pid: int,
               epoch: int, base_seq: int, last_seq: int, max_ts: int, count: int, is_txn: bool,
               is_ctl: bool, ctl_type: int, coord: int) -> None:
        """One producer batch through the per-batch core."""
        self._current = BatchRef(path=path, position=position, base_offset=base,
                                 last_offset=last, producer_id=pid, producer_epoch=epoch)
        if is_ctl:
            self._marker(pid, epoch, max_ts, count, ctl_type, coord)
        else:
            self._data(base, last, pid, epoch, base_seq, last_seq, max_ts, count, is_txn)

    # -- the columnar path --------------------------------------------------------------------

    def _feed_columnar(self, scan: SegmentScan) -> None:
        h: HeaderColumns = scan.headers
        if not len(h):
            return
        self._note_timestamps(h)
        keep = (np.flatnonzero(h.last_offset >= self.start_offset)
                if self.start_offset is not None else None)
        cols = run_columns(scan, keep)
        n = len(cols)
        if not n:
            return
        positions = h.position if keep is None else h.position[keep]
        res = self.result
        if res.first_offset is None:
            res.first_offset = int(cols.base_offset[0])
        res.batches += n
        res.data_records += int(cols.records_count[~cols.is_control].sum())
        next_offset = cols.last_offset + 1
        start = 0
        cuts = [(row + 1, offset) for row, offset in self._snapshot_cuts(next_offset)]
        for end, offset in [*cuts, (n, None)]:
            # Runs of at most run_rows batches: the planning's temporaries stay bounded
            # whatever the segment's size (a run continues the state the last one left).
            for lo in range(start, end, self.run_rows):
                self._run(cols, positions, scan.path, lo, min(lo + self.run_rows, end))
            start = end
            if offset is not None:
                self.result.snapshot_states[offset] = SnapshotCheckpoint(
                    offset=offset, entries=self.result.state.snapshot_entries())
        res.state.update_map_end_offset(int(next_offset[-1]))
        res.log_end_offset = int(next_offset[-1])

    def _snapshot_cuts(self, next_offset: npt.NDArray[np.int64]) -> list[tuple[int, int]]:
        """(row, snapshot offset) pairs: after ``row`` the per-batch replay records a snapshot
        checkpoint; pops every snapshot offset the run passes (as ``_maybe_record_snapshot``)."""
        reached = np.maximum.accumulate(next_offset)
        cuts = []
        while self._snapshot_offsets and self._snapshot_offsets[0] <= reached[-1]:
            off = self._snapshot_offsets.pop(0)
            row = int(np.searchsorted(reached, off, side="left"))
            if next_offset[row] == off:
                cuts.append((row, off))
        return cuts

    def _run(self, cols: RunColumns, positions: npt.NDArray[np.int64], path: str | None,
             lo: int, hi: int) -> None:
        """Replay rows [lo, hi) of a segment: the common case in bulk, the rest batch by batch."""
        if lo >= hi:
            return
        if lo > 0 or hi < len(cols):
            cols = RunColumns(**{f: getattr(cols, f)[lo:hi] for f in RunColumns._fields})
            positions = positions[lo:hi]
        psm = self.result.state
        plan = plan_run(cols, psm, tracked_open={p: t.first_offset for p, t in self._open.items()},
                        check_sequences=self.audit_origin == AppendOrigin.CLIENT)
        continuing = {ref: self._open[int(plan.producer_id[plan.txn_producer[ref]])]
                      for ref in np.flatnonzero(plan.txn_continues).tolist()}
        if not len(plan.exact_rows) and self._bulk(cols, plan):
            self._add_to_continuing(plan, continuing)
            finish_run(plan, cols, psm)
            return
        keys = plan.event_keys
        rows = keys >> 2
        # Per event: the batch fields a marker needs, and the transaction's (as plain ints).
        ev_offset = cols.base_offset[rows].tolist()
        ev_epoch = cols.producer_epoch[rows].tolist()
        ev_ts = cols.max_timestamp[rows].tolist()
        ev_coord = cols.coordinator_epoch[rows].tolist()
        ev_abort = (cols.control_type[rows] == ControlType.ABORT).tolist()
        refs = plan.event_refs
        kinds = keys & 3
        is_txn_event = (kinds == EVENT_MARKER) | (kinds == EVENT_TXN_START)
        group = np.where(kinds == EVENT_NEW_PRODUCER, refs, 0)
        group[is_txn_event] = plan.txn_producer[refs[is_txn_event]]
        ev_pid = (plan.producer_id[group] if len(plan.producer_id)
                  else np.zeros(len(keys), dtype=np.int64)).tolist()
        first = np.zeros(len(keys), dtype=np.int64)
        first[is_txn_event] = plan.txn_first_offset[refs[is_txn_event]]
        ev_first = first.tolist()
        txn_fields = list(zip(plan.txn_epoch.tolist(), plan.txn_last_data_offset.tolist(),
                              plan.txn_first_timestamp.tolist(),
                              plan.txn_last_timestamp.tolist(), plan.txn_batches.tolist(),
                              plan.txn_records.tolist(), strict=True))
        res = self.result
        put_ongoing = psm.ongoing_txns.put
        for i, (row, kind, ref) in enumerate(zip(rows.tolist(), kinds.tolist(), refs.tolist(),
                                                 strict=True)):
            if kind == EVENT_MARKER:
                pid = ev_pid[i]
                self._completed(CompletedTxn(pid, ev_first[i], ev_offset[i], ev_abort[i]),
                                pid, ev_epoch[i], ev_ts[i], ev_coord[i])
            elif kind == EVENT_TXN_START:
                pid = ev_pid[i]
                first = ev_first[i]
                if self._awaiting_next_txn:
                    self._next_txn_started(pid, first)
                epoch, last_data, first_ts, last_ts, batches, records = txn_fields[ref]
                txn = Transaction(
                    producer_id=pid, producer_epoch=epoch, first_offset=first,
                    last_data_offset=last_data, first_timestamp=first_ts,
                    last_timestamp=last_ts, batches=batches, records=records)
                self._open[pid] = txn
                res.transactions.append(txn)
                put_ongoing(first, TxnMetadata(pid, first))
            elif kind == EVENT_EXACT:
                self._batch(path, int(positions[row]), int(cols.base_offset[row]),
                            int(cols.last_offset[row]), int(cols.producer_id[row]),
                            int(cols.producer_epoch[row]), int(cols.base_sequence[row]),
                            int(cols.last_sequence[row]), int(cols.max_timestamp[row]),
                            int(cols.records_count[row]), bool(cols.is_transactional[row]),
                            bool(cols.is_control[row]), int(cols.control_type[row]),
                            int(cols.coordinator_epoch[row]))
            else:
                pid = ev_pid[i]
                psm.producers[pid] = ProducerStateEntry(pid)
        self._add_to_continuing(plan, continuing)
        finish_run(plan, cols, psm)

    def _data(self, base: int, last: int, pid: int, epoch: int, base_seq: int, last_seq: int,
              max_ts: int, count: int, is_txn: bool) -> None:
        psm = self.result.state
        entry = psm.last_entry(pid)
        self._previous = (entry.last_data_offset if entry is not None
                          and entry.last_data_offset >= 0 else None)
        if entry is not None and base_seq >= 0 and self.audit_origin == AppendOrigin.CLIENT:
            dup = entry.find_duplicate_batch(epoch, base_seq, last_seq)
            if dup is not None:
                assert self._current is not None
                self.result.events.append(ReplayEvent(
                    kind="duplicate_batch", batch=self._current, previous_offset=self._previous,
                    message=f"producer {pid} epoch {epoch} sequences {base_seq}..{last_seq} were "
                            f"already written at offsets {dup.first_offset}..{dup.last_offset}: "
                            "a duplicate the leader should have answered, not appended"))
        info = psm.prepare_update(pid, AppendOrigin.REPLICATION, audit=self._audit,
                                  audit_origin=self.audit_origin)
        try:
            info.append_data_batch(epoch, base_seq, last_seq, max_ts, base, last, is_txn)
        except ProducerStateError:
            return  # audited; Kafka discards the append, so the state does not change
        psm.update(info)
        if not is_txn:
            return
        if info.started_transactions and self._awaiting_next_txn:
            self._next_txn_started(pid, base)
        txn = self._open.get(pid)
        if info.started_transactions or txn is None:
            txn = Transaction(producer_id=pid, producer_epoch=epoch, first_offset=base,
                              last_data_offset=last, first_timestamp=max_ts,
                              last_timestamp=max_ts)
            self._open[pid] = txn
            self.result.transactions.append(txn)
        txn.last_data_offset = last
        txn.last_timestamp = max(txn.last_timestamp, max_ts)
        txn.first_timestamp = min(txn.first_timestamp, max_ts)
        txn.batches += 1
        txn.records += count

    def _next_txn_started(self, pid: int, first_offset: int) -> None:
        """Another producer's transaction began: a follower's chunk holding both could have
        written its first offset as the LSO of the aborted ones waiting for it."""
        expected = self.result.expected_aborted
        for other in [p for p in self._awaiting_next_txn if p != pid]:
            for k in self._awaiting_next_txn.pop(other):
                expected[k] = expected[k]._replace(follower_last_stable_offset=first_offset)

    def _follower_lsos(self, starts: list[tuple[int, int, int]],
                       waits: list[tuple[int, int, int]]) -> None:
        """``_next_txn_started`` and the waiting aborted transactions of a bulk run, in log
        order: ``starts`` (row, producer id, first offset), ``waits`` (row, producer id,
        expected_aborted index)."""
        events = sorted([(row, 0, pid, first) for row, pid, first in starts]
                        + [(row, 1, pid, k) for row, pid, k in waits])
        for _row, is_wait, pid, value in events:
            if is_wait:
                self._awaiting_next_txn.setdefault(pid, []).append(value)
            elif self._awaiting_next_txn:
                self._next_txn_started(pid, value)

    def _marker(self, pid: int, epoch: int, ts: int, count: int, ctl_type: int,
                coordinator_epoch: int) -> None:
        ref = self._current
        assert ref is not None
        psm = self.result.state
        self._previous = None
        if count == 0:
            # Emptied by the cleaner: ProducerAppendInfo#append appends nothing, but
            # UnifiedLog#updateProducers still runs prepareUpdate/update (an unknown producer
            # gets an empty entry).
            psm.update(psm.prepare_update(pid, AppendOrigin.REPLICATION))
            return
        if ctl_type not in (ControlType.ABORT, ControlType.COMMIT):
            self.result.events.append(ReplayEvent(
                kind="unexpected_control_batch", batch=ref,
                message=f"control batch of type {ctl_type} from producer {pid} in a data "
                        "partition; Kafka only expects COMMIT/ABORT markers here"))
            return
        entry = psm.last_entry(pid)
        last_data = entry.last_data_offset if entry is not None else -1
        info = psm.prepare_update(pid, AppendOrigin.REPLICATION, audit=self._audit)
        completed = info.append_end_txn_marker(
            is_commit=ctl_type == ControlType.COMMIT, coordinator_epoch=coordinator_epoch,
            producer_epoch=epoch, offset=ref.base_offset, timestamp=ts)
        psm.update(info)
        kind = "COMMIT" if ctl_type == ControlType.COMMIT else "ABORT"
        if completed is None:
            # Kafka writes a marker to every partition of the transaction, also one the producer
            # was added to and never wrote (TransactionMarkerChannelManager): an empty one.
            self.result.events.append(ReplayEvent(
                kind="empty_transaction", batch=ref,
                message=self._empty_marker_message(kind, pid, epoch, ctl_type, last_data)))
            return
        self._completed(completed, pid, epoch, ts, coordinator_epoch)

    def _empty_marker_message(self, kind: str, pid: int, epoch: int, ctl_type: int,
                              last_data: int) -> str:
        head = f"{kind} marker for producer {pid} epoch {epoch} closes no data in this partition"
        prev = self._last_closed.get(pid)
        outcome = COMMITTED if ctl_type == ControlType.COMMIT else ABORTED
        if (prev is not None and prev.marker_offset is not None and prev.marker_epoch == epoch
                and prev.outcome == outcome and last_data < prev.marker_offset):
            # TransactionStateManager#loadTransactionsForTxnTopicPartition: a coordinator that
            # loads PrepareCommit/PrepareAbort sends every marker of it, its predecessor's too
            return (f"{head}: it repeats the {kind} marker at offset {prev.marker_offset} that "
                    f"closed the transaction (offsets {prev.first_offset}.."
                    f"{prev.last_data_offset}) with no data of the producer between: a "
                    "coordinator that took over the prepared transaction sent its markers again")
        return (f"{head}: the producer was added to the transaction and wrote nothing here, or "
                "its data was deleted by retention or removed by the cleaner")

    def _bulk(self, cols: RunColumns, plan: RunPlan) -> bool:
        """A run where every producer is in the common case, its offsets increasing and above
        every transaction the state holds: the transactions, the .txnindex entries and the
        LSO at each marker computed at once. The LSO at a marker is
        ``ProducerStateManager#lastStableOffset``: the first offset of the earliest-started
        transaction still ongoing (offsets increase, so that is the smallest first offset),
        the marker's own having just ended, else the marker offset + 1. False: not such a run.
        """
        psm = self.result.state
        base, last = cols.base_offset, cols.last_offset
        floor = max(psm.ongoing_txns.keys[-1:] + psm.unreplicated_txns.keys[-1:], default=-1)
        if bool((base[1:] <= last[:-1]).any()) or int(base[0]) <= floor:
            return False
        kinds = plan.event_keys & 3
        rows = plan.event_keys >> 2
        refs = plan.event_refs
        # Every transaction that may be ongoing during the run, in start order: those the
        # state holds (started before the run), then the run's own.
        before = list(psm.ongoing_txns.values())
        start_ev = kinds == EVENT_TXN_START
        marker_ev = kinds == EVENT_MARKER
        start_refs = refs[start_ev]
        n_before = len(before)
        t = len(plan.txn_first_offset)
        order_of_txn = np.full(t, -1, dtype=np.int64)  # txn ref -> start-order index
        order_of_txn[start_refs] = n_before + np.arange(len(start_refs))
        marker_refs = refs[marker_ev]
        marker_rows = rows[marker_ev]
        closing = order_of_txn[marker_refs]
        cont = closing < 0  # closes a transaction that began before the run
        if cont.any():
            # Each must be the marker's producer's entry in the state: after offsets went
            # back, another producer's transaction may hold its first offset
            # (``ProducerStateManager#completeTxn`` would refuse): the event path handles that.
            before_index = {(x.first_offset, x.producer_id): i for i, x in enumerate(before)}
            found = [before_index.get(key) for key in zip(
                plan.txn_first_offset[marker_refs[cont]].tolist(),
                plan.producer_id[plan.txn_producer[marker_refs[cont]]].tolist(), strict=True)]
            if None in found:
                return False
            closing[cont] = found
        for g in refs[kinds == EVENT_NEW_PRODUCER].tolist():
            pid = int(plan.producer_id[g])
            psm.producers[pid] = ProducerStateEntry(pid)
        first_offsets = np.concatenate((np.array([x.first_offset for x in before], dtype=np.int64),
                                        plan.txn_first_offset[start_refs]))
        start_row = np.concatenate((np.full(n_before, -1, dtype=np.int64), rows[start_ev]))
        end_row = np.full(len(first_offsets), np.iinfo(np.int64).max, dtype=np.int64)
        end_row[closing] = marker_rows
        # The earliest-started transaction not ended by row m: the first j with end > m.
        reach = np.maximum.accumulate(end_row) if len(end_row) else end_row
        head = np.searchsorted(reach, marker_rows, side="right")
        ongoing_other = head < len(end_row)
        ongoing_other[ongoing_other] = start_row[head[ongoing_other]] < marker_rows[ongoing_other]
        marker_offset = base[marker_rows]
        lso = np.where(ongoing_other, first_offsets[np.minimum(head, len(end_row) - 1)]
                       if len(end_row) else 0, marker_offset + 1)
        # Each transaction's TxnMetadata (the state's), then each marker's .txnindex entry.
        res = self.result
        pids = plan.producer_id[plan.txn_producer]
        new_meta = [(first, TxnMetadata(pid, first)) for pid, first in zip(
            pids[start_refs].tolist(), plan.txn_first_offset[start_refs].tolist(), strict=True)]
        metas = [m for _, m in new_meta]
        done: list[tuple[int, TxnMetadata]] = []
        aborted = cols.control_type[marker_rows] == ControlType.ABORT
        waits: list[tuple[int, int, int]] = []  # aborted ones a follower may write otherwise
        for row, j, pid, off, abort, stable in zip(
                marker_rows.tolist(), closing.tolist(), pids[marker_refs].tolist(),
                marker_offset.tolist(), aborted.tolist(), lso.tolist(), strict=True):
            meta = before[j] if j < n_before else metas[j - n_before]
            meta.last_offset = off
            done.append((meta.first_offset, meta))
            if abort:
                if stable == off + 1:
                    waits.append((row, pid, len(res.expected_aborted)))
                res.expected_aborted.append(ExpectedAbortedTxn(
                    producer_id=pid, first_offset=meta.first_offset, last_offset=off,
                    last_stable_offset=stable))
        self._bulk_transactions(cols, plan, start_refs, marker_refs, marker_rows, closing,
                                n_before, aborted, lso, int(cols.last_offset[-1]))
        if waits or self._awaiting_next_txn:
            self._follower_lsos(list(zip(rows[start_ev].tolist(), pids[start_refs].tolist(),
                                         plan.txn_first_offset[start_refs].tolist(),
                                         strict=True)), waits)
        still = end_row == np.iinfo(np.int64).max
        psm.ongoing_txns = type(psm.ongoing_txns)()
        psm.ongoing_txns.put_all([(x.first_offset, x) for i, x in enumerate(before) if still[i]]
                                 + [(f, m) for i, (f, m) in enumerate(new_meta)
                                    if still[n_before + i]])
        psm.unreplicated_txns.put_all(done)
        return True

    def _bulk_transactions(self, cols: RunColumns, plan: RunPlan,
                           start_refs: npt.NDArray[np.int64], marker_refs: npt.NDArray[np.int64],
                           marker_rows: npt.NDArray[np.int64], closing: npt.NDArray[np.int64],
                           n_before: int, aborted: npt.NDArray[np.bool_],
                           lso: npt.NDArray[np.int64], last_offset: int) -> None:
        """A bulk run's transactions, as columns: the run's own (each closed by the marker
        ``closing`` points at it, else open and kept as an object the replay goes on with),
        and the outcome of those it closes that began before it (objects already)."""
        table = self.result.transactions
        pids = plan.producer_id[plan.txn_producer]
        marker_offset = cols.base_offset[marker_rows]
        unkept = self._settled_in_run(start_refs, marker_refs, marker_offset, pids, last_offset)
        k = len(start_refs)
        new_closing = closing >= n_before
        closed_by = np.full(k, -1, dtype=np.int64)  # a run transaction -> its marker
        closed_by[closing[new_closing] - n_before] = np.flatnonzero(new_closing)
        kept = (~np.isin(start_refs, np.fromiter(unkept, dtype=np.int64, count=len(unkept)))
                if unkept else np.ones(k, dtype=bool))
        row_of_start = table.extend_run(
            {"producer_id": pids[start_refs], "producer_epoch": plan.txn_epoch[start_refs],
             "first_offset": plan.txn_first_offset[start_refs],
             "last_data_offset": plan.txn_last_data_offset[start_refs],
             "first_timestamp": plan.txn_first_timestamp[start_refs],
             "last_timestamp": plan.txn_last_timestamp[start_refs],
             "batches": plan.txn_batches[start_refs], "records": plan.txn_records[start_refs]},
            closed_by,
            {"marker_offset": marker_offset, "marker_timestamp": cols.max_timestamp[marker_rows],
             "marker_epoch": cols.producer_epoch[marker_rows],
             "coordinator_epoch": cols.coordinator_epoch[marker_rows],
             "last_stable_offset_at_marker": lso}, aborted, kept)
        # Those that began before the run and end in it: their objects take the outcome.
        marker_pids = pids[marker_refs]
        closed_before: dict[int, Transaction] = {}
        for i in np.flatnonzero(~new_closing).tolist():
            closed_before[i] = self._open[int(marker_pids[i])].close(
                bool(aborted[i]), int(marker_offset[i]),
                int(cols.max_timestamp[marker_rows[i]]), int(cols.producer_epoch[marker_rows[i]]),
                int(cols.coordinator_epoch[marker_rows[i]]), int(lso[i]))
        for pid in set(marker_pids.tolist()):
            self._open.pop(pid, None)
        # Each producer's last closed transaction (an empty marker's message reads it).
        kept_markers = np.flatnonzero(np.append(kept, True)[
            np.where(new_closing, closing - n_before, k)])
        if len(kept_markers):
            by_pid = marker_pids[kept_markers][::-1]
            _, from_end = np.unique(by_pid, return_index=True)
            for i in kept_markers[::-1][from_end].tolist():
                txn = closed_before.get(i)
                if txn is None:
                    txn = table[int(row_of_start[closing[i] - n_before])]
                self._last_closed[int(marker_pids[i])] = txn
        for s in np.flatnonzero(kept & (closed_by < 0)).tolist():
            row = int(row_of_start[s])
            txn = table[row]
            table.make_live(row, txn)
            self._open[txn.producer_id] = txn

    def _settled_in_run(self, start_refs: npt.NDArray[np.int64],
                        marker_refs: npt.NDArray[np.int64], marker_offset: npt.NDArray[np.int64],
                        pids: npt.NDArray[np.int64], last_offset: int) -> set[int]:
        """With ``forget_settled``: the transactions of a bulk run that ``_forget_settled``
        drops after it (begun and ended in the run, their marker below the HW and the run's
        end), but for each producer's last (``_last_closed``); no ``Transaction`` is made for
        them."""
        if self.forget_settled is None or not len(marker_refs):
            return set()
        refs, counts = np.unique(marker_refs, return_counts=True)
        once = np.zeros(len(pids), dtype=bool)
        once[refs[counts == 1]] = True
        started = np.zeros(len(pids), dtype=bool)
        started[start_refs] = True
        producer = pids[marker_refs]
        last_of_producer = np.zeros(len(marker_refs), dtype=bool)
        _, from_end = np.unique(producer[::-1], return_index=True)
        last_of_producer[len(producer) - 1 - from_end] = True
        settled = (once[marker_refs] & started[marker_refs] & ~last_of_producer
                   & (marker_offset < min(self.forget_settled, last_offset + 1)))
        return set(marker_refs[settled].tolist())

    @staticmethod
    def _add_to_continuing(plan: RunPlan, continuing: dict[int, Transaction]) -> None:
        """The run's batches of transactions that began before it."""
        for ref, txn in continuing.items():
            added = int(plan.txn_batches[ref])
            if added:
                txn.batches += added
                txn.records += int(plan.txn_records[ref])
                txn.last_data_offset = int(plan.txn_last_data_offset[ref])
                txn.first_timestamp = min(txn.first_timestamp, int(plan.txn_first_timestamp[ref]))
                txn.last_timestamp = max(txn.last_timestamp, int(plan.txn_last_timestamp[ref]))

    def _completed(self, completed: CompletedTxn, pid: int, epoch: int, ts: int,
                   coordinator_epoch: int) -> None:
        """A marker closed ``completed``: the .txnindex entry, the LSO of that moment, the
        transaction's outcome (``ProducerStateManager#lastStableOffset`` / ``completeTxn``)."""
        psm = self.result.state
        lso = psm.last_stable_offset(completed)
        if completed.is_aborted:
            if lso == completed.last_offset + 1:
                self._awaiting_next_txn.setdefault(pid, []).append(
                    len(self.result.expected_aborted))
            self.result.expected_aborted.append(ExpectedAbortedTxn(
                producer_id=pid, first_offset=completed.first_offset,
                last_offset=completed.last_offset, last_stable_offset=lso))
        ongoing = psm.ongoing_txns.values_by_key.get(completed.first_offset)
        if ongoing is not None and ongoing.producer_id == pid:
            psm.complete_txn(completed)
        # else offsets went back (offset_regression) and another producer's transaction began
        # at the same offset: Kafka's append would have refused the batch
        # (``ProducerStateManager#completeTxn`` throws); the forensic replay goes on
        txn = self._open.pop(pid, None)
        if txn is None or txn.first_offset != completed.first_offset:
            txn = Transaction(producer_id=pid, producer_epoch=epoch,
                              first_offset=completed.first_offset,
                              last_data_offset=completed.first_offset,
                              first_timestamp=ts, last_timestamp=ts)
            self.result.transactions.append(txn)
        self._last_closed[pid] = txn.close(completed.is_aborted, completed.last_offset, ts, epoch,
                                           coordinator_epoch, lso)

