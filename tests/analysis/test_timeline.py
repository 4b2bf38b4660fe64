"""The join of the coordinator's log with the data partitions, on log dirs built in tmp dirs.

Each scenario writes a broker log dir: data partitions with the LogDirBuilder, the coordinator's
``__transaction_state-N`` records (one single-record batch per value, as
``TransactionStateManager#appendTransactionToLog`` writes them, in the partition ``partitionFor``
picks) and, where a transaction commits offsets, ``__consumer_offsets-N``. Times are ms after
``T0``; every scenario is read back with the local engine (``inspect_paths``).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.analysis.coordinator import TOPIC as TXN_TOPIC
from kafkatx.analysis.coordinator import (
    CoordinatorRecord,
    CoordinatorView,
    TransactionalIdHistory,
)
from kafkatx.analysis.coordinator_transactions import Marker, split_history
from kafkatx.analysis.findings import ERROR, KINDS, WARNING, Finding
from kafkatx.analysis.replay import PartitionReplayer
from kafkatx.analysis.timeline import Selection, Timeline, TimelineTransaction
from kafkatx.analysis.transaction_verdicts import (
    HANGING,
    PENDING,
    DataVerdict,
    MissingMarker,
    PartitionEvidence,
    TransactionJoin,
)
from kafkatx.engines.local import AnalysisOptions, Inspection, inspect_paths
from kafkatx.formats.consumer_offsets import OffsetCommitKey, OffsetCommitValue
from kafkatx.formats.consumer_offsets import build_key as group_key
from kafkatx.formats.consumer_offsets import build_value as group_value
from kafkatx.formats.record_batch import ControlType, Record, build_batch, build_control_batch
from kafkatx.formats.segment_scan import scan_segment
from kafkatx.formats.transaction_log import (
    TransactionLogValue,
    TransactionState,
    TxnTopicPartitions,
)
from kafkatx.semantics.coordinator_partition import partition_for
from tests.analysis.logdirs import T0, LogDirBuilder, PartitionBuilder

S = TransactionState
FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "logdir"
ABORT_CMD = ("kafka-transactions.sh --bootstrap-server <broker:9092> abort --topic {} "
             "--partition {} --start-offset {}")
JOINED = {"hanging_transaction", "missing_marker", "zombie_write", "transaction_timeout_exceeded",
          "orphan_transaction"}
Parts = dict[str, list[int]]


def v(state: TransactionState, pid: int, epoch: int, parts: Parts | None = None,
      start: int = -1, t: int = 0, *, ctv: int = 0, timeout: int = 60_000,
      prev: int = -1) -> TransactionLogValue:
    """A value as the coordinator writes it; ``start``/``t`` in ms after T0 (start -1: none)."""
    return TransactionLogValue(
        version=1 if ctv or prev != -1 else 0, producer_id=pid, producer_epoch=epoch,
        transaction_timeout_ms=timeout, state=int(state),
        partitions=None if parts is None else tuple(
            TxnTopicPartitions(topic=k, partition_ids=tuple(ids)) for k, ids in parts.items()),
        last_update_timestamp_ms=T0 + t, start_timestamp_ms=-1 if start < 0 else T0 + start,
        client_transaction_version=ctv, previous_producer_id=prev)


@dataclass
class Scenario:
    """A broker log dir: data partitions, the coordinator's partitions, __consumer_offsets."""

    root: Path
    builder: LogDirBuilder = field(init=False)
    parts: dict[tuple[str, int], PartitionBuilder] = field(default_factory=dict)
    num_partitions: int = 50  # transaction.state.log.num.partitions of the cluster

    def __post_init__(self) -> None:
        self.builder = LogDirBuilder(self.root)

    def part(self, topic: str, partition: int) -> PartitionBuilder:
        key = (topic, partition)
        if key not in self.parts:
            self.parts[key] = self.builder.partition(topic, partition)
        return self.parts[key]

    def coordinator(self, tid: str, values: list[TransactionLogValue | None], *,
                    tombstone_at: int = 0) -> None:
        p = self.part(TXN_TOPIC, partition_for(tid, self.num_partitions))
        for value in values:
            p.txn_state(tid, value, timestamp=T0 + tombstone_at if value is None else None)

    def offsets(self, partition: int, *, pid: int, epoch: int, group: str,
                commits: dict[tuple[str, int], int], at: int) -> None:
        """``TxnOffsetCommit``: one transactional batch of offset commits."""
        p = self.part("__consumer_offsets", partition)
        first = p.log_end_offset
        records = [Record(offset=first + i, timestamp=T0 + at,
                          key=group_key(OffsetCommitKey(group=group, topic=t, partition=n)),
                          value=group_value(OffsetCommitValue(
                              version=3, offset=o, metadata="", commit_timestamp_ms=T0 + at,
                              leader_epoch=0)))
                   for i, ((t, n), o) in enumerate(sorted(commits.items()))]
        p.raw(build_batch(records, producer_id=pid, producer_epoch=epoch, is_transactional=True))

    def build(self) -> Path:
        return self.builder.build()

    def inspect(self, *, now: int | None = None, paths: list[Path] | None = None,
                selection: Selection | None = None, **options: object) -> Inspection:
        """The inspection with its timeline; its findings must be those of an inspection
        without one (``TransactionJoin#join_partition`` then judges only the transactions
        that can yield or amend a finding)."""
        self.build()
        analysis = AnalysisOptions(now_ms=None if now is None else T0 + now,
                                   **options)  # type: ignore[arg-type]
        result = inspect_paths(paths or [self.root], keep_timeline=True, selection=selection,
                               options=analysis)
        plain = inspect_paths(paths or [self.root], options=analysis)
        assert plain.findings == result.findings
        return result


