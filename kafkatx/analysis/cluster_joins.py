"""The KRaft metadata log joined with the partition directories beside it.

- ``partition.metadata`` topic ids against the topic ids the metadata log gave each name: a
  directory whose id is not its topic's current id holds a deleted topic's data (Kafka refuses
  to load it: ``UnifiedLog#initializeTopicId`` throws ``InconsistentTopicIdException``);
- the leader epochs a partition's batches were stamped with (``partitionLeaderEpoch``) and its
  ``leader-epoch-checkpoint`` against the epochs the controller gave it
  (``PartitionRegistration#merge`` bumps the epoch with each new leader): an epoch the metadata
  never reached, or one in which the partition had no leader, cannot have been appended;
- producer ids in the data against the blocks of ``ProducerIdsRecord``: the controller hands out
  every id below the newest ``NextProducerId`` and no other (``ProducerIdControlManager``);
- COMMIT markers against the finalized ``transaction.version`` of their time: only transactions
  v2 (KIP-890, ``TransactionVersion#supportsEpochBump``) commits with the epoch bumped;
- ``offset_gap`` findings made exact by the topic's ``cleanup.policy`` (topic config, then the
  brokers' dynamic ``log.cleanup.policy``, as ``LogConfig`` resolves it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace

from kafkatx.analysis.cluster_view import ClusterView
from kafkatx.analysis.findings import WARNING, Finding, location
from kafkatx.analysis.partition_facts import PartitionFacts
from kafkatx.formats.internal_topics import METADATA_TOPIC
from kafkatx.semantics.cluster_metadata import (
    NO_LEADER,
    TOPIC_RESOURCE,
    TRANSACTION_VERSION_FEATURE,
    FeatureChange,
    LeaderEpochChange,
    Where,
)

BROKER_RESOURCE = 4
GENERIC_GAP_CAUSE = "normal after log compaction, otherwise records are missing"


def _at(where: Where) -> str:
    return "in the snapshot" if where.offset is None else f"at metadata offset {where.offset}"


def join_partitions(view: ClusterView, facts: Iterable[PartitionFacts]) -> list[Finding]:
    out: list[Finding] = []
    for f in facts:
        if f.topic == METADATA_TOPIC:
            continue
        same_topic = _topic_id(view, f, out)
        if same_topic:
            _leader_epochs(view, f, out)
        _producer_ids(view, f, out)
        _transaction_versions(view, f, out)
    return out


def _topic_id(view: ClusterView, f: PartitionFacts, out: list[Finding]) -> bool:
    """Whether the directory belongs to the topic the metadata log knows by that name."""
    current = view.image.topic_by_name(f.topic)
    events = [e for e in view.history.topic_events if e.name == f.topic]
    if current is None:
        deleted = [e for e in events if e.event == "deleted"]
        if deleted:
            what = (f"it was deleted {_at(deleted[-1].where)} (id {deleted[-1].topic_id}); this "
                    "directory outlived it (Kafka removes such a log as a stray)")
        else:
            what = (f"the metadata log never had it (its history starts at offset "
                    f"{view.history_start_offset})")
        out.append(Finding(kind="topic_not_in_metadata", topic=f.topic, partition=f.partition,
                           location=f.path,
                           message=f"{f.topic} is not a topic of the cluster's metadata: {what}"))
        return False
    if f.topic_id is None or f.topic_id == current.topic_id:
        return True
    known = view.history.topics.get(current.topic_id) or current
    lived = [e for e in events if e.topic_id == f.topic_id]
    if lived:
        span = ", ".join(f"{e.event} {_at(e.where)}" for e in lived)
        why = (f"{f.topic_id} was an earlier {f.topic} ({span}): this directory holds the deleted "
               "topic's data, not the current topic's; the topic was deleted and re-created")
    else:
        why = (f"the metadata log never gave {f.topic} the id {f.topic_id} (its history starts "
               f"at offset {view.history_start_offset}): a directory from another cluster or "
               "from a topic deleted before that")
    out.append(Finding(
        kind="topic_id_mismatch", topic=f.topic, partition=f.partition,
        location=f.topic_id_path,
        message=(f"partition.metadata says topic id {f.topic_id}, but the metadata log says "
                 f"{f.topic} is {current.topic_id} (created {_at(known.created)}); {why}. "
                 "Kafka would refuse to load this log (InconsistentTopicIdException)")))
    return False


def _history(view: ClusterView, f: PartitionFacts) -> list[LeaderEpochChange]:
    for image in (view.history, view.image):
        topic = image.topic_by_name(f.topic)
        if topic is not None and f.partition in topic.leader_epochs:
            return topic.leader_epochs[f.partition]
    return []


def _describe(history: list[LeaderEpochChange]) -> str:
    return ", ".join(
        f"{e.leader_epoch} ({'no leader' if e.leader == NO_LEADER else f'broker {e.leader}'} "
        f"{_at(e.where)})" for e in history[-6:])


def _leader_epochs(view: ClusterView, f: PartitionFacts, out: list[Finding]) -> None:
    history = _history(view, f)
    if not history:
        return
    by_epoch = {e.leader_epoch: e for e in history}
    newest = history[-1].leader_epoch
    oldest_known = history[0].leader_epoch if history[0].where.from_snapshot else -1

    def verdict(epoch: int) -> str | None:
        if epoch < 0 or epoch < oldest_known:
            return None  # no epoch (old formats) or before what the metadata shows
        if epoch > newest:
            return (f"leader epoch {epoch}, which the metadata log never gave "
                    f"{f.topic}-{f.partition} (its newest is {newest})")
        change = by_epoch.get(epoch)
        if change is None:
            return (f"leader epoch {epoch}, which the metadata log never gave "
                    f"{f.topic}-{f.partition}")
        if change.leader == NO_LEADER:
            return (f"leader epoch {epoch}, in which {f.topic}-{f.partition} had no leader "
                    f"(from {_at(change.where)}): no broker could have appended it")
        return None

    for run in f.epoch_runs:
        problem = verdict(run.leader_epoch)
        if problem:
            out.append(Finding(
                kind="leader_epoch_mismatch", topic=f.topic, partition=f.partition,
                offset=run.first_offset, location=location(run.path, run.position),
                message=(f"batches at offsets {run.first_offset}..{run.last_offset} carry "
                         f"{problem}; the metadata log's epochs: {_describe(history)}")))
    for entry in f.epoch_checkpoint:
        problem = verdict(entry.epoch)
        if problem:
            out.append(Finding(
                kind="leader_epoch_mismatch", topic=f.topic, partition=f.partition,
                offset=entry.start_offset, location=f.epoch_checkpoint_path,
                message=(f"leader-epoch-checkpoint line {entry.line_number} starts {problem} at "
                         f"offset {entry.start_offset}; the metadata log's epochs: "
                         f"{_describe(history)}")))


def _producer_ids(view: ClusterView, f: PartitionFacts, out: list[Finding]) -> None:
    image = view.image
    next_id = image.next_producer_id
    newest = image.producer_id_blocks[-1] if image.producer_id_blocks else None
    for pid, seen in sorted(f.producers.items()):
        if pid < next_id:
            continue
        handed = (f"the controller's newest block ends at {next_id - 1} ({_at(newest.where)})"
                  if newest else "the metadata log hands out no producer-id block at all")
        out.append(Finding(
            kind="producer_id_unallocated", topic=f.topic, partition=f.partition,
            producer_id=pid, offset=seen.first_offset,
            location=location(seen.path, seen.position),
            message=(f"producer id {pid} (first at offset {seen.first_offset}) is in no block "
                     f"a ProducerIdsRecord covers: {handed}, so no broker of this cluster "
                     "allocated it (a log from another cluster, or a client that made up its "
                     "id)")))


def _tv_at(view: ClusterView, timestamp: int) -> tuple[int, FeatureChange | None] | None:
    """The finalized ``transaction.version`` at ``timestamp`` by the metadata records' times
    (``None`` when the history does not reach back that far)."""
    changes = [c for c in view.history.feature_changes if c.name == TRANSACTION_VERSION_FEATURE]
    last = None
    for change in changes:
        if change.where.timestamp <= timestamp:
            last = change
    if last is not None:
        return last.level, last
    if view.history_start_offset == 0:
        return 0, None  # not finalized yet: transactions v0
    return None


def _transaction_versions(view: ClusterView, f: PartitionFacts, out: list[Finding]) -> None:
    """A COMMIT whose epoch is one above its data's is how transactions v2 end a transaction
    (KIP-890: the coordinator bumps the epoch with every EndTxn); under transaction.version 0
    or 1 a commit keeps the producer's epoch. Such a commit while the cluster's finalized
    transaction.version was below 2 cannot come from this cluster's coordinator."""
    for c in f.commits:
        if c.marker_epoch != c.data_epoch + 1:
            continue
        known = _tv_at(view, c.timestamp)
        if known is None or known[0] >= 2:
            continue
        level, change = known
        since = "never finalized before" if change is None else f"since {_at(change.where)}"
        upgrade = next((x for x in view.history.feature_changes
                        if x.name == TRANSACTION_VERSION_FEATURE and x.level >= 2
                        and x.where.timestamp > c.timestamp), None)
        later = (f"; it became {upgrade.level} {_at(upgrade.where)}, "
                 f"{(upgrade.where.timestamp - c.timestamp) / 1000:.0f}s later"
                 if upgrade else "")
        out.append(Finding(
            kind="transaction_version_mismatch", topic=f.topic, partition=f.partition,
            producer_id=c.producer_id, producer_epoch=c.data_epoch, offset=c.offset,
            location=location(c.path, c.position),
            message=(f"the COMMIT marker of producer {c.producer_id} at offset {c.offset} carries "
                     f"epoch {c.marker_epoch}, one above its data's {c.data_epoch}: a "
                     "transactions-v2 commit (KIP-890 bumps the epoch with each EndTxn), but "
                     f"the cluster's finalized transaction.version was {level} then ({since}, by "
                     f"the metadata records' times{later}); under transaction.version 0/1 a "
                     "commit keeps the epoch")))


