"""Benchmark: how long `kafkatx serve` takes to start on a log dir, and its idle memory.

Run from the repo root:  python benchmarks/serve_start.py [--sizes 10MB,1GB,10GB] [--json]

For each size a log dir is generated in-process (no broker, no client: the partition log and
the coordinator's record builders write it), then `kafkatx serve` is started on it as a child
process (127.0.0.1, a free port) in these situations:

* first start     -- the generated dir has no `.kafka_cleanshutdown` and no recovery point:
                     everything is recovered (the worst case, as Kafka after a crash with no
                     recovery-point checkpoint)
* clean restart   -- after a SIGTERM (clean shutdown): best of --repeat starts
* after SIGKILL   -- the broker is started, --tail-mb MB are produced by librdkafka
                     (confluent-kafka, idempotent, acks=all), then it is SIGKILLed; the restart
                     recovers the segments after the recovery point
* empty           -- an empty log dir, for comparison

Each row gives the time from spawning the process to `listening on` on stdout (interpreter
start-up and imports included), the broker's own load time (its `loaded N partitions in X s`
line: log dir and coordinators), and the server's resident memory (VmRSS) once idle, 2 s after
`listening on`. The generated data: one topic partition of transactions of 64 batches of 16
records of 1,000-byte values (about 1 MB per transaction, `segment.bytes` 1 GiB as Kafka's
default) and the `__transaction_state` partition with each transaction's Ongoing,
PrepareCommit and CompleteCommit records. Log dirs go to --dir (default: a temporary directory,
removed afterwards unless --keep).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import crc32c

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafkatx.broker.coordinators.coordinator_log import build_batch as build_coordinator_batch  # noqa: E402
from kafkatx.broker.logs.log_values import LogConfig  # noqa: E402
from kafkatx.broker.logs.partition_log import PartitionLog  # noqa: E402
from kafkatx.formats.record_batch import Record, build_batch  # noqa: E402
from kafkatx.formats.transaction_log import (  # noqa: E402
    TransactionLogKey,
    TransactionLogValue,
    TransactionState,
    TxnTopicPartitions,
    build_key,
    build_value,
)
from kafkatx.semantics.producer_state import AppendOrigin  # noqa: E402

START_TIMEOUT_S = 3600.0
BATCHES_PER_TXN = 64
RECORDS_PER_BATCH = 16
VALUE_BYTES = 1000
TXN_PARTITION = 0  # partitionFor("bench") is irrelevant here: the coordinator loads any partition
_SEQUENCE_AT = 53
_CRC_AT = 17
_CRC_FROM = 21
_LOADED = re.compile(r"loaded (\d+) partitions in ([0-9.]+) s")


@dataclass
class Row:
    size: str
    situation: str
    data_mb: float
    spawn_to_listening_s: float
    broker_load_s: float
    idle_rss_mb: float


def parse_size(text: str) -> int:
    units = {"KB": 10**3, "MB": 10**6, "GB": 10**9}
    for unit, factor in units.items():
        if text.upper().endswith(unit):
            return int(float(text[:-2]) * factor)
    return int(text)


def _txn_record(state: TransactionState, producer_id: int, now_ms: int) -> bytes:
    partitions = (None if state == TransactionState.EMPTY
                  else (TxnTopicPartitions(topic="bench", partition_ids=(0,)),))
    value = TransactionLogValue(version=0, producer_id=producer_id, producer_epoch=0,
                                transaction_timeout_ms=60_000, state=int(state),
                                partitions=partitions, last_update_timestamp_ms=now_ms,
                                start_timestamp_ms=now_ms)
    return build_coordinator_batch([(build_key(TransactionLogKey(transactional_id="bench")),
                                     build_value(value))], now_ms)


def generate(log_dir: Path, size_bytes: int) -> int:
    """Write about ``size_bytes`` of transactional data plus the coordinator's records;
    returns the data bytes written. No clean-shutdown marker, no checkpoints."""
    data_dir = log_dir / "bench-0"
    txn_dir = log_dir / f"__transaction_state-{TXN_PARTITION}"
    config = LogConfig(segment_bytes=1 << 30, max_message_bytes=1 << 20)
    data = PartitionLog("bench", 0, data_dir, config)
    data.open()
    txn = PartitionLog("__transaction_state", TXN_PARTITION, txn_dir,
                       LogConfig(segment_bytes=100 << 20, max_message_bytes=1 << 20,
                                 compact=True, delete=False))
    txn.open()
    producer_id = 1000
    now = int(time.time() * 1000)
    template = bytearray(build_batch(
        [Record(offset=i, timestamp=now, key=b"k%d" % i, value=b"v" * VALUE_BYTES)
         for i in range(RECORDS_PER_BATCH)],
        producer_id=producer_id, producer_epoch=0, base_sequence=0, is_transactional=True))
    written = 0
    sequence = 0
    while written < size_bytes:
        txn.append_as_leader(_txn_record(TransactionState.ONGOING, producer_id, now), now,
                             origin=AppendOrigin.COORDINATOR)
        for _ in range(BATCHES_PER_TXN):
            struct.pack_into(">i", template, _SEQUENCE_AT, sequence)
            struct.pack_into(">I", template, _CRC_AT, crc32c.crc32c(template[_CRC_FROM:]))
            data.append_as_leader(bytes(template), now)
            sequence += RECORDS_PER_BATCH
            written += len(template)
        txn.append_as_leader(_txn_record(TransactionState.PREPARE_COMMIT, producer_id, now),
                             now, origin=AppendOrigin.COORDINATOR)
        data.append_end_txn_marker(producer_id=producer_id, producer_epoch=0,
                                   coordinator_epoch=0, commit=True, now_ms=now)
        txn.append_as_leader(_txn_record(TransactionState.COMPLETE_COMMIT, producer_id, now),
                             now, origin=AppendOrigin.COORDINATOR)
    data.close()
    txn.close()
    return written


class Server:
    def __init__(self, log_dir: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kafkatx", "serve", "--host", "127.0.0.1", "--port", "0",
             "--log-dir", str(log_dir)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        self.started = time.monotonic()
        self.stderr: list[str] = []
        threading.Thread(target=self._drain, daemon=True).start()
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().decode()
        if not line.startswith("listening on "):
            self.proc.kill()
            raise RuntimeError(f"kafkatx serve did not start: {line!r}\n" + "".join(self.stderr))
        self.listening_s = time.monotonic() - self.started
        self.port = int(line.strip().rsplit(":", 1)[1])

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for raw in iter(self.proc.stderr.readline, b""):
            self.stderr.append(raw.decode(errors="replace"))

    def broker_load_s(self) -> float:
        for line in self.stderr:
            match = _LOADED.search(line)
            if match:
                return float(match.group(2))
        return float("nan")

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        if self.proc.wait(600) != 0:
            raise RuntimeError("kafkatx serve did not stop cleanly:\n" + "".join(self.stderr))

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(60)


def measure(log_dir: Path, size: str, situation: str, data_mb: float) -> Row:
    server = Server(log_dir)
    time.sleep(2.0)
    row = Row(size=size, situation=situation, data_mb=round(data_mb, 1),
              spawn_to_listening_s=round(server.listening_s, 3),
              broker_load_s=server.broker_load_s(), idle_rss_mb=round(server.rss_mb(), 1))
    server.stop()
    return row


def produce_tail(port: int, mb: float) -> None:
    import confluent_kafka as ck

    producer = ck.Producer({"bootstrap.servers": f"127.0.0.1:{port}", "enable.idempotence": True,
                            "acks": "all", "linger.ms": 5, "log_level": 0})
    value = b"t" * 1000
    for _ in range(int(mb * 1000)):
        while True:
            try:
                producer.produce("bench", value=value, partition=0)
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(120)


def run(sizes: list[str], repeat: int, tail_mb: float, base: Path) -> list[Row]:
    rows = []
    empty = base / "empty"
    empty.mkdir()
    rows.append(measure(empty, "0", "empty", 0.0))
    for size in sizes:
        log_dir = base / f"logdir-{size}"
        started = time.monotonic()
        written = generate(log_dir, parse_size(size))
        print(f"# generated {size}: {written / 1e6:.0f} MB of data in "
              f"{time.monotonic() - started:.0f} s", file=sys.stderr, flush=True)
        mb = written / 1e6
        rows.append(measure(log_dir, size, "first start (full recovery)", mb))
        best = min((measure(log_dir, size, "clean restart", mb) for _ in range(repeat)),
                   key=lambda r: r.spawn_to_listening_s)
        rows.append(best)
        server = Server(log_dir)
        produce_tail(server.port, tail_mb)
        server.kill()
        rows.append(measure(log_dir, size, f"after SIGKILL ({tail_mb:g} MB tail)", mb + tail_mb))
        shutil.rmtree(log_dir)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10MB,1GB,10GB",
                        help="comma-separated log dir sizes (KB/MB/GB, powers of 10)")
    parser.add_argument("--repeat", type=int, default=3, help="clean restarts, best kept")
    parser.add_argument("--tail-mb", type=float, default=20.0,
                        help="MB produced before the SIGKILL")
    parser.add_argument("--dir", type=Path, default=None, help="where to generate log dirs")
    parser.add_argument("--keep", action="store_true", help="keep the generated log dirs")
    parser.add_argument("--json", action="store_true", help="rows as JSON lines")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="serve-start-", dir=args.dir))
    try:
        rows = run(args.sizes.split(","), args.repeat, args.tail_mb, base)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    print(f"# {platform.python_implementation()} {platform.python_version()}, "
          f"{os.cpu_count()} CPUs")
    if args.json:
        for row in rows:
            print(json.dumps(asdict(row)))
        return
    print(f"{'size':>6} {'situation':<30} {'data MB':>9} {'to listening s':>15} "
          f"{'broker load s':>14} {'idle RSS MB':>12}")
    for r in rows:
        print(f"{r.size:>6} {r.situation:<30} {r.data_mb:>9.1f} {r.spawn_to_listening_s:>15.3f} "
              f"{r.broker_load_s:>14.3f} {r.idle_rss_mb:>12.1f}")


if __name__ == "__main__":
    main()
