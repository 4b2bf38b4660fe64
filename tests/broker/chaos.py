"""The chaos run of ``kafkatx serve --brokers 3`` (issue 25): real clients commit and abort
transactions across three partitions while the brokers leading the data partitions and the
transaction and group coordinators are killed (as after SIGKILL: ``kill-broker``), sometimes
after being cut off from their followers first, and started again.

What each client knows is written down as it happens (:class:`Ledger`); :func:`check` then
holds the cluster to Kafka's contracts: a transaction whose commit was confirmed is visible
whole, one the client aborted (or never asked to commit) is never visible, not even for a
moment to a live read_committed consumer, and one whose end the client never learned is all
or nothing; an offset commit the group coordinator confirmed is never lost (the live consumer
never receives a record below an offset it committed, and the group's committed offsets end at
or after the last confirmed one).
"""

from __future__ import annotations

import gc
import random
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import confluent_kafka as ck
from confluent_kafka.admin import AdminClient, NewTopic

from kafkatx.formats.internal_topics import GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC
from kafkatx.semantics.coordinator_partition import partition_for
from kafkatx.testing import BrokerError, KafkaBroker
from tests.broker.chaos_diagnosis import explain
from tests.broker.test_cluster import partition_states

TOPIC = "chaos"
PARTITIONS = 3
GROUP = "chaos-readers"
NODES = (1, 2, 3)
CLIENT_TIMEOUTS = {"socket.timeout.ms": 5000, "reconnect.backoff.ms": 20,
                   "reconnect.backoff.max.ms": 200, "retry.backoff.ms": 50,
                   "topic.metadata.refresh.interval.ms": 1000, "log_level": 0}


@dataclass
class Transaction:
    values: list[bytes]
    outcome: str = "open"  # committed | aborted | unknown (the client never learned the end)


