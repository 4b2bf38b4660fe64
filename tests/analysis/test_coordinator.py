"""The coordinator view: ``__transaction_state`` partitions written in tmp dirs, replayed back."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.analysis.coordinator import CoordinatorView, read_coordinator
from kafkatx.analysis.findings import ERROR, INFO, KINDS, WARNING, Finding
from kafkatx.formats.transaction_log import (
    TransactionLogValue,
    TransactionState,
    TxnTopicPartitions,
    build_value,
)
from kafkatx.semantics import transaction_states as rules
from kafkatx.semantics.coordinator_partition import java_string_hashcode, partition_for
from kafkatx.semantics.transaction_states import VALID_PREVIOUS_STATES
from kafkatx.storage.segment_writer import PartitionWriter
from tests.analysis.logdirs import txn_state_batch

S = TransactionState
T0 = 1_763_700_000_000
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "logdir"
Parts = dict[str, list[int]]


def v(state: TransactionState, pid: int = 1000, epoch: int = 0, parts: Parts | None = None,
      start: int = -1, t: int = 0, *, version: int = 0, ctv: int = 0, timeout: int = 60_000,
      prev: int = -1, nxt: int = -1) -> TransactionLogValue:
    """A value as the coordinator writes it; ``start``/``t`` in ms after T0 (start -1: none)."""
    if ctv or prev != -1 or nxt != -1:
        version = 1
    return TransactionLogValue(
        version=version, producer_id=pid, producer_epoch=epoch, transaction_timeout_ms=timeout,
        state=int(state),
        partitions=None if parts is None else tuple(
            TxnTopicPartitions(topic=k, partition_ids=tuple(ids)) for k, ids in parts.items()),
        last_update_timestamp_ms=T0 + t, start_timestamp_ms=-1 if start < 0 else T0 + start,
        client_transaction_version=ctv, previous_producer_id=prev, next_producer_id=nxt)


def transaction(pid: int, epoch: int, parts: Parts, t: int, *, commit: bool = True,
                ctv: int = 0, version: int = 0) -> list[TransactionLogValue]:
    """Ongoing, Prepare*, Complete* of one client-ended transaction (v2: epoch + 1 at EndTxn)."""
    end = epoch + 1 if ctv >= 2 else epoch
    prepare = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
    complete = S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT
    kw = {"ctv": ctv, "version": version}
    return [v(S.ONGOING, pid, epoch, parts, t, t, **kw),
            v(prepare, pid, end, parts, t, t + 500, **kw),
            v(complete, pid, end, {}, t, t + 600, **kw)]


@dataclass
class Coordinator:
    """``__transaction_state-N`` dirs under ``root``: one single-record batch per value, as
    ``TransactionStateManager#appendTransactionToLog`` writes them."""

    root: Path
    writers: dict[int, PartitionWriter] = field(default_factory=dict)

    def put(self, tid: str, value: TransactionLogValue | None, *, partition: int | None = None,
            ts: int | None = None, key: bytes | None = None, raw_value: bytes | None = None
            ) -> int:
        p = partition_for(tid) if partition is None else partition
        w = self.writers.get(p)
        if w is None:
            w = self.writers[p] = PartitionWriter(self.root / f"__transaction_state-{p}")
        offset = w.log_end_offset
        if ts is None:
            ts = value.last_update_timestamp_ms if value is not None else T0
        w.append(txn_state_batch(tid, value, offset=offset, timestamp=ts, key=key,
                                 raw_value=raw_value))
        return offset

    def history(self, tid: str, values: list[TransactionLogValue | None]) -> None:
        for value in values:
            self.put(tid, value)

    def view(self, **kw: object) -> CoordinatorView:
        for w in self.writers.values():
            w.close()
        return read_coordinator([self.root], **kw)  # type: ignore[arg-type]


@pytest.fixture
def coord(tmp_path: Path) -> Coordinator:
    return Coordinator(tmp_path / "logdir")


def of_kind(view: CoordinatorView, kind: str) -> list[Finding]:
    return [f for f in view.findings if f.kind == kind]


# ---------------------------------------------------------------------------------------------
# Clean histories


