"""Consumer groups beside the partitions they read: committed offsets, lag three ways, and the
transaction that holds a stuck group.

The committed offsets are what the group coordinator loads from ``__consumer_offsets``
(:class:`kafkatx.semantics.group_offsets.GroupOffsetsLoad`, ``GroupMetadataManager``'s rules):
transactional commits count once their COMMIT marker is read; those still pending at the end of
the log belong to transactions that never completed here and are listed apart. Lag is counted
three ways per partition:

- ``lag_offsets``: high watermark minus committed offset, what ``kafka-consumer-groups.sh``
  prints (``ConsumerGroupCommand`` asks ``ListOffsets`` for the latest offset, which for a
  read_uncommitted admin request is the high watermark);
- ``lag_records_read_committed``: the records a read_committed consumer starting at the committed
  offset receives now (aborted data, markers and everything from the LSO on excluded), counted by
  replaying its fetches (:mod:`kafkatx.analysis.consumer_view`);
- ``records_behind_lso``: the data records at or after the committed offset that the LSO holds
  back (they arrive, or are dropped as aborted, only when the holding transaction ends).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import field, replace

from kafkatx.analysis.coordinator import one_copy_each
from kafkatx.analysis.findings import SEVERITY_RANK, Finding
from kafkatx.analysis.partition_entries import iter_partition_entries
from kafkatx.analysis.partition_report import PartitionReport
from kafkatx.errors import FormatError
from kafkatx.formats.consumer_offsets import GroupMetadataValue, UnknownGroupRecordKey
from kafkatx.formats.internal_topics import GROUP_METADATA_TOPIC as TOPIC
from kafkatx.formats.legacy_message import LegacyEntry
from kafkatx.formats.record_batch import ControlType, RecordBatch
from kafkatx.formats.segment import SegmentProblem
from kafkatx.lazy_dataclass import dataclass
from kafkatx.semantics.consumer_groups import ConsumerGroup
from kafkatx.semantics.group_offsets import CommitRecord, GroupOffsetsLoad
from kafkatx.storage.discovery import PartitionDir

# status of a group's position in one partition
CAUGHT_UP = "caught_up"  # nothing left to deliver (lag_offsets may count markers/aborted data)
LAGGING = "lagging"  # records to read below the LSO
STUCK_BEHIND_TRANSACTION = "stuck_behind_transaction"  # at the LSO, an open transaction holds it
OUT_OF_RANGE = "offset_out_of_range"  # below the log start or above the log end
NOT_CAPTURED = "partition_not_captured"  # the partition's log is not in the given paths
# A transactional commit of the group for the partition has no marker: a consumer that fetches
# its committed offsets with require_stable (read_committed Java consumers since 2.5, librdkafka)
# gets UNSTABLE_OFFSET_COMMIT and waits until that transaction completes (KIP-447).
UNSTABLE = "unstable_offset_commit"

HOLDING_KINDS = ("hanging_transaction", "lso_pinned", "open_transaction")


@dataclass(frozen=True, slots=True)
class PendingCommit:
    """A transactional offset commit whose transaction has no marker in ``__consumer_offsets``."""

    group: str
    topic: str
    partition: int
    offset: int
    producer_id: int
    producer_epoch: int
    batch_offset: int
    commit_timestamp: int
    consumer_offsets_partition: int
    transactional_id: str | None = None
    finding: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {"group": self.group, "topic": self.topic, "partition": self.partition,
                "offset": self.offset, "producer_id": self.producer_id,
                "producer_epoch": self.producer_epoch, "batch_offset": self.batch_offset,
                "commit_timestamp": self.commit_timestamp,
                "consumer_offsets_partition": self.consumer_offsets_partition,
                "transactional_id": self.transactional_id, "finding": self.finding}


@dataclass(slots=True)
class LoadedGroups:
    """Every ``__consumer_offsets`` partition loaded; group names map to their partition."""

    committed: dict[tuple[str, str, int], tuple[CommitRecord, int]] = field(default_factory=dict)
    pending: list[PendingCommit] = field(default_factory=list)
    metadata: dict[str, tuple[GroupMetadataValue, int]] = field(default_factory=dict)
    consumer_groups: dict[str, tuple[ConsumerGroup, int]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def group_names(self) -> list[str]:
        names = {g for g, _, _ in self.committed} | set(self.metadata) | set(self.consumer_groups)
        names |= {p.group for p in self.pending}
        return sorted(names)


def load_groups(pdirs: Iterable[PartitionDir]) -> LoadedGroups:
    """Load every ``__consumer_offsets-N`` among ``pdirs`` (one copy per partition)."""
    out = LoadedGroups()
    for pdir in one_copy_each(pdirs, out.problems, topic=TOPIC):
        _load_partition(pdir, out)
    return out


def _load_partition(pdir: PartitionDir, out: LoadedGroups) -> None:
    load = GroupOffsetsLoad()
    epochs: dict[int, int] = {}
    unknown: dict[int, tuple[int, str, int]] = {}  # record type -> (count, path, first offset)
    for path, item in iter_partition_entries(pdir, out.problems):
        if not isinstance(item, SegmentProblem):  # damage: reported by the partition's checks
            _feed(item, load, epochs, path, out.problems, unknown)
    for record_type, (count, path, first) in sorted(unknown.items()):
        out.problems.append(
            f"{path}: offset {first}: {count} record(s) with key type {record_type}, which no "
            "Kafka version writes; ignored, as the group coordinator's load ignores an unknown "
            "record type (a leftover of an aborted upgrade)")
    n = pdir.partition
    for gtp, record in load.offsets.items():
        out.committed[gtp] = (record, n)
    for name, value in load.groups.items():
        out.metadata[name] = (value, n)
    for name, group in load.consumer_groups.groups.items():
        out.consumer_groups[name] = (group, n)
    for pid, commits in sorted(load.pending.items()):
        for (group, topic, partition), record in sorted(commits.items()):
            out.pending.append(PendingCommit(
                group=group, topic=topic, partition=partition, offset=record.value.offset,
                producer_id=pid, producer_epoch=epochs.get(pid, -1),
                batch_offset=record.log_offset if record.log_offset is not None else -1,
                commit_timestamp=record.value.commit_timestamp_ms,
                consumer_offsets_partition=n))


def _feed(entry: RecordBatch | LegacyEntry, load: GroupOffsetsLoad, epochs: dict[int, int],
          path: str, problems: list[str], unknown: dict[int, tuple[int, str, int]]) -> None:
    if isinstance(entry, LegacyEntry):
        messages = entry.inner or (entry.message,)
        for m in messages:
            _record(load, m.offset, -1, False, m.key, m.value, path, problems, unknown)
        return
    h = entry.header
    if h.is_control:
        if entry.control is not None and entry.control.type_id in (ControlType.COMMIT,
                                                                   ControlType.ABORT):
            load.marker(h.producer_id, entry.control.type_id == ControlType.COMMIT)
        return
    if h.is_transactional:
        epochs[h.producer_id] = h.producer_epoch
    for r in entry.records or ():
        _record(load, h.base_offset, h.producer_id, h.is_transactional, r.key, r.value, path,
                problems, unknown, r.offset)


def _record(load: GroupOffsetsLoad, batch_offset: int, pid: int, transactional: bool,
            key: bytes | None, value: bytes | None, path: str, problems: list[str],
            unknown: dict[int, tuple[int, str, int]], offset: int | None = None) -> None:
    at = offset if offset is not None else batch_offset
    try:
        parsed = load.record(batch_offset, pid, transactional, key, value)
    except FormatError as exc:
        problems.append(f"{path}: offset {at}: "
                        f"{exc.message}; record ignored, as the coordinator's load would fail")
        return
    if isinstance(parsed, UnknownGroupRecordKey) and parsed.name is None:
        count, first_path, first = unknown.get(parsed.record_type, (0, path, at))
        unknown[parsed.record_type] = (count + 1, first_path, first)


# ---------------------------------------------------------------------------------------------
# Lag


@dataclass(frozen=True, slots=True)
class PartitionVisibility:
    """Offsets of one partition's data records as a read_committed consumer sees them now."""

    visible: Sequence[int]  # sorted: delivered
    behind_lso: Sequence[int]  # sorted: held back by the LSO

    def visible_from(self, offset: int) -> int:
        return len(self.visible) - bisect.bisect_left(self.visible, offset)

    def behind_lso_from(self, offset: int) -> int:
        return len(self.behind_lso) - bisect.bisect_left(self.behind_lso, offset)


