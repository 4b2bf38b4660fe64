"""read_committed filtering: Kafka's client cases, and a model check on random histories."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.formats.txn_index import AbortedTxnEntry
from kafkatx.semantics.read_committed import (
    AbortedTransaction,
    Decision,
    IsolationLevel,
    ReadCommittedFilter,
    collect_aborted_transactions,
    collect_aborted_txns,
    max_fetch_offset,
)

RC = IsolationLevel.READ_COMMITTED


@dataclass(frozen=True)
class B:
    """A batch in a test history: data (txn or not) or a COMMIT/ABORT marker."""

    pid: int
    first: int
    last: int
    txn: bool = True
    marker: str | None = None  # "COMMIT" | "ABORT"


def visible(batches: list[B], aborted: list[AbortedTransaction],
            isolation: IsolationLevel = RC) -> list[int]:
    f = ReadCommittedFilter(aborted, isolation)
    out: list[int] = []
    for b in batches:
        d = f.decide(producer_id=b.pid, is_transactional=b.txn, is_control=b.marker is not None,
                     last_offset=b.last, is_abort_marker=b.marker == "ABORT")
        if d == Decision.DELIVER:
            out.extend(range(b.first, b.last + 1))
    return out


def test_interleaved_producers_only_the_committed_one_is_seen() -> None:
    log = [B(1, 0, 1), B(2, 2, 3), B(1, 4, 4, marker="COMMIT"), B(2, 5, 5, marker="ABORT")]
    assert visible(log, [AbortedTransaction(2, 2)]) == [0, 1]
    assert visible(log, [AbortedTransaction(2, 2)], IsolationLevel.READ_UNCOMMITTED) == [0, 1, 2, 3]


def test_aborted_producer_writing_non_transactional_data_afterwards() -> None:
    log = [B(1, 0, 1), B(1, 2, 2, marker="ABORT"), B(1, 3, 4, txn=False)]
    assert visible(log, [AbortedTransaction(0, 1)]) == [3, 4]


def test_abort_marker_removes_the_producer_so_its_next_transaction_is_seen() -> None:
    log = [B(1, 0, 1), B(1, 2, 2, marker="ABORT"), B(1, 3, 4), B(1, 5, 5, marker="COMMIT")]
    assert visible(log, [AbortedTransaction(0, 1)]) == [3, 4]


def test_non_transactional_batch_of_an_aborted_pid_before_its_marker_is_not_skipped() -> None:
    log = [B(1, 0, 0), B(7, 1, 1, txn=False), B(1, 2, 2, marker="ABORT")]
    assert visible(log, [AbortedTransaction(0, 1)]) == [1]


def test_max_fetch_offset_follows_isolation() -> None:
    assert max_fetch_offset(RC, 50, 19) == 19
    assert max_fetch_offset(IsolationLevel.READ_UNCOMMITTED, 50, 19) == 50


def entry(pid: int, first: int, last: int, lso: int) -> AbortedTxnEntry:
    return AbortedTxnEntry(producer_id=pid, first_offset=first, last_offset=last,
                           last_stable_offset=lso)


def test_collect_stops_at_an_entry_whose_lso_reaches_the_upper_bound() -> None:
    entries = [entry(1, 0, 5, 6), entry(2, 10, 20, 21), entry(3, 30, 40, 41)]
    found, complete = collect_aborted_txns(entries, 4, 50)
    assert [e.producer_id for e in found] == [1, 2, 3] and not complete
    found, complete = collect_aborted_txns(entries, 4, 21)
    assert [e.producer_id for e in found] == [1, 2] and complete  # stopped at entry 2
    found, complete = collect_aborted_txns(entries, 4, 25)
    assert [e.producer_id for e in found] == [1, 2] and complete  # entry 3 ends the search


def test_collect_starts_at_the_segment_holding_the_fetch_offset() -> None:
    segments = [(0, [entry(1, 0, 5, 6)]), (100, [entry(2, 90, 120, 121)]), (200, [])]
    assert collect_aborted_transactions(segments, 110, 300) == [AbortedTransaction(90, 2)]
    # A transaction that began in an earlier segment is found through the later segment's entry.
    assert collect_aborted_transactions(segments, 0, 300) == [
        AbortedTransaction(0, 1), AbortedTransaction(90, 2)]


@st.composite
def histories(draw: st.DrawFn) -> tuple[list[B], dict[int, bool]]:
    """Interleaved transactions of a few producers; returns batches and offset -> committed."""
    n_producers = draw(st.integers(1, 4))
    open_txn: dict[int, list[int]] = {}
    batches: list[B] = []
    outcome: dict[int, bool] = {}
    offset = 0
    for _ in range(draw(st.integers(1, 40))):
        pid = draw(st.integers(1, n_producers))
        action = draw(st.sampled_from(["data", "data", "plain", "commit", "abort"]))
        if action == "plain" and pid not in open_txn:
            batches.append(B(pid, offset, offset, txn=False))
            outcome[offset] = True
            offset += 1
        elif action == "data" or (action == "plain" and pid in open_txn):
            size = draw(st.integers(1, 3))
            batches.append(B(pid, offset, offset + size - 1))
            open_txn.setdefault(pid, []).extend(range(offset, offset + size))
            offset += size
        elif pid in open_txn:
            commit = action == "commit"
            for o in open_txn.pop(pid):
                outcome[o] = commit
            batches.append(B(pid, offset, offset, marker="COMMIT" if commit else "ABORT"))
            offset += 1
    for pid in list(open_txn):  # close everything so the whole log is below the LSO
        for o in open_txn.pop(pid):
            outcome[o] = False
        batches.append(B(pid, offset, offset, marker="ABORT"))
        offset += 1
    return batches, outcome


def aborted_list(batches: list[B]) -> list[AbortedTransaction]:
    """What the .txnindex holds: each aborted transaction's (first offset, producer)."""
    first: dict[int, int] = {}
    out = []
    for b in batches:
        if b.marker is None and b.txn:
            first.setdefault(b.pid, b.first)
        elif b.marker is not None:
            start = first.pop(b.pid, None)
            if start is not None and b.marker == "ABORT":
                out.append(AbortedTransaction(start, b.pid))
    return out


@settings(max_examples=300, deadline=None)
@given(histories())
def test_filter_matches_the_per_transaction_model(history: tuple[list[B], dict[int, bool]]) -> None:
    batches, outcome = history
    expected = sorted(o for o, committed in outcome.items() if committed)
    assert visible(batches, aborted_list(batches)) == expected