def test_commit_and_abort_histories_are_clean(coord: Coordinator) -> None:
    tid = "orders-writer"
    parts = {"orders": [0, 1], "__consumer_offsets": [7]}
    values = [v(S.EMPTY, 7001, 0, t=0),
              v(S.ONGOING, 7001, 0, {"orders": [0]}, 100, 100),
              *transaction(7001, 0, parts, 100, commit=True)[0:],
              *transaction(7001, 0, {"orders": [1]}, 5_000, commit=False)]
    coord.history(tid, values)
    view = coord.view()
    assert view.findings == []
    h = view.histories[tid]
    assert [r.state_name for r in h.records] == [
        "Empty", "Ongoing", "Ongoing", "PrepareCommit", "CompleteCommit",
        "Ongoing", "PrepareAbort", "CompleteAbort"]
    assert [r.offset for r in h.records] == list(range(8))
    assert h.current == values[-1] and h.coordinator_partition == partition_for(tid)
    assert view.producer_ids == {7001: {tid}}
    assert view.partitions_present == {partition_for(tid)}
    assert view.newest_timestamp_ms == T0 + 5_600
    # The record's location is path:position of the record in its segment.
    path, position = h.records[1].location.rsplit(":", 1)  # type: ignore[union-attr]
    assert path.endswith("00000000000000000000.log") and int(position) > 61


def test_timeout_abort_with_epoch_fence(coord: Coordinator) -> None:
    # TransactionCoordinator#abortTimedOutTransactions: prepareFenceProducerEpoch (+1, in memory
    # only), then PrepareAbort and CompleteAbort carry the bumped epoch.
    coord.history("ledger", [v(S.EMPTY, 4003, 7), v(S.ONGOING, 4003, 7, {"p": [0]}, 10, 10),
                             v(S.PREPARE_ABORT, 4003, 8, {"p": [0]}, 10, 70_000),
                             v(S.COMPLETE_ABORT, 4003, 8, {}, 10, 70_050)])
    coord.history("commit-after-fence", [
        v(S.ONGOING, 4004, 3, {"p": [0]}, 10, 10),
        v(S.PREPARE_COMMIT, 4004, 4, {"p": [0]}, 10, 20)])
    view = coord.view()
    assert of_kind(view, "invalid_state_transition") != []
    (f,) = of_kind(view, "invalid_state_transition")
    assert f.transactional_id == "commit-after-fence" and f.level == ERROR
    assert "producer epoch changed from 3 to 4" in f.message and "carries epoch 3" in f.message
    assert view.histories["ledger"].current.producer_epoch == 8  # type: ignore[union-attr]


def test_transactions_v2_history(coord: Coordinator) -> None:
    # KIP-890: v1 values, client transaction version 2, the epoch bumps at every EndTxn, an
    # abort is allowed from Empty/Complete* ("abort when unsure"), and a timeout fences (+1)
    # before the EndTxn bump (+1).
    tid, pid = "tv2-writer", 9100
    values = [v(S.EMPTY, pid, 0, ctv=2, prev=pid),
              *transaction(pid, 0, {"a": [0]}, 1_000, ctv=2),
              *transaction(pid, 1, {"a": [0], "b": [2]}, 2_000, commit=False, ctv=2),
              v(S.PREPARE_ABORT, pid, 3, {}, 3_000, 3_000, ctv=2),
              v(S.COMPLETE_ABORT, pid, 3, {}, 3_000, 3_010, ctv=2),
              v(S.ONGOING, pid, 3, {"a": [1]}, 4_000, 4_000, ctv=2),
              v(S.PREPARE_ABORT, pid, 5, {"a": [1]}, 4_000, 70_000, ctv=2),
              v(S.COMPLETE_ABORT, pid, 5, {}, 4_000, 70_010, ctv=2)]
    coord.history(tid, values)
    view = coord.view()
    assert view.findings == []
    assert [r.value.producer_epoch for r in view.histories[tid].records] == [  # type: ignore
        0, 0, 1, 1, 1, 2, 2, 3, 3, 3, 5, 5]


