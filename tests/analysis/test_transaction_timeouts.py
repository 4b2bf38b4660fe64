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
from kafkatx.analysis.findings import ERROR, WARNING
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


# ---------------------------------------------------------------------------------------------
# lso_pinned as TransactionsCommand find-hanging judges it

MIN = 60_000
WATCH = "watch, do not abort: kafka-transactions.sh --bootstrap-server <broker:9092> describe"


def live_transaction(sc: Scenario, *, timeout: int = 60_000, state: S = S.ONGOING,
                     parts: dict[str, list[int]] | None = None) -> None:
    """live-writer (7701/3) writes x-0 from 1 s to 2 s; the coordinator's last record of it is
    ``state`` with ``parts`` (copied mid-transaction: no marker yet)."""
    parts = parts or {"x": [0]}
    sc.coordinator("live-writer", [v(state, 7701, 3, parts, 1_000, 1_000, timeout=timeout)])
    p = sc.part("x", 0)
    p.data(n=1, at=sc_t(500)).data(pid=7701, epoch=3, n=2, txn=True, at=sc_t(1_000))
    p.data(pid=7701, epoch=3, n=1, txn=True, at=sc_t(2_000))


def pinned_or_open(findings: list) -> object:
    (f,) = [f for f in findings if f.kind in ("open_transaction", "lso_pinned")]
    return f


def test_running_transaction_past_the_threshold_is_a_warning_without_abort(sc: Scenario
                                                                            ) -> None:
    """``TransactionsCommand#filterHangingTransactions``: a partition ``DescribeTransactions``
    lists (Ongoing with x-0) is not hanging, whatever its age; the coordinator would have
    aborted it at ``txnStartTimestamp + txnTimeoutMs`` (``timedOutTransactions``)."""
    live_transaction(sc)
    result = sc.inspect(now=20 * MIN)
    f = pinned_or_open(result.findings)
    assert (f.kind, f.level, f.transactional_id) == ("lso_pinned", WARNING, "live-writer")
    assert f.remediation is not None and f.remediation.startswith(WATCH)
    assert "abort --topic" not in f.remediation
    assert "--transactional-id live-writer (expect it to end by 2025-11-21T04:41:01.000Z)" in (
        f.remediation)
    assert "last write 19m58s ago" in f.message
    assert "not hanging: the coordinator has it Ongoing with x-0 since" in f.message
    assert "deadline 2025-11-21T04:41:01.000Z" in f.message and "passed" in f.message
    assert not of_kind(result.findings, "hanging_transaction")
    assert of_kind(result.findings, "transaction_timeout_exceeded")


def test_recorded_timeout_above_fifteen_minutes_raises_the_threshold(sc: Scenario) -> None:
    """find-hanging's threshold is max(the transaction's timeout, --max-transaction-timeout):
    a one-hour timeout in ``__transaction_state`` (``TransactionLogValue.transactionTimeoutMs``)
    keeps a 20-minute-idle transaction a plain open one."""
    live_transaction(sc, timeout=60 * MIN)
    result = sc.inspect(now=20 * MIN)
    f = pinned_or_open(result.findings)
    assert (f.kind, f.remediation) == ("open_transaction", None)
    assert "the coordinator has it Ongoing with x-0" in f.message
    at_two_hours = pinned_or_open(sc.inspect(now=120 * MIN).findings)
    assert (at_two_hours.kind, at_two_hours.level) == ("lso_pinned", WARNING)
    assert "its 60m00s transaction timeout in __transaction_state" in at_two_hours.message


def test_decided_transaction_waiting_for_its_marker_is_watched(sc: Scenario) -> None:
    """``TransactionStateManager`` resends the markers of PrepareCommit on load: the partition
    is still listed by ``DescribeTransactions``, so not hanging."""
    live_transaction(sc, state=S.PREPARE_COMMIT)
    result = sc.inspect(now=20 * MIN)
    f = pinned_or_open(result.findings)
    assert (f.kind, f.level) == ("lso_pinned", WARNING)
    assert "not hanging: the coordinator decided to commit it" in f.message
    assert f.remediation is not None and f.remediation.startswith(WATCH)
    assert of_kind(result.findings, "stuck_prepare")


def test_without_a_coordinator_log_the_threshold_decides(sc: Scenario) -> None:
    """No ``__transaction_state`` in the copy: find-hanging's candidate rule alone
    (``now - lastTimestamp > maxTransactionTimeoutMs``), and the message says the coordinator's
    view is unknown."""
    p = sc.part("x", 0)
    p.data(pid=7702, epoch=0, n=2, txn=True, at=sc_t(1_000))
    young = pinned_or_open(sc.inspect(now=10 * MIN).findings)
    assert young.kind == "open_transaction"
    old = pinned_or_open(sc.inspect(now=20 * MIN).findings)
    assert (old.kind, old.level) == ("lso_pinned", ERROR)
    assert "no __transaction_state partition among the evidence" in old.message
    assert "confirm with kafka-transactions.sh find-hanging before aborting" in old.message
    assert old.remediation is not None and "abort --topic x --partition 0" in old.remediation
    short = pinned_or_open(sc.inspect(now=10 * MIN, max_transaction_timeout_ms=MIN).findings)
    assert short.kind == "lso_pinned"


