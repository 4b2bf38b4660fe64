"""The cluster as a KRaft node's metadata log dir describes it: ``kafkatx cluster``.

The image is built as ``MetadataLoader`` builds it: the newest complete snapshot
(``<offset>-<epoch>.checkpoint``), then the log records from the snapshot's end offset on
(``MetadataDelta#replay`` for each, in ``kafkatx.semantics.cluster_metadata``). A second replay,
from the earliest point the files cover without a gap (offset 0 when the log still starts there,
after the bootstrap snapshot ``0-0`` that ``kafka-storage format`` writes when there is one; else
the oldest snapshot the log continues), gives the history: leader epochs, topic creations
and deletions, config and feature changes, producer-id blocks. Both must end in the same image; a
difference (a snapshot that does not match the log it was taken from) is reported.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import field
from typing import Any

from kafkatx.formats.quorum_state import QuorumState
from kafkatx.formats.record_batch import ControlType
from kafkatx.lazy_dataclass import dataclass
from kafkatx.semantics.cluster_metadata import (
    CONFIG_RESOURCE_TYPES,
    METADATA_VERSION_FEATURE,
    TOPIC_RESOURCE,
    ClusterImage,
    Where,
    metadata_version_name,
)
from kafkatx.storage.metadata_log import MetadataEntry, MetadataLogDir, read_entries


@dataclass(frozen=True, slots=True)
class RaftLeaderChange:
    """A ``LeaderChangeMessage``: ``leader_id`` won the quorum's ``epoch`` at ``offset``."""

    epoch: int
    leader_id: int
    voters: tuple[int, ...]
    offset: int
    timestamp: int

    def to_dict(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "leader_id": self.leader_id, "voters": list(self.voters),
                "metadata_offset": self.offset, "timestamp": self.timestamp}


@dataclass(slots=True)
class ClusterView:
    """A KRaft metadata log read as Kafka loads it, and the history behind it."""

    path: str
    image: ClusterImage  # Kafka's: newest snapshot + log tail
    history: ClusterImage  # from the earliest gap-free point
    snapshot: str | None
    snapshot_end_offset: int | None
    history_start_offset: int
    log_start_offset: int | None
    log_end_offset: int | None
    as_of_offset: int | None
    quorum_state: QuorumState | None
    raft_leaders: list[RaftLeaderChange] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return cluster_dict(self)


def build_cluster_view(mdir: MetadataLogDir, *, as_of_offset: int | None = None) -> ClusterView:
    problems = mdir.problems
    log_start = mdir.segments[0][0] if mdir.segments else None
    limit = as_of_offset
    usable = [s for s in mdir.snapshots if limit is None or s[0].end_offset <= limit + 1]
    newest = usable[-1] if usable else None

    image = ClusterImage()
    start = 0
    if newest is not None:
        _replay(image, _snapshot_entries(newest, problems), snapshot=True)
        start = newest[0].end_offset
    if log_start is not None and start < log_start:
        problems.append(f"{mdir.path}: the metadata log starts at offset {log_start} and no "
                        f"snapshot covers the offsets before it (newest usable ends at {start})"
                        ": the view misses that part")
    seen = _Seen()
    _replay(image, _log_entries(mdir, start, limit, problems, seen), snapshot=False)

    # History: from the oldest snapshot the log continues without a gap (the bootstrap snapshot
    # 0-0 that kafka-storage format writes, when the log still starts at 0), else the log alone.
    if log_start is None:
        base = newest
    elif log_start == 0:
        base = next((s for s in usable if s[0].end_offset == 0), None)
    else:
        base = next((s for s in usable if s[0].end_offset >= log_start), newest)
    history_start = base[0].end_offset if base is not None else 0
    if history_start == start:
        history = image  # nothing earlier to replay: the two are one
    else:
        history = ClusterImage()
        if base is not None:
            _replay(history, _snapshot_entries(base, []), snapshot=True)
        seen = _Seen()
        _replay(history, _log_entries(mdir, history_start, limit, [], seen), snapshot=False)
        if _summary(history) != _summary(image):
            problems.append(
                f"{mdir.path}: the snapshot {newest[1].name if newest else '-'} and the log "
                f"replayed from offset {history_start} disagree about the cluster: the image "
                "shown is Kafka's (snapshot + log tail)")
    log_end = seen.last_offset + 1 if seen.last_offset is not None else (
        start if mdir.segments else None)
    return ClusterView(
        path=str(mdir.path), image=image, history=history,
        snapshot=str(newest[1]) if newest else None,
        snapshot_end_offset=newest[0].end_offset if newest else None,
        history_start_offset=history_start, log_start_offset=log_start, log_end_offset=log_end,
        as_of_offset=as_of_offset, quorum_state=mdir.quorum_state(), raft_leaders=seen.leaders,
        problems=problems)


