"""The KRaft metadata logs among the inspected paths, and their joins with the partitions.

Runs after an engine's inspection (either engine): finds each ``__cluster_metadata-N`` dir,
builds its cluster view, and joins the longest one (the most up-to-date replica of the metadata
log) with every live partition dir found (``kafkatx.analysis.cluster_joins``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kafkatx.analysis.findings import Finding, rank
from kafkatx.formats.internal_topics import METADATA_TOPIC
from kafkatx.storage.discovery import Discovery, PartitionDir, cluster_id_of, discover
from kafkatx.storage.filesystems import is_uri

if TYPE_CHECKING:
    from kafkatx.analysis.cluster_view import ClusterView
    from kafkatx.engines.local import Inspection


def _metadata_dirs(paths: Sequence[str], discovery: Discovery | None) -> list[PartitionDir]:
    if any(is_uri(p) for p in paths):
        return []  # metadata logs are read from local copies only (for now)
    disc = discovery if discovery is not None else discover(paths)
    return [p for p in disc.all_partitions() if p.topic == METADATA_TOPIC]


def cluster_views(paths: Sequence[str], *, as_of_offset: int | None = None,
                  discovery: Discovery | None = None) -> list[ClusterView]:
    """A view of each live ``__cluster_metadata-N`` partition dir discovery finds."""
    from kafkatx.analysis.cluster_view import build_cluster_view
    from kafkatx.storage.metadata_log import open_metadata_dir

    return [build_cluster_view(open_metadata_dir(p.path), as_of_offset=as_of_offset)
            for p in _metadata_dirs(paths, discovery)]


def join_inspection(paths: Sequence[str], result: Inspection) -> None:
    """Add the metadata-log joins to ``result`` (findings ranked again) and its views.

    Each partition is joined with the most up-to-date metadata log of its own cluster (the
    ``cluster.id`` of the ``meta.properties`` beside each); a partition whose log dir names no
    cluster is joined only when all the evidence is of one cluster.
    """
    metas = _metadata_dirs(paths, result.discovery)
    if not metas:
        result.clusters = []
        return
    # The metadata log's decoders and joins are imported only when the evidence holds one: a
    # log dir of data partitions starts without them (benchmarks/startup.py).
    from kafkatx.analysis.cluster_joins import annotate_offset_gaps, join_partitions
    from kafkatx.analysis.cluster_view import build_cluster_view
    from kafkatx.engines.partition_facts import gather_partition_facts
    from kafkatx.storage.metadata_log import open_metadata_dir

    views = [build_cluster_view(open_metadata_dir(p.path)) for p in metas]
    result.clusters = views
    if not views or result.discovery is None:
        return
    by_cluster: dict[str | None, ClusterView] = {}
    for pdir, view in zip(metas, views, strict=True):
        cid = cluster_id_of(pdir)
        best = by_cluster.get(cid)
        if best is None or (view.log_end_offset or 0) > (best.log_end_offset or 0):
            by_cluster[cid] = view

    partitions = result.discovery.all_partitions()
    named = {c for c in (cluster_id_of(p) for p in partitions) if c is not None}

    def view_for(pdir: PartitionDir) -> ClusterView | None:
        cid = cluster_id_of(pdir)
        if cid in by_cluster:
            return by_cluster[cid]
        if len(by_cluster) == 1 and len(named) <= 1 and (cid is None or None in by_cluster):
            return next(iter(by_cluster.values()))  # one cluster in all the evidence
        return None

    joined: dict[str, ClusterView] = {}
    findings: list[Finding] = []
    for pdir in partitions:
        view = view_for(pdir)
        if view is None or pdir.topic == METADATA_TOPIC:
            continue
        joined[str(pdir.path)] = view
        facts = gather_partition_facts(pdir)
        findings += join_partitions(view, [facts])
        result.problems.extend(facts.problems)

    def gap_view(f: Finding) -> ClusterView | None:
        where = f.location or ""
        return next((v for path, v in joined.items() if where.startswith(path + "/")), None)

    result.findings = rank(annotate_offset_gaps(result.findings, gap_view) + findings)