def test_transactions_v2_producer_id_rotation(coord: Coordinator) -> None:
    # Epoch exhausted at EndTxn: nextProducerId is allocated at Prepare*, Complete* moves to it
    # at epoch 0 (prepareComplete), recording the old id as previous producer id.
    old, new = 500, 501
    coord.history("rotating", [
        v(S.ONGOING, old, 32766, {"a": [0]}, 10, 10, ctv=2, prev=old),
        v(S.PREPARE_COMMIT, old, 32767, {"a": [0]}, 10, 20, ctv=2, prev=old, nxt=new),
        v(S.COMPLETE_COMMIT, new, 0, {}, 10, 30, ctv=2, prev=old)])
    view = coord.view()
    assert view.findings == []
    assert view.producer_ids == {old: {"rotating"}, new: {"rotating"}}
    assert view.histories["rotating"].producer_ids == {old, new}


def test_fixture_coordinator_log_is_clean() -> None:
    view = read_coordinator([FIXTURES])
    assert view.findings == []
    assert view.partitions_present == {9, 15, 39}
    states = {tid: [r.state_name for r in h.records] for tid, h in view.histories.items()}
    assert states == {
        "payments-writer": ["Empty", "Ongoing", "Ongoing", "PrepareCommit", "CompleteCommit"],
        "refunds-writer": ["Empty", "Ongoing", "PrepareAbort", "CompleteAbort"],
        "ledger-writer": ["Empty", "Ongoing", "PrepareAbort", "CompleteAbort"],
    }
    assert view.producer_ids == {4001: {"payments-writer"}, 4002: {"refunds-writer"},
                                 4003: {"ledger-writer"}}
    assert all(view.covers(tid) for tid in states)
    assert not view.covers("TesttranId")  # partition 48 was not copied
    assert view.to_dict()["histories"][0]["transactional_id"] == "ledger-writer"


# ---------------------------------------------------------------------------------------------
# Broken rules


def test_illegal_transition_reads_like_a_compiler_diagnostic(coord: Coordinator) -> None:
    coord.history("broken", [v(S.ONGOING, 42, 1, {"t": [0]}, 5, 5),
                             v(S.PREPARE_COMMIT, 42, 1, {"t": [0]}, 5, 6)])
    offset = coord.put("broken", v(S.COMPLETE_ABORT, 42, 1, {}, 5, 7))
    view = coord.view()
    (f,) = view.findings
    assert f.kind == "invalid_state_transition" and f.level == ERROR
    assert f.message.startswith(
        "transactional id broken: illegal state change from PrepareCommit to CompleteAbort")
    assert f.offset == offset == 2 and (f.producer_id, f.producer_epoch) == (42, 1)
    assert f.location == view.histories["broken"].records[-1].location
    assert f.topic == "__transaction_state" and f.partition == partition_for("broken")


def test_epoch_rules_of_complete_transition_to(coord: Coordinator) -> None:
    coord.history("down", [v(S.ONGOING, 1, 5, {"t": [0]}, 1, 1),
                           v(S.PREPARE_COMMIT, 1, 3, {"t": [0]}, 1, 2)])
    coord.history("pid-swap", [v(S.ONGOING, 1, 5, {"t": [0]}, 1, 1),
                               v(S.ONGOING, 2, 5, {"t": [0]}, 1, 2)])
    coord.history("init-jump", [v(S.COMPLETE_COMMIT, 3, 5, {}, 1, 1),
                                v(S.EMPTY, 3, 9, t=2)])
    coord.history("init-rotation", [v(S.COMPLETE_COMMIT, 4, 32766, {}, 1, 1),
                                    v(S.EMPTY, 44, 0, t=2)])
    coord.history("dropped", [v(S.ONGOING, 5, 0, {"t": [0, 1]}, 1, 1),
                              v(S.ONGOING, 5, 0, {"t": [1]}, 1, 2)])
    coord.history("timeout", [v(S.ONGOING, 6, 0, {"t": [0]}, 1, 1),
                              v(S.PREPARE_COMMIT, 6, 0, {"t": [0]}, 1, 2, timeout=900_000)])
    view = coord.view()
    by_id = {f.transactional_id: f for f in of_kind(view, "invalid_state_transition")}
    assert set(by_id) == {"down", "pid-swap", "init-jump", "dropped", "timeout"}
    assert "producer epoch went down from 5 to 3 without a new producer id" in by_id["down"].message
    assert "producer id changed from 1 to 2" in by_id["pid-swap"].message
    assert "changed from 5 to 9" in by_id["init-jump"].message
    assert "t-0 dropped" in by_id["dropped"].message
    assert "transaction timeout changed from 60000 ms to 900000 ms" in by_id["timeout"].message
    assert all(f.level == ERROR for f in by_id.values())


