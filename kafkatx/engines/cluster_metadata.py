"""The KRaft metadata logs among the inspected paths, and their joins with the partitions.

Runs after an engine's inspection (either engine): finds each ``__cluster_metadata-N`` dir,
builds its cluster view, and joins the longest one (the most up-to-date replica of the metadata
log) with every live partition dir found (``kafkatx.analysis.cluster_joins``).
"""

from __future__ import annotations

from collections.abc import Sequence

from kafkatx.analysis.cluster_joins import annotate_offset_gaps, join_partitions
from kafkatx.analysis.cluster_view import ClusterView, build_cluster_view
from kafkatx.analysis.findings import rank
from kafkatx.engines.local import Inspection
from kafkatx.engines.partition_facts import gather_partition_facts
from kafkatx.storage.discovery import Discovery, discover
from kafkatx.storage.filesystems import is_uri
from kafkatx.storage.metadata_log import METADATA_TOPIC, open_metadata_dir


def cluster_views(paths: Sequence[str], *, as_of_offset: int | None = None,
                  discovery: Discovery | None = None) -> list[ClusterView]:
    """A view of each live ``__cluster_metadata-N`` partition dir discovery finds."""
    if any(is_uri(p) for p in paths):
        return []  # metadata logs are read from local copies only (for now)
    disc = discovery if discovery is not None else discover(paths)
    return [build_cluster_view(open_metadata_dir(p.path), as_of_offset=as_of_offset)
            for p in disc.all_partitions() if p.topic == METADATA_TOPIC]


def join_inspection(paths: Sequence[str], result: Inspection) -> None:
    """Add the metadata-log joins to ``result`` (findings ranked again) and its views."""
    views = cluster_views(paths, discovery=result.discovery)
    result.clusters = views
    if not views or result.discovery is None:
        return
    view = max(views, key=lambda v: v.log_end_offset or 0)
    facts = [gather_partition_facts(p) for p in result.discovery.all_partitions()]
    findings = annotate_offset_gaps(result.findings, view) + join_partitions(view, facts)
    result.findings = rank(findings)
    for f in facts:
        result.problems.extend(f.problems)
