"""Several brokers' copies of one partition, compared as Kafka's replication would reconcile them.

The authoritative copy is the one a follower would truncate against: the newest leader epoch
(the last leader's log; with equal epochs, the longest). Every other copy is truncated as its
fetcher would (:func:`kafkatx.semantics.leader_epochs.truncation_offset`, KIP-101/KIP-279);
what lies above that point diverges. Divergent records below the copy's own high watermark were
acknowledged: a leader without them lost committed data (an unclean leader election). Below
the truncation point the copies must hold the same batches; markers present on one copy and not
on another leave a transaction open on one side only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field

import numpy as np

from kafkatx.analysis.findings import ERROR, INFO, WARNING, Finding
from kafkatx.analysis.partition_report import PartitionReport
from kafkatx.analysis.replica_authority import ReplicaSet, position, replica_sets
from kafkatx.errors import UnreadableFileError
from kafkatx.formats.batch_layout import TRANSACTIONAL_FLAG
from kafkatx.formats.batch_values import ControlType
from kafkatx.lazy_dataclass import dataclass
from kafkatx.semantics.leader_epochs import truncation_offset
from kafkatx.storage.discovery import Discovery, PartitionDir
from kafkatx.storage.readers import scan_segment_file

AUTHORITATIVE = "authoritative"
IN_SYNC = "in_sync"
LAGGING = "lagging"
DIVERGED = "diverged"


@dataclass(slots=True)
class _Batches:
    """One copy's batch-header columns the replica comparison reads."""

    base: np.ndarray
    last: np.ndarray
    epoch: np.ndarray
    crc: np.ndarray
    pid: np.ndarray
    control: np.ndarray  # ControlType id, -1 for data
    txn: np.ndarray  # the transactional attribute

    @classmethod
    def of(cls, pdir: PartitionDir, problems: list[str]) -> _Batches:
        cols: dict[str, list[np.ndarray]] = {k: [] for k in
                                             ("base", "last", "epoch", "crc", "pid", "control",
                                              "txn")}
        for seg in pdir.segments:
            if seg.log is None:
                continue
            try:
                scan = scan_segment_file(seg.log)
            except UnreadableFileError as exc:
                problems.append(str(exc))
                continue
            h = scan.headers
            cols["base"].append(h.base_offset)
            cols["last"].append(h.last_offset)
            cols["epoch"].append(h.partition_leader_epoch)
            cols["crc"].append(h.crc)
            cols["pid"].append(h.producer_id)
            cols["control"].append(scan.control_type)
            cols["txn"].append((h.attributes & TRANSACTIONAL_FLAG) != 0)
        joined = {k: np.concatenate(v) if v else np.zeros(0, np.int64) for k, v in cols.items()}
        return cls(**joined)


@dataclass(slots=True, kw_only=True)
class ReplicaCopy:
    """One broker's copy of the partition, compared with the authoritative one."""

    broker: str
    path: str
    log_start_offset: int
    log_end_offset: int
    high_watermark: int | None
    last_stable_offset: int
    latest_leader_epoch: int
    role: str = AUTHORITATIVE
    truncation_offset: int | None = None  # where it truncates to when it follows
    divergent_records: int = 0  # offsets above the truncation point
    acknowledged_divergent: int = 0  # of those, below its own high watermark
    open_transactions: list[tuple[int, int]] = field(default_factory=list)  # (pid, first)

    def to_dict(self) -> dict[str, object]:
        return {
            "broker": self.broker, "path": self.path, "log_start_offset": self.log_start_offset,
            "log_end_offset": self.log_end_offset, "high_watermark": self.high_watermark,
            "last_stable_offset": self.last_stable_offset,
            "latest_leader_epoch": self.latest_leader_epoch, "role": self.role,
            "truncation_offset": self.truncation_offset,
            "divergent_records": self.divergent_records,
            "acknowledged_divergent_records": self.acknowledged_divergent,
            "open_transactions": [{"producer_id": p, "first_offset": f}
                                  for p, f in self.open_transactions],
        }


