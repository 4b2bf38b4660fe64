"""One story of faults on a real 3-broker Kafka cluster, with Kafka's answers at each moment.

The brokers get roles from where Kafka placed the coordinator of ``coord-a``: C is that
coordinator's broker, L and F the two others. Topics are created with explicit replica
assignments so that each fault lands where it should:

- ``coord-data`` (min.insync.replicas 2): partition 0 on [L, F], partition 1 on [L, C];
  Kafka's Java producer (transactions v2) ``coord-a`` writes both;
- ``unclean`` on [C, F] with ``unclean.leader.election.enable``: confluent-kafka's
  transactional producer (transactions v1, coordinator on L);
- ``followed`` on [L, C, F]: kafka-python's transactional producer (coordinator on L).

Moments (each: every broker's log dir copied, live or as a stop or kill left it, and Kafka's
own answers from the live cluster at that moment):

``live``
    all brokers up: a commit, an abort and an open transaction in ``followed-0``, coord-a's
    transaction open in both ``coord-data`` partitions.
``coordinator-killed``
    F stopped cleanly (controlled shutdown: out of every ISR), so ``coord-data-0`` has one
    in-sync replica, below its min.insync.replicas, and no marker can be written there
    (``Partition#appendRecordsToLeader`` refuses acks=all appends: NOT_ENOUGH_REPLICAS, which
    ``TransactionMarkerRequestCompletionHandler`` retries). ``unclean-0`` goes on alone on C.
    coord-a commits: PrepareCommit is written, its COMMIT marker reaches ``coord-data-1`` only.
    Then C is SIGKILLed: the coordinator dies between PrepareCommit and the markers, L becomes
    the coordinator (``TransactionStateManager#loadTransactionsForTxnTopicPartition``) and sends
    the markers again; ``unclean-0`` is offline.
``unclean-election``
    F restarted: it is elected leader of ``unclean-0`` although it was out of the ISR (the
    controller's ``handleBrokerUnfenced`` with ``Election.UNCLEAN``), losing C's tail; the new
    coordinator's marker reaches ``coord-data-0``. The confluent producer then commits its open
    transaction (its marker lands on F's log, whose records of it are gone), and a plain
    producer writes on.
``stopped``
    C restarted (it truncates ``unclean-0`` to the new leader's log and catches up), kafka-python
    commits; then every broker is stopped cleanly and copied.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkatx.formats.checkpoints import read_offset_checkpoint
from kafkatx.semantics.coordinator_partition import partition_for

from .node import KafkaCluster
from .tools import JavaClient, KafkaTools

TXN_PARTITIONS = 4  # node.TEST_SETTINGS transaction.state.log.num.partitions
SETTINGS = {
    # fault detection in seconds rather than the default 9 s, and HW checkpoints each second
    # so a live copy catches up quickly (kafkatx reads the checkpoint, never guesses past it)
    "broker.session.timeout.ms": "6000",
    "broker.heartbeat.interval.ms": "1000",
    "replica.high.watermark.checkpoint.interval.ms": "1000",
}
DATA_PARTITIONS = (("coord-data", 0), ("coord-data", 1), ("unclean", 0), ("followed", 0))
WAIT_S = 60.0
TopicPartition = tuple[str, int]


def wait_for(what: str, check: Callable[[], Any], timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = check()
        except Exception as exc:  # a cluster in transition answers with errors
            last, value = exc, None
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}" + (f" (last error: {last})"
                                                           if last else ""))


@dataclass
class KafkaAnswers:
    """What the live cluster said at one moment (partitions without a leader are absent)."""

    leaders: dict[TopicPartition, int] = field(default_factory=dict)
    replicas: dict[TopicPartition, list[int]] = field(default_factory=dict)
    lso: dict[TopicPartition, int] = field(default_factory=dict)  # ListOffsets READ_COMMITTED
    hw: dict[TopicPartition, int] = field(default_factory=dict)  # ListOffsets READ_UNCOMMITTED
    producers: dict[TopicPartition, list[dict[str, str]]] = field(default_factory=dict)
    producers_on: dict[tuple[TopicPartition, int], list[dict[str, str]]] = field(
        default_factory=dict)  # describe-producers --broker-id N, per live replica
    hanging: dict[int, list[dict[str, str]]] = field(default_factory=dict)  # find-hanging
    transactions: dict[str, dict[str, str]] = field(default_factory=dict)  # describe
    consumed: dict[TopicPartition, list[tuple[int, bytes | None]]] = field(default_factory=dict)
    features: dict[str, str] = field(default_factory=dict)  # kafka-features.sh describe


@dataclass
class Moment:
    name: str
    copies: dict[int, Path]  # broker id -> its log dir, copied
    live: list[int]  # the brokers running when it was copied
    kafka: KafkaAnswers


@dataclass
class Story:
    version: str
    cluster: KafkaCluster
    tools: KafkaTools
    home: Path
    coordinator: int = 0  # C
    leader: int = 0  # L
    follower: int = 0  # F
    tids: dict[str, str] = field(default_factory=dict)  # role -> transactional id
    moments: dict[str, Moment] = field(default_factory=dict)
    clients: list[JavaClient] = field(default_factory=list)
    producers: list[Any] = field(default_factory=list)
    consumer: JavaClient | None = None
    admin: Any = None
    started: float = field(default_factory=time.monotonic)

    # -- Kafka's answers -------------------------------------------------------------------

    def java(self) -> JavaClient:
        client = JavaClient(self.version, self.home / f"java-client-{len(self.clients)}.log")
        self.clients.append(client)
        return client

    def metadata(self, topic: str) -> dict[int, Any]:
        return dict(self.admin.list_topics(topic, timeout=10).topics[topic].partitions)

    def list_offset(self, tp: TopicPartition, committed: bool) -> int:
        from confluent_kafka import IsolationLevel
        from confluent_kafka import TopicPartition as Tp
        from confluent_kafka.admin import OffsetSpec

        level = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
        futures = self.admin.list_offsets({Tp(*tp): OffsetSpec.latest()}, isolation_level=level,
                                          request_timeout=10)
        (future,) = futures.values()
        return int(future.result().offset)

    def answers(self) -> KafkaAnswers:
        out = KafkaAnswers()
        live = {n.node_id for n in self.cluster.brokers if n.running}
        boot = self.cluster.bootstrap
        for topic, partition in DATA_PARTITIONS:
            meta = self.metadata(topic)[partition]
            tp = (topic, partition)
            out.replicas[tp] = list(meta.replicas)
            if meta.leader < 0:
                continue
            out.leaders[tp] = meta.leader
            out.lso[tp] = self.list_offset(tp, committed=True)
            out.hw[tp] = self.list_offset(tp, committed=False)
            out.producers[tp] = self.tools.describe_producers(boot, topic, partition)
            for broker in sorted(set(meta.replicas) & live):
                out.producers_on[(tp, broker)] = self.tools.describe_producers(
                    boot, topic, partition, broker_id=broker)
        for broker in sorted(live):
            out.hanging[broker] = self.tools.find_hanging(boot, broker)
        for tid in self.tids.values():
            out.transactions[tid] = self.tools.describe_transaction(boot, tid)
        out.consumed = self.read_committed(out.lso)
        out.features = self.tools.finalized_features(boot)
        return out

    def read_committed(self, lso: dict[TopicPartition, int]
                       ) -> dict[TopicPartition, list[tuple[int, bytes | None]]]:
        """What Kafka's Java consumer with isolation.level=read_committed receives from the
        start of each partition up to its LSO."""
        if self.consumer is None:  # one consumer for every moment: a JVM start saved
            self.consumer = self.java()
            self.consumer.consumer(bootstrap_servers=self.cluster.bootstrap,
                                   isolation_level="read_committed",
                                   enable_auto_commit="false", auto_offset_reset="earliest")
        consumer = self.consumer
        consumer.assign(*[x for tp in lso for x in tp])
        for tp in lso:
            consumer.seek(*tp, 0)
        got: dict[TopicPartition, list[tuple[int, bytes | None]]] = {tp: [] for tp in lso}

        def done() -> bool:
            for r in consumer.poll(200):
                got[(r.topic, r.partition)].append((r.offset, r.value))
            return all(int(consumer.position(*tp)) >= end for tp, end in lso.items())

        wait_for("the read_committed consumer to reach every LSO", done)
        return got

    # -- the moments -----------------------------------------------------------------------

    def settle_checkpoints(self) -> None:
        """Wait until every running broker's replication-offset-checkpoint holds the live HW
        of each partition it leads (written each second here, every 5 s by default)."""
        def current() -> bool:
            for tp in DATA_PARTITIONS:
                meta = self.metadata(tp[0])[tp[1]]
                if meta.leader < 0:
                    continue
                node = self.cluster.broker(meta.leader)
                path = node.log_dir / "replication-offset-checkpoint"
                entries = {(e.topic, e.partition): e.offset
                           for e in read_offset_checkpoint(path.read_bytes()).entries}
                if entries.get(tp) != self.list_offset(tp, committed=False):
                    return False
            return True

        wait_for("the leaders' HW checkpoints", current)

    def mark(self, what: str) -> None:
        """Timings of the story (``pytest -s`` prints them)."""
        print(f"[{time.monotonic() - self.started:6.1f}s] {self.version}: {what}",
              file=sys.stderr, flush=True)

    def record(self, name: str) -> Moment:
        self.settle_checkpoints()
        answers = self.answers()
        dest = self.home / "copies" / name
        live = [n.node_id for n in self.cluster.brokers if n.running]
        copies = {n.node_id: n.copy_log_dir(dest / f"broker-{n.node_id}")
                  for n in self.cluster.brokers}
        moment = Moment(name, copies, live, answers)
        self.moments[name] = moment
        self.mark(f"moment {name} recorded")
        return moment

    def close(self) -> None:
        for client in self.clients:
            client.kill()
        for producer in self.producers:  # kafka-python's: its sockets closed, not left to GC
            producer.close(timeout=0)
        self.producers.clear()
        self.admin = None  # librdkafka's: destroyed, not reconnecting to the killed cluster
        self.cluster.kill()


def place(story: Story) -> None:
    """The roles and the topics (see the module docstring)."""
    from confluent_kafka.admin import NewTopic

    warm = story.java()
    warm.producer(bootstrap_servers=story.cluster.bootstrap, transactional_id="warm-up")
    warm.init()  # creates __transaction_state
    warm.close()

    def coordinator_leaders() -> dict[int, int] | None:
        found = {p: m.leader for p, m in story.metadata("__transaction_state").items()}
        return found if len(found) == TXN_PARTITIONS and min(found.values()) > 0 else None

    leaders = wait_for("a leader for every __transaction_state partition", coordinator_leaders)
    story.tids["java"] = "coord-a"
    c = leaders[partition_for("coord-a", TXN_PARTITIONS)]
    story.coordinator = c
    story.leader, story.follower = (b for b in (1, 2, 3) if b != c)
    for role, prefix in (("confluent", "unclean-writer"), ("kafka-python", "follower-writer")):
        story.tids[role] = next(
            f"{prefix}-{i}" for i in range(1000)
            if leaders[partition_for(f"{prefix}-{i}", TXN_PARTITIONS)] == story.leader)
    c, lead, f = story.coordinator, story.leader, story.follower
    topics = [
        NewTopic("coord-data", num_partitions=2, replica_assignment=[[lead, f], [lead, c]],
                 config={"min.insync.replicas": "2"}),
        NewTopic("unclean", num_partitions=1, replica_assignment=[[c, f]],
                 config={"unclean.leader.election.enable": "true",
                         "min.insync.replicas": "1"}),
        NewTopic("followed", num_partitions=1, replica_assignment=[[lead, c, f]],
                 config={"min.insync.replicas": "2"}),
    ]
    for future in story.admin.create_topics(topics).values():
        future.result(30)


def run_story(version: str, home: Path, tools: KafkaTools) -> Story:
    """Drive the whole story on a fresh cluster; the cluster is left stopped."""
    import kafka
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient

    cluster = KafkaCluster.create(version, home / "kafka", brokers=3, settings=SETTINGS)
    story = Story(version, cluster, tools, home)
    try:
        cluster.start()
        story.mark("started")
        story.admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        place(story)
        boot = cluster.bootstrap
        kp = kafka.KafkaProducer(bootstrap_servers=boot, transactional_id=story.tids[
            "kafka-python"], acks="all", transaction_timeout_ms=300_000)
        story.producers.append(kp)
        kp.init_transactions()
        for tag, commit in (("k1", True), ("k2", False)):
            kp.begin_transaction()
            for i in range(3 if commit else 2):
                kp.send("followed", f"{tag}-{i}".encode(), partition=0)
            kp.flush()
            (kp.commit_transaction if commit else kp.abort_transaction)()
        cp = Producer({"bootstrap.servers": boot, "transactional.id": story.tids["confluent"],
                       "acks": "all", "transaction.timeout.ms": 300_000})
        cp.init_transactions(30)
        cp.begin_transaction()
        for i in range(2):
            cp.produce("unclean", f"u1-{i}".encode(), partition=0)
        cp.commit_transaction(30)
        jp = story.java()
        jp.producer(bootstrap_servers=boot, transactional_id="coord-a",
                    transaction_timeout_ms=300_000)
        jp.init()
        jp.begin()
        for partition, n in ((0, 3), (1, 2)):
            for i in range(n):
                jp.send("coord-data", partition, None, f"a{partition}-{i}")
        jp.flush()
        kp.begin_transaction()
        for i in range(2):
            kp.send("followed", f"k3-{i}".encode(), partition=0)
        kp.flush()
        story.record("live")

        cluster.broker(story.follower).stop()
        story.mark("F stopped")
        cp.begin_transaction()
        for i in range(2):
            cp.produce("unclean", f"u2-{i}".encode(), partition=0)
        cp.commit_transaction(30)
        cp.begin_transaction()
        for i in range(2):
            cp.produce("unclean", f"u3-{i}".encode(), partition=0)
        cp.flush(30)
        jp.commit()  # PrepareCommit written; coord-data-0's marker cannot be
        wait_for("coord-data-1's COMMIT marker",
                 lambda: story.list_offset(("coord-data", 1), committed=True) == 3)
        # C's checkpoint holds unclean-0's HW (its last write, 8: C alone is the ISR) when it
        # dies: the records F lacks were acknowledged, and C's files can say so
        story.settle_checkpoints()
        cluster.broker(story.coordinator).kill()
        story.mark("C killed")
        txn_partition = partition_for("coord-a", TXN_PARTITIONS)
        # first the controller's election (C fenced after its session timeout), then ask the
        # coordinator: an admin client asked earlier keeps retrying the dead one
        wait_for("L to lead coord-a's __transaction_state partition",
                 lambda: story.metadata("__transaction_state")[txn_partition].leader
                 == story.leader)
        wait_for("the new coordinator", lambda: story.tools.describe_transaction(
            boot, "coord-a").get("CoordinatorId") == str(story.leader))
        story.record("coordinator-killed")

        cluster.broker(story.follower).start()
        story.mark("F started")
        wait_for("the unclean election of unclean-0",
                 lambda: story.metadata("unclean")[0].leader == story.follower)
        wait_for("coord-data-0's COMMIT marker from the new coordinator",
                 lambda: story.list_offset(("coord-data", 0), committed=True) == 4)
        cp.commit_transaction(30)
        plain = story.java()
        plain.producer(bootstrap_servers=boot, acks="all")
        for i in range(2):
            plain.send("unclean", 0, None, f"v-{i}")
        plain.flush()
        story.record("unclean-election")

        cluster.broker(story.coordinator).start()
        story.mark("C started")
        kp.commit_transaction()
        wait_for("every replica back in sync", lambda: all(
            set(m.isrs) == set(m.replicas) for t in ("coord-data", "unclean", "followed")
            for m in story.metadata(t).values()))
        wait_for("coord-a completed", lambda: story.tools.describe_transaction(
            boot, "coord-a").get("TransactionState") == "CompleteCommit")
        story.settle_checkpoints()
        answers = story.answers()
        for client in story.clients:
            client.close()
        kp.close()
        cp.flush(10)
        story.mark("answers recorded")
        cluster.stop()
        story.mark("stopped")
        dest = home / "copies" / "stopped"
        copies = {n.node_id: n.copy_log_dir(dest / f"broker-{n.node_id}")
                  for n in cluster.brokers}
        story.moments["stopped"] = Moment("stopped", copies, [], answers)
        return story
    except BaseException:
        story.close()
        raise


def discard(story: Story) -> None:
    story.close()
    shutil.rmtree(story.home / "kafka", ignore_errors=True)
