"""What a read_committed consumer receives: Kafka's broker fetch bounds and client filtering.

Broker side mirrors ``TransactionIndex#collectAbortedTxns`` and
``LocalLog#collectAbortedTransactions`` (the aborted transactions overlapping a fetch range,
taken from the .txnindex of the segment holding the fetch offset and of the segments after it,
stopping once an entry's stored LSO reaches the upper bound) and ``UnifiedLog#read``
(read_uncommitted reads up to the high watermark, read_committed up to the LSO). Client side
mirrors ``CompletedFetch#nextFetchedRecord`` in Kafka's Java consumer: the aborted transactions
of a fetch response in a queue ordered by first offset, a set of aborted producer ids that an
ABORT marker removes its producer from, control batches never returned. Pure: the offline
replay, the Spark engine and ``kafkatx serve``'s Fetch share it.
"""

from __future__ import annotations

import enum
import heapq
from collections.abc import Iterable, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from kafkatx.lazy_dataclass import dataclass


class IsolationLevel(enum.Enum):
    READ_UNCOMMITTED = "read_uncommitted"
    READ_COMMITTED = "read_committed"


class AbortedTxnLike(Protocol):
    """A .txnindex entry (``AbortedTxn``): what the broker side reads."""

    @property
    def producer_id(self) -> int: ...
    @property
    def first_offset(self) -> int: ...
    @property
    def last_offset(self) -> int: ...
    @property
    def last_stable_offset(self) -> int: ...


@dataclass(frozen=True, slots=True, order=True)
class AbortedTransaction:
    """``FetchResponseData.AbortedTransaction``: what the broker sends with a fetch."""

    first_offset: int
    producer_id: int


def max_fetch_offset(
    isolation: IsolationLevel, high_watermark: int, last_stable_offset: int
) -> int:
    """``UnifiedLog#read``: the exclusive bound of what a consumer may be given."""
    if isolation == IsolationLevel.READ_COMMITTED:
        return last_stable_offset
    return high_watermark


def collect_aborted_txns(
    entries: Iterable[AbortedTxnLike], fetch_offset: int, upper_bound_offset: int
) -> tuple[list[AbortedTxnLike], bool]:
    """``TransactionIndex#collectAbortedTxns`` for one segment: (overlapping entries, complete)."""
    found: list[AbortedTxnLike] = []
    for txn in entries:
        if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
            found.append(txn)
        if txn.last_stable_offset >= upper_bound_offset:
            return found, True
    return found, False


def collect_aborted_entries(
    segments: Sequence[tuple[int, Sequence[AbortedTxnLike]]],
    fetch_offset: int,
    upper_bound_offset: int,
) -> list[AbortedTxnLike]:
    """``LocalLog#collectAbortedTransactions``: the ``.txnindex`` entries overlapping
    [fetch_offset, upper_bound_offset), from the segment holding ``fetch_offset`` on.

    ``segments`` are (base offset, .txnindex entries) in base-offset order (a segment without a
    .txnindex has no entries).
    """
    start = 0
    for i, (base, _) in enumerate(segments):
        if base <= fetch_offset:
            start = i
    out: list[AbortedTxnLike] = []
    for _, entries in segments[start:]:
        found, complete = collect_aborted_txns(entries, fetch_offset, upper_bound_offset)
        out.extend(found)
        if complete:
            break
    return out


def collect_aborted_transactions(
    segments: Sequence[tuple[int, Sequence[AbortedTxnLike]]],
    fetch_offset: int,
    upper_bound_offset: int,
) -> list[AbortedTransaction]:
    """The aborted transactions a fetch returns (``collect_aborted_entries`` as
    ``FetchResponseData.AbortedTransaction``)."""
    return [AbortedTransaction(t.first_offset, t.producer_id)
            for t in collect_aborted_entries(segments, fetch_offset, upper_bound_offset)]


