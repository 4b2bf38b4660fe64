"""``kafkatx serve --fault``: each rule with a real client, then ``kafkatx inspect`` on the log
dir finds what the rule reproduces (hanging transaction, stuck prepare, pinned LSO)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kafkatx.broker.faults import (
    CRASH_EXIT_STATUS,
    CrashAfter,
    DelayMarker,
    DropMarker,
    FaultRule,
    FaultRuleError,
    Reject,
)
from kafkatx.broker.faults import parse_rule as parse_served_rule
from kafkatx.broker.protocol.handlers import load_handlers
from kafkatx.formats.transaction_log import TransactionState
from tests.broker.kafkatx_cli import replay_visible, run_cli
from tests.broker.serve_process import ServeProcess
from tests.broker.test_wire import list_offset
from tests.broker.wire import WireClient


def parse_rule(rule: str) -> FaultRule:
    """A rule as ``kafkatx serve --fault`` parses it (against the APIs it serves)."""
    return parse_served_rule(rule, load_handlers())

Serve = Callable[..., ServeProcess]
FAST = ("--group-initial-rebalance-delay-ms", "0", "--transaction-abort-interval-ms", "200")


@pytest.fixture(autouse=True)
def _quiet_client_loggers() -> None:
    logging.getLogger("kafka").setLevel(logging.CRITICAL)


def findings(log_dir: Path) -> list[dict[str, Any]]:
    run = run_cli("inspect", "--format", "json", str(log_dir))
    assert run.returncode == 0, run.stderr.decode()
    found: list[dict[str, Any]] = json.loads(run.stdout)["findings"]
    return found


def txn_producer(bootstrap: str, tid: str) -> Any:
    kafka = pytest.importorskip("kafka")
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid,
                                   request_timeout_ms=5000, max_block_ms=10_000)
    producer.init_transactions()
    return producer


def send_txn(producer: Any, records: dict[str, int]) -> None:
    """Begin a transaction and write ``n`` records to partition 0 of each topic."""
    producer.begin_transaction()
    for topic, n in records.items():
        for i in range(n):
            producer.send(topic, value=b"%s-%d" % (topic.encode(), i), partition=0)
    producer.flush(10)


# -- parsing ------------------------------------------------------------------------------------


def test_rules_parse_into_typed_rules() -> None:
    assert parse_rule("drop-marker:pay-ments-3") == DropMarker(topic="pay-ments", partition=3)
    assert parse_rule("crash-after:prepare-commit") == CrashAfter(
        state=TransactionState.PREPARE_COMMIT)
    assert parse_rule("crash-after:prepare-abort") == CrashAfter(
        state=TransactionState.PREPARE_ABORT)
    assert parse_rule("delay-marker:t.x-0:1500") == DelayMarker(topic="t.x", partition=0,
                                                                 delay_ms=1500)
    assert parse_rule("reject:Produce:NOT_LEADER_OR_FOLLOWER") == Reject(
        api_key=0, error=ErrorCode.not_leader_or_follower)
    assert parse_rule("reject:26:51") == Reject(api_key=26,
                                                error=ErrorCode.concurrent_transactions)
    assert parse_rule("reject:end_txn:invalid_txn_state") == Reject(
        api_key=26, error=ErrorCode.invalid_txn_state)
    assert str(parse_rule("reject:EndTxn:48")) == "reject:EndTxn:INVALID_TXN_STATE"
    for step in ("cleaned", "swap"):  # the log cleaner's crash points
        assert str(parse_rule(f"crash-after:{step}")) == f"crash-after:{step}"


@pytest.mark.parametrize("rule", [
    "", "drop-marker", "drop-marker:payments", "drop-marker:payments-x", "drop-marker:-0",
    "drop-marker:bad/topic-0", "crash-after:commit", "crash-after:swapped", "delay-marker:t-0",
    "delay-marker:t-0:soon",
    "reject:Produce", "reject:Nope:INVALID_REQUEST", "reject:Produce:NO_SUCH_ERROR",
    "reject:Produce:NONE", "reject:999:6", "reject:Metadata:6", "explode:now",
])
def test_malformed_rules_are_one_usage_error(rule: str) -> None:
    with pytest.raises(FaultRuleError):
        parse_rule(rule)
    run = run_cli("serve", "--port", "0", "--fault", rule)
    assert run.returncode == 2
    errors = [line for line in run.stderr.decode().splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "--fault" in errors[0] and repr(rule) in errors[0], errors


def test_help_documents_every_rule() -> None:
    text = "".join(run_cli("serve", "--help").stdout.decode().split())  # click wraps at "-"
    for rule in ("drop-marker:TOPIC-P", "crash-after:prepare-commit|prepare-abort",
                 "crash-after:cleaned|swap", "delay-marker:TOPIC-P:MS", "reject:API:ERROR"):
        assert rule in text


# -- real clients -------------------------------------------------------------------------------


def test_drop_marker_leaves_a_hanging_transaction(serve: Serve) -> None:
    proc = serve("--fault", "drop-marker:fx-0", *FAST)
    producer = txn_producer(proc.bootstrap, "fault-drop")
    send_txn(producer, {"fx": 3, "fy": 2})
    producer.commit_transaction()  # the coordinator completes it as if both markers were out
    producer.close(5)
    assert proc.stop() == 0
    hanging = [f for f in findings(proc.log_dir) if f["kind"] == "hanging_transaction"]
    assert [(f["topic"], f["partition"], f["offset"], f["transactional_id"])
            for f in hanging] == [("fx", 0, 0, "fault-drop")]
    assert hanging[0]["remediation"].endswith("abort --topic fx --partition 0 --start-offset 0")
    assert [v for _, v in replay_visible(proc.log_dir, "fy", 0)] == [b"fy-0", b"fy-1"]
    assert replay_visible(proc.log_dir, "fx", 0) == []  # the LSO is pinned at 0


# A transactional producer that writes N records to partition 0 of TOPIC and commits (in a
# process of its own: the broker dies under it). argv: bootstrap, transactional id, topic, N.
COMMITTING_PRODUCER = textwrap.dedent("""
    import sys, kafka
    bootstrap, tid, topic, n = sys.argv[1:]
    p = kafka.KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid,
                            request_timeout_ms=5000, max_block_ms=10_000)
    p.init_transactions()
    p.begin_transaction()
    for i in range(int(n)):
        p.send(topic, value=b"%s-%d" % (topic.encode(), i), partition=0)
    p.flush(10)
    p.commit_transaction()