@pytest.fixture
def sc(tmp_path: Path) -> Scenario:
    return Scenario(tmp_path / "broker")


def kinds(findings: list[Finding]) -> list[str]:
    return [f.kind for f in findings]


def of_kind(findings: list[Finding], kind: str) -> list[Finding]:
    return [f for f in findings if f.kind == kind]


def rows_of(tl: Timeline | None, tid: str | None = None) -> list[TimelineTransaction]:
    assert tl is not None
    return [t for t in tl.transactions if tid is None or t.transactional_id == tid]


def entries(row: TimelineTransaction) -> dict[str, tuple[object, ...]]:
    return {f"{e.topic}-{e.partition}": (e.first_offset, e.last_offset, e.marker_offset,
                                         e.marker_type, e.status) for e in row.partitions}


# ---------------------------------------------------------------------------------------------
# Clean histories


def clean_orders(sc: Scenario) -> int:
    """orders-writer: a commit across orders-0/1/2 with an offsets commit, then an abort."""
    pid, tid, group = 7001, "orders-writer", "orders-app"
    co = partition_for(group)
    parts = {"orders": [0, 1, 2], "__consumer_offsets": [co]}
    sc.coordinator(tid, [
        v(S.EMPTY, pid, 0, t=0),
        v(S.ONGOING, pid, 0, {"orders": [0]}, 1_000, 1_000),
        v(S.ONGOING, pid, 0, parts, 1_000, 1_050),
        v(S.PREPARE_COMMIT, pid, 0, parts, 1_000, 1_500),
        v(S.COMPLETE_COMMIT, pid, 0, {}, 1_000, 1_600),
        v(S.ONGOING, pid, 0, {"orders": [0, 1, 2]}, 5_000, 5_000),
        v(S.PREPARE_ABORT, pid, 0, {"orders": [0, 1, 2]}, 5_000, 5_500),
        v(S.COMPLETE_ABORT, pid, 0, {}, 5_000, 5_600)])
    for n in range(3):
        sc.part("orders", n).data(pid=pid, epoch=0, n=2, txn=True, at=T0 + 1_100 + n)
    sc.offsets(co, pid=pid, epoch=0, group=group,
               commits={("input", 0): 42, ("input", 1): 17}, at=1_200)
    for n in range(3):
        sc.part("orders", n).commit(pid=pid, epoch=0, coordinator_epoch=5, at=T0 + 1_550)
    sc.part("__consumer_offsets", co).commit(pid=pid, epoch=0, coordinator_epoch=5,
                                             at=T0 + 1_550)
    for n in range(3):
        sc.part("orders", n).data(pid=pid, epoch=0, n=1, txn=True, at=T0 + 5_100)
        sc.part("orders", n).abort(pid=pid, epoch=0, coordinator_epoch=5, at=T0 + 5_550)
    return co


def test_clean_commit_and_abort_across_three_partitions_with_offsets(sc: Scenario) -> None:
    co = clean_orders(sc)
    result = sc.inspect()
    assert not [f for f in result.findings if f.kind in JOINED]
    assert not [f for f in result.findings if f.level in (ERROR, WARNING)]
    commit, abort = rows_of(result.timeline, "orders-writer")
    assert (commit.outcome, commit.producer_id, commit.producer_epoch) == ("committed", 7001, 0)
    assert commit.start_timestamp_ms == T0 + 1_000 and commit.end_timestamp_ms == T0 + 1_600
    assert [(s.state, s.timestamp_ms - T0) for s in commit.coordinator_states] == [
        ("Ongoing", 1_000), ("Ongoing", 1_050), ("PrepareCommit", 1_500),
        ("CompleteCommit", 1_600)]
    assert entries(commit) == {
        f"__consumer_offsets-{co}": (0, 1, 2, "COMMIT", "committed"),
        "orders-0": (0, 1, 2, "COMMIT", "committed"),
        "orders-1": (0, 1, 2, "COMMIT", "committed"),
        "orders-2": (0, 1, 2, "COMMIT", "committed")}
    assert {e.marker_coordinator_epoch for e in commit.partitions} == {5}
    assert [(c.group, c.topic, c.partition, c.offset, c.visible)
            for c in commit.offset_commits] == [
        ("orders-app", "input", 0, 42, True), ("orders-app", "input", 1, 17, True)]
    assert abort.outcome == "aborted" and abort.offset_commits == []
    assert entries(abort) == {f"orders-{n}": (3, 3, 4, "ABORT", "aborted") for n in range(3)}
    d = commit.to_dict()
    assert {"transactional_id", "producer_id", "producer_epoch", "outcome",
            "start_timestamp_ms", "end_timestamp_ms", "coordinator_states", "partitions",
            "findings"} <= d.keys()
    assert d["coordinator_states"][0].keys() >= {"state", "timestamp_ms", "offset"}
    assert d["partitions"][0].keys() >= {"topic", "partition", "first_offset", "last_offset",
                                         "marker_offset", "marker_type"}


def test_uncommitted_offsets_are_not_visible(sc: Scenario) -> None:
    pid, co = 7002, partition_for("g")
    sc.coordinator("offsets-only", [
        v(S.ONGOING, pid, 0, {"__consumer_offsets": [co]}, 100, 100),
        v(S.PREPARE_ABORT, pid, 0, {"__consumer_offsets": [co]}, 100, 300),
        v(S.COMPLETE_ABORT, pid, 0, {}, 100, 400)])
    sc.offsets(co, pid=pid, epoch=0, group="g", commits={("t", 3): 9}, at=200)
    sc.part("__consumer_offsets", co).abort(pid=pid, epoch=0, at=T0 + 350)
    (row,) = rows_of(sc.inspect().timeline, "offsets-only")
    assert row.outcome == "aborted"
    assert [(c.topic, c.partition, c.offset, c.visible) for c in row.offset_commits] == [
        ("t", 3, 9, False)]