@dataclass(slots=True, kw_only=True)
class ReplicaComparison:
    """Several brokers' copies of one partition, compared."""

    topic: str
    partition: int
    copies: list[ReplicaCopy]
    findings: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {"topic": self.topic, "partition": self.partition,
                "copies": [c.to_dict() for c in self.copies]}


def compare_replicas(discovery: Discovery | None, reports: Sequence[PartitionReport],
                     problems: list[str],
                     sets: dict[tuple[str, int], ReplicaSet] | None = None
                     ) -> list[ReplicaComparison]:
    """Every partition present in several log dirs, its copies compared. ``sets``: the
    :func:`~kafkatx.analysis.replica_authority.replica_sets` of the inspection; None: found
    here."""
    if discovery is None:
        return []
    by_path = {r.path: r for r in reports}
    if sets is None:
        sets = replica_sets(discovery.all_partitions(), problems)
    out = []
    for (topic, partition), rs in sorted(sets.items()):
        dirs = [d for d in rs.copies if str(d.path) in by_path]
        if len(dirs) > 1 and str(rs.leader.path) in by_path:
            out.append(_compare(topic, partition, dirs, rs.leader, by_path, problems))
    return out


def _compare(topic: str, partition: int, dirs: list[PartitionDir], leader_dir: PartitionDir,
             by_path: dict[str, PartitionReport], problems: list[str]) -> ReplicaComparison:
    batches = {str(d.path): _Batches.of(d, problems) for d in dirs}
    caches = {str(d.path): position(d, problems, by_path[str(d.path)].log_end_offset).cache
              for d in dirs}
    copies = []
    for d in dirs:
        r = by_path[str(d.path)]
        key = str(d.path)
        copies.append(ReplicaCopy(
            broker=d.log_dir.label if d.log_dir is not None else key, path=key,
            log_start_offset=r.log_start_offset, log_end_offset=r.log_end_offset,
            high_watermark=r.high_watermark, last_stable_offset=r.last_stable_offset,
            latest_leader_epoch=caches[key].latest_epoch,
            open_transactions=sorted((t.producer_id, t.first_offset)
                                     for t in r.open_transactions)))
    leader = next(c for c in copies if c.path == str(leader_dir.path))
    out = ReplicaComparison(topic=topic, partition=partition, copies=copies)
    lb = batches[leader.path]
    for c in copies:
        if c is leader:
            continue
        hw = c.high_watermark if c.high_watermark is not None else c.log_end_offset
        t = truncation_offset(caches[leader.path], leader.log_end_offset, caches[c.path],
                              c.log_end_offset, hw).offset
        c.truncation_offset = t
        c.divergent_records = max(c.log_end_offset - t, 0)
        c.acknowledged_divergent = max(min(hw, c.log_end_offset) - t, 0)
        c.role = DIVERGED if c.divergent_records else (
            IN_SYNC if c.log_end_offset == leader.log_end_offset else LAGGING)
        out.findings.extend(_divergence(topic, partition, leader, c, batches[c.path]))
        out.findings.extend(_prefix_mismatch(topic, partition, leader, lb, c, batches[c.path], t))
        out.findings.extend(_marker_mismatch(topic, partition, leader, lb, c, batches[c.path], t))
        out.findings.extend(_outcome_mismatch(topic, partition, leader, lb, c, batches[c.path]))
    return out


def _finding(kind: str, topic: str, partition: int, offset: int | None, message: str,
             severity: str | None = None, producer_id: int | None = None) -> Finding:
    return Finding(kind=kind, message=message, severity=severity, topic=topic,
                   partition=partition, offset=offset, producer_id=producer_id)


