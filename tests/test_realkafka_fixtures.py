"""The log dirs real Apache Kafka wrote (fixtures/realkafka/, made by its make.py): kafkatx gives
the answers Kafka gave on the running node (ListOffsets READ_COMMITTED, what a read_committed
consumer received, describe-producers, find-hanging, kafka-transactions describe,
kafka-consumer-groups --describe), recorded beside each log dir. No Java needed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.realkafka.answers_compare import compare_answers
from tests.realkafka.workloads import KafkaAnswers

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "realkafka"
SCENARIOS = sorted(p.name.removesuffix(".answers.json")
                   for p in FIXTURES.glob("*.answers.json"))


def test_every_real_kafka_fixture_has_its_answers() -> None:
    dirs = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir() and not p.name.startswith("_"))
    assert dirs == SCENARIOS and "open-transaction" in SCENARIOS and "compacted" in SCENARIOS


@pytest.mark.parametrize("name", SCENARIOS)
def test_kafkatx_gives_kafkas_recorded_answers(name: str) -> None:
    answers = KafkaAnswers.from_json((FIXTURES / f"{name}.answers.json").read_text())
    assert answers.kafka_version.startswith("4.")
    assert compare_answers(FIXTURES / name, answers) == []


def test_the_open_transaction_holds_both_groups_as_kafka_said() -> None:
    """What the README's first command shows: the LSO held at the killed producer's first
    record, describe-producers naming it, and groups of both protocols stuck behind it."""
    answers = KafkaAnswers.from_json((FIXTURES / "open-transaction.answers.json").read_text())
    assert answers.lso["payments-0"] < answers.high_watermark["payments-0"]
    starts = [r["CurrentTransactionStartOffset"] for r in
              answers.describe_producers["payments-0"]]
    assert str(answers.lso["payments-0"]) in starts and answers.find_hanging == []
    assert {g: a["state"]["STATE"] for g, a in answers.groups.items()} == {
        "ledger": "Stable", "audit": "Stable"}
    assert answers.transactions["checkout"]["TransactionState"] == "Ongoing"


def test_every_metadata_record_kafka_4_4_wrote_decodes() -> None:
    """Kafka 4.4 registers brokers with RegisterBrokerRecord v4 and BrokerRegistrationChangeRecord
    v3 (CordonedLogDirs): dump decodes every record of the fixture's metadata log and snapshot."""
    done = subprocess.run([sys.executable, "-m", "kafkatx", "dump", "--format", "jsonl",
                           str(FIXTURES / "open-transaction" / "__cluster_metadata-0")],
                          capture_output=True, text=True, check=True)
    records = [r for line in done.stdout.splitlines() for r in json.loads(line).get("records", [])]
    assert records and not [r for r in records if "raw" in r or "decode_error" in r]
    versions = {(r["type"], r["version"]) for r in records if "type" in r}
    assert ("RegisterBrokerRecord", 4) in versions
    assert ("BrokerRegistrationChangeRecord", 3) in versions