# ---------------------------------------------------------------------------------------------
# Hanging transactions and missing markers


def dropped_marker(sc: Scenario) -> None:
    """payments-writer commits across p-0/1/2; the COMMIT marker never reaches p-2."""
    pid, tid = 7101, "payments-writer"
    parts = {"p": [0, 1, 2]}
    sc.coordinator(tid, [v(S.ONGOING, pid, 4, parts, 1_000, 1_000),
                         v(S.PREPARE_COMMIT, pid, 4, parts, 1_000, 2_000),
                         v(S.COMPLETE_COMMIT, pid, 4, {}, 1_000, 2_100)])
    for n in range(3):
        sc.part("p", n).data(n=1, at=T0 + 500)  # plain data first: the hanging one starts at 1
        sc.part("p", n).data(pid=pid, epoch=4, n=3, txn=True, at=T0 + 1_100)
    for n in (0, 1):
        sc.part("p", n).commit(pid=pid, epoch=4, coordinator_epoch=2, at=T0 + 2_050)
    sc.part("p", 2).data(n=2, at=T0 + 9_000)  # the log goes on past the completion


def test_dropped_marker_is_a_hanging_transaction(sc: Scenario) -> None:
    dropped_marker(sc)
    result = sc.inspect()
    (hang,) = of_kind(result.findings, "hanging_transaction")
    assert (hang.topic, hang.partition, hang.offset, hang.producer_id, hang.producer_epoch) == (
        "p", 2, 1, 7101, 4)
    assert hang.transactional_id == "payments-writer" and hang.level == ERROR
    assert hang.remediation is not None
    assert hang.remediation.endswith("only then abort it: " + ABORT_CMD.format("p", 2, 1))
    assert "the coordinator committed it" in hang.message
    assert "no COMMIT marker reached p-2" in hang.message and "holds the LSO at 1" in hang.message
    assert result.findings[0] == hang  # the headline
    # The partition's own finding on the same transaction agrees and points at the headline.
    (other,) = [f for f in result.findings if f.kind in ("open_transaction", "lso_pinned")]
    assert (other.partition, other.offset) == (2, 1)
    assert other.transactional_id == "payments-writer"
    assert other.message.endswith("(see hanging_transaction)")
    assert not of_kind(result.findings, "missing_marker")  # the same fact, said once
    (row,) = rows_of(result.timeline, "payments-writer")
    assert row.outcome == "hanging"
    assert entries(row) == {"p-0": (1, 3, 4, "COMMIT", "committed"),
                            "p-1": (1, 3, 4, "COMMIT", "committed"),
                            "p-2": (1, 3, None, None, "hanging")}
    assert hang in row.findings and other in row.findings
    report = next(r for r in result.partitions if (r.topic, r.partition) == ("p", 2))
    assert hang in report.findings


def test_missing_marker_where_the_producer_wrote_nothing(sc: Scenario) -> None:
    pid = 7102
    parts = {"q": [0, 1]}
    sc.coordinator("sparse", [v(S.ONGOING, pid, 0, parts, 1_000, 1_000),
                              v(S.PREPARE_ABORT, pid, 0, parts, 1_000, 2_000),
                              v(S.COMPLETE_ABORT, pid, 0, {}, 1_000, 2_100)])
    sc.part("q", 0).data(pid=pid, epoch=0, n=1, txn=True, at=T0 + 1_100)
    sc.part("q", 0).abort(pid=pid, epoch=0, at=T0 + 2_050)
    sc.part("q", 1).data(n=1, at=T0 + 500).data(n=1, at=T0 + 8_000)  # covers 500..8000
    result = sc.inspect()
    (mm,) = of_kind(result.findings, "missing_marker")
    assert (mm.topic, mm.partition, mm.transactional_id, mm.producer_id) == ("q", 1, "sparse", pid)
    assert mm.level == WARNING and "no ABORT marker" in mm.message
    assert not of_kind(result.findings, "hanging_transaction")
    (row,) = rows_of(result.timeline, "sparse")
    assert row.outcome == "aborted"
    assert entries(row)["q-1"] == (None, None, None, None, "no_marker")


def test_a_contradicting_marker_is_an_error(sc: Scenario) -> None:
    pid = 7103
    sc.coordinator("flip", [v(S.ONGOING, pid, 0, {"r": [0]}, 1_000, 1_000),
                            v(S.PREPARE_ABORT, pid, 0, {"r": [0]}, 1_000, 2_000),
                            v(S.COMPLETE_ABORT, pid, 0, {}, 1_000, 2_100)])
    sc.part("r", 0).data(n=1, at=T0 + 500).data(pid=pid, epoch=0, n=1, txn=True, at=T0 + 1_100)
    sc.part("r", 0).commit(pid=pid, epoch=0, at=T0 + 2_050).data(n=1, at=T0 + 5_000)
    (mm,) = of_kind(sc.inspect().findings, "missing_marker")
    assert mm.level == ERROR and "COMMIT marker of that producer and epoch at offset 2" in (
        mm.message)