def _divergence(topic: str, partition: int, leader: ReplicaCopy, c: ReplicaCopy,
                b: _Batches) -> list[Finding]:
    t = c.truncation_offset
    assert t is not None
    if c.role == LAGGING:
        return [_finding("replica_lagging", topic, partition, c.log_end_offset,
                         f"{c.broker}'s copy ends at {c.log_end_offset}, "
                         f"{leader.log_end_offset - c.log_end_offset} offset(s) behind "
                         f"{leader.broker}'s (leader epoch {leader.latest_leader_epoch}); "
                         "nothing diverges", INFO)]
    if c.role != DIVERGED:
        return []
    above = b.base >= t
    epochs = sorted(set(b.epoch[above].tolist()))
    out = [_finding(
        "replica_divergence", topic, partition, t,
        f"{c.broker}'s copy diverges from {leader.broker}'s (leader epoch "
        f"{leader.latest_leader_epoch}) at offset {t}: its offsets {t}..{c.log_end_offset - 1} "
        f"(leader epochs {', '.join(map(str, epochs)) or '-'}) are not on the leader's log; "
        f"as a follower it truncates to {t} (OffsetsForLeaderEpoch) and refetches",
        WARNING)]
    if c.acknowledged_divergent:
        end = t + c.acknowledged_divergent - 1
        held = (f"below its high watermark {c.high_watermark} (acknowledged to producers with "
                "acks=all)" if c.high_watermark is not None else
                "that may have been acknowledged to producers with acks=all (its high "
                "watermark is unknown: no replication-offset-checkpoint entry, as after a "
                "kill, so every offset it holds is counted)")
        out.append(_finding(
            "replica_lost_committed_records", topic, partition, t,
            f"{c.broker} had offsets {t}..{end} {held}, and "
            f"{leader.broker}'s log, the newer leader's, does not hold them: an unclean leader "
            "election (or a lost disk) lost committed records; export them from "
            f"{c.path} before that broker truncates", ERROR))
    return out


def _prefix_mismatch(topic: str, partition: int, leader: ReplicaCopy, lb: _Batches,
                     c: ReplicaCopy, cb: _Batches, t: int) -> list[Finding]:
    start = max(leader.log_start_offset, c.log_start_offset)
    a = {(int(o), int(x)) for o, x in zip(lb.base, lb.crc, strict=True) if start <= o < t}
    b = {(int(o), int(x)) for o, x in zip(cb.base, cb.crc, strict=True) if start <= o < t}
    common = {o for o, _ in a} & {o for o, _ in b}
    differing = sorted(o for o in common if (o, dict(a)[o]) not in b)
    if not differing:
        return []
    return [_finding("replica_content_mismatch", topic, partition, differing[0],
                     f"{len(differing)} batch(es) from offset {differing[0]} differ (CRC) "
                     f"between {leader.broker} and {c.broker} below the point where their logs "
                     f"agree by leader epoch ({t}): replicas must be byte-identical there",
                     ERROR)]


def _markers(b: _Batches) -> dict[int, tuple[int, int]]:
    """Producer -> (offset, control type) of each COMMIT/ABORT marker, last one wins."""
    out: dict[int, tuple[int, int]] = {}
    for off, pid, ctl in zip(b.base.tolist(), b.pid.tolist(), b.control.tolist(), strict=True):
        if ctl in (ControlType.COMMIT, ControlType.ABORT):
            out[pid] = (off, ctl)
    return out


