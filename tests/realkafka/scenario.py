"""Differential scenarios: the same questions asked of a live Kafka node and of kafkatx on a copy.

``kafka_answers`` asks Kafka (the LSO by ListOffsets READ_COMMITTED, open transactions by
``kafka-transactions.sh describe-producers``, hanging ones by ``find-hanging``, what a
read_committed Java consumer receives, each transactional id's coordinator state by
``describe``); ``kafkatx_answers`` asks kafkatx's CLI, run as a user runs it (``inspect --format
json``, ``replay --format jsonl``, ``timeline --format jsonl``), on a copy of the log dir. Both
return an ``Answers`` of the same shape, so a scenario is: drive the clients, inject the fault,
``snapshot`` (Kafka's answers, the copy, Kafka's answers again: nothing moved while copying), and
``assert_same``. Faults that need more than a client: ``python_producer`` (a confluent-kafka or
kafka-python producer in a process to SIGKILL), ``stray_transactional_batch`` (a transactional
batch for a partition never added to the transaction), ``set_broker_config``.
"""

from __future__ import annotations

import glob
import json
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .node import KafkaNode
from .tools import JavaClient, KafkaTools, ToolResult

TP = str  # "topic-partition"
Consumed = list[tuple[int, str | None]]  # (offset, value) of each record a consumer received
# a transactional id's coordinator state: (state, producer id, epoch, its partitions if Ongoing)
Coordinated = tuple[str, int, int, tuple[TP, ...]]
PREPARED = ("PrepareCommit", "PrepareAbort", "PrepareEpochFence")
HANGING_KINDS = ("hanging_transaction", "lso_pinned")
FIND_HANGING_MINUTES = 1  # find-hanging's smallest --max-transaction-timeout
KAFKATX_TIMEOUT_S = 120.0
ROOT = Path(__file__).resolve().parents[2]


def tp(topic: str, partition: int) -> TP:
    return f"{topic}-{partition}"


def split_tp(name: TP) -> tuple[str, int]:
    topic, _, partition = name.rpartition("-")
    return topic, int(partition)


@dataclass
class Answers:
    """One side's answers for some partitions, keyed ``topic-partition``."""

    lso: dict[TP, int] = field(default_factory=dict)
    open: dict[TP, dict[int, int]] = field(default_factory=dict)  # producer id -> txn start
    hanging: set[tuple[TP, int, int]] = field(default_factory=set)  # (tp, producer id, start)
    records: dict[TP, Consumed] = field(default_factory=dict)
    transactions: dict[str, Coordinated] = field(default_factory=dict)

    def differences(self, other: Answers) -> list[str]:
        out = []
        for name in ("lso", "open", "hanging", "records", "transactions"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine != theirs:
                out.append(f"{name}: Kafka {mine!r}\n{' ' * len(name)}  kafkatx {theirs!r}")
        return out


def assert_same(kafka: Answers, kafkatx: Answers, what: str) -> None:
    diffs = kafka.differences(kafkatx)
    assert not diffs, f"{what}: kafkatx differs from Kafka\n" + "\n".join(diffs)


def wait_until(condition: Callable[[], Any], timeout_s: float, what: str,
               interval_s: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(interval_s)


# --------------------------------------------------------------------------------------------
# Kafka's answers


def admin(bootstrap: str) -> Any:
    """A new confluent-kafka AdminClient of ``bootstrap``: hold it while its futures are waited
    for (they die with it), and let it go after (a kept one reconnects to a stopped node for the
    rest of the run)."""
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap})


def list_offsets(bootstrap: str, partitions: Iterable[TP], *, earliest: bool = False
                 ) -> dict[TP, int]:
    """ListOffsets with IsolationLevel.READ_COMMITTED: LATEST is the broker's LSO, EARLIEST
    its log start offset. A fresh client each time (a restarted node has new leader epochs),
    asked again while the node answers with a retriable error (a leader being elected)."""
    from confluent_kafka import IsolationLevel, KafkaError, KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient, OffsetSpec

    again = {KafkaError.FENCED_LEADER_EPOCH, KafkaError.NOT_LEADER_FOR_PARTITION,
             KafkaError.LEADER_NOT_AVAILABLE, KafkaError.UNKNOWN_TOPIC_OR_PART}

    spec = OffsetSpec.earliest() if earliest else OffsetSpec.latest()
    wanted = {TopicPartition(*split_tp(name)): spec for name in partitions}
    deadline = time.monotonic() + 30
    while True:
        client = AdminClient({"bootstrap.servers": bootstrap})
        futures = client.list_offsets(wanted, isolation_level=IsolationLevel.READ_COMMITTED,
                                      request_timeout=30)
        try:
            return {tp(k.topic, k.partition): f.result(60).offset for k, f in futures.items()}
        except KafkaException as exc:
            error = exc.args[0]
            if not (error.retriable() or error.code() in again) or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def read_committed_lso(bootstrap: str, partitions: Iterable[TP]) -> dict[TP, int]:
    return list_offsets(bootstrap, partitions)


