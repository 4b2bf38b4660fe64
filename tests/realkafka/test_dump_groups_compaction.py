"""kafkatx against Kafka itself on one real node per Kafka version: every file ``dump`` reads
(``kafka-dump-log.sh`` with its decoders, ``--index-sanity-check``), consumer groups of both
protocols (``kafka-consumer-groups.sh``), and compaction of a transactional topic,
``__consumer_offsets`` and ``__transaction_state`` (ListOffsets READ_COMMITTED, what a
read_committed consumer receives, ``kafka-transactions.sh``).

The node runs once per version for the whole module (``scenario``): the workloads, Kafka's
answers while it runs, a live copy of its log dir, then a clean stop.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafkatx.formats import offset_index, time_index

from .answers_compare import compare_answers
from .dump_compare import compare_log_dir_dump, dumpable_files
from .load_compare import kafka_load_differences
from .node import KafkaCluster
from .storage import KafkaLoad
from .tools import JavaClient, KafkaTools
from .workloads import (
    SETTINGS,
    KafkaAnswers,
    compaction_workload,
    groups_workload,
    record_answers,
)


@dataclass
class Scenario:
    version: str
    log_dir: Path  # after the clean stop
    live_copy: Path
    answers: KafkaAnswers
    tools: KafkaTools
    cleaned: dict[str, int]


@pytest.fixture(scope="module")
def scenario(kafka_version: str, kafka_tools: KafkaTools,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scenario]:
    version, tools = kafka_version, kafka_tools
    home = tmp_path_factory.mktemp(f"oracle-{version}")
    cluster = KafkaCluster.create(version, home / "kafka", settings=SETTINGS)
    clients: list[JavaClient] = []

    def client() -> JavaClient:
        clients.append(JavaClient(version, home / f"client-{len(clients)}.log"))
        return clients[-1]

    try:
        cluster.start()
        groups = groups_workload(cluster, client)
        cleaned = compaction_workload(cluster, client)
        answers = record_answers(
            KafkaAnswers(version), cluster, tools, client,
            [("orders", 0), ("inventory", 0)], ["orders-writer", "inventory-writer"],
            [*groups, "inventory-group"])
        (home / "answers.json").write_text(answers.to_json())
        live = cluster.nodes[0].copy_log_dir(home / "live-copy")
        for c in clients:
            c.kill()  # no LeaveGroup: the files keep the members Kafka described
        cluster.stop()
        yield Scenario(version, cluster.nodes[0].log_dir, live, answers, tools, cleaned)
    finally:
        for c in clients:
            c.kill()
        cluster.kill()


def test_kafkatx_answers_as_kafka_did_after_compaction_and_with_both_group_protocols(
        scenario: Scenario) -> None:
    """LSOs, read_committed records, open transactions, find-hanging, the writers' transaction
    state and both protocols' groups (state, members, offsets, lag): kafkatx on the stopped
    node's files, and on the copy taken while it ran, gives Kafka's answers from the running
    node."""
    answers = scenario.answers
    assert answers.groups["modern-readers"]["state"]["STATE"] == "Stable"
    assert answers.groups["modern-left"]["state"]["STATE"] == "Empty"
    assert len(answers.read_committed["inventory-0"]) < 24  # compaction removed records
    assert compare_answers(scenario.log_dir, answers) == []
    assert compare_answers(scenario.live_copy, answers) == []


def test_dump_equals_kafka_dump_log_on_every_file(scenario: Scenario) -> None:
    """Every segment (compacted ones included), index, time index, transaction index,
    producer snapshot and KRaft snapshot of the node, after its clean stop and as copied live:
    ``kafkatx dump`` prints what ``kafka-dump-log.sh`` prints, field by field."""
    for log_dir in (scenario.log_dir, scenario.live_copy):
        assert any(p.name.endswith(".txnindex") for p in dumpable_files(log_dir))
        assert compare_log_dir_dump(scenario.tools, log_dir) == []


def test_after_restart_is_kafkas_load_after_compaction(scenario: Scenario,
                                                       kafka_load: KafkaLoad) -> None:
    """Segments Kafka's own cleaner compacted (a transactional topic, ``__consumer_offsets``,
    ``__transaction_state``; batches left with fewer records than offsets, markers kept or
    removed, the live copy's swapped and ``.deleted`` files), after the clean stop and as
    copied live: ``--after-restart`` is what Kafka's ``LogLoader`` loads (issue 24)."""
    for log_dir in (scenario.log_dir, scenario.live_copy):
        assert kafka_load_differences(kafka_load, log_dir) == [], log_dir.name


def test_index_sanity_check_agrees_with_kafka(scenario: Scenario, tmp_path: Path) -> None:
    """``--index-sanity-check`` (the check a broker runs at start-up to decide whether an index
    is rebuilt) on every index of the stopped node, and on a damaged copy: Kafka's verdict on
    each file is kafkatx's ``sanity_check`` (``OffsetIndex``/``TimeIndex#sanityCheck``). The
    metadata log's indexes keep their preallocated zero tail after a clean stop: both fail them."""
    indexes = [p for p in dumpable_files(scenario.log_dir)
               if p.suffix in (".index", ".timeindex") and p.stat().st_size > 0]
    damaged = tmp_path / indexes[0].parent.name / indexes[0].name
    shutil.copytree(indexes[0].parent, damaged.parent)
    damaged.write_bytes(damaged.read_bytes() + b"\x00\x00\x00")  # not a whole entry
    verdicts = []
    for path in [*indexes, damaged]:
        result = scenario.tools.dump_log([path], "--index-sanity-check")
        kafka_passes = result.status == 0 and "passed sanity check." in result.stdout
        check = offset_index.sanity_check if path.suffix == ".index" else \
            time_index.sanity_check
        ours_passes = not check(path.read_bytes(), base_offset=int(path.name.split(".")[0]))
        verdicts.append((path.name, kafka_passes))
        assert ours_passes == kafka_passes, (path, result.stdout, result.stderr[:500])
    assert verdicts[-1] == (damaged.name, False) and any(ok for _, ok in verdicts)
