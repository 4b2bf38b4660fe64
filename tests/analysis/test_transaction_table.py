"""``TransactionTable`` reads and changes like the list of ``Transaction`` objects it replaces.

Each property builds the same transactions as a plain list and as a table (appended one by one,
or as columns), over blocks of 4 rows so that every operation crosses block boundaries, and
holds the table to the list: order, indexing, columns, None fields, filtering, sorting, changes.
"""

from __future__ import annotations

import copy
import pickle
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.analysis import transaction_table as tt
from kafkatx.analysis.replay_result import ABORTED, COMMITTED, OPEN, Transaction
from kafkatx.analysis.transaction_table import FIELDS, NULLABLE, TransactionTable
from kafkatx.analysis.view_names import FORGOTTEN

I64 = st.integers(-(1 << 63), (1 << 63) - 1)
I32 = st.integers(-(1 << 31), (1 << 31) - 1)


@st.composite
def transactions(draw: st.DrawFn) -> Transaction:
    outcome = draw(st.sampled_from([OPEN, COMMITTED, ABORTED, FORGOTTEN]))
    closed = outcome in (COMMITTED, ABORTED)

    def maybe(values: st.SearchStrategy[int]) -> int | None:
        return draw(values) if closed and draw(st.integers(0, 5)) else None

    return Transaction(
        producer_id=draw(I64), producer_epoch=draw(st.integers(-1, 32767)),
        first_offset=draw(st.integers(0, 50)), last_data_offset=draw(I64),
        first_timestamp=draw(I64), last_timestamp=draw(I64), batches=draw(I64),
        records=draw(I64), outcome=outcome, marker_offset=maybe(I64),
        marker_timestamp=maybe(I64), marker_epoch=maybe(I32), coordinator_epoch=maybe(I32),
        last_stable_offset_at_marker=maybe(I64))


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tt, "BLOCK_BITS", 2)
    monkeypatch.setattr(tt, "BLOCK_ROWS", 4)


def table_of(txns: list[Transaction]) -> TransactionTable:
    table = TransactionTable()
    for t in txns:
        table.append(copy.copy(t))
    table.settle()
    return table


many = st.lists(transactions(), max_size=14)


@settings(max_examples=150, deadline=None)
@given(many)
def test_reads_like_the_list(txns: list[Transaction]) -> None:
    table = table_of(txns)
    assert list(table) == txns and table == txns and len(table) == len(txns)
    assert bool(table) == bool(txns)
    for i in range(-len(txns), len(txns)):
        assert table[i] == txns[i]
    assert table[1:-1:2] == txns[1:-1:2]
    picked = [i for i in (2, 0) if i < len(txns)]
    assert table.rows(picked) == [txns[i] for i in picked]
    with pytest.raises(IndexError):
        table[len(txns)]
    for name in FIELDS:
        want = [getattr(t, name) for t in txns]
        got = table.column(name).tolist()
        if name == "outcome":
            assert [tt.OUTCOMES[c] for c in got] == want
        elif name in NULLABLE:
            assert table.is_null(name).tolist() == [v is None for v in want]
            assert got == [0 if v is None else v for v in want]
        else:
            assert got == want
    assert table.outcome_is(COMMITTED, ABORTED).tolist() == [
        t.outcome in (COMMITTED, ABORTED) for t in txns]
    # the open ones stay the objects the replay goes on with
    assert [t for t in table.live if t.outcome == OPEN] == [t for t in txns if t.outcome == OPEN]
    assert pickle.loads(pickle.dumps(table)) == txns


@settings(max_examples=150, deadline=None)
@given(many, st.data())
def test_changes_like_the_list(txns: list[Transaction], data: st.DataObject) -> None:
    table = table_of(txns)
    keep = data.draw(st.lists(st.booleans(), min_size=len(txns), max_size=len(txns)))
    kept = table.copy()
    kept.keep(np.array(keep, dtype=bool))
    assert kept == [t for t, k in zip(txns, keep, strict=True) if k]
    assert table == txns  # the copy changed alone
    ordered = table.copy()
    ordered.sort_by_first_offset()
    assert ordered == sorted(txns, key=lambda t: t.first_offset)
    if not txns:
        return
    row = data.draw(st.integers(0, len(txns) - 1))
    want = list(txns)
    table.set_field(row, "first_offset", 7)
    want[row] = replace(want[row], first_offset=7)
    assert table == want
    table.set_outcome([row], FORGOTTEN)
    want[row] = replace(want[row], outcome=FORGOTTEN)
    assert table == want and table.live == [t for t in want if t.outcome == OPEN]
    other = data.draw(transactions())
    table.replace_row(row, other)
    want[row] = other
    assert table == want


@settings(max_examples=100, deadline=None)
@given(st.lists(transactions(), max_size=14), st.integers(0, 5))
def test_columns_appended_at_once_are_the_rows(txns: list[Transaction], ahead: int) -> None:
    """``extend_columns`` (the replay's bulk path) gives the rows ``append`` gives, after rows
    already there and across blocks."""
    first = [replace(t, outcome=COMMITTED, marker_offset=1) for t in txns[:ahead]]
    rest = txns[ahead:]
    table = table_of(first)
    nulls = np.array([sum(tt.NULL_BIT[n] for n in NULLABLE if getattr(t, n) is None)
                      for t in rest], dtype=np.uint8)
    columns = {name: np.array([tt.OUTCOME_CODE[t.outcome] if name == "outcome"
                               else (getattr(t, name) or 0) for t in rest],
                              dtype=tt.ROW[name]) for name in FIELDS}
    at = table.extend_columns(len(rest), nulls=nulls, **columns)
    assert at == len(first)
    assert table == first + [t if t.outcome != OPEN else replace(t) for t in rest]
