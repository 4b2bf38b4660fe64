"""Which range Kafka's cleaner cleans (``LogCleanerManager.cleanableOffsets`` /
``calculateCleanableBytes`` / ``maxCompactionDelay``, ``LogToClean``,
``Cleaner#groupSegmentsBySize``)."""

from __future__ import annotations

from kafkatx.semantics.cleaner_selection import (
    SegmentInfo,
    group_segments_by_size,
    log_to_clean,
)

NOW = 1_760_000_000_000


def segs(*bases: int, size: int = 100, ts: int = NOW - 60_000) -> list[SegmentInfo]:
    return [SegmentInfo(base_offset=b, size=size, largest_timestamp=ts, first_batch_timestamp=ts)
            for b in bases]


def choose(segments: list[SegmentInfo], checkpoint: int | None = None, *, start: int = 0,
           end: int = 40, lso: int = 40, lag: int = 0, max_lag: int = 2**63 - 1):
    return log_to_clean(segments, checkpoint=checkpoint, log_start_offset=start,
                        log_end_offset=end, last_stable_offset=lso, now_ms=NOW,
                        min_compaction_lag_ms=lag, max_compaction_lag_ms=max_lag)


def test_dirty_range_stops_at_the_active_segment_and_the_lso() -> None:
    """``cleanableOffsets``: never the active segment, never past the LSO (rounded down to the
    segment holding it, ``calculateCleanableBytes``); the ratio is dirty / (clean + dirty)."""
    segments = segs(0, 10, 20, 30)
    ltc = choose(segments, 10)
    assert (ltc.first_dirty_offset, ltc.first_uncleanable_offset) == (10, 30)
    assert (ltc.clean_bytes, ltc.cleanable_bytes) == (100, 200)
    assert abs(ltc.cleanable_ratio - 2 / 3) < 1e-9
    assert ltc.should_clean(0.5) and not ltc.should_clean(0.7)
    pinned = choose(segments, 0, lso=15)  # an open transaction at 15
    assert pinned.first_uncleanable_offset == 10 and pinned.cleanable_bytes == 100


def test_invalid_checkpoints_reset_to_the_log_start() -> None:
    """A checkpoint below the log start (retention, DeleteRecords) or past the log end is reset
    to the log start offset and must be rewritten (``forceUpdateCheckpoint``)."""
    segments = segs(10, 20, 30)
    for checkpoint in (5, 41):
        ltc = choose(segments, checkpoint, start=10)
        assert ltc.first_dirty_offset == 10 and ltc.force_update_checkpoint
    assert not choose(segments, None, start=10).force_update_checkpoint


def test_compaction_lags() -> None:
    """``min.compaction.lag.ms``: the first segment younger than it is uncleanable;
    ``max.compaction.lag.ms``: a dirty segment older than it makes the clean due whatever the
    ratio (``maxCompactionDelay``)."""
    old = segs(0, 10, ts=NOW - 600_000)
    young = segs(20, ts=NOW - 1_000)
    ltc = choose([*old, *young, *segs(30)], 0, lag=60_000)
    assert ltc.first_uncleanable_offset == 20
    assert not choose(segs(0, 10, 20, 30), 10).need_compaction_now
    due = choose(segs(0, 10, 20, 30), 10, max_lag=1_000)
    assert due.need_compaction_now and due.should_clean(0.99)


def test_segments_group_up_to_segment_bytes() -> None:
    """``groupSegmentsBySize``: consecutive segments while their sizes fit segment.bytes."""
    segments = [SegmentInfo(base_offset=b, size=s, largest_timestamp=NOW,
                            first_batch_timestamp=NOW)
                for b, s in ((0, 400), (10, 500), (20, 200), (30, 0), (40, 900))]
    groups = group_segments_by_size(segments, 1000, 50)
    assert [[s.base_offset for s in g] for g in groups] == [[0, 10], [20, 30], [40]]
