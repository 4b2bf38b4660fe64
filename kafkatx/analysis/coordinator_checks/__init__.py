"""Checks that join the coordinator's log with the data partitions, run by the engine.

The engine calls ``on_partition`` once per partition, after its own checks (the replay and the
partition's findings are then at hand, and dropped afterwards: memory stays one partition's),
and ``finish`` once at the end. With ``keep_timeline`` the rows of ``kafkatx timeline`` are
collected on the way (:class:`kafkatx.analysis.timeline.TimelineBuilder`).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from kafkatx.analysis.checks import PartitionContext
from kafkatx.analysis.checks.transactions import open_finding
from kafkatx.analysis.coordinator_checks import evidence, rules
from kafkatx.analysis.coordinator_transactions import (
    CoordinatorTransaction,
    OffsetCommit,
    TopicPartition,
    tp_name,
)
from kafkatx.analysis.findings import INFO, Finding
from kafkatx.analysis.metadata_settings import metadata_partition_count
from kafkatx.analysis.replica_authority import REPLICATED_KINDS
from kafkatx.analysis.timefmt import duration
from kafkatx.analysis.timefmt import iso_ms as iso
from kafkatx.analysis.transaction_verdicts import (
    HANGING,
    ORPHAN,
    PENDING,
    DataVerdict,
    PartitionJoin,
    TransactionJoin,
)
from kafkatx.formats.internal_topics import GROUP_METADATA_TOPIC
from kafkatx.formats.internal_topics import TRANSACTION_STATE_TOPIC as COORDINATOR_TOPIC
from kafkatx.storage.discovery import Discovery, PartitionDir

if TYPE_CHECKING:
    from kafkatx.analysis.coordinator import CoordinatorView
    from kafkatx.analysis.timeline import Selection, Timeline, TimelineBuilder

__all__ = ["CoordinatorChecks"]


class CoordinatorChecks:
    """The joined checks of one inspection.

    ``now_ms`` is ``--now`` (None: the newest timestamp among the coordinator's log and each
    partition's); ``present`` the live partitions among the evidence; ``followers`` the paths
    of the copies of a partition that are not its authoritative copy
    (:mod:`kafkatx.analysis.replica_authority`): they take no part in the join.
    """

    def __init__(self, view: CoordinatorView | None, *, present: set[TopicPartition],
                 now_ms: int | None = None, keep_timeline: bool = False,
                 selection: Selection | None = None, max_timeout_ms: int = 900_000,
                 followers: frozenset[str] = frozenset()) -> None:
        self.view = view
        self.followers = followers
        self.max_timeout_ms = max_timeout_ms
        self.join = TransactionJoin(view)
        self.now_ms = now_ms
        self.newest_ms = view.newest_timestamp_ms if view is not None else -1
        self.builder: TimelineBuilder | None = None
        if keep_timeline:  # the timeline's modules: loaded only for a timeline
            from kafkatx.analysis.timeline import Selection, TimelineBuilder

            self.builder = TimelineBuilder(self.join, present=present,
                                           selection=selection or Selection())
        self._committed_hangs: list[tuple[Finding, list[Finding], DataVerdict,
                                          CoordinatorTransaction | None,
                                          list[OffsetCommit], int]] = []  # + log start
        self._revised: dict[int, Finding] = {}  # id(finding) -> the finding told again
        self._step_owner: dict[tuple[int, int], CoordinatorTransaction] = {
            (s.partition, s.offset): c for c in self.join.transactions for s in c.steps}

    @classmethod
    def for_discovery(cls, disc: Discovery, *, now_ms: int | None = None,
                      num_partitions: int | None = None, keep_timeline: bool = False,
                      selection: Selection | None = None, max_timeout_ms: int = 900_000,
                      followers: frozenset[str] = frozenset()) -> CoordinatorChecks:
        """``num_partitions``: ``transaction.state.log.num.partitions`` (None: detected, from a
        KRaft metadata log among the evidence first); ``max_timeout_ms``:
        ``--max-transaction-timeout-ms``."""
        pdirs = [p for p in disc.all_partitions() if p.is_live]
        has_coordinator = any(p.topic == COORDINATOR_TOPIC for p in pdirs)
        metadata = (metadata_partition_count(disc, COORDINATOR_TOPIC)
                    if has_coordinator and num_partitions is None else None)
        view = None
        if has_coordinator:  # the coordinator's decoders: loaded only for its partitions
            from kafkatx.analysis.coordinator import coordinator_view

            view = coordinator_view(pdirs, now_ms=now_ms, num_partitions=num_partitions,
                                    include_segment_damage=False, metadata_partitions=metadata)
        return cls(view, present={(p.topic, p.partition) for p in pdirs}, now_ms=now_ms,
                   keep_timeline=keep_timeline, selection=selection,
                   max_timeout_ms=max_timeout_ms, followers=followers)

    # -- per partition -----------------------------------------------------------------------

    def on_partition(self, pdir: PartitionDir, ctx: PartitionContext, findings: list[Finding]
                     ) -> list[Finding]:
        """The partition's findings with transactional ids and the joined findings added; a
        follower's copy keeps only its own files' findings (the authoritative copy tells the
        partition's transactions, the replica comparison what differs)."""
        if str(pdir.path) in self.followers:
            return [f for f in findings if f.kind not in REPLICATED_KINDS]
        if ctx.topic == COORDINATOR_TOPIC:
            return findings
        replay = ctx.replay
        self.newest_ms = max(self.newest_ms, replay.max_timestamp)
        now = self.now_ms if self.now_ms is not None else max(
            ctx.now_ms, self.view.newest_timestamp_ms if self.view is not None else -1)
        ev = evidence.partition_evidence(ctx, now_ms=now, max_timeout_ms=self.max_timeout_ms)
        # Without a timeline, only the transactions that can yield or amend a finding.
        pj = self.join.join_partition(ev, named=None if self.builder is not None else {
            (f.producer_id, f.offset) for f in findings
            if f.producer_id is not None and f.offset is not None})
        new: list[tuple[Finding, DataVerdict | None, CoordinatorTransaction | None]] = []
        for v in pj.verdicts:
            if v.status == HANGING:
                f = rules.hanging(v, path=ctx.path, stable=ctx.stable,
                                  stale_copy=self._stale_copy(pdir, v, replay.max_timestamp),
                                  restart=rules.restart_step(v, forgets=ctx.restart_forgets))
                new.append((f, v, v.coordinator))
                if v.coordinator is not None:
                    v.coordinator.hanging = True
            elif v.status == ORPHAN:
                new.append((rules.orphan(v, path=ctx.path, stable=ctx.stable), v, None))
            if v.fence is not None:
                new.append((rules.zombie(v, path=ctx.path), v, v.coordinator))
        for mm in pj.missing:
            new.append((rules.missing_marker(mm, path=ctx.path), None, mm.coordinator))
        at = {(v.txn.producer_id, v.txn.first_offset): v for v in pj.verdicts}
        out = [rules.amend(self._judge_open(f, at.get((f.producer_id, f.offset)), ctx),
                           at.get((f.producer_id, f.offset)), self._owner(f))
               for f in findings]
        self._note_committed_hangs(pdir, ctx, out, new)
        if self.builder is not None:
            self._keep(pdir, ctx, pj, out, new)
        return out + [f for f, _, _ in new]

    def _note_committed_hangs(self, pdir: PartitionDir, ctx: PartitionContext,
                              out: list[Finding],
                              new: list[tuple[Finding, DataVerdict | None,
                                              CoordinatorTransaction | None]]) -> None:
        """Hanging transactions the coordinator committed: their findings are told again in
        :meth:`revise` once every partition's markers are known."""
        for f, v, c in new:
            if f.kind != "hanging_transaction" or v is None:
                continue
            if not (rules.committed(c) if c is not None else rules.maybe_committed(v)):
                continue
            commits = (evidence.read_offset_commits(pdir, [v.txn]).get(v.txn.first_offset, [])
                       if ctx.topic == GROUP_METADATA_TOPIC else [])
            pinned = [g for g in out if g.kind in ("lso_pinned", "open_transaction")
                      and g.producer_id == v.txn.producer_id and g.offset == v.txn.first_offset]
            self._committed_hangs.append((f, pinned, v, c, commits, ctx.log_start_offset))

    def _judge_open(self, f: Finding, v: DataVerdict | None, ctx: PartitionContext) -> Finding:
        """``open_transaction``/``lso_pinned`` judged again with what the coordinator says, as
        ``TransactionsCommand`` ``find-hanging`` does: the threshold is the larger of the
        transaction's recorded timeout and ``--max-transaction-timeout-ms``, and a transaction
        the coordinator still has Ongoing/Prepare* with this partition is no abort case."""
        if v is None or f.kind not in ("open_transaction", "lso_pinned"):
            return f
        recorded = self._recorded_timeout(v)
        if recorded is not None:
            f = open_finding(ctx, v.txn, threshold_ms=max(recorded, self.max_timeout_ms),
                             timeout_said=f"its {duration(recorded)} transaction timeout in "
                                          f"{COORDINATOR_TOPIC}")
        if f.kind != "lso_pinned":
            now = self.now_ms if self.now_ms is not None else max(
                ctx.now_ms, self.view.newest_timestamp_ms if self.view is not None else -1)
            if v.status == PENDING and rules.in_progress(v, now_ms=now):
                return replace(f, severity=INFO)  # a copy taken mid-transaction: nothing wrong
            return f
        if v.status == PENDING:
            return rules.still_running(f, v, now_ms=ctx.now_ms)
        if self.view is None:
            return rules.without_coordinator(f)
        return f

    def _recorded_timeout(self, v: DataVerdict) -> int | None:
        """The transaction timeout ``__transaction_state`` recorded for ``v``'s transaction."""
        if v.coordinator is not None:
            return v.coordinator.timeout_ms
        if self.view is None or v.transactional_id is None:
            return None
        h = self.view.histories.get(v.transactional_id)
        current = h.current if h is not None else None
        if current is None or current.producer_id != v.txn.producer_id:
            return None
        return current.transaction_timeout_ms

    def _owner(self, f: Finding) -> str | None:
        return None if f.producer_id is None else self.join.owner(f.producer_id)

    def _stale_copy(self, pdir: PartitionDir, v: DataVerdict, newest: int) -> str | None:
        """A caution when the partition and the coordinator's record come from different log
        dirs and the partition's copy ends before that record."""
        step = v.moved_on
        if step is None or self.view is None or newest >= step.timestamp_ms:
            return None
        source = self.view.sources.get(step.partition)
        if source is None or Path(source).parent == pdir.path.parent:
            return None
        return (f"this copy of {tp_name(v.tp)} ends at {iso(newest)}, before that record and "
                "from another log dir: if it was copied earlier, the marker may have come "
                "later; confirm with kafka-transactions.sh find-hanging")

    def _keep(self, pdir: PartitionDir, ctx: PartitionContext, pj: PartitionJoin,
              findings: list[Finding],
              new: list[tuple[Finding, DataVerdict | None, CoordinatorTransaction | None]]
              ) -> None:
        assert self.builder is not None
        if not self.builder.add(evidence.lane_of(pdir, ctx), pj):
            return
        for f, v, c in new:
            target = c.findings if c is not None else (v.findings if v is not None else None)
            if target is not None:
                target.append(f)
        by_pid: dict[int, list[DataVerdict]] = {}
        for v in pj.verdicts:  # in offset order
            by_pid.setdefault(v.txn.producer_id, []).append(v)
        for f in findings:
            if f.producer_id is None or f.offset is None:
                continue
            mine = by_pid.get(f.producer_id, [])
            i = bisect_right([v.txn.first_offset for v in mine], f.offset) - 1
            if i >= 0 and mine[i].covers(f.producer_id, f.offset):
                v = mine[i]
                (v.coordinator.findings if v.coordinator is not None else v.findings).append(f)
        if ctx.topic == GROUP_METADATA_TOPIC:
            commits = evidence.read_offset_commits(pdir, [v.txn for v in pj.verdicts])
            for v in pj.verdicts:
                v.offset_commits = commits.get(v.txn.first_offset, [])
                if v.coordinator is not None and v.tp in v.coordinator.entries:
                    v.coordinator.entries[v.tp].offset_commits = list(v.offset_commits)

    # -- at the end ------------------------------------------------------------------------

    def reference_ms(self) -> int:
        return self.now_ms if self.now_ms is not None else self.newest_ms

    def finish(self) -> list[Finding]:
        """Coordinator-side findings: timeouts, and the coordinator view's own findings with
        what the data partitions showed."""
        self._tell_committed_hangs()
        out: list[Finding] = []
        now = self.reference_ms()
        current = self._current_transactions()
        for c in self.join.transactions:
            f = rules.transaction_timeout(c, now_ms=now, is_current=id(c) in current)
            if f is not None:
                out.append(f)
                c.findings.append(f)
        if self.view is not None:
            for f in self.view.findings:
                c = (self._step_owner.get((f.partition, f.offset))
                     if f.partition is not None and f.offset is not None else None)
                if c is not None and f.kind == "stuck_prepare":
                    f = rules.stuck_prepare_detail(f, c)
                if c is not None:
                    c.findings.append(f)
                out.append(f)
        return out

    def revise(self, findings: list[Finding]) -> list[Finding]:
        """``findings`` with the ones :meth:`finish` told again replaced (call after it)."""
        if not self._revised:
            return findings
        return [self._revised.get(id(f), f) for f in findings]

    def _tell_committed_hangs(self) -> None:
        """``hanging_transaction`` of a committed transaction: which partitions got the COMMIT
        marker, what an abort discards, how to export it first and confirm it live."""
        for f, pinned, v, c, commits, log_start in self._committed_hangs:
            told = rules.committed_hang(f, v, c, commits=commits, log_start=log_start)
            self._revised[id(f)] = told
            for g in pinned:
                self._revised[id(g)] = rules.committed_pointer(g)
        if not self._revised:
            return
        for c in self.join.transactions:
            c.findings[:] = self.revise(c.findings)
        if self.builder is not None:
            for v in self.builder.unmatched:
                v.findings[:] = self.revise(v.findings)

    def _current_transactions(self) -> set[int]:
        """The transactions whose last record is their id's newest record."""
        if self.view is None:
            return set()
        last = {(h.records[-1].partition, h.records[-1].offset)
                for h in self.view.histories.values() if h.records}
        return {id(c) for c in self.join.transactions
                if (c.last_step.partition, c.last_step.offset) in last}

    def timeline(self, replica_findings: Sequence[Finding] = ()) -> Timeline | None:
        """The timeline, with the replica comparison's ``replica_findings`` (those on the
        partitions it shows when a selection narrows it)."""
        if self.builder is None:
            return None
        from kafkatx.analysis.timeline import Selection, add_replica_findings

        tl = self.builder.build(self.reference_ms())
        add_replica_findings(tl, replica_findings,
                             only_shown=self.builder.selection != Selection())
        return tl
