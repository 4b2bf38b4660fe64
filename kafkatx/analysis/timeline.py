"""The timeline: one row per transaction, across its coordinator, data partitions and offset
commits, as ``kafkatx timeline`` shows it (a view: the join and its verdicts are
:mod:`kafkatx.analysis.transaction_verdicts`'s, the coordinator's transactions
:mod:`kafkatx.analysis.coordinator_transactions`').
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import field

from kafkatx.analysis.coordinator import TOPIC as COORDINATOR_TOPIC
from kafkatx.analysis.coordinator_transactions import (
    COMMIT,
    CoordinatorStep,
    CoordinatorTransaction,
    OffsetCommit,
    PartitionEntry,
    TopicPartition,
    tp_name,
)
from kafkatx.analysis.findings import Finding, rank
from kafkatx.analysis.partition_count import DEFAULT as DEFAULT_COUNT
from kafkatx.analysis.replay_result import COMMITTED, OPEN
from kafkatx.analysis.timefmt import iso_ms as iso
from kafkatx.analysis.transaction_verdicts import (
    CLOSED,
    HANGING,
    ORPHAN,
    PENDING,
    SKEW_MS,
    UNKNOWN,
    DataVerdict,
    PartitionJoin,
    TransactionJoin,
)
from kafkatx.lazy_dataclass import dataclass
from kafkatx.semantics.coordinator_partition import partition_for

# Transaction outcomes in the timeline contract
OUTCOMES = ("committed", "aborted", "open", "hanging", "forgotten")  # forgotten: --after-restart


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
    """Every transaction kept, the partitions' lanes, and what evidence was missing;
    ``replica_findings``: where several brokers' copies of a shown partition disagree (the
    replica comparison's findings, as ``inspect`` reports them: the lanes are the
    authoritative copies')."""

    transactions: list[TimelineTransaction] = field(default_factory=list)
    lanes: list[Lane] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    replica_findings: list[Finding] = field(default_factory=list)
    now_ms: int = -1
    coordinator_partitions: list[int] = field(default_factory=list)
    num_partitions: int = 50

    def to_dict(self) -> dict[str, object]:
        return {"transactions": [t.to_dict() for t in self.transactions],
                "lanes": [lane.to_dict() for lane in self.lanes], "notes": list(self.notes),
                "replica_findings": [f.to_dict() for f in self.replica_findings],
                "now_ms": self.now_ms, "coordinator_partitions": self.coordinator_partitions,
                "num_partitions": self.num_partitions}


def add_replica_findings(tl: Timeline, findings: Iterable[Finding], *, only_shown: bool
                         ) -> None:
    """The replica comparison's findings (``only_shown``: on the partitions ``tl`` shows);
    one about a transaction's records or marker (its producer, an offset in its range) is
    also that transaction's."""
    shown = {lane.tp for lane in tl.lanes}
    for f in findings:
        tp = (f.topic or "", f.partition if f.partition is not None else -1)
        if only_shown and tp not in shown:
            continue
        tl.replica_findings.append(f)
        if f.producer_id is None or f.offset is None:
            continue
        for t in tl.transactions:
            if t.producer_id == f.producer_id and any(
                    e.tp == tp and e.first_offset is not None
                    and e.first_offset <= f.offset <= max(e.last_offset or e.first_offset,
                                                          e.marker_offset or -1)
                    for e in t.partitions):
                t.findings.append(f)
    tl.replica_findings = rank(tl.replica_findings)


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
        elif statuses == {"forgotten"}:  # --after-restart: the load forgets it, no marker
            outcome = "forgotten"
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
