"""The broker's log dir: topics, partition directories, root files, checkpoints, deletion.

Mirrors Kafka's ``LogManager`` (load at start, ``.kafka_cleanshutdown`` marker, recovery-point /
log-start-offset checkpoints, ``asyncDelete`` renaming a partition directory to
``<topic>-<partition>.<uuid>-delete`` before removing it), ``ReplicaManager``'s
``replication-offset-checkpoint``, ``Partition#createLogIfNotExists`` (``partition.metadata`` with
the topic id, ``leader-epoch-checkpoint`` with the first epoch), ``ReplicaManager#deleteRecords``
(internal topics refused, ``LeaderEpochFileCache#truncateFromStart``) and ``MetaProperties``
(KRaft ``meta.properties`` v1). Topic ids are Kafka ``Uuid``s (``Uuid#randomUuid``).

Topics, their ids, partition counts and configs, and the dynamic broker configs live in the
node's KRaft metadata log (``__cluster_metadata-0``, :mod:`kafkatx.broker.kraft.metadata_log`):
every change is written there first (:mod:`kafkatx.broker.kraft.controller`), and a start loads
them from it, as a KRaft broker's ``LogManager`` is given its topics by the metadata image.
A partition directory of a topic the metadata log does not know (a log dir written before it
existed) is adopted: its topic is written to the metadata log.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
import uuid
from collections.abc import Generator, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import field
from pathlib import Path

from kio.schema.errors import ErrorCode

from kafkatx.broker.config.broker_config import LEADER_EPOCH, BrokerConfig
from kafkatx.broker.config.dynamic import DynamicBrokerConfigs, topic_config_value
from kafkatx.broker.kraft.controller import BROKER_RESOURCE, Controller
from kafkatx.broker.kraft.metadata_log import METADATA_DIR, KRaftMetadataLog
from kafkatx.broker.logdir.epoch_start import truncate_epoch_cache_from_start
from kafkatx.broker.logdir.topic_names import collision_problem, validate_topic_name
from kafkatx.broker.logs.files import atomic_write, create_if_missing
from kafkatx.broker.logs.log_loader import LoadProgress
from kafkatx.broker.logs.log_values import AppendError, LogConfig
from kafkatx.broker.logs.partition_log import LogLoadError, PartitionLog
from kafkatx.formats.checkpoints import (
    LEADER_EPOCH_CHECKPOINT_FILE,
    META_PROPERTIES_FILE,
    PARTITION_METADATA_FILE,
    CheckpointEntry,
    EpochEntry,
    build_leader_epoch_checkpoint,
    build_meta_properties,
    build_offset_checkpoint,
    build_partition_metadata,
    read_meta_properties,
    read_offset_checkpoint,
    read_partition_metadata,
    uuid_from_bytes,
    uuid_to_bytes,
)
from kafkatx.formats.internal_topics import (
    GROUP_METADATA_TOPIC,
    INTERNAL_TOPICS,
    TRANSACTION_STATE_TOPIC,
)
from kafkatx.lazy_dataclass import dataclass
from kafkatx.storage.layout import CLEAN_SHUTDOWN_FILE, parse_partition_dir

REPLICATION_CHECKPOINT = "replication-offset-checkpoint"
RECOVERY_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"
INTERNAL_PARTITIONS = 50  # offsets.topic.num.partitions / transaction.state.log.num.partitions
# The topic configs Kafka creates the internal topics with (GroupCoordinator#offsetsTopicConfigs,
# TransactionStateManager#transactionTopicConfigs; both segment sizes default to 100 MiB).
INTERNAL_TOPIC_CONFIGS: Mapping[str, Mapping[str, str]] = {
    GROUP_METADATA_TOPIC: {"cleanup.policy": "compact", "compression.type": "producer",
                           "segment.bytes": "104857600"},
    TRANSACTION_STATE_TOPIC: {"cleanup.policy": "compact", "compression.type": "uncompressed",
                              "min.insync.replicas": "1", "segment.bytes": "104857600",
                              "unclean.leader.election.enable": "false"},
}
CREATE_SLICE = 32  # partitions created between two yields to the event loop


class TopicError(Exception):
    """A topic operation Kafka refuses; ``kind`` picks the error code."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind  # "invalid" | "exists" | "unknown" | "config"
        self.message = message


