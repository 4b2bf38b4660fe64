"""The coordinator's transactions: a transactional id's ``__transaction_state`` history cut
into transactions (Ongoing..., Prepare*, Complete*, as Kafka's ``TransactionMetadata`` moves an
id through ``prepareAddPartitions``, ``prepareAbortOrCommit`` and ``prepareComplete``), with
the markers and offset commits each one is joined with.

:mod:`kafkatx.analysis.transaction_verdicts` joins them with the data partitions;
:mod:`kafkatx.analysis.timeline` shows them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import field
from typing import TYPE_CHECKING, NamedTuple

from kafkatx.analysis.findings import Finding
from kafkatx.analysis.replay_result import Transaction
from kafkatx.analysis.timefmt import iso_ms as iso
from kafkatx.formats.internal_topics import TRANSACTION_STATE_TOPIC as COORDINATOR_TOPIC
from kafkatx.formats.transaction_state_ids import TransactionState
from kafkatx.lazy_dataclass import dataclass

if TYPE_CHECKING:
    from kafkatx.analysis.coordinator import CoordinatorRecord
    from kafkatx.formats.transaction_log import TransactionLogValue

COMMIT = "COMMIT"
ABORT = "ABORT"


_S = TransactionState
_STATES = {int(state): state for state in _S}  # faster than the enum call, per record
_STATE_NAMES = {int(state): state.kafka_name for state in _S}
_PREPARE = {_S.PREPARE_COMMIT: COMMIT, _S.PREPARE_ABORT: ABORT}
_COMPLETE = {_S.COMPLETE_COMMIT: COMMIT, _S.COMPLETE_ABORT: ABORT}

TopicPartition = tuple[str, int]


def tp_name(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


# ---------------------------------------------------------------------------------------------
# The coordinator's transactions


class CoordinatorStep(NamedTuple):
    """One ``__transaction_state`` record in a transaction's story. ``timestamp_ms`` is the
    value's last-update time (the record's timestamp for a tombstone); ``appended_ms`` the
    record's own timestamp, the coordinator's clock at the append
    (``TransactionStateManager#appendTransactionToLog``)."""

    state: str
    timestamp_ms: int
    offset: int
    partition: int
    producer_id: int | None
    producer_epoch: int | None
    location: str | None = None
    appended_ms: int = -1

    @classmethod
    def of(cls, rec: CoordinatorRecord) -> CoordinatorStep:
        v = rec.value
        ts = rec.timestamp if v is None or v.last_update_timestamp_ms < 0 else (
            v.last_update_timestamp_ms)
        state = "tombstone" if v is None else _STATE_NAMES.get(v.state) or rec.state_name
        return cls(state=state, timestamp_ms=ts, offset=rec.offset,
                   partition=rec.partition, producer_id=None if v is None else v.producer_id,
                   producer_epoch=None if v is None else v.producer_epoch, location=rec.location,
                   appended_ms=rec.timestamp)

    @property
    def where(self) -> str:
        return f"{COORDINATOR_TOPIC}-{self.partition} offset {self.offset}"

    def describe(self, *, where: bool = True) -> str:
        """``PrepareAbort 4003/8 at 2025-...Z in __transaction_state-39 offset 2``."""
        who = "" if self.producer_id is None else f" {self.producer_id}/{self.producer_epoch}"
        text = f"{self.state}{who} at {iso(self.timestamp_ms)}"
        return f"{text} in {self.where}" if where else text

    def to_dict(self) -> dict[str, object]:
        return {"state": self.state, "timestamp_ms": self.timestamp_ms, "offset": self.offset,
                "partition": self.partition, "producer_id": self.producer_id,
                "producer_epoch": self.producer_epoch}


class Marker(NamedTuple):
    """A COMMIT/ABORT marker in a data partition (``txn``: the data transaction it closed)."""

    offset: int
    producer_id: int
    producer_epoch: int
    type: str
    timestamp: int
    coordinator_epoch: int | None
    txn: Transaction | None = None


class OffsetCommit(NamedTuple):
    """One offset committed inside a transaction (``TxnOffsetCommit``), from a transactional
    batch of ``__consumer_offsets``; ``visible`` once a COMMIT marker closed that batch's
    transaction in the same ``__consumer_offsets`` partition."""

    group: str
    topic: str
    partition: int
    offset: int | None  # None: a tombstone
    commit_timestamp_ms: int | None
    record_offset: int
    offsets_partition: int
    visible: bool

    def to_dict(self) -> dict[str, object]:
        return {"group": self.group, "topic": self.topic, "partition": self.partition,
                "offset": self.offset, "commit_timestamp_ms": self.commit_timestamp_ms,
                "record_offset": self.record_offset,
                "consumer_offsets_partition": self.offsets_partition, "visible": self.visible}


@dataclass(slots=True, kw_only=True)
class PartitionEntry:
    """What one partition of a transaction's set shows: its data, its marker, or their absence.

    ``status``: ``committed``/``aborted`` (its marker is there), ``open`` (data, no marker,
    the coordinator can still send it), ``hanging``, ``no_marker`` (the coordinator completed,
    no marker here), ``marker_pending`` (decided, marker not written yet), ``no_data`` (in the
    set, nothing here yet), ``not_copied`` (the partition is not among the evidence),
    ``unknown`` (this copy does not cover the transaction's time).
    """

    topic: str
    partition: int
    status: str
    first_offset: int | None = None
    last_offset: int | None = None
    first_timestamp_ms: int | None = None
    last_timestamp_ms: int | None = None
    marker_offset: int | None = None
    marker_type: str | None = None
    marker_coordinator_epoch: int | None = None
    marker_timestamp_ms: int | None = None
    marker_producer_epoch: int | None = None
    note: str | None = None
    offset_commits: list[OffsetCommit] = field(default_factory=list)

    @property
    def tp(self) -> TopicPartition:
        return (self.topic, self.partition)

    def set_data(self, txn: Transaction) -> None:
        self.first_offset, self.last_offset = txn.first_offset, txn.last_data_offset
        self.first_timestamp_ms, self.last_timestamp_ms = txn.first_timestamp, txn.last_timestamp

    def set_marker(self, m: Marker) -> None:
        self.marker_offset, self.marker_type = m.offset, m.type
        self.marker_coordinator_epoch, self.marker_timestamp_ms = m.coordinator_epoch, m.timestamp
        self.marker_producer_epoch = m.producer_epoch

    def to_dict(self) -> dict[str, object]:
        return {"topic": self.topic, "partition": self.partition,
                "first_offset": self.first_offset, "last_offset": self.last_offset,
                "marker_offset": self.marker_offset, "marker_type": self.marker_type,
                "marker_coordinator_epoch": self.marker_coordinator_epoch,
                "marker_timestamp_ms": self.marker_timestamp_ms,
                "marker_producer_epoch": self.marker_producer_epoch,
                "first_timestamp_ms": self.first_timestamp_ms,
                "last_timestamp_ms": self.last_timestamp_ms, "status": self.status,
                "note": self.note}


@dataclass(slots=True, kw_only=True)
class CoordinatorTransaction:
    """One transaction as the coordinator's records tell it.

    ``data_epoch`` is the Ongoing record's epoch (the data's), ``marker_epoch`` the Prepare
    record's (the markers'); either is None when its record was compacted away. ``index`` orders
    the transactions of one producer id. ``entries`` (per partition of the set) and
    ``findings`` are filled by the join.
    """

    transactional_id: str
    producer_id: int
    coordinator_partition: int
    timeout_ms: int
    tv2: bool
    start_timestamp_ms: int = -1
    data_epoch: int | None = None
    marker_epoch: int | None = None
    decision: str | None = None
    prepare: CoordinatorStep | None = None
    complete: CoordinatorStep | None = None
    partitions: set[TopicPartition] = field(default_factory=set)
    steps: list[CoordinatorStep] = field(default_factory=list)
    index: int = 0
    hanging: bool = False
    entries: dict[TopicPartition, PartitionEntry] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)

    @property
    def closed(self) -> bool:
        return self.complete is not None

    @property
    def state(self) -> str:
        return self.steps[-1].state

    @property
    def last_step(self) -> CoordinatorStep:
        return self.steps[-1]

    def data_epochs(self) -> set[int]:
        """Epochs the transaction's data may carry (empty: unknown)."""
        if self.data_epoch is not None:
            return {self.data_epoch}
        if self.marker_epoch is None:
            return set()
        m = self.marker_epoch
        return {m - 1, m - 2} if self.tv2 else {m, m - 1}

    def describe(self) -> str:
        epoch = "?" if self.data_epoch is None else str(self.data_epoch)
        return f"{self.transactional_id} ({self.producer_id}/{epoch})"