def test_marker_absent_in_a_copy_that_ends_too_early_is_not_a_finding(sc: Scenario) -> None:
    pid = 7104
    sc.coordinator("late", [v(S.ONGOING, pid, 0, {"s": [0, 1]}, 1_000, 1_000),
                            v(S.PREPARE_COMMIT, pid, 0, {"s": [0, 1]}, 1_000, 9_000),
                            v(S.COMPLETE_COMMIT, pid, 0, {}, 1_000, 9_100)])
    sc.part("s", 0).data(pid=pid, epoch=0, n=1, txn=True, at=T0 + 1_100)
    sc.part("s", 0).commit(pid=pid, epoch=0, at=T0 + 9_050)
    sc.part("s", 1).data(n=1, at=T0 + 500)  # its copy ends before the decision
    result = sc.inspect()
    assert not of_kind(result.findings, "missing_marker")
    (row,) = rows_of(result.timeline, "late")
    e = next(e for e in row.partitions if e.partition == 1)
    assert e.status == "unknown" and e.note and "covers" in e.note


def test_coordinator_stuck_in_prepare_commit(sc: Scenario) -> None:
    pid = 7201
    parts = {"a": [0, 1]}
    sc.coordinator("stuck", [v(S.ONGOING, pid, 1, parts, 1_000, 1_000),
                             v(S.PREPARE_COMMIT, pid, 1, parts, 1_000, 2_000)])
    for n in (0, 1):
        sc.part("a", n).data(pid=pid, epoch=1, n=2, txn=True, at=T0 + 1_100)
    sc.part("a", 0).commit(pid=pid, epoch=1, at=T0 + 2_050)
    result = sc.inspect(now=600_000)
    (stuck,) = of_kind(result.findings, "stuck_prepare")
    assert stuck.transactional_id == "stuck"
    assert "markers written to a-0 (offset 2)" in stuck.message
    assert "missing from a-1" in stuck.message
    assert not of_kind(result.findings, "hanging_transaction")
    (pinned,) = [f for f in result.findings if f.kind in ("open_transaction", "lso_pinned")]
    assert pinned.partition == 1 and "the coordinator decided to commit it" in pinned.message
    (row,) = rows_of(result.timeline, "stuck")
    assert row.outcome == "open" and row.end_timestamp_ms is None
    assert entries(row) == {"a-0": (0, 1, 2, "COMMIT", "committed"),
                            "a-1": (0, 1, None, None, "marker_pending")}
    assert stuck in row.findings


def test_timeout_abort_with_epoch_bump(sc: Scenario) -> None:
    # TransactionCoordinator#abortTimedOutTransactions: prepareFenceProducerEpoch (+1), then
    # PrepareAbort/CompleteAbort and the ABORT markers carry the bumped epoch.
    pid = 7301
    parts = {"t": [0, 1]}
    sc.coordinator("slow", [v(S.EMPTY, pid, 3, t=0),
                            v(S.ONGOING, pid, 3, parts, 1_000, 1_000),
                            v(S.PREPARE_ABORT, pid, 4, parts, 1_000, 71_000),
                            v(S.COMPLETE_ABORT, pid, 4, {}, 1_000, 71_100)])
    for n in (0, 1):
        sc.part("t", n).data(pid=pid, epoch=3, n=2, txn=True, at=T0 + 1_100)
        sc.part("t", n).abort(pid=pid, epoch=4, coordinator_epoch=1, at=T0 + 71_050)
    result = sc.inspect()
    (timeout,) = of_kind(result.findings, "transaction_timeout_exceeded")
    assert (timeout.topic, timeout.transactional_id, timeout.offset) == (TXN_TOPIC, "slow", 2)
    assert "aborted it 70s after it started, past its 60s transaction timeout" in timeout.message
    assert not of_kind(result.findings, "hanging_transaction")
    assert not of_kind(result.findings, "zombie_write")
    (row,) = rows_of(result.timeline, "slow")
    assert (row.outcome, row.producer_epoch, row.marker_producer_epoch) == ("aborted", 3, 4)
    assert {e.marker_producer_epoch for e in row.partitions} == {4}
    assert timeout in row.findings


def test_ongoing_past_its_timeout(sc: Scenario) -> None:
    pid = 7302
    sc.coordinator("frozen", [v(S.ONGOING, pid, 0, {"u": [0]}, 1_000, 1_000)])
    sc.part("u", 0).data(pid=pid, epoch=0, n=1, txn=True, at=T0 + 1_100)
    result = sc.inspect(now=300_000)
    (timeout,) = of_kind(result.findings, "transaction_timeout_exceeded")
    assert "still Ongoing 4m59s after it started" in timeout.message
    (opened,) = [f for f in result.findings if f.kind in ("open_transaction", "lso_pinned")]
    assert opened.transactional_id == "frozen" and "the coordinator has it Ongoing" in (
        opened.message)
    assert not of_kind(result.findings, "hanging_transaction")