def test_tv2_only_transition(coord: Coordinator) -> None:
    coord.history("v0-unsure", [v(S.COMPLETE_COMMIT, 1, 2, {}, 1, 1),
                                v(S.PREPARE_ABORT, 1, 2, {}, 1, 2)])
    coord.history("tv1-unsure", [v(S.EMPTY, 2, 0, t=1, ctv=1),
                                 v(S.PREPARE_ABORT, 2, 0, {}, 2, 2, ctv=1)])
    view = coord.view()
    by_id = {f.transactional_id: f for f in of_kind(view, "invalid_state_transition")}
    assert by_id["v0-unsure"].level == WARNING
    assert "valid only under transactions v2" in by_id["v0-unsure"].message
    assert by_id["tv1-unsure"].level == ERROR
    assert "illegal state change from Empty to PrepareAbort: valid only under transactions v2" \
        in by_id["tv1-unsure"].message


def test_written_twice_is_a_warning(coord: Coordinator) -> None:
    done = v(S.COMPLETE_COMMIT, 8, 1, {}, 1, 2)
    coord.history("retried", [v(S.PREPARE_COMMIT, 8, 1, {"t": [0]}, 1, 1), done, done])
    (f,) = coord.view().findings
    assert f.kind == "invalid_state_transition" and f.level == WARNING
    assert "CompleteCommit written twice" in f.message


def test_stuck_prepare(coord: Coordinator) -> None:
    coord.history("stuck", [v(S.ONGOING, 11, 0, {"t": [0, 1]}, 0, 0),
                            v(S.PREPARE_COMMIT, 11, 0, {"t": [0, 1]}, 0, 1_000)])
    coord.put("other", v(S.EMPTY, 12, 0, t=301_000))
    view = coord.view()
    (f,) = of_kind(view, "stuck_prepare")
    assert f.level == WARNING and f.offset == 1 and f.transactional_id == "stuck"
    assert "last state is PrepareCommit (11/0)" in f.message
    assert "5m00s before the newest record in the coordinator log" in f.message
    assert "never wrote CompleteCommit" in f.message and "t-0, t-1" in f.message
    assert f.remediation and "__transaction_state-" in f.remediation
    later = read_coordinator([coord.root], now_ms=T0 + 7_201_000)
    (f,) = of_kind(later, "stuck_prepare")
    assert "2h00m before now" in f.message


def test_tombstone_removes_the_id_but_keeps_its_history(coord: Coordinator) -> None:
    coord.history("expired", [v(S.EMPTY, 21, 0), *transaction(21, 0, {"t": [0]}, 10), None])
    coord.history("reborn", [v(S.COMPLETE_ABORT, 22, 4, {}, 1, 1), None, v(S.EMPTY, 23, 0, t=5)])
    coord.history("bad-expiry", [v(S.ONGOING, 24, 0, {"t": [0]}, 1, 1), None])
    coord.history("bad-rebirth", [v(S.EMPTY, 25, 0), None, v(S.ONGOING, 26, 0, {"t": [0]}, 3, 3)])
    view = coord.view()
    expired = view.histories["expired"]
    assert expired.current is None and expired.is_expired and len(expired.records) == 5
    assert expired.records[-1].to_dict()["value"] is None
    assert view.histories["reborn"].current.producer_id == 23  # type: ignore[union-attr]
    assert view.producer_ids[21] == {"expired"}  # the join still works after expiry
    by_id = {f.transactional_id: f for f in of_kind(view, "invalid_state_transition")}
    assert set(by_id) == {"bad-expiry", "bad-rebirth"}
    assert "tombstone (id expired) after Ongoing" in by_id["bad-expiry"].message
    assert "illegal state change from (expired) to Ongoing" in by_id["bad-rebirth"].message
    assert of_kind(view, "stuck_prepare") == []


def test_epoch_exhaustion_risk(coord: Coordinator) -> None:
    coord.put("old-style", v(S.EMPTY, 31, 32700))
    coord.put("tv2", v(S.COMPLETE_COMMIT, 32, 32760, {}, 1, 1, ctv=2))
    coord.put("fine", v(S.EMPTY, 33, 32666))
    view = coord.view()
    by_id = {f.transactional_id: f for f in of_kind(view, "epoch_exhaustion_risk")}
    assert set(by_id) == {"old-style", "tv2"}
    assert by_id["old-style"].level == WARNING
    assert "at epoch 32700, 66 below 32766" in by_id["old-style"].message
    assert "next InitProducerId" in by_id["old-style"].message
    assert by_id["tv2"].level == INFO and "next EndTxn" in by_id["tv2"].message


