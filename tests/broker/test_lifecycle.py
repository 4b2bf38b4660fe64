"""SIGTERM at any moment of ``kafkatx serve``: while booting, while the log dir loads (and
recovers), right after ``listening on``, in the middle of requests. Every time the process
exits 0 within seconds and leaves a log dir the next start loads; a second signal forces the
exit. Kafka's broker stops the same way by its shutdown hook (``KafkaRaftServer#shutdown`` from
``Exit.addShutdownHook``) and ``LogManager#shutdown`` writes ``.kafka_cleanshutdown`` only when
every log was loaded or the previous shutdown was clean.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import confluent_kafka as ck
import pytest

from kafkatx.broker.config.broker_config import BrokerConfig
from kafkatx.broker.logdir.log_manager import LogManager
from kafkatx.broker.logs.log_values import LogConfig
from kafkatx.broker.logs.partition_log import PartitionLog
from kafkatx.formats.record_batch import Record, build_batch
from tests.broker.kafkatx_cli import verify

ROOT = Path(__file__).resolve().parents[2]
STOP_WITHIN_S = 10.0
BOOT_TIMEOUT_S = 60.0


@dataclass
class _Proc:
    """``kafkatx serve`` with its output lines timestamped as they arrive."""

    log_dir: Path
    popen: subprocess.Popen[bytes]
    lines: list[tuple[float, str]] = field(default_factory=list)
    port: int = 0
    readers: list[threading.Thread] = field(default_factory=list)

    @classmethod
    def spawn(cls, log_dir: Path, *args: str) -> _Proc:
        """Started with SIGTERM/SIGINT blocked, as a supervisor does so that a stop sent while
        the interpreter starts waits for kafkatx's handlers (which unblock them)."""
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
        try:
            popen = subprocess.Popen(
                [sys.executable, "-m", "kafkatx", "serve", "--host", "127.0.0.1", "--port", "0",
                 "--log-dir", str(log_dir), *args],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        proc = cls(log_dir, popen)
        for stream in (popen.stdout, popen.stderr):
            reader = threading.Thread(target=proc._read, args=(stream,), daemon=True)
            reader.start()
            proc.readers.append(reader)
        return proc

    def wait(self, timeout_s: float) -> int:
        """Wait for the exit, then for the last output; the pipes are closed."""
        rc = self.popen.wait(timeout_s)
        for reader in self.readers:
            reader.join(5)
        for stream in (self.popen.stdout, self.popen.stderr):
            if stream is not None:
                stream.close()
        return rc

    def _read(self, stream: object) -> None:
        for raw in iter(stream.readline, b""):  # type: ignore[attr-defined]
            line = raw.decode(errors="replace").rstrip()
            self.lines.append((time.monotonic(), line))
            if line.startswith("listening on "):
                self.port = int(line.rsplit(":", 1)[1])

    def wait_for(self, text: str, timeout_s: float = BOOT_TIMEOUT_S) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if any(text in line for _, line in self.lines):
                return True
            if self.popen.poll() is not None:
                return False
            time.sleep(0.005)
        return False

    def terminate(self) -> tuple[int, float]:
        """SIGTERM; (exit status, seconds until it exited)."""
        sent = time.monotonic()
        self.popen.send_signal(signal.SIGTERM)
        try:
            rc = self.wait(STOP_WITHIN_S)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            self.wait(5)
            raise AssertionError(f"no exit within {STOP_WITHIN_S} s of SIGTERM:\n"
                                 f"{self.output()}") from None
        return rc, time.monotonic() - sent

    def output(self) -> str:
        return "\n".join(line for _, line in self.lines)


def _transactions(bootstrap: str, count: int) -> None:
    producer = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": "lifecycle",
                            "linger.ms": 1, "log_level": 0})
    producer.init_transactions(30)
    for n in range(count):
        producer.begin_transaction()
        for k in range(4):
            producer.produce("ledger", value=b"%d-%d" % (n, k) * 20, partition=n % 2)
        producer.commit_transaction(30)


