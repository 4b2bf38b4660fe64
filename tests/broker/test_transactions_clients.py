"""Transactions and consumer groups with real clients against ``kafkatx serve``.

Each test runs real clients on 127.0.0.1, stops the server with SIGTERM (exit status 0) and
checks the log dir with kafkatx's own commands: the records a read_committed consumer received
are exactly what ``kafkatx replay`` says a consumer of that partition gets (issue 4), the
coordinators' records are where ``partitionFor`` puts them, and ``kafkatx verify`` finds no
error.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import subprocess
import sys
import textwrap
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from kafkatx.semantics.coordinator_partition import partition_for
from tests.broker.kafka_python_group import commit_when_assigned, subscribed_metadata
from tests.broker.kafkatx_cli import finding_kinds, lso_rows, replay_visible, verify
from tests.broker.logdir_checks import LogDirView, check_log_dir
from tests.broker.serve_process import ServeProcess
from tests.broker.test_wire import list_offset
from tests.broker.wire import WireClient

Serve = Callable[..., ServeProcess]
DEADLINE_S = 20.0
FAST = ("--group-initial-rebalance-delay-ms", "0", "--transaction-abort-interval-ms", "200")
Received = dict[tuple[str, int], list[tuple[int, bytes]]]


@pytest.fixture(autouse=True)
def _quiet_client_loggers() -> None:
    for name in ("kafka", "aiokafka"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def txn_states(view: LogDirView, transactional_id: str) -> list[tuple[str, int, int]]:
    """(state, producer id, epoch) of every ``__transaction_state`` value of the id, checking
    it is in the partition ``partitionFor`` names."""
    out = []
    for name, batches in view.batches.items():
        for b in batches:
            for r in b.get("records", []):
                key = r.get("key")
                if isinstance(key, dict) and key.get("transactional_id") == transactional_id:
                    assert name == f"__transaction_state-{partition_for(transactional_id)}"
                    v = r["value"]
                    out.append(("tombstone", -1, -1) if v is None
                               else (v["state"], v["producer_id"], v["producer_epoch"]))
    return out


def collapse(states: Iterable[str]) -> list[str]:
    """States without repeats (AddPartitionsToTxn writes Ongoing once per call)."""
    out: list[str] = []
    for s in states:
        if not out or out[-1] != s:
            out.append(s)
    return out


def control_batches(view: LogDirView, partition_dir: str) -> list[tuple[str, int, int]]:
    return [(b["control"]["type"], b["producer_id"], b["producer_epoch"])
            for b in view.batches.get(partition_dir, []) if b["is_control"]]


def assert_replay_matches(log_dir: Path, received: Received) -> None:
    """Issue 4's end-to-end check: what the consumer got == ``kafkatx replay``'s records."""
    for (topic, partition), got in received.items():
        assert replay_visible(log_dir, topic, partition) == sorted(got), (topic, partition)


# Kafka's group coordinator writes each transactional offset commit with base sequence 0 and
# appends it with origin COORDINATOR, which skips duplicate and sequence checks; a producer
# committing offsets in two transactions of one epoch thus leaves two batches with the same
# sequence in __consumer_offsets. kafkatx's replay audits __consumer_offsets with the
# COORDINATOR rules, so none of these may be reported.
COORDINATOR_SEQUENCE_FINDINGS: set[tuple[str, str]] = set()


def assert_no_errors(log_dir: Path,
                     allowed: set[tuple[str, str]] | None = None) -> dict[str, Any]:
    doc = verify(log_dir)
    errors = [f for f in doc["findings"] if f["severity"] == "error"
              and (f["kind"], f["topic"]) not in (allowed or set())]
    assert errors == [], errors
    return doc


def test_kafka_python_transactions_and_read_committed_group(serve: Serve) -> None:
    kafka = pytest.importorskip("kafka")
    proc = serve("--partitions", "2", *FAST)
    producer = kafka.KafkaProducer(bootstrap_servers=proc.bootstrap, transactional_id="kp-txn",
                                   request_timeout_ms=5000, max_block_ms=10_000)
    producer.init_transactions()
    expected: set[bytes] = set()
    everything: set[bytes] = set()
    for rnd, commit in enumerate((True, False, True)):
        producer.begin_transaction()
        for i in range(6):
            value = b"%s-%d-%d" % (b"commit" if commit else b"abort", rnd, i)
            producer.send("kp-a" if i % 3 else "kp-b", value=value, partition=i % 2)
            everything.add(value)
            if commit:
                expected.add(value)
        producer.flush(10)
        (producer.commit_transaction if commit else producer.abort_transaction)()
    producer.close(5)

    consumer = subscribed_metadata(kafka.KafkaConsumer(
        "kp-a", "kp-b", bootstrap_servers=proc.bootstrap, group_id="kp-group",
        isolation_level="read_committed", auto_offset_reset="earliest",
        enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=500,
        request_timeout_ms=10_000))
    received: Received = defaultdict(list)
    deadline = time.monotonic() + DEADLINE_S
    while sum(map(len, received.values())) < len(expected) and time.monotonic() < deadline:
        for tp, messages in consumer.poll(timeout_ms=300).items():
            received[(tp.topic, tp.partition)] += [(m.offset, m.value) for m in messages]
    consumer.commit()
    parts = [kafka.TopicPartition(t, p) for t in ("kp-a", "kp-b") for p in (0, 1)]
    committed = {(tp.topic, tp.partition): consumer.committed(tp) for tp in parts}
    ends = {(tp.topic, tp.partition): o for tp, o in consumer.end_offsets(parts).items()}
    consumer.close()
    assert {v for got in received.values() for _, v in got} == expected
    assert committed == ends  # the group's offsets: past the last marker of every partition

    uncommitted = kafka.KafkaConsumer(bootstrap_servers=proc.bootstrap,
                                      isolation_level="read_uncommitted",
                                      enable_auto_commit=False)
    uncommitted.assign(parts)
    uncommitted.seek_to_beginning(*parts)
    seen: set[bytes] = set()
    deadline = time.monotonic() + DEADLINE_S
    while len(seen) < len(everything) and time.monotonic() < deadline:
        for messages in uncommitted.poll(timeout_ms=300).values():
            seen.update(m.value for m in messages)
    uncommitted.close()
    assert seen == everything

    assert proc.stop() == 0, proc.stderr()
    view = check_log_dir(proc.log_dir)
    assert_replay_matches(proc.log_dir, received)
    assert collapse(s for s, _, _ in txn_states(view, "kp-txn")) == [
        "Empty", "Ongoing", "PrepareCommit", "CompleteCommit", "Ongoing", "PrepareAbort",
        "CompleteAbort", "Ongoing", "PrepareCommit", "CompleteCommit"]
    assert [c for c, _, _ in control_batches(view, "kp-a-0")] == ["COMMIT", "ABORT", "COMMIT"]
    group_dir = f"__consumer_offsets-{partition_for('kp-group')}"
    assert any(r.get("key", {}).get("group") == "kp-group"
               for b in view.batches[group_dir] for r in b.get("records", []))
    rows = lso_rows(proc.log_dir)
    for (topic, partition), end in ends.items():
        row = rows[(topic, partition)]
        assert row["last_stable_offset"] == row["high_watermark"] == end
    assert_no_errors(proc.log_dir)


def _ck_read_committed(ck: Any, bootstrap: str, topic: str, partitions: int,
                       count: int) -> Received:
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader",
                            "enable.auto.commit": False, "isolation.level": "read_committed"})
    consumer.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING)
                     for p in range(partitions)])
    got: Received = defaultdict(list)
    deadline = time.monotonic() + DEADLINE_S
    while sum(map(len, got.values())) < count and time.monotonic() < deadline:
        msg = consumer.poll(0.3)
        if msg is not None:
            assert msg.error() is None, msg.error()
            got[(msg.topic(), msg.partition())].append((msg.offset(), msg.value()))
    time.sleep(0.3)  # nothing more arrives
    assert consumer.poll(0.2) is None
    consumer.close()
    return got


def test_confluent_kafka_consume_transform_produce_and_zombie(serve: Serve) -> None:
    ck = pytest.importorskip("confluent_kafka")
    proc = serve("--partitions", "2", *FAST)
    base = {"bootstrap.servers": proc.bootstrap}
    source = ck.Producer({**base, "transactional.id": "ck-src", "linger.ms": 5})
    source.init_transactions(10)
    expected: list[bytes] = []
    for rnd, commit in enumerate((True, False, True)):
        source.begin_transaction()
        for i in range(8):
            value = b"%s%d-%d" % (b"c" if commit else b"a", rnd, i)
            source.produce("ck-in", value=value, partition=i % 2)
            if commit:
                expected.append(value)
        source.flush(10)
        (source.commit_transaction if commit else source.abort_transaction)(10)

    consumer = ck.Consumer({**base, "group.id": "ck-ctp", "isolation.level": "read_committed",
                            "enable.auto.commit": False, "auto.offset.reset": "earliest",
                            "session.timeout.ms": 6000})
    consumer.subscribe(["ck-in"])
    ctp = ck.Producer({**base, "transactional.id": "ck-ctp-txn"})
    ctp.init_transactions(10)
    received: Received = defaultdict(list)
    transactions = 0
    deadline = time.monotonic() + DEADLINE_S
    while sum(map(len, received.values())) < len(expected) and time.monotonic() < deadline:
        batch = consumer.consume(num_messages=6, timeout=0.3)
        assert [m.error() for m in batch if m.error() is not None] == []
        if not batch:
            continue
        ctp.begin_transaction()
        for m in batch:
            received[(m.topic(), m.partition())].append((m.offset(), m.value()))
            ctp.produce("ck-out", value=m.value().upper(), partition=m.partition())
        ctp.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                        consumer.consumer_group_metadata(), 10)
        ctp.commit_transaction(10)
        transactions += 1
    committed = consumer.committed([ck.TopicPartition("ck-in", p) for p in (0, 1)], timeout=10)
    consumer.close()
    assert sorted(v for got in received.values() for _, v in got) == sorted(expected)
    assert transactions >= 2
    group_offsets = {tp.partition: tp.offset for tp in committed}
    out = _ck_read_committed(ck, proc.bootstrap, "ck-out", 2, len(expected))
    assert sorted(v for got in out.values() for _, v in got) == sorted(
        v.upper() for v in expected)

    zombie = ck.Producer({**base, "transactional.id": "ck-zombie"})
    zombie.init_transactions(10)
    zombie.begin_transaction()
    zombie.produce("ck-z", value=b"zombie", partition=0)
    zombie.flush(10)
    live = ck.Producer({**base, "transactional.id": "ck-zombie"})
    live.init_transactions(10)  # aborts the zombie's transaction, fences its epoch
    with pytest.raises(ck.KafkaException) as fenced:
        zombie.commit_transaction(10)
    error = fenced.value.args[0]
    assert error.fatal() and "FENCED" in error.name(), error
    live.begin_transaction()
    live.produce("ck-z", value=b"live", partition=0)
    live.commit_transaction(10)
    zombie_topic = _ck_read_committed(ck, proc.bootstrap, "ck-z", 2, 1)
    assert [v for got in zombie_topic.values() for _, v in got] == [b"live"]
    del source, ctp, zombie, live  # librdkafka producers close when collected

    assert proc.stop() == 0, proc.stderr()
    view = check_log_dir(proc.log_dir)
    assert_replay_matches(proc.log_dir, received)
    assert_replay_matches(proc.log_dir, out)
    assert_replay_matches(proc.log_dir, zombie_topic)
    rows = lso_rows(proc.log_dir)
    # librdkafka's position moves past the last COMMIT marker: the group is at the LSO.
    assert group_offsets == {p: rows[("ck-in", p)]["last_stable_offset"] for p in (0, 1)}
    (pid,) = {p for _, p, _ in txn_states(view, "ck-zombie")}
    assert txn_states(view, "ck-zombie") == [
        ("Empty", pid, 0), ("Ongoing", pid, 0), ("PrepareAbort", pid, 1),
        ("CompleteAbort", pid, 1), ("Empty", pid, 2), ("Ongoing", pid, 2),
        ("PrepareCommit", pid, 2), ("CompleteCommit", pid, 2)]
    assert control_batches(view, "ck-z-0") == [("ABORT", pid, 1), ("COMMIT", pid, 2)]
    # The offsets went into the group's partition with the transactional producer's id, and
    # every transaction put a COMMIT marker there.
    ctp_pid = txn_states(view, "ck-ctp-txn")[0][1]
    group_dir = f"__consumer_offsets-{partition_for('ck-ctp')}"
    txn_commits = [b for b in view.batches[group_dir]
                   if b["is_transactional"] and not b["is_control"]]
    assert len(txn_commits) == transactions
    assert {(b["producer_id"], b["base_sequence"]) for b in txn_commits} == {(ctp_pid, 0)}
    assert [c for c, p, _ in control_batches(view, group_dir) if p == ctp_pid] == \
        ["COMMIT"] * transactions
    doc = assert_no_errors(proc.log_dir, COORDINATOR_SEQUENCE_FINDINGS)
    assert not {("duplicate_batch", "__consumer_offsets"),
                ("sequence_gap", "__consumer_offsets")} & finding_kinds(doc)


# A transactional producer that commits N records, then leaves M records in an open
# transaction and waits to be killed. argv: bootstrap, timeout ms, transactional id, topic, N, M.
OPEN_TXN_PRODUCER = textwrap.dedent("""
    import sys, time, kafka
    bootstrap, timeout, tid, topic, committed, left_open = sys.argv[1:]
    p = kafka.KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid,
                            transaction_timeout_ms=int(timeout), request_timeout_ms=5000)
    p.init_transactions()
    p.begin_transaction()
    for i in range(int(committed)):
        p.send(topic, value=b"committed-%d" % i, partition=0)
    p.commit_transaction()
    p.begin_transaction()
    for i in range(int(left_open)):
        p.send(topic, value=b"open-%d" % i, partition=0)
    p.flush(10)
    print("ready", flush=True)
    time.sleep(120)