def test_wrong_coordinator_partition(coord: Coordinator) -> None:
    assert partition_for("TesttranId") == 48
    coord.put("TesttranId", v(S.EMPTY, 41, 0), partition=3)
    coord.put("TesttranId", v(S.EMPTY, 41, 1), partition=3)
    coord.put("far-away", v(S.EMPTY, 42, 0), partition=60)
    view = coord.view(num_partitions=50)
    found = of_kind(view, "wrong_coordinator_partition")
    assert len(found) == 2  # one per id and partition, not per record
    by_id = {f.transactional_id: f for f in found}
    msg = by_id["TesttranId"].message
    assert "__transaction_state-3, but partitionFor picks partition 48 of 50" in msg
    assert f"Java hashCode {java_string_hashcode('TesttranId')}" in msg
    assert "another partition count" in msg and "misplaced" in msg
    assert "--transaction-state-partitions" in msg
    assert "has more than 50 partitions" in by_id["far-away"].message
    assert view.histories["TesttranId"].coordinator_partition == 3
    assert not view.covers("TesttranId")
    assert of_kind(read_coordinator([coord.root], num_partitions=61),
                   "wrong_coordinator_partition") != []


def test_wrong_partition_count_is_recognised(coord: Coordinator) -> None:
    """``TransactionStateManager#partitionFor`` with transaction.state.log.num.partitions = 10,
    read with 50 given: every misplaced id agrees with 10."""
    ids = [f"app-{i}" for i in range(30)]
    for i, tid in enumerate(ids):
        coord.put(tid, v(S.EMPTY, 100 + i, 0), partition=partition_for(tid, 10))
    view = coord.view(num_partitions=50)
    found = of_kind(view, "wrong_coordinator_partition")
    assert found and all("agrees with a partition count of 10" in f.message for f in found)
    assert of_kind(read_coordinator([coord.root], num_partitions=10),
                   "wrong_coordinator_partition") == []


def test_garbled_records_become_findings(coord: Coordinator) -> None:
    tid = "survivor"
    coord.put(tid, v(S.ONGOING, 51, 0, {"t": [0]}, 1, 1))
    p = partition_for(tid)
    coord.put(tid, None, raw_value=b"\x00\x00\x00\x00\x00")  # value cut short
    coord.put("x", None, partition=p, key=b"\x00\x00\x00\x09ab")  # key string cut short
    coord.put("x", None, partition=p, key=b"\x00\x07whatever")  # a key version Kafka skips
    coord.put(tid, None, raw_value=b"\x00\x05" + b"\x00" * 40)  # unknown value version
    bad_state = build_value(v(S.ONGOING, 51, 0, {"t": [0]}, 1, 2))
    bad_state = bad_state[:2 + 8 + 2 + 4] + b"\x09" + bad_state[2 + 8 + 2 + 4 + 1:]
    coord.put("y", None, partition=p, raw_value=bad_state)  # state id 9
    coord.put(tid, v(S.COMPLETE_ABORT, 51, 0, {}, 1, 4))  # illegal, but after damage
    view = coord.view()
    bad = of_kind(view, "invalid_coordinator_record")
    messages = " | ".join(f.message for f in bad)
    assert len(bad) == 5, messages
    assert "value at offset 1 does not decode" in messages
    assert "record at offset 2: key does not decode" in messages
    assert "key version 7, unknown to Kafka; its loader skips it" in messages
    assert "value version 5 at offset 4 is unknown" in messages
    assert "unknown transaction state id 9" in messages
    assert {f.level for f in bad if "key version 7" in f.message} == {WARNING}
    assert all(f.location and f.location.rsplit(":", 1)[1].isdigit() for f in bad)
    assert [r.offset for r in view.histories[tid].records] == [0, 6]
    assert [r.offset for r in view.histories["y"].records] == [5]  # kept, unknown state
    (f,) = of_kind(view, "invalid_state_transition")
    assert f.level == WARNING and "a record in between may be lost" in f.message
    assert "illegal state change from Ongoing to CompleteAbort" in f.message


