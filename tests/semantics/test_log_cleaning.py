"""Kafka's cleaner rules for one pass over batches (``Cleaner#cleanInto``'s ``RecordFilter``,
``CleanedTransactionMetadata``, ``MemoryRecords#filterTo``), Kafka 3.1+ (KIP-534 delete horizons
in the batch header) against Kafka 3.0 (segment modification time)."""

from __future__ import annotations

from kafkatx.formats.record_batch import (
    ControlType,
    Record,
    build_batch,
    build_control_batch,
    parse_batch,
)
from kafkatx.formats.txn_index import AbortedTxnEntry
from kafkatx.semantics.log_cleaning import (
    BatchRetention,
    CleanedTransactionMetadata,
    OffsetMap,
    check_batch_retention,
    filter_batch,
    legacy_delete_horizon_ms,
    retains_legacy_deletes,
)

T0 = 1_760_000_000_000
DAY = 86_400_000


def data(offset: int, key: bytes, value: bytes | None, *, pid: int = -1,
         txn: bool = False) -> bytes:
    return build_batch([Record(offset=offset, timestamp=T0, key=key, value=value)],
                       base_offset=offset, producer_id=pid, producer_epoch=0 if pid >= 0 else -1,
                       base_sequence=offset if pid >= 0 else -1, is_transactional=txn)


def marker(offset: int, pid: int, control: ControlType) -> bytes:
    return build_control_batch(base_offset=offset, producer_id=pid, producer_epoch=0,
                               control_type=int(control), timestamp=T0)


def one_pass(batches: list[bytes], *, aborted: list[AbortedTxnEntry], upper: int, now: int,
             legacy: bool | None = None) -> list[bytes | None]:
    """The cleaned form of each batch (None: gone), with an offset map over all of them."""
    offset_map = OffsetMap()
    parsed = [parse_batch(b, decode_records=True) for b in batches]
    for b in parsed:
        if not b.header.is_control:
            for r in b.records or ():
                if r.key is not None:
                    offset_map.put(r.key, r.offset)
    offset_map.update_latest_offset(upper - 1)
    transactions = CleanedTransactionMetadata()
    transactions.add_aborted_transactions(aborted)
    out = []
    for raw, b in zip(batches, parsed, strict=True):
        control = b.control.type_id if b.control is not None else None
        decision = check_batch_retention(b.header, control, transactions=transactions,
                                         active_producers={}, upper_bound_offset=upper,
                                         now_ms=now, legacy_retain_deletes=legacy)
        out.append(filter_batch(raw, b.header, list(b.records or ()), decision, offset_map,
                                now_ms=now, delete_retention_ms=DAY,
                                legacy_retain_deletes=legacy))
    return out


def test_tombstones_by_delete_horizon_and_by_segment_time() -> None:
    """3.1+: a kept tombstone gets a delete horizon (now + delete.retention.ms) and goes in a
    pass after it; 3.0: it stays while the segment retains deletes
    (``lastModified > lastCleanSegment.lastModified - delete.retention.ms``)."""
    batches = [data(0, b"a", b"1"), data(1, b"a", None), data(2, b"b", b"2")]
    first = one_pass(batches, aborted=[], upper=3, now=T0)
    assert first[0] is None
    horizon = parse_batch(first[1] or b"").header.delete_horizon_ms
    assert horizon == T0 + DAY and first[2] == batches[2]
    later = one_pass([first[1] or b"", batches[2]], aborted=[], upper=3, now=T0 + DAY + 1)
    assert later[0] is None
    horizon_30 = legacy_delete_horizon_ms(T0, DAY)
    assert retains_legacy_deletes(T0 - 10, horizon_30)
    assert not retains_legacy_deletes(T0 - DAY - 10, horizon_30)
    kept = one_pass(batches, aborted=[], upper=3, now=T0, legacy=True)
    assert kept[1] == batches[1]  # as written: 3.0 writes no horizon
    assert one_pass(batches, aborted=[], upper=3, now=T0, legacy=False)[1] is None
    assert legacy_delete_horizon_ms(None, DAY) == 0


def test_markers_of_removed_transactions() -> None:
    """``CleanedTransactionMetadata``: an aborted transaction's batches go at once and its
    marker stays (in the cleaned ``.txnindex``) while a batch of it was seen; once none is left
    the marker is removable: 3.1+ keeps it until its delete horizon, 3.0 drops it when the
    segment no longer retains deletes. The round's last batch stays in 3.1+ only."""
    entry = AbortedTxnEntry(producer_id=7, first_offset=0, last_offset=1, last_stable_offset=2)
    with_data = [data(0, b"x", b"1", pid=7, txn=True), marker(1, 7, ControlType.ABORT),
                 data(2, b"y", b"2")]
    transactions = CleanedTransactionMetadata()
    transactions.add_aborted_transactions([entry])
    h0 = parse_batch(with_data[0]).header
    d0 = check_batch_retention(h0, None, transactions=transactions, active_producers={},
                               upper_bound_offset=3, now_ms=T0)
    assert (d0.retention, d0.discard_records) == (BatchRetention.DELETE, True)
    d1 = check_batch_retention(parse_batch(with_data[1]).header, int(ControlType.ABORT),
                               transactions=transactions, active_producers={},
                               upper_bound_offset=3, now_ms=T0)
    assert not d1.discard_records and transactions.cleaned_index == [entry]

    alone = [marker(1, 7, ControlType.ABORT), data(2, b"y", b"2")]
    first = one_pass(alone, aborted=[entry], upper=3, now=T0)
    assert parse_batch(first[0] or b"").header.delete_horizon_ms == T0 + DAY
    assert one_pass([first[0] or b"", alone[1]], aborted=[entry], upper=3,
                    now=T0 + DAY + 1)[0] is None
    assert one_pass(alone, aborted=[entry], upper=3, now=T0, legacy=False)[0] is None
    assert one_pass(alone, aborted=[entry], upper=3, now=T0, legacy=True)[0] == alone[0]
    # The last batch of the round keeps its offsets in 3.1+, emptied when superseded (here by
    # a record past the round), so the last offset is not lost; 3.0 drops it.
    round_ = [data(0, b"k", b"1"), data(1, b"k", b"2"), data(2, b"k", b"3")]
    emptied = one_pass(round_, aborted=[], upper=2, now=T0)[1]
    header = parse_batch(emptied or b"").header
    assert (header.records_count, header.base_offset, header.last_offset) == (0, 1, 1)
    assert one_pass(round_, aborted=[], upper=2, now=T0, legacy=True)[1] is None
