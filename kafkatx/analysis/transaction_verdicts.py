"""The transaction join and its verdicts: the coordinator's records joined with the data partitions.

A transaction lives in three places: its coordinator's ``__transaction_state`` partition, every
data partition it wrote to (its batches, then a COMMIT or ABORT marker), and
``__consumer_offsets`` for its offset commits. Each transactional id's
coordinator history, split into transactions (:mod:`kafkatx.analysis.coordinator_transactions`),
is matched partition by partition with the transactions and markers the replay found in the data
(:mod:`kafkatx.analysis.replay`). Verdicts (hanging, pending, orphan...) are decided here; the
findings built from them live in :mod:`kafkatx.analysis.coordinator_checks`, and
:mod:`kafkatx.analysis.timeline` only shows them.

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

from dataclasses import field
from typing import TYPE_CHECKING

import numpy as np

from kafkatx.analysis.coordinator_transactions import (
    _COMPLETE,
    _PREPARE,
    _S,
    ABORT,
    COMMIT,
    CoordinatorStep,
    CoordinatorTransaction,
    Marker,
    OffsetCommit,
    PartitionEntry,
    TopicPartition,
    split_history,
    tp_name,
)
from kafkatx.analysis.findings import Finding
from kafkatx.analysis.replay_result import COMMITTED, OPEN, Transaction
from kafkatx.analysis.timefmt import duration
from kafkatx.analysis.timefmt import iso_ms as iso
from kafkatx.analysis.transaction_table import TransactionTable
from kafkatx.formats.internal_topics import TRANSACTION_STATE_TOPIC as COORDINATOR_TOPIC
from kafkatx.lazy_dataclass import dataclass

if TYPE_CHECKING:
    from kafkatx.analysis.coordinator import CoordinatorRecord, CoordinatorView

SKEW_MS = 2_000  # clock difference tolerated between a coordinator and a partition leader
ALL_EPOCHS = 1 << 16  # above every epoch: a producer id retired altogether

# Verdicts on a data transaction
CLOSED = "closed"  # it has its marker
PENDING = "pending"  # open, and the coordinator can still send its marker
HANGING = "hanging"  # open, and no coordinator will ever send its marker
ORPHAN = "orphan"  # open, and no transactional id in the coordinator log owns its producer id
UNKNOWN = "unknown"  # open; the coordinator's evidence does not say


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
    """A data partition's transactions joined with their coordinator's."""

    topic: str
    partition: int
    verdicts: list[DataVerdict] = field(default_factory=list)
    missing: list[MissingMarker] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class PartitionEvidence:
    """What the join needs of one data partition: the replay's transactions, the COMMIT/ABORT
    markers that closed no data (those that did come from the transactions), and the time
    span its log covers."""

    topic: str
    partition: int
    transactions: TransactionTable
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
        relevant = self.by_partition.get(tp, [])
        transactions = self._joined_rows(ev.transactions, relevant, named)
        markers = {m.offset: m for m in ev.markers}
        for txn in transactions:
            m = marker_from(txn)
            if m is not None:
                markers.setdefault(m.offset, m)
        st = _PartitionState(list(markers.values()), relevant)
        out = PartitionJoin(topic=ev.topic, partition=ev.partition)
        for pid, txns in st.relevant.items():
            self._claim(txns, st.markers.get(pid, []), st)
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

    def _joined_rows(self, table: TransactionTable,
                     relevant: list[CoordinatorTransaction],
                     named: set[tuple[int, int]] | None) -> list[Transaction]:
        """The partition's transactions the join looks at (every one for a timeline), made
        rows only for them: open ones, those of producers the coordinator lists here or
        fenced, and those a finding names. Every other one would be closed with no
        coordinator transaction, no fence and no finding, and its marker pairs with no
        coordinator transaction (only the listed producers' markers are claimed)."""
        if named is None:
            return list(table)
        pids = table.column("producer_id")
        listed = {c.producer_id for c in relevant} | set(self.fences)
        mask = table.outcome_is(OPEN)
        if listed:
            mask |= np.isin(pids, np.fromiter(listed, dtype=np.int64, count=len(listed)))
        if named:
            firsts = table.column("first_offset")
            wanted = np.fromiter((f for _, f in named), dtype=np.int64, count=len(named))
            for row in np.flatnonzero(np.isin(firsts, wanted) & ~mask).tolist():
                mask[row] = (int(pids[row]), int(firsts[row])) in named
        return table.rows(np.flatnonzero(mask))

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

    def __init__(self, markers: list[Marker], relevant: list[CoordinatorTransaction]) -> None:
        self.markers: dict[int, list[Marker]] = {}  # producer id -> markers by offset
        self.marker_at: dict[int, Marker] = {}
        for m in sorted(markers, key=lambda m: m.offset):
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
