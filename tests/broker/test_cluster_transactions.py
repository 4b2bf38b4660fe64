"""``kafkatx serve --brokers 3``: transactions whose partition leaders, transaction coordinator
and group coordinator are different brokers, in transactions v0, v1 and v2 (issue 28, the
scenarios behind librdkafka's 0103 and 0081 against three brokers).

Kafka's rules followed: the partition leader verifies (v1) or adds (v2, Produce v12+) the
partition with the transaction coordinator over the wire (``AddPartitionsToTxnManager``), as
the group coordinator's broker does for TxnOffsetCommit; the markers go to every partition
leader; every broker knows a topic as soon as CreateTopics/CreatePartitions answers
(``MetadataCache#contains``), so the group coordinator takes offsets of partitions it does not
host; CreatePartitions places replicas over every broker (``ReplicationControlManager
#createPartitions``). One cluster per transaction version, shared by the module's tests.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kafkatx.testing import KafkaBroker
from tests.broker.wire import WireClient, entity, request

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic  # noqa: E402

SPREAD = [[1], [2], [3]]  # partition p led by broker p + 1


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, KafkaBroker]]:
    version = request.param
    broker = KafkaBroker(tmp_path_factory.mktemp(f"tv{version}") / "cluster",
                         ("--brokers", "3", "--transaction-version", str(version),
                          "--group-initial-rebalance-delay-ms", "0")).start()
    try:
        yield version, broker
    finally:
        broker.kill()


def create_topic(broker: KafkaBroker, topic: str, assignment: list[list[int]]) -> dict[int, int]:
    """The topic with one replica per partition where ``assignment`` says; its leaders as the
    brokers' Metadata reports them (partition -> node id)."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    new = NewTopic(topic, num_partitions=len(assignment), replica_assignment=assignment)
    for future in admin.create_topics([new]).values():
        future.result(30)
    with WireClient(broker.ports[0]) as client:
        answer = client.call(request(3, 9, topics=(entity(3, 9, "MetadataRequestTopic",
                                                          name=topic),),
                                     allow_auto_topic_creation=False))
    (described,) = answer.topics
    return {p.partition_index: p.leader_id for p in described.partitions}


def create_spread_topic(broker: KafkaBroker, topic: str) -> None:
    assert create_topic(broker, topic, SPREAD) == {0: 1, 1: 2, 2: 3}


def create_topic_apart(broker: KafkaBroker, topic: str, txn_id: str) -> str:
    """Three partitions led by the two brokers that do not coordinate ``txn_id``, and a group
    whose coordinator is not that broker either: every produce, AddPartitionsToTxn
    verification, TxnOffsetCommit and marker crosses brokers. Returns the group."""
    coordinator = coordinator_of(broker, txn_id, 1)
    others = [node for node in (1, 2, 3) if node != coordinator]
    leaders = create_topic(broker, topic, [[others[0]], [others[1]], [others[0]]])
    assert coordinator not in leaders.values() and set(leaders.values()) == set(others)
    group = next(f"{topic}-group-{n}" for n in range(100)
                 if coordinator_of(broker, f"{topic}-group-{n}", 0) != coordinator)
    return group


def coordinator_of(cluster: KafkaBroker, key: str, key_type: int) -> int:
    """FindCoordinator v3: the node id coordinating ``key`` (0 group, 1 transaction)."""
    with WireClient(cluster.ports[0]) as client:
        answer = client.call(request(10, 3, key=key, key_type=key_type))
    assert answer.error_code == ErrorCode.none
    return answer.node_id


def read_committed(bootstrap: str, topic: str, expected: int) -> list[str]:
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader",
                            "isolation.level": "read_committed", "enable.auto.commit": False,
                            "auto.offset.reset": "earliest"})
    consumer.assign([ck.TopicPartition(topic, p, 0) for p in range(len(SPREAD))])
    values: list[str] = []
    deadline = time.monotonic() + 30
    while len(values) < expected and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value().decode())
    consumer.close()  # an aborted record, were it read, comes before the last committed ones
    return sorted(values)


def committed_offset(bootstrap: str, group: str, topic: str) -> int:
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    (tp,) = consumer.committed([ck.TopicPartition(topic, 0)], timeout=30)
    consumer.close()
    return tp.offset


