"""A transaction, and the transactions a replay found kept as columns: 94 bytes a settled one.

A partition can hold millions of transactions (a COMMIT after every batch is common), and a
``Transaction`` object with its ints costs ~650 bytes. :class:`TransactionTable` keeps the
settled ones (committed, aborted, forgotten) as rows of a numpy structured array, in blocks of
``BLOCK_ROWS``, and the open ones as live ``Transaction`` objects (the replay still adds to
them). It reads like the list it replaces -- in order, ``len``, indexing, iteration, each row
made a ``Transaction`` when asked -- and offers columns (:meth:`column`, :meth:`rows`) to the
consumers that look at every transaction: counts, spans, the join's filters.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from kafkatx.analysis.view_names import FORGOTTEN
from kafkatx.lazy_dataclass import dataclass

COMMITTED = "committed"
ABORTED = "aborted"
OPEN = "open"


@dataclass(slots=True, kw_only=True)
class Transaction:
    """One transaction of one producer in one partition, as its batches and marker show it."""

    producer_id: int
    producer_epoch: int
    first_offset: int
    last_data_offset: int
    first_timestamp: int
    last_timestamp: int
    batches: int = 0
    records: int = 0
    outcome: str = OPEN
    marker_offset: int | None = None
    marker_timestamp: int | None = None
    marker_epoch: int | None = None
    coordinator_epoch: int | None = None
    last_stable_offset_at_marker: int | None = None

    def close(self, aborted: bool, marker_offset: int, timestamp: int, epoch: int,
              coordinator_epoch: int, lso: int) -> Transaction:
        """This transaction with the outcome its marker gives it."""
        self.outcome = ABORTED if aborted else COMMITTED
        self.marker_offset = marker_offset
        self.marker_timestamp = timestamp
        self.marker_epoch = epoch
        self.coordinator_epoch = coordinator_epoch
        self.last_stable_offset_at_marker = lso
        return self

    def to_dict(self) -> dict[str, object]:
        return {
            "producer_id": self.producer_id, "producer_epoch": self.producer_epoch,
            "first_offset": self.first_offset, "last_offset": self.last_data_offset,
            "first_timestamp": self.first_timestamp, "last_timestamp": self.last_timestamp,
            "batches": self.batches, "records": self.records, "outcome": self.outcome,
            "marker_offset": self.marker_offset, "marker_timestamp": self.marker_timestamp,
            "marker_epoch": self.marker_epoch, "coordinator_epoch": self.coordinator_epoch,
        }


BLOCK_BITS = 16
BLOCK_ROWS = 1 << BLOCK_BITS

OUTCOMES = (OPEN, COMMITTED, ABORTED, FORGOTTEN)
OUTCOME_CODE = {o: i for i, o in enumerate(OUTCOMES)}

# Transaction's fields in order; the nullable ones have a bit in ``nulls``.
FIELDS = ("producer_id", "producer_epoch", "first_offset", "last_data_offset",
          "first_timestamp", "last_timestamp", "batches", "records", "outcome",
          "marker_offset", "marker_timestamp", "marker_epoch", "coordinator_epoch",
          "last_stable_offset_at_marker")
NULLABLE = ("marker_offset", "marker_timestamp", "marker_epoch", "coordinator_epoch",
            "last_stable_offset_at_marker")
NULL_BIT = {name: 1 << i for i, name in enumerate(NULLABLE)}
ALL_NULL = (1 << len(NULLABLE)) - 1
ROW = np.dtype([
    ("producer_id", np.int64), ("producer_epoch", np.int32), ("first_offset", np.int64),
    ("last_data_offset", np.int64), ("first_timestamp", np.int64),
    ("last_timestamp", np.int64), ("batches", np.int64), ("records", np.int64),
    ("outcome", np.int8), ("marker_offset", np.int64), ("marker_timestamp", np.int64),
    ("marker_epoch", np.int32), ("coordinator_epoch", np.int32),
    ("last_stable_offset_at_marker", np.int64), ("nulls", np.uint8)])


def _row_values(t: Transaction) -> tuple[Any, ...]:
    nulls = 0
    values: list[Any] = []
    for name in FIELDS:
        v = getattr(t, name)
        if name == "outcome":
            v = OUTCOME_CODE[v]
        elif v is None:
            nulls |= NULL_BIT[name]
            v = 0
        values.append(v)
    values.append(nulls)
    return tuple(values)


def _transaction(values: Sequence[Any]) -> Transaction:
    (pid, epoch, first, last_data, first_ts, last_ts, batches, records, outcome, marker,
     marker_ts, marker_epoch, coordinator_epoch, lso, nulls) = values
    if nulls == ALL_NULL:
        marker = marker_ts = marker_epoch = coordinator_epoch = lso = None
    elif nulls:
        marker = None if nulls & NULL_BIT["marker_offset"] else marker
        marker_ts = None if nulls & NULL_BIT["marker_timestamp"] else marker_ts
        marker_epoch = None if nulls & NULL_BIT["marker_epoch"] else marker_epoch
        coordinator_epoch = None if nulls & NULL_BIT["coordinator_epoch"] else coordinator_epoch
        lso = None if nulls & NULL_BIT["last_stable_offset_at_marker"] else lso
    return Transaction(producer_id=pid, producer_epoch=epoch, first_offset=first,
                       last_data_offset=last_data, first_timestamp=first_ts,
                       last_timestamp=last_ts, batches=batches, records=records,
                       outcome=OUTCOMES[outcome], marker_offset=marker,
                       marker_timestamp=marker_ts, marker_epoch=marker_epoch,
                       coordinator_epoch=coordinator_epoch,
                       last_stable_offset_at_marker=lso)


class TransactionTable:
    """A partition's transactions in the order the replay met them (list-like; see module)."""

    __slots__ = ("_blocks", "_live", "_n")

    def __init__(self, transactions: Iterable[Transaction] = ()) -> None:
        self._blocks: list[npt.NDArray[np.void]] = []
        self._n = 0
        self._live: dict[int, Transaction] = {}  # row -> the open transaction's object
        for t in transactions:
            self.append(t)
        self.settle()

    # -- growing --------------------------------------------------------------------------------

    def _reserve(self, count: int) -> int:
        """Room for ``count`` more rows; returns the first one's index."""
        first = self._n
        end = first + count
        while len(self._blocks) << BLOCK_BITS < end:
            self._blocks.append(np.zeros(BLOCK_ROWS, dtype=ROW))
        self._n = end
        return first

    def append(self, txn: Transaction) -> int:
        """Add ``txn`` as a live object (the caller may still change it until :meth:`settle`);
        returns its row."""
        row = self._reserve(1)
        self._live[row] = txn
        return row

    def extend_columns(self, count: int, *, nulls: npt.NDArray[np.uint8],
                       **columns: npt.NDArray[Any]) -> int:
        """``count`` rows at once from columns (every field of ``FIELDS``, ``outcome`` as codes
        of ``OUTCOMES``) and their None bits (``NULL_BIT``). Returns the first row."""
        first = self._reserve(count)
        at = first
        while at < first + count:
            start = at & (BLOCK_ROWS - 1)
            take = min(BLOCK_ROWS - start, first + count - at)
            src = slice(at - first, at - first + take)
            dst = self._blocks[at >> BLOCK_BITS][start:start + take]
            for name in FIELDS:
                dst[name] = columns[name][src]
            dst["nulls"] = nulls[src]
            at += take
        return first

    def extend_run(self, started: dict[str, npt.NDArray[Any]], closed_by: npt.NDArray[np.int64],
                   markers: dict[str, npt.NDArray[Any]], aborted: npt.NDArray[np.bool_],
                   keep: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
        """The transactions a run began (``started``: their producer id .. records columns,
        in start order), each closed by the run's marker ``closed_by`` points at (-1: still
        open; ``markers``: the markers' offset, timestamp, epochs and LSO columns, ``aborted``
        their type), the rows ``keep`` says. Returns each one's row (-1: not kept)."""
        has = closed_by >= 0
        by = closed_by[has]
        sel = np.flatnonzero(keep)

        def closed(values: npt.NDArray[Any]) -> npt.NDArray[Any]:
            out = np.zeros(len(closed_by), dtype=values.dtype)
            out[has] = values[by]
            return out[sel]

        outcome = np.full(len(closed_by), OUTCOME_CODE[OPEN], dtype=np.int8)
        outcome[has] = np.where(aborted[by], OUTCOME_CODE[ABORTED], OUTCOME_CODE[COMMITTED])
        first = self.extend_columns(
            len(sel), nulls=np.where(has, 0, ALL_NULL).astype(np.uint8)[sel],
            outcome=outcome[sel], **{k: v[sel] for k, v in started.items()},
            **{k: closed(v) for k, v in markers.items()})
        rows = np.full(len(closed_by), -1, dtype=np.int64)
        rows[sel] = first + np.arange(len(sel))
        return rows

    def make_live(self, row: int, txn: Transaction) -> None:
        """Row ``row`` is ``txn`` from now on (an open transaction the replay goes on with)."""
        self._live[row] = txn

    def settle(self) -> None:
        """Write every live transaction that is no longer open into the columns."""
        done = [row for row, t in self._live.items() if t.outcome != OPEN]
        for row in done:
            self._write(row, self._live.pop(row))

    def _write(self, row: int, txn: Transaction) -> None:
        self._blocks[row >> BLOCK_BITS][row & (BLOCK_ROWS - 1)] = _row_values(txn)

    # -- reading --------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._n

    def __bool__(self) -> bool:
        return self._n > 0

    def _row(self, row: int) -> Transaction:
        live = self._live.get(row)
        if live is not None:
            return live
        return _transaction(self._blocks[row >> BLOCK_BITS][row & (BLOCK_ROWS - 1)].item())

    @overload
    def __getitem__(self, index: int) -> Transaction: ...

    @overload
    def __getitem__(self, index: slice) -> list[Transaction]: ...

    def __getitem__(self, index: int | slice) -> Transaction | list[Transaction]:
        if isinstance(index, slice):
            return [self._row(i) for i in range(*index.indices(self._n))]
        if index < 0:
            index += self._n
        if not 0 <= index < self._n:
            raise IndexError("transaction row out of range")
        return self._row(index)

    def _filled(self) -> Iterator[tuple[int, npt.NDArray[np.void]]]:
        """(first row, the block's rows in use) of each block."""
        for b, block in enumerate(self._blocks):
            base = b << BLOCK_BITS
            if base >= self._n:
                return
            yield base, block[:self._n - base]

    def __iter__(self) -> Iterator[Transaction]:
        live = self._live
        for base, rows in self._filled():
            for i, values in enumerate(rows.tolist()):
                t = live.get(base + i) if live else None
                yield t if t is not None else _transaction(values)

    def rows(self, indexes: Iterable[int]) -> list[Transaction]:
        """The transactions at ``indexes`` (rows made only for them)."""
        return [self._row(int(i)) for i in indexes]

    def column(self, name: str) -> npt.NDArray[Any]:
        """One field over every row (``outcome`` as codes of ``OUTCOMES``; a nullable field's
        None rows hold 0: see :meth:`is_null`); live rows as their objects have it now."""
        out = np.empty(self._n, dtype=ROW[name])
        for base, rows in self._filled():
            out[base:base + len(rows)] = rows[name]
        if self._live and name != "nulls":
            for row, t in self._live.items():
                v = getattr(t, name)
                out[row] = OUTCOME_CODE[v] if name == "outcome" else (0 if v is None else v)
        elif self._live:
            for row, t in self._live.items():
                out[row] = _row_values(t)[-1]
        return out

    def is_null(self, name: str) -> npt.NDArray[np.bool_]:
        """Where a nullable field is None."""
        return (self.column("nulls") & NULL_BIT[name]) != 0

    def outcome_is(self, *outcomes: str) -> npt.NDArray[np.bool_]:
        return np.isin(self.column("outcome"), [OUTCOME_CODE[o] for o in outcomes])

    @property
    def live(self) -> list[Transaction]:
        """The transactions kept as objects (the open ones), in row order."""
        return [self._live[row] for row in sorted(self._live)]

    def live_rows(self) -> dict[int, Transaction]:
        """Row -> object of the transactions kept as objects."""
        return dict(self._live)

    # -- changing -------------------------------------------------------------------------------

    def keep(self, mask: npt.NDArray[np.bool_]) -> None:
        """Keep only the rows where ``mask`` is True (in order)."""
        kept = np.flatnonzero(mask)
        if len(kept) != self._n:
            self._rebuild(kept)

    def sort_by_first_offset(self) -> None:
        """Order the rows by first offset (stable)."""
        order = np.argsort(self.column("first_offset"), kind="stable")
        if not bool((order == np.arange(self._n)).all()):
            self._rebuild(order)

    def _rebuild(self, order: npt.NDArray[np.intp]) -> None:
        """The rows ``order`` names, in that order (the others dropped)."""
        new_row = np.full(self._n, -1, dtype=np.int64)
        new_row[order] = np.arange(len(order))
        live = {int(new_row[row]): t for row, t in self._live.items() if new_row[row] >= 0}
        old_blocks, n = self._blocks, len(order)
        self._blocks, self._n = [], 0
        self._reserve(n)
        for lo in range(0, n, BLOCK_ROWS):
            part = order[lo:lo + BLOCK_ROWS]
            self._blocks[lo >> BLOCK_BITS][:len(part)] = _gather(old_blocks, part)
        self._live = live

    def replace_row(self, row: int, txn: Transaction) -> None:
        """Row ``row`` becomes ``txn`` (live while it is open)."""
        if txn.outcome == OPEN:
            self._live[row] = txn
        else:
            self._live.pop(row, None)
            self._write(row, txn)

    def set_field(self, row: int, name: str, value: Any) -> None:
        """Field ``name`` (not nullable, not outcome) of row ``row`` set to ``value``."""
        live = self._live.get(row)
        if live is not None:
            setattr(live, name, value)
        else:
            self._blocks[row >> BLOCK_BITS][row & (BLOCK_ROWS - 1)][name] = value

    def set_outcome(self, rows: npt.ArrayLike, outcome: str) -> None:
        for row in np.asarray(rows, dtype=np.int64).ravel().tolist():
            t = self._row(row)
            t.outcome = outcome
            self.replace_row(row, t)

    # -- comparing, copying ---------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TransactionTable | list | tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other,
                                                                          strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"TransactionTable({list(self)!r})"

    def copy(self) -> TransactionTable:
        out = TransactionTable()
        out._blocks = [b.copy() for b in self._blocks]
        out._n = self._n
        out._live = dict(self._live)
        return out


class MarkerRows:
    """A table's closed transactions by their marker's offset, for lookups."""

    def __init__(self, table: TransactionTable) -> None:
        have = np.flatnonzero(~table.is_null("marker_offset"))
        offsets = table.column("marker_offset")[have]
        order = np.argsort(offsets, kind="stable")
        self.offsets = offsets[order]
        self.rows = have[order]
        self.producer_ids = table.column("producer_id")[self.rows]

    def last_rows(self, marker_offsets: npt.ArrayLike,
                  producer_ids: npt.ArrayLike | None = None) -> npt.NDArray[np.int64]:
        """For each marker offset (and producer id): the last row whose marker is there (-1:
        none), as a dict built over the rows in order would keep."""
        offsets = np.asarray(marker_offsets, dtype=np.int64)
        pids = None if producer_ids is None else np.asarray(producer_ids, dtype=np.int64)
        lo = np.searchsorted(self.offsets, offsets, side="left")
        hi = np.searchsorted(self.offsets, offsets, side="right")
        out = np.full(len(offsets), -1, dtype=np.int64)
        single = np.flatnonzero(hi - lo == 1)  # the common case, at once
        fits = (np.ones(len(single), dtype=bool) if pids is None
                else self.producer_ids[lo[single]] == pids[single])
        out[single[fits]] = self.rows[lo[single[fits]]]
        for i in np.flatnonzero(hi - lo > 1).tolist():  # offsets that went back
            rows = self.rows[lo[i]:hi[i]]
            if pids is not None:
                rows = rows[self.producer_ids[lo[i]:hi[i]] == pids[i]]
            if len(rows):
                out[i] = int(rows.max())
        return out


def _gather(blocks: list[npt.NDArray[np.void]], rows: npt.NDArray[np.intp]
            ) -> npt.NDArray[np.void]:
    """The rows ``rows`` (indexes over every block) in that order."""
    out = np.empty(len(rows), dtype=ROW)
    which = rows >> BLOCK_BITS
    for b in np.unique(which).tolist():
        sel = which == b
        out[sel] = blocks[b][rows[sel] & (BLOCK_ROWS - 1)]
    return out
