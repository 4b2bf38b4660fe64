"""The columnar producer-state replay equals the per-batch core on random histories.

Follows ``ProducerStateManager``/``ProducerAppendInfo`` (Kafka 4.x storage internals) through
:mod:`kafkatx.semantics.producer_state`, the one copy of the rules: each history is replayed
batch by batch (``PartitionReplayer(columnar=False)``, the reference) and by the columnar path,
and everything the replay yields must be identical -- producer entries (epoch, retained batches,
coordinator epoch, timestamp, open transaction) in the same order, ongoing and unreplicated
transactions, every transaction with its outcome and the LSO at its marker, the .txnindex
entries, the audit events, the snapshot checkpoints, and the LSO.

Histories are the model checks' interleaved transactions (tests/semantics/test_read_committed.py)
with anomalies added: sequence gaps, duplicates, epoch bumps, zombies, markers without data,
unknown and cleaner-emptied control batches, fenced coordinators, non-transactional writes inside
a transaction, sequence wrap, offsets going back, legacy and producer-less batches; split into
segments, replayed from a loaded snapshot and a start offset (as a restarting broker), for a data
topic and for ``__consumer_offsets`` (COORDINATOR audit).

CI runs a modest derandomised sample; ``KAFKATX_HYPOTHESIS_PROFILE=soak`` runs thousands.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkatx.analysis.replay import PartitionReplayer, run_columns
from kafkatx.analysis.replay_result import ReplayResult
from kafkatx.analysis.stable_offsets import stable_offsets
from kafkatx.formats.batchscan import HeaderColumns
from kafkatx.formats.primitives import INT32_MAX
from kafkatx.formats.record_batch import ControlType
from kafkatx.formats.segment_scan import SegmentScan
from kafkatx.semantics.producer_state import ProducerStateManager
from kafkatx.semantics.producer_state_columnar import plan_run

settings.register_profile("columnar-ci", max_examples=250, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("soak", max_examples=5000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
PROFILE = os.environ.get("KAFKATX_HYPOTHESIS_PROFILE", "columnar-ci")

T0 = 1_763_700_000_000
TXN = 0x10
CONTROL = 0x20
COMMON = ["data"] * 8 + ["commit"] * 3 + ["abort", "idempotent", "plain"]
ANOMALIES = ["gap", "duplicate", "rewind", "bump", "zombie", "lone_marker", "odd_control",
             "emptied_marker", "fenced", "nontxn_in_txn", "wrap", "no_sequence", "legacy",
             "offset_back", "no_ts"]


@dataclass
class History:
    """Rows of batch-header columns in log order, and how the producers stand."""

    rows: list[dict[str, int]] = field(default_factory=list)
    offset: int = 0
    clock: int = T0
    epoch: dict[int, int] = field(default_factory=dict)
    seq: dict[int, int] = field(default_factory=dict)
    coordinator: dict[int, int] = field(default_factory=dict)
    last_batch: dict[int, tuple[int, int]] = field(default_factory=dict)
    open: set[int] = field(default_factory=set)  # producers with a transaction open

    def add(self, *, pid: int = -1, epoch: int = -1, seq: int = -1, n: int = 1,
            attributes: int = 0, control_type: int = -1, coordinator_epoch: int = -1,
            count: int | None = None, magic: int = 2, ts: int | None = None) -> None:
        self.clock += 7
        seq = seq % (INT32_MAX + 1) if seq >= 0 else seq
        self.rows.append({
            "base_offset": self.offset, "last_offset_delta": n - 1, "producer_id": pid,
            "producer_epoch": epoch, "base_sequence": seq, "attributes": attributes,
            "records_count": n if count is None else count, "magic": magic,
            "max_timestamp": self.clock if ts is None else ts,
            "control_type": control_type, "coordinator_epoch": coordinator_epoch})
        self.offset += n

    def data(self, pid: int, n: int, *, txn: bool = True, seq: int | None = None,
             epoch: int | None = None) -> None:
        e = self.epoch.setdefault(pid, 0) if epoch is None else epoch
        s = (self.seq.get(pid, 0) if seq is None else seq) % (INT32_MAX + 1)
        self.add(pid=pid, epoch=e, seq=s, n=n, attributes=TXN if txn else 0)
        self.last_batch[pid] = (s, n)
        if txn:
            self.open.add(pid)
        if epoch is None:
            self.seq[pid] = (s + n) % (INT32_MAX + 1)

    def marker(self, pid: int, commit: bool, *, epoch: int | None = None,
               coordinator_epoch: int | None = None, control_type: int | None = None,
               count: int = 1) -> None:
        c = self.coordinator.setdefault(pid, 0) if coordinator_epoch is None \
            else coordinator_epoch
        ctype = (ControlType.COMMIT if commit else ControlType.ABORT) if control_type is None \
            else control_type
        self.add(pid=pid, epoch=self.epoch.setdefault(pid, 0) if epoch is None else epoch,
                 attributes=TXN | CONTROL, control_type=ctype, coordinator_epoch=c, count=count)
        self.open.discard(pid)


@st.composite
def histories(draw: st.DrawFn) -> History:
    h = History()
    pids = draw(st.lists(st.integers(0, 2**40), min_size=1, max_size=5, unique=True))
    # A history breaks the rules in one to three ways, each now and then: most producers stay
    # in the common case, so each anomaly is seen beside clean runs.
    allowed = draw(st.lists(st.sampled_from(ANOMALIES), max_size=3, unique=True))
    kinds = COMMON + allowed * 2
    rng = draw(st.randoms(use_true_random=False))
    steps = [(rng.choice(kinds), rng.randrange(5), rng.randint(1, 3), rng.randrange(4))
             for _ in range(rng.randint(1, 150))]
    for action, who, n, variant in steps:
        pid = pids[who % len(pids)]
        if action == "data" or (action in ("commit", "abort") and pid not in h.open):
            h.data(pid, n)
        elif action in ("commit", "abort"):
            h.marker(pid, action == "commit")
            h.coordinator[pid] = h.coordinator.get(pid, 0) + (variant == 3)
        elif action == "plain":
            h.add(n=n)
        elif action == "idempotent":
            h.data(pid + 1, n, txn=False)  # an idempotent-only producer beside each one
        elif action == "gap":
            h.data(pid, n, seq=h.seq.get(pid, 0) + 1 + variant)
        elif action == "duplicate" and pid in h.last_batch:
            s, m = h.last_batch[pid]
            h.add(pid=pid, epoch=h.epoch.get(pid, 0), seq=s, n=m, attributes=TXN)
        elif action == "rewind":  # a producer resending: sequences already written
            h.seq[pid] = max(0, h.seq.get(pid, 0) - 1 - variant)
            h.data(pid, 1)
        elif action == "bump":
            h.epoch[pid] = h.epoch.get(pid, 0) + 1
            h.seq[pid] = 0
            if variant % 2:  # fenced by the coordinator: an ABORT with the new epoch
                h.marker(pid, False)
        elif action == "zombie":
            h.data(pid, 1, epoch=max(h.epoch.get(pid, 0) - 1, 0), seq=variant)
        elif action == "lone_marker":
            h.marker(pid, variant % 2 == 0)
            h.marker(pid, variant % 2 == 1)
        elif action == "odd_control":
            h.marker(pid, True, control_type=[ControlType.LEADER_CHANGE, 9, -1, 3][variant])
        elif action == "emptied_marker":
            h.marker(pid, variant % 2 == 0, count=0)
        elif action == "fenced":
            h.marker(pid, True, coordinator_epoch=h.coordinator.get(pid, 0) - 1 - variant)
        elif action == "nontxn_in_txn":
            h.data(pid, n, txn=False)
        elif action == "wrap":
            h.seq[pid] = INT32_MAX - variant
            h.data(pid, n)
        elif action == "no_sequence":
            h.add(pid=pid, epoch=h.epoch.get(pid, 0), seq=-1, n=n, attributes=TXN)
        elif action == "legacy":
            h.add(n=n, magic=variant % 2)
        elif action == "offset_back":
            h.offset = max(0, h.offset - 1 - variant)
        elif action == "no_ts":
            h.add(pid=pid, epoch=h.epoch.get(pid, 0), seq=h.seq.get(pid, 0), n=1,
                  attributes=TXN, ts=-1)
            h.seq[pid] = h.seq.get(pid, 0) + 1
    return h


def scan_of(rows: list[dict[str, int]], path: str) -> SegmentScan:
    empty = HeaderColumns.empty()
    n = len(rows)

    def col(name: str, default: int = 0) -> np.ndarray:
        return np.array([r.get(name, default) for r in rows],
                        dtype=getattr(empty, name).dtype)

    cols = {name: col(name) for name in ("base_offset", "last_offset_delta", "producer_id",
                                          "producer_epoch", "base_sequence", "attributes",
                                          "records_count", "magic", "max_timestamp")}
    cols["base_timestamp"] = cols["max_timestamp"].copy()
    cols["position"] = np.arange(n, dtype=np.int64) * 100
    cols["batch_length"] = np.full(n, 88, dtype=np.int32)
    cols["partition_leader_epoch"] = np.zeros(n, dtype=np.int32)
    cols["crc"] = np.zeros(n, dtype=np.uint32)
    cols["crc_valid"] = np.ones(n, dtype=bool)
    return SegmentScan(path=path, headers=HeaderColumns(**cols),
                       control_type=np.array([r["control_type"] for r in rows], dtype=np.int16),
                       coordinator_epoch=np.array([r["coordinator_epoch"] for r in rows],
                                                  dtype=np.int32),
                       problems=(), size=n * 100)


def segments_of(h: History, cuts: list[int]) -> list[SegmentScan]:
    bounds = sorted({0, len(h.rows), *(c % (len(h.rows) + 1) for c in cuts)})
    return [scan_of(h.rows[a:b], f"{i:020d}.log")
            for i, (a, b) in enumerate(itertools.pairwise(bounds))]


def entries_view(psm: ProducerStateManager) -> list[tuple[object, ...]]:
    return [(pid, e.producer_epoch, e.coordinator_epoch, e.last_timestamp,
             e.current_txn_first_offset, list(e.batch_metadata))
            for pid, e in psm.producers.items()]


def txns_view(m: object) -> list[tuple[int, int, int | None]]:
    return [(k, v.producer_id, v.last_offset) for k, v in m.items()]  # type: ignore[attr-defined]


def assert_same(a: ReplayResult, b: ReplayResult) -> None:
    assert a.transactions == b.transactions
    assert a.expected_aborted == b.expected_aborted
    assert a.events == b.events
    assert a.snapshot_states == b.snapshot_states
    assert entries_view(a.state) == entries_view(b.state)
    assert txns_view(a.state.ongoing_txns) == txns_view(b.state.ongoing_txns)
    assert txns_view(a.state.unreplicated_txns) == txns_view(b.state.unreplicated_txns)
    assert a.state.last_map_offset == b.state.last_map_offset
    assert (a.first_offset, a.log_end_offset, a.max_timestamp, a.min_timestamp, a.batches,
            a.data_records) == (b.first_offset, b.log_end_offset, b.max_timestamp,
                                b.min_timestamp, b.batches, b.data_records)


def outcome(segments: list[SegmentScan], **kwargs: object) -> ReplayResult | str:
    """The replay's result, or the error it stops with: offsets going back can give two
    transactions the same first offset, which ``ProducerStateManager#completeTxn`` refuses
    (IllegalArgumentException in Kafka) -- both paths must then stop the same way."""
    try:
        return replay(segments, **kwargs)  # type: ignore[arg-type]
    except ValueError as exc:
        return f"ValueError: {exc}"


def replay(segments: list[SegmentScan], *, columnar: bool, topic: str,
           snapshot_offsets: list[int], start: tuple[list, int] | None,
           run_rows: int = 1 << 20, high_watermark: int | None = None) -> ReplayResult:
    state = None
    start_offset = None
    if start is not None:
        entries, start_offset = start
        state = ProducerStateManager()
        state.load_snapshot(entries, start_offset)
    r = PartitionReplayer(state=state, start_offset=start_offset, topic=topic,
                          snapshot_offsets=snapshot_offsets, columnar=columnar,
                          run_rows=run_rows, high_watermark=high_watermark)
    for s in segments:
        r.feed(s)
    return r.result


@settings(settings.get_profile(PROFILE))
@given(histories(), st.lists(st.integers(0, 200), max_size=3),
       st.lists(st.integers(0, 250), max_size=4), st.integers(-1, 200), st.booleans(),
       st.sampled_from([1 << 20, 1, 2, 7, 40]))
def test_columnar_replay_equals_the_per_batch_core(h: History, cuts: list[int],
                                                   snapshots: list[int], restart_at: int,
                                                   offsets_topic: bool, run_rows: int) -> None:
    """``ProducerStateManager`` rebuilt by ``LogSegment#updateProducerState`` for each batch:
    the columnar path gives the per-batch result exactly, with and without a loaded snapshot,
    planning the whole segment at once or in runs of a few batches."""
    if not h.rows:
        return
    segments = segments_of(h, cuts)
    topic = "__consumer_offsets" if offsets_topic else "orders"
    start = None
    if restart_at >= 0:  # a broker restarting from a snapshot taken mid-log
        prefix = [r for r in h.rows if r["base_offset"] + r["last_offset_delta"] < restart_at]
        before = outcome([scan_of(prefix, "p.log")], columnar=False, topic=topic,
                         snapshot_offsets=[], start=None) if prefix else None
        entries = before.state.snapshot_entries() if isinstance(before, ReplayResult) else []
        start = (entries, restart_at)
    reference = outcome(segments, columnar=False, topic=topic, snapshot_offsets=snapshots,
                        start=start)
    columnar = outcome(segments, columnar=True, topic=topic, snapshot_offsets=snapshots,
                       start=start, run_rows=run_rows)
    if isinstance(reference, str) or isinstance(columnar, str):
        assert columnar == reference
        return
    assert_same(columnar, reference)
    hw = max(reference.log_end_offset - 2, 0)
    assert stable_offsets(columnar.state, columnar.log_end_offset, hw) == \
        stable_offsets(reference.state, reference.log_end_offset, hw)
    # The state told the HW up front forgets the transactions it passes as it goes
    # (``onHighWatermarkUpdated``): every transaction, entry and the LSO stay the same.
    settled = outcome(segments, columnar=True, topic=topic, snapshot_offsets=snapshots,
                      start=start, run_rows=run_rows, high_watermark=hw)
    assert isinstance(settled, ReplayResult)
    assert settled.transactions == reference.transactions
    assert settled.expected_aborted == reference.expected_aborted
    assert settled.events == reference.events
    assert stable_offsets(settled.state, settled.log_end_offset, hw) == \
        stable_offsets(reference.state, reference.log_end_offset, hw)


def test_common_case_takes_the_columnar_path() -> None:
    """A clean history of two interleaved transactional producers is replayed without a single
    per-batch append (``ProducerAppendInfo``) yet gives the per-batch result."""
    h = History()
    for i in range(60):
        h.data(11 + i % 2, 1)
        if i % 10 == 9:
            h.marker(11 + i % 2, commit=i % 20 != 19)
    seg = scan_of(h.rows, "0.log")
    plan = plan_run(run_columns(seg), ProducerStateManager(), tracked_open={},
                    check_sequences=True)
    assert len(plan.exact_rows) == 0 and bool(plan.producer_fast.all())
    r = PartitionReplayer()
    r.feed(seg)
    assert_same(r.result, replay([seg], columnar=False, topic="t", snapshot_offsets=[],
                                 start=None))
    assert [t.outcome for t in r.result.transactions].count("aborted") == 3


def test_an_anomaly_sends_only_its_producer_to_the_exact_path() -> None:
    """A zombie write (``ProducerAppendInfo#checkProducerEpoch``) makes its producer's batches
    take the per-batch path; the other producer stays in bulk."""
    h = History()
    for i in range(20):
        h.data(11 + i % 2, 1)
    h.epoch[11] = 1
    h.seq[11] = 0
    h.data(11, 1)
    h.data(11, 1, epoch=0, seq=99)
    seg = scan_of(h.rows, "0.log")
    plan = plan_run(run_columns(seg), ProducerStateManager(), tracked_open={},
                    check_sequences=True)
    exact = {int(seg.headers.producer_id[r]) for r in plan.exact_rows}
    assert exact == {11}
    r = PartitionReplayer()
    r.feed(seg)
    assert_same(r.result, replay([seg], columnar=False, topic="t", snapshot_offsets=[],
                                 start=None))
    assert [e.kind for e in r.result.events] == ["invalid_epoch", "sequence_gap"]


@pytest.mark.parametrize("run_rows", [1, 2, 3, 1 << 20])
def test_offsets_going_back_across_runs(run_rows: int) -> None:
    """Offsets going back give two producers' transactions one first offset; the marker of the
    first then finds the second's entry in ``ongoingTxns``, which
    ``ProducerStateManager#completeTxn`` would refuse. Split into runs of a few batches, the
    bulk path must leave that marker to the event path, as it does within one run."""
    h = History()
    for _ in range(6):
        h.data(0, 1)
    h.offset = 0  # a copy spliced at offset 0
    h.data(1, 1)
    h.offset = 6
    h.marker(0, commit=True)
    h.marker(1, commit=True)
    seg = scan_of(h.rows, "0.log")
    reference = replay([seg], columnar=False, topic="t", snapshot_offsets=[], start=None)
    assert_same(replay([seg], columnar=True, topic="t", snapshot_offsets=[], start=None,
                       run_rows=run_rows), reference)