def cleanup_policy(view: ClusterView, topic: str) -> tuple[str | None, str]:
    """The topic's ``cleanup.policy`` as the metadata log sets it, and where it comes from; the
    policy is ``None`` when only a static ``server.properties`` value (not in the log) or
    Kafka's default (delete) could decide."""
    image = view.image
    value = image.topic_configs(topic).get("cleanup.policy")
    if value is not None:
        return value, "topic config"
    for name in sorted(k[1] for k in image.configs if k[0] == BROKER_RESOURCE and k[1]):
        if "log.cleanup.policy" in image.configs[(BROKER_RESOURCE, name)]:
            return (image.configs[(BROKER_RESOURCE, name)]["log.cleanup.policy"],
                    f"broker {name} config log.cleanup.policy")
    default = image.configs.get((BROKER_RESOURCE, ""), {}).get("log.cleanup.policy")
    if default is not None:
        return default, "cluster-default log.cleanup.policy"
    return None, "no cleanup.policy in the metadata log"


def _was_compacted(view: ClusterView, topic: str) -> str | None:
    """Where the history shows the topic compacted at some point (topic config), if it does."""
    for change in view.history.config_changes:
        if (change.resource_type == TOPIC_RESOURCE and change.resource_name == topic
                and change.name == "cleanup.policy" and change.value
                and "compact" in change.value):
            return _at(change.where)
    return None


