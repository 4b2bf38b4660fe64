"""``kafkatx serve --brokers N``: N brokers in one process and the controller they share.

The controller's part mirrors KRaft's ``ReplicationControlManager`` (replica assignment, leader
and ISR per partition, ``electLeader`` from the ISR — or from any live replica when the topic
has ``unclean.leader.election.enable`` — on a broker's controlled shutdown or fence,
``AlterPartition`` from leaders, the leader epoch bumped on each election) and
``ProducerIdControlManager`` (one producer id sequence for the cluster). Brokers learn the
partitions' states in-process, as ``ReplicaManager#applyDelta`` learns them from the metadata
log; everything between brokers that Kafka sends over the wire as client-visible requests
(replica Fetch, OffsetsForLeaderEpoch) goes over loopback sockets here too
(:mod:`kafkatx.broker.replication.replica_fetcher`). Assignment is deterministic: partition p's
replicas
are the brokers from index ``(t + p) mod N`` on for the t-th topic created, its first replica
the preferred leader (Kafka's ``StripedReplicaPlacer`` starts at a random broker).

Each broker's log dir is ``<log-dir>/broker-<id>``. The controller's KRaft metadata log lives in
the first broker's (``__cluster_metadata-0``, shared by the brokers of the process): broker
registrations, topics with their replicas, every election and ISR change
(``PartitionChangeRecord``). At start the topics come from it and each partition's replicas from
the log dirs that hold it; the leader is the replica with the newest leader epoch, then the
longest log, and is elected anew (the epoch goes up).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from kafkatx.broker.config.broker_config import BrokerConfig
from kafkatx.broker.context import BrokerNode, ClusterError, PartitionState
from kafkatx.broker.kraft.controller import Controller
from kafkatx.broker.kraft.metadata_log import KRaftMetadataLog
from kafkatx.broker.kraft.producer_ids import ProducerIdManager
from kafkatx.broker.logdir.log_manager import (
    INTERNAL_PARTITIONS,
    Topic,
    TopicError,
    kafka_uuid,
    random_topic_id,
)
from kafkatx.broker.logdir.topic_names import collision_problem, validate_topic_name
from kafkatx.formats.checkpoints import META_PROPERTIES_FILE, read_meta_properties
from kafkatx.formats.internal_topics import INTERNAL_TOPICS
from kafkatx.lazy_dataclass import dataclass
from kafkatx.semantics.leader_epochs import UNDEFINED_EPOCH

if TYPE_CHECKING:
    from kafkatx.broker.logs.partition_log import PartitionLog

TopicPartition = tuple[str, int]
MAX_INTERNAL_REPLICATION_FACTOR = 3  # offsets.topic.replication.factor's default
UNASSIGNED_DIRECTORY = "AAAAAAAAAAAAAAAAAAAAAA"  # DirectoryId.UNASSIGNED
SETTLE_TIMEOUT_S = 5.0  # how long a stop of the whole cluster lets followers catch up


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def broker_dir(parent: Path, node_id: int) -> Path:
    return parent / f"broker-{node_id}"


@dataclass(slots=True)
class Cluster:
    """The brokers of one ``kafkatx serve --brokers N`` and the controller's metadata."""

    configs: dict[int, BrokerConfig]
    console: Console | None = None
    default_replication_factor: int = 1
    # Builds a broker of this cluster (the composition root's, kafkatx.broker.composition).
    new_broker_node: Callable[[BrokerConfig, Cluster], BrokerNode] | None = None
    brokers: dict[int, BrokerNode] = field(default_factory=dict)  # the running ones
    partitions: dict[TopicPartition, PartitionState] = field(default_factory=dict)
    producer_ids: ProducerIdManager = field(default_factory=ProducerIdManager)
    cluster_id: str = ""
    on_change: list[Callable[[], None]] = field(default_factory=list)
    topics_assigned: int = 0
    metadata: KRaftMetadataLog | None = None  # the controller's, in the first broker's log dir
    controller: Controller | None = None
    directories: dict[int, str] = field(default_factory=dict)  # node id -> directory.id

    @property
    def node_ids(self) -> list[int]:
        return sorted(self.configs)

    @property
    def alive(self) -> list[int]:
        return sorted(self.brokers)

    def log(self, message: str) -> None:
        first = next(iter(self.brokers.values()), None)
        if first is not None:
            first.log(f"controller: {message}")

    # -- start-up ---------------------------------------------------------------------------

    def read_cluster_id(self) -> str:
        """The ``cluster.id`` of a broker's ``meta.properties`` already there, else a new one
        (every broker of the cluster is formatted with the same)."""
        for config in self.configs.values():
            path = Path(config.log_dir) / META_PROPERTIES_FILE
            if path.exists():
                meta = read_meta_properties(path.read_bytes(), path=str(path))
                if meta.cluster_id:
                    return meta.cluster_id
        return kafka_uuid(random_topic_id())

    def new_broker(self, node_id: int) -> BrokerNode:
        assert self.new_broker_node is not None, "a Cluster is built by kafkatx.broker.composition"
        broker = self.new_broker_node(self.configs[node_id], self)
        broker.logs.shared_metadata = self.metadata
        return broker

    def _open_metadata(self) -> None:
        """The KRaft metadata log of the cluster's controller (``QuorumController`` co-located
        with the first broker: ``<log-dir>/broker-<first id>/__cluster_metadata-0``): every
        broker registers and leaves there, topics are recorded there once."""
        first = self.configs[self.node_ids[0]]
        root = Path(first.log_dir)
        root.mkdir(parents=True, exist_ok=True)
        self.metadata = KRaftMetadataLog(root, node_id=first.node_id,
                                         snapshot_bytes=first.metadata_snapshot_bytes)
        self.metadata.open(_now_ms())
        self.controller = Controller(self.metadata, node_id=first.node_id, directory_id="",
                                     now_ms=_now_ms)
        self.controller.activate(first.transaction_version)
        self.producer_ids = ProducerIdManager(
            next_block=self.metadata.image.next_producer_id,
            on_block=self.controller.allocate_producer_ids)

    async def start(self, stop_requested: Callable[[], bool] = lambda: False) -> None:
        """Load every broker's log dir, rebuild the metadata, give each broker its roles, then
        listen."""
        self.cluster_id = self.read_cluster_id()
        self._open_metadata()
        loaded = []
        for node_id in self.node_ids:
            broker = self.new_broker(node_id)
            broker.load_logs()
            loaded.append(broker)
        for broker in loaded:
            self.brokers[broker.config.node_id] = broker
        self._rebuild_metadata()
        highest = max((b.logs.max_producer_id() for b in loaded), default=-1)
        self.producer_ids.observe(highest)
        for broker in loaded:
            await broker.listen()
            # A restarted broker listens where it did (a free port chosen once stays its own).
            self.configs[broker.config.node_id] = dataclasses.replace(broker.config,
                                                                      port=broker.port)
        for state in list(self.partitions.values()):
            self._push(state)
        for broker in loaded:
            broker.start_tasks()

    def _rebuild_metadata(self) -> None:
        """Topics and partition states from what the log dirs hold."""
        topics: dict[str, Topic] = {}
        hosts: dict[TopicPartition, list[int]] = {}
        for node_id, broker in sorted(self.brokers.items()):
            for name, topic in broker.logs.topics.items():
                known = topics.setdefault(name, topic)
                if known.topic_id != topic.topic_id:
                    broker.warn(f"topic {name}: topic id {kafka_uuid(topic.topic_id)} differs "
                                f"from broker {known}'s; the first broker's is used")
                known_count = max(known.num_partitions, topic.num_partitions)
                known.num_partitions = known_count
                for partition in topic.logs:
                    hosts.setdefault((name, partition), []).append(node_id)
        for broker in self.brokers.values():
            for name, topic in topics.items():
                broker.logs.add_replicated_topic(name, topic.topic_id, topic.num_partitions,
                                                 topic.configs, {})
                broker.logs.topics[name].num_partitions = topic.num_partitions
        for tp, replicas in sorted(hosts.items()):
            ranked = []
            for node_id in replicas:
                log = self.brokers[node_id].logs.get(*tp)
                assert log is not None
                _as_replica(self.brokers[node_id], log)
                assert log.epochs is not None
                ranked.append((log.epochs.latest_epoch, log.log_end_offset, -node_id))
            best = max(ranked)
            epoch = max(best[0], 0) + 1 if best[0] != UNDEFINED_EPOCH else 0
            state = PartitionState(tp[0], tp[1], sorted(replicas), -best[2], epoch,
                                   sorted(replicas))
            self._record_change(state, leader=True, isr=True)  # the start's election
            self.partitions[tp] = state

    # -- topics -----------------------------------------------------------------------------

    def assignment(self, num_partitions: int, replication_factor: int) -> list[list[int]]:
        """Partition p's replicas: the brokers from index ``start + p`` (mod N) on, ``start``
        moving on by one per topic, so topics' leaders spread over the brokers."""
        ids = self.node_ids
        start = self.topics_assigned
        self.topics_assigned += 1
        if not 1 <= replication_factor <= len(ids):
            raise ClusterError("replication_factor",
                               f"Unable to replicate the partition {replication_factor} "
                               f"time(s): The target replication factor of "
                               f"{replication_factor} cannot be reached because only "
                               f"{len(ids)} broker(s) are registered.")
        return [[ids[(start + p + i) % len(ids)] for i in range(replication_factor)]
                for p in range(num_partitions)]

    def create_topic(self, name: str, num_partitions: int, replication_factor: int | None,
                     configs: Mapping[str, str] | None = None, *,
                     assignment: list[list[int]] | None = None,
                     topic_id: uuid.UUID | None = None) -> Topic:
        """``ReplicationControlManager#createTopic``: every running broker learns the topic;
        each replica creates its log; the first replica leads at epoch 0."""
        problem = validate_topic_name(name)
        if problem is not None:
            raise TopicError("invalid", problem)
        if any(name in b.logs.topics for b in self.brokers.values()):
            raise TopicError("exists", f"Topic '{name}' already exists.")
        for b in self.brokers.values():
            problem = collision_problem(name, b.logs.topics)
            if problem is not None:
                raise TopicError("invalid", problem)
        if assignment is None:
            rf = replication_factor if replication_factor is not None \
                else self.default_replication_factor
            assignment = self.assignment(num_partitions, rf)
        topic_id = topic_id or random_topic_id()
        states = self._new_states(name, 0, assignment)
        if self.controller is not None:
            self.controller.create_replicated_topic(
                name, kafka_uuid(topic_id), [(s.replicas, s.leader, s.isr) for s in states],
                dict(configs or {}), self._directories())
        return self._add_partitions(name, topic_id, states, dict(configs or {}))

    def create_partitions(self, name: str, count: int,
                          assignment: list[list[int]] | None = None) -> None:
        """``ReplicationControlManager#createPartitions``: partitions up to ``count``, each
        with the replicas of ``assignment`` or the placer's at the topic's replication factor
        (partition 0's), leading on their first live replica; every running broker learns them
        before the answer, each replica creates its log."""
        topic = next(b.logs.topics[name] for b in self.brokers.values() if name in b.logs.topics)
        first = topic.num_partitions
        if assignment is None:
            state = self.partitions[(name, 0)]
            assignment = self.assignment(count - first, len(state.replicas))
        states = self._new_states(name, first, assignment)
        if self.controller is not None:
            self.controller.create_replicated_partitions(
                kafka_uuid(topic.topic_id), first,
                [(s.replicas, s.leader, s.isr) for s in states], self._directories())
        self._add_partitions(name, topic.topic_id, states, topic.configs)

    def _new_states(self, name: str, first: int,
                    assignment: list[list[int]]) -> list[PartitionState]:
        alive = set(self.alive)
        return [PartitionState(name, first + i, list(replicas),
                               next((r for r in replicas if r in alive), -1), 0,
                               [r for r in replicas if r in alive])
                for i, replicas in enumerate(assignment)]

    def _directories(self) -> dict[int, str]:
        self.directories.update({n: b.logs.directory_id for n, b in self.brokers.items()})
        return {n: self.directories.get(n, UNASSIGNED_DIRECTORY) for n in self.node_ids}

    def _add_partitions(self, name: str, topic_id: uuid.UUID, states: list[PartitionState],
                        configs: dict[str, str]) -> Topic:
        """Every running broker learns the partitions (``applyDelta``): the topic in its
        metadata, a log on each replica, then each replica its role."""
        count = states[-1].partition + 1
        created = None
        for node_id, broker in self.brokers.items():
            hosted = {s.partition: s.leader == node_id for s in states if node_id in s.replicas}
            topic = broker.logs.add_replicated_topic(name, topic_id, count, configs, hosted)
            created = created or topic
        for state in states:
            self.partitions[state.tp] = state
            self._push(state)
        assert created is not None
        return created

    def ensure_internal_topic(self, name: str) -> None:
        """The internal topic, created with its 50 partitions the first time a coordinator of
        that kind is looked up (``AutoTopicCreationManager``), replication factor
        min(3, brokers)."""
        if name not in INTERNAL_TOPICS:
            raise TopicError("invalid", f"{name} is not an internal topic")
        if any((name, p) in self.partitions for p in range(INTERNAL_PARTITIONS)):
            return
        first = next(iter(self.brokers.values()))
        rf = min(MAX_INTERNAL_REPLICATION_FACTOR, len(self.node_ids))
        self.create_topic(name, INTERNAL_PARTITIONS, rf, first.logs.internal_topic_configs(name))
        self.log(f"created {name} with {INTERNAL_PARTITIONS} partitions, replication factor "
                 f"{rf}")

    def delete_topic(self, name: str) -> None:
        """``ReplicationControlManager#deleteTopic``: gone from every running broker."""
        found = False
        topic_id = next((b.logs.topics[name].topic_id for b in self.brokers.values()
                         if name in b.logs.topics), None)
        if topic_id is not None and self.controller is not None:
            self.controller.delete_topic(kafka_uuid(topic_id))
        for broker in self.brokers.values():
            for tp in [tp for tp in broker.replicas.partitions if tp[0] == name]:
                broker.replicas.forget(tp)
            if name in broker.logs.topics:
                broker.logs.delete_topic(name)
                found = True
        if not found:
            raise TopicError("unknown", "This server does not host this topic-partition.")
        for tp in [tp for tp in self.partitions if tp[0] == name]:
            del self.partitions[tp]

    # -- leaders and ISR --------------------------------------------------------------------

    def state(self, topic: str, partition: int) -> PartitionState | None:
        return self.partitions.get((topic, partition))

    def leader_broker(self, topic: str, partition: int) -> BrokerNode | None:
        state = self.partitions.get((topic, partition))
        if state is None or state.leader < 0:
            return None
        return self.brokers.get(state.leader)

    def _record_change(self, state: PartitionState, *, leader: bool, isr: bool) -> None:
        """The change in the controller's metadata log (a PartitionChangeRecord); the leader
        epoch is then the image's, so the two never disagree."""
        if self.controller is None or self.metadata is None:
            return
        image_topic = next((t for t in self.metadata.image.topics.values()
                            if t.name == state.topic), None)
        if image_topic is None or state.partition not in image_topic.partitions:
            return
        self.controller.change_partition(image_topic.topic_id, state.partition,
                                         leader=state.leader if leader else None,
                                         isr=state.isr if isr else None)
        state.leader_epoch = image_topic.partitions[state.partition].leader_epoch

    def _push(self, state: PartitionState) -> None:
        """Every running replica learns the partition's new state (``applyDelta``)."""
        for node_id in state.replicas:
            broker = self.brokers.get(node_id)
            if broker is not None:
                broker.replicas.apply(state)
        for callback in self.on_change:
            callback()

    def alter_isr(self, tp: TopicPartition, leader: int, leader_epoch: int,
                  isr: list[int]) -> bool:
        """``AlterPartition`` from the leader: refused (False) from a stale leader or epoch."""
        state = self.partitions.get(tp)
        if state is None or state.leader != leader or state.leader_epoch != leader_epoch:
            return False
        if sorted(isr) == sorted(state.isr):
            return True
        self.log(f"{tp[0]}-{tp[1]}: ISR {state.isr} -> {sorted(isr)}")
        state.isr = sorted(isr)
        state.partition_epoch += 1
        self._record_change(state, leader=False, isr=True)
        self._push(state)
        return True

    def unclean_allowed(self, topic: str) -> bool:
        broker = next(iter(self.brokers.values()), None)
        if broker is None or topic in INTERNAL_TOPICS:
            return False
        t = broker.logs.topics.get(topic)
        value = broker.logs.topic_config("unclean.leader.election.enable",
                                         t.configs if t is not None else {})
        return (value or "false").lower() == "true"

    def elect(self, state: PartitionState, *, unless: int | None = None) -> None:
        """``PartitionChangeBuilder#electLeader``: the first replica (in assignment order) that
        is alive and in the ISR; without one, any live replica if the topic allows an unclean
        election (the ISR becomes that replica alone); else the partition has no leader until
        an ISR member returns. The leader epoch goes up by one either way."""
        alive = set(self.alive) - ({unless} if unless is not None else set())
        isr = [r for r in state.isr if r in alive]
        leader = next((r for r in state.replicas if r in isr), None)
        unclean = False
        if leader is None and self.unclean_allowed(state.topic):
            leader = next((r for r in state.replicas if r in alive), None)
            unclean = leader is not None
            isr = [leader] if leader is not None else isr
        before = state.leader
        state.leader = -1 if leader is None else leader
        state.leader_epoch += 1
        state.partition_epoch += 1
        if leader is not None:
            state.isr = isr
        self._record_change(state, leader=True, isr=leader is not None)
        how = "unclean " if unclean else ""
        self.log(f"{state.topic}-{state.partition}: {how}leader {before} -> {state.leader} "
                 f"at epoch {state.leader_epoch} (ISR {state.isr})")
        self._push(state)

    # -- brokers stopping and starting ------------------------------------------------------

    async def stop_broker(self, node_id: int, *, clean: bool = True) -> None:
        """A clean stop is Kafka's controlled shutdown (leaders moved away and the broker taken
        out of every ISR before it stops); a kill stops it at once, as after a crash, and the
        controller then fences it (its leaderships move, its ISR memberships go)."""
        broker = self.brokers.get(node_id)
        if broker is None:
            raise ClusterError("broker", f"broker {node_id} is not running")
        if clean:
            await broker.replicas.shutdown()  # no fetch of its own rejoins an ISR meanwhile
            broker.replicas.resign_all()
            del self.brokers[node_id]
            self._fence(node_id)
            await broker.stop()
            broker.log("stopped cleanly")
        else:
            del self.brokers[node_id]
            await broker.kill()
            broker.log("killed")
            self._fence(node_id)

    def _fence(self, node_id: int) -> None:
        for state in list(self.partitions.values()):
            if state.leader == node_id:
                self.elect(state, unless=node_id)
            elif node_id in state.isr and len(state.isr) > 1:
                state.isr = [r for r in state.isr if r != node_id]
                state.partition_epoch += 1
                self._record_change(state, leader=False, isr=True)
                self._push(state)

    async def start_broker(self, node_id: int) -> BrokerNode:
        """A stopped broker comes back: it loads its log dir (recovering after a kill), learns
        the metadata, follows its partitions' leaders (truncating first) and is elected
        wherever a partition has no leader and it was the last in the ISR."""
        if node_id in self.brokers:
            raise ClusterError("broker", f"broker {node_id} is already running")
        if node_id not in self.configs:
            raise ClusterError("broker", f"no broker {node_id} in this cluster")
        broker = self.new_broker(node_id)
        broker.load_logs()
        self.producer_ids.observe(broker.logs.max_producer_id())
        reference = next(iter(self.brokers.values()), None)
        if reference is not None:
            for name, topic in reference.logs.topics.items():
                hosted = {p: False for (t, p), s in self.partitions.items()
                          if t == name and node_id in s.replicas}
                broker.logs.add_replicated_topic(name, topic.topic_id, topic.num_partitions,
                                                 topic.configs, hosted)
        for state in self.partitions.values():
            log = broker.logs.get(state.topic, state.partition)
            if log is not None:
                _as_replica(broker, log)
        self.brokers[node_id] = broker
        await broker.listen()
        for state in list(self.partitions.values()):
            if node_id not in state.replicas:
                continue
            if state.leader < 0 and node_id in state.isr:
                self.elect(state)
            else:
                self._push(state)
        broker.start_tasks()
        broker.log("started")
        return broker

    async def stop(self) -> None:
        """Every running broker stops cleanly: fetching stops everywhere first, so no replica
        changes while the others close."""
        for broker in self.brokers.values():
            await broker.replicas.shutdown()
        for node_id in list(self.alive):
            broker = self.brokers.pop(node_id)
            await broker.stop()
            broker.log("stopped cleanly")
        if self.metadata is not None:
            self.metadata.close(_now_ms())

    def settled(self) -> bool:
        """Every running follower in the ISR has the leader's log end offset and high
        watermark."""
        for state in self.partitions.values():
            leader = self.brokers.get(state.leader)
            if leader is None:
                continue
            lead = leader.logs.get(state.topic, state.partition)
            if lead is None:
                continue
            for r in state.isr:
                follower = self.brokers.get(r)
                log = follower.logs.get(state.topic, state.partition) if follower else None
                if log is not None and (log.log_end_offset != lead.log_end_offset
                                        or log.high_watermark != lead.high_watermark):
                    return False
        return True

    async def wait_settled(self, timeout_s: float = SETTLE_TIMEOUT_S) -> bool:
        deadline = asyncio.get_running_loop().time() + timeout_s
        while not self.settled():
            if asyncio.get_running_loop().time() > deadline:
                return False
            await asyncio.sleep(0.05)
        return True


