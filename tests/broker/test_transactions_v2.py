"""Transactions v2 (KIP-890) in the coordinator, in process: the epoch bump per transaction, the
EndTxn retry table of ``TransactionCoordinator#endTransaction``, epoch overflow to a new
producer id, and single-bump fencing (KAFKA-19367); checked in ``__transaction_state``, in the
markers and with the forensic transition rules."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

from kio.schema.errors import ErrorCode

from kafkatx.broker.coordinators.coordinator_log import append, build_batch
from kafkatx.broker.coordinators.txn_coordinator import TransactionCoordinator
from kafkatx.broker.faults import DelayMarker
from kafkatx.broker.protocol.server import Broker
from kafkatx.formats.transaction_log import (
    TransactionLogKey,
    TransactionLogValue,
    TransactionState,
    build_key,
    build_value,
)
from kafkatx.semantics.transaction_states import check_transition
from tests.broker.inprocess import create_topic, markers, produce, run_broker, states, txn_log

TID = "v2-writer"
NONE = ErrorCode.none
TV2 = 2


def _init(b: Broker, timeout_ms: int = 60_000) -> tuple[ErrorCode, int, int]:
    r = b.transactions.handle_init_producer_id(TID, timeout_ms, None)
    return r.error, r.producer_id, r.producer_epoch


def _end(b: Broker, pid: int, epoch: int, commit: bool) -> tuple[ErrorCode, int, int]:
    return b.transactions.handle_end_transaction(TID, pid, epoch, commit, TV2)


def _add(b: Broker, pid: int, epoch: int, *tps: tuple[str, int]) -> ErrorCode:
    return b.transactions.handle_add_partitions(TID, pid, epoch, tps, TV2)


def _valid_history(b: Broker) -> list[TransactionLogValue]:
    values = [v for v in txn_log(b, TID) if v is not None]
    for old, new in itertools.pairwise(values):
        assert [p for p in check_transition(old, new) if p.severity == "error"] == [], (old, new)
    return values


def test_every_transaction_ends_with_an_epoch_bump(tmp_path: Path) -> None:
    async def body(b: Broker) -> None:
        create_topic(b, "pay", 2)
        _, pid, epoch = _init(b)
        assert epoch == 0
        assert _add(b, pid, 0, ("pay", 0), ("pay", 1)) == NONE
        produce(b, "pay", 0, [b"a"], pid=pid, epoch=0, seq=0, txn=True)
        produce(b, "pay", 1, [b"b"], pid=pid, epoch=0, seq=0, txn=True)
        assert _end(b, pid, 0, commit=True) == (NONE, pid, 1)
        log0 = b.logs.get("pay", 0)
        assert log0 is not None and log0.last_stable_offset == log0.high_watermark == 2
        # A retry (the client never saw the answer) is recognised by the bumped epoch.
        assert _end(b, pid, 0, commit=True) == (NONE, pid, 1)
        assert _end(b, pid, 0, commit=False)[0] == ErrorCode.invalid_txn_state
        assert _end(b, pid, 1, commit=True)[0] == ErrorCode.invalid_txn_state
        # The next transaction runs at the new epoch; its abort bumps again.
        assert _add(b, pid, 1, ("pay", 0)) == NONE
        produce(b, "pay", 0, [b"c"], pid=pid, epoch=1, seq=0, txn=True)
        assert _end(b, pid, 1, commit=False) == (NONE, pid, 2)
        assert markers(log0) == [("COMMIT", pid, 1), ("ABORT", pid, 2)]
        assert [e.first_offset for e in log0.segments[-1].aborted] == [2]
        # An abort from CompleteAbort at the current epoch (the client was unsure whether it
        # had started a transaction) bumps without any marker.
        assert _end(b, pid, 2, commit=False) == (NONE, pid, 3)
        assert markers(log0) == [("COMMIT", pid, 1), ("ABORT", pid, 2)]
        assert _add(b, pid, 2, ("pay", 0)) == ErrorCode.producer_fenced
        assert states(b, TID) == [
            ("Empty", pid, 0), ("Ongoing", pid, 0), ("PrepareCommit", pid, 1),
            ("CompleteCommit", pid, 1), ("Ongoing", pid, 1), ("PrepareAbort", pid, 2),
            ("CompleteAbort", pid, 2), ("PrepareAbort", pid, 3), ("CompleteAbort", pid, 3)]
        values = _valid_history(b)
        assert {v.version for v in values} == {1}  # flexible values at transaction.version 2
        assert [v.client_transaction_version for v in values] == [0] + [2] * 8
    run_broker(tmp_path / "ld", body, transaction_version=2)


def test_exhausted_epoch_moves_to_the_next_producer_id_after_the_markers(
        tmp_path: Path) -> None:
    key = build_key(TransactionLogKey(transactional_id=TID))
    value = TransactionLogValue(version=1, producer_id=4000, producer_epoch=32766,
                                transaction_timeout_ms=60_000,
                                state=int(TransactionState.ONGOING),
                                partitions=None, last_update_timestamp_ms=1, start_timestamp_ms=1,
                                previous_producer_id=4000, client_transaction_version=2)

    async def seed(b: Broker) -> None:
        create_topic(b, "pay")
        append(b.logs, "__transaction_state", TransactionCoordinator.partition_for(TID),
               build_batch([(key, build_value(value))], 1), 1)
    run_broker(tmp_path / "ld", seed, transaction_version=2)

    async def body(b: Broker) -> None:
        md = b.transactions.cache[TID]
        assert (md.producer_id, md.producer_epoch, md.state) == (4000, 32766,
                                                                 TransactionState.ONGOING)
        produce(b, "pay", 0, [b"last"], pid=4000, epoch=32766, seq=0, txn=True)
        assert _add(b, 4000, 32766, ("pay", 0)) == NONE
        error, pid, epoch = _end(b, 4000, 32766, commit=True)
        assert (error, epoch) == (NONE, 0) and pid != 4000
        log = b.logs.get("pay", 0)
        assert log is not None and markers(log) == [("COMMIT", 4000, 32767)]
        assert states(b, TID)[-2:] == [("PrepareCommit", 4000, 32767), ("CompleteCommit", pid, 0)]
        prepare = [v for v in txn_log(b, TID) if v is not None][-2]
        assert prepare.next_producer_id == pid
        # The client retries with the epoch it had: the old id, the epoch before overflow.
        assert _end(b, 4000, 32766, commit=True) == (NONE, pid, 0)
        _valid_history(b)
    run_broker(tmp_path / "ld", body, transaction_version=2)


def test_init_producer_id_fences_an_ongoing_transaction_with_one_bump(tmp_path: Path) -> None:
    """KAFKA-19367: the fence bumps the epoch, the abort it starts does not bump it again."""
    async def body(b: Broker) -> None:
        create_topic(b, "pay")
        _, pid, _ = _init(b)
        assert _add(b, pid, 0, ("pay", 0)) == NONE
        produce(b, "pay", 0, [b"open"], pid=pid, epoch=0, seq=0, txn=True)
        assert _init(b)[0] == ErrorCode.concurrent_transactions
        log = b.logs.get("pay", 0)
        assert log is not None and markers(log) == [("ABORT", pid, 1)]
        assert _init(b) == (NONE, pid, 2)
        assert states(b, TID)[1:] == [("Ongoing", pid, 0), ("PrepareAbort", pid, 1),
                                      ("CompleteAbort", pid, 1), ("Empty", pid, 2)]
        # The zombie's EndTxn at its old epoch is fenced.
        assert _end(b, pid, 0, commit=True)[0] == ErrorCode.producer_fenced
        _valid_history(b)
    run_broker(tmp_path / "ld", body, transaction_version=2)


def test_transaction_version_1_verifies_partitions_without_bumping(tmp_path: Path) -> None:
    async def body(b: Broker) -> None:
        create_topic(b, "pay", 2)
        _, pid, epoch = _init(b)
        tc = b.transactions
        assert tc.handle_add_partitions(TID, pid, epoch, [("pay", 0)]) == NONE
        assert tc.verify_partitions(TID, pid, epoch, [("pay", 0), ("pay", 1)]) == {
            ("pay", 0): NONE, ("pay", 1): ErrorCode.transaction_abortable}
        assert tc.verify_partitions(TID, pid, epoch + 1, [("pay", 0)]) == {
            ("pay", 0): ErrorCode.producer_fenced}
        assert tc.handle_end_transaction(TID, pid, epoch, True) == (NONE, -1, -1)
        values = _valid_history(b)
        assert {v.version for v in values} == {1}
        assert {v.client_transaction_version for v in values} == {0}
    run_broker(tmp_path / "ld", body, transaction_version=1)


def test_pending_transition_answers_concurrent_transactions_before_the_epoch_check(
        tmp_path: Path) -> None:
    """KAFKA-18464 (``TransactionCoordinator#endTransaction``, Kafka 4.0): while the markers of a
    commit are still being written (PrepareCommit with CompleteCommit pending), the client's
    empty abort at the epoch the commit returned is CONCURRENT_TRANSACTIONS, retried once the
    commit completes, where the old order (epoch first) fenced the producer itself. The
    transactions v0/v1 path keeps the epoch check first (``endTransactionWithTV1``)."""
    async def body(b: Broker) -> None:
        create_topic(b, "pay")
        _, pid, _ = _init(b)
        assert _add(b, pid, 0, ("pay", 0)) == NONE
        produce(b, "pay", 0, [b"a"], pid=pid, epoch=0, seq=0, txn=True)
        assert _end(b, pid, 0, commit=True) == (NONE, pid, 1)
        md = b.transactions.cache[TID]
        assert (md.state, md.pending_state) == (TransactionState.PREPARE_COMMIT,
                                                TransactionState.COMPLETE_COMMIT)
        assert _end(b, pid, 1, commit=False)[0] == ErrorCode.concurrent_transactions
        assert _end(b, pid, 7, commit=False)[0] == ErrorCode.concurrent_transactions
        assert _end(b, pid + 1, 1, commit=False)[0] == ErrorCode.invalid_producer_id_mapping
        while md.pending_state is not None:  # the delayed marker, then CompleteCommit
            await asyncio.sleep(0.05)
        assert _end(b, pid, 1, commit=False) == (NONE, pid, 2)
        assert _end(b, pid, 0, commit=False)[0] == ErrorCode.producer_fenced
        _valid_history(b)
    run_broker(tmp_path / "ld", body, transaction_version=2,
               faults=(DelayMarker(topic="pay", partition=0, delay_ms=300),))


def test_transactions_v1_end_txn_checks_the_epoch_before_a_pending_transition(
        tmp_path: Path) -> None:
    """``endTransactionWithTV1`` (KAFKA-18464 left it alone): PRODUCER_FENCED for a wrong epoch
    even while a transition is pending, CONCURRENT_TRANSACTIONS at the right one."""
    async def body(b: Broker) -> None:
        create_topic(b, "pay")
        _, pid, _ = _init(b)
        tc = b.transactions
        assert tc.handle_add_partitions(TID, pid, 0, [("pay", 0)]) == NONE
        produce(b, "pay", 0, [b"a"], pid=pid, epoch=0, seq=0, txn=True)
        assert tc.handle_end_transaction(TID, pid, 0, True)[0] == NONE
        assert tc.cache[TID].pending_state is TransactionState.COMPLETE_COMMIT
        assert tc.handle_end_transaction(TID, pid, 1, False)[0] == ErrorCode.producer_fenced
        assert tc.handle_end_transaction(TID, pid, 0, False)[0] == \
            ErrorCode.concurrent_transactions
    run_broker(tmp_path / "ld", body,
               faults=(DelayMarker(topic="pay", partition=0, delay_ms=300),))