def _new_txn(tid: str, v: TransactionLogValue, home: int
             ) -> CoordinatorTransaction:
    from kafkatx.semantics import transaction_states as rules  # a coordinator's records only

    return CoordinatorTransaction(
        transactional_id=tid, producer_id=v.producer_id, coordinator_partition=home,
        timeout_ms=v.transaction_timeout_ms,
        tv2=rules.supports_epoch_bump(v.client_transaction_version),
        start_timestamp_ms=v.start_timestamp_ms)


def split_history(tid: str, records: Iterable[CoordinatorRecord], home: int
                  ) -> list[CoordinatorTransaction]:
    """A transactional id's records cut into transactions: Ongoing..., Prepare*, Complete*.

    Empty (InitProducerId) and tombstones belong to no transaction. A transaction whose first
    records were compacted away starts at its first surviving Prepare or Complete record (a
    Complete record lists no partitions: those come from Ongoing and Prepare).
    """
    out: list[CoordinatorTransaction] = []
    cur: CoordinatorTransaction | None = None
    for rec in records:
        v = rec.value
        if v is None:
            cur = None
            continue
        state = _STATES.get(v.state)
        step = CoordinatorStep.of(rec)
        if state is _S.ONGOING:
            if (cur is None or cur.closed or cur.prepare is not None
                    or cur.producer_id != v.producer_id
                    or cur.start_timestamp_ms != v.start_timestamp_ms):
                cur = _new_txn(tid, v, home)
                out.append(cur)
            cur.data_epoch = v.producer_epoch
        elif state in _PREPARE:
            decision = _PREPARE[state]
            same = (cur is not None and not cur.closed and cur.producer_id == v.producer_id
                    and (cur.prepare is None or (cur.decision == decision
                                                 and cur.marker_epoch == v.producer_epoch)))
            if not same:
                cur = _new_txn(tid, v, home)
                out.append(cur)
            assert cur is not None
            cur.decision, cur.marker_epoch = decision, v.producer_epoch
            if cur.prepare is None:
                cur.prepare = step
        elif state in _COMPLETE:
            if cur is None or cur.closed:
                cur = _new_txn(tid, v, home)
                if (cur.tv2 and v.producer_epoch == 0 and v.previous_producer_id >= 0
                        and v.previous_producer_id != v.producer_id):
                    cur.producer_id = v.previous_producer_id  # the v2 rotation at Complete
                else:
                    cur.marker_epoch = v.producer_epoch
                out.append(cur)
            cur.decision = cur.decision or _COMPLETE[state]
            cur.complete = step
        elif state is _S.EMPTY:
            cur = None
            continue
        if cur is None:
            continue  # a state that belongs to no transaction (PrepareEpochFence, unknown)
        cur.steps.append(step)
        cur.partitions.update(v.topic_partitions)
        if cur.start_timestamp_ms < 0 <= v.start_timestamp_ms:
            cur.start_timestamp_ms = v.start_timestamp_ms
    return out