def test_zombie_producer_writes_after_being_fenced(sc: Scenario) -> None:
    pid = 7401
    sc.coordinator("zombie-app", [
        v(S.EMPTY, pid, 0, t=0),
        v(S.ONGOING, pid, 0, {"z": [0]}, 1_000, 1_000),
        v(S.PREPARE_COMMIT, pid, 0, {"z": [0]}, 1_000, 1_500),
        v(S.COMPLETE_COMMIT, pid, 0, {}, 1_000, 1_600),
        v(S.EMPTY, pid, 1, t=3_000)])  # a new instance's InitProducerId fences epoch 0
    sc.part("z", 0).data(pid=pid, epoch=0, n=1, txn=True, at=T0 + 1_100)
    sc.part("z", 0).commit(pid=pid, epoch=0, at=T0 + 1_550)
    sc.part("z", 1).data(pid=pid, epoch=0, n=2, txn=True, at=T0 + 8_000)  # the old instance
    result = sc.inspect()
    (zombie,) = of_kind(result.findings, "zombie_write")
    assert (zombie.topic, zombie.partition, zombie.offset, zombie.producer_epoch) == (
        "z", 1, 0, 0)
    assert zombie.transactional_id == "zombie-app" and zombie.level == ERROR
    assert "fenced epoch 0 (Empty 7401/1" in zombie.message
    (hang,) = of_kind(result.findings, "hanging_transaction")
    assert (hang.partition, hang.offset) == (1, 0)
    assert "moved on to epoch 1" in hang.message and "see zombie_write" in hang.message
    rows = rows_of(result.timeline, "zombie-app")
    assert [r.outcome for r in rows] == ["committed", "hanging"]
    assert rows[1].coordinator_states == [] and zombie in rows[1].findings


def test_transactions_v2_epoch_per_transaction(sc: Scenario) -> None:
    # KIP-890: value v1 with client transaction version 2; every EndTxn bumps the epoch, the
    # markers carry it, and the next transaction's data uses it.
    pid = 7501
    both = {"w": [0, 1]}
    sc.coordinator("tv2-writer", [
        v(S.EMPTY, pid, 0, t=0, ctv=2, prev=pid),
        v(S.ONGOING, pid, 0, both, 1_000, 1_000, ctv=2),
        v(S.PREPARE_COMMIT, pid, 1, both, 1_000, 1_500, ctv=2),
        v(S.COMPLETE_COMMIT, pid, 1, {}, 1_000, 1_600, ctv=2),
        v(S.ONGOING, pid, 1, {"w": [0]}, 2_000, 2_000, ctv=2),
        v(S.PREPARE_ABORT, pid, 2, {"w": [0]}, 2_000, 2_500, ctv=2),
        v(S.COMPLETE_ABORT, pid, 2, {}, 2_000, 2_600, ctv=2),
        v(S.ONGOING, pid, 2, both, 3_000, 3_000, ctv=2),
        v(S.PREPARE_COMMIT, pid, 3, both, 3_000, 3_500, ctv=2),
        v(S.COMPLETE_COMMIT, pid, 3, {}, 3_000, 3_600, ctv=2)])
    w0, w1 = sc.part("w", 0), sc.part("w", 1)
    for p in (w0, w1):
        p.data(pid=pid, epoch=0, n=1, txn=True, at=T0 + 1_100)
        p.commit(pid=pid, epoch=1, at=T0 + 1_550)
    w0.data(pid=pid, epoch=1, n=1, txn=True, at=T0 + 2_100).abort(pid=pid, epoch=2,
                                                                   at=T0 + 2_550)
    for p in (w0, w1):
        p.data(pid=pid, epoch=2, n=1, txn=True, at=T0 + 3_100)
    w0.commit(pid=pid, epoch=3, at=T0 + 3_550)  # ... and never reaches w-1
    w1.data(n=1, at=T0 + 9_000)
    result = sc.inspect()
    rows = rows_of(result.timeline, "tv2-writer")
    assert [(r.producer_epoch, r.marker_producer_epoch, r.outcome) for r in rows] == [
        (0, 1, "committed"), (1, 2, "aborted"), (2, 3, "hanging")]
    assert entries(rows[0]) == {"w-0": (0, 0, 1, "COMMIT", "committed"),
                                "w-1": (0, 0, 1, "COMMIT", "committed")}
    assert entries(rows[1]) == {"w-0": (2, 2, 3, "ABORT", "aborted")}
    assert entries(rows[2]) == {"w-0": (4, 4, 5, "COMMIT", "committed"),
                                "w-1": (2, 2, None, None, "hanging")}
    (hang,) = of_kind(result.findings, "hanging_transaction")
    assert (hang.partition, hang.offset, hang.producer_epoch) == (1, 2, 2)
    assert not of_kind(result.findings, "zombie_write")
    assert not of_kind(result.findings, "invalid_state_transition")


def test_expired_transactional_id(sc: Scenario) -> None:
    # old-app completed and expired (tombstone): its history still names its producer id.
    sc.coordinator("old-app", [v(S.ONGOING, 7601, 0, {"x": [0]}, 1_000, 1_000),
                               v(S.PREPARE_COMMIT, 7601, 0, {"x": [0]}, 1_000, 1_500),
                               v(S.COMPLETE_COMMIT, 7601, 0, {}, 1_000, 1_600), None],
                   tombstone_at=9_000)
    # gone-app expired while its producer had data open in x-1 (written without the
    # coordinator knowing): nothing will ever end it.
    sc.coordinator("gone-app", [v(S.EMPTY, 7602, 0, t=100), None], tombstone_at=9_500)
    sc.part("x", 0).data(pid=7601, epoch=0, n=1, txn=True, at=T0 + 1_100)
    sc.part("x", 0).commit(pid=7601, epoch=0, at=T0 + 1_550)
    sc.part("x", 1).data(pid=7602, epoch=0, n=1, txn=True, at=T0 + 5_000)
    result = sc.inspect()
    (row,) = rows_of(result.timeline, "old-app")
    assert row.outcome == "committed" and entries(row)["x-0"][3] == "COMMIT"
    (hang,) = of_kind(result.findings, "hanging_transaction")
    assert hang.transactional_id == "gone-app" and hang.partition == 1
    assert "expired transactional id gone-app (tombstone" in hang.message
    assert not of_kind(result.findings, "zombie_write")  # written before the id expired


