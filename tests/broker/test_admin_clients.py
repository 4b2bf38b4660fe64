"""Admin clients against ``kafkatx serve``: confluent-kafka's AdminClient (librdkafka) and
kafka-python's KafkaAdminClient for authorized operations, OffsetDelete and live configs."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator

import pytest

from tests.broker.kafka_python_group import commit_when_assigned, subscribed_metadata
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
    del admin  # librdkafka's client goes before the broker does
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
    commit_when_assigned(consumer, {orders: kafka.OffsetAndMetadata(3, "", -1),
                                    audit: kafka.OffsetAndMetadata(4, "", -1)})
    result = admin.delete_group_offsets("billing", [orders, audit])
    assert result == {orders: GroupSubscribedToTopicError, audit: NoError}
    assert admin.list_group_offsets("billing") == {
        "billing": {orders: kafka.OffsetAndMetadata(3, "", -1)}}
    consumer.close()
    assert admin.delete_group_offsets("billing", [orders]) == {orders: NoError}
    with pytest.raises(GroupIdNotFoundError):  # its last offset gone, the Empty group is Dead
        admin.delete_group_offsets("billing", [orders])
    again = subscribed_metadata(kafka.KafkaConsumer(
        "orders", bootstrap_servers=proc.bootstrap, group_id="billing",
        auto_offset_reset="earliest", enable_auto_commit=False))
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


def test_confluent_live_configs(serve: Serve) -> None:
    """librdkafka's IncrementalAlterConfigs / AlterConfigs / DescribeConfigs against
    ``ConfigurationControlManager`` semantics; a compacted topic then refuses a keyless record
    with INVALID_RECORD (``LogValidator#validateKey``) while keyed ones are delivered."""
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ConfigSource,
        NewTopic,
        ResourceType,
    )

    proc = serve()
    admin = AdminClient({"bootstrap.servers": proc.bootstrap})
    admin.create_topics([NewTopic("ledger", 1, config={"retention.ms": "3600000"})])[
        "ledger"].result(10)

    def alter(*entries: ConfigEntry, validate_only: bool = False) -> None:
        resource = ConfigResource(ResourceType.TOPIC, "ledger", incremental_configs=list(entries))
        admin.incremental_alter_configs([resource], validate_only=validate_only)[
            resource].result(10)

    def described() -> dict[str, tuple[str | None, ConfigSource]]:
        resource = ConfigResource(ResourceType.TOPIC, "ledger")
        entries = admin.describe_configs([resource])[resource].result(10)
        return {name: (e.value, ConfigSource(e.source)) for name, e in entries.items()}

    with pytest.raises(ck.KafkaException) as refused:
        alter(ConfigEntry("retention.ms", "soon", incremental_operation=AlterConfigOpType.SET))
    error = refused.value.args[0]
    assert (error.code(), error.str()) == (
        ck.KafkaError.INVALID_CONFIG,
        "Invalid value soon for configuration retention.ms: Not a number of type LONG")
    alter(ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET),
          validate_only=True)
    assert described()["cleanup.policy"] == ("delete", ConfigSource.DEFAULT_CONFIG)
    alter(ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
          ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE))
    now = described()
    assert now["cleanup.policy"] == ("delete,compact", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert now["retention.ms"] == ("604800000", ConfigSource.DEFAULT_CONFIG)

    producer = ck.Producer({"bootstrap.servers": proc.bootstrap, "retries": 0})
    reports: list[tuple[bytes | None, int | None]] = []

    def delivered(err: object, msg: object) -> None:
        reports.append((msg.key(), None if err is None else err.code()))  # type: ignore

    producer.produce("ledger", key=b"k1", value=b"one", on_delivery=delivered)
    producer.flush(10)
    producer.produce("ledger", value=b"no key", on_delivery=delivered)
    producer.flush(10)
    assert reports == [(b"k1", None), (None, ck.KafkaError.INVALID_RECORD)]

    legacy = ConfigResource(ResourceType.TOPIC, "ledger", set_config={"segment.ms": "60000"})
    with pytest.warns(DeprecationWarning):
        futures = admin.alter_configs([legacy])
    futures[legacy].result(10)
    now = described()  # AlterConfigs replaced the whole set: cleanup.policy is back to delete
    assert now["segment.ms"] == ("60000", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert now["cleanup.policy"] == ("delete", ConfigSource.DEFAULT_CONFIG)
    producer.produce("ledger", value=b"no key now", on_delivery=delivered)
    producer.flush(10)
    assert reports[-1] == (None, None)
    del producer  # librdkafka's client goes before the broker does
    assert proc.stop() == 0, proc.stderr()
    verify_clean(proc.log_dir)


def test_kafka_python_alter_configs(serve: Serve) -> None:
    """kafka-python's ``alter_configs`` (incremental and legacy) and ``describe_configs`` on a
    topic and on the broker: a broker-wide ``log.retention.ms`` shows in the topic as
    DYNAMIC_BROKER_CONFIG until the topic overrides it; a refused value comes back as
    InvalidConfigurationError with Kafka's message; the legacy path works because DescribeConfigs
    reports the topic's dynamic configs, which kafka-python resends (AlterConfigs replaces the
    whole set, ``ConfigurationControlManager#legacyAlterConfigResource``)."""
    pytest.importorskip("kafka")
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic

    proc = serve()
    admin = KafkaAdminClient(bootstrap_servers=proc.bootstrap, request_timeout_ms=10_000)
    try:
        admin.create_topics([NewTopic("events", 1, 1)])

        def topic_entry(name: str) -> tuple[str, str]:
            found = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "events")],
                                           config_filter="all")
            entry = found["topic"]["events"][name]
            return entry["value"], entry["config_source"]

        def alter(kind: ConfigResourceType, name: str, configs: dict[str, str],
                  incremental: bool = True) -> str:
            result = admin.alter_configs([ConfigResource(kind, name, configs=configs)],
                                         incremental=incremental)
            return result[kind.name.lower()][name]

        assert alter(ConfigResourceType.BROKER, "1", {"log.retention.ms": "86400000"}) == "OK"
        assert topic_entry("retention.ms") == ("86400000", "DYNAMIC_BROKER_CONFIG")
        assert alter(ConfigResourceType.TOPIC, "events", {"retention.ms": "1000"}) == "OK"
        assert topic_entry("retention.ms") == ("1000", "DYNAMIC_TOPIC_CONFIG")
        refused = alter(ConfigResourceType.TOPIC, "events", {"retention.ms": "-7"})
        assert refused.startswith("[Error 40] InvalidConfigurationError")
        assert "Invalid value -7 for configuration retention.ms: Value must be at least -1" \
            in refused
        assert alter(ConfigResourceType.TOPIC, "events", {"max.message.bytes": "5000"},
                     incremental=False) == "OK"
        assert topic_entry("max.message.bytes") == ("5000", "DYNAMIC_TOPIC_CONFIG")
        assert topic_entry("retention.ms") == ("1000", "DYNAMIC_TOPIC_CONFIG")
    finally:
        admin.close()
    assert proc.stop() == 0, proc.stderr()
