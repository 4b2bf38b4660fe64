"""Producer-state replay over batch-header columns: the common case vectorised, the rest exact.

The per-batch core (:mod:`kafkatx.semantics.producer_state`, ``ProducerAppendInfo`` /
``ProducerStateManager``) stays the one authority on Kafka's rules. This module only decides,
with numpy over a run of batches, which producers' batches are in the *common case* -- where
the per-batch rules provably accept every batch without a violation and the outcome is plain
bookkeeping -- and computes that bookkeeping in bulk:

* one epoch for all of the producer's batches, equal to its current epoch (or a new producer);
* data batches in sequence (each base sequence follows the previous last sequence, no int32
  wrap), none a retained duplicate (``ProducerStateEntry#findDuplicateBatch``);
* all data batches transactional with a COMMIT/ABORT marker only ever after data of an open
  transaction (never two markers in a row, never one without data), coordinator epochs not
  going back -- or all data batches idempotent-only (no markers, no open transaction);
* markers not emptied by the cleaner.

Every other producer (sequence gaps, duplicates, epoch bumps, zombies, markers without data,
fenced coordinators, unknown control batches, cleaned markers) is handed, batch by batch, to the
exact per-batch path from the state it had. The caller replays everything in log order as
*events*: the exact path's batches, and for the common-case producers only the moments that
touch the partition-wide state (a transaction starting, a marker completing one, a producer
first seen), through the same ``ProducerStateManager`` methods. Producer entries of the common
case are brought to their end state with ``ProducerStateEntry`` methods at the end of the run.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from kafkatx.formats.batch_values import INT32_MAX, ControlType
from kafkatx.lazy_dataclass import dataclass
from kafkatx.semantics.producer_state import (
    NUM_BATCHES_TO_RETAIN,
    ProducerStateEntry,
    ProducerStateManager,
)

# Event kinds, in the order they happen at one row (a producer is first seen, then its
# transaction starts at that same batch).
EVENT_NEW_PRODUCER = 0
EVENT_TXN_START = 1
EVENT_MARKER = 2
EVENT_EXACT = 3
_KIND_BITS = 2
NO_MARKER = np.iinfo(np.int64).min  # a coordinator epoch is an int32: never this

I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
Ints = npt.NDArray[np.signedinteger[Any]]
_NO_ROWS: I64 = np.zeros(0, dtype=np.int64)


class RunColumns(NamedTuple):
    """The header columns of a run of batches in log order (one row per batch), in the
    scanner's dtypes (int64 offsets, ids and timestamps; int32 sequences, counts and
    coordinator epochs; int16 epochs and control types; int8 magic)."""

    base_offset: I64
    last_offset: I64
    producer_id: I64
    producer_epoch: Ints
    base_sequence: Ints
    last_sequence: Ints
    max_timestamp: I64
    records_count: Ints
    is_transactional: Mask
    is_control: Mask
    magic: Ints
    control_type: Ints
    coordinator_epoch: Ints

    def __len__(self) -> int:
        return len(self.base_offset)


@dataclass(slots=True, kw_only=True)
class RunPlan:
    """What replaying a run takes: events in log order, transactions and end states of the
    common-case producers."""

    # Events: row * 4 + kind, sorted; the payload of an event is txn index or producer index.
    event_keys: I64
    event_refs: I64
    # Transactions of common-case producers touched by the run (index = txn ref).
    txn_producer: I64
    txn_epoch: I64
    txn_first_offset: I64
    txn_continues: Mask  # open before the run: no start event, the caller tracks it
    txn_batches: I64
    txn_records: I64
    txn_last_data_offset: I64  # -1 when the run adds no data to it
    txn_first_timestamp: I64
    txn_last_timestamp: I64
    # Common-case producers (index = producer ref).
    producer_id: I64
    producer_epoch: I64
    producer_last_timestamp: I64
    producer_coordinator_epoch: I64  # of its last marker; NO_MARKER: none in the run
    producer_txn_first_offset: I64  # open transaction at the end; -1: none
    producer_batch_rows: list[I64]  # rows of its last (up to 5) data batches
    producer_fast: Mask  # False: the producer's batches take the exact path

    @property
    def exact_rows(self) -> I64:
        return self.event_keys[(self.event_keys & 3) == EVENT_EXACT] >> _KIND_BITS


def _group_any(flags: Mask, group_of: I64, groups: int) -> Mask:
    return np.bincount(group_of[flags], minlength=groups) > 0


def plan_run(cols: RunColumns, psm: ProducerStateManager, *, tracked_open: dict[int, int],
             check_sequences: bool) -> RunPlan:
    """Split the run's producers into the common case and the exact path (see the module doc).

    ``tracked_open``: producer id -> first offset of the open transaction the caller tracks
    (a producer whose tracking disagrees with its entry takes the exact path).
    ``check_sequences``: whether the replay audits client sequence rules (and duplicates).
    """
    n = len(cols)
    rows_all = np.flatnonzero((cols.producer_id >= 0) & (cols.magic >= 2))
    pid_all = cols.producer_id[rows_all]
    order = np.argsort(pid_all, kind="stable")
    rows = rows_all[order]  # grouped by producer, log order within a group
    gpid = pid_all[order]
    m = len(rows)
    is_start = np.ones(m, dtype=bool)
    if m:
        is_start[1:] = gpid[1:] != gpid[:-1]
    starts = np.flatnonzero(is_start)
    groups = len(starts)
    ends = np.append(starts[1:], m).astype(np.int64)
    group_of = np.repeat(np.arange(groups, dtype=np.int64), ends - starts)

    ctl = cols.is_control[rows]
    data = ~ctl
    epoch = cols.producer_epoch[rows]
    txn_flag = cols.is_transactional[rows]
    prev_same = np.zeros(m, dtype=bool)  # the previous grouped row is the same producer's
    prev_same[1:] = ~is_start[1:]
    bad = (epoch != epoch[starts][group_of]) | (epoch < 0)

    # Markers: COMMIT/ABORT with their record, never two in a row, coordinator epochs monotone.
    ctype = cols.control_type[rows]
    bad |= ctl & (((ctype != ControlType.ABORT) & (ctype != ControlType.COMMIT))
                  | (cols.records_count[rows] <= 0))
    bad[1:] |= ctl[1:] & ctl[:-1] & prev_same[1:]
    mpos = np.flatnonzero(ctl)
    coord = cols.coordinator_epoch[rows]
    if len(mpos) > 1:
        same = group_of[mpos[1:]] == group_of[mpos[:-1]]
        back = same & (coord[mpos[1:]] < coord[mpos[:-1]])
        bad[mpos[1:][back]] = True

    # Data: one kind per producer (transactional or idempotent-only, the latter without markers).
    data_count = np.bincount(group_of[data], minlength=groups)
    txn_count = np.bincount(group_of[data & txn_flag], minlength=groups)
    marker_count = np.bincount(group_of[ctl], minlength=groups)
    is_txn_group = txn_count > 0
    bad_group = _group_any(bad, group_of, groups)
    bad_group |= (txn_count > 0) & (txn_count < data_count)
    bad_group |= (txn_count == 0) & (data_count > 0) & (marker_count > 0)

    dpos = np.flatnonzero(data)
    base_seq = cols.base_sequence[rows].astype(np.int64)
    last_seq = cols.last_sequence[rows].astype(np.int64)
    if check_sequences and len(dpos):
        delta = cols.last_offset[rows] - cols.base_offset[rows]
        wraps = data & ((base_seq < 0) | (base_seq + delta > INT32_MAX))
        bad_group |= _group_any(wraps, group_of, groups)
        if len(dpos) > 1:
            same = group_of[dpos[1:]] == group_of[dpos[:-1]]
            gap = same & (base_seq[dpos[1:]] != last_seq[dpos[:-1]] + 1)
            bad_group[group_of[dpos[1:]][gap]] = True

    first_row = rows[starts]
    first_is_marker = ctl[starts]
    first_data_pos = np.full(groups, -1, dtype=np.int64)
    first_data_idx = np.full(groups, -1, dtype=np.int64)  # its index in dpos
    if len(dpos):
        dstart = np.ones(len(dpos), dtype=bool)
        dstart[1:] = group_of[dpos[1:]] != group_of[dpos[:-1]]
        first_data_pos[group_of[dpos[dstart]]] = dpos[dstart]
        first_data_idx[group_of[dpos[dstart]]] = np.flatnonzero(dstart)
    first_marker_pos = np.full(groups, -1, dtype=np.int64)
    if len(mpos):
        mstart = np.ones(len(mpos), dtype=bool)
        mstart[1:] = group_of[mpos[1:]] != group_of[mpos[:-1]]
        first_marker_pos[group_of[mpos[mstart]]] = mpos[mstart]

    # The producers' entries before the run decide the rest (few producers: a Python loop).
    fast = ~bad_group
    existed = np.zeros(groups, dtype=bool)
    continues = np.zeros(groups, dtype=bool)
    continues_first = np.full(groups, -1, dtype=np.int64)
    group_pid = gpid[starts].tolist()
    group_epoch = epoch[starts].tolist()
    producers = psm.producers
    for g in np.flatnonzero(fast).tolist():
        pid = group_pid[g]
        entry = producers.get(pid)
        open_first = None if entry is None else entry.current_txn_first_offset
        if tracked_open.get(pid) != open_first:
            fast[g] = False
            continue
        fm = first_marker_pos[g]
        if entry is None:
            # A new producer's entry starts at coordinator epoch -1 (``ProducerStateEntry.empty``).
            if first_is_marker[g] or (fm >= 0 and coord[fm] < -1):
                fast[g] = False
            continue
        existed[g] = True
        if entry.producer_epoch != group_epoch[g]:
            fast[g] = False
            continue
        if open_first is not None:
            if not is_txn_group[g] and data_count[g] > 0:
                fast[g] = False  # a non-transactional write inside the transaction
                continue
            continues[g] = True
            continues_first[g] = open_first
        elif first_is_marker[g]:
            fast[g] = False
            continue
        if fm >= 0 and coord[fm] < entry.coordinator_epoch:
            fast[g] = False
            continue
        k0 = int(first_data_idx[g])
        if check_sequences and k0 >= 0:
            first = dpos[k0:k0 + min(NUM_BATCHES_TO_RETAIN, int(data_count[g]))]
            if not _continues_sequence(entry, list(zip(base_seq[first].tolist(),
                                                       last_seq[first].tolist(), strict=True))):
                fast[g] = False

    # Exact rows: every row of a producer that left the common case.
    fast_row = fast[group_of]
    exact_rows = rows[~fast_row]

    # Transactions of the fast producers: a new one at a data row that follows a marker or
    # starts the group (unless one continues), closed by the next marker.
    markers_before = np.cumsum(ctl) - ctl
    if m:
        markers_before = markers_before - markers_before[starts][group_of]
    fd_rows = np.flatnonzero(fast_row & data & txn_flag)
    fm_rows = np.flatnonzero(fast_row & ctl)
    seg_of_data = markers_before[fd_rows]
    key_data = group_of[fd_rows] * (n + 2) + seg_of_data
    key_marker = group_of[fm_rows] * (n + 2) + markers_before[fm_rows]
    key_cont = np.flatnonzero(continues & fast) * (n + 2)
    # key_data is sorted (grouped order): its runs are the transactions' data, found in one
    # pass; only the few run keys, markers and continuations are merged and searched.
    fd_src = rows[fd_rows]
    bounds = (np.flatnonzero(np.r_[True, key_data[1:] != key_data[:-1]]) if len(key_data)
              else _NO_ROWS)
    run_keys = key_data[bounds]
    # Sorted distinct keys (np.unique would also import numpy.ma: ~15 ms of every start-up).
    keys = np.sort(np.concatenate((run_keys, key_marker, key_cont)))
    keys = keys[np.r_[True, keys[1:] != keys[:-1]]] if len(keys) else keys
    t = len(keys)
    txn_group = keys // (n + 2)
    txn_seg = keys % (n + 2)
    txn_cont = (txn_seg == 0) & continues[txn_group]
    txn_batches = np.zeros(t, dtype=np.int64)
    txn_records = np.zeros(t, dtype=np.int64)
    txn_first_ts = np.full(t, np.iinfo(np.int64).max, dtype=np.int64)
    txn_last_ts = np.full(t, np.iinfo(np.int64).min, dtype=np.int64)
    txn_last_data = np.full(t, -1, dtype=np.int64)
    start_pos = np.full(t, -1, dtype=np.int64)
    if len(bounds):
        owners = np.searchsorted(keys, run_keys)
        run_end = np.append(bounds[1:], len(key_data))
        txn_batches[owners] = run_end - bounds
        txn_records[owners] = np.add.reduceat(cols.records_count[fd_src], bounds,
                                              dtype=np.int64)
        ts = cols.max_timestamp[fd_src]
        txn_first_ts[owners] = np.minimum.reduceat(ts, bounds)
        txn_last_ts[owners] = np.maximum.reduceat(ts, bounds)
        txn_last_data[owners] = cols.last_offset[fd_src[run_end - 1]]
        start_pos[owners] = fd_rows[bounds]
    txn_first = np.where(txn_cont, continues_first[txn_group],
                         cols.base_offset[rows[np.maximum(start_pos, 0)]])
    midx = np.searchsorted(keys, key_marker)

    # Events in log order: exact rows, transaction starts, markers, producers first seen.
    new_groups = np.flatnonzero(fast & ~existed)
    starting = np.flatnonzero(~txn_cont)
    parts_keys = [
        exact_rows * 4 + EVENT_EXACT,
        rows[start_pos[starting]] * 4 + EVENT_TXN_START,
        rows[fm_rows] * 4 + EVENT_MARKER,
        first_row[new_groups] * 4 + EVENT_NEW_PRODUCER,
    ]
    parts_refs = [np.zeros(len(exact_rows), dtype=np.int64), starting.astype(np.int64),
                  midx.astype(np.int64), new_groups.astype(np.int64)]
    event_keys = np.concatenate(parts_keys).astype(np.int64)
    event_refs = np.concatenate(parts_refs).astype(np.int64)
    ev_order = np.argsort(event_keys, kind="stable")

    # End states of the fast producers (group index = producer ref).
    last_pos = ends - 1
    if not m:
        last_pos = np.zeros(0, dtype=np.int64)
    last_marker_pos = np.full(groups, -1, dtype=np.int64)
    if len(mpos):
        mend = np.ones(len(mpos), dtype=bool)
        mend[:-1] = group_of[mpos[1:]] != group_of[mpos[:-1]]
        last_marker_pos[group_of[mpos[mend]]] = mpos[mend]
    coord_end = np.where(last_marker_pos >= 0,
                         coord[np.maximum(last_marker_pos, 0)].astype(np.int64), NO_MARKER)
    open_end = np.full(groups, -1, dtype=np.int64)
    last_txn = np.full(groups, -1, dtype=np.int64)
    if t:
        tend = np.ones(t, dtype=bool)
        tend[:-1] = txn_group[1:] != txn_group[:-1]
        last_txn[txn_group[tend]] = np.flatnonzero(tend)
    ends_on_data = data[last_pos] if m else np.zeros(0, dtype=bool)
    still_open = (last_txn >= 0) & ends_on_data
    open_end[still_open] = txn_first[last_txn[still_open]]
    dgroup = group_of[dpos]
    dlo = np.searchsorted(dgroup, np.arange(groups), side="left")
    dhi = np.searchsorted(dgroup, np.arange(groups), side="right")
    batch_rows = [rows[dpos[max(lo, hi - NUM_BATCHES_TO_RETAIN):hi]] if f else _NO_ROWS
                  for f, lo, hi in zip(fast.tolist(), dlo.tolist(), dhi.tolist(), strict=True)]
    return RunPlan(
        event_keys=event_keys[ev_order], event_refs=event_refs[ev_order],
        txn_producer=txn_group.astype(np.int64),
        txn_epoch=epoch[starts][txn_group].astype(np.int64),
        txn_first_offset=txn_first.astype(np.int64), txn_continues=txn_cont,
        txn_batches=txn_batches, txn_records=txn_records, txn_last_data_offset=txn_last_data,
        txn_first_timestamp=txn_first_ts, txn_last_timestamp=txn_last_ts,
        producer_id=gpid[starts].astype(np.int64), producer_epoch=epoch[starts].astype(np.int64),
        producer_last_timestamp=cols.max_timestamp[rows[last_pos]].astype(np.int64)
        if m else _NO_ROWS,
        producer_coordinator_epoch=coord_end.astype(np.int64),
        producer_txn_first_offset=np.where(fast, open_end, -1).astype(np.int64),
        producer_batch_rows=batch_rows, producer_fast=fast,
    )


def _continues_sequence(entry: ProducerStateEntry, first_batches: list[tuple[int, int]]) -> bool:
    """The first data batches ((base, last) sequences of up to ``NUM_BATCHES_TO_RETAIN``)
    continue ``entry``'s sequence and none is a retained duplicate
    (``ProducerAppendInfo#checkSequence`` and ``ProducerStateEntry#findDuplicateBatch``)."""
    last = entry.last_seq
    if last == INT32_MAX or first_batches[0][0] != last + 1:
        return False
    retained = list(entry.batch_metadata)
    if not retained:
        return True
    for k, (bs, ls) in enumerate(first_batches):
        still = retained[max(0, len(retained) - (NUM_BATCHES_TO_RETAIN - k)):]
        if any(b.first_seq == bs and b.last_seq == ls for b in still):
            return False
    return True


def finish_run(plan: RunPlan, cols: RunColumns, psm: ProducerStateManager) -> None:
    """Bring the common-case producers' entries to their end state, as their batches and
    markers would have through ``ProducerStateEntry#update`` one by one."""
    producers = psm.producers
    fast = np.flatnonzero(plan.producer_fast)
    if not len(fast):
        return
    batch_rows = [plan.producer_batch_rows[g] for g in fast.tolist()]
    rows = np.concatenate(batch_rows)
    last = cols.last_offset[rows].tolist()
    delta = (cols.last_offset[rows] - cols.base_offset[rows]).tolist()
    last_seq = cols.last_sequence[rows].tolist()
    max_ts = cols.max_timestamp[rows].tolist()
    no_marker = int(NO_MARKER)
    i = 0
    for pid, epoch, coord, last_ts, first, n in zip(
            plan.producer_id[fast].tolist(), plan.producer_epoch[fast].tolist(),
            plan.producer_coordinator_epoch[fast].tolist(),
            plan.producer_last_timestamp[fast].tolist(),
            plan.producer_txn_first_offset[fast].tolist(), [len(r) for r in batch_rows],
            strict=True):
        entry = producers[pid]
        for j in range(i, i + n):
            entry.add_batch(epoch, last_seq[j], last[j], delta[j], max_ts[j])
        i += n
        entry.maybe_update_producer_epoch(epoch)
        if coord != no_marker:
            entry.coordinator_epoch = coord
        entry.last_timestamp = last_ts
        entry.current_txn_first_offset = None if first < 0 else first