@dataclass(frozen=True, slots=True)
class Holder:
    """The open transaction at the LSO of a partition."""

    producer_id: int
    producer_epoch: int
    first_offset: int
    first_timestamp: int
    transactional_id: str | None
    finding: str | None


# The contract of a group position row (``GroupPartition.to_dict``): field and Arrow type, in
# order; the CSV columns and the Parquet schema are read from here.
GROUP_PARTITION_FIELDS: tuple[tuple[str, str], ...] = (
    ("group", "string"), ("topic", "string"), ("partition", "int32"),
    ("committed_offset", "int64"), ("committed_leader_epoch", "int32"),
    ("commit_timestamp", "int64"), ("metadata", "string"),
    ("consumer_offsets_partition", "int32"), ("status", "string"), ("pending_offset", "int64"),
    ("log_start_offset", "int64"), ("last_stable_offset", "int64"),
    ("high_watermark", "int64"), ("log_end_offset", "int64"), ("lag_offsets", "int64"),
    ("lag_records_read_committed", "int64"), ("records_behind_lso", "int64"),
    ("holding_producer_id", "int64"), ("holding_producer_epoch", "int16"),
    ("holding_first_offset", "int64"), ("holding_transactional_id", "string"),
    ("holding_since", "int64"), ("holding_age_ms", "int64"), ("holding_finding", "string"),
)


