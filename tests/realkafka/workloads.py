"""Workloads run on a real Kafka node, and Kafka's own answers about what they left.

Each workload drives Kafka's Java client against a running ``KafkaCluster`` and returns the
answers Kafka gives while the node still runs (``KafkaAnswers``): the LSO (ListOffsets with
READ_COMMITTED, through a read_committed consumer's ``endOffsets``), the records a
read_committed consumer receives from the log start, ``kafka-transactions.sh
describe-producers``, ``find-hanging`` and ``describe``, ``kafka-consumer-groups.sh --describe``
(offsets and lag, and ``--state``). The tests in this directory compare kafkatx with them on
copies of the node's log dir; ``fixtures/realkafka/make.py`` records them beside a committed log
dir (``answers.json``) so that ``tests/test_realkafka_fixtures.py`` compares without Java.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kafkatx.semantics.coordinator_partition import partition_for

from .node import TEST_SETTINGS, KafkaCluster
from .tools import JavaClient, KafkaTools

#: Broker settings of the workloads' node: segments roll by time, the cleaner looks often and
#: compacts anything dirty, tombstones and markers go after a second.
SETTINGS = {
    "log.roll.ms": "1000",
    "log.cleaner.backoff.ms": "200",
    "log.cleaner.min.cleanable.ratio": "0.01",
    "log.cleaner.delete.retention.ms": "1000",
    "log.cleaner.min.compaction.lag.ms": "0",
}
OFFSETS_PARTITIONS = int(TEST_SETTINGS["offsets.topic.num.partitions"])
TXN_PARTITIONS = int(TEST_SETTINGS["transaction.state.log.num.partitions"])
COMPACTED_TOPIC_CONFIGS = {"cleanup.policy": "compact", "segment.ms": "300",
                           "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "1000"}


@dataclass
class KafkaAnswers:
    """What Kafka said about a workload, keyed by ``topic-partition`` and name."""

    kafka_version: str
    lso: dict[str, int] = field(default_factory=dict)
    high_watermark: dict[str, int] = field(default_factory=dict)
    read_committed: dict[str, list[list[Any]]] = field(default_factory=dict)
    describe_producers: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    find_hanging: list[dict[str, str]] = field(default_factory=list)
    transactions: dict[str, dict[str, str]] = field(default_factory=dict)
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> KafkaAnswers:
        return cls(**json.loads(text))


def record_answers(answers: KafkaAnswers, cluster: KafkaCluster, tools: KafkaTools,
                   client: Callable[[], JavaClient], partitions: list[tuple[str, int]],
                   transactional_ids: list[str], groups: list[str]) -> KafkaAnswers:
    """Ask the running cluster everything ``KafkaAnswers`` holds about these."""
    bootstrap = cluster.bootstrap
    reader = client()
    reader.consumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                    enable_auto_commit="false", auto_offset_reset="earliest")
    uncommitted = client()
    uncommitted.consumer(bootstrap_servers=bootstrap, isolation_level="read_uncommitted",
                         enable_auto_commit="false")
    for topic, partition in partitions:
        name = f"{topic}-{partition}"
        reader.assign(topic, partition)
        uncommitted.assign(topic, partition)
        answers.lso[name] = reader.end_offset(topic, partition)
        answers.high_watermark[name] = uncommitted.end_offset(topic, partition)
        reader.seek(topic, partition, 0)  # below a later log start: reset to the earliest
        got: list[list[Any]] = []
        idle = 0
        while idle < 3:
            batch = reader.poll(300)
            idle = 0 if batch else idle + 1
            got += [[r.offset, _text(r.key), _text(r.value)] for r in batch]
        answers.read_committed[name] = got
        answers.describe_producers[name] = tools.describe_producers(bootstrap, topic, partition)
    reader.close()
    uncommitted.close()
    for broker in cluster.brokers:
        answers.find_hanging += tools.find_hanging(bootstrap, broker.node_id)
    for tid in transactional_ids:
        answers.transactions[tid] = tools.describe_transaction(bootstrap, tid)
    for group in groups:
        answers.groups[group] = {"state": tools.describe_group_state(bootstrap, group),
                                 "offsets": tools.describe_group(bootstrap, group)}
    return answers


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", "replace")


def consume_and_commit(consumer: JavaClient, count: int, timeout_s: float = 30.0) -> int:
    """Poll until ``count`` records came (or the timeout), then commitSync; how many came."""
    got = 0
    deadline = time.monotonic() + timeout_s
    while got < count and time.monotonic() < deadline:
        got += len(consumer.poll(300))
    consumer.commit_sync()
    return got


def wait_until_cleaned(log_dir: Path, partitions: list[str], timeout_s: float = 60.0) -> dict:
    """Wait until the log cleaner has checkpointed every partition in ``partitions`` (names
    ``topic-N``) past its log start; the checkpointed offsets."""
    deadline = time.monotonic() + timeout_s
    done: dict[str, int] = {}
    while time.monotonic() < deadline:
        checkpoint = log_dir / "cleaner-offset-checkpoint"
        if checkpoint.exists():
            lines = checkpoint.read_text().splitlines()[2:]
            done = {f"{t}-{p}": int(o) for t, p, o in (line.split() for line in lines if line)}
            if all(done.get(p, 0) > 0 for p in partitions):
                return done
        time.sleep(0.3)
    raise AssertionError(f"Kafka's log cleaner did not clean {partitions} in {timeout_s}s "
                         f"(checkpoint: {done})")


def groups_workload(cluster: KafkaCluster, client) -> list[str]:
    """Transactions with headers, an abort and a transactional offset commit; compressed
    idempotent batches; consumer groups of both protocols, one of which leaves."""
    bs = cluster.bootstrap
    writer = client()
    writer.producer(bootstrap_servers=bs, transactional_id="orders-writer",
                    compression_type="lz4", linger_ms="20")
    writer.init()
    writer.begin()
    writer.send("orders", 0, "o-1", "created", headers={"trace-id": "t1", "source": "web"})
    writer.send("orders", 0, "o-2", "created")
    writer.send("orders", 0, None, "no key")
    writer.flush()
    writer.commit()
    writer.begin()
    writer.send("orders", 0, "o-3", "aborted")
    writer.send("orders", 0, "o-4", None)
    writer.flush()
    writer.abort()
    writer.begin()
    writer.send("orders", 0, "o-1", "paid")
    writer.offsets("orders-copier", "orders", 0, 4)
    writer.commit()
    plain = client()
    plain.producer(bootstrap_servers=bs, enable_idempotence="true", compression_type="zstd",
                   linger_ms="50")
    for i in range(4):
        plain.send("plain", 0, f"p-{i}", f"value {i}")
    plain.flush()
    names = []
    for group, protocol in (("classic-readers", "classic"), ("modern-readers", "consumer"),
                            ("modern-left", "consumer")):
        consumer = client()
        consumer.consumer(bootstrap_servers=bs, group_id=group, group_protocol=protocol,
                          isolation_level="read_committed", auto_offset_reset="earliest",
                          enable_auto_commit="false")
        consumer.subscribe("orders")
        assert consume_and_commit(consumer, 4) == 4
        if group == "modern-left":
            consumer.close()  # leaves: its member records get tombstones, the group is Empty
        names.append(group)
    return names


def compaction_workload(cluster: KafkaCluster, client) -> dict[str, int]:
    """A compacted transactional topic with aborts and a tombstone, its offsets committed in
    every transaction; waits until Kafka's cleaner has cleaned it, the group's
    ``__consumer_offsets`` partition and the writer's ``__transaction_state`` partition."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for future in admin.create_topics([NewTopic("inventory", 1, 1,
                                                config=COMPACTED_TOPIC_CONFIGS)]).values():
        future.result(30)
    writer = client()
    writer.producer(bootstrap_servers=cluster.bootstrap, transactional_id="inventory-writer")
    writer.init()
    for n in range(12):
        writer.begin()
        writer.send("inventory", 0, f"item-{n % 4}", None if n == 7 else f"stock {n}")
        writer.send("inventory", 0, f"item-{(n + 1) % 4}", f"stock {n}b")
        writer.offsets("inventory-group", "inventory", 0, 3 * n)
        writer.abort() if n % 3 == 2 else writer.commit()
        time.sleep(0.15)
    time.sleep(0.5)  # past segment.ms and log.roll.ms: the next appends roll every segment
    writer.begin()
    writer.send("inventory", 0, "item-0", "last")
    writer.offsets("inventory-group", "inventory", 0, 36)
    writer.commit()
    return wait_until_cleaned(cluster.nodes[0].log_dir, [
        "inventory-0",
        f"__consumer_offsets-{partition_for('inventory-group', OFFSETS_PARTITIONS)}",
        f"__transaction_state-{partition_for('inventory-writer', TXN_PARTITIONS)}"])


