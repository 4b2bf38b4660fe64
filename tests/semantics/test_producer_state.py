"""Kafka's producer-state rules, case by case (cases after ProducerStateManagerTest's)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.semantics.producer_state import (
    INT32_MAX,
    AppendOrigin,
    CompletedTxn,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    ProducerStateEntry,
    ProducerStateManager,
    TransactionCoordinatorFencedError,
    Violation,
    decrement_sequence,
    increment_sequence,
    last_stable_offset,
)

TS = 1_700_000_000_000
PID = 1000


def append(psm: ProducerStateManager, *, epoch: int, first_seq: int, n: int, offset: int,
           txn: bool = False, origin: AppendOrigin = AppendOrigin.CLIENT,
           audit: list[Violation] | None = None) -> None:
    info = psm.prepare_update(PID, origin, audit=None if audit is None else audit.append)
    info.append_data_batch(epoch, first_seq, increment_sequence(first_seq, n - 1), TS + offset,
                           offset, offset + n - 1, txn)
    psm.update(info)


def marker(psm: ProducerStateManager, *, epoch: int, offset: int, commit: bool = True,
           coordinator_epoch: int = 0, tv: int = 0, pid: int = PID,
           origin: AppendOrigin = AppendOrigin.COORDINATOR) -> CompletedTxn | None:
    info = psm.prepare_update(pid, origin)
    done = info.append_end_txn_marker(is_commit=commit, coordinator_epoch=coordinator_epoch,
                                      producer_epoch=epoch, offset=offset, timestamp=TS + offset,
                                      transaction_version=tv)
    psm.update(info)
    return done


def test_in_sequence_appends_are_accepted() -> None:
    psm = ProducerStateManager()
    append(psm, epoch=0, first_seq=0, n=3, offset=0)
    append(psm, epoch=0, first_seq=3, n=2, offset=3)
    entry = psm.last_entry(PID)
    assert entry is not None
    assert (entry.first_seq, entry.last_seq, entry.last_data_offset) == (0, 4, 4)


def test_sequence_gap_is_out_of_order_for_clients() -> None:
    psm = ProducerStateManager()
    append(psm, epoch=0, first_seq=0, n=3, offset=0)
    with pytest.raises(OutOfOrderSequenceError):
        append(psm, epoch=0, first_seq=5, n=1, offset=3)


def test_replication_accepts_the_gap_but_the_audit_sees_it() -> None:
    psm = ProducerStateManager()
    seen: list[Violation] = []
    append(psm, epoch=0, first_seq=0, n=3, offset=0, origin=AppendOrigin.REPLICATION, audit=seen)
    append(psm, epoch=0, first_seq=5, n=1, offset=3, origin=AppendOrigin.REPLICATION, audit=seen)
    assert [v.kind for v in seen] == ["sequence_gap"] and seen[0].offset == 3
    assert psm.last_entry(PID).last_seq == 5  # type: ignore[union-attr]


def test_sequence_wraps_from_int_max_to_zero() -> None:
    psm = ProducerStateManager()
    append(psm, epoch=0, first_seq=INT32_MAX - 1, n=2, offset=0)
    append(psm, epoch=0, first_seq=0, n=1, offset=2)
    assert psm.last_entry(PID).last_seq == 0  # type: ignore[union-attr]
    assert increment_sequence(INT32_MAX, 1) == 0 and decrement_sequence(0, 1) == INT32_MAX


def test_new_epoch_must_start_at_zero() -> None:
    psm = ProducerStateManager()
    append(psm, epoch=0, first_seq=0, n=3, offset=0)
    with pytest.raises(OutOfOrderSequenceError):
        append(psm, epoch=1, first_seq=3, n=1, offset=3)
    append(psm, epoch=1, first_seq=0, n=1, offset=3)
    assert psm.last_entry(PID).producer_epoch == 1  # type: ignore[union-attr]


def test_unknown_producer_accepts_any_sequence() -> None:
    psm = ProducerStateManager()
    append(psm, epoch=5, first_seq=42, n=1, offset=0)
    assert psm.last_entry(PID).last_seq == 42  # type: ignore[union-attr]


def test_stale_epoch_is_rejected_for_clients_and_audited_in_replication() -> None:
    psm = ProducerStateManager()
    append(psm, epoch=3, first_seq=0, n=1, offset=0)
    with pytest.raises(InvalidProducerEpochError):
        append(psm, epoch=2, first_seq=1, n=1, offset=1)
    seen: list[Violation] = []
    append(psm, epoch=2, first_seq=0, n=1, offset=1, origin=AppendOrigin.REPLICATION, audit=seen)
    assert [v.kind for v in seen] == ["invalid_epoch"]


def test_non_transactional_write_inside_a_transaction_is_invalid() -> None:
    psm = ProducerStateManager()
    append(psm, epoch=0, first_seq=0, n=1, offset=0, txn=True)
    with pytest.raises(InvalidTxnStateError):
        append(psm, epoch=0, first_seq=1, n=1, offset=1, txn=False,
               origin=AppendOrigin.REPLICATION)


def test_tv2_markers_need_a_bumped_epoch_but_retries_pass() -> None:
    psm = ProducerStateManager()
    append(psm, epoch=4, first_seq=0, n=2, offset=0, txn=True)
    with pytest.raises(InvalidProducerEpochError):
        marker(psm, epoch=4, offset=2, tv=2)
    done = marker(psm, epoch=5, offset=2, tv=2)
    assert done == CompletedTxn(PID, 0, 2, False)
    entry = psm.last_entry(PID)
    assert entry is not None and entry.producer_epoch == 5 and entry.is_empty
    # KAFKA-19999: the same marker again, with no transaction open, is an idempotent retry.
    assert marker(psm, epoch=5, offset=3, tv=2) is None


def test_has_ongoing_transaction_needs_an_open_transaction_at_that_epoch() -> None:
    psm = ProducerStateManager()
    assert not psm.has_ongoing_transaction(PID, 0)
    append(psm, epoch=0, first_seq=0, n=1, offset=0)  # idempotent, no transaction
    assert not psm.has_ongoing_transaction(PID, 0)
    append(psm, epoch=0, first_seq=1, n=1, offset=1, txn=True)
    assert psm.has_ongoing_transaction(PID, 0)
    assert not psm.has_ongoing_transaction(PID, 1)  # another epoch must be verified
    marker(psm, epoch=0, offset=2)
    assert not psm.has_ongoing_transaction(PID, 0)


def test_tv0_marker_with_the_same_epoch_is_fine() -> None:
    psm = ProducerStateManager()
    append(psm, epoch=4, first_seq=0, n=2, offset=0, txn=True)
    assert marker(psm, epoch=4, offset=2, tv=0, commit=False) == CompletedTxn(PID, 0, 2, True)


def test_marker_from_an_older_coordinator_is_fenced() -> None:
    psm = ProducerStateManager()
    append(psm, epoch=0, first_seq=0, n=1, offset=0, txn=True)
    marker(psm, epoch=0, offset=1, coordinator_epoch=7)
    append(psm, epoch=0, first_seq=1, n=1, offset=2, txn=True)
    with pytest.raises(TransactionCoordinatorFencedError):
        marker(psm, epoch=0, offset=3, coordinator_epoch=6)


def test_marker_without_transaction_completes_nothing() -> None:
    psm = ProducerStateManager()
    assert marker(psm, epoch=0, offset=0) is None
    assert psm.first_unstable_offset() is None


def test_lso_is_pinned_by_the_oldest_open_transaction_and_waits_for_the_hw() -> None:
    psm = ProducerStateManager()
    append(psm, epoch=0, first_seq=0, n=2, offset=10, txn=True)
    other = psm.prepare_update(2000, AppendOrigin.CLIENT)
    other.append_data_batch(0, 0, 0, TS, 12, 12, True)
    psm.update(other)
    assert psm.first_unstable_offset() == 10
    done = marker(psm, epoch=0, offset=13)
    assert done is not None
    # The stored LSO of this completion: the other producer's transaction still pins it.
    assert psm.last_stable_offset(done) == 12
    psm.complete_txn(done)
    # Completed but its marker (13) is not below the HW yet: still unstable.
    psm.on_high_watermark_updated(13)
    assert psm.first_unstable_offset() == 10
    psm.on_high_watermark_updated(14)
    assert psm.first_unstable_offset() == 12
    assert last_stable_offset(12, 20) == 12 and last_stable_offset(12, 11) == 11
    assert last_stable_offset(None, 20) == 20


def test_duplicate_window_keeps_five_batches() -> None:
    psm = ProducerStateManager()
    for i in range(7):
        append(psm, epoch=0, first_seq=i, n=1, offset=i)
    entry = psm.last_entry(PID)
    assert entry is not None
    assert entry.find_duplicate_batch(0, 6, 6) is not None
    assert entry.find_duplicate_batch(0, 2, 2) is not None
    assert entry.find_duplicate_batch(0, 1, 1) is None  # evicted
    assert entry.find_duplicate_batch(1, 6, 6) is None  # other epoch


def test_snapshot_entries_round_trip_through_the_manager() -> None:
    psm = ProducerStateManager()
    append(psm, epoch=2, first_seq=0, n=3, offset=5, txn=True)
    entries = psm.snapshot_entries()
    assert entries[0].current_txn_first_offset == 5 and entries[0].last_offset == 7
    again = ProducerStateManager()
    again.load_snapshot(entries, 8)
    assert again.first_unstable_offset() == 5
    assert again.snapshot_entries() == entries
    restored = again.last_entry(PID)
    assert restored is not None and restored.last_seq == 2 and restored.first_seq == 0


def test_expired_producers_are_dropped_on_load_but_not_open_transactions() -> None:
    psm = ProducerStateManager(producer_id_expiration_ms=1000)
    idle = ProducerStateEntry(1, 0, -1, TS).to_snapshot_entry()
    busy = ProducerStateEntry(2, 0, -1, TS, current_txn_first_offset=3).to_snapshot_entry()
    psm.load_snapshot([idle, busy], 10, now_ms=TS + 5000)
    assert sorted(psm.producers) == [2]


@settings(max_examples=200, deadline=None)
@given(st.integers(0, INT32_MAX), st.integers(0, 1000))
def test_increment_and_decrement_are_inverse(seq: int, delta: int) -> None:
    assert decrement_sequence(increment_sequence(seq, delta), delta) == seq
    assert 0 <= increment_sequence(seq, delta) <= INT32_MAX
