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

MAX_DETAILED = 10  # regressions reported one by one per segment; the rest are counted


def _regression(ctx: SegmentContext, position: int | None, offset: int, message: str) -> Finding:
    return Finding(kind="offset_regression", topic=ctx.topic, partition=ctx.partition,
                   offset=offset, location=location(ctx.log_path, position), message=message)


def check_segment(ctx: SegmentContext) -> Iterator[Finding]:
    """Offsets of one segment against each other, its file name and its neighbours."""
    h = ctx.scan.headers
    n = len(h)
    if not n:
        return
    base = h.base_offset
    last = h.last_offset
    position = h.position
    name = os.path.basename(ctx.log_path)
    first_base, first_pos = int(base[0]), int(position[0])
    if first_base < ctx.base_offset:
        yield _regression(ctx, first_pos, first_base,
                          f"first batch starts at offset {first_base}, below the base offset "
                          f"{ctx.base_offset} in the segment's name {name}: Kafka never appends "
                          "below a segment's base offset")
    if ctx.previous_last_offset is not None and first_base <= ctx.previous_last_offset:
        yield _regression(ctx, first_pos, first_base,
                          f"first batch starts at offset {first_base}, but the previous segment "
                          f"already reached offset {ctx.previous_last_offset}: the same offsets "
                          "exist twice in this partition")
    backwards = np.flatnonzero(last < base)
    for i in backwards[:MAX_DETAILED].tolist():
        yield _regression(ctx, int(position[i]), int(base[i]),
                          f"batch at offset {int(base[i])} ends at offset {int(last[i])}, before "
                          "it starts (negative lastOffsetDelta)")
    bad = np.flatnonzero(base[1:] <= last[:-1]) + 1
    for i in bad[:MAX_DETAILED].tolist():
        yield _regression(ctx, int(position[i]), int(base[i]),
                          f"batch at offset {int(base[i])} does not start above the previous "
                          f"batch's last offset {int(last[i - 1])}: offsets went backwards or "
                          "repeat")
    if len(bad) > MAX_DETAILED:
        i = int(bad[MAX_DETAILED])
        yield _regression(ctx, int(position[i]), int(base[i]),
                          f"{len(bad) - MAX_DETAILED} more batches in {name} do not start above "
                          "the previous batch's last offset")
    seg_last = int(last[-1])
    if ctx.next_base_offset is not None and seg_last >= ctx.next_base_offset:
        i = int(np.flatnonzero(last >= ctx.next_base_offset)[0])
        yield _regression(ctx, int(position[i]), int(base[i]),
                          f"batch at offset {int(base[i])} reaches offset {int(last[i])}, but the "
                          f"next segment is named for base offset {ctx.next_base_offset}: the "
                          "segments overlap")
    yield from _gaps(ctx, base, last, position, name)


def _gaps(ctx: SegmentContext, base: np.ndarray, last: np.ndarray, position: np.ndarray,
          name: str) -> Iterator[Finding]:
    """One ``offset_gap`` finding per segment: how many gaps, how many offsets, the first one."""
    # Gaps inside the segment, plus the one from the previous segment's last offset.
    prev_last = np.concatenate(([ctx.previous_last_offset if ctx.previous_last_offset is not None
                                 else base[0] - 1], last[:-1]))
    skipped = base - prev_last - 1
    gaps = np.flatnonzero(skipped > 0)
    if not len(gaps):
        return
    i = int(gaps[0])
    total = int(skipped[gaps].sum())
    first = (f"the first after offset {int(prev_last[i])}, next batch at {int(base[i])}"
             if len(gaps) > 1 else
             f"after offset {int(prev_last[i])}, next batch at {int(base[i])}")
    what = "gap" if len(gaps) == 1 else "gaps"
    cause = "normal after log compaction, otherwise records are missing"
    lo = int(position[i - 1] + ctx.scan.headers.size[i - 1]) if i else 0
    damage = [p for p in ctx.scan.problems if lo <= p.position < int(position[i])]
    if damage:
        cause = (f"the bytes before the next batch are damaged ({damage[0].kind} at "
                 f"{damage[0].position}), so those records are lost from this copy")
    yield Finding(
        kind="offset_gap", topic=ctx.topic, partition=ctx.partition, offset=int(base[i]),
        location=location(ctx.log_path, int(position[i])),
        message=f"{len(gaps)} {what} in the offsets of {name} ({total} offsets skipped; {first}): "
                + cause)