# ---------------------------------------------------------------------------------------------
# Partial evidence


def copy_without(src: Path, dst: Path, *, drop: tuple[str, ...]) -> Path:
    shutil.copytree(src, dst, ignore=lambda d, names: [n for n in names if n.startswith(drop)])
    return dst


def test_data_partitions_only(sc: Scenario, tmp_path: Path) -> None:
    co = clean_orders(sc)
    sc.build()
    only_data = copy_without(sc.root, tmp_path / "data-only", drop=(TXN_TOPIC,))
    result = inspect_paths([only_data], keep_timeline=True)
    tl = result.timeline
    assert tl is not None
    assert any("no __transaction_state partition among the evidence" in n for n in tl.notes)
    # Grouped from the data alone: producer, epoch and overlapping time.
    commit, abort = rows_of(tl)
    assert (commit.transactional_id, commit.producer_id, commit.outcome) == (
        None, 7001, "committed")
    assert sorted(entries(commit)) == [f"__consumer_offsets-{co}", "orders-0", "orders-1",
                                       "orders-2"]
    assert [c.offset for c in commit.offset_commits] == [42, 17]
    assert abort.outcome == "aborted" and len(abort.partitions) == 3
    assert commit.missing and "no __transaction_state partition" in commit.missing[0]
    assert not [f for f in result.findings if f.kind in JOINED]


def test_coordinator_only(sc: Scenario, tmp_path: Path) -> None:
    clean_orders(sc)
    sc.build()
    only = tmp_path / "coordinator-only"
    only.mkdir()
    for d in sc.root.glob(f"{TXN_TOPIC}-*"):
        shutil.copytree(d, only / d.name)
    result = inspect_paths([only], keep_timeline=True)
    commit, abort = rows_of(result.timeline, "orders-writer")
    assert commit.outcome == "committed" and abort.outcome == "aborted"
    assert {e.status for e in commit.partitions} == {"not_copied"}
    assert "orders-0: not among the evidence" in commit.missing
    tl = result.timeline
    assert tl is not None
    assert any(n.startswith("partitions in transactions' sets but not among the evidence: "
                            "__consumer_offsets-") for n in tl.notes)
    assert {lane.copied for lane in tl.lanes} == {False}


def test_one_partition_of_the_set_not_copied(sc: Scenario, tmp_path: Path) -> None:
    dropped_marker(sc)
    sc.build()
    partial = copy_without(sc.root, tmp_path / "partial", drop=("p-2",))
    result = inspect_paths([partial], keep_timeline=True)
    (row,) = rows_of(result.timeline, "payments-writer")
    assert row.outcome == "committed"  # what can be said: the coordinator committed it
    assert entries(row)["p-2"][4] == "not_copied" and "p-2: not among the evidence" in row.missing
    assert not of_kind(result.findings, "hanging_transaction")


def test_coordinator_partition_of_an_id_absent(sc: Scenario, tmp_path: Path) -> None:
    dropped_marker(sc)
    sc.coordinator("other-writer", [v(S.EMPTY, 9999, 0, t=0)])
    sc.build()
    home = partition_for("payments-writer")
    assert home != partition_for("other-writer")
    partial = copy_without(sc.root, tmp_path / "partial", drop=(f"{TXN_TOPIC}-{home}",))
    result = inspect_paths([partial], keep_timeline=True,
                           selection=Selection(transactional_ids=frozenset({"payments-writer"})))
    tl = result.timeline
    assert tl is not None
    assert any(f"{TXN_TOPIC}-{home} (partitionFor, of 50) is not among the evidence" in n
               for n in tl.notes)
    # The data is still read; who owns producer 7101 cannot be told, nor whether it hangs.
    (orphan,) = of_kind(result.findings, "orphan_transaction")
    assert orphan.level == WARNING and orphan.remediation is None
    assert "may live in one of the 49 partitions that were not copied" in orphan.message
    assert not of_kind(result.findings, "hanging_transaction")
    everything = inspect_paths([partial], keep_timeline=True).timeline
    assert everything is not None
    data_rows = [r for r in everything.transactions if r.producer_id == 7101]
    assert [r.transactional_id for r in data_rows] == [None]
    assert "names producer 7101" in data_rows[0].missing[0]


def test_orphan_with_every_coordinator_partition_present(sc: Scenario) -> None:
    sc.coordinator("someone", [v(S.EMPTY, 1, 0, t=0)])
    sc.part("o", 0).data(n=1, at=T0).data(pid=8801, epoch=3, n=2, txn=True, at=T0 + 100)
    sc.build()
    for p in range(50):  # the other, empty, coordinator partitions
        d = sc.root / f"{TXN_TOPIC}-{p}"
        if not d.exists():
            d.mkdir()
            (d / "00000000000000000000.log").touch()
    result = inspect_paths([sc.root], keep_timeline=True)
    (orphan,) = of_kind(result.findings, "orphan_transaction")
    assert orphan.level == ERROR and orphan.remediation == ABORT_CMD.format("o", 0, 1)
    assert "all 50 __transaction_state partitions present" in orphan.message
    (row,) = [r for r in rows_of(result.timeline) if r.producer_id == 8801]
    assert row.outcome == "hanging" and row.transactional_id is None


# ---------------------------------------------------------------------------------------------
# Findings that exist elsewhere get their transactional id


