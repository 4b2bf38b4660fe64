"""What the replay of a partition finds: its transactions, the .txnindex entries Kafka would
have written, the rules batches broke, and the producer state it ends with.

:class:`~kafkatx.analysis.replay.PartitionReplayer` fills a :class:`ReplayResult`; the checks,
the verdicts and the views read it.
"""

from __future__ import annotations

from dataclasses import field
from typing import NamedTuple

from kafkatx.analysis.transaction_table import (
    ABORTED,
    COMMITTED,
    OPEN,
    Transaction,
    TransactionTable,
)
from kafkatx.formats.producer_snapshot import ProducerSnapshotEntry
from kafkatx.lazy_dataclass import dataclass
from kafkatx.semantics.producer_state import ProducerStateManager

__all__ = ["ABORTED", "COMMITTED", "OPEN", "BatchRef", "ExpectedAbortedTxn", "ReplayEvent",
           "ReplayResult", "SnapshotCheckpoint", "Transaction", "TransactionTable"]

class ExpectedAbortedTxn(NamedTuple):
    """The .txnindex entry Kafka writes for an aborted transaction (AbortedTxn).

    ``last_stable_offset`` is what the leader writes, appending the marker on its own. A
    follower appends a whole fetched chunk, updates the producers with all of it, and only then
    computes the LSO of each transaction the chunk completed (``UnifiedLog#append`` ->
    ``ProducerStateManager#lastStableOffset``): where the leader found no other transaction
    open (marker + 1), a transaction another producer began later in the same chunk counts too.
    ``follower_last_stable_offset`` is that value (None: a follower writes the leader's).
    """

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    follower_last_stable_offset: int | None = None


class BatchRef(NamedTuple):
    """Where a batch sits: file and byte position (for ``path:position`` findings)."""

    path: str | None
    position: int
    base_offset: int
    last_offset: int
    producer_id: int
    producer_epoch: int


@dataclass(slots=True, kw_only=True)
class ReplayEvent:
    """Something the replay noticed at a batch: a broken rule, a duplicate, a lone marker."""

    kind: str
    batch: BatchRef
    message: str
    # The last offset of the producer's previous data batch, as its state has it (None: none);
    # the rules for cleaned and retention-cut history look at it.
    previous_offset: int | None = None


@dataclass(slots=True, kw_only=True)
class SnapshotCheckpoint:
    """The state the replay had when its map end offset reached a snapshot's offset."""

    offset: int
    entries: list[ProducerSnapshotEntry]


@dataclass(slots=True, kw_only=True)
class ReplayResult:
    """A partition's log replayed: its transactions (as columns, the open ones as objects),
    events and producer state."""

    transactions: TransactionTable = field(default_factory=TransactionTable)
    expected_aborted: list[ExpectedAbortedTxn] = field(default_factory=list)
    events: list[ReplayEvent] = field(default_factory=list)
    snapshot_states: dict[int, SnapshotCheckpoint] = field(default_factory=dict)
    state: ProducerStateManager = field(default_factory=ProducerStateManager)
    first_offset: int | None = None
    log_end_offset: int = 0
    max_timestamp: int = -1
    min_timestamp: int = -1  # smallest batch max timestamp seen (-1: none)
    batches: int = 0
    data_records: int = 0

    @property
    def open_transactions(self) -> list[Transaction]:
        return [t for t in self.transactions.live if t.outcome == OPEN]