def test_segment_damage_is_reported_and_survived(coord: Coordinator) -> None:
    coord.history("d", [v(S.EMPTY, 61, 0), v(S.ONGOING, 61, 0, {"t": [0]}, 1, 1)])
    view = coord.view()
    log = next(Path(view.sources[partition_for("d")]).glob("*.log"))
    data = bytearray(log.read_bytes())
    data[-3] ^= 0xFF  # inside the last record: CRC mismatch, still decodes
    log.write_bytes(bytes(data) + b"\x00" * 30)
    damaged = read_coordinator([coord.root])
    kinds = sorted(f.kind for f in damaged.findings)
    assert kinds == ["crc_mismatch", "zero_padding"]
    assert len(damaged.histories["d"].records) == 2
    quiet = read_coordinator([coord.root], include_segment_damage=False)
    assert quiet.findings == []


def test_replica_copies_are_read_once(tmp_path: Path) -> None:
    for broker in ("broker-1", "broker-2"):
        c = Coordinator(tmp_path / broker)
        c.history("dup", [v(S.EMPTY, 71, 0)] + ([v(S.EMPTY, 71, 1)] if broker == "broker-2"
                                               else []))
        for w in c.writers.values():
            w.close()
    view = read_coordinator([tmp_path])
    assert len(view.histories["dup"].records) == 2  # broker-2's, the larger copy
    assert "broker-2" in view.sources[partition_for("dup")]
    assert len(view.problems) == 1 and "2 copies (replicas)" in view.problems[0]


def test_every_new_kind_is_registered() -> None:
    for kind in ("invalid_state_transition", "invalid_coordinator_record", "stuck_prepare",
                 "epoch_exhaustion_risk", "wrong_coordinator_partition"):
        assert kind in KINDS


# ---------------------------------------------------------------------------------------------
# The rules on their own


def test_prepare_epochs() -> None:
    ongoing = v(S.ONGOING, 1, 10, {"t": [0]}, 1, 1)
    assert rules.prepare_epochs(ongoing, v(S.PREPARE_COMMIT, 1, 10)) == {10}
    assert rules.prepare_epochs(ongoing, v(S.PREPARE_ABORT, 1, 10)) == {10, 11}
    assert rules.prepare_epochs(ongoing, v(S.PREPARE_COMMIT, 1, 11, ctv=2)) == {11}
    assert rules.prepare_epochs(ongoing, v(S.PREPARE_ABORT, 1, 11, ctv=2)) == {11, 12}
    top = v(S.ONGOING, 1, 32767, {"t": [0]}, 1, 1)
    assert rules.prepare_epochs(top, v(S.PREPARE_ABORT, 1, 32767, ctv=2)) == {32767}
    assert rules.prepare_epochs(top, v(S.PREPARE_ABORT, 1, 32767)) == {32767}
    done = v(S.COMPLETE_ABORT, 1, 10, {}, 1, 1, ctv=2)
    assert rules.prepare_epochs(done, v(S.PREPARE_ABORT, 1, 11, ctv=2)) == {11}


def test_check_value() -> None:
    assert rules.check_value(v(S.EMPTY)) == []
    rules_broken = {p.rule for p in rules.check_value(v(S.EMPTY, parts={"t": [0]}, start=5))}
    assert rules_broken == {"partitions", "start_timestamp"}
    assert [p.rule for p in rules.check_value(v(S.DEAD, 1, -1))] == ["in_memory_state"]
    assert {p.rule for p in rules.check_value(v(S.ONGOING, -1, -1, None, 1))} == {
        "producer_id", "epoch", "partitions"}
    assert [p.rule for p in rules.check_value(v(S.COMPLETE_COMMIT, parts={}))] == [
        "start_timestamp"]


def test_previous_producer_id_consistency() -> None:
    old = v(S.ONGOING, 5, 0, {"t": [0]}, 1, 1, ctv=2, prev=5)
    good = v(S.PREPARE_COMMIT, 5, 1, {"t": [0]}, 1, 2, ctv=2, prev=5)
    bad = v(S.PREPARE_COMMIT, 5, 1, {"t": [0]}, 1, 2, ctv=2, prev=77)
    assert rules.check_transition(old, good) == []
    (p,) = rules.check_transition(old, bad)
    assert p.rule == "previous_producer_id" and p.severity == rules.WARNING


