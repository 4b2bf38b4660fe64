"""Invariant checks: one module per invariant, each yielding Findings from what was scanned.

A check module defines ``walk_segment(ctx: SegmentContext)`` (a ``SegmentWalk``: fed the
segment's columns chunk by chunk, then asked for its ``Finding``s) and/or
``check_partition(ctx: PartitionContext)`` (an iterable of ``Finding``). Checks never open
files: the engine hands them scanned columns and parsed index/snapshot files. Segment checks
see one chunk of columns at a time, as the replay does (memory bounded by a chunk, not by the
segment); partition checks run after the whole partition was replayed.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType

from kafkatx.analysis.checks.context import (
    PartitionCheck,
    PartitionContext,
    SegmentCheck,
    SegmentContext,
    SegmentWalk,
    SnapshotFile,
)

__all__ = ["PartitionCheck", "PartitionContext", "SegmentCheck", "SegmentContext", "SegmentWalk",
           "SnapshotFile", "partition_checks", "segment_checks"]

# One module per invariant (kafkatx/analysis/checks/<name>.py).
CHECK_MODULES = (
    "segment_damage",
    "offsets",
    "indexes",
    "txnindex",
    "snapshots",
    "leftovers",
    "producer_rules",
    "high_watermark",
    "transactions",
)


def _modules() -> list[ModuleType]:
    return [import_module(f"kafkatx.analysis.checks.{name}") for name in CHECK_MODULES]


def segment_checks() -> list[SegmentCheck]:
    return [m.walk_segment for m in _modules() if hasattr(m, "walk_segment")]


def partition_checks() -> list[PartitionCheck]:
    return [m.check_partition for m in _modules() if hasattr(m, "check_partition")]
