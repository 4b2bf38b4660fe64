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
from dataclasses import dataclass
from typing import Protocol


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
        self._queue = list(aborted)
        heapq.heapify(self._queue)
        self.aborted_producer_ids: set[int] = set()

    def _consume_aborted_up_to(self, offset: int) -> None:
        while self._queue and self._queue[0].first_offset <= offset:
            self.aborted_producer_ids.add(heapq.heappop(self._queue).producer_id)

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
            self._consume_aborted_up_to(last_offset)
            if is_abort_marker:
                self.aborted_producer_ids.discard(producer_id)
            elif is_transactional and producer_id in self.aborted_producer_ids:
                return Decision.ABORTED
        return Decision.CONTROL if is_control else Decision.DELIVER
