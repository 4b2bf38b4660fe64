"""Offset order of the batches of a partition: offset_regression and offset_gap.

Kafka assigns offsets monotonically (``UnifiedLog#append`` refuses an append whose first offset
is not above the log end: ``UnexpectedAppendOffsetException`` / ``OffsetsOutOfOrderException``),
and a segment only holds offsets from its file-name base offset on (``LogSegment#append`` ->
``ensureOffsetInRange``). So, in file order and across segments, every batch must start above
the previous batch's last offset, and never below its segment's base offset or at or above the
next segment's. Skipped offsets between batches are normal after log compaction (``Cleaner``
drops whole batches), which is why gaps are only counted, once per segment.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np

from kafkatx.analysis.checks.context import SegmentContext
from kafkatx.analysis.findings import Finding, location
from kafkatx.formats.segment_scan import SegmentScan

MAX_DETAILED = 10  # regressions reported one by one per segment; the rest are counted


def _regression(ctx: SegmentContext, position: int | None, offset: int, message: str) -> Finding:
    return Finding(kind="offset_regression", topic=ctx.topic, partition=ctx.partition,
                   offset=offset, location=location(ctx.log_path, position), message=message)


class OffsetsWalk:
    """Offsets of one segment against each other, its file name and its neighbours, walked
    chunk by chunk: what carries over is the previous batch's last offset and end, the first
    few regressions, counts and the first gap."""

    whole_segment_needed = False

    def __init__(self, ctx: SegmentContext) -> None:
        self.ctx = ctx
        self.batches = 0
        self.first: tuple[int, int] | None = None  # (base offset, position) of the first batch
        self.prev_last: int | None = None  # the previous batch's last offset
        self.prev_end = 0  # where the previous batch ends in the file
        self.backwards: list[tuple[int, int, int]] = []  # (position, base, last)
        self.bad: list[tuple[int, int, int]] = []  # (position, base, previous last)
        self.bad_count = 0
        self.overlap: tuple[int, int, int] | None = None  # first batch reaching the next base
        self.seg_last = -1
        self.gap_count = 0
        self.gap_total = 0
        self.first_gap: tuple[int, int, int, int] | None = None  # (prev last, base, pos, lo)

    def feed(self, chunk: SegmentScan) -> None:
        h = chunk.headers
        n = len(h)
        if not n:
            return
        ctx = self.ctx
        base, last, position = h.base_offset, h.last_offset, h.position
        ends = position + h.size
        if self.first is None:
            self.first = (int(base[0]), int(position[0]))
        backwards = np.flatnonzero(last < base)
        for i in backwards[:MAX_DETAILED - len(self.backwards)].tolist():
            self.backwards.append((int(position[i]), int(base[i]), int(last[i])))
        carry = self.prev_last
        if carry is None:  # the segment's first batch: compared with the previous segment's
            start = (ctx.previous_last_offset if ctx.previous_last_offset is not None
                     else int(base[0]) - 1)
        else:
            start = carry
        prev_last = np.concatenate(([start], last[:-1]))
        bad = np.flatnonzero(base <= prev_last)
        if carry is None:
            bad = bad[bad > 0]
        self.bad_count += len(bad)
        for i in bad[:MAX_DETAILED + 1 - len(self.bad)].tolist():
            self.bad.append((int(position[i]), int(base[i]), int(prev_last[i])))
        if self.overlap is None and ctx.next_base_offset is not None:
            reach = np.flatnonzero(last >= ctx.next_base_offset)
            if len(reach):
                i = int(reach[0])
                self.overlap = (int(position[i]), int(base[i]), int(last[i]))
        skipped = base - prev_last - 1
        gaps = np.flatnonzero(skipped > 0)
        if len(gaps):
            if self.first_gap is None:
                i = int(gaps[0])
                lo = int(ends[i - 1]) if i else self.prev_end
                self.first_gap = (int(prev_last[i]), int(base[i]), int(position[i]), lo)
            self.gap_count += len(gaps)
            self.gap_total += int(skipped[gaps].sum())
        self.batches += n
        self.prev_last = self.seg_last = int(last[-1])
        self.prev_end = int(ends[-1])

    def findings(self) -> Iterator[Finding]:
        ctx = self.ctx
        if self.first is None:
            return
        name = os.path.basename(ctx.log_path)
        first_base, first_pos = self.first
        if first_base < ctx.base_offset:
            yield _regression(ctx, first_pos, first_base,
                              f"first batch starts at offset {first_base}, below the base offset "
                              f"{ctx.base_offset} in the segment's name {name}: Kafka never "
                              "appends below a segment's base offset")
        if ctx.previous_last_offset is not None and first_base <= ctx.previous_last_offset:
            yield _regression(ctx, first_pos, first_base,
                              f"first batch starts at offset {first_base}, but the previous "
                              f"segment already reached offset {ctx.previous_last_offset}: the "
                              "same offsets exist twice in this partition")
        for pos, base, last in self.backwards:
            yield _regression(ctx, pos, base,
                              f"batch at offset {base} ends at offset {last}, before it starts "
                              "(negative lastOffsetDelta)")
        for pos, base, prev in self.bad[:MAX_DETAILED]:
            yield _regression(ctx, pos, base,
                              f"batch at offset {base} does not start above the previous "
                              f"batch's last offset {prev}: offsets went backwards or repeat")
        if self.bad_count > MAX_DETAILED:
            pos, base, _ = self.bad[MAX_DETAILED]
            yield _regression(ctx, pos, base,
                              f"{self.bad_count - MAX_DETAILED} more batches in {name} do not "
                              "start above the previous batch's last offset")
        if (ctx.next_base_offset is not None and self.seg_last >= ctx.next_base_offset
                and self.overlap is not None):
            pos, base, last = self.overlap
            yield _regression(ctx, pos, base,
                              f"batch at offset {base} reaches offset {last}, but the next "
                              f"segment is named for base offset {ctx.next_base_offset}: the "
                              "segments overlap")
        yield from self._gaps(name)

    def _gaps(self, name: str) -> Iterator[Finding]:
        """One ``offset_gap`` finding per segment: how many gaps, how many offsets, the first
        one (gaps inside the segment, plus the one from the previous segment's last offset)."""
        if self.first_gap is None:
            return
        ctx = self.ctx
        prev, base, pos, lo = self.first_gap
        first = (f"the first after offset {prev}, next batch at {base}" if self.gap_count > 1
                 else f"after offset {prev}, next batch at {base}")
        what = "gap" if self.gap_count == 1 else "gaps"
        cause = "normal after log compaction, otherwise records are missing"
        damage = [p for p in ctx.problems if lo <= p.position < pos]
        if damage:
            cause = (f"the bytes before the next batch are damaged ({damage[0].kind} at "
                     f"{damage[0].position}), so those records are lost from this copy")
        yield Finding(
            kind="offset_gap", topic=ctx.topic, partition=ctx.partition, offset=base,
            location=location(ctx.log_path, pos),
            message=f"{self.gap_count} {what} in the offsets of {name} ({self.gap_total} offsets "
                    f"skipped; {first}): " + cause)


walk_segment = OffsetsWalk