def _snapshot_entries(snapshot: Any, problems: list[str]) -> Iterator[MetadataEntry]:
    yield from read_entries(snapshot[1], problems)


@dataclass(slots=True)
class _Seen:
    """What a pass over the log saw besides metadata records."""

    leaders: list[RaftLeaderChange] = field(default_factory=list)
    last_offset: int | None = None


def _log_entries(mdir: MetadataLogDir, start: int, limit: int | None, problems: list[str],
                 seen: _Seen) -> Iterator[MetadataEntry]:
    for index, (base, path) in enumerate(mdir.segments):
        following = mdir.segments[index + 1][0] if index + 1 < len(mdir.segments) else None
        if following is not None and following <= start:
            continue
        if limit is not None and base > limit:
            break
        for entry in read_entries(path, problems, from_offset=start, to_offset=limit):
            seen.last_offset = entry.offset
            if entry.control_type == ControlType.LEADER_CHANGE and entry.control:
                seen.leaders.append(RaftLeaderChange(
                    entry.leader_epoch, entry.control["leader_id"],
                    tuple(v["voter_id"] for v in entry.control["voters"]), entry.offset,
                    entry.timestamp))
            yield entry


def _replay(image: ClusterImage, entries: Iterator[MetadataEntry], *, snapshot: bool) -> None:
    for e in entries:
        if e.record is None:
            continue
        where = Where(None if snapshot else e.offset, e.timestamp, e.leader_epoch, snapshot)
        image.replay(e.record, where)


def _summary(image: ClusterImage) -> Any:
    return ({tid: (t.name, sorted(t.partitions.items())) for tid, t in image.topics.items()},
            image.configs, image.features, image.next_producer_id,
            sorted((b.broker_id, b.fenced) for b in image.brokers.values()))


# ---------------------------------------------------------------------------------------------
# The JSON contract


def cluster_dict(view: ClusterView) -> dict[str, Any]:
    image, history = view.image, view.history
    features = dict(sorted(image.features.items()))
    topics = []
    for topic in sorted(image.topics.values(), key=lambda t: t.name):
        known = history.topics.get(topic.topic_id)
        created = (known or topic).created
        parts = []
        for pid, part in sorted(topic.partitions.items()):
            epochs = (history.topics[topic.topic_id].leader_epochs.get(pid, [])
                      if topic.topic_id in history.topics else [])
            parts.append({"partition": pid, **part.to_dict(),
                          "leader_epoch_history": [e.to_dict() for e in epochs]})
        topics.append({"topic": topic.name, "topic_id": topic.topic_id,
                       "partition_count": len(topic.partitions),
                       "configs": image.topic_configs(topic.name),
                       "created": created.to_dict(), "partitions": parts})
    other_configs = [{"resource_type": CONFIG_RESOURCE_TYPES.get(t, str(t)),
                      "resource_name": name, "configs": dict(sorted(values.items()))}
                     for (t, name), values in sorted(image.configs.items())
                     if t != TOPIC_RESOURCE]
    qs = view.quorum_state
    return {
        "path": view.path,
        "source": {"snapshot": view.snapshot, "snapshot_end_offset": view.snapshot_end_offset,
                   "log_start_offset": view.log_start_offset,
                   "log_end_offset": view.log_end_offset,
                   "history_start_offset": view.history_start_offset,
                   "as_of_offset": view.as_of_offset,
                   "records_applied": image.records_applied},
        "quorum_state": qs.to_dict() if qs else None,
        "raft_leaders": [r.to_dict() for r in view.raft_leaders],
        "metadata_version": ({"level": features[METADATA_VERSION_FEATURE],
                              "release": metadata_version_name(
                                  features[METADATA_VERSION_FEATURE])}
                             if METADATA_VERSION_FEATURE in features else None),
        "features": features,
        "feature_history": [c.to_dict() for c in history.feature_changes],
        "brokers": [b.to_dict() for _, b in sorted(image.brokers.items())],
        "controllers": [c for _, c in sorted(image.controllers.items())],
        "topics": topics,
        "configs": other_configs,
        "config_history": [c.to_dict() for c in history.config_changes],
        "topic_history": [e.to_dict() for e in history.topic_events],
        "acls": [a for _, a in sorted(image.acls.items())],
        "scram_users": [u for _, u in sorted(image.scram_users.items())],
        "delegation_tokens": [t for _, t in sorted(image.delegation_tokens.items())],
        "client_quotas": [{"entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                           "quotas": dict(sorted(q.items()))}
                          for entity, q in sorted(image.client_quotas.items(),
                                                  key=lambda e: str(e[0]))],
        "next_producer_id": image.next_producer_id,
        "producer_id_blocks": [b.to_dict() for b in history.producer_id_blocks],
        "open_metadata_transaction": (image.open_transaction.to_dict()
                                      if image.open_transaction else None),
        "replay_problems": [p.to_dict() for p in image.problems],
        "problems": list(view.problems),
    }
