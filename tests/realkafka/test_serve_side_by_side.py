"""``kafkatx serve`` and a real Kafka node answer the same raw request sequences alike (issue 25
item 6): malformed frames, truncated bodies, unknown keys and versions, a collection longer
than its frame, bad batches in every codec (a wrong CRC; a right CRC over records that do not
decode), an oversized batch, topic-name collisions on both creation paths and a CreateTopics
beyond Kafka's partitions per request. Each scenario runs on a fresh connection to both
brokers; what the client sees (the error codes, whether the connection is closed) must be the
same, except where ``DIFFERENCES`` says why not (each one is in docs/serve.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.broker.serve_process import ServeProcess

from . import wire_scenarios
from .node import KafkaCluster

#: scenario -> (what serve answers instead, why). Empty: serve answers every one as Kafka.
DIFFERENCES: dict[str, tuple[wire_scenarios.Outcome, str]] = {}


@pytest.fixture(scope="module")
def kafka_port(module_kafka_cluster: Callable[..., KafkaCluster]) -> int:
    cluster = module_kafka_cluster(name="side-by-side")
    port = cluster.nodes[0].port
    wire_scenarios.create_topic(port)
    return port


@pytest.fixture(scope="module")
def serve_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    proc = ServeProcess(Path(tmp_path_factory.mktemp("serve-side")) / "data").start()
    try:
        wire_scenarios.create_topic(proc.port)
        yield proc.port
        assert proc.stop() == 0, proc.stderr()
    finally:
        proc.kill()


@pytest.mark.parametrize("name", sorted(wire_scenarios.scenarios()))
def test_serve_answers_each_sequence_as_kafka_does(name: str, kafka_port: int,
                                                   serve_port: int) -> None:
    scenario = wire_scenarios.scenarios()[name]
    kafka = scenario(kafka_port)
    served = scenario(serve_port)
    if name in DIFFERENCES:
        expected, why = DIFFERENCES[name]
        assert served == expected, f"{name}: serve {served}, documented {expected} ({why})"
        assert kafka != served, f"{name}: now answered as Kafka does; drop the difference"
        return
    assert served == kafka, f"{name}: Kafka {kafka}, serve {served}"
