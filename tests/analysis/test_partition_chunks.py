"""The local engine walks each segment in chunks of its columns (``engines/segment_chunks.py``):
every answer equals the one from the segment scanned whole (``file_chunks(None)``, one chunk),
on every bundled log dir and on logs built here to put transactions, markers, damage, index
entries and offsets that go back across chunk boundaries. ``window=1`` makes every batch a chunk
of its own, ``window=300`` a few batches a chunk."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkatx.analysis.checks import PartitionContext
from kafkatx.analysis.findings import Finding
from kafkatx.analysis.restart_view import load_after_restart
from kafkatx.analysis.view_names import AFTER_RESTART
from kafkatx.engines.local import AnalysisOptions, analyze_partition, start_inspection
from kafkatx.engines.segment_chunks import ChunksOf, file_chunks
from kafkatx.formats.record_batch import ControlType, Record, build_batch, build_control_batch
from kafkatx.formats.segment_scan import SegmentScan
from kafkatx.formats.time_index import TimeIndexEntry, build_time_index
from kafkatx.storage.discovery import PartitionDir
from kafkatx.storage.segment_writer import SegmentIndexes, segment_name
from tests.analysis.logdirs import T0, LogDirBuilder
from tests.golden.cases import LOG_DIRS, ROOT

NOW_MS = 1_798_761_600_000  # 2027-01-01, after every fixture's newest record
OPTIONS = {
    "inspect": AnalysisOptions(now_ms=NOW_MS),
    "verify": AnalysisOptions(now_ms=NOW_MS, validate_records=True),
    "after-restart": AnalysisOptions(now_ms=NOW_MS, view=AFTER_RESTART),
}


def _counting(window: int | None) -> tuple[ChunksOf, list[Path]]:
    inner = file_chunks(window)
    walked: list[Path] = []

    def chunks(path: Path, start: int = 0) -> Iterator[SegmentScan]:
        for chunk in inner(path, start):
            walked.append(path)
            yield chunk

    return chunks, walked


def _reports(paths: list[Path], options: AnalysisOptions, chunks: ChunksOf) -> list[object]:
    """Each partition's report, and where the checks took the cleaned prefix to end."""
    _, _, work, options = start_inspection(paths, options=options)
    cleaned: list[int] = []

    def finalize(pdir: PartitionDir, ctx: PartitionContext, found: list[Finding]
                 ) -> list[Finding]:
        cleaned.append(ctx.cleaned_end)
        return found

    return [analyze_partition(pdir, high_watermark=hw, high_watermark_at_log_end=at_end,
                              log_start_offset=start, cleaner_offset=cleaner, options=options,
                              chunks=chunks, finalize=finalize)
            for pdir, hw, start, cleaner, at_end in work] + cleaned


def _same_in_chunks(paths: list[Path], options: AnalysisOptions,
                    windows: tuple[int, ...] = (1, 300)) -> bool:
    """True when some segment was walked in several chunks."""
    whole, whole_walked = _counting(None)
    expected = _reports(paths, options, whole)
    several = False
    for window in windows:
        chunks, walked = _counting(window)
        assert _reports(paths, options, chunks) == expected, window
        several |= len(walked) > len(whole_walked)
    return several


LOG_DIR_PATHS = {**{name: [ROOT / p for p in paths] for name, paths in LOG_DIRS.items()},
                 **{f"restart-{p.name}": [p] for p in sorted((ROOT / "fixtures" / "restart")
                                                            .iterdir()) if p.is_dir()}}


# Every kind of log dir (the replicas' copies are served ones again), and the other views on
# those with damage, a crash and transactions left open.
VIEWS = [("inspect", name) for name in sorted(LOG_DIR_PATHS)
         if not name.startswith("served-replicas-")] + [
    (view, name) for view in ("verify", "after-restart")
    for name in ("corrupt", "logdir", "restart-crashed", "served-hanging", "served-compacted")]


@pytest.mark.parametrize(("view", "name"), VIEWS)
def test_bundled_log_dirs_same_in_chunks(view: str, name: str) -> None:
    _same_in_chunks(LOG_DIR_PATHS[name], OPTIONS[view], windows=(1,))