def test_partition_findings_get_the_transactional_id(sc: Scenario) -> None:
    pid = 7701
    sc.coordinator("regress", [v(S.ONGOING, pid, 0, {"c": [0]}, 1_000, 1_000),
                               v(S.PREPARE_COMMIT, pid, 0, {"c": [0]}, 1_000, 1_500),
                               v(S.COMPLETE_COMMIT, pid, 0, {}, 1_000, 1_600),
                               v(S.ONGOING, pid, 0, {"c": [0]}, 2_000, 2_000),
                               v(S.PREPARE_COMMIT, pid, 0, {"c": [0]}, 2_000, 2_500),
                               v(S.COMPLETE_COMMIT, pid, 0, {}, 2_000, 2_600)])
    c0 = sc.part("c", 0)
    c0.data(pid=pid, epoch=0, n=1, txn=True, at=T0 + 1_100).commit(
        pid=pid, epoch=0, coordinator_epoch=5, at=T0 + 1_550)
    c0.data(pid=pid, epoch=0, n=1, txn=True, at=T0 + 2_100).commit(
        pid=pid, epoch=0, coordinator_epoch=3, at=T0 + 2_550)  # an older coordinator
    result = sc.inspect()
    (regression,) = of_kind(result.findings, "coordinator_epoch_regression")
    assert regression.transactional_id == "regress"
    rows = rows_of(result.timeline, "regress")
    assert [r.outcome for r in rows] == ["committed", "committed"]
    assert regression in rows[1].findings and regression not in rows[0].findings
    assert not [f for f in result.findings if f.kind in JOINED]


def test_kinds_are_registered() -> None:
    for kind in JOINED:
        assert kind in KINDS


def test_selection_and_time_window(sc: Scenario) -> None:
    clean_orders(sc)
    dropped_marker(sc)
    by_pid = sc.inspect(selection=Selection(producer_ids=frozenset({7101}))).timeline
    assert [r.transactional_id for r in rows_of(by_pid)] == ["payments-writer"]
    late = inspect_paths([sc.root], keep_timeline=True,
                         selection=Selection(since_ms=T0 + 3_000)).timeline
    assert [(r.transactional_id, r.outcome) for r in rows_of(late)] == [
        ("payments-writer", "hanging"), ("orders-writer", "aborted")]
    early = inspect_paths([sc.root], keep_timeline=True,
                          selection=Selection(until_ms=T0 + 999)).timeline
    assert rows_of(early) == []


def test_split_history_without_its_first_records() -> None:
    # Compaction kept only the Prepare and Complete records: the transaction is still one.
    recs = [CoordinatorRecord(transactional_id="c", offset=i, timestamp=T0 + i, partition=3,
                              value=val) for i, val in enumerate([
                                  v(S.PREPARE_ABORT, 5, 2, {"t": [0]}, 10, 20, ctv=2),
                                  v(S.COMPLETE_ABORT, 5, 2, {}, 10, 30, ctv=2)])]
    (c,) = split_history("c", recs, 3)
    assert c.decision == "ABORT" and c.marker_epoch == 2 and c.data_epoch is None
    assert c.data_epochs() == {1, 0} and c.closed and c.partitions == {("t", 0)}


# ---------------------------------------------------------------------------------------------
# The bundled fixture


def test_fixture_ledger_writer_is_hanging() -> None:
    result = inspect_paths([FIXTURE], keep_timeline=True)
    (hang,) = of_kind(result.findings, "hanging_transaction")
    assert (hang.topic, hang.partition, hang.offset, hang.transactional_id) == (
        "payments", 0, 19, "ledger-writer")
    assert (hang.producer_id, hang.producer_epoch, hang.level) == (4003, 7, ERROR)
    assert hang.remediation == ABORT_CMD.format("payments", 0, 19)
    assert "PrepareAbort 4003/8" in hang.message and "CompleteAbort 4003/8" in hang.message
    (timeout,) = of_kind(result.findings, "transaction_timeout_exceeded")
    assert timeout.transactional_id == "ledger-writer"
    outcomes = {r.transactional_id: r.outcome for r in rows_of(result.timeline)}
    assert outcomes == {"payments-writer": "committed", "refunds-writer": "aborted",
                        "ledger-writer": "hanging"}
    (pay,) = rows_of(result.timeline, "payments-writer")
    assert [(c.topic, c.partition, c.offset, c.visible) for c in pay.offset_commits] == [
        ("payments", 0, 15, True), ("payments", 1, 3, True)]


# ---------------------------------------------------------------------------------------------
# Properties of the pairing, on histories generated in memory


@dataclass(frozen=True)
class Txn:
    commit: bool
    data: bool  # the producer wrote to the partition (else the partition is in the set only)


