"""read_committed filtering: Kafka's client cases, and a model check on random histories."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.formats.txn_index import AbortedTxnEntry
from kafkatx.semantics.read_committed import (
    DECISIONS,
    AbortedTransaction,
    Decision,
    IsolationLevel,
    ReadCommittedFilter,
    collect_aborted_transactions,
    collect_aborted_txns,
    decide_batches,
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


@st.composite
def shuffled_histories(draw: st.DrawFn) -> tuple[list[B], list[AbortedTransaction]]:
    """A history with some batches moved (offsets going back), producer-less batches, and an
    aborted list that may name producers and offsets the batches do not show."""
    batches, _ = draw(histories())
    for _ in range(draw(st.integers(0, 3))):
        if len(batches) > 1:
            i, j = draw(st.integers(0, len(batches) - 1)), draw(st.integers(0, len(batches) - 1))
            batches.insert(j, batches.pop(i))
    if draw(st.booleans()):
        batches.insert(draw(st.integers(0, len(batches))), B(-1, 0, 0, txn=False))
    aborted = aborted_list(batches)
    aborted += draw(st.lists(st.builds(AbortedTransaction, st.integers(0, 120),
                                       st.integers(1, 5)), max_size=3))
    return batches, aborted


@settings(max_examples=400, deadline=None)
@given(shuffled_histories(), st.sampled_from(list(IsolationLevel)))
def test_decide_batches_equals_decide_batch_by_batch(
        case: tuple[list[B], list[AbortedTransaction]], isolation: IsolationLevel) -> None:
    """``CompletedFetch#nextFetchedRecord``'s decisions over a whole run at once: the same
    decision per batch and the same filter state after it as ``decide`` batch by batch."""
    batches, aborted = case
    one_by_one = ReadCommittedFilter(aborted, isolation)
    expected = [one_by_one.decide(producer_id=b.pid, is_transactional=b.txn,
                                  is_control=b.marker is not None, last_offset=b.last,
                                  is_abort_marker=b.marker == "ABORT") for b in batches]
    at_once = ReadCommittedFilter(aborted, isolation)
    codes = decide_batches(
        at_once, np.array([b.pid for b in batches], dtype=np.int64),
        np.array([b.txn for b in batches], dtype=bool),
        np.array([b.marker is not None for b in batches], dtype=bool),
        np.array([b.last for b in batches], dtype=np.int64),
        np.array([b.marker == "ABORT" for b in batches], dtype=bool))
    assert [DECISIONS[c] for c in codes.tolist()] == expected
    assert at_once.aborted_producer_ids == one_by_one.aborted_producer_ids
    assert sorted(at_once.queue) == sorted(one_by_one.queue)