class Decision(enum.Enum):
    DELIVER = "deliver"  # the batch's records (from the fetch position on) reach the user
    ABORTED = "aborted"  # skipped: a transactional batch of an aborted producer
    CONTROL = "control"  # a control batch: consumed, never returned


class ReadCommittedFilter:
    """``CompletedFetch``'s batch decisions for one fetch response, batch by batch in order."""

    def __init__(self, aborted: Iterable[AbortedTransaction], isolation: IsolationLevel) -> None:
        self.isolation = isolation
        self.queue = list(aborted)
        heapq.heapify(self.queue)
        self.aborted_producer_ids: set[int] = set()

    def consume_aborted_up_to(self, offset: int) -> None:
        """Aborted transactions starting at or below ``offset`` enter the aborted set."""
        while self.queue and self.queue[0].first_offset <= offset:
            self.aborted_producer_ids.add(heapq.heappop(self.queue).producer_id)

    def decide(
        self,
        *,
        producer_id: int,
        is_transactional: bool,
        is_control: bool,
        last_offset: int,
        is_abort_marker: bool,
    ) -> Decision:
        """``nextFetchedRecord`` at a new batch. ``is_abort_marker``: a control batch whose
        first record's key type is ABORT (``containsAbortMarker``)."""
        if self.isolation == IsolationLevel.READ_COMMITTED and producer_id >= 0:
            self.consume_aborted_up_to(last_offset)
            if is_abort_marker:
                self.aborted_producer_ids.discard(producer_id)
            elif is_transactional and producer_id in self.aborted_producer_ids:
                return Decision.ABORTED
        return Decision.CONTROL if is_control else Decision.DELIVER


# decide_batches' codes: indexes into DECISIONS
CODE_DELIVER, CODE_ABORTED, CODE_CONTROL = 0, 1, 2
DECISIONS = (Decision.DELIVER, Decision.ABORTED, Decision.CONTROL)


def decide_batches(flt: ReadCommittedFilter, producer_id: npt.NDArray[np.int64],
                   is_transactional: npt.NDArray[np.bool_], is_control: npt.NDArray[np.bool_],
                   last_offset: npt.NDArray[np.int64], is_abort_marker: npt.NDArray[np.bool_]
                   ) -> npt.NDArray[np.int8]:
    """``flt.decide`` for a run of batches in order, as codes (``DECISIONS``), leaving ``flt``
    in the state the batch-by-batch calls would.

    Only a producer in the fetch's aborted transactions (or already in the aborted set) can
    have a batch skipped, so only its batches go through ``decide``, in order; every other
    batch is delivered, or consumed as a control batch. What ``decide`` consumes from the
    queue at a batch depends on the largest last offset passed so far (consuming is
    cumulative), so each of those calls gets that running maximum.
    """
    codes = np.where(is_control, CODE_CONTROL, CODE_DELIVER).astype(np.int8)
    if flt.isolation != IsolationLevel.READ_COMMITTED or not len(codes):
        return codes
    watched = {t.producer_id for t in flt.queue} | flt.aborted_producer_ids
    if not watched:
        return codes
    has_pid = producer_id >= 0
    reached = np.maximum.accumulate(np.where(has_pid, last_offset, np.iinfo(np.int64).min))
    rows = np.flatnonzero(has_pid & np.isin(producer_id, np.array(sorted(watched))))
    for i, pid, txn, ctl, upto, abort in zip(
            rows.tolist(), producer_id[rows].tolist(), is_transactional[rows].tolist(),
            is_control[rows].tolist(), reached[rows].tolist(), is_abort_marker[rows].tolist(),
            strict=True):
        codes[i] = DECISIONS.index(flt.decide(producer_id=pid, is_transactional=txn,
                                              is_control=ctl, last_offset=upto,
                                              is_abort_marker=abort))
    if has_pid.any():
        flt.consume_aborted_up_to(int(reached[-1]))
    return codes