def annotate_offset_gaps(findings: Iterable[Finding],
                         view_of: ClusterView | Callable[[Finding], ClusterView | None]
                         ) -> list[Finding]:
    """``offset_gap``: compaction, or records missing, as the metadata log (``view_of``: the
    one view, or the view for each finding's partition) says."""
    out = []
    for f in findings:
        view = view_of if isinstance(view_of, ClusterView) else view_of(f)
        if (f.kind != "offset_gap" or not f.message.endswith(GENERIC_GAP_CAUSE) or not f.topic
                or view is None):
            out.append(f)
            continue
        head = f.message[: -len(GENERIC_GAP_CAUSE)]
        policy, source = cleanup_policy(view, f.topic)
        earlier = _was_compacted(view, f.topic)
        if policy is not None and "compact" in policy:
            out.append(replace(f, message=head + f"normal: {f.topic} is compacted "
                                                 f"(cleanup.policy={policy}, {source} in the "
                                                 "metadata log)"))
        elif earlier is not None:
            out.append(replace(f, message=head + f"normal: {f.topic} was compacted (cleanup."
                                                 f"policy=compact set {earlier})"))
        elif policy is not None:
            out.append(replace(f, severity=WARNING, message=head + (
                f"{f.topic} is not compacted (cleanup.policy={policy}, {source} in the "
                "metadata log), so records are missing from this copy")))
        else:
            out.append(replace(f, severity=WARNING, message=head + (
                f"{f.topic} is not compacted as far as the metadata log says (no cleanup.policy "
                "there: Kafka's default is delete, unless server.properties sets "
                "log.cleanup.policy), so records are likely missing from this copy")))
    return out