def random_topic_id() -> uuid.UUID:
    """``Uuid#randomUuid``: random, never zero, never printed with a leading '-'."""
    while True:
        u = uuid.uuid4()
        if u.int > 1 and not uuid_from_bytes(u.bytes).startswith("-"):
            return u


def kafka_uuid(u: uuid.UUID) -> str:
    return uuid_from_bytes(u.bytes)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _dir_topic_id(path: Path) -> uuid.UUID | None:
    """The topic id of a partition directory's ``partition.metadata`` (None without one)."""
    meta_path = path / PARTITION_METADATA_FILE
    if not meta_path.exists():
        return None
    meta = read_partition_metadata(meta_path.read_bytes(), path=str(meta_path))
    return uuid.UUID(bytes=uuid_to_bytes(meta.topic_id)) if meta.topic_id is not None else None


@dataclass(slots=True)
class Topic:
    """A topic of ``num_partitions`` partitions; ``logs`` holds the ones that exist on disk.

    Ordinary topics have every partition on disk. The internal topics have 50 partitions whose
    directories are created when a coordinator first writes to one (a log dir written by
    ``kafkatx serve`` then holds only the coordinator partitions that were used).
    """

    name: str
    topic_id: uuid.UUID
    configs: dict[str, str] = field(default_factory=dict)  # overrides only
    num_partitions: int = 0
    logs: dict[int, PartitionLog] = field(default_factory=dict)

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS

    @property
    def partitions(self) -> list[PartitionLog]:
        """The partitions on disk, in partition order."""
        return [self.logs[p] for p in sorted(self.logs)]


