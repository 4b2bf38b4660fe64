"""SIGKILL at a random moment loses nothing acknowledged with acks=all.

librdkafka (confluent-kafka) produces as fast as it can, idempotent and acks=all, and in a
second test commits small transactions; the server is killed with SIGKILL at a random moment
(the seed is in the test id, so a failure replays), restarted on the same log dir, and the
next round goes on. At the end every record whose delivery was acknowledged is in the log at
the offset the broker answered, once, and every transaction whose commit returned is visible to
read_committed (``kafkatx replay``), no aborted one is, and one the kill interrupted is all or
nothing; ``kafkatx verify`` finds nothing wrong with the log dir a killed broker recovered, and
a start after a clean shutdown loads it in under 2 s.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import confluent_kafka as ck
import pytest

from tests.broker.kafkatx_cli import replay_visible, verify
from tests.broker.serve_process import ServeProcess

Serve = Callable[..., ServeProcess]
ROUNDS = 3
KILL_ROUNDS = 6
SEGMENT = ("--segment-bytes", "65536", "--transaction-abort-interval-ms", "200")


def _wait_for(progress: Callable[[], int], at_least: int, timeout_s: float = 20.0) -> None:
    """Wait until ``progress()`` reaches ``at_least`` (the kill must come after some progress,
    however slow the machine is)."""
    deadline = time.monotonic() + timeout_s
    while progress() < at_least and time.monotonic() < deadline:
        time.sleep(0.02)


def _kill(proc: ServeProcess) -> None:
    assert proc.proc is not None
    proc.proc.kill()  # SIGKILL: no snapshot, no checkpoint, no index trimming
    proc.proc.wait(10)


def _produce_until(producer: ck.Producer, stop: threading.Event, round_no: int,
                   delivered: Callable[[object, object], None]) -> None:
    i = 0
    while not stop.is_set():
        try:
            producer.produce("durable", value=b"r%d-%d" % (round_no, i), partition=0,
                             on_delivery=delivered)
            i += 1
        except BufferError:
            pass
        producer.poll(0.0005)  # a few thousand records a round keep the checks quick


@dataclass
class _Ledger:
    """What the transactional producer knows of each transaction's outcome."""

    committed: list[bytes] = field(default_factory=list)
    aborted: list[bytes] = field(default_factory=list)
    in_doubt: list[list[bytes]] = field(default_factory=list)  # the kill came mid-transaction


def _transact_until(producer: ck.Producer, stop: threading.Event, round_no: int,
                    ledger: _Ledger) -> None:
    n = 0
    while not stop.is_set():
        values = [b"t%d-%d-%d" % (round_no, n, k) for k in range(3)]
        abort = n % 3 == 1
        try:
            producer.begin_transaction()
            for value in values:
                producer.produce("ledger", value=value, partition=0)
            if abort:
                producer.abort_transaction(3)
            else:
                producer.commit_transaction(3)
        except ck.KafkaException:
            ledger.in_doubt.append(values)
            return  # the broker is gone
        (ledger.aborted if abort else ledger.committed).extend(values)
        n += 1


