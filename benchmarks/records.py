"""Record-level speed: ``dump --records`` and ``replay`` against aiokafka's C record decoder
and Kafka's own ``kafka-dump-log.sh``.

    .venv/bin/python benchmarks/records.py [--batches 100000] [--records 10]
                                           [--commands dump-jsonl,...] [--repeat 1]
                                           [--kafkatx-root ../other-checkout]

One partition of small records (``--records`` per transactional batch, 16-byte keys, 44-byte
values, 7 producers, a COMMIT every 5 of a producer's batches; built by ``txn_logdir.py``):
``--batches 100000`` is 1 M records, ``--batches 1000000`` 10 M. Side by side in one run:

* ``aiokafka C decode`` -- aiokafka's Cython ``MemoryRecords`` over the segment read into
  memory, every record's offset, timestamp, key, value and headers taken (in this process:
  the CPU seconds of the decode alone, no start-up, no output);
* ``kafka-dump-log.sh`` -- Kafka's ``DumpLogSegments --deep-iteration --print-data-log`` on
  the segment, in a JVM of the pinned Kafka's jars (``~/.cache/kafkatx/kafka-4.4.0/libs``,
  as tests/realkafka resolves them; left out when they are not there);
* ``kafkatx <command>`` -- each a process end to end, output to /dev/null: ``dump --records``
  of the segment as jsonl and as a table, ``replay`` of the partition as jsonl, csv, Parquet
  (``-o DIR``) and a table.

Prints wall and CPU seconds (best of ``--repeat``), records per CPU-second, the ratio of CPU
time to aiokafka's decode, and peak RSS. Not a test; figures go to benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for p in (str(ROOT), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

from analysis import build_in_child, compile_sources, run  # noqa: E402
from txn_logdir import TOPIC, Shape  # noqa: E402

REPLAY = ["replay", "-t", TOPIC, "-p", "0"]
COMMANDS = {
    "dump-jsonl": lambda root, log, out: ["dump", "--records", "--format", "jsonl", str(log)],
    "dump-table": lambda root, log, out: ["dump", "--records", str(log)],
    "replay-jsonl": lambda root, log, out: [*REPLAY, "--format", "jsonl", str(root)],
    "replay-csv": lambda root, log, out: [*REPLAY, "--format", "csv", str(root)],
    "replay-parquet": lambda root, log, out: [*REPLAY, "-o", str(out), str(root)],
    "replay-table": lambda root, log, out: [*REPLAY, str(root)],
}
KAFKA_VERSION = "4.4.0"
KAFKA_LIBS = Path.home() / ".cache" / "kafkatx" / f"kafka-{KAFKA_VERSION}" / "libs"
DUMP_LOG = "org.apache.kafka.tools.DumpLogSegments"  # kafka-tools since Kafka 4.2


def kafka_dump_log(log: Path) -> list[str] | None:
    """``kafka-dump-log.sh --deep-iteration --print-data-log --files LOG`` as its script runs
    it (one JVM of the distribution's jars), or None without the jars."""
    if not any(KAFKA_LIBS.glob("kafka-tools-*.jar")):
        return None
    return ["java", "-cp", f"{KAFKA_LIBS}/*", DUMP_LOG, "--deep-iteration", "--print-data-log",
            "--files", str(log)]


def aiokafka_decode(log: Path) -> tuple[float, int]:
    """CPU seconds to decode every record with aiokafka's C reader, and the records seen."""
    from aiokafka.record import _crecords
    from aiokafka.record.memory_records import MemoryRecords

    assert MemoryRecords is _crecords.MemoryRecords, "aiokafka without its C extension"
    data = log.read_bytes()
    t0 = time.process_time()
    records = MemoryRecords(data)
    n = 0
    while True:
        batch = records.next_batch()
        if batch is None:
            break
        for record in batch:
            last = (record.offset, record.timestamp, record.key, record.value, record.headers)
            n += 1
    assert n == 0 or last
    return time.process_time() - t0, n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=100_000, help="data batches")
    ap.add_argument("--records", type=int, default=10, help="records per data batch")
    ap.add_argument("--commands", default=",".join(COMMANDS),
                    help=f"of {', '.join(COMMANDS)} (default: all)")
    ap.add_argument("--no-kafka", action="store_true", help="leave kafka-dump-log.sh out")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--kafkatx-root", type=Path, default=ROOT)
    args = ap.parse_args(argv)
    shape = Shape(batches=args.batches, records=args.records, txn_batches=5)
    root = build_in_child(shape)
    log = root / f"{TOPIC}-0" / "00000000000000000000.log"
    compile_sources(args.kafkatx_root)
    results = []
    dump_log = None if args.no_kafka else kafka_dump_log(log)
    if dump_log is not None:
        results.append(("kafka-dump-log.sh", *run(dump_log, args.repeat, args.kafkatx_root)))
    with tempfile.TemporaryDirectory(prefix="kafkatx-records-") as tmp:
        out = Path(tmp) / "parquet"
        for name in args.commands.split(","):
            cmd = [sys.executable, "-m", "kafkatx", *COMMANDS[name](root, log, out)]
            best = (float("inf"), float("inf"), 0)
            for _ in range(args.repeat):  # one at a time: -o wants a new directory
                shutil.rmtree(out, ignore_errors=True)
                wall, cpu, peak = run(cmd, 1, args.kafkatx_root)
                best = (min(best[0], wall), min(best[1], cpu), max(best[2], peak))
            results.append((f"kafkatx {name}", *best))
    # In this process, after the commands: a child inherits its parent's peak RSS.
    aio_cpu = min(aiokafka_decode(log)[0] for _ in range(args.repeat))
    _, n = aiokafka_decode(log)
    print(f"{n:,} records in {args.batches:,} batches, {log.stat().st_size / 2**20:.1f} MiB; "
          f"best of {args.repeat}")
    print(f"{'run':<26}{'wall s':>8}{'cpu s':>8}{'records/cpu s':>15}{'cpu vs aiokafka':>17}"
          f"{'peak RSS MB':>13}")
    print(f"{'aiokafka C decode':<26}{'':>8}{aio_cpu:>8.2f}{n / aio_cpu:>15,.0f}{1:>16.2f}x")
    for name, wall, cpu, peak in results:
        print(f"{name:<26}{wall:>8.2f}{cpu:>8.2f}{n / cpu:>15,.0f}"
              f"{cpu / aio_cpu:>16.2f}x{peak / 2**20:>13,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