def _transactions_across_segments(root: Path) -> Path:
    """Transactions open across chunks and a segment roll, committed, aborted and left open,
    interleaved producers, snapshots (the rebuild walks again from one) and a HW below the end
    (records pending walked again from the LSO)."""
    b = LogDirBuilder(root)
    p = b.partition("orders", 0, index_interval_bytes=64)
    for i in range(6):
        p.data(pid=10, epoch=1, n=2, txn=True).data(pid=11, epoch=0, n=1, txn=True)
        p.data(n=1)
        if i % 2:
            p.commit(pid=10, epoch=1)
    p.abort(pid=11, epoch=0)
    p.snapshot().roll()
    p.data(pid=12, epoch=3, n=3, txn=True).data(pid=10, epoch=1, n=1, txn=True)
    p.commit(pid=12, epoch=3).data(pid=11, epoch=1, n=2, txn=True)
    p.snapshot().data(n=2).data(pid=12, epoch=3, n=1, txn=True)
    p.hw(p.log_end_offset - 3)
    return b.build()


def test_transactions_across_chunks_and_segments(tmp_path: Path) -> None:
    root = _transactions_across_segments(tmp_path)
    for options in OPTIONS.values():
        assert _same_in_chunks([root], options)


def _regressing_segment(d: Path) -> None:
    """One segment whose offsets go back, with index entries on both sides of the regression
    and a damaged batch. Its time index points at offset 4, whose batch comes after offsets
    went back: a binary search of the whole segment's base offsets (what Kafka's and kafkatx's
    lookups do) finds the batch at 1, the last batch starting at or before 4 is the one at 4;
    so the time index of such a segment is judged on the whole segment."""
    indexes = SegmentIndexes(base_offset=0, index_interval_bytes=60)
    out = bytearray()
    for n, (offset, ts) in enumerate([(0, 5), (1, 9), (2, 7), (3, 12), (1, 20), (5, 15),
                                      (6, 30), (4, 25), (8, 31)]):
        batch = build_batch([Record(offset=offset, timestamp=T0 + ts, key=b"k",
                                    value=b"v" * n)],
                            base_offset=offset, producer_id=7, producer_epoch=0,
                            base_sequence=n, is_transactional=True)
        indexes.on_append(len(out), len(batch), offset, T0 + ts)
        out += batch
    marker = bytearray(build_control_batch(base_offset=9, producer_id=7, producer_epoch=0,
                                           control_type=ControlType.COMMIT, timestamp=T0 + 40))
    out += marker
    damaged = bytearray(build_batch([Record(offset=12, timestamp=T0 + 41, key=b"x", value=b"y")],
                                    base_offset=12, producer_id=7, producer_epoch=0,
                                    base_sequence=9))
    damaged[-1] ^= 0xFF  # a CRC mismatch
    out += damaged
    d.mkdir(parents=True)
    (d / segment_name(0, ".log")).write_bytes(bytes(out))
    indexes.write_indexes(d)
    (d / segment_name(0, ".timeindex")).write_bytes(build_time_index(
        [TimeIndexEntry(timestamp=T0 + 12, offset=3, relative_offset=3),
         TimeIndexEntry(timestamp=T0 + 25, offset=4, relative_offset=4),
         TimeIndexEntry(timestamp=T0 + 31, offset=8, relative_offset=8)], 0))


def test_offsets_going_back_and_damage(tmp_path: Path) -> None:
    _regressing_segment(tmp_path / "t-0")
    for options in OPTIONS.values():
        assert _same_in_chunks([tmp_path / "t-0"], options)


