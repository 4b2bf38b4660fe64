"""Benchmark: `kafkatx serve` throughput with librdkafka (confluent-kafka) on loopback.

Run from the repo root:  python benchmarks/serve.py [--mb 500] [--quick] [--json] [--keep]

Starts `kafkatx serve` in a child process on 127.0.0.1 (a free port, a temporary log dir that is
removed afterwards unless --keep), then measures with confluent-kafka, 1 KB (1024-byte value,
no key) uncompressed records into one topic of --partitions partitions:

* produce        -- idempotent producer (acks=all), --mb MB, from the first produce() to the
                    end of flush(): MB/s and records/s
* fetch          -- a read_committed consumer reading all of it back from the beginning; also
                    the time to its first records (librdkafka's start-up, ~0.5 s) and the rate
                    after them ("MB/s after")
* produce-16k    -- the same with the Java producer's batching defaults (~16 KB batches)
* txn-produce    -- a transactional producer, --mb MB in transactions of --txn-records records
* txn-fetch      -- a read_committed consumer reading that topic back
* txn-commits    -- one transactional producer, 1-record transactions (begin, produce,
                    commit) for --txn-seconds: commits/s

MB are 10^6 bytes of record values. Each row also gives the CPU seconds the server and this
process (the client and its librdkafka threads) used, since both share the machine's cores.
--profile FILE runs the server under cProfile and writes its stats to FILE at shutdown.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import confluent_kafka as ck
import confluent_kafka.admin

VALUE_BYTES = 1024
START_TIMEOUT_S = 30.0
IDLE_TIMEOUT_S = 60.0  # a phase fails when no progress is made for this long
CLK_TCK = os.sysconf("SC_CLK_TCK")

# What a user tuning librdkafka for throughput would set (the rest are librdkafka's defaults:
# queue.buffering.max.kbytes 1 GiB, max.in.flight 5 with idempotence, fetch.max.bytes 50 MiB,
# max.partition.fetch.bytes 1 MiB, fetch.wait.max.ms 500).
PRODUCER_CONFIG: dict[str, Any] = {
    "enable.idempotence": True,  # implies acks=all
    "acks": "all",
    "linger.ms": 20,
    "batch.size": 1_000_000,
    "queue.buffering.max.messages": 500_000,
    "compression.type": "none",
}
# The produce-16k phase: the Java producer's defaults (batch.size 16384, linger.ms 5), which make
# ~16 KB batches, 60 times as many as above: the broker's per-request and per-batch costs.
SMALL_BATCHES: dict[str, Any] = {"batch.size": 16384, "linger.ms": 5}
CONSUMER_CONFIG: dict[str, Any] = {
    "isolation.level": "read_committed",
    "enable.auto.commit": False,
    "fetch.min.bytes": 1,
    "queued.min.messages": 200_000,
    # librdkafka stops fetching for fetch.queue.backoff.ms (1000) whenever its local queue is
    # full (queued.max.messages.kbytes, 64 MiB): a whole second lost each time this process
    # falls behind the fetcher, which made the fetch figures bimodal.
    "fetch.queue.backoff.ms": 10,
}


@dataclass
class Outcome:
    """What a phase did: records, commits, and (consumers) when the first records arrived and
    how many came with them."""

    records: int
    commits: int = 0
    first_at: float | None = None
    first_records: int = 0


@dataclass
class Row:
    name: str
    seconds: float
    records: int
    mb: float
    server_cpu_s: float
    client_cpu_s: float
    commits: int = 0
    to_first_s: float | None = None  # consumers: from creating the consumer to its first records
    steady_mb_per_s: float | None = None  # consumers: after the first records

    @property
    def mb_per_s(self) -> float:
        return self.mb / self.seconds if self.seconds else 0.0

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds if self.seconds else 0.0


class Server:
    """`kafkatx serve` (optionally under cProfile) in a child process; stopped with SIGTERM."""

    def __init__(self, log_dir: Path, partitions: int, profile: Path | None) -> None:
        pre = ["-m", "cProfile", "-o", str(profile)] if profile else []
        self.stderr_path = log_dir.parent / "serve.stderr.txt"
        with open(self.stderr_path, "wb") as stderr:
            self.proc = subprocess.Popen(
                [sys.executable, *pre, "-m", "kafkatx", "serve", "--host", "127.0.0.1",
                 "--port", "0", "--log-dir", str(log_dir), "--partitions", str(partitions)],
                stdout=subprocess.PIPE, stderr=stderr, stdin=subprocess.DEVNULL)
        assert self.proc.stdout is not None
        line = b""
        deadline = time.monotonic() + START_TIMEOUT_S
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            while not line.endswith(b"\n"):
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.proc.kill()
                    raise SystemExit(f"kafkatx serve did not start:\n{self.stderr()}")
                if sel.select(0.1):
                    line += os.read(self.proc.stdout.fileno(), 1)
        self.bootstrap = line.decode().strip().removeprefix("listening on ")

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise SystemExit(f"kafkatx serve did not stop:\n{self.stderr()}") from None
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        if rc != 0:
            raise SystemExit(f"kafkatx serve exited with {rc}:\n{self.stderr()}")


def client_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(server: Server, name: str, fn: Callable[[], Outcome]) -> Row:
    """Run ``fn`` and time it with both processes' CPU."""
    server_cpu, client_cpu = server.cpu_seconds(), client_cpu_seconds()
    start = time.perf_counter()
    out = fn()
    end = time.perf_counter()
    row = Row(name, end - start, out.records, out.records * VALUE_BYTES / 1e6,
              server.cpu_seconds() - server_cpu, client_cpu_seconds() - client_cpu, out.commits)
    if out.first_at is not None:
        row.to_first_s = out.first_at - start
        if end > out.first_at:
            row.steady_mb_per_s = ((out.records - out.first_records) * VALUE_BYTES / 1e6
                                   / (end - out.first_at))
    return row