def open_transaction_workload(cluster: KafkaCluster, client) -> list[str]:
    """A payment producer killed (SIGKILL) inside its second transaction, whose 15-minute
    transaction timeout keeps it open: the LSO of ``payments-0`` stays at its first record while
    an idempotent producer writes on behind it, and a classic and a KIP-848 consumer group, both
    read_committed, stop at the LSO. Returns the groups."""
    bs = cluster.bootstrap
    checkout = client()
    checkout.producer(bootstrap_servers=bs, transactional_id="checkout",
                      transaction_timeout_ms="900000")
    checkout.init()
    checkout.begin()
    checkout.send("payments", 0, "order-1", "paid 10.00", headers={"trace-id": "a1"})
    checkout.send("payments", 0, "order-2", "paid 25.50", headers={"trace-id": "a2"})
    checkout.commit()
    checkout.begin()
    checkout.send("payments", 0, "order-3", "paid 7.25", headers={"trace-id": "a3"})
    checkout.send("payments", 0, "order-4", "paid 99.99", headers={"trace-id": "a4"})
    checkout.flush()
    checkout.kill()  # mid-transaction: no EndTxn, no marker until the coordinator times it out
    refunds = client()
    refunds.producer(bootstrap_servers=bs, enable_idempotence="true")
    for n in range(3):
        refunds.send("payments", 0, f"refund-{n}", f"refund {n}")
    refunds.flush()
    names = []
    for group, protocol in (("ledger", "classic"), ("audit", "consumer")):
        consumer = client()
        consumer.consumer(bootstrap_servers=bs, group_id=group, group_protocol=protocol,
                          isolation_level="read_committed", auto_offset_reset="earliest",
                          enable_auto_commit="false")
        consumer.subscribe("payments")
        assert consume_and_commit(consumer, 2) == 2
        names.append(group)
    return names