@pytest.fixture(scope="module")
def crashed_log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A log dir a killed broker left: transactional data in two partitions and
    ``__transaction_state``, in small segments, no clean-shutdown marker (every start of a copy
    recovers it)."""
    log_dir = tmp_path_factory.mktemp("lifecycle") / "template"
    proc = _Proc.spawn(log_dir, "--segment-bytes", "32768", "--partitions", "2")
    assert proc.wait_for("listening on "), proc.output()
    _transactions(f"127.0.0.1:{proc.port}", 600)
    proc.popen.kill()
    proc.wait(10)
    assert not (log_dir / ".kafka_cleanshutdown").exists()
    bulk = PartitionLog("bulk", 0, log_dir / "bulk-0",
                        LogConfig(segment_bytes=1 << 20, max_message_bytes=1 << 20))
    bulk.open()
    record = build_batch([Record(offset=0, timestamp=1_760_000_000_000, key=None,
                                 value=b"b" * 1000)])
    for _ in range(20_000):  # 20 MB in 1 KB batches: a start spends a while recovering them
        bulk.append_as_leader(record, 1_760_000_000_000)
    bulk.release()  # as a SIGKILL leaves it
    return log_dir


def _produce_until(bootstrap: str, stop: threading.Event) -> None:
    producer = ck.Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                            "linger.ms": 1, "message.timeout.ms": 3000, "log_level": 0})
    while not stop.is_set():
        with contextlib.suppress(BufferError):
            producer.produce("busy", value=b"x" * 200)
        producer.poll(0.001)
    producer.flush(0)


@pytest.mark.parametrize("seed", [17])
def test_sigterm_at_random_moments_always_stops_cleanly(crashed_log_dir: Path, tmp_path: Path,
                                                        seed: int) -> None:
    rng = random.Random(seed)
    moments = ["boot"] * 5 + ["loading"] * 9 + ["listening"] * 5 + ["serving"] * 5
    rng.shuffle(moments)
    work = tmp_path / "work"
    shutil.copytree(crashed_log_dir, work)
    for i, moment in enumerate(moments):
        log_dir = work
        if moment == "loading":  # a fresh crashed copy: its start has segments to recover
            log_dir = tmp_path / f"recover-{i}"
            shutil.copytree(crashed_log_dir, log_dir)
        proc = _Proc.spawn(log_dir)
        stop_producing = threading.Event()
        producer = None
        if moment == "boot":
            time.sleep(rng.uniform(0.0, 0.3))
        elif moment == "loading":
            assert proc.wait_for("loading log dir"), proc.output()
            time.sleep(rng.uniform(0.0, 0.6))
        elif moment == "listening":
            assert proc.wait_for("listening on "), proc.output()
            time.sleep(rng.uniform(0.0, 0.02))
        else:
            assert proc.wait_for("listening on "), proc.output()
            producer = threading.Thread(target=_produce_until,
                                        args=(f"127.0.0.1:{proc.port}", stop_producing))
            producer.start()
            proc.wait_for("connection from", 20)
            time.sleep(rng.uniform(0.05, 0.8))
        rc, took = proc.terminate()
        stop_producing.set()
        if producer is not None:
            producer.join(10)
        assert rc == 0, f"{moment}: exit {rc}\n{proc.output()}"
        assert took < STOP_WITHIN_S, f"{moment}: {took:.1f} s\n{proc.output()}"
        if moment == "loading":  # a stopped recovery is finished by the next load
            logs = LogManager(BrokerConfig(log_dir=log_dir))
            logs.start()
            assert logs.load_completed
            assert all("rebuilding" in p for p in logs.load_problems), logs.load_problems
            logs.shutdown()
            assert verify(log_dir)["ok"]
            shutil.rmtree(log_dir)
    final = _Proc.spawn(work)
    assert final.wait_for("listening on "), final.output()
    assert "after a clean shutdown" in final.output()
    assert final.terminate()[0] == 0
    doc = verify(work)
    assert doc["ok"], doc["findings"]


def test_a_second_signal_forces_the_exit(tmp_path: Path) -> None:
    """The first SIGTERM asks for a clean stop (the process keeps running until it is done); a
    second one ends it at once with 128 + SIGTERM."""
    script = ("import time\n"
              "from kafkatx.broker.protocol.lifecycle import stop_request\n"
              "stop = stop_request()\n"
              "print('ready', flush=True)\n"
              "while True:\n"
              "    time.sleep(0.01)  # a clean stop that never finishes\n")
    with subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}) as proc:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        proc.send_signal(signal.SIGTERM)
        with pytest.raises(subprocess.TimeoutExpired):
            proc.wait(0.5)  # the first signal only asks
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(STOP_WITHIN_S) == 128 + signal.SIGTERM
        err = proc.stderr.read().decode() if proc.stderr is not None else ""
    assert "stopping cleanly" in err and "a second signal" in err, err
