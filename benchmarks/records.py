"""Record-level speed: ``dump --records`` and ``replay`` against aiokafka's C record decoder.

    .venv/bin/python benchmarks/records.py [--batches 100000] [--commands dump-jsonl,...]
                                           [--repeat 3] [--kafkatx-root ../other-checkout]

One partition of small records (``--records`` per transactional batch, 16-byte keys, 44-byte
values, 7 producers, a COMMIT every 5 of a producer's batches; built by ``txn_logdir.py``).
Side by side in one run:

* ``aiokafka C decode`` -- aiokafka's Cython ``MemoryRecords`` over the segment read into
  memory, every record's offset, timestamp, key, value and headers taken (in this process:
  the CPU seconds of the decode alone, no start-up, no output);
* ``kafkatx <command>`` -- each a process end to end, output to /dev/null: ``dump --records
  --format jsonl`` of the segment, ``replay --format jsonl`` and ``replay`` as a table of the
  partition.

Prints wall and CPU seconds (best of ``--repeat``), records per CPU-second, the ratio of CPU
time to aiokafka's decode, and peak RSS. Not a test; figures go to benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for p in (str(ROOT), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

from analysis import build_in_child, compile_sources, run  # noqa: E402
from txn_logdir import TOPIC, Shape  # noqa: E402

COMMANDS = {
    "dump-jsonl": lambda root, log: ["dump", "--records", "--format", "jsonl", str(log)],
    "replay-jsonl": lambda root, log: ["replay", "-t", TOPIC, "-p", "0", "--format", "jsonl",
                                       str(root)],
    "replay-table": lambda root, log: ["replay", "-t", TOPIC, "-p", "0", str(root)],
}


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
    ap.add_argument("--commands", default="dump-jsonl,replay-jsonl",
                    help=f"of {', '.join(COMMANDS)}")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--kafkatx-root", type=Path, default=ROOT)
    args = ap.parse_args(argv)
    shape = Shape(batches=args.batches, records=args.records, txn_batches=5)
    root = build_in_child(shape)
    log = root / f"{TOPIC}-0" / "00000000000000000000.log"
    compile_sources(args.kafkatx_root)
    results = []
    for name in args.commands.split(","):
        cmd = [sys.executable, "-m", "kafkatx", *COMMANDS[name](root, log)]
        results.append((name, *run(cmd, args.repeat, args.kafkatx_root)))
    # In this process, after the commands: a child inherits its parent's peak RSS.
    aio_cpu = min(aiokafka_decode(log)[0] for _ in range(args.repeat))
    _, n = aiokafka_decode(log)
    print(f"{n:,} records in {args.batches:,} batches, {log.stat().st_size / 2**20:.1f} MiB; "
          f"best of {args.repeat}")
    print(f"{'run':<26}{'wall s':>8}{'cpu s':>8}{'records/cpu s':>15}{'cpu vs aiokafka':>17}"
          f"{'peak RSS MB':>13}")
    print(f"{'aiokafka C decode':<26}{'':>8}{aio_cpu:>8.2f}{n / aio_cpu:>15,.0f}{1:>16.2f}x")
    for name, wall, cpu, peak in results:
        print(f"{'kafkatx ' + name:<26}{wall:>8.2f}{cpu:>8.2f}{n / cpu:>15,.0f}"
              f"{cpu / aio_cpu:>16.2f}x{peak / 2**20:>13,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