def consume_read_committed(consumer: JavaClient, name: TP, lso: int) -> Consumed:
    """What a read_committed Java consumer receives from the log start up to the LSO."""
    topic, partition = split_tp(name)
    consumer.assign(topic, partition)
    consumer.seek(topic, partition, 0)  # below the log start: reset to the earliest
    got: Consumed = []
    deadline = time.monotonic() + 30
    while consumer.position(topic, partition) < lso:
        if time.monotonic() > deadline:
            raise AssertionError(f"the read_committed consumer of {name} did not reach {lso}")
        got += [(r.offset, None if r.value is None else r.value.decode())
                for r in consumer.poll(200)]
    return got


def described(tools: KafkaTools, bootstrap: str, transactional_ids: Iterable[str]
              ) -> dict[str, Coordinated]:
    """``kafka-transactions.sh describe`` of each id, once no transaction is between its
    Prepare* and Complete* records (its markers are being written: a moment)."""
    def ask() -> dict[str, Coordinated] | None:
        out = {}
        for tid in sorted(transactional_ids):
            row = tools.describe_transaction(bootstrap, tid)
            if row["TransactionState"] in PREPARED:
                return None
            partitions = tuple(sorted(p for p in row["TopicPartitions"].split(",") if p))
            out[tid] = (row["TransactionState"], int(row["ProducerId"]),
                        int(row["ProducerEpoch"]),
                        partitions if row["TransactionState"] == "Ongoing" else ())
        return out

    return wait_until(ask, 30, "every transaction past its Prepare* state") if \
        transactional_ids else {}


def kafka_answers(node: KafkaNode, tools: KafkaTools, consumer: JavaClient,
                  partitions: Iterable[TP], *, records: bool = True,
                  transactional_ids: Iterable[str] = ()) -> Answers:
    """Kafka's own answers for ``partitions`` and ``transactional_ids`` from the live node."""
    names = sorted(partitions)
    out = Answers(lso=read_committed_lso(node.bootstrap, names),
                  transactions=described(tools, node.bootstrap, list(transactional_ids)))
    for name in names:
        rows = tools.describe_producers(node.bootstrap, *split_tp(name))
        out.open[name] = {int(r["ProducerId"]): int(r["CurrentTransactionStartOffset"])
                          for r in rows if r["CurrentTransactionStartOffset"] != "None"}
    minutes = FIND_HANGING_MINUTES * 60_000
    for row in tools.find_hanging(node.bootstrap, node.node_id, minutes):
        name = tp(row["Topic"], int(row["Partition"]))
        if name in out.open:
            out.hanging.add((name, int(row["ProducerId"]), int(row["StartOffset"])))
    if records:
        out.records = {name: consume_read_committed(consumer, name, out.lso[name])
                       for name in names}
    return out


# --------------------------------------------------------------------------------------------
# kafkatx's answers, from its command line on a copy


def kafkatx(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "kafkatx", *args], capture_output=True,
                          text=True, timeout=KAFKATX_TIMEOUT_S, check=False, cwd=ROOT)
    if check and done.returncode not in (0, 1):
        raise AssertionError(f"kafkatx {' '.join(args)} exited {done.returncode}:\n"
                             f"{done.stdout}\n{done.stderr}")
    return done


def kafkatx_json(*args: str) -> Any:
    return json.loads(kafkatx(*args, "--format", "json").stdout)


def kafkatx_replay(copy: Path, name: TP) -> Consumed:
    topic, partition = split_tp(name)
    lines = kafkatx("replay", str(copy), "--topic", topic, "--partition", str(partition),
                    "--format", "jsonl").stdout.splitlines()
    return [(r["offset"], r["value"]) for r in map(json.loads, lines) if r.get("visible", True)]


