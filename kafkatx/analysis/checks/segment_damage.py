"""Damage the segment scanner met: crc_mismatch, truncated_batch, corrupt_region, zero_padding,
invalid_batch (each a ``SegmentProblem`` of :mod:`kafkatx.formats.segment`)."""

from __future__ import annotations

from collections.abc import Iterator

from kafkatx.analysis.checks.context import SegmentContext
from kafkatx.analysis.findings import Finding, location


def check_segment(ctx: SegmentContext) -> Iterator[Finding]:
    for p in ctx.scan.problems:
        yield Finding(kind=p.kind, message=p.message, topic=ctx.topic, partition=ctx.partition,
                      location=location(ctx.log_path, p.position))
