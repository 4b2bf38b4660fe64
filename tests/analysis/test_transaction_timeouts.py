"""Transaction timeouts judged from the coordinator's timestamps, under transactions v0/v1 and v2.

``TransactionStateManager#timedOutTransactions`` picks an Ongoing transaction once
``txnStartTimestamp + txnTimeoutMs < now``; ``TransactionCoordinator#abortTimedOutTransactions``
fences its epoch (``TransactionMetadata#prepareFenceProducerEpoch``) and aborts it, writing
PrepareAbort with ``txnLastUpdateTimestamp = now``. The epoch bump of that fence differs by
version (v0/v1: +1; v2: +2 before KAFKA-19367, +1 after, the same as a v2 client's own abort),
so kafkatx decides from the timestamps.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkatx.analysis.coordinator import TOPIC as TXN_TOPIC
from tests.analysis.test_timeline import S, Scenario, of_kind, rows_of, v


@pytest.fixture
def sc(tmp_path: Path) -> Scenario:
    return Scenario(tmp_path / "broker")


def abort_story(sc: Scenario, tid: str, pid: int, *, data_epoch: int, marker_epoch: int,
                abort_at: int, ctv: int, timeout: int = 60_000, compacted: bool = False) -> None:
    """One transaction on x-0/x-1 started at 1 s and aborted at ``abort_at`` ms; with
    ``compacted`` the coordinator log keeps only its last two records (``LogCleaner`` keeps the
    newest value per key; Prepare/Complete values still carry ``txnStartTimestamp``)."""
    parts = {"x": [0, 1]}
    values = [v(S.ONGOING, pid, data_epoch, parts, 1_000, 1_000, ctv=ctv, timeout=timeout),
              v(S.PREPARE_ABORT, pid, marker_epoch, parts, 1_000, abort_at, ctv=ctv,
                timeout=timeout),
              v(S.COMPLETE_ABORT, pid, marker_epoch, {}, 1_000, abort_at + 100, ctv=ctv,
                timeout=timeout)]
    sc.coordinator(tid, values[1:] if compacted else values)
    for n in (0, 1):
        p = sc.part("x", n)
        p.data(pid=pid, epoch=data_epoch, n=2, txn=True, at=sc_t(1_100))
        p.abort(pid=pid, epoch=marker_epoch, at=sc_t(abort_at + 50))


def sc_t(ms: int) -> int:
    from tests.analysis.logdirs import T0

    return T0 + ms


@pytest.mark.parametrize(("ctv", "bump", "label"), [
    (0, 1, "v0/v1: the fence bumps once"),
    (2, 1, "v2 since KAFKA-19367: the fence and the abort bump once together"),
    (2, 2, "v2 before KAFKA-19367: fence, then the abort's own bump"),
])
def test_timeout_abort_found_whatever_the_epoch_bump(sc: Scenario, ctv: int, bump: int,
                                                     label: str) -> None:
    """``TransactionCoordinator#abortTimedOutTransactions`` under each version: a PrepareAbort
    70 s after the start of a 60 s transaction is a timeout abort."""
    abort_story(sc, "slow", 7601, data_epoch=5, marker_epoch=5 + bump, abort_at=71_000, ctv=ctv)
    result = sc.inspect()
    (timeout,) = of_kind(result.findings, "transaction_timeout_exceeded")
    assert (timeout.topic, timeout.transactional_id, timeout.producer_epoch) == (
        TXN_TOPIC, "slow", 5), label
    assert "aborted it 70s after it started, past its 60s transaction timeout" in (
        timeout.message)
    assert "deadline 2025-11-21T04:41:01.000Z" in timeout.message
    assert f"fenced epoch 5 (its markers carry {5 + bump})" in timeout.message
    assert not of_kind(result.findings, "hanging_transaction")
    (row,) = rows_of(result.timeline, "slow")
    assert row.outcome == "aborted" and timeout in row.findings


@pytest.mark.parametrize("ctv", [0, 2])
def test_abort_within_the_timeout_is_no_timeout(sc: Scenario, ctv: int) -> None:
    """``TransactionMetadata#prepareAbortOrCommit`` from the client's EndTxn (v2: epoch + 1,
    like a v2 timeout fence since KAFKA-19367) 30 s into a 60 s transaction."""
    abort_story(sc, "quick", 7602, data_epoch=2, marker_epoch=2 + (ctv == 2), abort_at=31_000,
                ctv=ctv)
    assert not of_kind(sc.inspect().findings, "transaction_timeout_exceeded")


def test_fence_by_a_new_instance_within_the_timeout_is_no_timeout(sc: Scenario) -> None:
    """``TransactionCoordinator#handleInitProducerId`` while Ongoing: an epoch fence and an
    abort before the deadline (v0/v1: epoch + 1, as a timeout fence would)."""
    abort_story(sc, "restarted", 7603, data_epoch=4, marker_epoch=5, abort_at=20_000, ctv=0)
    assert not of_kind(sc.inspect().findings, "transaction_timeout_exceeded")


@pytest.mark.parametrize("ctv", [0, 2])
def test_timeout_abort_on_a_compacted_coordinator_log(sc: Scenario, ctv: int) -> None:
    """``LogCleaner`` left PrepareAbort and CompleteAbort only: the start time comes from the
    values' ``txnStartTimestamp`` (``TransactionLogValue``), the timeout from theirs."""
    abort_story(sc, "cleaned", 7604, data_epoch=9, marker_epoch=10, abort_at=200_000, ctv=ctv,
                timeout=120_000, compacted=True)
    (timeout,) = of_kind(sc.inspect().findings, "transaction_timeout_exceeded")
    assert timeout.transactional_id == "cleaned"
    assert "aborted it 3m19s after it started, past its 2m00s transaction timeout" in (
        timeout.message)