@pytest.mark.parametrize("seed", [20261122])
def test_acknowledged_records_survive_sigkill(serve: Serve, tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    log_dir = tmp_path / "logdir"
    acked: dict[int, bytes] = {}  # offset -> value the broker acknowledged
    lock = threading.Lock()

    def delivered(err: object, msg: object) -> None:
        if err is None:
            with lock:
                assert msg.offset() not in acked  # type: ignore[attr-defined]
                acked[msg.offset()] = msg.value()  # type: ignore[attr-defined]

    for round_no in range(ROUNDS):
        proc = serve(*SEGMENT, log_dir=log_dir)
        producer = ck.Producer({"bootstrap.servers": proc.bootstrap, "enable.idempotence": True,
                                "acks": "all", "linger.ms": 2, "message.timeout.ms": 2000,
                                "reconnect.backoff.max.ms": 100, "log_level": 0,
                                "queue.buffering.max.messages": 20000})
        stop = threading.Event()
        worker = threading.Thread(target=_produce_until,
                                  args=(producer, stop, round_no, delivered))
        worker.start()
        start = len(acked)
        _wait_for(lambda: len(acked), start + 1)
        time.sleep(rng.uniform(0.3, 1.2))
        with lock:
            before = len(acked)
        _kill(proc)
        stop.set()
        worker.join()
        producer.flush(5)  # what was acknowledged before the kill still reaches the callback
        assert len(acked) >= before > start
    final = serve(log_dir=log_dir)
    assert final.stop() == 0, final.stderr()
    stored = dict(replay_visible(log_dir, "durable", 0, "read_uncommitted"))
    missing = {o: v for o, v in acked.items() if stored.get(o) != v}
    assert missing == {}, f"{len(missing)} acknowledged records lost, e.g. {list(missing)[:5]}"
    assert len(set(stored.values())) == len(stored)  # nothing written twice
    doc = verify(log_dir)
    assert doc["ok"], doc["findings"]


@pytest.mark.parametrize("seed", [7])
def test_transactions_survive_sigkill_and_clean_restarts_are_fast(serve: Serve, tmp_path: Path,
                                                                  seed: int) -> None:
    """The soak: librdkafka commits (and aborts every third) transaction while the broker is
    SIGKILLed at random moments and restarted on the same log dir (``LogLoader#recoverLog``
    from the recovery point). Every committed record is visible to read_committed once, no
    aborted one is, a transaction the kill interrupted is all or nothing; afterwards every
    start after a clean shutdown loads in under 2 s (``LogLoader`` trusts the snapshots: its
    own ``loaded N partitions in X s`` line; the interpreter's start-up is not counted)."""
    rng = random.Random(seed)
    log_dir = tmp_path / "logdir"
    ledger = _Ledger()
    for round_no in range(KILL_ROUNDS):
        proc = serve(*SEGMENT, log_dir=log_dir)
        producer = ck.Producer({"bootstrap.servers": proc.bootstrap, "acks": "all",
                                "transactional.id": "durable-writer", "linger.ms": 1,
                                "transaction.timeout.ms": 10000, "message.timeout.ms": 2000,
                                "socket.timeout.ms": 1000, "log_level": 0})
        producer.init_transactions(10)  # aborts what a killed round left open
        stop = threading.Event()
        worker = threading.Thread(target=_transact_until,
                                  args=(producer, stop, round_no, ledger))
        worker.start()
        start = len(ledger.committed)
        _wait_for(lambda: len(ledger.committed), start + 1)
        time.sleep(rng.uniform(0.3, 1.2))
        before = len(ledger.committed)
        _kill(proc)
        stop.set()
        worker.join(20)
        assert not worker.is_alive() and before > start
    final = serve(log_dir=log_dir)
    producer = ck.Producer({"bootstrap.servers": final.bootstrap,
                            "transactional.id": "durable-writer", "log_level": 0})
    producer.init_transactions(10)  # fences and aborts the last round's open transaction
    assert final.stop() == 0, final.stderr()
    for _ in range(3):
        again = serve(log_dir=log_dir)
        assert again.stop() == 0, again.stderr()
        load_s = _load_seconds(again.stderr(), "after a clean shutdown")
        assert load_s < 2.0, again.stderr()
    visible = [v for _, v in replay_visible(log_dir, "ledger", 0)]
    assert len(visible) == len(set(visible))
    assert set(ledger.committed) <= set(visible)
    assert not set(ledger.aborted) & set(visible)
    for values in ledger.in_doubt:
        assert len(set(values) & set(visible)) in (0, len(values)), values
    assert ledger.aborted and ledger.in_doubt
    doc = verify(log_dir)
    assert doc["ok"], doc["findings"]


def _load_seconds(stderr: str, how: str) -> float:
    """The broker's own start-up time from its last ``loaded N partitions in X s`` line."""
    found = re.findall(r"loaded \d+ partitions in ([0-9.]+) s (.*)", stderr)
    assert found, stderr
    seconds, said = found[-1]
    assert said.startswith(how), said
    return float(seconds)
