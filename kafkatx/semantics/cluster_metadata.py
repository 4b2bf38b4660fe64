"""The cluster's metadata image, replayed from KRaft metadata records, with its history.

Mirrors ``MetadataDelta#replay`` and the image deltas it feeds (``TopicsDelta``/``TopicDelta``
with ``PartitionRegistration#merge``, ``ConfigurationsDelta``, ``FeaturesDelta``,
``ClusterDelta``, ``ProducerIdsDelta``), and ``MetadataBatchLoader``'s handling of metadata
transactions (records between ``BeginTransactionRecord`` and ``EndTransactionRecord`` are applied
together; ``AbortTransactionRecord`` drops them; an unfinished one is not applied). Pure and
I/O-free: records come in with their offset, timestamp and raft leader epoch.

Beyond the image Kafka keeps, the replay records what a forensic reader asks of the log: each
partition's leader-epoch history (which broker led from which metadata offset), topic creations
and deletions, config changes, finalized feature levels and producer-id blocks over time.
Where Kafka's replay throws (a change to an unknown topic or broker), the record is skipped and
a problem is kept instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import field
from typing import Any

from kafkatx.formats.kafka_messages import default_message
from kafkatx.formats.metadata_records import MetadataRecord
from kafkatx.formats.metadata_schemas import BY_NAME
from kafkatx.lazy_dataclass import dataclass

METADATA_VERSION_FEATURE = "metadata.version"  # MetadataVersion.FEATURE_NAME
TRANSACTION_VERSION_FEATURE = "transaction.version"  # TransactionVersion.FEATURE_NAME
PRODUCER_ID_BLOCK_SIZE = 1000  # ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE
NO_LEADER = -1  # LeaderConstants.NO_LEADER
NO_LEADER_CHANGE = -2  # LeaderConstants.NO_LEADER_CHANGE

# ConfigResource.Type ids
CONFIG_RESOURCE_TYPES = {0: "unknown", 2: "topic", 4: "broker", 8: "broker_logger",
                         16: "client_metrics", 32: "group"}
TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4

# MetadataVersion feature levels (server-common MetadataVersion, Kafka 3.3-4.4; 4.5-IV0 is the
# unreleased level 4.4 knows of).
METADATA_VERSIONS = {
    1: "3.0-IV1", 2: "3.1-IV0", 3: "3.2-IV0", 4: "3.3-IV0", 5: "3.3-IV1", 6: "3.3-IV2",
    7: "3.3-IV3", 8: "3.4-IV0", 9: "3.5-IV0", 10: "3.5-IV1", 11: "3.5-IV2", 12: "3.6-IV0",
    13: "3.6-IV1", 14: "3.6-IV2", 15: "3.7-IV0", 16: "3.7-IV1", 17: "3.7-IV2", 18: "3.7-IV3",
    19: "3.7-IV4", 20: "3.8-IV0", 21: "3.9-IV0", 22: "4.0-IV0", 23: "4.0-IV1", 24: "4.0-IV2",
    25: "4.0-IV3", 26: "4.1-IV0", 27: "4.1-IV1", 28: "4.2-IV0", 29: "4.2-IV1", 30: "4.3-IV0",
    31: "4.4-IV0", 32: "4.4-IV1", 33: "4.4-IV2", 34: "4.5-IV0",
}


_NO_PARTITION_CHANGE = default_message(BY_NAME["PartitionChangeRecord"])


def metadata_version_name(level: int) -> str:
    return METADATA_VERSIONS.get(level, f"level {level}")


@dataclass(frozen=True, slots=True)
class Where:
    """Where a change was read: metadata log offset (``None`` inside a snapshot), its time."""

    offset: int | None
    timestamp: int
    leader_epoch: int
    from_snapshot: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"metadata_offset": self.offset, "timestamp": self.timestamp,
                "from_snapshot": self.from_snapshot}


@dataclass(frozen=True, slots=True)
class Partition:
    """``PartitionRegistration``."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    leader: int
    leader_recovery_state: int
    leader_epoch: int
    partition_epoch: int
    directories: tuple[str, ...]
    elr: tuple[int, ...]
    last_known_elr: tuple[int, ...]

    @classmethod
    def from_record(cls, d: dict[str, Any]) -> Partition:
        return cls(replicas=tuple(d["replicas"]), isr=tuple(d["isr"]),
                   removing_replicas=tuple(d["removing_replicas"]),
                   adding_replicas=tuple(d["adding_replicas"]), leader=d["leader"],
                   leader_recovery_state=d["leader_recovery_state"],
                   leader_epoch=d["leader_epoch"], partition_epoch=d["partition_epoch"],
                   directories=tuple(d["directories"]), elr=tuple(d["eligible_leader_replicas"]
                                                                  or ()),
                   last_known_elr=tuple(d["last_known_elr"] or ()))

    def merge(self, d: dict[str, Any]) -> Partition:
        """``PartitionRegistration#merge(PartitionChangeRecord)``: null/-2/-1 mean unchanged;
        a leader field (even the same broker) bumps the leader epoch; every change bumps the
        partition epoch."""
        def pick(key: str, current: tuple[Any, ...]) -> tuple[Any, ...]:
            return current if d[key] is None else tuple(d[key])

        leader, epoch = self.leader, self.leader_epoch
        if d["leader"] != NO_LEADER_CHANGE:
            leader, epoch = d["leader"], self.leader_epoch + 1
        recovery = self.leader_recovery_state
        if d["leader_recovery_state"] != -1:
            recovery = d["leader_recovery_state"]
        return Partition(
            replicas=pick("replicas", self.replicas), isr=pick("isr", self.isr),
            removing_replicas=pick("removing_replicas", self.removing_replicas),
            adding_replicas=pick("adding_replicas", self.adding_replicas), leader=leader,
            leader_recovery_state=recovery, leader_epoch=epoch,
            partition_epoch=self.partition_epoch + 1,
            directories=pick("directories", self.directories),
            elr=pick("eligible_leader_replicas", self.elr),
            last_known_elr=pick("last_known_elr", self.last_known_elr))

    def to_dict(self) -> dict[str, Any]:
        return {"leader": self.leader, "leader_epoch": self.leader_epoch,
                "partition_epoch": self.partition_epoch, "replicas": list(self.replicas),
                "isr": list(self.isr), "removing_replicas": list(self.removing_replicas),
                "adding_replicas": list(self.adding_replicas),
                "leader_recovery_state": self.leader_recovery_state,
                "directories": list(self.directories), "elr": list(self.elr),
                "last_known_elr": list(self.last_known_elr)}