@dataclass
class KafkatxView:
    """kafkatx's answers and the JSON they came from (for a scenario's own assertions)."""

    answers: Answers
    inspect: dict[str, Any]

    def findings(self, kind: str, name: TP | None = None) -> list[dict[str, Any]]:
        return [f for f in self.inspect["findings"] if f["kind"] == kind
                and (name is None or tp(f["topic"], f["partition"]) == name)]


def kafkatx_transactions(copy: Path, transactional_ids: list[str]) -> dict[str, Coordinated]:
    """Each id's last coordinator state in ``kafkatx timeline`` (its newest row), with the
    row's partitions when Ongoing."""
    lines = kafkatx("timeline", str(copy), "--format", "jsonl").stdout.splitlines()
    rows = [r for r in map(json.loads, lines) if r.get("transactional_id") in transactional_ids
            and r.get("coordinator_states")]
    out: dict[str, Coordinated] = {}
    for tid in transactional_ids:
        mine = [r for r in rows if r["transactional_id"] == tid]
        if not mine:
            continue
        last = max(mine, key=lambda r: r["coordinator_states"][-1]["offset"])
        state = last["coordinator_states"][-1]
        partitions = tuple(sorted(tp(p["topic"], p["partition"]) for p in last["partitions"]))
        out[tid] = (state["state"], state["producer_id"], state["producer_epoch"],
                    partitions if state["state"] == "Ongoing" else ())
    return out


def kafkatx_answers(copy: Path, partitions: Iterable[TP], *extra: str,
                    records: bool = True, transactional_ids: Iterable[str] = ()
                    ) -> KafkatxView:
    """kafkatx's answers on ``copy`` for ``partitions`` and ``transactional_ids`` (``extra``:
    more ``inspect`` options); its commands run side by side, each a process of its own."""
    from concurrent.futures import ThreadPoolExecutor

    names = sorted(partitions)
    tids = sorted(transactional_ids)
    with ThreadPoolExecutor(4) as pool:
        replays = {name: pool.submit(kafkatx_replay, copy, name) for name in names
                   if records}
        coordinated = pool.submit(kafkatx_transactions, copy, tids) if tids else None
        report = kafkatx_json("inspect", *extra, str(copy))
        replayed = {name: future.result() for name, future in replays.items()}
    rows = {tp(r["topic"], r["partition"]): r for r in report["partitions"]}
    out = Answers()
    for name in names:
        row = rows[name]
        out.lso[name] = row["last_stable_offset"]
        out.open[name] = {t["producer_id"]: t["first_offset"] for t in row["open_transactions"]}
    for f in report["findings"]:
        name = tp(f["topic"], f["partition"]) if f["topic"] is not None else ""
        if f["kind"] in HANGING_KINDS and f["severity"] == "error" and name in names:
            out.hanging.add((name, f["producer_id"], f["offset"]))
    out.records = replayed
    out.transactions = coordinated.result() if coordinated is not None else {}
    return KafkatxView(out, report)


# --------------------------------------------------------------------------------------------
# Taking the evidence


@dataclass
class Snapshot:
    """A copy of a node's log dir and Kafka's answers at the moment it was taken."""

    copy: Path
    kafka: Answers


def snapshot(node: KafkaNode, tools: KafkaTools, consumer: JavaClient, partitions: Iterable[TP],
             dest: Path, transactional_ids: Iterable[str] = ()) -> Snapshot:
    """Kafka's answers, a live copy of the node's log dir, then the LSO and the coordinator's
    states again: they must not have moved (a marker or a state written meanwhile would make
    the comparison unfair)."""
    names, tids = sorted(partitions), sorted(transactional_ids)
    before = kafka_answers(node, tools, consumer, names, transactional_ids=tids)
    node.copy_log_dir(dest)
    after = read_committed_lso(node.bootstrap, names)
    assert after == before.lso, (f"the LSO moved while {dest.name} was copied: "
                                 f"{before.lso} -> {after}")
    moved = described(tools, node.bootstrap, tids)
    assert moved == before.transactions, (f"a transaction moved while {dest.name} was copied: "
                                          f"{before.transactions} -> {moved}")
    return Snapshot(dest, before)


# --------------------------------------------------------------------------------------------
# Faults


class OpenTransaction:
    """A client that commits a transaction, then leaves one open: ``prepare`` (start, commit
    the first ``commit_first`` values), ``open`` (begin, send the rest, flush; prepared clients
    open theirs together), ``kill`` (SIGKILL). ``offsets``: every value's offset."""

    offsets: list[int]

    def prepare(self) -> None:
        raise NotImplementedError

    def open(self) -> None:
        raise NotImplementedError

    def kill(self) -> None:
        raise NotImplementedError