@dataclass
class Ledger:
    """What the writers and the live reader know, shared between their threads."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    transactions: list[Transaction] = field(default_factory=list)
    received: list[tuple[int, int, bytes]] = field(default_factory=list)  # live reader
    confirmed_offsets: dict[int, int] = field(default_factory=dict)  # last confirmed commit
    violations: list[str] = field(default_factory=list)
    ended: int = 0

    def end(self, txn: Transaction, outcome: str) -> None:
        with self.lock:
            txn.outcome = outcome
            self.ended += 1

    def by_outcome(self, outcome: str) -> list[Transaction]:
        return [t for t in self.transactions if t.outcome == outcome]


def create_topic(bootstrap: str) -> None:
    """The chaos topic: replication factor 3, ``min.insync.replicas`` 2."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    try:
        for future in admin.create_topics([NewTopic(
                TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"})]).values():
            future.result(30)
    finally:
        del admin  # destroyed now, even when the creation fails


def live_clients() -> int:
    """The librdkafka handles (producers, admin clients, consumers) alive in this process:
    one left alive keeps reconnecting to brokers long gone for the rest of the test run."""
    gc.collect()
    return sum(isinstance(o, ck.Producer | ck.Consumer | AdminClient) for o in gc.get_objects())


def _error(exc: ck.KafkaException) -> Any:
    return exc.args[0]


def _retry(action: Callable[[], Any], stop_at: float) -> None:
    """``action`` until it succeeds, retrying what the client calls retriable."""
    while True:
        try:
            action()
            return
        except ck.KafkaException as exc:
            if not _error(exc).retriable() or time.monotonic() > stop_at:
                raise


class Writer(threading.Thread):
    """A transactional producer: one record per partition a transaction, committed or (one in
    three) aborted; a fatal error or an end it could not learn makes a new producer with the
    same transactional id (``init_transactions`` fences the old one and ends its
    transaction)."""

    def __init__(self, bootstrap: str, name: str, ledger: Ledger, rng: random.Random,
                 stop: threading.Event) -> None:
        super().__init__(daemon=True, name=name)
        self.bootstrap = bootstrap
        self.transactional_id = name
        self.ledger = ledger
        self.rng = rng
        self.stop = stop
        self.failure: str | None = None

    def _producer(self) -> ck.Producer:
        producer = ck.Producer({"bootstrap.servers": self.bootstrap, "acks": "all",
                                "transactional.id": self.transactional_id,
                                "transaction.timeout.ms": 15000, "message.timeout.ms": 15000,
                                "linger.ms": 1, **CLIENT_TIMEOUTS})
        try:
            _retry(lambda: producer.init_transactions(10), time.monotonic() + 120)
        except BaseException:
            del producer  # destroyed now, not kept by the traceback's frame
            raise
        return producer

    def run(self) -> None:
        producer: ck.Producer | None = None
        try:
            producer = self._producer()
            n = 0
            while not self.stop.is_set():
                txn = Transaction([f"{self.transactional_id}-{n}-{p}".encode()
                                   for p in range(PARTITIONS)])
                with self.ledger.lock:
                    self.ledger.transactions.append(txn)
                if not self._transact(producer, txn, commit=self.rng.random() >= 1 / 3):
                    producer = None  # destroyed: the next one's init_transactions fences it
                    producer = self._producer()
                n += 1
        except BaseException:  # reported by the test, with the seed (as text: a traceback
            self.failure = traceback.format_exc()  # would keep this thread's clients alive)
        finally:
            if producer is not None and self.failure is None:
                producer.close()  # no transaction open: nothing to abort, nothing to flush
            producer = None

    def _transact(self, producer: ck.Producer, txn: Transaction, *, commit: bool) -> bool:
        """One transaction; False when the producer must be replaced."""
        asked_commit = False
        try:
            producer.begin_transaction()
            for p, value in enumerate(txn.values):
                producer.produce(TOPIC, value=value, partition=p)
            stop_at = time.monotonic() + 60
            if commit:
                asked_commit = True
                try:
                    _retry(lambda: producer.commit_transaction(10), stop_at)
                    self.ledger.end(txn, "committed")
                    return True
                except ck.KafkaException as exc:
                    if not _error(exc).txn_requires_abort():
                        raise
            _retry(lambda: producer.abort_transaction(10), stop_at)
            self.ledger.end(txn, "aborted")  # a confirmed abort: never committed
            return True
        except ck.KafkaException:
            self.ledger.end(txn, "unknown" if asked_commit else "aborted")
            return False


class Reader(threading.Thread):
    """A read_committed consumer of the group ``GROUP`` committing its position after each
    record (synchronously): what it receives and which commits were confirmed."""

    def __init__(self, bootstrap: str, ledger: Ledger, stop: threading.Event) -> None:
        super().__init__(daemon=True, name="reader")
        self.bootstrap = bootstrap
        self.ledger = ledger
        self.stop = stop
        self.failure: str | None = None

    def run(self) -> None:
        try:
            consumer = ck.Consumer({"bootstrap.servers": self.bootstrap, "group.id": GROUP,
                                    "isolation.level": "read_committed",
                                    "auto.offset.reset": "earliest",
                                    "enable.auto.commit": False, "session.timeout.ms": 6000,
                                    **CLIENT_TIMEOUTS})
            try:
                consumer.subscribe([TOPIC])
                while not self.stop.is_set():
                    self._poll(consumer)
            finally:
                consumer.close()
        except BaseException:
            self.failure = traceback.format_exc()

    def _poll(self, consumer: ck.Consumer) -> None:
        message = consumer.poll(0.2)
        if message is None or message.error():
            return
        p, offset = message.partition(), message.offset()
        with self.ledger.lock:
            self.ledger.received.append((p, offset, message.value()))
            confirmed = self.ledger.confirmed_offsets.get(p, -1)
            if offset < confirmed:
                self.ledger.violations.append(
                    f"the reader received {TOPIC}-{p} offset {offset} after its commit of "
                    f"offset {confirmed} was confirmed: the group coordinator lost it")
        try:
            answer = consumer.commit(message=message, asynchronous=False)
        except ck.KafkaException:
            return  # not confirmed: the next record's commit covers it
        with self.ledger.lock:
            for tp in answer or ():
                if tp.error is None and tp.offset >= 0:
                    self.ledger.confirmed_offsets[tp.partition] = max(
                        tp.offset, self.ledger.confirmed_offsets.get(tp.partition, -1))


def leader(cluster: KafkaBroker, topic: str, partition: int, down: set[int]) -> int:
    for node, port in zip(NODES, cluster.ports, strict=True):
        if node not in down:
            try:
                return int(partition_states(port, topic)[partition].leader_id)
            except OSError:
                continue
    return -1


def in_all_isrs(cluster: KafkaBroker, node: int, partitions: list[tuple[str, int]]) -> bool:
    port = cluster.ports[node - 1]
    try:
        for topic in {t for t, _ in partitions}:
            states = partition_states(port, topic)
            if any(node not in states[p].isr_nodes or states[p].leader_id < 0
                   for t, p in partitions if t == topic):
                return False
    except OSError:
        return False
    return True


@dataclass
class Chaos:
    """The faults: each round picks a victim among the brokers leading a data partition, a
    writer's transaction coordinator or the group coordinator, kills it (a third of the
    time after cutting it off from both followers for up to 1.5 s, so its writes wait for an
    ISR that never answers), waits up to half a second and starts it again, then waits for it
    to be back in the ISR of the partitions that matter before the next round."""

    cluster: KafkaBroker
    rng: random.Random
    writer_ids: list[str]
    kills: int = 0
    cut_offs: int = 0
    log: list[str] = field(default_factory=list)

    def watched(self) -> list[tuple[str, int]]:
        return ([(TOPIC, p) for p in range(PARTITIONS)]
                + [(TRANSACTION_STATE_TOPIC, partition_for(t)) for t in self.writer_ids]
                + [(GROUP_METADATA_TOPIC, partition_for(GROUP))])

    def victim(self) -> int:
        kind = self.rng.choice(["data", "transaction", "group"])
        if kind == "data":
            topic, p = TOPIC, self.rng.randrange(PARTITIONS)
        elif kind == "transaction":
            topic, p = TRANSACTION_STATE_TOPIC, partition_for(self.rng.choice(self.writer_ids))
        else:
            topic, p = GROUP_METADATA_TOPIC, partition_for(GROUP)
        node = leader(self.cluster, topic, p, set())
        return node if node in NODES else self.rng.choice(NODES)

    def round(self) -> None:
        node = self.victim()
        if self.rng.random() < 1 / 3:
            for other in NODES:
                if other != node:
                    self.cluster.cut_replication(node, other)
            self.cut_offs += 1
            time.sleep(self.rng.uniform(0.0, 1.5))
        self.cluster.kill_broker(node)
        self.kills += 1
        self.cluster.clear_faults()
        time.sleep(self.rng.uniform(0.0, 0.5))
        for attempt in range(50):
            try:
                self.cluster.start_broker(node)
                break
            except BrokerError:
                if attempt == 49:
                    raise
                time.sleep(0.1)
        deadline = time.monotonic() + 20
        while not in_all_isrs(self.cluster, node, self.watched()):
            if time.monotonic() > deadline:
                self.log.append(f"kill {self.kills}: broker {node} not back in every ISR "
                                "within 20 s")
                break
            time.sleep(0.05)


def read_all_committed(bootstrap: str, timeout_s: float = 60.0) -> list[tuple[int, int, bytes]]:
    """A new read_committed consumer from the start of every partition to its log end (once
    no transaction is open there: the end of a read_committed fetch is the LSO)."""
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "chaos-final",
                            "isolation.level": "read_committed", "enable.auto.commit": False,
                            "enable.partition.eof": True, **CLIENT_TIMEOUTS})
    consumer.assign([ck.TopicPartition(TOPIC, p, ck.OFFSET_BEGINNING)
                     for p in range(PARTITIONS)])
    got: list[tuple[int, int, bytes]] = []
    at_end: set[int] = set()
    deadline = time.monotonic() + timeout_s
    try:
        while len(at_end) < PARTITIONS:
            if time.monotonic() > deadline:
                raise AssertionError(f"the read_committed consumer did not reach the log end "
                                     f"of partitions {set(range(PARTITIONS)) - at_end}")
            message = consumer.poll(0.2)
            if message is None:
                continue
            p = message.partition()
            if message.error():
                if message.error().code() == ck.KafkaError._PARTITION_EOF:
                    _, high = consumer.get_watermark_offsets(
                        ck.TopicPartition(TOPIC, p), timeout=5, cached=False)
                    if message.offset() >= high:
                        at_end.add(p)
                continue
            at_end.discard(p)
            got.append((p, message.offset(), message.value()))
    finally:
        consumer.close()
    return got


def check(ledger: Ledger, final: list[tuple[int, int, bytes]],
          committed_offsets: dict[int, int]) -> list[str]:
    """Every broken contract, one line each (empty: none)."""
    problems = list(ledger.violations)
    visible = [v for _, _, v in final]
    if len(visible) != len(set(visible)):
        problems.append("a record is visible twice")
    seen = set(visible)
    live = {v for _, _, v in ledger.received}
    for txn in ledger.transactions:
        shown = [v in seen for v in txn.values]
        name = txn.values[0].decode().rsplit("-", 1)[0]
        if txn.outcome == "committed" and not all(shown):
            problems.append(f"{name}: committed, but {shown.count(False)} of its records are "
                            "not visible")
        elif txn.outcome == "aborted" and (any(shown) or live & set(txn.values)):
            problems.append(f"{name}: aborted, but records of it were visible")
        elif txn.outcome == "unknown" and any(shown) and not all(shown):
            problems.append(f"{name}: partially visible ({shown})")
        elif txn.outcome == "open" and any(shown) and not all(shown):
            problems.append(f"{name}: open at the end, partially visible ({shown})")
    for p, offset in ledger.confirmed_offsets.items():
        if committed_offsets.get(p, -1) < offset:
            problems.append(f"the group's committed offset of {TOPIC}-{p} is "
                            f"{committed_offsets.get(p)}, below the confirmed {offset}")
    return problems


def committed_offsets(bootstrap: str) -> dict[int, int]:
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                            "enable.auto.commit": False, **CLIENT_TIMEOUTS})
    try:
        answer = consumer.committed([ck.TopicPartition(TOPIC, p) for p in range(PARTITIONS)],
                                    timeout=30)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in answer}


def diagnose(cluster: KafkaBroker, ledger: Ledger, problems: list[str]) -> list[str]:
    """For each transaction a problem names: its outcome as the client knew it, each broker's
    copy of its records and markers, and what the serve log says about its id."""
    lines: list[str] = []
    log = cluster.serve_log()
    for txn in ledger.transactions:
        name = txn.values[0].decode().rsplit("-", 1)[0]
        if any(problem.startswith(f"{name}:") for problem in problems):
            lines.append(f"{name} ({txn.outcome}):")
            lines += explain(cluster.log_dir, TOPIC, NODES, log, name.rsplit("-", 1)[0],
                             txn.values)
    return lines