@dataclass(frozen=True, slots=True)
class LeaderEpochChange:
    """A partition's leader epoch began here: ``leader`` led it (-1: no leader)."""

    leader_epoch: int
    leader: int
    isr: tuple[int, ...]
    where: Where

    def to_dict(self) -> dict[str, Any]:
        return {"leader_epoch": self.leader_epoch, "leader": self.leader, "isr": list(self.isr),
                **self.where.to_dict()}


@dataclass(slots=True)
class Topic:
    """A topic in the cluster image: its id, partitions and leader epochs."""

    name: str
    topic_id: str
    created: Where
    partitions: dict[int, Partition] = field(default_factory=dict)
    leader_epochs: dict[int, list[LeaderEpochChange]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class TopicEvent:
    """A topic created or deleted (``TopicRecord`` / ``RemoveTopicRecord``)."""

    event: str  # "created" | "deleted"
    name: str
    topic_id: str
    where: Where

    def to_dict(self) -> dict[str, Any]:
        return {"event": self.event, "topic": self.name, "topic_id": self.topic_id,
                **self.where.to_dict()}


@dataclass(frozen=True, slots=True)
class ConfigChange:
    """A ``ConfigRecord``: ``value`` ``None`` deletes the key (back to its default)."""

    resource_type: int
    resource_name: str
    name: str
    value: str | None
    where: Where

    def to_dict(self) -> dict[str, Any]:
        return {"resource_type": CONFIG_RESOURCE_TYPES.get(self.resource_type,
                                                           str(self.resource_type)),
                "resource_name": self.resource_name, "name": self.name, "value": self.value,
                **self.where.to_dict()}


@dataclass(frozen=True, slots=True)
class FeatureChange:
    """A ``FeatureLevelRecord``: level 0 removes the feature (except metadata.version)."""

    name: str
    level: int
    where: Where

    def to_dict(self) -> dict[str, Any]:
        out = {"feature": self.name, "level": self.level, **self.where.to_dict()}
        if self.name == METADATA_VERSION_FEATURE:
            out["release"] = metadata_version_name(self.level)
        return out


@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    """``ProducerIdsRecord``: the controller gave ``broker_id`` the ids [first, last]."""

    broker_id: int
    broker_epoch: int
    first_producer_id: int
    last_producer_id: int
    where: Where

    def covers(self, producer_id: int) -> bool:
        return self.first_producer_id <= producer_id <= self.last_producer_id

    def to_dict(self) -> dict[str, Any]:
        return {"broker_id": self.broker_id, "broker_epoch": self.broker_epoch,
                "first_producer_id": self.first_producer_id,
                "last_producer_id": self.last_producer_id, **self.where.to_dict()}


@dataclass(slots=True)
class Broker:
    """``BrokerRegistration`` (from ``RegisterBrokerRecord`` and its change records)."""

    broker_id: int
    epoch: int
    incarnation_id: str
    endpoints: list[dict[str, Any]]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    log_dirs: list[str]
    features: dict[str, tuple[int, int]]
    registered: Where

    def to_dict(self) -> dict[str, Any]:
        return {"broker_id": self.broker_id, "broker_epoch": self.epoch,
                "incarnation_id": self.incarnation_id,
                "endpoints": [f"{e['name']}://{e['host']}:{e['port']}" for e in self.endpoints],
                "rack": self.rack, "fenced": self.fenced,
                "in_controlled_shutdown": self.in_controlled_shutdown,
                "log_dirs": list(self.log_dirs),
                "supported_features": {k: {"min": lo, "max": hi}
                                       for k, (lo, hi) in sorted(self.features.items())},
                "registered": self.registered.to_dict()}


@dataclass(frozen=True, slots=True)
class ReplayProblem:
    """A record Kafka's replay would refuse (it throws), skipped here."""

    message: str
    where: Where

    def to_dict(self) -> dict[str, Any]:
        return {"message": self.message, **self.where.to_dict()}


@dataclass(slots=True)
class ClusterImage:
    """The metadata image (as of ``last``) and the history that led to it."""

    topics: dict[str, Topic] = field(default_factory=dict)  # by topic id
    configs: dict[tuple[int, str], dict[str, str]] = field(default_factory=dict)
    features: dict[str, int] = field(default_factory=dict)
    brokers: dict[int, Broker] = field(default_factory=dict)
    controllers: dict[int, dict[str, Any]] = field(default_factory=dict)
    acls: dict[str, dict[str, Any]] = field(default_factory=dict)  # AclsDelta, by ACL id
    scram_users: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    delegation_tokens: dict[str, dict[str, Any]] = field(default_factory=dict)
    client_quotas: dict[tuple[tuple[str, str | None], ...], dict[str, float]] = field(
        default_factory=dict)
    next_producer_id: int = 0
    topic_events: list[TopicEvent] = field(default_factory=list)
    config_changes: list[ConfigChange] = field(default_factory=list)
    feature_changes: list[FeatureChange] = field(default_factory=list)
    producer_id_blocks: list[ProducerIdBlock] = field(default_factory=list)
    problems: list[ReplayProblem] = field(default_factory=list)
    records_applied: int = 0
    last: Where | None = None
    _pending: list[tuple[MetadataRecord, Where]] | None = None
    _pending_start: Where | None = None

    # -- replay ------------------------------------------------------------------------------

    def replay(self, record: MetadataRecord, where: Where) -> None:
        """One record, as ``MetadataLoader`` hands it to ``MetadataDelta#replay``."""
        self.last = where
        name = record.type
        if name == "BeginTransactionRecord":
            if self._pending is not None:
                self._problem("BeginTransactionRecord inside an open metadata transaction "
                              "(the earlier one is dropped)", where)
            self._pending, self._pending_start = [], where
            return
        if name in ("EndTransactionRecord", "AbortTransactionRecord"):
            if self._pending is None:
                self._problem(f"{name} without a BeginTransactionRecord", where)
                return
            pending, self._pending = self._pending, None
            if name == "EndTransactionRecord":
                for rec, at in pending:
                    self._apply(rec, at)
            return
        if self._pending is not None:
            self._pending.append((record, where))
            return
        self._apply(record, where)

    @property
    def open_transaction(self) -> Where | None:
        """Where an unfinished metadata transaction began (its records are not applied)."""
        return self._pending_start if self._pending is not None else None

    def _problem(self, message: str, where: Where) -> None:
        self.problems.append(ReplayProblem(message, where))

    def _apply(self, record: MetadataRecord, where: Where) -> None:
        d = record.data
        if d is None:  # unknown type: Kafka's loader would fail; keep going
            self._problem(f"unknown metadata record type {record.type_id} "
                          f"v{record.version} skipped", where)
            return
        self.records_applied += 1
        handler = getattr(self, "_on_" + record.type, None)
        if handler is not None:
            handler(d, where)

    def _on_TopicRecord(self, d: dict[str, Any], where: Where) -> None:
        self.topics[d["topic_id"]] = Topic(name=d["name"], topic_id=d["topic_id"],
                                           created=where)
        self.topic_events.append(TopicEvent("created", d["name"], d["topic_id"], where))

    def _on_PartitionRecord(self, d: dict[str, Any], where: Where) -> None:
        topic = self.topics.get(d["topic_id"])
        if topic is None:
            self._problem(f"PartitionRecord for unknown topic id {d['topic_id']}", where)
            return
        part = Partition.from_record(d)
        pid = d["partition_id"]
        topic.partitions[pid] = part
        topic.leader_epochs[pid] = [LeaderEpochChange(part.leader_epoch, part.leader, part.isr,
                                                      where)]

    def _on_PartitionChangeRecord(self, d: dict[str, Any], where: Where) -> None:
        topic = self.topics.get(d["topic_id"])
        pid = d["partition_id"]
        current = topic.partitions.get(pid) if topic else None
        if topic is None or current is None:
            self._problem(f"PartitionChangeRecord for unknown partition {d['topic_id']}-{pid}",
                          where)
            return
        merged = current.merge(d)
        topic.partitions[pid] = merged
        if merged.leader_epoch != current.leader_epoch:
            topic.leader_epochs[pid].append(LeaderEpochChange(merged.leader_epoch, merged.leader,
                                                              merged.isr, where))

    def _on_RemoveTopicRecord(self, d: dict[str, Any], where: Where) -> None:
        topic = self.topics.pop(d["topic_id"], None)
        if topic is None:
            self._problem(f"RemoveTopicRecord for unknown topic id {d['topic_id']}", where)
            return
        self.topic_events.append(TopicEvent("deleted", topic.name, topic.topic_id, where))
        # ConfigurationsDelta#replay(RemoveTopicRecord, name): the topic's configs go too
        self.configs.pop((TOPIC_RESOURCE, topic.name), None)

    def _on_ConfigRecord(self, d: dict[str, Any], where: Where) -> None:
        key = (d["resource_type"], d["resource_name"])
        configs = self.configs.setdefault(key, {})
        if d["value"] is None:
            configs.pop(d["name"], None)
        else:
            configs[d["name"]] = d["value"]
        if not configs:
            del self.configs[key]
        self.config_changes.append(ConfigChange(d["resource_type"], d["resource_name"],
                                                d["name"], d["value"], where))

    def _on_FeatureLevelRecord(self, d: dict[str, Any], where: Where) -> None:
        name, level = d["name"], d["feature_level"]
        if level == 0 and name != METADATA_VERSION_FEATURE:
            self.features.pop(name, None)
        else:
            self.features[name] = level
        self.feature_changes.append(FeatureChange(name, level, where))

    def _on_ProducerIdsRecord(self, d: dict[str, Any], where: Where) -> None:
        # ProducerIdControlManager#generateNextProducerId: the record holds the first id of the
        # next block; the block handed out is the one that ends just before it.
        # (ProducerIdControlManager#replay: a block of PRODUCER_ID_BLOCK_SIZE ids).
        last = d["next_producer_id"] - 1
        self.next_producer_id = d["next_producer_id"]
        self.producer_id_blocks.append(ProducerIdBlock(
            d["broker_id"], d["broker_epoch"], max(last - PRODUCER_ID_BLOCK_SIZE + 1, 0), last,
            where))

    def _on_RegisterBrokerRecord(self, d: dict[str, Any], where: Where) -> None:
        self.brokers[d["broker_id"]] = Broker(
            broker_id=d["broker_id"], epoch=d["broker_epoch"], incarnation_id=d["incarnation_id"],
            endpoints=list(d["end_points"]), rack=d["rack"], fenced=d["fenced"],
            in_controlled_shutdown=d["in_controlled_shutdown"], log_dirs=list(d["log_dirs"]),
            features={f["name"]: (f["min_supported_version"], f["max_supported_version"])
                      for f in d["features"]}, registered=where)

    def _broker(self, broker_id: int, what: str, where: Where) -> Broker | None:
        broker = self.brokers.get(broker_id)
        if broker is None:
            self._problem(f"{what} for unregistered broker {broker_id}", where)
        return broker

    def _on_UnregisterBrokerRecord(self, d: dict[str, Any], where: Where) -> None:
        if self._broker(d["broker_id"], "UnregisterBrokerRecord", where):
            del self.brokers[d["broker_id"]]

    def _on_FenceBrokerRecord(self, d: dict[str, Any], where: Where) -> None:
        broker = self._broker(d["id"], "FenceBrokerRecord", where)
        if broker:
            broker.fenced = True

    def _on_UnfenceBrokerRecord(self, d: dict[str, Any], where: Where) -> None:
        broker = self._broker(d["id"], "UnfenceBrokerRecord", where)
        if broker:
            broker.fenced = False

    def _on_BrokerRegistrationChangeRecord(self, d: dict[str, Any],
                                           where: Where) -> None:
        broker = self._broker(d["broker_id"], "BrokerRegistrationChangeRecord", where)
        if broker is None:
            return
        if d["fenced"] in (1, -1):  # BrokerRegistrationFencingChange FENCE / UNFENCE
            broker.fenced = d["fenced"] == 1
        if d["in_controlled_shutdown"] == 1:
            broker.in_controlled_shutdown = True
        if d["log_dirs"]:
            broker.log_dirs = list(d["log_dirs"])

    def _on_RegisterControllerRecord(self, d: dict[str, Any], where: Where) -> None:
        self.controllers[d["controller_id"]] = {
            "controller_id": d["controller_id"], "incarnation_id": d["incarnation_id"],
            "endpoints": [f"{e['name']}://{e['host']}:{e['port']}" for e in d["end_points"]],
            "registered": where.to_dict()}

    def _on_UnregisterControllerRecord(self, d: dict[str, Any],
                                       where: Where) -> None:
        self.controllers.pop(d["controller_id"], None)

    def _on_ClearElrRecord(self, d: dict[str, Any], where: Where) -> None:
        # TopicsDelta#replay(ClearElrRecord) -> TopicDelta#maybeClearElr: a merge with empty
        # ELRs for each partition that has any (so its partition epoch moves too).
        name = d["topic_name"]
        topics = [t for t in self.topics.values() if name in ("", t.name)]
        if name and not topics:
            self._problem(f"ClearElrRecord for unknown topic {name!r}", where)
        for topic in topics:
            for pid, part in topic.partitions.items():
                if part.elr or part.last_known_elr:
                    change = {**_NO_PARTITION_CHANGE, "eligible_leader_replicas": [],
                              "last_known_elr": []}
                    topic.partitions[pid] = part.merge(change)

    def _on_AccessControlEntryRecord(self, d: dict[str, Any], where: Where) -> None:
        self.acls[d["id"]] = {k: v for k, v in d.items() if not k.startswith("_")}

    def _on_RemoveAccessControlEntryRecord(self, d: dict[str, Any],
                                           where: Where) -> None:
        if self.acls.pop(d["id"], None) is None:
            self._problem(f"RemoveAccessControlEntryRecord for unknown ACL {d['id']}", where)

    def _on_UserScramCredentialRecord(self, d: dict[str, Any], where: Where) -> None:
        # ScramDelta: the credential itself (salt, keys) is not kept: only who and how
        self.scram_users[(d["name"], d["mechanism"])] = {
            "user": d["name"], "mechanism": d["mechanism"], "iterations": d["iterations"]}

    def _on_RemoveUserScramCredentialRecord(self, d: dict[str, Any],
                                            where: Where) -> None:
        self.scram_users.pop((d["name"], d["mechanism"]), None)

    def _on_DelegationTokenRecord(self, d: dict[str, Any], where: Where) -> None:
        self.delegation_tokens[d["token_id"]] = {
            "token_id": d["token_id"], "owner": d["owner"], "requester": d["requester"],
            "renewers": list(d["renewers"]), "issue_timestamp": d["issue_timestamp"],
            "max_timestamp": d["max_timestamp"],
            "expiration_timestamp": d["expiration_timestamp"]}

    def _on_RemoveDelegationTokenRecord(self, d: dict[str, Any],
                                        where: Where) -> None:
        self.delegation_tokens.pop(d["token_id"], None)

    def _on_ClientQuotaRecord(self, d: dict[str, Any], where: Where) -> None:
        # ClientQuotasDelta: Remove drops the key, else sets it; an entity with none left goes
        entity = tuple(sorted((e["entity_type"], e["entity_name"]) for e in d["entity"]))
        quotas = self.client_quotas.setdefault(entity, {})
        if d["remove"]:
            quotas.pop(d["key"], None)
        else:
            quotas[d["key"]] = d["value"]
        if not quotas:
            del self.client_quotas[entity]

    # -- questions ---------------------------------------------------------------------------

    def topic_by_name(self, name: str) -> Topic | None:
        for topic in self.topics.values():
            if topic.name == name:
                return topic
        return None

    def topic_configs(self, name: str) -> dict[str, str]:
        return dict(self.configs.get((TOPIC_RESOURCE, name), {}))

    def broker_config(self, name: str) -> tuple[str, str] | None:
        """A broker config the metadata log sets (ConfigRecords of the BROKER resource) and
        whose: a node's own value first (lowest node id), then the cluster default (resource
        ""), as ``KafkaConfig`` layers dynamic per-broker over dynamic default configs.
        ``None`` when only ``server.properties`` (not in the log) or the default decides."""
        nodes = sorted((k[1] for k in self.configs if k[0] == BROKER_RESOURCE and k[1]),
                       key=lambda n: (len(n), n))
        for node in nodes:
            value = self.configs[(BROKER_RESOURCE, node)].get(name)
            if value is not None:
                return value, f"broker {node}"
        value = self.configs.get((BROKER_RESOURCE, ""), {}).get(name)
        return (value, "cluster default") if value is not None else None

    def feature_level_at(self, feature: str, offset: int) -> int | None:
        """The finalized level of ``feature`` after the records up to ``offset`` (``None`` when
        not finalized then, as far as this replay saw)."""
        return _level_at(self.feature_changes, feature, offset)

    def block_for(self, producer_id: int) -> ProducerIdBlock | None:
        for block in self.producer_id_blocks:
            if block.covers(producer_id):
                return block
        return None


def _level_at(changes: Iterable[FeatureChange], feature: str, offset: int) -> int | None:
    level: int | None = None
    for change in changes:
        if change.where.offset is not None and change.where.offset > offset:
            break
        if change.name == feature:
            level = None if change.level == 0 and feature != METADATA_VERSION_FEATURE \
                else change.level
    return level
