"""The transaction coordinator in process: every transition is checked in ``__transaction_state``
and in the markers of the data partitions, as Kafka's ``TransactionCoordinatorTest`` does."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from kafkatx.broker.coordinators.coordinator_log import append, build_batch
from kafkatx.broker.coordinators.txn_coordinator import TransactionCoordinator
from kafkatx.broker.protocol.server import Broker
from kafkatx.formats.transaction_log import (
    TransactionLogKey,
    TransactionLogValue,
    TransactionState,
    build_key,
    build_value,
)
from kafkatx.semantics.transaction_states import check_transition
from tests.broker.inprocess import (
    create_topic,
    markers,
    output,
    produce,
    run_broker,
    states,
    txn_log,
)

TID = "payments-writer"
NONE = ErrorCode.none


def _init(broker: Broker, tid: str = TID, timeout_ms: int = 60_000,
          expected: tuple[int, int] | None = None) -> tuple[ErrorCode, int, int]:
    r = broker.transactions.handle_init_producer_id(tid, timeout_ms, expected)
    return r.error, r.producer_id, r.producer_epoch


def _all_transitions_valid(broker: Broker, tid: str = TID) -> None:
    values = [v for v in txn_log(broker, tid) if v is not None]
    for old, new in itertools.pairwise(values):
        assert [p for p in check_transition(old, new) if p.severity == "error"] == [], (old, new)


def test_init_new_and_existing_id_bumps_epoch(tmp_path: Path) -> None:
    async def body(b: Broker) -> None:
        assert _init(b) == (NONE, 0, 0)
        assert _init(b) == (NONE, 0, 1)
        assert _init(b, timeout_ms=5000) == (NONE, 0, 2)
        assert states(b, TID) == [("Empty", 0, 0), ("Empty", 0, 1), ("Empty", 0, 2)]
        assert txn_log(b, TID)[-1].transaction_timeout_ms == 5000  # type: ignore[union-attr]
        assert b.logs.get("__transaction_state", TransactionCoordinator.partition_for(TID))
        # Only the partition written to exists on disk.
        on_disk = sorted(p.name for p in (tmp_path / "ld").glob("__transaction_state-*"))
        assert on_disk == [f"__transaction_state-{TransactionCoordinator.partition_for(TID)}"]
    run_broker(tmp_path / "ld", body)


def test_invalid_requests(tmp_path: Path) -> None:
    async def body(b: Broker) -> None:
        assert _init(b, "")[0] == ErrorCode.invalid_request
        assert _init(b, timeout_ms=0)[0] == ErrorCode.invalid_transaction_timeout
        assert _init(b, timeout_ms=5001)[0] == ErrorCode.invalid_transaction_timeout
        assert b.transactions.handle_add_partitions("nobody", 1, 0, [("t", 0)]) == \
            ErrorCode.invalid_producer_id_mapping
        assert _init(b, timeout_ms=5000) == (NONE, 0, 0)
        assert b.transactions.handle_add_partitions(TID, 7, 0, [("t", 0)]) == \
            ErrorCode.invalid_producer_id_mapping
        assert b.transactions.handle_add_partitions(TID, 0, 1, [("t", 0)]) == \
            ErrorCode.producer_fenced
        assert b.transactions.handle_end_transaction(TID, 0, 0, True)[0] == \
            ErrorCode.invalid_txn_state  # nothing to commit in Empty
        assert b.transactions.handle_end_transaction("", 0, 0, True)[0] == \
            ErrorCode.invalid_request
    run_broker(tmp_path / "ld", body, transaction_max_timeout_ms=5000)


def test_commit_and_abort_write_markers_and_complete(tmp_path: Path) -> None:
    async def body(b: Broker) -> None:
        create_topic(b, "pay", 2)
        _, pid, epoch = _init(b)
        assert b.transactions.handle_add_partitions(TID, pid, epoch,
                                                    [("pay", 0), ("pay", 1)]) == NONE
        produce(b, "pay", 0, [b"a", b"b"], pid=pid, epoch=epoch, seq=0, txn=True)
        produce(b, "pay", 1, [b"c"], pid=pid, epoch=epoch, seq=0, txn=True)
        log0 = b.logs.get("pay", 0)
        assert log0 is not None and log0.last_stable_offset == 0
        # Transactions v0/v1: the answer carries no producer id (endTransactionWithTV1).
        assert b.transactions.handle_end_transaction(TID, pid, epoch, True) == (NONE, -1, -1)
        assert log0.last_stable_offset == log0.high_watermark == 3
        # A retried commit is answered without a second marker.
        assert b.transactions.handle_end_transaction(TID, pid, epoch, True)[0] == NONE
        assert b.transactions.handle_end_transaction(TID, pid, epoch, False)[0] == \
            ErrorCode.invalid_txn_state
        assert b.transactions.handle_add_partitions(TID, pid, epoch, [("pay", 0)]) == NONE
        produce(b, "pay", 0, [b"x"], pid=pid, epoch=epoch, seq=2, txn=True)
        assert b.transactions.handle_end_transaction(TID, pid, epoch, False)[0] == NONE
        assert markers(log0) == [("COMMIT", 0, 0), ("ABORT", 0, 0)]
        assert markers(b.logs.get("pay", 1)) == [("COMMIT", 0, 0)]  # type: ignore[arg-type]
        assert [e.first_offset for e in log0.segments[-1].aborted] == [3]
        assert states(b, TID) == [
            ("Empty", 0, 0), ("Ongoing", 0, 0), ("PrepareCommit", 0, 0),
            ("CompleteCommit", 0, 0), ("Ongoing", 0, 0), ("PrepareAbort", 0, 0),
            ("CompleteAbort", 0, 0)]
        values = [v for v in txn_log(b, TID) if v is not None]
        assert values[2].partitions_by_topic == {"pay": [0, 1]}
        assert values[3].partitions is not None and values[3].topic_partitions == ()
        _all_transitions_valid(b)
    run_broker(tmp_path / "ld", body)


def test_init_during_ongoing_fences_and_aborts_first(tmp_path: Path) -> None:
    """``prepareFenceProducerEpoch``: InitProducerId during Ongoing aborts with epoch + 1 and
    answers CONCURRENT_TRANSACTIONS; the retry bumps again. The zombie is fenced."""
    async def body(b: Broker) -> None:
        create_topic(b, "pay")
        _, pid, epoch = _init(b)
        b.transactions.handle_add_partitions(TID, pid, epoch, [("pay", 0)])
        produce(b, "pay", 0, [b"open"], pid=pid, epoch=epoch, seq=0, txn=True)
        assert _init(b)[0] == ErrorCode.concurrent_transactions
        assert _init(b) == (NONE, pid, 2)
        log = b.logs.get("pay", 0)
        assert log is not None
        assert markers(log) == [("ABORT", pid, 1)]
        assert log.last_stable_offset == log.high_watermark
        assert states(b, TID)[1:] == [("Ongoing", pid, 0), ("PrepareAbort", pid, 1),
                                      ("CompleteAbort", pid, 1), ("Empty", pid, 2)]
        # The zombie (epoch 0): its EndTxn is fenced, and so is its data.
        assert b.transactions.handle_end_transaction(TID, pid, 0, True)[0] == \
            ErrorCode.producer_fenced
        with pytest.raises(Exception, match="epoch"):
            produce(b, "pay", 0, [b"zombie"], pid=pid, epoch=0, seq=1, txn=True)
        _all_transitions_valid(b)
    run_broker(tmp_path / "ld", body)


def test_kip360_expected_producer_id_and_epoch(tmp_path: Path) -> None:
    async def body(b: Broker) -> None:
        assert _init(b) == (NONE, 0, 0)
        assert _init(b, expected=(0, 0)) == (NONE, 0, 1)
        # A retry of that call (its answer was lost): the last epoch, no new bump.
        assert _init(b, expected=(0, 0)) == (NONE, 0, 1)
        assert _init(b, expected=(99, 0))[0] == ErrorCode.producer_fenced
        assert _init(b) == (NONE, 0, 2)  # a new producer instance: lastProducerEpoch reset
        assert _init(b, expected=(0, 1))[0] == ErrorCode.producer_fenced
        # A brand-new id recovering from UNKNOWN_PRODUCER_ID gets its new producer id.
        assert _init(b, "fresh", expected=(42, 3)) == (NONE, 1, 0)
    run_broker(tmp_path / "ld", body)


def test_exhausted_epoch_rotates_to_a_new_producer_id(tmp_path: Path) -> None:
    key = build_key(TransactionLogKey(transactional_id=TID))
    value = TransactionLogValue(version=0, producer_id=4000, producer_epoch=32766,
                                transaction_timeout_ms=60_000,
                                state=int(TransactionState.COMPLETE_COMMIT), partitions=(),
                                last_update_timestamp_ms=1, start_timestamp_ms=1)

    async def seed(b: Broker) -> None:
        append(b.logs, "__transaction_state", TransactionCoordinator.partition_for(TID),
               build_batch([(key, build_value(value))], 1), 1)
    run_broker(tmp_path / "ld", seed)

    async def body(b: Broker) -> None:
        assert b.transactions.cache[TID].producer_epoch == 32766
        error, pid, epoch = _init(b)
        assert error == NONE and epoch == 0
        assert pid == 5000  # a fresh block above every producer id in the log
        assert states(b, TID)[-1] == ("Empty", 5000, 0)
        _all_transitions_valid(b)
    run_broker(tmp_path / "ld", body)


def test_timed_out_transaction_is_fenced_and_aborted(tmp_path: Path) -> None:
    async def body(b: Broker) -> None:
        create_topic(b, "pay")
        _, pid, epoch = _init(b, timeout_ms=50)
        b.transactions.handle_add_partitions(TID, pid, epoch, [("pay", 0)])
        produce(b, "pay", 0, [b"hanging"], pid=pid, epoch=epoch, seq=0, txn=True)
        log = b.logs.get("pay", 0)
        assert log is not None
        assert b.transactions.abort_timed_out_transactions() == []
        assert log.last_stable_offset == 0
        time.sleep(0.1)
        assert b.transactions.abort_timed_out_transactions() == [TID]
        assert markers(log) == [("ABORT", pid, 1)]
        assert log.last_stable_offset == log.high_watermark == 2
        assert b.transactions.handle_end_transaction(TID, pid, 0, True)[0] == \
            ErrorCode.producer_fenced
        assert "aborted after its timeout of 50 ms" in output(b)
        _all_transitions_valid(b)
    run_broker(tmp_path / "ld", body)


def test_restart_completes_a_transaction_left_in_prepare_commit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    async def crash_after_prepare(b: Broker) -> None:
        create_topic(b, "pay")
        _, pid, epoch = _init(b)
        b.transactions.handle_add_partitions(TID, pid, epoch, [("pay", 0)])
        produce(b, "pay", 0, [b"v"], pid=pid, epoch=epoch, seq=0, txn=True)
        with monkeypatch.context() as m:  # the process dies right after PrepareCommit
            m.setattr(TransactionCoordinator, "_complete", lambda *a, **k: None)
            assert b.transactions.handle_end_transaction(TID, pid, epoch, True)[0] == NONE
        assert states(b, TID)[-1] == ("PrepareCommit", pid, 0)
        assert markers(b.logs.get("pay", 0)) == []  # type: ignore[arg-type]
    run_broker(tmp_path / "ld", crash_after_prepare)

    async def restarted(b: Broker) -> None:
        log = b.logs.get("pay", 0)
        assert log is not None
        assert markers(log) == [("COMMIT", 0, 0)]
        assert states(b, TID)[-2:] == [("PrepareCommit", 0, 0), ("CompleteCommit", 0, 0)]
        assert log.last_stable_offset == log.high_watermark
        assert "completing the PrepareCommit found in the log" in output(b)
        assert _init(b) == (NONE, 0, 1)
    run_broker(tmp_path / "ld", restarted)


def test_restart_keeps_ongoing_transaction_and_ids(tmp_path: Path) -> None:
    async def first(b: Broker) -> None:
        create_topic(b, "pay")
        _, pid, epoch = _init(b, timeout_ms=60_000)
        b.transactions.handle_add_partitions(TID, pid, epoch, [("pay", 0)])
        produce(b, "pay", 0, [b"v"], pid=pid, epoch=epoch, seq=0, txn=True)
    run_broker(tmp_path / "ld", first)

    async def second(b: Broker) -> None:
        md = b.transactions.cache[TID]
        assert (md.state, md.producer_id, md.topic_partitions) == (
            TransactionState.ONGOING, 0, {("pay", 0)})
        assert b.transactions.handle_end_transaction(TID, 0, 0, False)[0] == NONE
        assert markers(b.logs.get("pay", 0)) == [("ABORT", 0, 0)]  # type: ignore[arg-type]
        assert _init(b, "other")[1] == 1000  # ids of the restarted node come from a new block
    run_broker(tmp_path / "ld", second)


def test_expired_transactional_id_gets_a_tombstone(tmp_path: Path) -> None:
    async def body(b: Broker) -> None:
        _init(b)
        b.transactions.id_expiration_ms = 0
        time.sleep(0.002)
        assert b.transactions.remove_expired_transactional_ids() == [TID]
        assert TID not in b.transactions.cache
        assert states(b, TID)[-1] == ("tombstone", -1, -1)
        assert b.transactions.describe(TID)[0] == ErrorCode.transactional_id_not_found
        b.transactions.id_expiration_ms = 10**9
        assert _init(b) == (NONE, 1, 0)  # created again: a new producer id, epoch 0
    run_broker(tmp_path / "ld", body)


def test_describe_and_list(tmp_path: Path) -> None:
    async def body(b: Broker) -> None:
        create_topic(b, "pay", 2)
        _init(b, "a")
        _, pid, epoch = _init(b, "b")
        b.transactions.handle_add_partitions("b", pid, epoch, [("pay", 1), ("pay", 0)])
        error, md = b.transactions.describe("b")
        assert error == NONE and md is not None
        assert (md.state, md.topic_partitions) == (TransactionState.ONGOING,
                                                    {("pay", 0), ("pay", 1)})
        found, unknown = b.transactions.list_transactions(set(), {"Ongoing", "Bogus"})
        assert [m.transactional_id for m in found] == ["b"] and unknown == ["Bogus"]
        found, _ = b.transactions.list_transactions({0}, set())
        assert [m.transactional_id for m in found] == ["a"]
    run_broker(tmp_path / "ld", body)
