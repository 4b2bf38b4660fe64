"""Kafka's retention rules (``UnifiedLog#deleteOldSegments`` / ``#deletableSegments``)."""

from __future__ import annotations

from kafkatx.semantics.log_retention import (
    DeletionReason,
    SegmentExtent,
    deletable_count,
    predicate_for,
    retention_rules,
)

NOW = 1_760_000_000_000


def seg(base: int, size: int = 100, ts: int = NOW - 10_000) -> SegmentExtent:
    return SegmentExtent(base_offset=base, size=size, largest_timestamp=ts)


def count(segments: list[SegmentExtent], reason: DeletionReason, *, hw: int, leo: int,
          start: int = 0, retention_ms: int = -1, retention_bytes: int = -1) -> int:
    predicate = predicate_for(reason, segments, log_start_offset=start, now_ms=NOW,
                              retention_ms=retention_ms, retention_bytes=retention_bytes)
    return 0 if predicate is None else deletable_count(segments, predicate,
                                                       high_watermark=hw, log_end_offset=leo)


def test_retention_ms_takes_old_segments_from_the_oldest_up_to_the_high_watermark() -> None:
    """``UnifiedLog#deleteRetentionMsBreachedSegments``: ``now - largestTimestamp >
    retention.ms`` from the oldest segment on; a segment whose upper bound (next base or log
    end) is past the high watermark stays, and the scan stops at the first kept segment."""
    segments = [seg(0, ts=NOW - 5_000), seg(10, ts=NOW - 500), seg(20, ts=NOW - 5_000),
                seg(30, ts=NOW - 5_000)]
    ms = DeletionReason.RETENTION_MS_BREACH
    assert count(segments, ms, hw=40, leo=40, retention_ms=1_000) == 1  # 10 is young
    old = [seg(0, ts=NOW - 5_000), seg(10, ts=NOW - 5_000), seg(20, ts=NOW - 5_000)]
    assert count(old, ms, hw=30, leo=30, retention_ms=1_000) == 3  # the active one too
    assert count(old, ms, hw=29, leo=30, retention_ms=1_000) == 2  # not past the HW
    assert count(old, ms, hw=30, leo=30, retention_ms=-1) == 0  # no time limit
    # A last segment that is empty is never returned.
    assert count([*old, seg(30, size=0)], ms, hw=30, leo=30, retention_ms=1_000) == 3


def test_retention_bytes_keeps_the_log_at_least_that_large() -> None:
    """``UnifiedLog#deleteRetentionSizeBreachedSegments``: nothing below the limit; else
    segments go while the size left over the limit covers them."""
    segments = [seg(0, 100), seg(10, 100), seg(20, 100), seg(30, 50)]
    size = DeletionReason.RETENTION_SIZE_BREACH
    assert count(segments, size, hw=40, leo=40, retention_bytes=400) == 0
    assert count(segments, size, hw=40, leo=40, retention_bytes=350) == 0  # 350 >= 350: diff 0
    assert count(segments, size, hw=40, leo=40, retention_bytes=250) == 1
    assert count(segments, size, hw=40, leo=40, retention_bytes=150) == 2
    assert count(segments, size, hw=40, leo=40, retention_bytes=0) == 4


def test_log_start_breach_and_the_rules_of_each_policy() -> None:
    """``deleteLogStartOffsetBreachedSegments`` (a segment goes when the next one starts at or
    below the log start offset) runs for every policy; the size and time rules only with
    delete (``UnifiedLog#deleteOldSegments``)."""
    segments = [seg(0), seg(10), seg(20)]
    start = DeletionReason.LOG_START_OFFSET_BREACH
    assert count(segments, start, hw=30, leo=30, start=9) == 0
    assert count(segments, start, hw=30, leo=30, start=10) == 1
    assert count(segments, start, hw=30, leo=30, start=25) == 2  # never the last one
    assert retention_rules(False) == (start,)
    assert retention_rules(True) == (start, DeletionReason.RETENTION_SIZE_BREACH,
                                     DeletionReason.RETENTION_MS_BREACH)