""")


def test_crash_after_prepare_commit_is_a_stuck_prepare_until_restart(serve: Serve) -> None:
    pytest.importorskip("kafka")
    proc = serve("--fault", "crash-after:prepare-commit", *FAST)
    client = subprocess.Popen([sys.executable, "-c", COMMITTING_PRODUCER, proc.bootstrap,
                               "fault-crash", "fc", "2"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert proc.proc is not None
        assert proc.proc.wait(20) == CRASH_EXIT_STATUS
    finally:
        client.kill()
        client.wait(10)
    assert "fault injected" in proc.stderr()
    stuck = [f for f in findings(proc.log_dir) if f["kind"] == "stuck_prepare"]
    assert [f["transactional_id"] for f in stuck] == ["fault-crash"]
    assert replay_visible(proc.log_dir, "fc", 0) == []

    restarted = serve(*FAST, log_dir=proc.log_dir)  # no fault: the load completes it
    assert restarted.stop() == 0
    after = findings(proc.log_dir)
    assert not [f for f in after if f["kind"] in ("stuck_prepare", "hanging_transaction",
                                                  "open_transaction")], after
    assert [v for _, v in replay_visible(proc.log_dir, "fc", 0)] == [b"fc-0", b"fc-1"]


def test_delay_marker_pins_the_lso_until_the_marker(serve: Serve) -> None:
    delay_ms = 2500
    proc = serve("--fault", f"delay-marker:fd-0:{delay_ms}", *FAST)
    producer = txn_producer(proc.bootstrap, "fault-delay")
    send_txn(producer, {"fd": 4})
    started = time.monotonic()
    producer.commit_transaction()
    with WireClient(proc.port) as c:
        assert (list_offset(c, "fd", -1, isolation=1).offset,
                list_offset(c, "fd", -1, isolation=0).offset) == (0, 4)
        pinned_until = time.monotonic()
        while list_offset(c, "fd", -1, isolation=1).offset == 0:
            assert time.monotonic() - started < delay_ms / 1000 + 5, "the marker never came"
            time.sleep(0.1)
            pinned_until = time.monotonic()
        assert pinned_until - started >= delay_ms / 1000 - 0.5
        assert (list_offset(c, "fd", -1, isolation=1).offset,
                list_offset(c, "fd", -1, isolation=0).offset) == (5, 5)
    producer.close(5)
    assert proc.stop() == 0
    assert [v for _, v in replay_visible(proc.log_dir, "fd", 0)] == [
        b"fd-0", b"fd-1", b"fd-2", b"fd-3"]
    kinds = {f["kind"] for f in findings(proc.log_dir)}
    assert not kinds & {"hanging_transaction", "stuck_prepare", "open_transaction"}, kinds


def test_reject_produce_reaches_the_client(serve: Serve) -> None:
    kafka = pytest.importorskip("kafka")
    proc = serve("--fault", "reject:Produce:POLICY_VIOLATION")
    producer = kafka.KafkaProducer(bootstrap_servers=proc.bootstrap, request_timeout_ms=5000,
                                   max_block_ms=10_000, retries=0)
    with pytest.raises(kafka.errors.PolicyViolationError):
        producer.send("fr", value=b"refused", partition=0).get(timeout=10)
    producer.close(5)
    assert proc.stop() == 0
    assert replay_visible(proc.log_dir, "fr", 0) == []
    assert not [f for f in findings(proc.log_dir) if f["severity"] == "error"]
