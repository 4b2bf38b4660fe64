"""Each invariant check firing and not firing, on real log dirs built in tmp_path.

Checks covered: offsets (offset_regression, offset_gap), indexes (index_mismatch), txnindex
(txnindex_mismatch) and snapshots (corrupt_snapshot, snapshot_mismatch); transactions that began
below the log start offset are in ``test_aged``.
Every analysis also proves the log dir was left untouched.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from kafkatx.analysis.findings import Finding
from kafkatx.engines.local import Inspection, inspect_paths
from kafkatx.formats.offset_index import build_offset_index, read_offset_index
from kafkatx.formats.producer_snapshot import (
    ProducerSnapshotEntry,
    read_producer_snapshot,
    snapshot_file_name,
)
from kafkatx.formats.record_batch import Record, build_batch
from kafkatx.formats.time_index import build_time_index, read_time_index
from kafkatx.formats.txn_index import AbortedTxnEntry, read_txn_index
from tests.analysis.logdirs import T0, LogDirBuilder, PartitionBuilder
from tests.readonly import assert_unchanged, snapshot_tree

DAY_MS = 86_400_000


def inspect(root: Path) -> Inspection:
    before = snapshot_tree(root)
    result = inspect_paths([root])
    assert_unchanged(root, before)
    return result


def of_kind(result: Inspection, *kinds: str) -> list[Finding]:
    return [f for f in result.findings if f.kind in kinds]


def batch(first: int, n: int, *, ts: int = T0) -> bytes:
    return build_batch([Record(offset=first + i, timestamp=ts + i, key=b"k", value=b"v" * 20)
                        for i in range(n)])


def plain_segments(p: PartitionBuilder, batches: int = 12, n: int = 5) -> PartitionBuilder:
    for _ in range(batches):
        p.data(n=n)
    return p


# -- offsets ----------------------------------------------------------------------------------


def test_contiguous_offsets_across_segments_give_no_offset_findings(tmp_path: Path) -> None:
    b = LogDirBuilder(tmp_path)
    p = b.partition("t", 0)
    plain_segments(p, 4).roll()
    plain_segments(p, 4)
    b.build()
    assert of_kind(inspect(tmp_path), "offset_regression", "offset_gap") == []


def test_batch_going_back_within_a_segment_is_a_regression(tmp_path: Path) -> None:
    b = LogDirBuilder(tmp_path)
    b.partition("t", 0).raw(batch(0, 5)).raw(batch(5, 5)).raw(batch(3, 2))
    b.build()
    [f] = of_kind(inspect(tmp_path), "offset_regression")
    assert f.level == "error" and f.offset == 3
    assert "previous batch's last offset 9" in f.message
    assert f.location is not None and f.location.endswith("00000000000000000000.log:"
                                                          + f.location.rsplit(":", 1)[1])
    assert int(f.location.rsplit(":", 1)[1]) > 0


def test_segment_starting_below_its_name_and_the_previous_segment(tmp_path: Path) -> None:
    b = LogDirBuilder(tmp_path)
    p = b.partition("t", 0).raw(batch(0, 10)).roll()  # next segment named 10
    p.raw(batch(7, 5))
    b.build()
    found = of_kind(inspect(tmp_path), "offset_regression")
    messages = " | ".join(f.message for f in found)
    assert len(found) == 2
    assert "below the base offset 10" in messages
    assert "previous segment already reached offset 9" in messages
    assert all(f.location and "00000000000000000010.log:0" in f.location for f in found)


def test_segment_overlapping_the_next_segments_name(tmp_path: Path) -> None:
    b = LogDirBuilder(tmp_path)
    p = b.partition("t", 0).raw(batch(0, 10))
    p.writer.roll(5)  # a segment named 5 although the first one reaches offset 9
    p.raw(batch(10, 2))
    b.build()
    [f] = of_kind(inspect(tmp_path), "offset_regression")
    assert "next segment is named for base offset 5" in f.message


def test_gaps_are_counted_once_per_segment(tmp_path: Path) -> None:
    b = LogDirBuilder(tmp_path)
    b.partition("t", 0).raw(batch(0, 5)).raw(batch(8, 2)).raw(batch(20, 1)).raw(batch(21, 1))
    b.build()
    result = inspect(tmp_path)
    [f] = of_kind(result, "offset_gap")
    assert f.level == "info" and f.offset == 8
    assert "2 gaps" in f.message and "13 offsets skipped" in f.message
    assert "after offset 4, next batch at 8" in f.message
    assert of_kind(result, "offset_regression") == []


def test_gap_between_segments(tmp_path: Path) -> None:
    b = LogDirBuilder(tmp_path)
    p = b.partition("t", 0).raw(batch(0, 5))
    p.writer.roll(10)
    p.raw(batch(10, 5))
    b.build()
    [f] = of_kind(inspect(tmp_path), "offset_gap")
    assert "00000000000000000010.log" in f.message and "5 offsets skipped" in f.message


# -- indexes ----------------------------------------------------------------------------------


def _index_path(root: Path, base: int, suffix: str) -> Path:
    return root / "t-0" / f"{base:020d}{suffix}"


def _two_indexed_segments(root: Path) -> PartitionBuilder:
    b = LogDirBuilder(root)
    p = b.partition("t", 0)
    plain_segments(p).roll()
    plain_segments(p)
    b.build()
    return p


def test_indexes_written_like_kafka_agree_with_the_log(tmp_path: Path) -> None:
    _two_indexed_segments(tmp_path)
    idx = read_offset_index(_index_path(tmp_path, 0, ".index").read_bytes(), base_offset=0)
    assert len(idx.entries) >= 3  # the test is only meaningful with entries
    assert of_kind(inspect(tmp_path), "index_mismatch") == []


def test_offset_index_entry_not_at_a_batch_start(tmp_path: Path) -> None:
    _two_indexed_segments(tmp_path)
    path = _index_path(tmp_path, 0, ".index")
    entries = list(read_offset_index(path.read_bytes(), base_offset=0).entries)
    entries[1] = replace(entries[1], position=entries[1].position + 3)
    path.write_bytes(build_offset_index(entries, 0))
    [f] = of_kind(inspect(tmp_path), "index_mismatch")
    assert f.level == "warning"
    assert "entry 1" in f.message and "not the start of a batch" in f.message
    assert f.location == f"{path}:8"


def test_offset_index_entry_offset_outside_its_batch(tmp_path: Path) -> None:
    _two_indexed_segments(tmp_path)
    path = _index_path(tmp_path, 0, ".index")
    entries = list(read_offset_index(path.read_bytes(), base_offset=0).entries)
    # Batches hold 5 offsets each: an offset 5 below the batch's last is in the previous batch.
    low = entries[0].offset - 5
    entries[0] = replace(entries[0], offset=low, relative_offset=low)
    path.write_bytes(build_offset_index(entries, 0))
    [f] = of_kind(inspect(tmp_path), "index_mismatch")
    assert "above the entry's offset" in f.message and "skip records" in f.message


def test_offset_index_entries_beyond_the_log_end(tmp_path: Path) -> None:
    _two_indexed_segments(tmp_path)
    path = _index_path(tmp_path, 0, ".index")
    entries = list(read_offset_index(path.read_bytes(), base_offset=0).entries)
    size = (tmp_path / "t-0" / "00000000000000000000.log").stat().st_size
    entries.append(replace(entries[-1], offset=1000, relative_offset=1000, position=size + 100))
    path.write_bytes(build_offset_index(entries, 0))
    [f] = of_kind(inspect(tmp_path), "index_mismatch")
    assert f"beyond the end of the segment ({size} bytes)" in f.message


def test_time_index_timestamp_newer_than_the_batches(tmp_path: Path) -> None:
    _two_indexed_segments(tmp_path)
    path = _index_path(tmp_path, 0, ".timeindex")
    entries = list(read_time_index(path.read_bytes(), base_offset=0).entries)
    entries[0] = replace(entries[0], timestamp=entries[0].timestamp + 3_600_000)
    entries = entries[:1]  # keep timestamps increasing, as the reader requires
    path.write_bytes(build_time_index(entries, 0))
    [f] = of_kind(inspect(tmp_path), "index_mismatch")
    assert "has a timestamp as new as" in f.message and f.offset == entries[0].offset


def test_time_index_offset_beyond_the_segment(tmp_path: Path) -> None:
    _two_indexed_segments(tmp_path)
    path = _index_path(tmp_path, 0, ".timeindex")
    entries = list(read_time_index(path.read_bytes(), base_offset=0).entries)
    entries.append(replace(entries[-1], timestamp=entries[-1].timestamp + 1, offset=500,
                           relative_offset=500))
    path.write_bytes(build_time_index(entries, 0))
    [f] = of_kind(inspect(tmp_path), "index_mismatch")
    assert "offset 500 is beyond the segment's last offset 59" in f.message


def test_zero_tail_on_an_inactive_segment_is_a_note(tmp_path: Path) -> None:
    _two_indexed_segments(tmp_path)
    for suffix, build, read in ((".index", build_offset_index, read_offset_index),
                                (".timeindex", build_time_index, read_time_index)):
        path = _index_path(tmp_path, 0, suffix)
        entries = read(path.read_bytes(), base_offset=0).entries
        path.write_bytes(build(entries, 0, preallocate_to=1200))  # type: ignore[operator]
    found = of_kind(inspect(tmp_path), "index_mismatch")
    assert [f.level for f in found] == ["info", "info"]
    offset_note, time_note = found
    assert "preallocated zero tail" in offset_note.message
    assert "TimeIndex#sanityCheck rejects" in time_note.message


def test_zero_tail_on_the_active_segment_is_normal(tmp_path: Path) -> None:
    _two_indexed_segments(tmp_path)
    base = 60
    for suffix, build, read in ((".index", build_offset_index, read_offset_index),
                                (".timeindex", build_time_index, read_time_index)):
        path = _index_path(tmp_path, base, suffix)
        entries = read(path.read_bytes(), base_offset=base).entries
        path.write_bytes(build(entries, base, preallocate_to=1200))  # type: ignore[operator]
    assert of_kind(inspect(tmp_path), "index_mismatch") == []


def test_preallocated_indexes_of_an_empty_segment_are_normal(tmp_path: Path) -> None:
    """A live copy of a partition without records: Kafka created its index files on the first
    read (a coordinator loading ``__transaction_state``), preallocated with zeros."""
    b = LogDirBuilder(tmp_path)
    b.partition("t", 0)
    b.build()
    _index_path(tmp_path, 0, ".log").write_bytes(b"")
    _index_path(tmp_path, 0, ".index").write_bytes(bytes(4096))
    _index_path(tmp_path, 0, ".timeindex").write_bytes(bytes(4092))
    assert of_kind(inspect(tmp_path), "index_mismatch") == []
    # a real entry in an empty segment still disagrees with it
    _index_path(tmp_path, 0, ".index").write_bytes(bytes.fromhex("0000000100000040"))
    [f] = of_kind(inspect(tmp_path), "index_mismatch")
    assert "the segment holds no batches" in f.message


def test_index_length_problem_is_reported_once(tmp_path: Path) -> None:
    _two_indexed_segments(tmp_path)
    path = _index_path(tmp_path, 0, ".index")
    path.write_bytes(path.read_bytes() + b"\x00\x01\x02")
    [f] = of_kind(inspect(tmp_path), "index_mismatch")
    assert "not a multiple of 8" in f.message


def test_offset_index_failing_kafkas_sanity_check(tmp_path: Path) -> None:
    _two_indexed_segments(tmp_path)
    path = _index_path(tmp_path, 0, ".index")
    path.write_bytes(path.read_bytes() + bytes.fromhex("ffffffff00000000"))  # offset base - 1
    found = of_kind(inspect(tmp_path), "index_mismatch")
    assert any("fails OffsetIndex#sanityCheck" in f.message
               and "less than the base offset 0" in f.message for f in found)
    assert any("is not greater than the previous entry's" in f.message for f in found)


def test_missing_index_files_are_notes(tmp_path: Path) -> None:
    _two_indexed_segments(tmp_path)
    _index_path(tmp_path, 0, ".index").unlink()
    _index_path(tmp_path, 60, ".timeindex").unlink()
    found = of_kind(inspect(tmp_path), "index_mismatch")
    assert sorted(f.level for f in found) == ["info", "info"]
    assert any("has no .index file" in f.message for f in found)
    assert any("has no .timeindex file" in f.message for f in found)


# -- txnindex ---------------------------------------------------------------------------------


def _aborted_log(root: Path) -> PartitionBuilder:
    """pid 1 commits, pid 2 aborts while pid 1 is open (LSO 0 in its entry), pid 3 aborts."""
    b = LogDirBuilder(root)
    p = b.partition("t", 0)
    p.data(pid=1, n=2, txn=True).data(pid=2, n=2, txn=True).abort(pid=2, epoch=0)
    p.commit(pid=1, epoch=0).data(pid=3, n=3, txn=True).abort(pid=3, epoch=0)
    b.build()
    return p


def _txn_entries(root: Path, base: int = 0) -> list[AbortedTxnEntry]:
    path = root / "t-0" / f"{base:020d}.txnindex"
    return list(read_txn_index(path.read_bytes()).entries)


def test_txnindex_from_the_replay_matches(tmp_path: Path) -> None:
    _aborted_log(tmp_path)
    entries = _txn_entries(tmp_path)
    assert [(e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset)
            for e in entries] == [(2, 2, 4, 0), (3, 6, 9, 10)]
    assert of_kind(inspect(tmp_path), "txnindex_mismatch") == []


def test_missing_txnindex_file(tmp_path: Path) -> None:
    p = _aborted_log(tmp_path)
    p.file(0, ".txnindex").unlink()
    [f] = of_kind(inspect(tmp_path), "txnindex_mismatch")
    assert f.level == "error" and f.producer_id == 2
    assert "00000000000000000000.txnindex is missing" in f.message
    assert "2 aborted transactions" in f.message and "will see the aborted records" in f.message


def test_txnindex_lacking_an_entry(tmp_path: Path) -> None:
    p = _aborted_log(tmp_path)
    p.write_txn_index(0, _txn_entries(tmp_path)[:1])
    [f] = of_kind(inspect(tmp_path), "txnindex_mismatch")
    assert f.producer_id == 3 and f.offset == 6
    assert "lacks the aborted transaction of producer 3 at offsets 6..9" in f.message


def test_txnindex_with_an_extra_entry(tmp_path: Path) -> None:
    p = _aborted_log(tmp_path)
    extra = AbortedTxnEntry(producer_id=1, first_offset=0, last_offset=5, last_stable_offset=6)
    entries = _txn_entries(tmp_path)
    p.write_txn_index(0, [entries[0], extra, entries[1]])
    [f] = of_kind(inspect(tmp_path), "txnindex_mismatch")
    assert f.producer_id == 1 and f.location is not None and f.location.endswith(":34")
    assert "will hide producer 1's records from offset 0 on, committed ones included" in f.message


def test_txnindex_with_different_first_and_last_stable_offsets(tmp_path: Path) -> None:
    p = _aborted_log(tmp_path)
    first, second = _txn_entries(tmp_path)
    p.write_txn_index(0, [replace(first, first_offset=3, last_stable_offset=2),
                          replace(second, last_stable_offset=8)])
    found = of_kind(inspect(tmp_path), "txnindex_mismatch")
    assert len(found) == 3
    [first_offset] = [f for f in found if "has first offset 3, the log says 2" in f.message]
    assert "will see its records at 2..2" in first_offset.message
    [too_high] = [f for f in found if "last stable offset 2, the log says 0" in f.message]
    assert too_high.level == "error" and "stop collecting" in too_high.message
    [too_low] = [f for f in found if "last stable offset 8, the log says 10" in f.message]
    assert too_low.level == "warning" and "harmless" in too_low.message


def test_txnindex_partial_entry_is_a_warning(tmp_path: Path) -> None:
    p = _aborted_log(tmp_path)
    path = p.file(0, ".txnindex")
    path.write_bytes(path.read_bytes() + b"\x00" * 10)
    [f] = of_kind(inspect(tmp_path), "txnindex_mismatch")
    assert f.level == "warning" and "Kafka ignores it" in f.message


def test_txnindex_entry_of_a_compacted_transaction_is_not_reported(tmp_path: Path) -> None:
    """The cleaner removes aborted batches but may keep the entry and the marker."""
    b = LogDirBuilder(tmp_path)
    p = b.partition("t", 0)
    p.txn_index = False
    p.data(pid=1, n=2, txn=True).commit(pid=1, epoch=0)
    p.raw(batch(5, 1)).abort(pid=1, epoch=0)  # offsets 3..4 (the aborted data) are gone
    p.write_txn_index(0, [AbortedTxnEntry(producer_id=1, first_offset=3, last_offset=6,
                                          last_stable_offset=7)])
    b.build()
    result = inspect(tmp_path)
    assert of_kind(result, "txnindex_mismatch") == []
    assert len(of_kind(result, "empty_transaction")) == 1


def test_txnindex_entry_in_the_wrong_segment(tmp_path: Path) -> None:
    """A transaction spanning segments: Kafka indexes it where its ABORT marker is."""
    b = LogDirBuilder(tmp_path)
    p = b.partition("t", 0)
    p.data(pid=4, n=3, txn=True).roll().data(pid=4, n=2, txn=True).abort(pid=4, epoch=0)
    b.build()
    assert not p.file(0, ".txnindex").exists() and p.file(3, ".txnindex").exists()
    entries = _txn_entries(tmp_path, 3)
    p.file(3, ".txnindex").unlink()
    p.write_txn_index(0, entries)
    found = of_kind(inspect(tmp_path), "txnindex_mismatch")
    assert len(found) == 2
    assert any("00000000000000000003.txnindex is missing" in f.message for f in found)
    assert any("00000000000000000000.txnindex lists" in f.message for f in found)


# -- snapshots --------------------------------------------------------------------------------


def _snapshot_log(root: Path, *, checkpoints: bool = True) -> PartitionBuilder:
    b = LogDirBuilder(root, checkpoints=checkpoints)
    p = b.partition("t", 0)
    p.data(pid=1, n=2).data(pid=2, n=2, txn=True).commit(pid=2, epoch=0, coordinator_epoch=4)
    p.roll().snapshot()  # 5.snapshot
    p.data(pid=1, n=2).data(pid=3, epoch=2, n=3, txn=True)
    p.roll().snapshot()  # 10.snapshot: pid 3 open from 7
    p.data(pid=2, epoch=0, n=1, txn=True)
    b.build()
    return p


def _snapshot_entries(root: Path, offset: int) -> list[ProducerSnapshotEntry]:
    data = (root / "t-0" / snapshot_file_name(offset)).read_bytes()
    return list(read_producer_snapshot(data).entries)


def test_snapshots_from_the_replay_agree(tmp_path: Path) -> None:
    _snapshot_log(tmp_path)
    result = inspect(tmp_path)
    assert of_kind(result, "snapshot_mismatch", "corrupt_snapshot") == []
    assert result.partitions[0].last_stable_offset == 7


def test_corrupt_snapshot_falls_back_to_an_older_one(tmp_path: Path) -> None:
    p = _snapshot_log(tmp_path)
    path = tmp_path / "t-0" / snapshot_file_name(10)
    data = bytearray(path.read_bytes())
    data[20] ^= 0xFF
    path.write_bytes(bytes(data))
    [f] = of_kind(inspect(tmp_path), "corrupt_snapshot")
    assert f.level == "warning" and f.location == f"{path}:2"
    assert "CorruptSnapshotException" in f.message
    assert "falls back to 00000000000000000005.snapshot" in f.message
    assert p.log_end_offset == 11


def test_only_corrupt_snapshot_means_a_rebuild_from_the_log(tmp_path: Path) -> None:
    _snapshot_log(tmp_path)
    (tmp_path / "t-0" / snapshot_file_name(5)).unlink()
    (tmp_path / "t-0" / snapshot_file_name(10)).write_bytes(b"\x00\x01\x02")
    result = inspect(tmp_path)
    [f] = of_kind(result, "corrupt_snapshot")
    assert "rebuilds producer state from the log start offset 0" in f.message
    assert of_kind(result, "snapshot_mismatch") == []


def test_snapshot_field_differences_are_named(tmp_path: Path) -> None:
    p = _snapshot_log(tmp_path)
    entries = _snapshot_entries(tmp_path, 10)
    entries = [replace(e, producer_epoch=9, current_txn_first_offset=-1)
               if e.producer_id == 3 else e for e in entries]
    p.write_snapshot(10, entries)
    found = of_kind(inspect(tmp_path), "snapshot_mismatch")
    [f] = found  # the restart comparison does not repeat what the snapshot check said
    assert f.producer_id == 3 and f.offset == 10
    assert "producer_epoch 9 (log: 2)" in f.message
    assert "current_txn_first_offset -1 (log: 7)" in f.message
    assert "changes the LSO" in f.message


def test_snapshot_missing_a_recent_producer(tmp_path: Path) -> None:
    p = _snapshot_log(tmp_path)
    p.write_snapshot(5, [e for e in _snapshot_entries(tmp_path, 5) if e.producer_id != 1])
    [f] = of_kind(inspect(tmp_path), "snapshot_mismatch")
    assert f.producer_id == 1 and "is missing" in f.message and f.offset == 5


def test_snapshot_missing_an_expired_producer_is_fine(tmp_path: Path) -> None:
    b = LogDirBuilder(tmp_path)
    p = b.partition("t", 0)
    p.data(pid=1, n=2, at=T0).data(pid=2, n=2, at=T0 + 2 * DAY_MS).roll()
    entries = p.replay().state.snapshot_entries()
    p.write_snapshot(4, [e for e in entries if e.producer_id == 2])
    b.build()
    assert of_kind(inspect(tmp_path), "snapshot_mismatch") == []
    p.write_snapshot(4, [e for e in entries if e.producer_id == 1])
    [f] = of_kind(inspect(tmp_path), "snapshot_mismatch")
    assert f.producer_id == 2


def test_snapshot_with_a_producer_the_log_never_shows(tmp_path: Path) -> None:
    p = _snapshot_log(tmp_path)
    entries = _snapshot_entries(tmp_path, 5)
    p.write_snapshot(5, [*entries, replace(entries[0], producer_id=77)])
    [f] = of_kind(inspect(tmp_path), "snapshot_mismatch")
    assert f.producer_id == 77 and "never shows" in f.message


def test_snapshot_beyond_the_log_end(tmp_path: Path) -> None:
    p = _snapshot_log(tmp_path)
    p.write_snapshot(40, _snapshot_entries(tmp_path, 10))
    [f] = of_kind(inspect(tmp_path), "snapshot_mismatch")
    assert f.offset == 40 and "beyond the log end offset 11" in f.message
    assert "truncateAndReload" in f.message


def test_restart_from_a_snapshot_between_batches_disagrees(tmp_path: Path) -> None:
    """A snapshot the replay never passed (inside an offset gap) is still what a restart loads."""
    b = LogDirBuilder(tmp_path)
    p = b.partition("t", 0)
    p.raw(batch(0, 5)).raw(batch(10, 3))
    assert p.replay().state.snapshot_entries() == []
    p.write_snapshot(7, [ProducerSnapshotEntry(
        producer_id=5, producer_epoch=0, last_sequence=0, last_offset=3, offset_delta=0,
        timestamp=T0, coordinator_epoch=-1, current_txn_first_offset=3)])
    b.build()
    result = inspect(tmp_path)
    [f] = of_kind(result, "snapshot_mismatch")
    assert f.producer_id == 5 and f.message.startswith("restarting from 00000000000000000007")
    assert "open from offset 3" in f.message
    # The broker's state is the loaded snapshot's (UnifiedLog#rebuildProducerState), not the
    # whole log's: its open transaction holds the LSO.
    assert result.partitions[0].last_stable_offset == 3


def test_txnindex_entry_below_its_segment_fails_kafkas_sanity_check(tmp_path: Path) -> None:
    b = LogDirBuilder(tmp_path)
    p = b.partition("t", 0)
    p.data(pid=4, n=3, txn=True).roll().data(pid=4, n=2, txn=True).abort(pid=4, epoch=0)
    b.build()
    stray = AbortedTxnEntry(producer_id=8, first_offset=0, last_offset=1, last_stable_offset=2)
    p.write_txn_index(3, [stray, *_txn_entries(tmp_path, 3)])
    found = of_kind(inspect(tmp_path), "txnindex_mismatch")
    [sanity] = [f for f in found if "sanityCheck throws CorruptIndexException" in f.message]
    assert sanity.level == "error" and sanity.location is not None
    assert sanity.location.endswith("00000000000000000003.txnindex:18")
    assert any(f.producer_id == 8 and "lists an aborted transaction" in f.message for f in found)