@pytest.mark.parametrize("cluster", [0, 1, 2], indirect=True)
def test_librdkafka_commits_and_aborts_with_leaders_apart(
        cluster: tuple[int, KafkaBroker]) -> None:
    version, broker = cluster
    bootstrap = broker.bootstrap_servers
    topic, txn_id = f"ck-apart-{version}", f"ck-apart-txn-{version}"
    group = create_topic_apart(broker, topic, txn_id)
    member = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    group_metadata = member.consumer_group_metadata()
    member.close()
    producer = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
    try:
        producer.init_transactions(30)
        for n, commit in enumerate((True, False, True)):
            producer.begin_transaction()
            for partition in range(len(SPREAD)):
                producer.produce(topic, value=f"{n}-{partition}", partition=partition)
            producer.send_offsets_to_transaction([ck.TopicPartition(topic, 0, n + 1)],
                                                 group_metadata, 30)
            (producer.commit_transaction if commit else producer.abort_transaction)(30)
    finally:  # destroyed here, not kept retrying a killed cluster by a failure's traceback
        producer.close()
    assert read_committed(bootstrap, topic, 6) == ["0-0", "0-1", "0-2", "2-0", "2-1", "2-2"]
    assert committed_offset(bootstrap, group, topic) == 3  # the aborted commit of 2 is gone


@pytest.mark.parametrize("cluster", [0, 1, 2], indirect=True)
def test_kafkas_java_client_commits_and_aborts_with_leaders_apart(
        cluster: tuple[int, KafkaBroker], tmp_path: Path) -> None:
    from tests.realkafka import dist
    from tests.realkafka.conftest import require_kafka
    from tests.realkafka.tools import JavaClient

    version, broker = cluster
    kafka = dist.KAFKA_VERSIONS[0]
    require_kafka(kafka)
    bootstrap = broker.bootstrap_servers
    topic, txn_id = f"java-apart-{version}", f"java-txn-{version}"
    group = create_topic_apart(broker, topic, txn_id)
    producer = JavaClient(kafka, tmp_path / "java-producer.log")
    try:
        producer.producer(bootstrap_servers=bootstrap, transactional_id=txn_id)
        producer.init()
        for n, commit in enumerate((True, False, True)):
            producer.begin()
            for partition in range(len(SPREAD)):
                producer.send(topic, partition, None, f"{n}-{partition}")
            producer.flush()
            producer.offsets(group, topic, 0, n + 1)
            producer.commit() if commit else producer.abort()
    finally:
        producer.close()
    assert read_committed(bootstrap, topic, 6) == ["0-0", "0-1", "0-2", "2-0", "2-1", "2-2"]
    assert committed_offset(bootstrap, group, topic) == 3


@pytest.mark.parametrize("cluster", [1], indirect=True)
def test_group_offsets_and_new_partitions_on_topics_other_brokers_lead(
        cluster: tuple[int, KafkaBroker]) -> None:
    _, broker = cluster
    bootstrap = broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic, group = "offsets-apart", "offsets-apart-group"
    create_spread_topic(broker, topic)
    # A group coordinator commits, lists and deletes offsets of partitions it does not host
    # (two of the three partitions at least: each is on another broker).
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    consumer.commit(offsets=[ck.TopicPartition(topic, p, 10 + p) for p in range(3)],
                    asynchronous=False)
    assert [tp.offset for tp in consumer.committed(
        [ck.TopicPartition(topic, p) for p in range(3)], timeout=30)] == [10, 11, 12]
    consumer.close()
    kafka = pytest.importorskip("kafka")
    from kafka.admin import KafkaAdminClient
    from kafka.errors import NoError

    kp_admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    gone = kafka.TopicPartition(topic, 1)
    assert kp_admin.delete_group_offsets(group, [gone]) == {gone: NoError}  # OffsetDelete
    kp_admin.close()
    listed = admin.list_consumer_group_offsets([ck.ConsumerGroupTopicPartitions(group)])
    assert sorted((tp.partition, tp.offset) for tp in listed[group].result(30)
                  .topic_partitions) == [(0, 10), (2, 12)]
    # CreatePartitions with replicas over all brokers, checked against the topic's factor.
    grown = admin.create_partitions([NewPartitions(topic, 5, replica_assignment=[[3], [1]])])
    grown[topic].result(30)
    refused = admin.create_partitions([NewPartitions(topic, 6, replica_assignment=[[1, 2]])])
    with pytest.raises(ck.KafkaException, match=r"not consistent with previous partitions"):
        refused[topic].result(30)
    with WireClient(broker.ports[0]) as client:
        answer = client.call(request(3, 9, topics=(entity(3, 9, "MetadataRequestTopic",
                                                          name=topic),),
                                     allow_auto_topic_creation=False))
    (described,) = answer.topics
    assert {p.partition_index: (p.leader_id, tuple(p.replica_nodes))
            for p in described.partitions} == {0: (1, (1,)), 1: (2, (2,)), 2: (3, (3,)),
                                               3: (3, (3,)), 4: (1, (1,))}