@dataclass(slots=True, kw_only=True)
class GroupPartition:
    """One group's committed offset of one partition, and its lag."""

    group: str
    topic: str
    partition: int
    committed_offset: int | None  # None: only a pending transactional commit
    committed_leader_epoch: int | None
    commit_timestamp: int
    metadata: str | None
    consumer_offsets_partition: int
    status: str
    pending_offset: int | None = None  # the offset of a transactional commit with no marker
    log_start_offset: int | None = None
    last_stable_offset: int | None = None
    high_watermark: int | None = None
    log_end_offset: int | None = None
    lag_offsets: int | None = None
    lag_records_read_committed: int | None = None
    records_behind_lso: int | None = None
    holder: Holder | None = None
    holder_age_ms: int | None = None

    def to_dict(self) -> dict[str, object]:
        h = self.holder
        return {
            "group": self.group, "topic": self.topic, "partition": self.partition,
            "committed_offset": self.committed_offset,
            "committed_leader_epoch": self.committed_leader_epoch,
            "commit_timestamp": self.commit_timestamp, "metadata": self.metadata,
            "consumer_offsets_partition": self.consumer_offsets_partition,
            "status": self.status, "pending_offset": self.pending_offset,
            "log_start_offset": self.log_start_offset,
            "last_stable_offset": self.last_stable_offset,
            "high_watermark": self.high_watermark, "log_end_offset": self.log_end_offset,
            "lag_offsets": self.lag_offsets,
            "lag_records_read_committed": self.lag_records_read_committed,
            "records_behind_lso": self.records_behind_lso,
            "holding_producer_id": None if h is None else h.producer_id,
            "holding_producer_epoch": None if h is None else h.producer_epoch,
            "holding_first_offset": None if h is None else h.first_offset,
            "holding_transactional_id": None if h is None else h.transactional_id,
            "holding_since": None if h is None or h.first_timestamp < 0 else h.first_timestamp,
            "holding_age_ms": self.holder_age_ms,
            "holding_finding": None if h is None else h.finding,
        }


@dataclass(slots=True, kw_only=True)
class GroupSummary:
    """One consumer group: its state, members and what it has committed."""

    group: str
    # classic: Stable / Empty (members in the last group metadata; Empty for a group that only
    # commits offsets); consumer (KIP-848): Empty / Assigning / Reconciling / Stable
    state: str
    protocol_type: str | None
    protocol: str | None
    generation: int | None
    members: int
    consumer_offsets_partition: int | None
    partitions: list[GroupPartition] = field(default_factory=list)
    pending: list[PendingCommit] = field(default_factory=list)
    group_type: str | None = None  # Kafka's GroupType: classic, consumer

    @property
    def last_commit_timestamp(self) -> int | None:
        stamps = [p.commit_timestamp for p in self.partitions if p.commit_timestamp >= 0]
        stamps += [p.commit_timestamp for p in self.pending if p.commit_timestamp >= 0]
        return max(stamps) if stamps else None

    def total(self, name: str) -> int:
        return sum(getattr(p, name) or 0 for p in self.partitions)

    @property
    def stuck_partitions(self) -> int:
        return sum(p.status in (STUCK_BEHIND_TRANSACTION, UNSTABLE) for p in self.partitions)

    def summary_dict(self) -> dict[str, object]:
        return {
            "group": self.group, "group_type": self.group_type, "state": self.state,
            "protocol_type": self.protocol_type,
            "protocol": self.protocol, "generation": self.generation, "members": self.members,
            "consumer_offsets_partition": self.consumer_offsets_partition,
            "last_commit_timestamp": self.last_commit_timestamp,
            "lag_offsets": self.total("lag_offsets"),
            "lag_records_read_committed": self.total("lag_records_read_committed"),
            "records_behind_lso": self.total("records_behind_lso"),
            "stuck_partitions": self.stuck_partitions,
            "pending_transactional_commits": len(self.pending),
        }

    def to_dict(self) -> dict[str, object]:
        out = self.summary_dict()
        out["partitions"] = [p.to_dict() for p in self.partitions]
        out["pending_transactional_commits"] = [p.to_dict() for p in self.pending]
        return out


