"""``replay``'s bounded memory against the whole-segment path it replaced: the consumer view
rebuilt from chunks of a few batches (``scan_segment_chunks`` windows of a few hundred bytes)
with the settled transactions forgotten, and the records
replayed chunk by chunk, give what one scan of each segment with every transaction kept gives
(snapshots, rolled segments, open and unreplicated transactions, offsets that go back)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkatx.analysis import consumer_view
from kafkatx.analysis.consumer_view import _prepare, find_partition, prepare, replay_records
from kafkatx.analysis.replay import ALL_SETTLED, OffsetsWentBack, PartitionReplayer
from kafkatx.formats.producer_snapshot import build_producer_snapshot
from kafkatx.formats.segment_scan import scan_segment, scan_segment_chunks
from kafkatx.semantics.read_committed import IsolationLevel
from kafkatx.storage.discovery import discover
from kafkatx.storage.segment_writer import segment_name
from tests.analysis.test_consumer_view import Partition, histories

RC = IsolationLevel.READ_COMMITTED


# Steps of a partition: transactions may stay open; ``snapshot`` has the broker write a
# producer snapshot there; ``lone`` a COMMIT marker whether or not the producer has a
# transaction open (a coordinator's repeated marker); ``back`` moves the next batch's offset
# back (a log no broker writes, which the replay must still read).
PARTITIONS = histories(actions=("data", "data", "data", "plain", "commit", "commit", "abort",
                                "roll", "snapshot", "lone", "back"), close=False,
                       steps_at_most=30)


def _write(root: Path, steps: list[tuple[str, int, int]], allow_back: bool) -> Path:
    p = Partition(root)
    snapshots: list[int] = []
    base = 0  # of the segment written to (its index holds offsets from there)
    p.data(-1, txn=False)  # a first batch: a segment whatever the steps
    for action, pid, size in steps:
        if action == "data":
            p.data(pid, size)
        elif action == "plain":
            p.data(pid, size, txn=False)
        elif action == "roll" and p.offset > base:
            p.roll()
            base = p.offset
        elif action == "snapshot":
            snapshots.append(p.offset)
        elif action == "back" and allow_back:
            p.offset = max(base, p.offset - size - 1)
        elif action in ("commit", "abort", "lone"):
            p.marker(pid, action != "abort")
    path = p.close()
    if snapshots:
        # The broker's snapshots: the producer state at those offsets, as the replay has it.
        replayer = PartitionReplayer(snapshot_offsets=snapshots)
        for log in sorted(path.glob("*.log")):
            replayer.feed(scan_segment(log.read_bytes()))
        for offset, checkpoint in replayer.result.snapshot_states.items():
            (path / segment_name(offset, ".snapshot")).write_bytes(
                build_producer_snapshot(checkpoint.entries))
    return path


def _whole(path: Path) -> consumer_view.SegmentScan:
    return scan_segment(path.read_bytes(), path=str(path))


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(PARTITIONS, st.booleans(), st.sampled_from([1, 2, 3, 64]), st.data())
def test_chunked_replay_with_settled_transactions_forgotten_equals_whole_scans(
        tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, int, int]],
        allow_back: bool, window: int, data: st.DataObject) -> None:
    root = tmp_path_factory.mktemp("p")
    _write(root, steps, allow_back)
    pdir = find_partition(discover([root]).all_partitions(), "t", 0)
    end = sum(size for _, _, size in steps) + len(steps)
    hw = data.draw(st.one_of(st.none(), st.integers(0, end)), label="hw")
    as_of = data.draw(st.one_of(st.none(), st.integers(0, end)), label="as_of")
    at_log_end = data.draw(st.booleans(), label="at_log_end")
    isolation = data.draw(st.sampled_from(list(IsolationLevel)), label="isolation")
    # Before: each segment scanned whole, every transaction kept.
    want = _prepare(pdir, isolation, hw, as_of, "file", _whole, None, at_log_end,
                    forget_settled=None)
    saved = consumer_view.CHUNK_BYTES
    consumer_view.CHUNK_BYTES = 1 << 40
    try:
        want_records = list(replay_records(pdir, want, show_hidden=True))
        want_stopped = list(replay_records(pdir, want, to_offset=end // 2))
        consumer_view.CHUNK_BYTES = window
        got = prepare(pdir, isolation=isolation, high_watermark=hw, as_of_offset=as_of,
                      high_watermark_at_log_end=at_log_end)
        got_records = list(replay_records(pdir, got, show_hidden=True))
        stopped = list(replay_records(pdir, got, to_offset=end // 2))
    finally:
        consumer_view.CHUNK_BYTES = saved
    assert got == want
    assert got_records == want_records
    assert stopped == want_stopped


def test_settled_transactions_are_forgotten_and_offsets_going_back_refused(
        tmp_path: Path) -> None:
    """What the chunked view keeps: the open transaction and the newest unreplicated one,
    not the 200 committed before them; a log whose offsets go back is refused (the view is
    then rebuilt keeping everything, as above)."""
    p = Partition(tmp_path)
    for i in range(200):
        p.data(1 + i % 3, 2)
        p.marker(1 + i % 3, commit=i % 7 != 0)
    p.data(2)
    path = p.close()
    replayer = PartitionReplayer(forget_settled=ALL_SETTLED)
    for scan in scan_segment_chunks((path / segment_name(0, ".log")).read_bytes(), window=1000):
        replayer.feed(scan)
    kept = replayer.result
    assert [(t.producer_id, t.outcome) for t in kept.transactions] == [(2, "open")]
    assert len(kept.state.unreplicated_txns) == 1
    assert len(kept.expected_aborted) == len(range(0, 200, 7))
    back = Partition(tmp_path / "back")
    back.data(1, 3)
    back.offset = 1
    back.data(2, 1)
    replayer = PartitionReplayer(forget_settled=ALL_SETTLED)
    with pytest.raises(OffsetsWentBack):
        replayer.feed(_whole(back.close() / segment_name(0, ".log")))


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(PARTITIONS, st.sampled_from([1, 100, 300, 5000]), st.data())
def test_replayer_forgetting_settled_transactions_keeps_the_rest_as_it_was(
        tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, int, int]],
        window: int, data: st.DataObject) -> None:
    """``PartitionReplayer(forget_settled=HW)`` on chunks ends with what the replay keeping
    every transaction has, less the transactions settled below the HW: the same events (their
    messages too), .txnindex entries, producers, open transactions and first unstable offset."""
    path = _write(tmp_path_factory.mktemp("r"), steps, allow_back=False)
    end = sum(size for _, _, size in steps) + len(steps) + 1
    hw = data.draw(st.integers(0, end), label="hw")
    logs = sorted(path.glob("*.log"))
    full = PartitionReplayer()
    forgetting = PartitionReplayer(forget_settled=hw, run_rows=data.draw(
        st.sampled_from([2, 64]), label="run_rows"))
    for log in logs:
        full.feed(_whole(log))
        for chunk in scan_segment_chunks(log.read_bytes(), path=str(log), window=window):
            forgetting.feed(chunk)
    a, b = full.result, forgetting.result
    bound = min(hw, a.log_end_offset)
    assert [t.to_dict() for t in b.transactions] == [
        t.to_dict() for t in a.transactions if t.marker_offset is None or t.marker_offset >= bound]
    assert b.events == a.events
    assert b.expected_aborted == a.expected_aborted
    assert b.state.snapshot_entries() == a.state.snapshot_entries()
    assert list(b.state.ongoing_txns.keys) == list(a.state.ongoing_txns.keys)
    for state in (a.state, b.state):
        state.on_high_watermark_updated(bound)
    assert b.state.first_unstable_offset() == a.state.first_unstable_offset()


@pytest.mark.parametrize("window", [1, 200, 5000])
def test_a_repeated_marker_after_forgotten_transactions_reads_as_before(
        tmp_path: Path, window: int) -> None:
    """The producer's last closed transaction is kept however settled (a marker repeating it
    says so), also when the run that closed it forgot the others."""
    path = _write(tmp_path, [("data", 1, 1), ("commit", 1, 1), ("data", 1, 1),
                             ("commit", 1, 1), ("data", 2, 1), ("lone", 1, 1)], allow_back=False)
    log = path / segment_name(0, ".log")
    full = PartitionReplayer()
    full.feed(_whole(log))
    forgetting = PartitionReplayer(forget_settled=ALL_SETTLED, run_rows=3)
    for chunk in scan_segment_chunks(log.read_bytes(), path=str(log), window=window):
        forgetting.feed(chunk)
    assert "repeats the COMMIT marker at offset 4" in full.result.events[0].message
    assert forgetting.result.events == full.result.events