def test_age_is_measured_from_the_last_write(sc: Scenario) -> None:
    """``TransactionsCommand``: ``currentTimeMs - producerState.lastTimestamp()``; a
    transaction begun 30 minutes ago that wrote 5 minutes ago is not a candidate."""
    p = sc.part("x", 0)
    p.data(pid=7703, epoch=0, n=1, txn=True, at=sc_t(0))
    p.data(pid=7703, epoch=0, n=1, txn=True, at=sc_t(25 * MIN))
    f = pinned_or_open(sc.inspect(now=30 * MIN).findings)
    assert f.kind == "open_transaction" and "open for 30m00s, last write 5m00s ago" in f.message


def test_partition_outside_the_current_transaction_hangs_only_past_the_threshold(
        sc: Scenario) -> None:
    """``filterHangingTransactions``: data of the coordinator's current producer and epoch in a
    partition its Ongoing transaction does not list is hanging, once a candidate (last write
    older than max(timeout, --max-transaction-timeout))."""
    sc.coordinator("narrow", [v(S.ONGOING, 7704, 1, {"x": [1]}, 1_000, 1_000)])
    sc.part("x", 0).data(pid=7704, epoch=1, n=2, txn=True, at=sc_t(1_100))
    sc.part("x", 1).data(pid=7704, epoch=1, n=1, txn=True, at=sc_t(1_200))
    early = sc.inspect(now=5 * MIN)
    assert not of_kind(early.findings, "hanging_transaction")
    late = sc.inspect(now=20 * MIN)
    (hang,) = of_kind(late.findings, "hanging_transaction")
    assert (hang.partition, hang.transactional_id) == (0, "narrow")
    assert "more than 15m00s (the larger of its 60s transaction timeout" in hang.message


def test_compacted_coordinator_and_a_copy_cut_mid_batch(sc: Scenario) -> None:
    """Aged evidence: ``__transaction_state`` cleaned (``LogCleaner`` kept the id's last value,
    Ongoing, at its original offset) and the data segment copied while a batch was being
    appended (a truncated tail, ``LogSegment#recover`` would cut it): still running, not
    hanging, no abort command."""
    from tests.analysis.test_partition_count import put_compacted

    put_compacted(sc, "live-writer", [(41, v(S.ONGOING, 7701, 3, {"x": [0]}, 1_000, 1_000))])
    p = sc.part("x", 0)
    p.data(pid=7701, epoch=3, n=2, txn=True, at=sc_t(1_000))
    root = sc.build()
    log = root / "x-0" / "00000000000000000000.log"
    whole = log.read_bytes()
    with log.open("ab") as out:
        out.write(whole[: len(whole) // 2])  # the head of a batch being written
    result = sc.inspect(now=20 * MIN)
    assert of_kind(result.findings, "truncated_batch")
    f = pinned_or_open(result.findings)
    assert (f.kind, f.level, f.transactional_id) == ("lso_pinned", WARNING, "live-writer")
    assert f.remediation is not None and f.remediation.startswith(WATCH)
    assert not of_kind(result.findings, "hanging_transaction")


def test_copy_taken_mid_transaction_has_nothing_wrong(sc: Scenario) -> None:
    """A log dir copied while a transaction ran (``TransactionMetadata`` Ongoing with x-0, its
    deadline ``txnStartTimestamp + txnTimeoutMs`` not reached; the coordinator log compacted to
    that last value): ``verify`` has nothing to warn about; the open transaction is info."""
    from tests.analysis.test_partition_count import put_compacted

    put_compacted(sc, "live-writer", [(41, v(S.ONGOING, 7701, 3, {"x": [0]}, 1_000, 1_000))])
    sc.part("x", 0).data(n=1, at=sc_t(500)).data(pid=7701, epoch=3, n=2, txn=True,
                                                  at=sc_t(1_000))
    result = sc.inspect(now=30_000)
    assert [(f.kind, f.level) for f in result.findings if f.level in (ERROR, WARNING)] == []
    f = pinned_or_open(result.findings)
    assert (f.kind, f.level, f.transactional_id) == ("open_transaction", "info", "live-writer")
    assert "the coordinator has it Ongoing with x-0" in f.message
    late = pinned_or_open(sc.inspect(now=90_000).findings)  # past its 60 s deadline
    assert late.level == WARNING
