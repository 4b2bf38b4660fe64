"""The transaction coordinator's view: every ``__transaction_state`` partition, replayed offline.

Rebuilds each transactional id's state as ``TransactionStateManager#loadTransactionMetadata``
does when a broker becomes coordinator (every record from the start of the log, last value wins
per transactional id, a tombstone removes the id), but keeps the whole history for forensics and
checks every consecutive pair of values of an id against the coordinator's transition rules
(:mod:`kafkatx.semantics.transaction_states`). Records that do not decode become findings, never
exceptions; the scan goes on past them (Kafka's loader would stop there).

Also: producer id -> transactional ids (the join key for data partitions), ids stored in a
partition ``partitionFor`` does not pick, transactions left in PrepareCommit/PrepareAbort, and
epochs close to exhaustion.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import field

from kafkatx.analysis.findings import INFO, WARNING, Finding, location
from kafkatx.analysis.metadata_settings import metadata_partition_count
from kafkatx.analysis.partition_count import GIVEN, PartitionCount, detect_partition_count
from kafkatx.analysis.partition_entries import iter_partition_entries
from kafkatx.analysis.replica_authority import authoritative_copy
from kafkatx.analysis.timefmt import duration as _duration
from kafkatx.errors import FormatError
from kafkatx.formats import transaction_log
from kafkatx.formats.internal_topics import TRANSACTION_STATE_TOPIC as TOPIC
from kafkatx.formats.legacy_message import LegacyEntry
from kafkatx.formats.record_batch import RecordBatch
from kafkatx.formats.segment import SegmentProblem
from kafkatx.formats.transaction_log import NO_PRODUCER_ID, TransactionLogValue, TransactionState
from kafkatx.lazy_dataclass import dataclass
from kafkatx.semantics import transaction_states as rules
from kafkatx.semantics.coordinator_partition import (
    DEFAULT_NUM_PARTITIONS,
    java_string_hashcode,
    java_utils_abs,
    partition_for,
)
from kafkatx.storage.discovery import Discovery, PartitionDir, discover

EPOCH_RISK_MARGIN = 100  # epoch_exhaustion_risk from Short.MAX_VALUE - 100 on
_PARTITION_COUNT_PROBE = 1000  # partition counts tried when ids sit in unexpected partitions
_PROBE_SAMPLE = 200
_PROBE_MIN_IDS = 8
_PREPARE = (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT)


@dataclass(frozen=True, slots=True, kw_only=True)
class CoordinatorRecord:
    """One ``__transaction_state`` record of a transactional id; ``value`` None is a tombstone.

    ``timestamp`` is the record's (the coordinator's clock at append); ``location`` is
    ``path:position`` of the record (of its batch when the batch is compressed).
    """

    transactional_id: str
    offset: int
    timestamp: int
    partition: int
    value: TransactionLogValue | None
    location: str | None = None

    @property
    def is_tombstone(self) -> bool:
        return self.value is None

    @property
    def state_name(self) -> str:
        return "tombstone" if self.value is None else self.value.state_name

    def to_dict(self) -> dict[str, object]:
        return {"transactional_id": self.transactional_id, "partition": self.partition,
                "offset": self.offset, "timestamp": self.timestamp, "location": self.location,
                "state": self.state_name,
                "value": None if self.value is None else self.value.to_dict()}


@dataclass(slots=True, kw_only=True)
class TransactionalIdHistory:
    """Every record of one transactional id, in log order (partition by partition when the id
    was found in several); ``current`` is what a coordinator would load: the last value, None
    after a tombstone. ``coordinator_partition`` is the partition ``partitionFor`` picks when the
    id was found there, else the first partition it was found in."""

    transactional_id: str
    coordinator_partition: int
    records: list[CoordinatorRecord] = field(default_factory=list)
    current: TransactionLogValue | None = None
    partitions: tuple[int, ...] = ()

    @property
    def last_record(self) -> CoordinatorRecord | None:
        own = [r for r in self.records if r.partition == self.coordinator_partition]
        return own[-1] if own else None

    @property
    def is_expired(self) -> bool:
        last = self.last_record
        return last is not None and last.is_tombstone

    @property
    def producer_ids(self) -> set[int]:
        """Every producer id its values name (current, previous and next)."""
        return {pid for r in self.records for pid in _value_pids(r.value)}

    def to_dict(self) -> dict[str, object]:
        return {"transactional_id": self.transactional_id,
                "coordinator_partition": self.coordinator_partition,
                "partitions": list(self.partitions),
                "state": "expired" if self.current is None else self.current.state_name,
                "current": None if self.current is None else self.current.to_dict(),
                "producer_ids": sorted(self.producer_ids),
                "records": [r.to_dict() for r in self.records]}


@dataclass(slots=True, kw_only=True)
class CoordinatorView:
    """All ``__transaction_state`` partitions found, replayed.

    ``num_partitions_assumed`` is the partition count ``partitionFor`` was computed with, and
    ``partition_count`` how it was chosen (given, or detected: :mod:`partition_count`);
    ``producer_ids`` maps every producer id a value names (``producer_id``, and the v1 tagged
    ``previous_producer_id``/``next_producer_id``) to the transactional ids naming it.
    ``newest_timestamp_ms`` is the newest record timestamp (-1 without records); ``sources`` the
    directory read for each partition; ``problems`` one-line notes (unreadable files, replica
    copies not read).
    """

    histories: dict[str, TransactionalIdHistory] = field(default_factory=dict)
    partitions_present: set[int] = field(default_factory=set)
    num_partitions_assumed: int = DEFAULT_NUM_PARTITIONS
    partition_count: PartitionCount | None = None
    producer_ids: dict[int, set[str]] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    newest_timestamp_ms: int = -1
    sources: dict[int, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def expected_partition(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.num_partitions_assumed)

    def covers(self, transactional_id: str) -> bool:
        """Whether the partition that would hold ``transactional_id`` was among the evidence."""
        return self.expected_partition(transactional_id) in self.partitions_present

    def transactional_ids_for(self, producer_id: int) -> set[str]:
        return set(self.producer_ids.get(producer_id, ()))

    def to_dict(self) -> dict[str, object]:
        return {"num_partitions_assumed": self.num_partitions_assumed,
                "partition_count": (None if self.partition_count is None
                                    else self.partition_count.to_dict()),
                "partitions_present": sorted(self.partitions_present),
                "sources": {str(p): s for p, s in sorted(self.sources.items())},
                "newest_timestamp_ms": self.newest_timestamp_ms,
                "histories": [h.to_dict() for _, h in sorted(self.histories.items())],
                "producer_ids": {str(p): sorted(ids)
                                 for p, ids in sorted(self.producer_ids.items())},
                "findings": [f.to_dict() for f in self.findings],
                "problems": list(self.problems)}


@dataclass(slots=True, kw_only=True)
class PartitionRead:
    """One partition's records in log order, with what did not decode.

    ``damage_seen[i]`` counts the damaged regions and undecodable records met before
    ``records[i]``: two records with different counts may have lost records between them.
    """

    partition: int
    path: str
    records: list[CoordinatorRecord] = field(default_factory=list)
    damage_seen: list[int] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Reading one partition


def read_partition(pdir: PartitionDir, *, include_segment_damage: bool = True) -> PartitionRead:
    """Decode every record of the live segments of a ``__transaction_state-N`` dir, in offset
    order (the records ``TransactionStateManager#loadTransactionMetadata`` reads)."""
    out = PartitionRead(partition=pdir.partition, path=str(pdir.path))
    damage = 0
    unreadable: list[str] = []  # a segment that cannot be read counts as damage before the next
    for path, item in iter_partition_entries(pdir, unreadable):
        if unreadable:
            damage += len(unreadable)
            out.problems.extend(unreadable)
            unreadable.clear()
        if isinstance(item, SegmentProblem):
            damage += 1
            if include_segment_damage:
                out.findings.append(Finding(
                    kind=item.kind, message=item.message, topic=TOPIC,
                    partition=pdir.partition, location=location(path, item.position)))
            continue
        for rec in _entry_records(item, path, out):
            if rec is None:
                damage += 1
                continue
            out.records.append(rec)
            out.damage_seen.append(damage)
    out.problems.extend(unreadable)
    return out


_Raw = tuple[int, int, bytes | None, bytes | None, int | None]  # offset, ts, key, value, position


def _entry_records(entry: RecordBatch | LegacyEntry, path: str, out: PartitionRead
                   ) -> Iterator[CoordinatorRecord | None]:
    """Decoded records of one log entry; None for each record that does not decode."""
    raws: list[_Raw]
    if isinstance(entry, RecordBatch):
        if entry.records is None:  # content undecodable: iter_segment reported it
            return
        if entry.header.is_control:
            out.findings.append(Finding(
                kind="invalid_coordinator_record", topic=TOPIC, partition=out.partition,
                offset=entry.header.base_offset, location=location(path, entry.position),
                severity=WARNING,
                message=f"control batch (producer {entry.header.producer_id}) at offset "
                        f"{entry.header.base_offset}: the coordinator never writes "
                        "transactional data to __transaction_state; skipped"))
            return
        raws = [(r.offset, r.timestamp, r.key, r.value,
                 r.position if r.position is not None else entry.position)
                for r in entry.records]
    else:
        raws = [(m.offset, m.effective_timestamp, m.key, m.value, m.position)
                for m in entry.records]
    for raw in raws:
        yield _decode(raw, path, out)


def _decode(raw: _Raw, path: str, out: PartitionRead) -> CoordinatorRecord | None:
    offset, timestamp, key_bytes, value_bytes, position = raw
    where = location(path, position)

    def bad(message: str, severity: str | None = None) -> None:
        out.findings.append(Finding(kind="invalid_coordinator_record", topic=TOPIC,
                                    partition=out.partition, offset=offset, location=where,
                                    severity=severity, message=message))

    stops = "a coordinator loading this partition stops here (keeping what it loaded before)"
    if key_bytes is None:
        bad(f"record at offset {offset} has no key (TransactionStateManager requires one); "
            f"{stops}")
        return None
    if len(key_bytes) >= 2 and key_bytes[:2] != b"\x00\x00":
        version = int.from_bytes(key_bytes[:2], "big", signed=True)
        bad(f"record at offset {offset} has key version {version}, unknown to Kafka; its "
            "loader skips it (a leftover of an aborted upgrade, or garbage)", WARNING)
        return None
    try:
        key = transaction_log.parse_key(key_bytes, path=path)
    except FormatError as exc:
        bad(f"record at offset {offset}: key does not decode ({_what(exc)}); {stops}")
        return None
    tid = key.transactional_id
    try:
        value = transaction_log.parse_value(value_bytes, path=path)
    except FormatError as exc:
        if value_bytes is not None and len(value_bytes) >= 2 and value_bytes[:2] not in (
                b"\x00\x00", b"\x00\x01"):
            version = int.from_bytes(value_bytes[:2], "big", signed=True)
            bad(f"transactional id {tid}: value version {version} at offset {offset} is unknown "
                "(Kafka 3.x stops loading here; 4.x's TransactionLog#read returns "
                "UnknownValueVersion)")
        else:
            bad(f"transactional id {tid}: value at offset {offset} does not decode "
                f"({_what(exc)}); {stops}")
        return None
    return CoordinatorRecord(transactional_id=tid, offset=offset, timestamp=timestamp,
                             partition=out.partition, value=value, location=where)


def _what(exc: FormatError) -> str:
    return f"{exc.field}: {exc.message}" if exc.field else exc.message


# ---------------------------------------------------------------------------------------------
# The view


def read_coordinator(
    paths: Iterable[str | os.PathLike[str]],
    *,
    num_partitions: int | None = None,
    now_ms: int | None = None,
    include_segment_damage: bool = True,
) -> CoordinatorView:
    """``coordinator_view`` of what ``discover(paths)`` finds."""
    disc = discover(paths)
    return coordinator_view(disc, num_partitions=num_partitions, now_ms=now_ms,
                            include_segment_damage=include_segment_damage,
                            metadata_partitions=None if num_partitions is not None
                            else metadata_partition_count(disc, TOPIC))


def coordinator_view(
    evidence: Discovery | Iterable[PartitionDir],
    *,
    num_partitions: int | None = None,
    now_ms: int | None = None,
    include_segment_damage: bool = True,
    metadata_partitions: int | None = None,
) -> CoordinatorView:
    """Read every live ``__transaction_state`` partition and rebuild the coordinator's state.

    ``num_partitions`` is ``transaction.state.log.num.partitions``; None: detected from the
    evidence (:func:`kafkatx.analysis.partition_count.detect_partition_count`;
    ``metadata_partitions``: the count a KRaft metadata log among it gives). ``now_ms``
    dates ``stuck_prepare`` (default: the newest record timestamp). With
    ``include_segment_damage`` the segment damage met (CRC mismatches, truncation...) is in the
    findings too; leave it out when another check reports those files already.
    """
    if num_partitions is not None and num_partitions < 1:
        raise ValueError(f"num_partitions must be >= 1, not {num_partitions}")
    pdirs = evidence.all_partitions() if isinstance(evidence, Discovery) else tuple(evidence)
    problems: list[str] = []
    reads = [read_partition(p, include_segment_damage=include_segment_damage)
             for p in one_copy_each(pdirs, problems)]
    count = detect_partition_count(
        (pr.partition for pr in reads),
        ((r.transactional_id, pr.partition) for pr in reads for r in pr.records),
        given=num_partitions, metadata=metadata_partitions)
    view = CoordinatorView(num_partitions_assumed=count.count, partition_count=count,
                           problems=problems)
    for pr in reads:
        view.partitions_present.add(pr.partition)
        view.sources[pr.partition] = pr.path
        view.findings.extend(pr.findings)
        view.problems.extend(pr.problems)
        for rec in pr.records:
            if rec.timestamp > view.newest_timestamp_ms:
                view.newest_timestamp_ms = rec.timestamp
            for pid in _value_pids(rec.value):
                view.producer_ids.setdefault(pid, set()).add(rec.transactional_id)
    _build_histories(view, reads)
    for pr in reads:
        view.findings.extend(_transition_findings(pr))
    view.findings.extend(_placement_findings(view, reads))
    reference = now_ms if now_ms is not None else view.newest_timestamp_ms
    for tid in sorted(view.histories):
        view.findings.extend(_state_findings(view.histories[tid], reference, now_ms is not None))
    return view


MAX_COPY_NOTES = 3  # partitions with copies named one by one; more are summed up in one line


def one_copy_each(pdirs: Iterable[PartitionDir], problems: list[str], topic: str = TOPIC
                  ) -> list[PartitionDir]:
    """One directory per partition number of ``topic``: copies of several brokers are replicas
    of the same log; the authoritative one is read, the leader's as a new coordinator loads it
    (:func:`~kafkatx.analysis.replica_authority.authoritative_copy`; the others are named in
    ``problems``)."""
    copies: dict[int, list[PartitionDir]] = {}
    for p in pdirs:
        if p.topic == topic and p.is_live:
            copies.setdefault(p.partition, []).append(p)
    chosen = []
    notes = []
    for partition, dirs in sorted(copies.items()):
        best = authoritative_copy(dirs, problems)
        chosen.append(best)
        others = [str(d.path) for d in dirs if d is not best]
        if others:
            notes.append(f"{topic}-{partition}: {len(dirs)} copies (replicas); read "
                         f"{best.path}, the newest leader epoch's (then the longest, the "
                         f"highest HW); not read: {', '.join(others)}")
    if len(notes) > MAX_COPY_NOTES:  # several brokers' log dirs: the normal case, said once
        problems.append(f"{topic}: {len(notes)} partitions have copies of several brokers "
                        "(replicas); the copy of the newest leader epoch of each was read "
                        "(inspect's replicas table compares the copies)")
    else:
        problems.extend(notes)
    return chosen


def _value_pids(value: TransactionLogValue | None) -> Iterator[int]:
    if value is None:
        return
    yield value.producer_id
    for pid in (value.previous_producer_id, value.next_producer_id):
        if pid != NO_PRODUCER_ID and pid >= 0:
            yield pid


def _build_histories(view: CoordinatorView, reads: list[PartitionRead]) -> None:
    by_id: dict[str, dict[int, list[CoordinatorRecord]]] = {}
    for pr in reads:
        for rec in pr.records:
            by_id.setdefault(rec.transactional_id, {}).setdefault(pr.partition, []).append(rec)
    for tid, per_partition in by_id.items():
        expected = partition_for(tid, view.num_partitions_assumed)
        home = expected if expected in per_partition else min(per_partition)
        own = per_partition[home]
        view.histories[tid] = TransactionalIdHistory(
            transactional_id=tid, coordinator_partition=home,
            records=[r for p in sorted(per_partition) for r in per_partition[p]],
            current=own[-1].value, partitions=tuple(sorted(per_partition)))


# ---------------------------------------------------------------------------------------------
# Findings


def _record_finding(kind: str, rec: CoordinatorRecord, message: str,
                    severity: str | None = None, remediation: str | None = None) -> Finding:
    v = rec.value
    return Finding(kind=kind, message=message, severity=severity, topic=TOPIC,
                   partition=rec.partition, producer_id=None if v is None else v.producer_id,
                   producer_epoch=None if v is None else v.producer_epoch,
                   transactional_id=rec.transactional_id, offset=rec.offset,
                   location=rec.location, remediation=remediation)


def _transition_findings(pr: PartitionRead) -> Iterator[Finding]:
    """Each record checked on its own, then against the previous record of the same id."""
    last: dict[str, tuple[CoordinatorRecord, int]] = {}
    for rec, damage in zip(pr.records, pr.damage_seen, strict=True):
        tid = rec.transactional_id
        head = f"transactional id {tid}"
        if rec.value is not None:
            for p in rules.check_value(rec.value):
                yield _record_finding("invalid_coordinator_record", rec,
                                      f"{head}: {p.message} (offset {rec.offset})", p.severity)
        before = last.get(tid)
        last[tid] = (rec, damage)
        if before is None:
            continue  # the first record kept: what came before it was compacted away
        prev, prev_damage = before
        if prev.value is None and rec.value is None:
            continue
        if rec.value is None:
            assert prev.value is not None
            problems = rules.check_expiration(prev.value)
        elif prev.value is None:
            problems = rules.check_recreation(rec.value)
        else:
            problems = rules.check_transition(prev.value, rec.value)
        for p in problems:
            message = (f"{head}: {p.message} (offset {prev.offset} {rules.describe(prev.value)}"
                       f" -> offset {rec.offset} {rules.describe(rec.value)})")
            severity = p.severity
            if damage != prev_damage:
                severity = WARNING
                message += ("; damaged or undecodable data lies between these records, so a "
                            "record in between may be lost")
            yield _record_finding("invalid_state_transition", rec, message, severity)


def _placement_findings(view: CoordinatorView, reads: list[PartitionRead]) -> Iterator[Finding]:
    """``wrong_coordinator_partition``: an id stored where ``partitionFor`` would not look."""
    n = view.num_partitions_assumed
    misplaced: list[tuple[CoordinatorRecord, int]] = []
    for pr in reads:
        seen: set[str] = set()
        for rec in pr.records:
            if rec.transactional_id in seen:
                continue
            seen.add(rec.transactional_id)
            expected = partition_for(rec.transactional_id, n)
            if expected != pr.partition:
                misplaced.append((rec, expected))
    if not misplaced:
        return
    hint = _partition_count_hint(reads, n)
    count = view.partition_count
    given = count is None or count.source == GIVEN
    for rec, expected in misplaced:
        tid = rec.transactional_id
        where = f"{TOPIC}-{rec.partition}"
        if not given:
            assert count is not None
            cause = (f"no partition count places every id found; {count.describe} was used: "
                     "this id's records are misplaced (a directory renamed or copied to the "
                     "wrong place?), and no coordinator would look for it here")
        elif rec.partition >= n:
            cause = (f"partition {rec.partition} exists, so {TOPIC} has more than {n} partitions "
                     "(give the real count with --transaction-state-partitions)")
        else:
            cause = (f"either {TOPIC} has another partition count than {n} "
                     "(transaction.state.log.num.partitions; give the real count with "
                     "--transaction-state-partitions) or the data is misplaced, and no "
                     "coordinator would look for this id here")
        yield _record_finding(
            "wrong_coordinator_partition", rec,
            f"transactional id {tid} is in {where}, but partitionFor picks partition {expected} "
            f"of {n} (Java hashCode {java_string_hashcode(tid)}): {cause}"
            f"{hint if given else ''}")


def _partition_count_hint(reads: list[PartitionRead], n: int) -> str:
    """The partition counts every (id, partition) pair found agrees with, if few."""
    pairs = [(java_utils_abs(java_string_hashcode(tid)), pr.partition)
             for pr in reads for tid in dict.fromkeys(r.transactional_id for r in pr.records)]
    if len(pairs) < _PROBE_MIN_IDS:
        return ""  # a few ids agree with too many counts to tell anything
    pairs = pairs[:_PROBE_SAMPLE]
    low = max(p for _, p in pairs) + 1
    fits = [m for m in range(low, _PARTITION_COUNT_PROBE + 1)
            if all(h % m == p for h, p in pairs)]
    if not fits or n in fits:
        return ""
    shown = ", ".join(str(m) for m in fits[:5]) + (", ..." if len(fits) > 5 else "")
    return f"; every id found agrees with a partition count of {shown}"


def _state_findings(history: TransactionalIdHistory, reference_ms: int, given_now: bool
                    ) -> Iterator[Finding]:
    last = history.last_record
    value = history.current
    if last is None or value is None:
        return
    tid = history.transactional_id
    state = value.transaction_state
    if state in _PREPARE:
        complete = ("CompleteCommit" if state is TransactionState.PREPARE_COMMIT
                    else "CompleteAbort")
        marker = "COMMIT" if state is TransactionState.PREPARE_COMMIT else "ABORT"
        parts = ", ".join(f"{t}-{p}" for t, p in value.topic_partitions) or "no partitions"
        age = ""
        if reference_ms >= 0 and last.timestamp >= 0:
            against = "now" if given_now else "the newest record in the coordinator log"
            age = f", {_duration(reference_ms - last.timestamp)} before {against}"
        yield _record_finding(
            "stuck_prepare", last,
            f"transactional id {tid}: last state is {value.state_name} "
            f"({value.producer_id}/{value.producer_epoch}) at offset {last.offset}{age}; the "
            f"coordinator never wrote {complete}, so the {marker} markers may be missing "
            f"from {parts}",
            remediation=f"a coordinator that loads {TOPIC}-{last.partition} completes it "
                        "(TransactionStateManager resends the markers of PrepareCommit/"
                        "PrepareAbort on load): check the data partitions for the markers, "
                        f"then move leadership of {TOPIC}-{last.partition} if they are missing")
    epoch = value.producer_epoch
    if epoch >= rules.SHORT_MAX - EPOCH_RISK_MARGIN:
        if rules.is_epoch_exhausted(epoch):
            how = f"at epoch {epoch}, exhausted (Kafka's limit is {rules.EPOCH_EXHAUSTED})"
        else:
            how = (f"at epoch {epoch}, {rules.EPOCH_EXHAUSTED - epoch} below "
                   f"{rules.EPOCH_EXHAUSTED} where Kafka treats the epoch as exhausted")
        v2 = rules.supports_epoch_bump(value.client_transaction_version)
        then = ("under transactions v2 (one epoch per transaction) the coordinator moves the id "
                "to a new producer id at epoch 0 at the next EndTxn" if v2 else
                "under transactions v0/v1 the next InitProducerId moves the id to a new producer "
                "id; a fence at Short.MAX_VALUE can no longer bump the epoch")
        yield _record_finding(
            "epoch_exhaustion_risk", last,
            f"transactional id {tid}: producer {value.producer_id} is {how}; {then}",
            severity=INFO if v2 else None)
