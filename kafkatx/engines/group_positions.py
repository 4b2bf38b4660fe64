"""Consumer groups' positions over an inspection: the groups loaded from ``__consumer_offsets``
joined with each partition's read_committed visibility, replayed by the engine that ran the
inspection (``kafkatx groups``, and ``inspect``'s groups needing attention)."""

from __future__ import annotations

from collections.abc import Sequence

from kafkatx.analysis.groups import (
    GroupSummary,
    PartitionVisibility,
    group_report,
    held_by_transaction,
    load_groups,
)
from kafkatx.analysis.partition_report import PartitionReport
from kafkatx.analysis.replica_authority import follower_paths
from kafkatx.engines.base import Engine
from kafkatx.engines.local import Inspection
from kafkatx.semantics.read_committed import IsolationLevel
from kafkatx.storage.discovery import PartitionDir


def visibility(engine: Engine, pdir: PartitionDir, report: PartitionReport,
               problems: list[str]) -> PartitionVisibility:
    """Replay a read_committed consumer of the whole partition (records decoded)."""
    view = engine.consumer_view(pdir, isolation=IsolationLevel.READ_COMMITTED,
                                high_watermark=report.high_watermark)
    visible: list[int] = []
    behind: list[int] = []
    for r in engine.replay_records(pdir, view, show_hidden=True, on_problem=problems.append):
        if r.visible:
            visible.append(r.record.offset)
        elif r.reason == "beyond_lso":
            behind.append(r.record.offset)
    return PartitionVisibility(visible=sorted(visible), behind_lso=sorted(behind))


def analyze_groups(engine: Engine, result: Inspection, problems: list[str], *,
                   now_ms: int | None, groups: Sequence[str] = (),
                   replay_all: bool = True) -> list[GroupSummary]:
    """The groups of the inspected paths; ``replay_all=False`` replays only the partitions an
    open transaction holds (enough to tell stuck groups, as ``inspect`` needs)."""
    disc = result.discovery
    pdirs = disc.all_partitions() if disc is not None else []
    dirs = {str(p.path): p for p in pdirs}
    loaded = load_groups(pdirs)
    problems.extend(loaded.problems)

    def visibility_of(report: PartitionReport) -> PartitionVisibility | None:
        if not replay_all and not held_by_transaction(report):
            return None
        return visibility(engine, dirs[report.path], report, problems)

    # several brokers' copies: the partition's position is its authoritative copy's
    followers = follower_paths(result.replica_sets)
    reports = [r for r in result.partitions if r.path not in followers]
    return group_report(loaded, reports, result.findings, visibility_of,
                        now_ms=now_ms, groups=groups)
