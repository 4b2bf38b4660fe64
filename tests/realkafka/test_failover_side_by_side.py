"""Coordinator failovers side by side (issue 25 item 6): the same librdkafka workload against a
real 3-broker Kafka cluster (its own controller) and ``kafkatx serve --brokers 3``. A
transactional producer's coordinator is SIGKILLed (Kafka) or killed (serve: ``kill-broker``,
nothing more written) with a transaction open, then the producer commits; again with the next
transaction, which it aborts; a read_committed consumer group reads and commits its position,
then its group coordinator is killed and a new consumer of the group asks for the committed
offsets. What the clients see must be the same: the outcome of each end, the records the
consumer receives, the offsets the group has.

Only the newest pinned Kafka (a 3-broker cluster start and three failovers cost about a
minute; the coordinators' code this checks is the same in 4.0 and 4.4).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafkatx.testing import KafkaBroker
from tests.broker.wire import WireClient, request

from . import dist
from .conftest import require_kafka
from .node import KafkaCluster

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

TOPIC = "failover"
GROUP = "failover-readers"
QUIET = {"log_level": 0, "reconnect.backoff.max.ms": 500}
# fault detection in seconds (Kafka's default broker session is 9 s)
KAFKA_SETTINGS = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500"}


@dataclass(frozen=True)
class Outcome:
    commit: str
    abort: str
    received: tuple[bytes, ...]
    committed_offsets: tuple[int, ...]


@dataclass
class Brokers:
    """How the workload reaches and hurts either cluster."""

    bootstrap: str
    port_of: Callable[[int], int]
    kill: Callable[[int], None]
    restart: Callable[[int], None]


def _coordinator(brokers: Brokers, key: str, key_type: int) -> int:
    """FindCoordinator v3 asked of every broker in turn until one answers."""
    deadline = time.monotonic() + 60
    while True:
        for node in (1, 2, 3):
            try:
                with WireClient(brokers.port_of(node), timeout_s=5) as client:
                    answer = client.call(request(10, 3, key=key, key_type=key_type))
                if answer.error_code == 0:
                    return int(answer.node_id)
            except OSError:
                continue
        assert time.monotonic() < deadline, f"no coordinator for {key}"
        time.sleep(0.5)


def _end(producer: ck.Producer, commit: bool) -> str:
    try:
        (producer.commit_transaction if commit else producer.abort_transaction)(90)
    except ck.KafkaException as exc:
        return exc.args[0].name()
    return "ok"


def _transaction(brokers: Brokers, txn_id: str, tag: str, commit: bool) -> str:
    """A transaction over the three partitions, its coordinator killed before it ends."""
    producer = ck.Producer({"bootstrap.servers": brokers.bootstrap, "transactional.id": txn_id,
                            "acks": "all", **QUIET})
    producer.init_transactions(60)
    producer.begin_transaction()
    for p in range(3):
        producer.produce(TOPIC, value=f"{tag}-{p}".encode(), partition=p)
    producer.flush(30)
    coordinator = _coordinator(brokers, txn_id, 1)
    brokers.kill(coordinator)
    outcome = _end(producer, commit)
    brokers.restart(coordinator)
    return outcome


def workload(brokers: Brokers) -> Outcome:
    admin = AdminClient({"bootstrap.servers": brokers.bootstrap, **QUIET})
    for future in admin.create_topics([NewTopic(TOPIC, 3, 3, config={
            "min.insync.replicas": "2"})]).values():
        future.result(60)
    del admin
    commit = _transaction(brokers, "failover-commit", "committed", commit=True)
    abort = _transaction(brokers, "failover-abort", "aborted", commit=False)
    consumer = ck.Consumer({"bootstrap.servers": brokers.bootstrap, "group.id": GROUP,
                            "isolation.level": "read_committed", "enable.auto.commit": False,
                            "auto.offset.reset": "earliest", **QUIET})
    consumer.subscribe([TOPIC])
    received: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(received) < 3 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            received.append(message.value())
    time.sleep(1.0)  # anything more (an aborted record) would arrive now
    while (message := consumer.poll(0.2)) is not None:
        if not message.error():
            received.append(message.value())
    consumer.commit(asynchronous=False)
    consumer.close()
    group_coordinator = _coordinator(brokers, GROUP, 0)
    brokers.kill(group_coordinator)
    reader = ck.Consumer({"bootstrap.servers": brokers.bootstrap, "group.id": GROUP, **QUIET})
    try:
        offsets = committed(reader, [ck.TopicPartition(TOPIC, p) for p in range(3)], 90)
    finally:
        reader.close()
    brokers.restart(group_coordinator)
    return Outcome(commit, abort, tuple(sorted(received)),
                   tuple(tp.offset for tp in offsets))


# What a client is told while a killed group coordinator's partition moves (Kafka 4.4.0 with
# librdkafka has answered OffsetFetch with NOT_COORDINATOR once the new one was found): asked
# again, as an application would.
COORDINATOR_MOVING = frozenset({ck.KafkaError.NOT_COORDINATOR,
                                ck.KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
                                ck.KafkaError.COORDINATOR_NOT_AVAILABLE})


def committed(reader: ck.Consumer, partitions: list[ck.TopicPartition],
              timeout: float) -> list[ck.TopicPartition]:
    """``reader.committed(partitions)``, asked again while the group's coordinator moves."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return reader.committed(partitions, timeout=max(1.0, deadline - time.monotonic()))
        except ck.KafkaException as e:
            if e.args[0].code() not in COORDINATOR_MOVING or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


@pytest.fixture(scope="module")
def kafka_outcome(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outcome]:
    require_kafka(dist.NEWEST)
    cluster = KafkaCluster.create(dist.NEWEST, tmp_path_factory.mktemp("failover-kafka"),
                                  brokers=3, settings=KAFKA_SETTINGS).start()
    try:
        yield workload(Brokers(cluster.bootstrap, lambda n: cluster.broker(n).port,
                               lambda n: cluster.broker(n).kill(),
                               lambda n: cluster.broker(n).restart()))
    finally:
        cluster.kill()


@pytest.fixture(scope="module")
def serve_outcome(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Outcome]:
    cluster = KafkaBroker(Path(tmp_path_factory.mktemp("failover-serve")) / "cluster",
                          ("--brokers", "3")).start()
    try:
        yield workload(Brokers(cluster.bootstrap_servers, lambda n: cluster.ports[n - 1],
                               cluster.kill_broker, cluster.start_broker))
    finally:
        cluster.kill()


def test_failovers_end_transactions_and_keep_offsets_as_kafka_does(
        kafka_outcome: Outcome, serve_outcome: Outcome) -> None:
    assert kafka_outcome.commit == "ok" and kafka_outcome.abort == "ok", kafka_outcome
    assert kafka_outcome.received == tuple(f"committed-{p}".encode() for p in range(3))
    assert serve_outcome == kafka_outcome
