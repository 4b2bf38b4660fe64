"""Transactions across partitions: the coordinator's records joined with the data partitions.

A transaction lives in three places: its coordinator's ``__transaction_state`` partition, every
data partition it wrote to (its batches, then a COMMIT or ABORT marker), and
``__consumer_offsets`` for its offset commits. This module splits each transactional id's
coordinator history (:mod:`kafkatx.analysis.coordinator`) into transactions and matches them,
partition by partition, with the transactions and markers the replay found in the data
(:mod:`kafkatx.analysis.replay`). Verdicts (hanging, pending, orphan...) are computed here; the
findings built from them live in :mod:`kafkatx.analysis.coordinator_checks`.

How the coordinator's records relate to the data, from Kafka's ``TransactionMetadata``
(``prepareAddPartitions``, ``prepareAbortOrCommit``, ``prepareFenceProducerEpoch``,
``prepareComplete``), ``TransactionCoordinator#endTransaction`` and
``TransactionMarkerChannelManager#addTxnMarkersToSend``:

- the data of a transaction carries the producer id and epoch of its Ongoing record;
- PrepareCommit/PrepareAbort carries the epoch the markers are written with: the same under
  transactions v0/v1, one more under v2 (KIP-890: every EndTxn bumps the epoch, so each
  transaction has its own epoch); an epoch fence (a timeout abort, InitProducerId while Ongoing)
  adds one under v0/v1, and under v2 none since KAFKA-19367 (one before it);
- markers go to every partition of the set, with the Prepare record's producer id and epoch and
  the coordinator epoch; Complete* is written once they all were (partitions whose leader is
  unknown are dropped from the set: the topic is taken as deleted);
- a producer's transactions are sequential (partitions cannot be added before the previous
  transaction is complete), so one producer's markers in one partition come in the order of
  the coordinator's decisions, and an open transaction in a partition is its producer's last.

``__transaction_state`` is compacted: usually only the newest records of an id survive, so old
data transactions often have no coordinator record left; they are shown from the data alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kafkatx.analysis.coordinator import TOPIC as COORDINATOR_TOPIC
from kafkatx.analysis.coordinator import CoordinatorRecord, CoordinatorView
from kafkatx.analysis.findings import Finding
from kafkatx.analysis.partition_count import DEFAULT as DEFAULT_COUNT
from kafkatx.analysis.replay import COMMITTED, OPEN, Transaction
from kafkatx.analysis.timefmt import duration
from kafkatx.analysis.timefmt import iso_ms as iso
from kafkatx.formats.transaction_log import TransactionLogValue, TransactionState
from kafkatx.semantics import transaction_states as rules
from kafkatx.semantics.coordinator_partition import partition_for

SKEW_MS = 2_000  # clock difference tolerated between a coordinator and a partition leader
ALL_EPOCHS = 1 << 16  # above every epoch: a producer id retired altogether
COMMIT = "COMMIT"
ABORT = "ABORT"

# Verdicts on a data transaction
CLOSED = "closed"  # it has its marker
PENDING = "pending"  # open, and the coordinator can still send its marker
HANGING = "hanging"  # open, and no coordinator will ever send its marker
ORPHAN = "orphan"  # open, and no transactional id in the coordinator log owns its producer id
UNKNOWN = "unknown"  # open; the coordinator's evidence does not say

# Transaction outcomes in the timeline contract
OUTCOMES = ("committed", "aborted", "open", "hanging")

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


@dataclass(frozen=True, slots=True, kw_only=True)
class CoordinatorStep:
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


@dataclass(frozen=True, slots=True, kw_only=True)
class Marker:
    """A COMMIT/ABORT marker in a data partition (``txn``: the data transaction it closed)."""

    offset: int
    producer_id: int
    producer_epoch: int
    type: str
    timestamp: int
    coordinator_epoch: int | None
    txn: Transaction | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommit:
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


# ---------------------------------------------------------------------------------------------
# Verdicts on data transactions


def _prepare_of(records: list[CoordinatorRecord]) -> CoordinatorRecord | None:
    """The PrepareCommit/PrepareAbort that the id's newest record (a Complete*) completed,
    when it survives right before it (``TransactionMetadata#prepareComplete`` follows
    ``#prepareAbortOrCommit``; compaction keeps only the newest record of an id, so a surviving
    one is that transaction's)."""
    if len(records) < 2:
        return None
    last, before = records[-1].value, records[-2].value
    if (last is None or before is None or last.transaction_state not in _COMPLETE
            or before.transaction_state not in _PREPARE
            or before.producer_id != last.producer_id):
        return None
    return records[-2]


@dataclass(slots=True, kw_only=True)
class DataVerdict:
    """One data transaction of one partition, joined. ``reason`` says in words why a
    transaction is hanging, pending, orphan or unknown; ``moved_on`` is the coordinator record
    showing it moved on; ``fence`` the record that fenced the epoch before the data was
    written (a zombie write)."""

    topic: str
    partition: int
    txn: Transaction
    status: str
    transactional_id: str | None = None
    coordinator: CoordinatorTransaction | None = None
    marker: Marker | None = None
    reason: str = ""
    moved_on: CoordinatorStep | None = None
    fence: CoordinatorStep | None = None
    certain: bool = True  # False: the coordinator's copy may predate the data
    # the coordinator's surviving records show the transaction it completed last without this
    # partition: the data was never part of a transaction the coordinator knew
    never_added: bool = False
    findings: list[Finding] = field(default_factory=list)
    offset_commits: list[OffsetCommit] = field(default_factory=list)

    @property
    def tp(self) -> TopicPartition:
        return (self.topic, self.partition)

    @property
    def end_offset(self) -> int:
        t = self.txn
        return t.marker_offset if t.marker_offset is not None else t.last_data_offset

    def covers(self, producer_id: int | None, offset: int | None) -> bool:
        return (producer_id == self.txn.producer_id and offset is not None
                and self.txn.first_offset <= offset <= self.end_offset)


@dataclass(slots=True, kw_only=True)
class MissingMarker:
    """A partition of a completed transaction's set with no marker although its log covers the
    time the marker would have been written. ``contradicting``: a marker of the other type found
    there instead."""

    topic: str
    partition: int
    coordinator: CoordinatorTransaction
    log_span: tuple[int, int]
    contradicting: Marker | None = None
    data: Transaction | None = None  # data of the producer in the partition around that time


@dataclass(slots=True, kw_only=True)
class PartitionJoin:
    topic: str
    partition: int
    verdicts: list[DataVerdict] = field(default_factory=list)
    missing: list[MissingMarker] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class PartitionEvidence:
    """What the join needs of one data partition: the replay's transactions, every COMMIT/ABORT
    marker, and the time span its log covers."""

    topic: str
    partition: int
    transactions: list[Transaction]
    markers: list[Marker]
    min_timestamp: int  # -1: no timestamps
    max_timestamp: int
    now_ms: int  # for ages: --now, else the newest timestamp among this log and the coordinator's
    max_timeout_ms: int = 900_000  # find-hanging's --max-transaction-timeout


class TransactionJoin:
    """The coordinator's transactions, indexed for the partition-by-partition join.

    ``view`` None means no ``__transaction_state`` partition was among the evidence: data
    transactions are then shown from the data alone.
    """

    def __init__(self, view: CoordinatorView | None) -> None:
        self.view = view
        self.transactions: list[CoordinatorTransaction] = []
        self.by_producer: dict[int, list[CoordinatorTransaction]] = {}
        self.by_partition: dict[TopicPartition, list[CoordinatorTransaction]] = {}
        self.fences: dict[int, list[tuple[int, CoordinatorStep]]] = {}  # pid -> (epoch, step)
        if view is None:
            return
        for tid in sorted(view.histories):
            h = view.histories[tid]
            txns = split_history(tid, h.records, h.coordinator_partition)
            self.transactions.extend(txns)
            self._index_fences(h.records)
        for c in self.transactions:
            self.by_producer.setdefault(c.producer_id, []).append(c)
            for tp in c.partitions:
                self.by_partition.setdefault(tp, []).append(c)
        for txns in self.by_producer.values():
            txns.sort(key=lambda c: (c.steps[0].timestamp_ms, c.steps[0].offset))
            for i, c in enumerate(txns):
                c.index = i

    # -- ownership and fences ------------------------------------------------------------------

    @property
    def has_coordinator(self) -> bool:
        return self.view is not None and bool(self.view.partitions_present)

    @property
    def complete_coverage(self) -> bool:
        v = self.view
        return v is not None and len(v.partitions_present) >= v.num_partitions_assumed

    def owners(self, producer_id: int) -> list[str]:
        return [] if self.view is None else sorted(self.view.transactional_ids_for(producer_id))

    def owner(self, producer_id: int) -> str | None:
        """The transactional id of a producer id when exactly one owns it."""
        ids = self.owners(producer_id)
        return ids[0] if len(ids) == 1 else None

    def _index_fences(self, records: list[CoordinatorRecord]) -> None:
        """Records after which a producer id and epoch may no longer write: a record of the
        same producer id with a higher epoch, or of another producer id (rotation, a new id
        after expiry), or a tombstone, fence every epoch of the producer ids before them."""
        seen: dict[int, int] = {}  # pid -> highest epoch seen so far
        for rec in records:
            v = rec.value
            for pid in [p for p in seen if v is None or v.producer_id != p]:
                self.fences.setdefault(pid, []).append((ALL_EPOCHS, CoordinatorStep.of(rec)))
                del seen[pid]
            if v is None:
                continue
            pid, epoch = v.producer_id, v.producer_epoch
            if pid in seen and epoch > seen[pid]:
                self.fences.setdefault(pid, []).append((epoch, CoordinatorStep.of(rec)))
            seen[pid] = max(seen.get(pid, epoch), epoch)

    def fence_for(self, producer_id: int, epoch: int) -> CoordinatorStep | None:
        """The first coordinator record after which ``producer_id``/``epoch`` was fenced."""
        best: CoordinatorStep | None = None
        for fenced_above, step in self.fences.get(producer_id, ()):
            if fenced_above > epoch and (best is None or step.timestamp_ms < best.timestamp_ms):
                best = step
        return best

    # -- the join of one partition ---------------------------------------------------------------

    def join_partition(self, ev: PartitionEvidence, *,
                       named: set[tuple[int, int]] | None = None) -> PartitionJoin:
        """Match one partition's transactions and markers with the coordinator's.

        Linear in the partition's transactions and markers plus the coordinator transactions
        that list it (every lookup is by producer id, offset or identity).

        ``named`` (a join without a timeline): only transactions with something to say get a
        verdict -- open ones, those named by a finding ((producer id, first offset)), and those
        of producers the coordinator's records list here or fenced. Every other one would be
        closed with no coordinator transaction, no fence and no finding (``_verdict``).
        """
        tp = (ev.topic, ev.partition)
        st = _PartitionState(ev, self.by_partition.get(tp, []))
        out = PartitionJoin(topic=ev.topic, partition=ev.partition)
        for pid, txns in st.relevant.items():
            self._claim(txns, st.markers.get(pid, []), st)
        transactions = ev.transactions
        if named is not None:
            transactions = [t for t in transactions
                            if t.outcome == OPEN or t.producer_id in st.relevant
                            or t.producer_id in self.fences
                            or (t.producer_id, t.first_offset) in named
                            or (t.marker_offset is not None and t.marker_offset in st.claimed)]
        for txn in sorted(transactions, key=lambda t: t.first_offset):
            verdict = self._verdict(ev, txn, st)
            if verdict.coordinator is not None:
                st.verdict_of.setdefault(id(verdict.coordinator), verdict)
            fence = self.fence_for(txn.producer_id, txn.producer_epoch)
            if fence is not None and txn.last_timestamp > fence.timestamp_ms + SKEW_MS:
                verdict.fence = fence
            st.verdicts.setdefault(txn.producer_id, []).append(verdict)
            out.verdicts.append(verdict)
        for txns in st.relevant.values():
            for c in txns:
                self._check_marker(ev, c, st, out)
        return out

    @staticmethod
    def _claim(txns: list[CoordinatorTransaction], markers: list[Marker],
               st: _PartitionState) -> None:
        """Pair one producer's decisions with its markers here, both in order: a marker older
        than a decision (minus the clock skew) is older than every later one; a marker newer
        than a decision's completion belongs to a later one.

        The completion's time is when its record was appended: its value's last-update time is
        taken before the markers are sent (``TransactionCoordinator#endTransaction`` calls
        ``prepareComplete`` first), and markers retried to an unavailable leader land later."""
        i = 0
        for c in txns:
            if c.decision is None or c.marker_epoch is None:
                continue
            low = c.prepare.timestamp_ms - SKEW_MS if c.prepare is not None else None
            high = (max(c.complete.timestamp_ms, c.complete.appended_ms) + SKEW_MS
                    if c.complete is not None else None)
            while low is not None and i < len(markers) and markers[i].timestamp < low:
                i += 1
            for j in range(i, len(markers)):
                m = markers[j]
                if high is not None and m.timestamp > high:
                    break
                if m.producer_epoch == c.marker_epoch and m.type == c.decision:
                    st.claimed[m.offset] = c
                    st.marker_of[id(c)] = m
                    i = j + 1
                    break

    def _verdict(self, ev: PartitionEvidence, txn: Transaction, st: _PartitionState
                 ) -> DataVerdict:
        pid = txn.producer_id
        v = DataVerdict(topic=ev.topic, partition=ev.partition, txn=txn, status=CLOSED,
                        transactional_id=self.owner(pid))
        mine = st.relevant.get(pid, [])
        done = max((c.index for c in mine if id(c) in st.marker_of), default=-1)
        candidates = [c for c in mine if id(c) not in st.marker_of and c.index > done
                      and (not c.data_epochs() or txn.producer_epoch in c.data_epochs())]
        pending = [c for c in candidates if not c.closed]
        if txn.outcome != OPEN:
            if txn.marker_offset is not None:
                v.coordinator = st.claimed.get(txn.marker_offset)
                v.marker = st.marker_at.get(txn.marker_offset)
            if v.coordinator is None and pending and v.marker is not None:
                # Closed while its coordinator transaction is still undecided here: a marker
                # the coordinator did not send (WriteTxnMarkers from an admin abort).
                v.coordinator = pending[0]
                article = "an" if v.marker.type == ABORT else "a"
                v.reason = (f"closed by {article} {v.marker.type} marker at offset "
                            f"{v.marker.offset} "
                            "that the coordinator did not write for this transaction (still "
                            f"{pending[0].state} there): an admin abort such as "
                            "kafka-transactions.sh abort (WriteTxnMarkers)")
            if v.coordinator is not None:
                v.transactional_id = v.coordinator.transactional_id
            return v
        match = pending[0] if pending else (candidates[0] if candidates else None)
        if match is not None:
            v.coordinator, v.transactional_id = match, match.transactional_id
            self._matched_verdict(ev, v, match)
        elif self.owners(pid):
            self._unmatched_verdict(ev, v)
        elif self.has_coordinator:
            v.status = ORPHAN
            assert self.view is not None
            n, present = self.view.num_partitions_assumed, len(self.view.partitions_present)
            if self.complete_coverage:
                v.reason = (f"no transactional id in the coordinator log (all {n} "
                            f"{COORDINATOR_TOPIC} partitions present) owns producer {pid}: its id "
                            "expired and was compacted away, or the data was never registered "
                            "with a coordinator; no coordinator will ever end it")
            else:
                v.certain = False
                v.reason = (f"no record in the {present} of {n} {COORDINATOR_TOPIC} partitions "
                            f"present names producer {pid}; its transactional id may live in one "
                            f"of the {n - present} partitions that were not copied")
        else:
            v.status = UNKNOWN
            v.reason = f"no {COORDINATOR_TOPIC} partition among the evidence"
        return v

    def _matched_verdict(self, ev: PartitionEvidence, v: DataVerdict,
                         c: CoordinatorTransaction) -> None:
        verb = "committed" if c.decision == COMMIT else "aborted"
        if c.closed:
            assert c.complete is not None
            v.status, v.moved_on = HANGING, c.complete
            steps = [s for s in (c.prepare, c.complete) if s is not None]
            offsets = " and ".join(str(s.offset) for s in steps)
            v.reason = (f"the coordinator {verb} it ("
                        + ", ".join(s.describe(where=False) for s in steps)
                        + f"; {COORDINATOR_TOPIC}-{c.complete.partition} "
                        + ("offsets " if len(steps) > 1 else "offset ") + offsets
                        + f") but no {c.decision} marker reached {tp_name(v.tp)}")
            return
        if c.prepare is not None:
            v.status = PENDING
            verb = "commit" if c.decision == COMMIT else "abort"
            v.reason = (f"the coordinator decided to {verb} it ({c.prepare.describe()}); its "
                        f"{c.decision} marker is not written "
                        "here yet and is sent again by any coordinator that loads the partition")
            return
        later = self._later_step(c)
        if later is not None:
            v.status, v.moved_on = HANGING, later
            v.reason = (f"the coordinator's records of this transaction stop at {c.state} and "
                        f"it moved on ({later.describe()})")
            return
        v.status = PENDING
        v.reason = (f"the coordinator has it {c.state} with {tp_name(v.tp)} since "
                    f"{iso(c.start_timestamp_ms)}: the producer can still commit or abort it, "
                    f"or the coordinator aborts it after its {duration(c.timeout_ms)} timeout")

    def _later_step(self, c: CoordinatorTransaction) -> CoordinatorStep | None:
        """The first record of the id after ``c``'s last one, if any."""
        assert self.view is not None
        h = self.view.histories.get(c.transactional_id)
        if h is None:
            return None
        last = c.last_step
        after = False
        for rec in h.records:
            if after:
                return CoordinatorStep.of(rec)
            after = rec.partition == last.partition and rec.offset == last.offset
        return None

    def _unmatched_verdict(self, ev: PartitionEvidence, v: DataVerdict) -> None:
        """No coordinator transaction of this producer lists the partition with a fitting
        epoch: judge by the id's newest record (``DescribeTransactions`` in KIP-664)."""
        assert self.view is not None
        txn = v.txn
        pid, epoch = txn.producer_id, txn.producer_epoch
        histories = [self.view.histories[t] for t in self.owners(pid)]
        h = next((h for h in histories if h.current is not None
                  and h.current.producer_id == pid), histories[0])
        v.transactional_id = h.transactional_id
        own = [r for r in h.records if r.partition == h.coordinator_partition] or h.records
        last = own[-1]
        step = CoordinatorStep.of(last)
        age = ev.now_ms - txn.last_timestamp  # TransactionsCommand: from the last write
        value = last.value
        timeout = value.transaction_timeout_ms if value is not None else None
        threshold = None if timeout is None else max(timeout, ev.max_timeout_ms)
        older = threshold is not None and age > threshold
        if value is None:
            v.status, v.moved_on = HANGING, step
            v.reason = (f"the coordinator expired transactional id {h.transactional_id} "
                        f"(tombstone at {iso(step.timestamp_ms)}, {step.where})")
        elif value.producer_id != pid:
            v.status, v.moved_on = HANGING, step
            v.reason = (f"transactional id {h.transactional_id} has moved on to producer id "
                        f"{value.producer_id} ({step.describe()})")
        elif value.producer_epoch > epoch:
            v.status, v.moved_on = HANGING, step
            v.reason = (f"the coordinator has moved on to epoch {value.producer_epoch} "
                        f"({step.describe()}) and has no transaction of epoch {epoch} "
                        f"with {tp_name(v.tp)}")
        elif value.producer_epoch < epoch:
            v.status, v.certain = UNKNOWN, False
            v.reason = (f"the data's epoch {epoch} is newer than the coordinator's newest record "
                        f"({step.describe()}): the coordinator log was copied before this data")
        elif value.transaction_state in (_S.ONGOING, *_PREPARE):
            parts = ", ".join(tp_name(p) for p in sorted(value.topic_partitions)) or "none"
            what = (f"the coordinator's current transaction ({step.describe()}, partitions "
                    f"{parts}) does not include {tp_name(v.tp)}")
            if older:
                assert threshold is not None
                v.status, v.moved_on = HANGING, step
                v.reason = (f"{what}, and its last write is {duration(age)} old, more than "
                            f"{duration(threshold)} (the larger of its "
                            f"{duration(value.transaction_timeout_ms)} transaction timeout and "
                            "--max-transaction-timeout-ms)")
            else:
                v.status = PENDING
                v.reason = f"{what} (yet: its last write is only {duration(age)} old)"
        elif step.timestamp_ms + SKEW_MS >= txn.last_timestamp or older:
            v.status, v.moved_on = HANGING, step
            v.certain = step.timestamp_ms + SKEW_MS >= txn.last_timestamp
            v.reason = (f"the coordinator has no transaction open for it ({step.describe()})")
        else:
            v.status, v.certain = UNKNOWN, False
            v.reason = (f"the coordinator's newest record ({step.describe()}) is older than this "
                        "data: the coordinator log may have been copied before it")
        prepared = _prepare_of(own)
        if (v.status == HANGING and prepared is not None and prepared.value is not None
                and prepared.value.producer_id == pid
                and v.tp not in prepared.value.topic_partitions):
            v.never_added = True
            parts = ", ".join(tp_name(p) for p in sorted(prepared.value.topic_partitions))
            v.reason += (f"; the transaction it completed last listed {parts or 'no partition'}"
                         f" ({CoordinatorStep.of(prepared).describe(where=False)}) and no record"
                         f" of the coordinator lists {tp_name(v.tp)}: this data was never added "
                         "to a transaction (a produce request that outlived its transaction, or "
                         "a client that skipped AddPartitionsToTxn; "
                         "transaction.partition.verification.enable refuses such writes), so "
                         "no transaction committed it")

    def _check_marker(self, ev: PartitionEvidence, c: CoordinatorTransaction,
                      st: _PartitionState, out: PartitionJoin) -> None:
        """The entry of partition ``ev`` in ``c``'s story, and ``missing_marker`` candidates."""
        tp = (ev.topic, ev.partition)
        entry = PartitionEntry(topic=ev.topic, partition=ev.partition, status="no_data")
        m = st.marker_of.get(id(c))
        verdict = st.verdict_of.get(id(c))
        if verdict is not None:
            entry.set_data(verdict.txn)
        if m is None and verdict is not None and verdict.marker is not None:
            m = verdict.marker  # written by someone else than the coordinator (an admin abort)
            entry.note = verdict.reason or None
        if m is not None:
            entry.set_marker(m)
            entry.status = "committed" if m.type == COMMIT else "aborted"
        elif verdict is not None and verdict.status == HANGING:
            entry.status, entry.note = "hanging", verdict.reason
        elif c.decision is not None and not c.closed:
            entry.status = "marker_pending"
        elif c.closed:
            assert c.complete is not None
            since = c.prepare.timestamp_ms if c.prepare is not None else c.complete.timestamp_ms
            until = c.complete.timestamp_ms + SKEW_MS
            covered = (0 <= ev.min_timestamp <= since + SKEW_MS
                       and ev.max_timestamp >= c.complete.timestamp_ms)
            if covered:
                entry.status = "no_marker"
                other = next((x for x in st.markers.get(c.producer_id, ())
                              if x.producer_epoch == c.marker_epoch and x.type != c.decision
                              and since - SKEW_MS <= x.timestamp <= until), None)
                near = next((v.txn for v in st.verdicts.get(c.producer_id, ())
                             if v.txn.first_timestamp <= until
                             and (v.txn.marker_timestamp is None
                                  or v.txn.marker_timestamp >= since - SKEW_MS)), None)
                out.missing.append(MissingMarker(
                    topic=ev.topic, partition=ev.partition, coordinator=c,
                    log_span=(ev.min_timestamp, ev.max_timestamp), contradicting=other,
                    data=near))
            else:
                entry.status = "unknown"
                entry.note = (f"no {c.decision} marker found; this copy of {tp_name(tp)} covers "
                              f"{iso(ev.min_timestamp)} to {iso(ev.max_timestamp)} only")
        elif verdict is not None:
            entry.status, entry.note = "open", verdict.reason or None
        c.entries.setdefault(tp, entry)


class _PartitionState:
    """The indexes of one partition's join."""

    def __init__(self, ev: PartitionEvidence, relevant: list[CoordinatorTransaction]) -> None:
        self.markers: dict[int, list[Marker]] = {}  # producer id -> markers by offset
        self.marker_at: dict[int, Marker] = {}
        for m in sorted(ev.markers, key=lambda m: m.offset):
            self.markers.setdefault(m.producer_id, []).append(m)
            self.marker_at[m.offset] = m
        self.relevant: dict[int, list[CoordinatorTransaction]] = {}  # by producer id, in order
        for c in sorted(relevant, key=lambda c: c.index):
            self.relevant.setdefault(c.producer_id, []).append(c)
        self.claimed: dict[int, CoordinatorTransaction] = {}  # marker offset -> transaction
        self.marker_of: dict[int, Marker] = {}  # id(coordinator transaction) -> marker here
        self.verdict_of: dict[int, DataVerdict] = {}  # id(coordinator transaction) -> data
        self.verdicts: dict[int, list[DataVerdict]] = {}  # producer id -> verdicts by offset


def marker_from(txn: Transaction) -> Marker | None:
    """The marker that closed a replayed transaction."""
    if txn.marker_offset is None or txn.marker_epoch is None or txn.marker_timestamp is None:
        return None
    return Marker(offset=txn.marker_offset, producer_id=txn.producer_id,
                  producer_epoch=txn.marker_epoch,
                  type=COMMIT if txn.outcome == COMMITTED else ABORT,
                  timestamp=txn.marker_timestamp, coordinator_epoch=txn.coordinator_epoch,
                  txn=txn)


# ---------------------------------------------------------------------------------------------
# The timeline: one row per transaction


@dataclass(frozen=True, slots=True, kw_only=True)
class Selection:
    """Which transactions a timeline keeps (empty sets keep everything)."""

    transactional_ids: frozenset[str] = frozenset()
    producer_ids: frozenset[int] = frozenset()
    since_ms: int | None = None
    until_ms: int | None = None

    def wants(self, transactional_id: str | None, producer_ids: Iterable[int]) -> bool:
        if self.transactional_ids and transactional_id not in self.transactional_ids:
            return False
        return not self.producer_ids or bool(self.producer_ids & set(producer_ids))

    def overlaps(self, start: int | None, end: int | None) -> bool:
        if self.until_ms is not None and start is not None and start > self.until_ms:
            return False
        return not (self.since_ms is not None and end is not None and end < self.since_ms)


@dataclass(slots=True, kw_only=True)
class Lane:
    """One data partition of the evidence, as the Gantt view draws it. ``lso_timestamp_ms`` is
    the time of the batch at the LSO when an open transaction holds it."""

    topic: str
    partition: int
    copied: bool = True
    broker: str | None = None
    log_start_offset: int | None = None
    log_end_offset: int | None = None
    high_watermark: int | None = None
    last_stable_offset: int | None = None
    lso_source: str | None = None
    lso_timestamp_ms: int | None = None
    first_timestamp_ms: int | None = None
    last_timestamp_ms: int | None = None

    @property
    def tp(self) -> TopicPartition:
        return (self.topic, self.partition)

    def to_dict(self) -> dict[str, object]:
        return {"topic": self.topic, "partition": self.partition, "copied": self.copied,
                "broker": self.broker, "log_start_offset": self.log_start_offset,
                "log_end_offset": self.log_end_offset, "high_watermark": self.high_watermark,
                "last_stable_offset": self.last_stable_offset, "lso_source": self.lso_source,
                "lso_timestamp_ms": self.lso_timestamp_ms,
                "first_timestamp_ms": self.first_timestamp_ms,
                "last_timestamp_ms": self.last_timestamp_ms}


@dataclass(slots=True, kw_only=True)
class TimelineTransaction:
    """One transaction, joined: the ``kafkatx timeline --format jsonl`` object.

    ``producer_epoch`` is the epoch of its data (under transactions v2 its markers carry one
    more); ``missing`` says what evidence was not there.
    """

    transactional_id: str | None
    producer_id: int
    producer_epoch: int | None
    outcome: str
    start_timestamp_ms: int | None
    end_timestamp_ms: int | None
    coordinator_states: list[CoordinatorStep] = field(default_factory=list)
    partitions: list[PartitionEntry] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    coordinator_partition: int | None = None
    marker_producer_epoch: int | None = None
    decision: str | None = None
    transaction_timeout_ms: int | None = None

    @property
    def offset_commits(self) -> list[OffsetCommit]:
        return [c for e in self.partitions for c in e.offset_commits]

    @property
    def anomalies(self) -> list[str]:
        return list(dict.fromkeys(f.kind for f in self.findings))

    def to_dict(self) -> dict[str, object]:
        return {
            "transactional_id": self.transactional_id, "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch, "outcome": self.outcome,
            "start_timestamp_ms": self.start_timestamp_ms,
            "end_timestamp_ms": self.end_timestamp_ms,
            "coordinator_states": [s.to_dict() for s in self.coordinator_states],
            "partitions": [e.to_dict() for e in self.partitions],
            "offset_commits": [c.to_dict() for c in self.offset_commits],
            "findings": [f.to_dict() for f in self.findings],
            "missing": list(self.missing),
            "coordinator_partition": self.coordinator_partition,
            "marker_producer_epoch": self.marker_producer_epoch,
            "decision": self.decision,
            "transaction_timeout_ms": self.transaction_timeout_ms,
        }


@dataclass(slots=True, kw_only=True)
class Timeline:
    """Every transaction kept, the partitions' lanes, and what evidence was missing."""

    transactions: list[TimelineTransaction] = field(default_factory=list)
    lanes: list[Lane] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    now_ms: int = -1
    coordinator_partitions: list[int] = field(default_factory=list)
    num_partitions: int = 50

    def to_dict(self) -> dict[str, object]:
        return {"transactions": [t.to_dict() for t in self.transactions],
                "lanes": [lane.to_dict() for lane in self.lanes], "notes": list(self.notes),
                "now_ms": self.now_ms, "coordinator_partitions": self.coordinator_partitions,
                "num_partitions": self.num_partitions}


_ENTRY_STATUS = {HANGING: "hanging", PENDING: "open", UNKNOWN: "open", CLOSED: ""}


def _entry_of(v: DataVerdict) -> PartitionEntry:
    status = _ENTRY_STATUS.get(v.status)
    if v.status == ORPHAN:
        status = "hanging" if v.certain else "open"
    e = PartitionEntry(topic=v.topic, partition=v.partition, status=status or "open",
                       offset_commits=list(v.offset_commits))
    e.set_data(v.txn)
    if v.marker is not None:
        e.set_marker(v.marker)
    if v.txn.outcome != OPEN:
        e.status = v.txn.outcome
    if v.reason and v.status != CLOSED:
        e.note = v.reason
    return e


class TimelineBuilder:
    """Collects, partition by partition, what the timeline shows; ``build`` makes the rows."""

    def __init__(self, join: TransactionJoin, *, present: set[TopicPartition],
                 selection: Selection = Selection()) -> None:
        self.join = join
        self.present = present
        self.selection = selection
        self.lanes: dict[TopicPartition, Lane] = {}
        self.unmatched: list[DataVerdict] = []
        self.seen: set[TopicPartition] = set()

    def wants_producer(self, producer_id: int, transactional_id: str | None) -> bool:
        tids = self.join.owners(producer_id) or [transactional_id]
        return any(self.selection.wants(t, (producer_id,)) for t in tids)

    def add(self, lane: Lane, pj: PartitionJoin) -> bool:
        """Keep a partition's lane and its unmatched transactions; False for a second copy of a
        partition already added (replicas: the first copy is shown)."""
        if lane.tp in self.seen:
            return False
        self.seen.add(lane.tp)
        self.lanes[lane.tp] = lane
        self.unmatched.extend(v for v in pj.verdicts if v.coordinator is None
                              and self.wants_producer(v.txn.producer_id, v.transactional_id))
        return True

    def build(self, now_ms: int) -> Timeline:
        view = self.join.view
        rows = [self._coordinator_row(c) for c in self.join.transactions
                if self.selection.wants(c.transactional_id, (c.producer_id,))]
        rows += self._data_rows()
        rows = [r for r in rows if self.selection.overlaps(
            r.start_timestamp_ms, r.end_timestamp_ms if r.outcome in ("committed", "aborted")
            else None)]
        rows.sort(key=lambda r: (r.start_timestamp_ms if r.start_timestamp_ms is not None else -1,
                                 r.transactional_id or "", r.producer_id))
        shown = {e.tp for r in rows for e in r.partitions}
        lanes = [self.lanes.get(tp, Lane(topic=tp[0], partition=tp[1], copied=False))
                 for tp in sorted(shown)]
        tl = Timeline(transactions=rows, lanes=lanes, now_ms=now_ms,
                      notes=self._notes(rows))
        if view is not None:
            tl.coordinator_partitions = sorted(view.partitions_present)
            tl.num_partitions = view.num_partitions_assumed
        return tl

    def _coordinator_row(self, c: CoordinatorTransaction) -> TimelineTransaction:
        entries: list[PartitionEntry] = []
        missing: list[str] = []
        for tp in sorted(c.partitions):
            e = c.entries.get(tp)
            if e is None:
                e = PartitionEntry(topic=tp[0], partition=tp[1], status="not_copied")
                missing.append(f"{tp_name(tp)}: not among the evidence")
            entries.append(e)
        if not c.partitions and not c.closed and c.prepare is None:
            missing.append("partitions unknown (only records without a partition set survive)")
        decided = c.closed or (c.decision is not None and bool(entries) and all(
            e.marker_offset is not None for e in entries))
        outcome = ("committed" if c.decision == COMMIT else "aborted") if decided else "open"
        if c.hanging:
            outcome = "hanging"
        start = c.start_timestamp_ms if c.start_timestamp_ms >= 0 else c.steps[0].timestamp_ms
        end = c.complete.timestamp_ms if c.complete is not None else None
        if end is None and outcome in ("committed", "aborted"):
            end = max(e.marker_timestamp_ms or start for e in entries)
        epoch = c.data_epoch
        if epoch is None and c.data_epochs():
            epoch = max(c.data_epochs())
        return TimelineTransaction(
            transactional_id=c.transactional_id, producer_id=c.producer_id,
            producer_epoch=epoch, outcome=outcome, start_timestamp_ms=start,
            end_timestamp_ms=end, coordinator_states=list(c.steps), partitions=entries,
            findings=list(c.findings), missing=missing,
            coordinator_partition=c.coordinator_partition, marker_producer_epoch=c.marker_epoch,
            decision=c.decision, transaction_timeout_ms=c.timeout_ms)

    def _data_rows(self) -> list[TimelineTransaction]:
        """Data transactions no coordinator record matched, grouped across partitions by
        producer id, epoch and overlapping time."""
        groups: dict[tuple[str | None, int, int], list[list[DataVerdict]]] = {}
        # Per group, its last run's end (the latest ``_verdict_end``) and partitions.
        last_run: dict[tuple[str | None, int, int], tuple[int, set[TopicPartition]]] = {}
        for v in sorted(self.unmatched, key=lambda v: (v.txn.first_timestamp, v.topic,
                                                        v.partition, v.txn.first_offset)):
            key = (v.transactional_id, v.txn.producer_id, v.txn.producer_epoch)
            runs = groups.setdefault(key, [])
            last = last_run.get(key)
            tp, end = v.tp, _verdict_end(v)
            if (last is not None and v.txn.first_timestamp <= last[0] + SKEW_MS
                    and tp not in last[1]):
                runs[-1].append(v)
                last[1].add(tp)
                last_run[key] = (max(last[0], end), last[1])
            else:
                runs.append([v])
                last_run[key] = (end, {tp})
        return [self._data_row(run) for runs in groups.values() for run in runs]

    def _data_row(self, run: list[DataVerdict]) -> TimelineTransaction:
        first = run[0]
        # Most runs are one partition's transaction: no sorting or folding for those.
        entries = ([_entry_of(first)] if len(run) == 1
                   else [_entry_of(v) for v in sorted(run, key=lambda v: v.tp)])
        statuses = {e.status for e in entries}
        if "hanging" in statuses:
            outcome = "hanging"
        elif "open" in statuses:
            outcome = "open"
        else:
            outcome = "committed" if statuses == {COMMITTED} else "aborted"
        end = None
        if outcome in ("committed", "aborted"):
            end = max([e.marker_timestamp_ms or 0 for e in entries])
        tid = first.transactional_id
        missing: list[str] = []
        view = self.join.view
        if tid is None:
            if view is None or not view.partitions_present:
                missing.append(f"no {COORDINATOR_TOPIC} partition among the evidence: the "
                               "transactional id and the coordinator's side are unknown")
            elif not self.join.complete_coverage:
                present = ", ".join(str(p) for p in sorted(view.partitions_present))
                missing.append(f"no record in the {COORDINATOR_TOPIC} partitions present "
                               f"({present} of {view.num_partitions_assumed}) names producer "
                               f"{first.txn.producer_id}")
        elif view is not None and tid in view.histories:
            h = view.histories[tid]
            oldest = min(r.timestamp for r in h.records)
            where = f"{COORDINATOR_TOPIC}-{h.coordinator_partition}"
            if oldest > first.txn.first_timestamp:
                missing.append(f"older than the oldest record of {tid} left in {where} "
                               f"({iso(oldest)}): the coordinator's records of it were "
                               "compacted away")
            else:
                missing.append(f"no transaction of {tid} in {where} lists {tp_name(first.tp)} "
                               f"with producer {first.txn.producer_id} epoch "
                               f"{first.txn.producer_epoch} at that time")
        findings = [f for v in run for f in v.findings]
        marker_epoch = None
        for e in entries:
            if e.marker_producer_epoch is not None:
                marker_epoch = e.marker_producer_epoch
                break
        return TimelineTransaction(
            transactional_id=tid, producer_id=first.txn.producer_id,
            producer_epoch=first.txn.producer_epoch, outcome=outcome,
            start_timestamp_ms=min([v.txn.first_timestamp for v in run]), end_timestamp_ms=end,
            partitions=entries, findings=list(dict.fromkeys(findings)) if findings else [],
            missing=missing, coordinator_partition=None if tid is None or view is None
            else view.histories[tid].coordinator_partition if tid in view.histories else None,
            marker_producer_epoch=marker_epoch, decision=None)

    def _notes(self, rows: list[TimelineTransaction]) -> list[str]:
        view = self.join.view
        notes: list[str] = []
        if view is None or not view.partitions_present:
            notes.append(f"no {COORDINATOR_TOPIC} partition among the evidence: transactions are "
                         "shown from the data partitions alone, without transactional ids")
        else:
            present = ", ".join(str(p) for p in sorted(view.partitions_present))
            n = view.num_partitions_assumed
            note = f"coordinator: {COORDINATOR_TOPIC} partitions {present} of {n} present"
            count = view.partition_count
            if count is not None and count.source != DEFAULT_COUNT:
                note += f"; partition count {count.describe}"
            notes.append(note)
            for tid in sorted(self.selection.transactional_ids):
                if tid in view.histories:
                    continue
                p = partition_for(tid, n)
                if p in view.partitions_present:
                    notes.append(f"transactional id {tid}: no record in {COORDINATOR_TOPIC}-{p}, "
                                 "which partitionFor picks (the id expired, or never existed)")
                else:
                    notes.append(f"transactional id {tid}: its coordinator partition "
                                 f"{COORDINATOR_TOPIC}-{p} (partitionFor, of {n}) is not among "
                                 "the evidence; its producer ids, hence its data, are unknown")
        lost = sorted({e.tp for r in rows for e in r.partitions if e.status == "not_copied"})
        if lost:
            notes.append("partitions in transactions' sets but not among the evidence: "
                         + ", ".join(tp_name(tp) for tp in lost))
        return notes


def _verdict_end(v: DataVerdict) -> int:
    """When a data transaction ended: its marker, its last write, or never (open)."""
    t = v.txn
    if t.marker_timestamp is not None:
        return t.marker_timestamp
    return t.last_timestamp if t.outcome != OPEN else 1 << 62