def _marker_mismatch(topic: str, partition: int, leader: ReplicaCopy, lb: _Batches,
                     c: ReplicaCopy, cb: _Batches, t: int) -> list[Finding]:
    """A transaction open on one copy that the other closed with a marker."""
    out = []
    for holder, other, other_b in ((leader, c, cb), (c, leader, lb)):
        markers = _markers(other_b)
        for pid, first in holder.open_transactions:
            mark = markers.get(pid)
            if mark is None or mark[0] < first:
                continue
            what = "COMMIT" if mark[1] == ControlType.COMMIT else "ABORT"
            other_hw = other.high_watermark if other.high_watermark is not None \
                else other.log_end_offset
            if mark[0] < other_hw:
                fate = f"read_committed consumers of {other.broker} read past it"
            else:
                fate = (f"there it is not below the high watermark ({other_hw}) either: "
                        "unreplicated")
            if other is c and mark[0] >= t:
                fate += (f"; it lies in {other.broker}'s divergent tail (from {t}), which "
                         "that broker truncates when it follows: the coordinator must write "
                         f"the marker to {holder.broker} again (or the transaction hangs there)")
            out.append(_finding(
                "replica_marker_mismatch", topic, partition, first,
                f"producer {pid}'s transaction from offset {first} is open on "
                f"{holder.broker} (its LSO {holder.last_stable_offset}: read_committed "
                f"consumers stop there) but {other.broker} has its {what} marker at offset "
                f"{mark[0]}: {fate}", ERROR, producer_id=pid))
    return out


def _decided(b: _Batches) -> dict[tuple[int, int], tuple[int, int]]:
    """(producer id, first offset) of every transaction a marker ended on this copy -> (marker
    offset, control type)."""
    out: dict[tuple[int, int], tuple[int, int]] = {}
    first: dict[int, int] = {}
    for off, pid, ctl, txn in zip(b.base.tolist(), b.pid.tolist(), b.control.tolist(),
                                  b.txn.tolist(), strict=True):
        if ctl in (ControlType.COMMIT, ControlType.ABORT):
            if pid in first:
                out[(pid, first.pop(pid))] = (off, ctl)
        elif ctl < 0 and txn and pid >= 0:
            first.setdefault(pid, off)
    return out


def _outcome_mismatch(topic: str, partition: int, leader: ReplicaCopy, lb: _Batches,
                      c: ReplicaCopy, cb: _Batches) -> list[Finding]:
    """The same transaction (a producer's batches from the same first offset) ended by a COMMIT
    marker on one copy and an ABORT marker on the other, wherever the markers lie (below the
    truncation point or in a divergent tail): the transaction was decided twice, e.g. an end
    confirmed by a coordinator whose records and markers never reached the ISR, then decided
    again after a failover. Kafka decides a transaction once
    (``TransactionStateManager#appendTransactionToLog`` with acks=-1), so replicas never
    disagree on an outcome."""
    out = []
    theirs = _decided(cb)
    for (pid, first), (mark, ctl) in sorted(_decided(lb).items()):
        other = theirs.get((pid, first))
        if other is None or other[1] == ctl:
            continue
        committed, aborted = ((leader, mark), (c, other[0])) if ctl == ControlType.COMMIT \
            else ((c, other[0]), (leader, mark))
        out.append(_finding(
            "replica_outcome_mismatch", topic, partition, first,
            f"producer {pid}'s transaction from offset {first} is committed on "
            f"{committed[0].broker} (COMMIT marker at offset {committed[1]}) and aborted on "
            f"{aborted[0].broker} (ABORT marker at offset {aborted[1]}): it was decided twice "
            "(a coordinator's decision that never reached the ISR, then a failover), so "
            f"read_committed consumers of {committed[0].broker} receive records "
            f"{aborted[0].broker} says were aborted; {leader.broker}'s copy, the newest "
            "leader's, is what followers take", ERROR, producer_id=pid))
    return out


def replica_of(pdirs: Sequence[PartitionDir], topic: str, partition: int, broker: str
               ) -> PartitionDir:
    """The copy of ``topic-partition`` in the log dir labelled ``broker``."""
    from kafkatx.errors import KafkatxError

    matches = [p for p in pdirs if (p.topic, p.partition) == (topic, partition)]
    for p in matches:
        if p.log_dir is not None and p.log_dir.label == broker:
            return p
    labels = ", ".join(sorted(p.log_dir.label for p in matches if p.log_dir is not None))
    raise KafkatxError(f"no copy of {topic}-{partition} in a log dir labelled {broker!r} "
                       f"(copies: {labels or 'none'})")