""")


def start_open_txn_producer(bootstrap: str, *args: object) -> subprocess.Popen[bytes]:
    """Run ``OPEN_TXN_PRODUCER`` until it has its transaction open (the caller kills it)."""
    producer = subprocess.Popen([sys.executable, "-c", OPEN_TXN_PRODUCER, bootstrap,
                                 *map(str, args)],
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert producer.stdout is not None
    if producer.stdout.readline() != b"ready\n":
        kill(producer)
        raise AssertionError("the transactional producer did not start")
    return producer


def kill(producer: subprocess.Popen[bytes]) -> None:
    producer.kill()
    producer.wait(10)
    if producer.stdout is not None:
        producer.stdout.close()


def _live_offsets(port: int, topic: str) -> tuple[int, int]:
    """(ListOffsets latest read_committed, read_uncommitted): the live LSO and HW."""
    with WireClient(port) as c:
        return (list_offset(c, topic, -1, isolation=1).offset,
                list_offset(c, topic, -1, isolation=0).offset)


def test_killed_producer_is_aborted_after_its_timeout(serve: Serve, tmp_path: Path) -> None:
    pytest.importorskip("kafka")
    proc = serve(*FAST)
    kill(start_open_txn_producer(proc.bootstrap, 3000, "kp-killed", "hang", 1, 3))
    # Committed record at 0, its marker at 1, the open transaction from 2 to 4.
    assert _live_offsets(proc.port, "hang") == (2, 5)
    pinned = tmp_path / "copy-while-pinned"
    shutil.copytree(proc.log_dir, pinned)
    row = lso_rows(pinned)[("hang", 0)]
    assert (row["last_stable_offset"], row["lso_source"]) == (2, "open_transaction")
    assert [t["first_offset"] for t in row["open_transactions"]] == [2]
    assert ("open_transaction", "hang") in finding_kinds(verify(pinned))

    deadline = time.monotonic() + DEADLINE_S
    while _live_offsets(proc.port, "hang") != (6, 6) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _live_offsets(proc.port, "hang") == (6, 6)  # the ABORT marker at 5

    assert proc.stop() == 0, proc.stderr()
    assert "kp-killed: aborted after its timeout of 3000 ms" in proc.stderr()
    view = check_log_dir(proc.log_dir)
    (pid,) = {p for _, p, _ in txn_states(view, "kp-killed")}
    assert control_batches(view, "hang-0") == [("COMMIT", pid, 0), ("ABORT", pid, 1)]
    assert collapse(s for s, _, _ in txn_states(view, "kp-killed"))[-3:] == [
        "Ongoing", "PrepareAbort", "CompleteAbort"]
    assert txn_states(view, "kp-killed")[-1] == ("CompleteAbort", pid, 1)
    row = lso_rows(proc.log_dir)[("hang", 0)]
    assert (row["last_stable_offset"], row["high_watermark"], row["open_transactions"]) == (
        6, 6, [])
    assert replay_visible(proc.log_dir, "hang", 0) == [(0, b"committed-0")]
    doc = assert_no_errors(proc.log_dir)
    assert ("open_transaction", "hang") not in finding_kinds(doc)


def test_restart_mid_run_keeps_transactions_and_group_offsets(serve: Serve) -> None:
    kafka = pytest.importorskip("kafka")
    proc = serve(*FAST)

    def producer() -> Any:
        p = kafka.KafkaProducer(bootstrap_servers=proc.bootstrap, transactional_id="kp-restart",
                                request_timeout_ms=5000, max_block_ms=10_000)
        p.init_transactions()
        return p

    def consume(count: int) -> Received:
        consumer = subscribed_metadata(kafka.KafkaConsumer(
            "rs", bootstrap_servers=proc.bootstrap, group_id="rs-group",
            isolation_level="read_committed", auto_offset_reset="earliest",
            enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=500))
        got: Received = defaultdict(list)
        deadline = time.monotonic() + DEADLINE_S
        while sum(map(len, got.values())) < count and time.monotonic() < deadline:
            for tp, messages in consumer.poll(timeout_ms=300).items():
                got[(tp.topic, tp.partition)] += [(m.offset, m.value) for m in messages]
        consumer.commit()
        consumer.close()
        return got

    first = start_open_txn_producer(proc.bootstrap, 60_000, "kp-restart", "rs", 5, 1)
    before = consume(5)
    assert [v for _, v in before[("rs", 0)]] == [b"committed-%d" % i for i in range(5)]
    assert proc.stop() == 0, proc.stderr()
    kill(first)

    proc = serve(*FAST, log_dir=proc.log_dir)  # same log dir, a new process
    second = producer()  # fences the first one: the open transaction is aborted
    second.begin_transaction()
    for i in range(3):
        second.send("rs", value=b"after-%d" % i)
    second.commit_transaction()
    second.close(5)
    after = consume(3)  # the group resumes at its committed offset
    assert [v for _, v in after[("rs", 0)]] == [b"after-%d" % i for i in range(3)]
    assert proc.stop() == 0, proc.stderr()

    view = check_log_dir(proc.log_dir)
    (pid,) = {p for _, p, _ in txn_states(view, "kp-restart")}
    assert control_batches(view, "rs-0") == [("COMMIT", pid, 0), ("ABORT", pid, 1),
                                             ("COMMIT", pid, 2)]
    assert replay_visible(proc.log_dir, "rs", 0) == sorted(before[("rs", 0)] + after[("rs", 0)])
    assert_no_errors(proc.log_dir)


def test_aiokafka_transactions_and_consume_transform_produce(serve: Serve) -> None:
    aiokafka = pytest.importorskip("aiokafka")
    proc = serve("--partitions", "2", *FAST)

    async def scenario() -> tuple[Received, list[bytes], dict[int, int]]:
        source = aiokafka.AIOKafkaProducer(bootstrap_servers=proc.bootstrap,
                                           transactional_id="ak-src")
        await source.start()
        expected: list[bytes] = []
        try:
            for rnd, commit in enumerate((True, False, True)):
                await source.begin_transaction()
                for i in range(6):
                    value = b"%s%d-%d" % (b"c" if commit else b"a", rnd, i)
                    await source.send_and_wait("ak-in", value=value, partition=i % 2)
                    if commit:
                        expected.append(value)
                await (source.commit_transaction() if commit else source.abort_transaction())
        finally:
            await source.stop()
        consumer = aiokafka.AIOKafkaConsumer(
            "ak-in", bootstrap_servers=proc.bootstrap, group_id="ak-group",
            isolation_level="read_committed", auto_offset_reset="earliest",
            enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=500)
        ctp = aiokafka.AIOKafkaProducer(bootstrap_servers=proc.bootstrap,
                                        transactional_id="ak-ctp")
        await consumer.start()
        await ctp.start()
        received: Received = defaultdict(list)
        try:
            deadline = time.monotonic() + DEADLINE_S
            while (sum(map(len, received.values())) < len(expected)
                   and time.monotonic() < deadline):
                batch = await consumer.getmany(timeout_ms=300)
                if not batch:
                    continue
                async with ctp.transaction():
                    for tp, messages in batch.items():
                        for m in messages:
                            received[(tp.topic, tp.partition)].append((m.offset, m.value))
                            await ctp.send("ak-out", value=m.value.upper(),
                                           partition=tp.partition)
                    await ctp.send_offsets_to_transaction(
                        {tp: messages[-1].offset + 1 for tp, messages in batch.items()},
                        "ak-group")
            committed = {p: await consumer.committed(aiokafka.TopicPartition("ak-in", p))
                         for p in (0, 1)}
        finally:
            await ctp.stop()
            await consumer.stop()
        return received, expected, committed

    received, expected, committed = asyncio.run(scenario())
    assert sorted(v for got in received.values() for _, v in got) == sorted(expected)
    assert committed == {p: max(o for o, _ in received[("ak-in", p)]) + 1 for p in (0, 1)}
    assert proc.stop() == 0, proc.stderr()
    view = check_log_dir(proc.log_dir)
    assert_replay_matches(proc.log_dir, received)
    out = {p: replay_visible(proc.log_dir, "ak-out", p) for p in (0, 1)}
    assert sorted(v for got in out.values() for _, v in got) == sorted(
        v.upper() for v in expected)
    assert collapse(s for s, _, _ in txn_states(view, "ak-src")) == [
        "Empty", "Ongoing", "PrepareCommit", "CompleteCommit", "Ongoing", "PrepareAbort",
        "CompleteAbort", "Ongoing", "PrepareCommit", "CompleteCommit"]
    assert_no_errors(proc.log_dir, COORDINATOR_SEQUENCE_FINDINGS)


JS_DIR = Path(__file__).parent / "js"


def test_kafkajs_transactions_and_consume_transform_produce(serve: Serve) -> None:
    node = shutil.which("node")
    if node is None or not (JS_DIR / "node_modules" / "kafkajs").is_dir():
        pytest.skip("needs Node.js and kafkajs (npm ci --prefix tests/broker/js)")
    proc = serve("--partitions", "2", *FAST)
    run = subprocess.run([node, str(JS_DIR / "transactions.js"), proc.bootstrap],
                         capture_output=True, timeout=60)
    assert run.returncode == 0, (run.stderr.decode(), proc.stderr())
    result = json.loads(run.stdout)
    received: Received = defaultdict(list)
    for r in result["received"]:
        received[(r["topic"], r["partition"])].append((r["offset"], r["value"].encode()))
    assert sorted(v for got in received.values() for _, v in got) == sorted(
        v.encode() for v in result["expected"])
    assert result["transactions"] >= 2
    assert {int(p): o for p, o in result["committed"].items()} == {
        p: max(o for o, _ in received[("kj-in", p)]) + 1 for p in (0, 1)}
    assert proc.stop() == 0, proc.stderr()
    view = check_log_dir(proc.log_dir)
    assert_replay_matches(proc.log_dir, received)
    out = [v for p in (0, 1) for _, v in replay_visible(proc.log_dir, "kj-out", p)]
    assert sorted(out) == sorted(v.upper().encode() for v in result["expected"])
    assert collapse(s for s, _, _ in txn_states(view, "kj-src"))[-3:] == [
        "Ongoing", "PrepareCommit", "CompleteCommit"]
    assert_no_errors(proc.log_dir, COORDINATOR_SEQUENCE_FINDINGS)


def test_kafka_python_admin_transactions_groups_and_hanging_abort(serve: Serve) -> None:
    """What ``kafka-transactions.sh`` and ``kafka-consumer-groups.sh`` ask (ListTransactions,
    DescribeTransactions, DescribeProducers, WriteTxnMarkers as the admin abort of a hanging
    transaction, ListGroups, DescribeGroups, OffsetFetch), through kafka-python's admin."""
    kafka = pytest.importorskip("kafka")
    from kafka.admin import KafkaAdminClient
    from kafka.admin._transactions import AbortTransactionSpec

    proc = serve(*FAST)
    producer = start_open_txn_producer(proc.bootstrap, 60_000, "kp-adm", "adm", 1, 2)
    consumer = kafka.KafkaConsumer("adm", bootstrap_servers=proc.bootstrap,
                                   group_id="adm-group", auto_offset_reset="earliest",
                                   enable_auto_commit=False, session_timeout_ms=6000,
                                   heartbeat_interval_ms=500)
    admin = KafkaAdminClient(bootstrap_servers=proc.bootstrap)
    tp = kafka.TopicPartition("adm", 0)
    try:
        commit_when_assigned(consumer, {tp: kafka.OffsetAndMetadata(1, "note", -1)})
        ((listing,),) = admin.list_transactions().values()
        assert (listing.transactional_id, listing.state.value) == ("kp-adm", "Ongoing")
        described = admin.describe_transactions(["kp-adm"])["kp-adm"]
        assert (described.state.value, described.producer_id, described.producer_epoch,
                described.transaction_timeout_ms, described.topic_partitions) == (
            "Ongoing", listing.producer_id, 0, 60_000, {tp})
        assert described.transaction_start_time_ms > 0
        (active,) = admin.describe_producers([tp])[tp].active_producers
        assert (active.producer_id, active.current_transaction_start_offset) == (
            listing.producer_id, 2)
        assert admin.list_groups() == [{"group_id": "adm-group", "protocol_type": "consumer",
                                        "group_state": "Stable"}]
        group = admin.describe_groups(["adm-group"])["adm-group"]
        assert (group["group_state"], group["protocol_data"], len(group["members"])) == (
            "Stable", "range", 1)
        offsets = admin.list_group_offsets({"adm-group": None})["adm-group"]
        assert (offsets[tp].offset, offsets[tp].metadata) == (1, "note")
        # The hanging transaction, aborted as kafka-transactions.sh abort does.
        admin.abort_transaction(AbortTransactionSpec(tp, active.producer_id,
                                                     active.producer_epoch,
                                                     active.coordinator_epoch))
        (after,) = admin.describe_producers([tp])[tp].active_producers
        assert after.current_transaction_start_offset == -1
        assert _live_offsets(proc.port, "adm") == (5, 5)
    finally:
        admin.close()
        consumer.close()
        kill(producer)
    assert proc.stop() == 0, proc.stderr()
    view = check_log_dir(proc.log_dir)
    assert control_batches(view, "adm-0") == [("COMMIT", listing.producer_id, 0),
                                              ("ABORT", listing.producer_id, 0)]
    assert replay_visible(proc.log_dir, "adm", 0) == [(0, b"committed-0")]
    assert_no_errors(proc.log_dir)