class LogManager:
    """All topics of the one log dir ``config.log_dir``."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.root = Path(config.log_dir)
        self.topics: dict[str, Topic] = {}
        self.creating: set[str] = set()  # topics whose partitions are being created
        self._deleter = ThreadPoolExecutor(1, thread_name_prefix="kafka-delete-logs")
        self.cluster_id = ""
        self.directory_id = ""
        self.controller: Controller | None = None
        self.previous_shutdown_clean = True
        self.broker_epoch = 0
        self.load_problems: list[str] = []
        # LogManager#loadLogsCompletedFlags: a clean-shutdown marker may be written at shutdown
        # only if the last one was clean or every log was loaded (recovered) this time.
        self.load_completed = False
        # Checkpoint entries as read at start, kept for partitions a stopped load never reached.
        self._read_checkpoints: dict[str, dict[tuple[str, int], int]] = {}
        # Broker configs set with (Incremental)AlterConfigs (ConfigRecords of the metadata log).
        self.dynamic_configs = DynamicBrokerConfigs()
        # A broker of a multi-broker serve hosts only its replicas: any subset of a topic's
        # partitions, the internal topics' ones created by the controller, never on first use.
        self.replicated = False
        self.cluster_id_for_new = ""  # a new log dir of a multi-broker serve joins this cluster
        # --brokers N: the controller's metadata log, shared by every broker of the process
        # (the Cluster opens and closes it; topics are recorded there once, by the controller).
        self.shared_metadata: KRaftMetadataLog | None = None

    # -- start -------------------------------------------------------------------------------

    def start(self, progress: LoadProgress | None = None) -> None:
        """``LogManager#startup`` / ``#loadLogs``; ``progress`` is stepped before each partition
        (and each recovered segment) and may stop the load (``LoadInterrupted``)."""
        self.root.mkdir(parents=True, exist_ok=True)
        self._meta_properties()
        self._open_metadata()
        marker = self.root / CLEAN_SHUTDOWN_FILE
        has_logs = any(parse_partition_dir(p.name) for p in self.root.iterdir()
                       if p.is_dir() and p.name != METADATA_DIR)
        self.previous_shutdown_clean = marker.exists() or not has_logs
        if marker.exists():
            try:
                self.broker_epoch = int(json.loads(marker.read_text())["brokerEpoch"]) + 1
            except (ValueError, KeyError, TypeError):
                self.broker_epoch = 1
            marker.unlink()
        for name in (REPLICATION_CHECKPOINT, RECOVERY_CHECKPOINT, LOG_START_CHECKPOINT,
                     CLEANER_CHECKPOINT):
            create_if_missing(self.root / name)
        self._load_partitions(self._checkpoint(LOG_START_CHECKPOINT),
                              self._checkpoint(RECOVERY_CHECKPOINT),
                              progress or LoadProgress())
        self.load_completed = True

    def _checkpoint(self, name: str) -> dict[tuple[str, int], int]:
        """An offset checkpoint file of the log dir as ``LogManager#loadLogs`` reads it."""
        path = self.root / name
        checkpoint = read_offset_checkpoint(path.read_bytes(), path=str(path))
        self.load_problems.extend(str(p) for p in checkpoint.problems)
        self._read_checkpoints[name] = checkpoint.as_map()
        return checkpoint.as_map()

    def _meta_properties(self) -> None:
        """``MetaPropertiesEnsemble``: the log dir's ``meta.properties`` v1, written when there is
        none (``kafka-storage format``) and given a ``directory.id`` when it lacks one (as Kafka
        3.7+ does at start)."""
        path = self.root / META_PROPERTIES_FILE
        properties: dict[str, str] = {}
        if path.exists():
            meta = read_meta_properties(path.read_bytes(), path=str(path))
            if meta.node_id is not None and meta.node_id != self.config.node_id:
                raise LogLoadError(f"{path}: node.id {meta.node_id} does not match --node-id "
                                   f"{self.config.node_id}")
            properties = dict(meta.properties)
            self.cluster_id = meta.cluster_id or ""
            self.directory_id = meta.directory_id or ""
            if self.cluster_id and self.directory_id:
                return
        self.cluster_id = (self.cluster_id or self.cluster_id_for_new
                           or kafka_uuid(random_topic_id()))
        self.directory_id = self.directory_id or kafka_uuid(random_topic_id())
        atomic_write(path, build_meta_properties({
            **properties,
            "cluster.id": self.cluster_id,
            "directory.id": self.directory_id,
            "node.id": str(self.config.node_id),
            "version": "1",
        }))

    def _open_metadata(self) -> None:
        """The KRaft metadata log: loaded (snapshot + records), a new raft epoch begun, the
        bootstrap records written when it is new; the dynamic broker configs from its image."""
        if self.shared_metadata is not None:
            metadata = self.shared_metadata
            self.controller = Controller(metadata, node_id=self.config.node_id,
                                         directory_id=self.directory_id, now_ms=_now_ms)
        else:
            metadata = KRaftMetadataLog(self.root, node_id=self.config.node_id,
                                        snapshot_bytes=self.config.metadata_snapshot_bytes)
            metadata.open(_now_ms())
            self.load_problems.extend(metadata.problems)
            self.controller = Controller(metadata, node_id=self.config.node_id,
                                         directory_id=self.directory_id, now_ms=_now_ms)
            self.controller.activate(self.config.transaction_version)
        configs = metadata.image.configs
        self.dynamic_configs.node.update(configs.get((BROKER_RESOURCE,
                                                      str(self.config.node_id)), {}))
        self.dynamic_configs.cluster.update(configs.get((BROKER_RESOURCE, ""), {}))

    def _load_partitions(self, log_start_offsets: Mapping[tuple[str, int], int],
                         recovery_points: Mapping[tuple[str, int], int],
                         progress: LoadProgress) -> None:
        """``LogManager#loadLogs``: every partition directory through ``LogLoader``; after an
        unclean shutdown each recovers from its checkpointed recovery point (0 if absent).

        The topics are the metadata image's (``BrokerMetadataPublisher`` hands a KRaft broker
        its topics): a directory whose ``partition.metadata`` names another topic id than the
        image's (a deleted topic's) or a partition the topic does not have is not loaded (Kafka
        treats it as a stray log); a partition of the image without a directory gets one
        (``Partition#createLogIfNotExists``); a topic only the directories know is adopted."""
        found: dict[str, list[tuple[int, Path]]] = {}
        for path in sorted(self.root.iterdir()):
            if not path.is_dir() or path.name == METADATA_DIR:
                continue
            if path.name.endswith("-delete"):
                shutil.rmtree(path, ignore_errors=True)  # an interrupted delete: finish it
                continue
            parsed = parse_partition_dir(path.name)
            if parsed is None or parsed.state != "live":
                continue
            found.setdefault(parsed.topic, []).append((parsed.partition, path))
        assert self.controller is not None
        image = self.controller.image
        known = {t.name: t for t in image.topics.values()}
        progress.partitions_total = sum(len(parts) for parts in found.values())
        for name in sorted(set(found) | set(known)):
            parts = sorted(found.get(name, []))
            internal = name in INTERNAL_TOPICS
            meta = known.get(name)
            if meta is not None:
                topic = Topic(name, uuid.UUID(bytes=uuid_to_bytes(meta.topic_id)),
                              image.topic_configs(name), num_partitions=len(meta.partitions))
                parts = [(p, path) for p, path in parts if self._belongs(topic, p, path)]
            else:
                topic_id = next((t for t in (_dir_topic_id(path) for _, path in parts) if t),
                                None)
                topic = Topic(name, topic_id or random_topic_id(),
                              self.internal_topic_configs(name),
                              num_partitions=INTERNAL_PARTITIONS if internal else 0)
            for partition, path in parts:
                if internal and partition >= INTERNAL_PARTITIONS:
                    self.load_problems.append(f"{path}: partition {partition} of an internal "
                                              f"topic of {INTERNAL_PARTITIONS}; ignored")
                    continue
                if (meta is None and not internal and not self.replicated
                        and partition != len(topic.logs)):
                    self.load_problems.append(f"{path}: partition {partition} without all the "
                                              "partitions below it; ignored")
                    continue
                progress.step()
                if not topic.logs:
                    self.topics[name] = topic  # what is loaded is closed if the load stops
                log = self._new_log(topic, partition, path)
                log.open(log_start_offsets.get((name, partition), 0),
                         recovery_point=recovery_points.get((name, partition), 0),
                         had_clean_shutdown=self.previous_shutdown_clean,
                         now_ms=_now_ms(), progress=progress)
                self.load_problems.extend(log.load_problems)
                topic.logs[partition] = log
                progress.partitions_loaded += 1
            if meta is None:
                if not topic.logs:
                    continue
                if not internal:
                    topic.num_partitions = len(topic.logs)
                self.controller.create_topic(name, kafka_uuid(topic.topic_id),
                                             topic.num_partitions, topic.configs)
            elif not internal and not self.replicated:
                for partition in range(topic.num_partitions):
                    if partition not in topic.logs:
                        self._create_log(topic, partition)
            self.topics[name] = topic

    def _belongs(self, topic: Topic, partition: int, path: Path) -> bool:
        """Whether the directory is a partition of ``topic`` as the metadata image has it;
        one that is not is a stray log (``LogManager#isStrayKraftReplica``), renamed
        ``<dir>.<uuid>-stray`` and kept (``UnifiedLog#logStrayDirName``)."""
        found = _dir_topic_id(path)
        if partition >= topic.num_partitions:
            why = f"{topic.name} has {topic.num_partitions} partitions in the metadata log"
        elif found is not None and found != topic.topic_id:
            why = (f"partition.metadata says topic id {kafka_uuid(found)}, the metadata log "
                   f"says {topic.name} is {kafka_uuid(topic.topic_id)} (a deleted topic's "
                   "directory)")
        else:
            return True
        stray = path.with_name(f"{path.name}.{uuid.uuid4().hex}-stray")
        path.rename(stray)
        self.load_problems.append(f"{path}: {why}; not loaded, kept as {stray.name}")
        return False

    # -- topics ------------------------------------------------------------------------------

    def topic_config(self, name: str, overrides: Mapping[str, str]) -> str | None:
        """The value of topic config ``name`` a topic with ``overrides`` acts on: its override,
        the broker's dynamic configs, a serve option, Kafka's default (``LogConfig.fromProps``)."""
        return topic_config_value(name, overrides, self.dynamic_configs, self.config)

    def log_config(self, overrides: Mapping[str, str]) -> LogConfig:
        def value(name: str) -> str:
            return self.topic_config(name, overrides) or ""

        policies = {policy.strip().lower() for policy in value("cleanup.policy").split(",")}
        return LogConfig(
            segment_bytes=int(value("segment.bytes")),
            segment_ms=int(value("segment.ms")),
            max_message_bytes=int(value("max.message.bytes")),
            log_append_time=value("message.timestamp.type") == "LogAppendTime",
            delete="delete" in policies,
            compact="compact" in policies,
            retention_ms=int(value("retention.ms")),
            retention_bytes=int(value("retention.bytes")),
            delete_retention_ms=int(value("delete.retention.ms")),
            min_cleanable_dirty_ratio=float(value("min.cleanable.dirty.ratio")),
            min_compaction_lag_ms=int(value("min.compaction.lag.ms")),
            max_compaction_lag_ms=int(value("max.compaction.lag.ms")),
        )

    def reconfigure(self, topic: Topic | None = None) -> None:
        """``LogManager#updateTopicConfig`` (one topic) / ``#reconfigureDefaultLogConfig`` (all,
        after a broker-level change): each log acts on the new values from its next append."""
        for t in [topic] if topic is not None else list(self.topics.values()):
            config = self.log_config(t.configs)
            for log in t.logs.values():
                log.update_config(config)

    def _new_log(self, topic: Topic, partition: int, path: Path) -> PartitionLog:
        return PartitionLog(topic.name, partition, path, self.log_config(topic.configs),
                            leader_epoch=LEADER_EPOCH,
                            max_transaction_timeout_ms=self.config.transaction_max_timeout_ms)

    def create_topic(self, name: str, num_partitions: int,
                     configs: Mapping[str, str] | None = None) -> Topic:
        """Create the partition directories and their metadata files; the logs are opened."""
        topic = self.begin_create(name, num_partitions, configs)
        for p in range(num_partitions):
            self._create_log(topic, p)
        return self._end_create(topic)

    async def create_logs_in_slices(self, topic: Topic) -> Topic:
        """The logs of a topic :meth:`begin_create` recorded, ``CREATE_SLICE`` at a time in a
        worker thread (fsyncs), so thousands of partitions stall no connection; the topic is
        known once its last log exists (as Kafka's brokers create logs after the records)."""
        try:
            for start in range(0, topic.num_partitions, CREATE_SLICE):
                stop = min(start + CREATE_SLICE, topic.num_partitions)
                if topic.num_partitions <= CREATE_SLICE:
                    self._create_logs(topic, start, stop)
                else:  # their files are fsynced: off the event loop
                    await asyncio.to_thread(self._create_logs, topic, start, stop)
        except BaseException:
            self.creating.discard(topic.name)
            raise
        return self._end_create(topic)

    def _create_logs(self, topic: Topic, start: int, stop: int) -> None:
        for p in range(start, stop):
            self._create_log(topic, p)

    def begin_create(self, name: str, num_partitions: int,
                     configs: Mapping[str, str] | None) -> Topic:
        """Validate and record a new topic; its logs follow (:meth:`create_logs_in_slices`)."""
        problem = validate_topic_name(name)
        if problem is not None:
            raise TopicError("invalid", problem)
        if name in self.topics or name in self.creating:
            raise TopicError("exists", f"Topic '{name}' already exists.")
        problem = collision_problem(name, [*self.topics, *self.creating])
        if problem is not None:
            raise TopicError("invalid", problem)
        topic = Topic(name, random_topic_id(), dict(configs or {}),
                      num_partitions=num_partitions)
        self._metadata().create_topic(name, kafka_uuid(topic.topic_id), num_partitions,
                                      topic.configs)
        self.creating.add(name)
        return topic

    def _end_create(self, topic: Topic) -> Topic:
        self.creating.discard(topic.name)
        self.topics[topic.name] = topic
        return topic

    def create_partitions(self, topic: Topic, count: int) -> None:
        """``ReplicationControlManager#createPartitions``: the new partitions' records, then
        their logs."""
        self._metadata().create_partitions(kafka_uuid(topic.topic_id), topic.num_partitions,
                                           count)
        for partition in range(topic.num_partitions, count):
            self._create_log(topic, partition)
        topic.num_partitions = count

    def _metadata(self) -> Controller:
        if self.controller is None:
            raise RuntimeError("the log dir is not started: no metadata log")
        return self.controller

    def _create_log(self, topic: Topic, partition: int, *,
                    first_epoch: bool = True) -> PartitionLog:
        """``Partition#createLogIfNotExists``: the directory, its metadata files, the log
        (a follower's ``leader-epoch-checkpoint`` starts empty: its epochs come with the
        leader's batches)."""
        path = self.root / f"{topic.name}-{partition}"
        path.mkdir(parents=True, exist_ok=True)
        atomic_write(path / PARTITION_METADATA_FILE,
                     build_partition_metadata(kafka_uuid(topic.topic_id)))
        atomic_write(path / LEADER_EPOCH_CHECKPOINT_FILE, build_leader_epoch_checkpoint(
            [EpochEntry(epoch=LEADER_EPOCH, start_offset=0)] if first_epoch else []))
        log = self._new_log(topic, partition, path)
        log.open()
        topic.logs[partition] = log
        return log

    def add_replicated_topic(self, name: str, topic_id: uuid.UUID, num_partitions: int,
                             configs: Mapping[str, str], hosted: Mapping[int, bool]) -> Topic:
        """The controller's new topic as this broker learns it (``ReplicaManager#applyDelta``
        for a ``TopicRecord`` and its ``PartitionRecord``s): the topic in the metadata cache,
        a log for each partition in ``hosted`` (partition -> whether this broker leads it, so
        its leader epoch cache starts with epoch 0 at offset 0)."""
        topic = self.topics.setdefault(name, Topic(name, topic_id, dict(configs)))
        topic.num_partitions = max(topic.num_partitions, num_partitions)  # CreatePartitions
        for partition, leads in sorted(hosted.items()):
            if partition not in topic.logs:
                self._create_log(topic, partition, first_epoch=leads)
        return topic

    def read_high_watermarks(self) -> dict[tuple[str, int], int]:
        """``replication-offset-checkpoint`` as read at start (``ReplicaManager`` initialises
        each partition's high watermark from it)."""
        return self._read_checkpoints.get(REPLICATION_CHECKPOINT) or self._checkpoint(
            REPLICATION_CHECKPOINT)

    def internal_topic_configs(self, name: str) -> dict[str, str]:
        """The configs an internal topic is created with, ``segment.bytes`` from
        ``offsets.topic.segment.bytes`` / ``transaction.state.log.segment.bytes`` (serve
        options); empty for other topics."""
        configs = dict(INTERNAL_TOPIC_CONFIGS.get(name, {}))
        if name == GROUP_METADATA_TOPIC:
            configs["segment.bytes"] = str(self.config.offsets_topic_segment_bytes)
        elif name == TRANSACTION_STATE_TOPIC:
            configs["segment.bytes"] = str(self.config.transaction_state_segment_bytes)
        return configs

    def internal_topic(self, name: str) -> Topic:
        """The internal topic ``name`` (50 partitions), created without any partition on disk
        when it does not exist yet (Kafka creates it on the first FindCoordinator)."""
        topic = self.topics.get(name)
        if topic is None:
            if name not in INTERNAL_TOPICS:
                raise TopicError("invalid", f"{name} is not an internal topic")
            topic = Topic(name, random_topic_id(), self.internal_topic_configs(name),
                          num_partitions=INTERNAL_PARTITIONS)
            self._metadata().create_topic(name, kafka_uuid(topic.topic_id),
                                          INTERNAL_PARTITIONS, topic.configs)
            self.topics[name] = topic
        return topic

    def internal_log(self, name: str, partition: int) -> PartitionLog:
        """A coordinator partition, its directory created on first use."""
        topic = self.internal_topic(name)
        log = topic.logs.get(partition)
        if log is None:
            if not 0 <= partition < topic.num_partitions:
                raise TopicError("unknown", f"{name}-{partition} does not exist")
            log = self._create_log(topic, partition)
        return log

    def delete_topic(self, name: str) -> Topic:
        """``LogManager#asyncDelete`` for each partition: rename to ``<dir>.<uuid>-delete``, then
        remove (Kafka waits ``file.delete.delay.ms``; here the removal follows at once)."""
        topic = self.topics.get(name)
        if topic is None:
            raise TopicError("unknown", "This server does not host this topic-partition.")
        if self.shared_metadata is None:  # the controller of --brokers N records it once
            self._metadata().delete_topic(kafka_uuid(topic.topic_id))
        del self.topics[name]
        for log in topic.logs.values():
            log.release()
            unique = uuid.uuid4().hex
            target = log.dir.with_name(f"{log.dir.name}.{unique}-delete")
            log.dir.rename(target)
            if len(topic.logs) <= CREATE_SLICE:
                shutil.rmtree(target, ignore_errors=True)
            else:  # Kafka's kafka-delete-logs task removes them in the background: a topic
                # of thousands of partitions must not stall the event loop
                self._deleter.submit(shutil.rmtree, target, True)
        if any(t == name for t, _ in self.cleaner_checkpoints()):
            self.update_cleaner_checkpoints({})
        return topic

    def delete_records(self, topic: str, partition: int, offset: int) -> int:
        """``ReplicaManager#deleteRecordsOnLocalLog`` for a partition that exists: an internal
        topic is INVALID_TOPIC_EXCEPTION, else ``Partition#deleteRecordsOnLeader``; a raised log
        start offset truncates the leader epoch cache from the start
        (``LeaderEpochFileCache#truncateFromStart``: the one epoch now starts there). Returns
        the low watermark; raises ``AppendError``."""
        if topic in INTERNAL_TOPICS:
            raise AppendError(ErrorCode.invalid_topic_exception,
                              f"Cannot delete records of internal topic {topic}")
        log = self.get(topic, partition)
        if log is None:
            raise AppendError(ErrorCode.unknown_topic_or_partition,
                              "This server does not host this topic-partition.")
        before = log.log_start_offset
        low_watermark = log.delete_records_before(offset)
        truncate_epoch_cache_from_start(log, before)
        return low_watermark

    def cleanup_logs_steps(self, now_ms: int, *, compacted: bool = False
                           ) -> Generator[None, object, int]:
        """``LogManager#cleanupLogs``: ``UnifiedLog#deleteOldSegments`` on every log whose
        cleanup.policy lacks compact (``compacted``: on those with compact instead, as the log
        cleaner does after each round, ``LogCleanerManager#deletableLogs``); the log start
        offsets are checkpointed when one moved. Returns the number of segments deleted. Stops
        after each log (the event loop may serve requests then: a log deleted meanwhile is
        skipped)."""
        deleted = 0
        for log in list(self.all_logs()):
            topic = self.topics.get(log.topic)
            if log.config.compact != compacted or topic is None or \
                    topic.logs.get(log.partition) is not log:
                continue  # deleted while an earlier log was cleaned up
            before = log.log_start_offset
            deleted += log.delete_old_segments(now_ms)
            truncate_epoch_cache_from_start(log, before)
            yield None
        if deleted:
            self.checkpoint_log_start_offsets()
        return deleted

    def contains(self, topic: str, partition: int) -> bool:
        """``MetadataCache#contains``: the partition exists, hosted here or not."""
        t = self.topics.get(topic)
        return t is not None and 0 <= partition < t.num_partitions

    def get(self, topic: str, partition: int) -> PartitionLog | None:
        if not self.contains(topic, partition):
            return None
        t = self.topics[topic]
        log = t.logs.get(partition)
        if log is None and t.is_internal and not self.replicated:
            log = self.internal_log(topic, partition)
        return log

    def all_logs(self) -> Iterator[PartitionLog]:
        for topic in self.topics.values():
            yield from topic.logs.values()

    def max_producer_id(self) -> int:
        """The largest producer id any partition's state holds (-1 if none)."""
        return max((pid for log in self.all_logs() for pid in log.producer_state.producers),
                   default=-1)

    # -- checkpoints and shutdown -------------------------------------------------------------

    def _entries(self, value: str, checkpoint: str) -> list[CheckpointEntry]:
        """One entry per loaded log, plus the entries read at start for partitions a stopped
        load never reached (so their checkpoints survive a stop during start-up)."""
        entries = {(log.topic, log.partition): getattr(log, value) for log in self.all_logs()}
        if not self.load_completed:
            for key, offset in self._read_checkpoints.get(checkpoint, {}).items():
                entries.setdefault(key, offset)
        return [CheckpointEntry(topic=t, partition=p, offset=o)
                for (t, p), o in entries.items()]

    def checkpoint_high_watermarks(self) -> None:
        """``ReplicaManager#checkpointHighWatermarks``."""
        atomic_write(self.root / REPLICATION_CHECKPOINT, build_offset_checkpoint(
            self._entries("high_watermark", REPLICATION_CHECKPOINT)))

    def flush_rolled(self) -> tuple[list[tuple[PartitionLog, int]], list[Path]]:
        """What ``UnifiedLog#roll``'s scheduled ``flushUptoOffsetExclusive`` would flush now: for
        each log whose active segment starts past its recovery point, that base offset and the
        files below it not yet flushed. Sync the files (``fsync_files``, off the event loop),
        then ``mark_flushed`` each log."""
        work = []
        files: list[Path] = []
        for log in self.all_logs():
            upto = log.rolled_flush_point()
            if upto > log.recovery_point:
                work.append((log, upto))
                files += log.unflushed_files(upto)
        return work, files

    def checkpoint_recovery_points(self) -> None:
        """``LogManager#checkpointRecoveryOffsetsInDir``."""
        atomic_write(self.root / RECOVERY_CHECKPOINT, build_offset_checkpoint(
            self._entries("recovery_point", RECOVERY_CHECKPOINT)))

    def checkpoint_log_start_offsets(self) -> None:
        """``LogManager#checkpointLogStartOffsetsInDir``: only logs whose start offset moved past
        their first segment's base offset are listed."""
        entries = [CheckpointEntry(topic=log.topic, partition=log.partition,
                                   offset=log.log_start_offset)
                   for log in self.all_logs()
                   if log.segments and log.log_start_offset > log.segments[0].base_offset]
        if not self.load_completed:
            loaded = {(log.topic, log.partition) for log in self.all_logs()}
            entries += [CheckpointEntry(topic=t, partition=p, offset=o)
                        for (t, p), o in self._read_checkpoints.get(LOG_START_CHECKPOINT,
                                                                    {}).items()
                        if (t, p) not in loaded]
        atomic_write(self.root / LOG_START_CHECKPOINT, build_offset_checkpoint(entries))

    def cleaner_checkpoints(self) -> dict[tuple[str, int], int]:
        """``cleaner-offset-checkpoint``: each compacted log's first dirty offset."""
        path = self.root / CLEANER_CHECKPOINT
        if not path.exists():
            return {}
        return read_offset_checkpoint(path.read_bytes(), path=str(path)).as_map()

    def update_cleaner_checkpoints(self, updates: Mapping[tuple[str, int], int]) -> None:
        """``LogCleanerManager#updateCheckpoints``: ``updates`` applied, the entries of logs
        no longer here dropped (a deleted topic's: ``LogManager#asyncDelete`` removes them)."""
        present = {(log.topic, log.partition) for log in self.all_logs()}
        entries = {k: v for k, v in {**self.cleaner_checkpoints(), **updates}.items()
                   if k in present}
        atomic_write(self.root / CLEANER_CHECKPOINT, build_offset_checkpoint(
            [CheckpointEntry(topic=t, partition=p, offset=o)
             for (t, p), o in sorted(entries.items())]))

    def shutdown(self) -> None:
        """``ReplicaManager#shutdown`` (high watermarks) then ``LogManager#shutdown``: every log
        closed (snapshot, trimmed indexes, flushed), recovery points = log end offsets, log start
        offsets, then the clean-shutdown marker, if the last shutdown was clean or every log was
        loaded (a load stopped half way after a crash leaves the rest to recover next time)."""
        self.checkpoint_high_watermarks()
        for log in self.all_logs():
            log.close()
        self._deleter.shutdown(wait=True)  # deleted topics' directories all gone
        atomic_write(self.root / RECOVERY_CHECKPOINT, build_offset_checkpoint(
            self._entries("log_end_offset", RECOVERY_CHECKPOINT)))
        self.checkpoint_log_start_offsets()
        if self.controller is not None:
            if self.load_completed:
                self.controller.controlled_shutdown()
            if self.shared_metadata is None:
                self.controller.metadata.close(_now_ms())
        if not (self.previous_shutdown_clean or self.load_completed):
            return
        atomic_write(self.root / CLEAN_SHUTDOWN_FILE, json.dumps(
            {"version": 0, "brokerEpoch": self.broker_epoch}, separators=(",", ":")).encode())
