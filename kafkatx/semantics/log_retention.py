"""Which old segments a log deletes: Kafka's retention rules, pure and I/O-free.

Mirrors ``UnifiedLog#deleteOldSegments`` (Kafka 3.x and 4.x without tiered storage): the
log-start-offset breach always, then, for ``cleanup.policy`` with ``delete``, the
``retention.bytes`` and ``retention.ms`` breaches, each taking segments from the oldest while its
predicate holds (``UnifiedLog#deletableSegments``): never a segment reaching past the high
watermark, never a last segment that is empty. A non-empty active segment can go: the caller
rolls a new one first (``UnifiedLog#deleteSegments``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence

from kafkatx.lazy_dataclass import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class SegmentExtent:
    """What the retention rules read of a segment (``LogSegment``)."""

    base_offset: int
    size: int  # bytes
    largest_timestamp: int  # LogSegment#largestTimestamp: max timestamp, else last modified


class DeletionReason(enum.Enum):
    """``SegmentDeletionReason`` subclasses."""

    LOG_START_OFFSET_BREACH = "log start offset breach"
    RETENTION_SIZE_BREACH = "retention size breach"
    RETENTION_MS_BREACH = "retention time breach"


Predicate = Callable[[SegmentExtent, SegmentExtent | None], bool]


def deletable_count(segments: Sequence[SegmentExtent], predicate: Predicate, *,
                    high_watermark: int, log_end_offset: int) -> int:
    """``UnifiedLog#deletableSegments``: how many segments from the oldest may go."""
    count = 0
    for i, segment in enumerate(segments):
        following = segments[i + 1] if i + 1 < len(segments) else None
        last_and_empty = following is None and segment.size == 0
        upper_bound = following.base_offset if following is not None else log_end_offset
        if last_and_empty or high_watermark < upper_bound or not predicate(segment, following):
            break
        count += 1
    return count


def log_start_breach(log_start_offset: int) -> Predicate:
    """``deleteLogStartOffsetBreachedSegments``: the next segment starts at or below it."""
    return lambda _segment, following: (following is not None
                                        and following.base_offset <= log_start_offset)


def retention_ms_breach(now_ms: int, retention_ms: int) -> Predicate | None:
    """``deleteRetentionMsBreachedSegments`` (None when retention.ms < 0)."""
    if retention_ms < 0:
        return None
    return lambda segment, _following: now_ms - segment.largest_timestamp > retention_ms


def retention_size_breach(segments: Sequence[SegmentExtent],
                          retention_bytes: int) -> Predicate | None:
    """``deleteRetentionSizeBreachedSegments``: segments go while the log stays at or above
    ``retention.bytes`` without them (None when it is < 0 or the log is smaller)."""
    size = sum(s.size for s in segments)
    if retention_bytes < 0 or size < retention_bytes:
        return None
    remaining = [size - retention_bytes]

    def breached(segment: SegmentExtent, _following: SegmentExtent | None) -> bool:
        if remaining[0] - segment.size >= 0:
            remaining[0] -= segment.size
            return True
        return False

    return breached


def retention_rules(delete_enabled: bool) -> tuple[DeletionReason, ...]:
    """The rules ``UnifiedLog#deleteOldSegments`` applies, in order."""
    if not delete_enabled:
        return (DeletionReason.LOG_START_OFFSET_BREACH,)
    return (DeletionReason.LOG_START_OFFSET_BREACH, DeletionReason.RETENTION_SIZE_BREACH,
            DeletionReason.RETENTION_MS_BREACH)


def predicate_for(reason: DeletionReason, segments: Sequence[SegmentExtent], *,
                  log_start_offset: int, now_ms: int, retention_ms: int,
                  retention_bytes: int) -> Predicate | None:
    """The predicate of one rule over the segments as they are now."""
    if reason is DeletionReason.LOG_START_OFFSET_BREACH:
        return log_start_breach(log_start_offset)
    if reason is DeletionReason.RETENTION_SIZE_BREACH:
        return retention_size_breach(segments, retention_bytes)
    return retention_ms_breach(now_ms, retention_ms)