def _join_of(specs: list[Txn], *, tv2: bool, dropped: set[int]) -> tuple[
        list[DataVerdict], list[MissingMarker]]:
    """One producer's transactions through its coordinator and one partition ``t-0``: batches
    built and replayed in memory, markers of the transactions in ``dropped`` never written."""
    pid, tid, e0 = 4242, "prop", 3
    records: list[CoordinatorRecord] = []
    # The partition's log starts before the first transaction (it covers them all).
    batches = [build_batch([Record(offset=0, timestamp=T0 + 1_000, key=b"k", value=b"v")])]
    markers: list[Marker] = []
    offset, seq = 1, 0

    def rec(value: TransactionLogValue) -> None:
        records.append(CoordinatorRecord(transactional_id=tid, offset=len(records),
                                         timestamp=value.last_update_timestamp_ms, partition=7,
                                         value=value))

    ctv = 2 if tv2 else 0
    for k, spec in enumerate(specs):
        t = 10_000 * (k + 1)
        epoch = e0 + k if tv2 else e0
        end = epoch + 1 if tv2 else epoch
        prepare, complete = ((S.PREPARE_COMMIT, S.COMPLETE_COMMIT) if spec.commit
                             else (S.PREPARE_ABORT, S.COMPLETE_ABORT))
        rec(v(S.ONGOING, pid, epoch, {"t": [0]}, t, t, ctv=ctv))
        if spec.data:
            if tv2:
                seq = 0
            batches.append(build_batch(
                [Record(offset=offset, timestamp=T0 + t + 100, key=b"k", value=b"v")],
                producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=True))
            offset, seq = offset + 1, seq + 1
        rec(v(prepare, pid, end, {"t": [0]}, t, t + 500, ctv=ctv))
        if k not in dropped:
            kind = ControlType.COMMIT if spec.commit else ControlType.ABORT
            batches.append(build_control_batch(base_offset=offset, producer_id=pid,
                                               producer_epoch=end, control_type=kind,
                                               timestamp=T0 + t + 550, coordinator_epoch=1))
            markers.append(Marker(offset=offset, producer_id=pid, producer_epoch=end,
                                  type="COMMIT" if spec.commit else "ABORT",
                                  timestamp=T0 + t + 550, coordinator_epoch=1))
            offset += 1
        rec(v(complete, pid, end, {}, t, t + 600, ctv=ctv))
    batches.append(build_batch([Record(offset=offset, timestamp=T0 + 10_000 * (len(specs) + 2),
                                       key=b"k", value=b"v")]))  # the log goes on
    replayer = PartitionReplayer()
    replayer.feed(scan_segment(b"".join(batches), path="t-0.log"))
    replay = replayer.result
    history = TransactionalIdHistory(transactional_id=tid, coordinator_partition=7,
                                     records=records, current=records[-1].value, partitions=(7,))
    view = CoordinatorView(histories={tid: history}, partitions_present={7},
                           producer_ids={pid: {tid}})
    closed = {m.offset: m for m in markers}
    for txn in replay.transactions:
        if txn.marker_offset in closed:
            closed[txn.marker_offset] = closed[txn.marker_offset]._replace(txn=txn)
    pj = TransactionJoin(view).join_partition(PartitionEvidence(
        topic="t", partition=0, transactions=replay.transactions, markers=list(closed.values()),
        min_timestamp=replay.min_timestamp, max_timestamp=replay.max_timestamp,
        now_ms=replay.max_timestamp))
    return pj.verdicts, pj.missing


txn_specs = st.lists(st.builds(Txn, commit=st.booleans(), data=st.booleans()), min_size=1,
                     max_size=8)


@settings(max_examples=60, deadline=None)
@given(specs=txn_specs, tv2=st.booleans())
def test_every_marker_delivered_pairs_every_transaction(specs: list[Txn], tv2: bool) -> None:
    verdicts, missing = _join_of(specs, tv2=tv2, dropped=set())
    assert missing == []
    with_data = [s for s in specs if s.data]
    assert [vd.status for vd in verdicts] == ["closed"] * len(with_data)
    assert [vd.coordinator.decision for vd in verdicts if vd.coordinator] == [
        "COMMIT" if s.commit else "ABORT" for s in with_data]
    assert all(vd.fence is None for vd in verdicts)


@settings(max_examples=60, deadline=None)
@given(specs=txn_specs, tv2=st.booleans())
def test_the_last_marker_dropped_is_a_hanging_transaction(specs: list[Txn], tv2: bool) -> None:
    specs = [*specs[:-1], Txn(commit=specs[-1].commit, data=True)]
    verdicts, missing = _join_of(specs, tv2=tv2, dropped={len(specs) - 1})
    hanging = [vd for vd in verdicts if vd.status == HANGING]
    assert len(hanging) == 1 and hanging[0] is verdicts[-1]
    assert hanging[0].coordinator is not None and hanging[0].coordinator.index == len(specs) - 1
    assert missing == []  # the same fact is the hanging transaction, said once


@settings(max_examples=60, deadline=None)
@given(specs=txn_specs.filter(lambda s: len(s) >= 2), data=st.data())
def test_an_earlier_marker_dropped_is_a_missing_marker(specs: list[Txn],
                                                       data: st.DataObject) -> None:
    # Transactions v0/v1 (one epoch): a later marker closes the data the dropped one left open.
    k = data.draw(st.integers(0, len(specs) - 2))
    verdicts, missing = _join_of(specs, tv2=False, dropped={k})
    assert [m.coordinator.index for m in missing] == [k]
    assert not [vd for vd in verdicts if vd.status in (HANGING, PENDING)]


def test_an_admin_abort_is_told_apart_from_the_coordinator(sc: Scenario) -> None:
    # kafka-transactions.sh abort (WriteTxnMarkers) closed the data while the coordinator still
    # has the transaction Ongoing: the data belongs to that transaction, not to a lost one.
    pid = 7801
    sc.coordinator("admin-aborted", [v(S.ONGOING, pid, 0, {"m": [0]}, 1_000, 1_000)])
    sc.part("m", 0).data(pid=pid, epoch=0, n=2, txn=True, at=T0 + 999)  # created just before
    sc.part("m", 0).abort(pid=pid, epoch=0, at=T0 + 30_000)
    result = sc.inspect()
    (row,) = rows_of(result.timeline)
    assert (row.transactional_id, row.outcome) == ("admin-aborted", "open")
    (e,) = row.partitions
    assert (e.first_offset, e.last_offset, e.marker_offset, e.status) == (0, 1, 2, "aborted")
    assert e.note and "an ABORT marker at offset 2 that the coordinator did not write" in e.note
    assert not [f for f in result.findings if f.kind in JOINED]
