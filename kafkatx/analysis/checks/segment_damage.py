"""Damage the segment scanner met: crc_mismatch, truncated_batch, corrupt_region, zero_padding,
invalid_batch (each a ``SegmentProblem`` of :mod:`kafkatx.formats.segment`)."""

from __future__ import annotations

from collections.abc import Iterator

from kafkatx.analysis.checks.context import SegmentContext
from kafkatx.analysis.findings import Finding, location
from kafkatx.formats.segment_scan import SegmentScan


class DamageWalk:
    """The segment's problems, once walked (the engine gathers them from every chunk)."""

    whole_segment_needed = False

    def __init__(self, ctx: SegmentContext) -> None:
        self.ctx = ctx

    def feed(self, chunk: SegmentScan) -> None:
        pass

    def findings(self) -> Iterator[Finding]:
        ctx = self.ctx
        for p in ctx.problems:
            yield Finding(kind=p.kind, message=p.message, topic=ctx.topic,
                          partition=ctx.partition, location=location(ctx.log_path, p.position))


walk_segment = DamageWalk
