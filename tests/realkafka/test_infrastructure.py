"""The real-Kafka harness itself: nodes start, stop, die and restart; tools and clients answer.

A 3-broker cluster with its controller, a broker killed while writes go on with acks=all and
the broker started again until every replica is back in sync, is the story of
``test_cluster_faults.py`` (one cluster per version for that module): it is not started a
second time here."""

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