def _as_replica(broker: BrokerNode, log: PartitionLog) -> None:
    """A loaded log becomes a replica: its leader epoch cache read, its high watermark from
    ``replication-offset-checkpoint`` (0 if absent), as ``ReplicaManager`` initialises it."""
    log.load_epoch_cache()
    hw = broker.logs.read_high_watermarks().get((log.topic, log.partition), 0)
    log.high_watermark_follows_log_end = False
    log.high_watermark = max(log.log_start_offset, min(hw, log.log_end_offset))


BROKER_COMMANDS = ("stop-broker", "kill-broker", "start-broker")


async def broker_command(cluster: Cluster, line: str) -> str | None:
    """The control endpoint's ``stop-broker ID`` / ``kill-broker ID`` / ``start-broker ID``;
    None for any other line."""
    verb, _, arg = line.strip().partition(" ")
    if verb not in BROKER_COMMANDS:
        return None
    if not arg.strip().isdigit():
        return f"error: {verb} needs a broker id"
    node_id = int(arg)
    try:
        if verb == "start-broker":
            broker = await cluster.start_broker(node_id)
            return f"ok broker {node_id} on {broker.advertised_host}:{broker.port}"
        await cluster.stop_broker(node_id, clean=verb == "stop-broker")
    except ClusterError as exc:
        return f"error: {exc.message}"
    return f"ok broker {node_id} {'stopped' if verb == 'stop-broker' else 'killed'}"
