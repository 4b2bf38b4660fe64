"""An application's own tests against kafkatx's broker: a crash mid-commit and dropped markers."""

import confluent_kafka as ck
import pytest


def copy_orders(bootstrap: str, orders: list[bytes]) -> None:
    """The application: writes a batch of orders in one transaction."""
    producer = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": "order-copier",
                            "socket.timeout.ms": 2000})
    producer.init_transactions(10)
    producer.begin_transaction()
    for order in orders:
        producer.produce("orders", value=order, partition=0)
    producer.commit_transaction(5)


def read_committed(bootstrap: str) -> list[bytes]:
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "check",
                            "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    consumer.subscribe(["orders"])
    values = [m.value() for m in consumer.consume(num_messages=100, timeout=5)]
    consumer.close()
    return values


def test_a_crash_mid_commit_leaves_no_hanging_transaction(kafka_broker):
    kafka_broker.crash_coordinator_after("prepare-commit")
    with pytest.raises(ck.KafkaException):
        copy_orders(kafka_broker.bootstrap_servers, [b"o-1", b"o-2"])
    assert kafka_broker.wait_exit() == 3  # the broker died after PrepareCommit
    kafka_broker.restart()  # on load the coordinator completes the prepared commit
    assert read_committed(kafka_broker.bootstrap_servers) == [b"o-1", b"o-2"]
    kafka_broker.stop()
    errors = [f for f in kafka_broker.findings() if f["severity"] == "error"]
    assert errors == []


def test_dropped_markers_leave_a_hanging_transaction(kafka_broker):
    kafka_broker.drop_markers("orders", 0)
    copy_orders(kafka_broker.bootstrap_servers, [b"o-3"])
    assert read_committed(kafka_broker.bootstrap_servers) == []  # stuck behind the LSO
    kafka_broker.stop()
    assert "hanging_transaction" in {f["kind"] for f in kafka_broker.findings()}
    assert kafka_broker.lso("orders", 0) == 0