@pytest.mark.parametrize("cluster", [1], indirect=True)
def test_leader_refuses_as_kafka_after_asking_the_coordinator_over_the_wire(
        cluster: tuple[int, KafkaBroker]) -> None:
    """``ReplicaManager#handleProduceAppend`` on a leader that is not the coordinator: a
    partition never added is INVALID_TXN_STATE (TRANSACTION_ABORTABLE before Produce v11), an
    old epoch INVALID_PRODUCER_EPOCH (PRODUCER_FENCED), an unknown producer id
    INVALID_PRODUCER_ID_MAPPING; the partition that was added takes the batch."""
    from tests.broker.test_wire import batch

    _, broker = cluster
    txn_id, topic = "wire-apart", "wire-apart"
    create_spread_topic(broker, topic)
    coordinator = coordinator_of(broker, txn_id, 1)
    added, never = [p for p in range(len(SPREAD)) if p + 1 != coordinator][:2]
    with WireClient(broker.ports[coordinator - 1]) as c:
        init = c.call(request(22, 4, transactional_id=txn_id, producer_id=-1, producer_epoch=-1,
                              transaction_timeout=datetime.timedelta(seconds=60)))
        pid, epoch = init.producer_id, init.producer_epoch
        add = c.call(request(24, 3, v3_and_below_transactional_id=txn_id,
                             v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
                             v3_and_below_topics=(entity(24, 3, "AddPartitionsToTxnTopic",
                                                         name=topic, partitions=(added,)),)))
        assert add.results_by_topic_v3_and_below[0].results_by_partition[0] \
            .partition_error_code == ErrorCode.none

    def produce(partition: int, producer_id: int, producer_epoch: int) -> Any:
        records = batch(1, pid=producer_id, epoch=producer_epoch, seq=0, txn=True)
        data = entity(0, 9, "TopicProduceData", name=topic, partition_data=(
            entity(0, 9, "PartitionProduceData", index=partition, records=records),))
        with WireClient(broker.ports[partition]) as c:  # the partition's leader
            answer = c.call(request(0, 9, transactional_id=txn_id, acks=-1,
                                    timeout=datetime.timedelta(seconds=5), topic_data=(data,)))
        return answer.responses[0].partition_responses[0]

    assert produce(added, pid, epoch).error_code == ErrorCode.none
    refused = produce(never, pid, epoch)
    assert (refused.error_code, refused.error_message) == (
        ErrorCode.invalid_txn_state, "Partition was not added to the transaction")
    assert produce(never, pid + 1000, 0).error_code == ErrorCode.invalid_producer_id_mapping
    with WireClient(broker.ports[coordinator - 1]) as c:  # a new producer fences this one
        c.call(request(22, 4, transactional_id=txn_id, producer_id=-1, producer_epoch=-1,
                       transaction_timeout=datetime.timedelta(seconds=60)))
    assert produce(never, pid, epoch).error_code == ErrorCode.invalid_producer_epoch


@pytest.mark.parametrize("cluster", [1], indirect=True)
def test_acks_all_produce_waiting_on_a_deleted_topic_is_answered_at_once(
        cluster: tuple[int, KafkaBroker]) -> None:
    """``ReplicaManager#stopPartitions`` completes the delayed produce of a partition it
    removes (librdkafka's 0107 deletes a topic under a producer with requests in flight): the
    answer is UNKNOWN_TOPIC_OR_PARTITION at once, not REQUEST_TIMED_OUT after the timeout."""
    import concurrent.futures

    from tests.broker.test_wire import batch

    _, broker = cluster
    topic = "deleted-under-produce"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    for future in admin.create_topics([NewTopic(topic, num_partitions=1,
                                                replica_assignment=[[1, 2]])]).values():
        future.result(30)
    broker.cut_replication(1, 2)  # the follower takes nothing: the high watermark stays
    try:
        data = entity(0, 9, "TopicProduceData", name=topic, partition_data=(
            entity(0, 9, "PartitionProduceData", index=0, records=batch(1)),))

        def produce() -> tuple[Any, float]:
            with WireClient(broker.ports[0], timeout_s=60) as c:
                answer = c.call(request(0, 9, acks=-1, timeout=datetime.timedelta(seconds=40),
                                        topic_data=(data,)))
            return answer.responses[0].partition_responses[0], time.monotonic()

        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(produce)
            time.sleep(1)
            assert not waiting.done()
            for future in admin.delete_topics([topic]).values():
                future.result(30)
            deleted_at = time.monotonic()
            answer, answered_at = waiting.result(30)
        assert answer.error_code == ErrorCode.unknown_topic_or_partition
        assert answered_at - deleted_at < 5
    finally:
        broker.clear_faults()
