"""Admin clients against ``kafkatx serve``: confluent-kafka's AdminClient (librdkafka) and
kafka-python's KafkaAdminClient for authorized operations, OffsetDelete and live configs."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator

import pytest

from tests.broker.logdir_checks import verify_clean
from tests.broker.serve_process import ServeProcess

Serve = Callable[..., ServeProcess]
DEADLINE_S = 20.0


@pytest.fixture(autouse=True)
def _quiet_client_loggers() -> Iterator[None]:
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    yield


def _wait_for_assignment(consumer: object, poll: Callable[[], object]) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not consumer.assignment() and time.monotonic() < deadline:  # type: ignore[attr-defined]
        poll()
    assert consumer.assignment(), "the consumer was never assigned a partition"  # type: ignore


def test_confluent_authorized_operations(serve: Serve) -> None:
    """librdkafka's DescribeCluster, DescribeTopics (Metadata with topic authorized operations)
    and DescribeConsumerGroups with ``include_authorized_operations``: every operation
    ``AclEntry.supportedOperations`` lists, as Kafka without an authorizer reports
    (``AuthHelper#authorizedOperations``)."""
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AclOperation, AdminClient, NewTopic

    proc = serve("--group-initial-rebalance-delay-ms", "0")
    admin = AdminClient({"bootstrap.servers": proc.bootstrap})
    admin.create_topics([NewTopic("orders", 2)])["orders"].result(10)
    cluster = admin.describe_cluster(include_authorized_operations=True).result(10)
    assert set(cluster.authorized_operations) == {
        AclOperation.CREATE, AclOperation.ALTER, AclOperation.DESCRIBE,
        AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE}
    assert [n.id for n in cluster.nodes] == [1] and cluster.controller.id == 1
    plain = admin.describe_cluster().result(10)
    assert plain.authorized_operations is None
    topic = admin.describe_topics(ck.TopicCollection(["orders"]),
                                  include_authorized_operations=True)["orders"].result(10)
    assert set(topic.authorized_operations) == {
        AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DELETE,
        AclOperation.ALTER, AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS}
    consumer = ck.Consumer({"bootstrap.servers": proc.bootstrap, "group.id": "billing"})
    consumer.subscribe(["orders"])
    _wait_for_assignment(consumer, lambda: consumer.poll(0.2))
    group = admin.describe_consumer_groups(
        ["billing"], include_authorized_operations=True)["billing"].result(10)
    assert set(group.authorized_operations) == {AclOperation.READ, AclOperation.DELETE,
                                                AclOperation.DESCRIBE}
    consumer.close()
    assert proc.stop() == 0, proc.stderr()
    verify_clean(proc.log_dir)


def test_kafka_python_delete_group_offsets(serve: Serve) -> None:
    """kafka-python's ``delete_group_offsets`` (OffsetDelete v0), following
    ``GroupCoordinator#handleDeleteOffsets``: offsets of a topic the live group subscribes to
    stay (GROUP_SUBSCRIBED_TO_TOPIC), those of another topic go; once the group is Empty every
    partition asked for goes; the consumer that comes back starts from ``auto.offset.reset``."""
    kafka = pytest.importorskip("kafka")
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import GroupIdNotFoundError, GroupSubscribedToTopicError, NoError

    proc = serve("--group-initial-rebalance-delay-ms", "0")
    admin = KafkaAdminClient(bootstrap_servers=proc.bootstrap, request_timeout_ms=10_000)
    admin.create_topics([NewTopic("orders", 1, 1), NewTopic("audit", 1, 1)])
    producer = kafka.KafkaProducer(bootstrap_servers=proc.bootstrap)
    for i in range(5):
        producer.send("orders", b"o%d" % i, partition=0)
        producer.send("audit", b"a%d" % i, partition=0)
    producer.flush(10)
    producer.close()
    orders, audit = kafka.TopicPartition("orders", 0), kafka.TopicPartition("audit", 0)
    consumer = kafka.KafkaConsumer("orders", bootstrap_servers=proc.bootstrap,
                                   group_id="billing", auto_offset_reset="earliest",
                                   enable_auto_commit=False)
    _wait_for_assignment(consumer, lambda: consumer.poll(200))
    consumer.commit({orders: kafka.OffsetAndMetadata(3, "", -1),
                     audit: kafka.OffsetAndMetadata(4, "", -1)})
    result = admin.delete_group_offsets("billing", [orders, audit])
    assert result == {orders: GroupSubscribedToTopicError, audit: NoError}
    assert admin.list_group_offsets("billing") == {
        "billing": {orders: kafka.OffsetAndMetadata(3, "", -1)}}
    consumer.close()
    assert admin.delete_group_offsets("billing", [orders]) == {orders: NoError}
    with pytest.raises(GroupIdNotFoundError):  # its last offset gone, the Empty group is Dead
        admin.delete_group_offsets("billing", [orders])
    again = kafka.KafkaConsumer("orders", bootstrap_servers=proc.bootstrap, group_id="billing",
                                auto_offset_reset="earliest", enable_auto_commit=False)
    got: list[int] = []
    deadline = time.monotonic() + DEADLINE_S
    while len(got) < 5 and time.monotonic() < deadline:
        for messages in again.poll(200).values():
            got.extend(m.offset for m in messages)
    again.close()
    assert got == [0, 1, 2, 3, 4]
    admin.close()
    assert proc.stop() == 0, proc.stderr()
    verify_clean(proc.log_dir)