# None: not replayed (the row then has no record counts and a status from offsets alone)
VisibilityOf = Callable[[PartitionReport], PartitionVisibility | None]


def group_report(loaded: LoadedGroups, reports: Sequence[PartitionReport],
                 findings: Sequence[Finding], visibility_of: VisibilityOf, *,
                 now_ms: int | None = None, groups: Sequence[str] = ()) -> list[GroupSummary]:
    """Every group (or those named in ``groups``) with its partitions' positions and lag."""
    by_tp: dict[tuple[str, int], PartitionReport] = {}
    for r in reports:
        by_tp.setdefault((r.topic, r.partition), r)  # copies: the caller passes one of each
    seen: dict[tuple[str, int], PartitionVisibility] = {}
    holders: dict[tuple[str, int], Holder | None] = {}
    wanted = set(groups)
    out = []
    for name in loaded.group_names():
        if wanted and name not in wanted:
            continue
        summary = _summary(name, loaded)
        summary.pending = [_named(p, findings) for p in loaded.pending if p.group == name]
        pending = {(p.topic, p.partition): p for p in summary.pending}
        mine = {(t, p): (record, n) for (g, t, p), (record, n) in loaded.committed.items()
                if g == name}
        for key in sorted(set(mine) | set(pending)):
            topic, partition = key
            report = by_tp.get(key)
            if key in mine:
                record, n = mine[key]
                row = _position(name, topic, partition, record, n, report)
                if report is not None:
                    if key not in seen:
                        seen[key] = visibility_of(report)
                        holders[key] = _holder(report, findings)
                    _lag(row, report, seen[key], holders[key], now_ms)
            else:
                row = GroupPartition(
                    group=name, topic=topic, partition=partition, committed_offset=None,
                    committed_leader_epoch=None, commit_timestamp=-1, metadata=None,
                    consumer_offsets_partition=pending[key].consumer_offsets_partition,
                    status=UNSTABLE)
            if key in pending:
                row.pending_offset = pending[key].offset
                row.status = UNSTABLE
            summary.partitions.append(row)
        out.append(summary)
    return out


def _summary(name: str, loaded: LoadedGroups) -> GroupSummary:
    if name in loaded.consumer_groups:
        group, n = loaded.consumer_groups[name]
        return GroupSummary(group=name, state=group.state, protocol_type="consumer",
                            protocol=group.preferred_server_assignor,
                            generation=group.group_epoch, members=len(group.members),
                            consumer_offsets_partition=n, group_type="consumer")
    if name not in loaded.metadata:
        partitions = {p for (g, _, _), (_, p) in loaded.committed.items() if g == name}
        partitions |= {p.consumer_offsets_partition for p in loaded.pending if p.group == name}
        # Only offset commits: the coordinator's load makes it an Empty classic group
        # (OffsetMetadataManager#replay's getOrMaybeCreateClassicGroup; the Scala loader's
        # emptyGroupOffsets before it), which kafka-consumer-groups.sh describes as Empty.
        return GroupSummary(group=name, state="Empty", protocol_type=None, protocol=None,
                            generation=None, members=0,
                            consumer_offsets_partition=min(partitions) if partitions else None,
                            group_type="classic")
    value, n = loaded.metadata[name]
    return GroupSummary(group=name, state="Stable" if value.members else "Empty",
                        protocol_type=value.protocol_type or None, protocol=value.protocol,
                        generation=value.generation, members=len(value.members),
                        consumer_offsets_partition=n, group_type="classic")


