"""Retention and the log cleaner under kafka-python (``UnifiedLog#deleteOldSegments``,
``LogCleaner``): a read_committed consumer from the log start gets exactly what ``kafkatx
replay`` predicts, and a cleaned ``__transaction_state`` still carries each transactional id's
producer id and epoch across a restart (``TransactionStateManager`` loading)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

import pytest

from kafkatx.semantics.coordinator_partition import partition_for
from tests.broker.kafkatx_cli import run_cli, verify
from tests.broker.serve_process import ServeProcess
from tests.broker.test_compaction_clients import (
    Row,
    active_base,
    cleaner_checkpoint,
    compaction_model,
    replay_rows,
)

Serve = Callable[..., ServeProcess]
OPTIONS = ("--log-cleaner-backoff-ms", "50", "--log-retention-check-interval-ms", "50",
           "--transaction-state-segment-bytes", "700", "--transaction-abort-interval-ms", "200")


@pytest.fixture(autouse=True)
def _quiet_client_loggers() -> None:
    logging.getLogger("kafka").setLevel(logging.CRITICAL)


def _read_committed(kafka: Any, bootstrap: str, topic: str, until: int) -> list[Row]:
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                                   enable_auto_commit=False, auto_offset_reset="earliest")
    tp = kafka.TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    got: list[Row] = []
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and (not got or got[-1][0] < until):
        for messages in consumer.poll(timeout_ms=200).values():
            got += [(m.offset, m.key, m.value) for m in messages]
    consumer.close()
    return got


def _wait(what: str, proc: ServeProcess, done: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 20
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}:\n{proc.stderr()}")
        time.sleep(0.05)


def test_kafka_python_after_retention_and_cleaning(serve: Serve) -> None:
    """kafka-python commits and aborts transactions into a compacted topic and a topic with a
    small retention.bytes; once retention moved the log start and the cleaner reached the
    active segment, read_committed consumers from the log start get what ``kafkatx replay``
    predicts, the compacted one also the model's records; after a restart the transactional
    id, its __transaction_state partition cleaned, resumes with the next epoch."""
    kafka = pytest.importorskip("kafka")
    from kafka.admin import KafkaAdminClient, NewTopic

    proc = serve(*OPTIONS)
    admin = KafkaAdminClient(bootstrap_servers=proc.bootstrap)
    admin.create_topics([
        NewTopic("kp-cmp", 1, 1, topic_configs={"cleanup.policy": "compact",
                                                "segment.bytes": "700",
                                                "min.cleanable.dirty.ratio": "0.01"}),
        NewTopic("kp-ret", 1, 1, topic_configs={"segment.bytes": "700",
                                                "retention.bytes": "1500"})])
    admin.close()
    producer = kafka.KafkaProducer(bootstrap_servers=proc.bootstrap, transactional_id="kp-aged",
                                   request_timeout_ms=5000, max_block_ms=10_000)
    producer.init_transactions()
    history: list[tuple[int, bytes, bytes | None, bool]] = []
    last_ret = 0
    for n in range(24):
        commit = n % 4 != 1
        producer.begin_transaction()
        futures = [producer.send("kp-cmp", key=b"k%d" % ((n + i) % 5),
                                 value=b"v%d-%d" % (n, i) * 6, partition=0) for i in range(3)]
        ret = producer.send("kp-ret", key=b"r", value=b"r%d" % n * 20, partition=0)
        producer.flush(10)
        (producer.commit_transaction if commit else producer.abort_transaction)()
        history += [(m.offset, b"k%d" % ((n + i) % 5), b"v%d-%d" % (n, i) * 6, commit)
                    for i, m in enumerate(f.get(10) for f in futures)]
        if commit:
            last_ret = ret.get(10).offset
    producer.close(5)
    state = ("__transaction_state", partition_for("kp-aged"))
    _wait("the cleaner", proc, lambda: cleaner_checkpoint(proc.log_dir).get(("kp-cmp", 0))
          == active_base(proc.log_dir, "kp-cmp", 0) and state in cleaner_checkpoint(proc.log_dir))
    ret_files = lambda: sorted((proc.log_dir / "kp-ret-0").glob("*.log"))  # noqa: E731
    _wait("retention", proc, lambda: ret_files()[0].name != "00000000000000000000.log")
    last = max(o for o, _, _, c in history if c)
    got_cmp = _read_committed(kafka, proc.bootstrap, "kp-cmp", last)
    got_ret = _read_committed(kafka, proc.bootstrap, "kp-ret", last_ret)
    assert proc.stop() == 0
    cleaned_below = cleaner_checkpoint(proc.log_dir)[("kp-cmp", 0)]
    assert got_cmp == compaction_model(history, cleaned_below) == replay_rows(
        proc.log_dir, "kp-cmp", 0)
    assert got_ret == replay_rows(proc.log_dir, "kp-ret", 0) and got_ret[0][0] > 0
    assert not [f for f in verify(proc.log_dir)["findings"] if f["severity"] != "info"]

    again = serve(*OPTIONS)
    producer = kafka.KafkaProducer(bootstrap_servers=again.bootstrap, transactional_id="kp-aged",
                                   request_timeout_ms=5000, max_block_ms=10_000)
    producer.init_transactions()
    producer.begin_transaction()
    producer.send("kp-ret", key=b"r", value=b"after", partition=0)
    producer.commit_transaction()
    producer.close(5)
    assert again.stop() == 0
    rows = replay_rows(again.log_dir, "kp-ret", 0)
    assert rows[-1][2] == b"after"
    run = run_cli("timeline", "--transactional-id", "kp-aged", "--format", "jsonl",
                  str(again.log_dir))
    txns = [json.loads(line) for line in run.stdout.decode().splitlines()]
    assert {t["producer_id"] for t in txns} == {txns[0]["producer_id"]}
    assert (txns[-1]["producer_epoch"], txns[-1]["outcome"]) == (
        txns[-2]["producer_epoch"] + 1, "committed")