class DeliveryErrors:
    """Counts failed deliveries (the producer reports only errors: delivery.report.only.error)."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def __call__(self, err: ck.KafkaError | None, _msg: ck.Message) -> None:
        if err is not None:
            self.errors.append(str(err))

    def check(self) -> None:
        if self.errors:
            raise SystemExit(f"{len(self.errors)} deliveries failed, first: {self.errors[0]}")


def produce_all(producer: ck.Producer, topic: str, value: bytes, partitions: int,
                count: int) -> None:
    """``count`` records round-robin over the partitions, waiting when the queue is full."""
    produce = producer.produce
    for i in range(count):
        while True:
            try:
                produce(topic, value, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.01)
        if i % 10_000 == 0:
            producer.poll(0)


def idempotent_produce(bootstrap: str, topic: str, partitions: int, count: int,
                       value: bytes, config: dict[str, Any]) -> Outcome:
    errors = DeliveryErrors()
    producer = ck.Producer({"bootstrap.servers": bootstrap, **config,
                            "delivery.report.only.error": True, "on_delivery": errors})
    produce_all(producer, topic, value, partitions, count)
    if producer.flush(IDLE_TIMEOUT_S) != 0:
        raise SystemExit("produce: flush timed out")
    errors.check()
    return Outcome(count)


def transactional_produce(bootstrap: str, topic: str, partitions: int, count: int,
                          value: bytes, per_txn: int) -> Outcome:
    errors = DeliveryErrors()
    producer = ck.Producer({"bootstrap.servers": bootstrap, **PRODUCER_CONFIG,
                            "transactional.id": f"bench-{topic}",
                            "delivery.report.only.error": True, "on_delivery": errors})
    producer.init_transactions(IDLE_TIMEOUT_S)
    done = commits = 0
    while done < count:
        n = min(per_txn, count - done)
        producer.begin_transaction()
        produce_all(producer, topic, value, partitions, n)
        producer.commit_transaction(IDLE_TIMEOUT_S)
        done += n
        commits += 1
    errors.check()
    return Outcome(done, commits)


def consume_all(bootstrap: str, topic: str, partitions: int, count: int) -> Outcome:
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{topic}",
                            **CONSUMER_CONFIG})
    consumer.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING)
                     for p in range(partitions)])
    got = 0
    first_at: float | None = None
    first_records = 0
    last_progress = time.monotonic()
    try:
        while got < count:
            batch = consumer.consume(num_messages=10_000, timeout=0.5)
            for msg in batch:
                if msg.error() is not None:
                    raise SystemExit(f"consume {topic}: {msg.error()}")
                if len(msg.value()) != VALUE_BYTES:
                    raise SystemExit(f"consume {topic}: a {len(msg.value())}-byte value")
            if batch:
                if first_at is None:
                    first_at, first_records = time.perf_counter(), len(batch)
                got += len(batch)
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > IDLE_TIMEOUT_S:
                raise SystemExit(f"consume {topic}: stuck at {got} of {count} records")
    finally:
        consumer.close()
    if got != count:
        raise SystemExit(f"consume {topic}: {got} records, expected {count}")
    return Outcome(got, 0, first_at, first_records)


def commit_loop(bootstrap: str, topic: str, seconds: float, value: bytes) -> Outcome:
    producer = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": "bench-commits",
                            "linger.ms": 0})
    producer.init_transactions(IDLE_TIMEOUT_S)
    commits = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        producer.begin_transaction()
        producer.produce(topic, value, partition=0)
        producer.commit_transaction(IDLE_TIMEOUT_S)
        commits += 1
    return Outcome(commits, commits)


def create_topics(bootstrap: str, topics: list[str], partitions: int) -> None:
    """CreateTopics through the admin client (and the connection set up before any timing)."""
    admin = ck.admin.AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([ck.admin.NewTopic(t, partitions, 1) for t in topics])
    for topic, future in futures.items():
        try:
            future.result(30)
        except ck.KafkaException as exc:
            raise SystemExit(f"create topic {topic}: {exc}") from None


def machine_facts() -> dict[str, Any]:
    model = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return {"nproc": os.cpu_count(), "cpu": model, "python": platform.python_version(),
            "confluent_kafka": ck.__version__, "librdkafka": ck.libversion()[0],
            "load_average": os.getloadavg()}


PHASES = ("produce", "fetch", "produce-16k", "txn-produce", "txn-fetch", "txn-commits")


def run(args: argparse.Namespace, root: Path) -> tuple[list[Row], Path]:
    log_dir = root / "log-dir"
    server = Server(log_dir, args.partitions, args.profile)
    value = os.urandom(VALUE_BYTES)
    count = max(1, int(args.mb * 1e6) // VALUE_BYTES)
    bs, p = server.bootstrap, args.partitions
    phases: dict[str, Callable[[], Outcome]] = {
        "produce": lambda: idempotent_produce(bs, "bench", p, count, value, PRODUCER_CONFIG),
        "fetch": lambda: consume_all(bs, "bench", p, count),
        "produce-16k": lambda: idempotent_produce(bs, "bench-16k", p, count, value,
                                                  {**PRODUCER_CONFIG, **SMALL_BATCHES}),
        "txn-produce": lambda: transactional_produce(bs, "bench-txn", p, count, value,
                                                     args.txn_records),
        "txn-fetch": lambda: consume_all(bs, "bench-txn", p, count),
        "txn-commits": lambda: commit_loop(bs, "bench-commits", args.txn_seconds, value),
    }
    rows: list[Row] = []
    try:
        create_topics(bs, ["bench", "bench-16k", "bench-txn", "bench-commits"], p)
        for name in args.phases:
            rows.append(measure(server, name, phases[name]))
    finally:
        server.stop()
    return rows, log_dir


def table(rows: list[Row]) -> list[str]:
    lines = [f"{'phase':<13}{'records':>10}{'MB':>8}{'seconds':>9}{'MB/s':>8}{'records/s':>11}"
             f"{'commits/s':>11}{'1st rec s':>11}{'MB/s after':>12}{'server CPU s':>14}"
             f"{'client CPU s':>14}"]
    for r in rows:
        commits = f"{r.commits / r.seconds:,.0f}" if r.commits else ""
        first = "" if r.to_first_s is None else f"{r.to_first_s:.2f}"
        steady = "" if r.steady_mb_per_s is None else f"{r.steady_mb_per_s:.1f}"
        lines.append(f"{r.name:<13}{r.records:>10,}{r.mb:>8.1f}{r.seconds:>9.2f}"
                     f"{r.mb_per_s:>8.1f}{r.records_per_s:>11,.0f}{commits:>11}{first:>11}"
                     f"{steady:>12}{r.server_cpu_s:>14.2f}{r.client_cpu_s:>14.2f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=None, help="MB of values per workload (500)")
    ap.add_argument("--quick", action="store_true", help="50 MB, 3 s of commits: a smoke run")
    ap.add_argument("--partitions", type=int, default=4, help="partitions per topic (4)")
    ap.add_argument("--txn-records", type=int, default=1000,
                    help="records per transaction in the txn-produce phase (1000)")
    ap.add_argument("--txn-seconds", type=float, default=None,
                    help="how long the 1-record transaction loop runs (10 s)")
    ap.add_argument("--phases", default=",".join(PHASES),
                    help=f"comma-separated subset of {','.join(PHASES)} (all)")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead")
    ap.add_argument("--keep", action="store_true", help="keep the log dir (its path is printed)")
    ap.add_argument("--profile", type=Path, default=None,
                    help="run the server under cProfile, stats to this file")
    args = ap.parse_args(argv)
    args.phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    unknown = sorted(set(args.phases) - set(PHASES))
    if unknown:
        ap.error(f"unknown phase(s): {', '.join(unknown)}")
    for reader, writer in (("fetch", "produce"), ("txn-fetch", "txn-produce")):
        if reader in args.phases and writer not in args.phases[:args.phases.index(reader)]:
            ap.error(f"phase {reader} reads what {writer} wrote: list {writer} before it")
    if args.mb is None:
        args.mb = 50.0 if args.quick else 500.0
    if args.txn_seconds is None:
        args.txn_seconds = 3.0 if args.quick else 10.0
    if args.profile is not None:
        args.profile = args.profile.resolve()
    root = Path(tempfile.mkdtemp(prefix="kafkatx-serve-bench-"))
    try:
        rows, log_dir = run(args, root)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    settings = {"value_bytes": VALUE_BYTES, "mb": args.mb, "partitions": args.partitions,
                "txn_records": args.txn_records, "txn_seconds": args.txn_seconds,
                "producer": PRODUCER_CONFIG, "consumer": CONSUMER_CONFIG}
    if args.json:
        print(json.dumps({"machine": machine_facts(), "settings": settings,
                          "results": [{**asdict(r), "mb_per_s": r.mb_per_s,
                                       "records_per_s": r.records_per_s} for r in rows]}))
    else:
        facts = machine_facts()
        print("  ".join(f"{k}={v}" for k, v in facts.items()))
        print(f"{args.mb:g} MB of {VALUE_BYTES}-byte values per workload, {args.partitions} "
              f"partitions, {args.txn_records} records per transaction; producer "
              + ", ".join(f"{k}={v}" for k, v in PRODUCER_CONFIG.items()))
        print("\n".join(table(rows)))
        if args.keep:
            print(f"log dir kept: {log_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