# ---------------------------------------------------------------------------------------------
# Random histories made by a model of the coordinator's operations


@dataclass
class _Model:
    """Operations of TransactionCoordinator on one id, producing the values it would write."""

    tv: int
    pid: int = 3000
    epoch: int = 0
    state: TransactionState = S.EMPTY
    parts: frozenset[int] = frozenset()
    start: int = -1
    t: int = 0
    out: list[TransactionLogValue] = field(default_factory=list)

    def write(self) -> None:
        self.t += 10
        parts = None if self.state is S.EMPTY else {"t": sorted(self.parts)}
        self.out.append(v(self.state, self.pid, self.epoch, parts, self.start, self.t,
                          ctv=self.tv, version=1 if self.tv else 0))

    def init(self) -> None:
        if self.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            self.epoch += 1
            self.state, self.parts, self.start = S.EMPTY, frozenset(), -1
            self.write()

    def add(self, p: int) -> None:
        if self.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT, S.ONGOING):
            if self.state is not S.ONGOING:
                self.start, self.parts = self.t + 10, frozenset()
            self.state, self.parts = S.ONGOING, self.parts | {p}
            self.write()

    def end(self, commit: bool, fenced: bool = False) -> None:
        unsure = self.tv >= 2 and not commit and self.state in (S.EMPTY, S.COMPLETE_ABORT,
                                                                S.COMPLETE_COMMIT)
        if self.state is not S.ONGOING and not unsure:
            return
        if fenced and self.state is S.ONGOING:
            commit = False
            self.epoch += 1
        if unsure:
            self.start = self.t + 10
        if self.tv >= 2:
            self.epoch += 1
        self.state = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
        self.write()
        self.state = S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT
        self.parts = frozenset()
        self.write()


_OPS = st.lists(st.one_of(st.just(("init",)), st.tuples(st.just("add"), st.integers(0, 3)),
                          st.tuples(st.just("end"), st.booleans(), st.booleans())),
                min_size=1, max_size=25)


def _run(tv: int, ops: list[tuple]) -> list[TransactionLogValue]:
    m = _Model(tv=tv)
    m.write()
    for op in ops:
        getattr(m, op[0])(*op[1:])
    return m.out


@settings(max_examples=60, deadline=None)
@given(tv=st.sampled_from([0, 1, 2]), ops=_OPS, data=st.data())
def test_model_histories_pass_and_broken_states_are_caught(
        tv: int, ops: list[tuple], data: st.DataObject) -> None:
    values = _run(tv, ops)
    for old, new in itertools.pairwise(values):
        assert rules.check_transition(old, new) == [], (old, new)
        assert rules.check_value(new) == []
    if len(values) < 2:
        return
    i = data.draw(st.integers(1, len(values) - 1))
    old, new = values[i - 1], values[i]
    before = old.transaction_state
    wrong = [s for s in S if s not in rules.IN_MEMORY_ONLY
             and before not in VALID_PREVIOUS_STATES[s] and s is not before]
    state = data.draw(st.sampled_from(wrong))
    mutated = TransactionLogValue(**{**{f: getattr(new, f) for f in new.__slots__},
                                     "state": int(state)})
    assert any(p.rule in ("state", "tv2_only") for p in rules.check_transition(old, mutated))


def test_many_replicated_partitions_are_one_note(tmp_path: Path) -> None:
    """Several brokers' log dirs hold copies of most coordinator partitions: one note for them
    all, not one per partition (the replica comparison is where copies are compared)."""
    ids = [f"t{i}" for i in range(40)]
    for broker in ("broker-1", "broker-2"):
        c = Coordinator(tmp_path / broker)
        for tid in ids:
            c.history(tid, [v(S.EMPTY, 71, 0)])
        for w in c.writers.values():
            w.close()
    view = read_coordinator([tmp_path])
    partitions = {partition_for(t) for t in ids}
    assert len(partitions) > 3
    assert view.problems == [f"__transaction_state: {len(partitions)} partitions have copies of "
                             "several brokers (replicas); the copy of the newest leader epoch of "
                             "each was read (inspect's replicas table compares the copies)"]
    assert sorted(view.histories) == sorted(ids)