def _position(group: str, topic: str, partition: int, record: CommitRecord, n: int,
              report: PartitionReport | None) -> GroupPartition:
    v = record.value
    return GroupPartition(
        group=group, topic=topic, partition=partition, committed_offset=v.offset,
        committed_leader_epoch=v.leader_epoch, commit_timestamp=v.commit_timestamp_ms,
        metadata=v.metadata, consumer_offsets_partition=n,
        status=NOT_CAPTURED if report is None else LAGGING)


def _lag(row: GroupPartition, report: PartitionReport, vis: PartitionVisibility | None,
         holder: Holder | None, now_ms: int | None) -> None:
    end = report.log_end_offset if report.high_watermark is None else report.high_watermark
    lso = report.last_stable_offset
    committed = row.committed_offset
    assert committed is not None
    row.log_start_offset = report.log_start_offset
    row.last_stable_offset = lso
    row.high_watermark = report.high_watermark
    row.log_end_offset = report.log_end_offset
    # ConsumerGroupCommand#getLag: negative for an offset past the end, as the tool prints it
    row.lag_offsets = end - committed
    if vis is not None:
        row.lag_records_read_committed = vis.visible_from(committed)
        row.records_behind_lso = vis.behind_lso_from(committed)
    if committed < report.log_start_offset or committed > report.log_end_offset:
        row.status = OUT_OF_RANGE
    elif row.lag_records_read_committed is None or row.records_behind_lso is None:
        row.status = CAUGHT_UP if committed >= end else LAGGING
    elif row.lag_records_read_committed > 0:
        row.status = LAGGING
    elif row.records_behind_lso > 0 and holder is not None:
        row.status = STUCK_BEHIND_TRANSACTION
    elif row.records_behind_lso > 0:
        row.status = LAGGING
    else:
        row.status = CAUGHT_UP  # what is left is markers and aborted data, never delivered
    if holder is not None and lso < end:
        row.holder = holder
        reference = now_ms if now_ms is not None else report.max_timestamp
        if reference is not None and holder.first_timestamp >= 0:
            row.holder_age_ms = max(reference - holder.first_timestamp, 0)


def held_by_transaction(report: PartitionReport) -> bool:
    """An open transaction holds the partition's LSO below its high watermark."""
    end = report.log_end_offset if report.high_watermark is None else report.high_watermark
    return report.lso_source == "open_transaction" and report.last_stable_offset < end


ATTENTION = (STUCK_BEHIND_TRANSACTION, UNSTABLE, OUT_OF_RANGE)


def needing_attention(summaries: Sequence[GroupSummary]) -> list[GroupPartition]:
    """The group positions ``inspect`` shows: stuck, unstable or out of range."""
    return [p for s in summaries for p in s.partitions if p.status in ATTENTION]


def _holder(report: PartitionReport, findings: Sequence[Finding]) -> Holder | None:
    if report.lso_source != "open_transaction" or not report.open_transactions:
        return None
    txn = min(report.open_transactions, key=lambda t: t.first_offset)
    finding = _finding_for(findings, report.topic, report.partition, txn.producer_id)
    return Holder(producer_id=txn.producer_id, producer_epoch=txn.producer_epoch,
                  first_offset=txn.first_offset, first_timestamp=txn.first_timestamp,
                  transactional_id=finding.transactional_id if finding else None,
                  finding=finding.kind if finding else None)


def _finding_for(findings: Sequence[Finding], topic: str, partition: int,
                 producer_id: int) -> Finding | None:
    mine = [f for f in findings if f.topic == topic and f.partition == partition
            and f.producer_id == producer_id and f.kind in HOLDING_KINDS]
    if not mine:
        return None
    best = min(mine, key=lambda f: (SEVERITY_RANK[f.level],
                                    HOLDING_KINDS.index(f.kind)))
    if best.transactional_id is None:
        named = next((f for f in mine if f.transactional_id), None)
        if named is not None:
            return replace(best, transactional_id=named.transactional_id)
    return best


def _named(p: PendingCommit, findings: Sequence[Finding]) -> PendingCommit:
    f = _finding_for(findings, TOPIC, p.consumer_offsets_partition, p.producer_id)
    if f is None:
        return p
    return replace(p, transactional_id=f.transactional_id, finding=f.kind)