def _restart_view(pdir: PartitionDir, chunks: ChunksOf) -> object:
    """What the model of Kafka's log load leaves: its report, file changes, producers, open
    and unreplicated transactions, snapshots, next offsets and the offsets it keeps for a
    first unstable offset (``offset_metadata``)."""
    out = load_after_restart(pdir, now_ms=NOW_MS, chunks=chunks)
    state = out.state
    ends = range(out.log_start_offset, out.log_end_offset + 1,
                 max(1, (out.log_end_offset - out.log_start_offset) // 7))
    return (out.to_dict(), out.file_changes(), out.aborted, out.replayed_batches,
            state.snapshot_entries(), repr(state.ongoing_txns.values_by_key),
            repr(state.unreplicated_txns.values_by_key), state.last_map_offset,
            {o: repr(s.entries) for o, s in out.snapshots.files.items()},
            [(s.base_offset, s.size, s.next_offset()) for s in out.segments],
            [out.offset_metadata(o) for o in ends] if out.failure is None else None)


def _restart_same_in_chunks(paths: list[Path], windows: tuple[int, ...] = (1, 300)) -> bool:
    """The load model on every partition of ``paths`` walked in chunks of ``windows`` equals
    it walked whole; True when some segment was walked in several chunks."""
    _, _, work, _ = start_inspection(paths, options=OPTIONS["inspect"])
    pdirs = [w[0] for w in work]
    whole, whole_walked = _counting(None)
    expected = [_restart_view(pdir, whole) for pdir in pdirs]
    several = False
    for window in windows:
        chunks, walked = _counting(window)
        assert [_restart_view(pdir, chunks) for pdir in pdirs] == expected, window
        several |= len(walked) > len(whole_walked)
    return several


@pytest.mark.parametrize("name", ["corrupt", "logdir", "served-compacted", *sorted(
    n for n in LOG_DIR_PATHS if n.startswith("restart-"))])
def test_restart_view_same_in_chunks(name: str) -> None:
    """The restart view (``inspect``'s prediction, ``--after-restart``) walks a segment in
    chunks: recovery (valid bytes, offset checks, replay), the rebuild from a snapshot, the
    next offsets and ``offset_metadata`` give what the whole segment gives."""
    _restart_same_in_chunks(LOG_DIR_PATHS[name], windows=(1,))


def _index_entry_going_back(d: Path, back_to: int) -> None:
    """A segment of ~1 KB batches (offset index entries every 4 KiB on recovery) whose offsets
    grow for several chunks, then go back to ``back_to``; then a second segment."""
    d.mkdir(parents=True)
    out = bytearray()
    # recovery's index entries fall on the 5th, 9th and 13th batch: the 13th goes back
    for n, offset in enumerate([*range(12), back_to, back_to + 1, 14]):
        out += build_batch([Record(offset=offset, timestamp=T0 + n, key=b"k",
                                   value=b"v" * 1000)],
                           base_offset=offset, producer_id=7, producer_epoch=0,
                           base_sequence=n, is_transactional=True)
    out += build_control_batch(base_offset=15, producer_id=7, producer_epoch=0,
                               control_type=ControlType.ABORT, timestamp=T0 + 20)
    (d / segment_name(0, ".log")).write_bytes(bytes(out))
    (d / segment_name(0, ".index")).write_bytes(b"")
    (d / segment_name(16, ".log")).write_bytes(bytes(build_batch(
        [Record(offset=16, timestamp=T0 + 30, key=b"k", value=b"w")], base_offset=16)))
    (d / segment_name(16, ".index")).write_bytes(b"")


@pytest.mark.parametrize(("back_to", "fails"), [(2, True), (9, False)])
def test_restart_recovery_offsets_going_back_in_chunks(tmp_path: Path, back_to: int,
                                                       fails: bool) -> None:
    """Recovery's offset index (an entry every 4 KiB, InvalidOffsetException when one is not
    above the last) across chunks: offsets going back below the last entry empty the segment
    (and drop the next), going back above it keep it; the entries before the regression are
    found by walking the segment again."""
    _index_entry_going_back(tmp_path / "t-0", back_to)
    assert _restart_same_in_chunks([tmp_path / "t-0"], windows=(300,))  # a batch a chunk
    (pdir,) = [w[0] for w in start_inspection([tmp_path / "t-0"], options=OPTIONS["inspect"])[2]]
    steps = " ".join(load_after_restart(pdir, now_ms=NOW_MS, chunks=file_chunks(300)).steps)
    assert ("is not above the previous index entry's" in steps) is fails
