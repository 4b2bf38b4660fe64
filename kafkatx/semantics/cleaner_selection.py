"""Which part of a compacted log Kafka's cleaner cleans next, pure and I/O-free.

Mirrors ``LogCleanerManager.cleanableOffsets`` (the first dirty offset from
``cleaner-offset-checkpoint``, reset to the log start offset when invalid; the first uncleanable
offset: the LSO, the active segment, the first segment younger than ``min.compaction.lag.ms``),
``calculateCleanableBytes``, ``maxCompactionDelay`` (``max.compaction.lag.ms``), ``LogToClean``'s
cleanable ratio, ``grabFilthiestCompactedLog``'s filter (``min.cleanable.dirty.ratio`` or a
compaction that is due) and ``Cleaner#groupSegmentsBySize`` (segments merged into one cleaned
segment up to ``segment.bytes``; Kafka also bounds the groups' index sizes by
``segment.index.bytes``, which the small indexes of kafkatx serve never reach).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from kafkatx.lazy_dataclass import dataclass

INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True, kw_only=True)
class SegmentInfo:
    """What the cleaner's selection reads of a segment."""

    base_offset: int
    size: int
    largest_timestamp: int  # LogSegment#largestTimestamp
    first_batch_timestamp: int  # LogSegment#getFirstBatchTimestamp (-1: none)


@dataclass(frozen=True, slots=True, kw_only=True)
class LogToClean:
    """``LogToClean`` with the offsets ``cleanableOffsets`` chose."""

    first_dirty_offset: int
    first_uncleanable_offset: int  # a segment base offset (calculateCleanableBytes)
    clean_bytes: int
    cleanable_bytes: int
    need_compaction_now: bool
    force_update_checkpoint: bool

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0

    def should_clean(self, min_cleanable_ratio: float) -> bool:
        """``grabFilthiestCompactedLog``: a due compaction with bytes to clean, or a dirty
        ratio above ``min.cleanable.dirty.ratio``."""
        if self.total_bytes <= 0:
            return False
        return ((self.need_compaction_now and self.cleanable_bytes > 0)
                or self.cleanable_ratio > min_cleanable_ratio)


def segment_range(bases: Sequence[int], start: int, end: int) -> slice:
    """``LogSegments#values(from, to)`` over segments with these base offsets: the segments from
    the one holding ``start`` (the first one if none does) up to those starting before ``end``;
    none when start == end."""
    if start >= end:
        return slice(0, 0)
    first = bisect.bisect_right(bases, start) - 1
    return slice(max(first, 0), bisect.bisect_left(bases, end))


def _segments_in(segments: Sequence[SegmentInfo], start: int, end: int) -> list[SegmentInfo]:
    """``UnifiedLog#logSegments(from, to)``."""
    return list(segments[segment_range([s.base_offset for s in segments], start, end)])


def _non_active_from(segments: Sequence[SegmentInfo], offset: int) -> list[SegmentInfo]:
    """``LogSegments#nonActiveLogSegmentsFrom``: from the segment holding ``offset`` to the
    active segment, exclusive."""
    active = segments[-1].base_offset
    return [] if offset > active else _segments_in(segments, offset, active)


def log_to_clean(segments: Sequence[SegmentInfo], *, checkpoint: int | None,
                 log_start_offset: int, log_end_offset: int, last_stable_offset: int,
                 now_ms: int, min_compaction_lag_ms: int,
                 max_compaction_lag_ms: int) -> LogToClean:
    """``cleanableOffsets`` + ``calculateCleanableBytes`` + ``maxCompactionDelay`` for a log
    whose segments are ``segments`` (the last one active)."""
    dirty = log_start_offset if checkpoint is None else checkpoint
    force = False
    if dirty < log_start_offset or dirty > log_end_offset:
        dirty, force = log_start_offset, checkpoint is not None
    active = segments[-1]
    candidates = [last_stable_offset, active.base_offset]
    lag = max(min_compaction_lag_ms, 0)
    if lag > 0:
        for s in _non_active_from(segments, dirty):
            if s.largest_timestamp > now_ms - lag:
                candidates.append(s.base_offset)
                break
    uncleanable = max(dirty, min(candidates))
    following = _non_active_from(segments, uncleanable)
    first_uncleanable = following[0].base_offset if following else active.base_offset
    cleanable_bytes = sum(s.size for s in _segments_in(segments, min(dirty, first_uncleanable),
                                                       first_uncleanable))
    clean_bytes = sum(s.size for s in _segments_in(segments, -1, dirty))
    timestamps = [s.first_batch_timestamp for s in _non_active_from(segments, dirty)
                  if s.first_batch_timestamp > 0]
    clean_until = now_ms - max(max_compaction_lag_ms, 0)
    due = bool(timestamps) and min(timestamps) < clean_until
    return LogToClean(first_dirty_offset=dirty, first_uncleanable_offset=first_uncleanable,
                      clean_bytes=clean_bytes, cleanable_bytes=cleanable_bytes,
                      need_compaction_now=due, force_update_checkpoint=force)


def group_segments_by_size(segments: Sequence[SegmentInfo], max_size: int,
                           first_uncleanable_offset: int) -> list[list[SegmentInfo]]:
    """``Cleaner#groupSegmentsBySize`` (log sizes, and offsets within an int of the group's
    last segment base)."""
    groups: list[list[SegmentInfo]] = []
    rest = list(segments)
    while rest:
        group = [rest.pop(0)]
        size = group[0].size
        while rest and size + rest[0].size <= max_size and (
                rest[0].size == 0
                or _last_offset_of_first(rest, first_uncleanable_offset)
                - group[-1].base_offset <= INT32_MAX):
            size += rest[0].size
            group.append(rest.pop(0))
        groups.append(group)
    return groups


def _last_offset_of_first(rest: Sequence[SegmentInfo], first_uncleanable_offset: int) -> int:
    """``lastOffsetForFirstSegment``."""
    return rest[1].base_offset - 1 if len(rest) > 1 else first_uncleanable_offset - 1
