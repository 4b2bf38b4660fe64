"""The real-Kafka harness itself: nodes start, stop, die and restart; tools and clients answer."""

from __future__ import annotations

import time
from pathlib import Path

from .tools import JavaClient, KafkaTools


def test_combined_node_runs_kafkas_tools_and_java_client(kafka_cluster, kafka_tools: KafkaTools,
                                                         java_client, tmp_path: Path) -> None:
    cluster = kafka_cluster()
    node = cluster.nodes[0]
    producer: JavaClient = java_client()
    producer.producer(bootstrap_servers=cluster.bootstrap, transactional_id="smoke",
                      enable_idempotence="true")
    producer.init()
    producer.begin()
    producer.send("smoke", 0, "k", "v1")
    producer.send("smoke", 0, "k", "v2")
    assert producer.flush() == [0, 1]

    rows = kafka_tools.describe_producers(cluster.bootstrap, "smoke", 0)
    assert [row["CurrentTransactionStartOffset"] for row in rows] == ["0"]

    consumer: JavaClient = java_client()
    consumer.consumer(bootstrap_servers=cluster.bootstrap, isolation_level="read_committed",
                      group_id="smoke-check", enable_auto_commit="false")
    consumer.assign("smoke", 0)
    assert consumer.end_offset("smoke", 0) == 0  # the LSO: the open transaction holds it

    producer.commit()
    # EndTxn is answered before the markers are written: the LSO moves a moment later
    deadline = time.monotonic() + 10
    while consumer.end_offset("smoke", 0) != 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert consumer.end_offset("smoke", 0) == 3
    consumer.seek("smoke", 0, 0)
    values = []
    for _ in range(20):
        values += [r.value for r in consumer.poll(500)]
        if len(values) == 2:
            break
    assert values == [b"v1", b"v2"]

    node.stop()
    assert (node.log_dir / ".kafka_cleanshutdown").exists() or any(
        node.log_dir.glob("*/.kafka_cleanshutdown"))
    dump = kafka_tools.dump_log(sorted((node.log_dir / "smoke-0").glob("*.log")),
                                "--deep-iteration", "--print-data-log").check()
    assert "endTxnMarker: COMMIT" in dump.stdout
    node.start()
    node.kill()
    assert not node.running


def test_three_brokers_with_their_controller_survive_a_killed_leader(kafka_cluster,
                                                                     java_client) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    cluster = kafka_cluster(brokers=3)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for future in admin.create_topics([NewTopic("replicated", 1, 3)]).values():
        future.result(30)
    producer: JavaClient = java_client()
    producer.producer(bootstrap_servers=cluster.bootstrap, acks="all")
    producer.send("replicated", 0, "k", "before")
    assert producer.flush() == [0]
    leader = admin.list_topics("replicated", timeout=10).topics["replicated"].partitions[0].leader
    cluster.broker(leader).kill()
    producer.send("replicated", 0, "k", "after")
    assert producer.flush() == [1]
    cluster.broker(leader).start()
    for node in cluster.brokers:
        assert (node.log_dir / "replicated-0").is_dir()