class PythonProducer(OpenTransaction):
    """confluent-kafka or kafka-python, in ``python_producer.py``'s subprocess."""

    def __init__(self, client: str, bootstrap: str, transactional_id: str, name: TP,
                 values: list[str], timeout_ms: int, commit_first: int = 0) -> None:
        topic, partition = split_tp(name)
        self.args = [sys.executable, str(Path(__file__).with_name("python_producer.py")),
                     client, bootstrap, transactional_id, topic, str(partition), *values,
                     "--timeout-ms", str(timeout_ms), "--commit-first", str(commit_first)]
        self.proc: subprocess.Popen[str] | None = None
        self.offsets = []

    def _line(self, word: str) -> list[str]:
        assert self.proc is not None and self.proc.stdout is not None
        line = self.proc.stdout.readline().split()
        if not line or line[0] != word:
            self.kill()
            assert self.proc.stderr is not None
            raise AssertionError(f"python producer failed: {line} {self.proc.stderr.read()}")
        return line[1:]

    def prepare(self) -> None:
        self.proc = subprocess.Popen(self.args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self._line("initialized")

    def open(self) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        self.offsets = [int(x) for x in self._line("ready")]

    def kill(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()


class JavaProducer(OpenTransaction):
    """Kafka's Java producer (``JavaClient``); ``client`` is a fresh one from the factory."""

    def __init__(self, client: JavaClient, bootstrap: str, transactional_id: str, name: TP,
                 values: list[str], timeout_ms: int, commit_first: int = 0,
                 timestamp_ms: int | None = None) -> None:
        self.client, self.name, self.values = client, name, values
        self.commit_first, self.timestamp_ms = commit_first, timestamp_ms
        self.props = {"bootstrap_servers": bootstrap, "transactional_id": transactional_id,
                      "transaction_timeout_ms": timeout_ms}
        self.offsets = []

    def _send(self, values: list[str]) -> None:
        topic, partition = split_tp(self.name)
        self.client.begin()
        for value in values:
            self.client.send(topic, partition, None, value, self.timestamp_ms)
        self.offsets += self.client.flush()

    def prepare(self) -> None:
        self.client.producer(**self.props)
        self.client.init()
        if self.commit_first:
            self._send(self.values[:self.commit_first])
            self.client.commit()

    def open(self) -> None:
        self._send(self.values[self.commit_first:])

    def kill(self) -> None:
        self.client.kill()


def open_together(producers: Iterable[OpenTransaction]) -> None:
    """Prepare every producer, then open all their transactions at once (each in a thread:
    the transaction timeouts start together)."""
    from concurrent.futures import ThreadPoolExecutor

    todo = list(producers)
    with ThreadPoolExecutor(max(1, len(todo))) as pool:
        for step in ("prepare", "open"):
            for future in [pool.submit(getattr(p, step)) for p in todo]:
                future.result()


def set_broker_config(bootstrap: str, broker_id: int, name: str, value: str) -> None:
    """A dynamic broker config (``kafka-configs.sh --alter --entity-type brokers``)."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    resource = ConfigResource(ResourceType.BROKER, str(broker_id), incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)])
    client = admin(bootstrap)
    for future in client.incremental_alter_configs([resource]).values():
        future.result(30)


def produce_plain(bootstrap: str, name: TP, values: list[str]) -> list[int]:
    """Non-transactional records (confluent-kafka, acks=all); their offsets."""
    from confluent_kafka import Producer

    topic, partition = split_tp(name)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    offsets: list[int] = []
    for value in values:
        producer.produce(topic, value.encode(), partition=partition,
                         on_delivery=lambda err, msg: offsets.append(
                             -1 if err is not None else msg.offset()))
    assert producer.flush(30) == 0
    return offsets


def create_topic(bootstrap: str, topic: str, partitions: int = 1,
                 config: dict[str, str] | None = None) -> None:
    from confluent_kafka.admin import NewTopic

    new = NewTopic(topic, partitions, 1, config=config or {})
    client = admin(bootstrap)
    for future in client.create_topics([new], request_timeout=30).values():
        future.result(30)


def stray_transactional_batch(bootstrap: str, name: TP, transactional_id: str, producer_id: int,
                              producer_epoch: int, values: list[str], timestamp_ms: int,
                              base_sequence: int = 0) -> int:
    """A transactional batch of ``producer_id``/``producer_epoch`` for a partition that was
    never added to its transaction: a Produce v9 request (transactions v1 semantics: the
    client adds partitions itself), as a produce that outlived its transaction, or a client
    that skipped AddPartitionsToTxn, sends it. Kafka appends it unless
    ``transaction.partition.verification.enable`` (KIP-890 part 1) refuses it; no marker will
    ever close it. Returns the batch's base offset. Built and sent with kafkatx's own protocol
    code; Kafka's broker is the judge of it."""
    import asyncio
    import datetime

    from kio.schema.produce.v9 import request as produce

    from kafkatx.broker.replication.broker_client import BrokerConnection
    from kafkatx.broker.wire import codec
    from kafkatx.formats.record_batch import Record, build_batch

    records = [Record(offset=i, timestamp=timestamp_ms, key=None, value=v.encode())
               for i, v in enumerate(values)]
    batch = build_batch(records, base_offset=0, is_transactional=True, producer_id=producer_id,
                        producer_epoch=producer_epoch, base_sequence=base_sequence)
    topic, partition = split_tp(name)
    data = produce.TopicProduceData(name=topic, partition_data=(
        produce.PartitionProduceData(index=partition, records=batch),))
    request = codec.make(produce.ProduceRequest, transactional_id=transactional_id, acks=-1,
                            timeout=datetime.timedelta(seconds=30), topic_data=(data,))
    host, _, port = bootstrap.split(",")[0].rpartition(":")

    async def send() -> Any:
        conn = BrokerConnection(host, int(port), "stray-batch")
        try:
            return await conn.request(request, 30.0)
        finally:
            await conn.close()

    response = asyncio.run(send())
    answer = response.responses[0].partition_responses[0]
    assert int(answer.error_code) == 0, f"Kafka refused the stray batch: {answer}"
    return int(answer.base_offset)


# --------------------------------------------------------------------------------------------
# Remedies: what kafkatx prints, run with Kafka's own tools against the live node

BROKER_PLACEHOLDER = "<broker:9092>"
TRANSACTIONS_SH = f"kafka-transactions.sh --bootstrap-server {BROKER_PLACEHOLDER} "


@dataclass
class Remedy:
    """What running a printed remediation did: every Kafka tool run (its argument list and
    output), and the records each ``kafkatx dump ... > FILE`` exported, by file name."""

    tool_runs: list[tuple[list[str], ToolResult]] = field(default_factory=list)
    exported: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def run_of(self, subcommand: str) -> ToolResult:
        return next(result for args, result in self.tool_runs if args[0] == subcommand)


def remedy_commands(text: str) -> list[list[str]]:
    """The commands a finding's remediation line names, in order: ``kafkatx dump ... > FILE``
    (as ``["kafkatx", ..., ">", FILE]``) and every ``kafka-transactions.sh`` subcommand (as its
    arguments after the bootstrap server; ``find-hanging ..., and describe-producers ...``
    chains one prefix over two subcommands)."""
    out: list[list[str]] = []
    for part in re.split(r";\s+", text):
        dump = re.search(r"kafkatx dump .*", part)
        if dump:
            out.append(shlex.split(dump.group(0)))
            continue
        at = part.find(TRANSACTIONS_SH)
        if at < 0:
            continue
        for command in part[at + len(TRANSACTIONS_SH):].split(", and "):
            out.append(shlex.split(command))
    return out


def run_remedy(text: str, bootstrap: str, tools: KafkaTools, workdir: Path) -> Remedy:
    """Run ``text``'s commands as an operator would: ``kafkatx dump`` in ``workdir``, Kafka's
    ``TransactionsCommand`` against ``bootstrap``; each must succeed."""
    done = Remedy()
    workdir.mkdir(parents=True, exist_ok=True)
    for command in remedy_commands(text):
        if command[0] == "kafkatx":
            target = command[command.index(">") + 1]
            # a shell's pathname expansion of the export's PARTITION_DIR/*.log
            args = [match for arg in command[1:command.index(">")]
                    for match in (sorted(glob.glob(arg)) if "*" in arg else [arg])]
            result = kafkatx(*args)
            assert result.returncode == 0, result.stderr
            (workdir / target).write_text(result.stdout)
            done.exported[target] = [json.loads(line) for line in result.stdout.splitlines()]
        else:
            done.tool_runs.append((command, tools.transactions(bootstrap, *command).check()))
    assert done.tool_runs, f"no kafka-transactions.sh command in {text!r}"
    return done
