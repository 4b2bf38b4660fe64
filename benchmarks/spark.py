"""The Spark engine against the local engine on a generated multi-GB, many-partition log dir.

    python benchmarks/spark.py [--gb 2] [--partitions 32] [--cores 1,2] [--quick]

Builds (once, under benchmarks/data/, gitignored) a broker log dir of ``--partitions``
partitions holding ``--gb`` GiB of ~1.1 KB transactional batches in all (kafka-python-built
template replicated with consecutive offsets and sequences, CRCs fixed up; see scan.py), in
segments of at most 256 MiB, then measures, each in a fresh process:

* the local engine: ``kafkatx lso DIR --engine local`` end to end;
* for each core count: ``kafkatx lso DIR --engine spark --master local[N]`` end to end, and
  inside one session: the session start-up, the ``kafka_segments`` data source alone (rows/s,
  written to Spark's ``noop`` sink), and ``inspect`` cold (first job) and warm (second run).

It also checks that both engines print the same ``lso`` JSON. Not a test; figures go to
benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for p in (str(ROOT), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

from scan import DATA_DIR, Shape, generate  # noqa: E402

BATCH = Shape("spark-bench", records=5, key_size=16, value_size=200)  # ~1.1 KB batches
SEGMENT_BYTES = 256 * 1024 * 1024


def build(gb: float, partitions: int) -> Path:
    root = DATA_DIR / f"spark-{gb:g}g-{partitions}p"
    done = root / ".complete"
    if done.exists():
        return root
    per_partition = int(gb * 1024**3 / partitions)
    for i in range(partitions):
        pdir = root / f"bench-{i}"
        pdir.mkdir(parents=True, exist_ok=True)
        left, base = per_partition, 0
        while left > 0:
            size = min(left, SEGMENT_BYTES)
            log = pdir / f"{base:020d}.log"
            generate(BATCH, log, size)
            n = _batches(log)
            _shift_offsets(log, base)
            base += n * BATCH.records
            left -= size
    (root / "meta.properties").write_text("version=1\nbroker.id=1\n")
    done.write_text("ok\n")
    return root


def _batches(log: Path) -> int:
    from kafkatx.formats.batchscan import scan_v2_run

    data = log.read_bytes()
    cols, _, _ = scan_v2_run(data)
    return len(cols)


def _shift_offsets(log: Path, base: int) -> None:
    """Add ``base`` to every batch's base offset (outside the CRC: nothing else changes)."""
    if base == 0:
        return
    import numpy as np

    from kafkatx.formats.batchscan import scan_v2_run

    data = bytearray(log.read_bytes())
    cols, _, _ = scan_v2_run(bytes(data))
    view = np.frombuffer(data, dtype=np.uint8)
    for pos, off in zip(cols.position.tolist(), cols.base_offset.tolist(), strict=True):
        view[pos:pos + 8] = np.frombuffer((off + base).to_bytes(8, "big"), dtype=np.uint8)
    log.write_bytes(bytes(data))


def timed(cmd: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    return wall, proc.stdout


def in_session(root: str, cores: int) -> dict[str, float]:
    """Run in a child process: one session, the data source alone, inspect cold and warm."""
    from kafkatx.engines.base import SPARK, EngineConfig
    from kafkatx.engines.spark import SparkEngine

    t0 = time.perf_counter()
    engine = SparkEngine(config=EngineConfig(name=SPARK, master=f"local[{cores}]",
                                             progress=False))
    spark = engine.spark
    spark.range(10).count()
    session_s = time.perf_counter() - t0
    df = engine.segments([root])
    t0 = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    first_scan_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    scan_s = time.perf_counter() - t0
    rows = df.count()
    t0 = time.perf_counter()
    engine.inspect([root])
    cold_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    engine.inspect([root])
    warm_s = time.perf_counter() - t0
    engine.close()
    return {"session_s": session_s, "first_scan_s": first_scan_s, "scan_s": scan_s,
            "rows": rows, "inspect_cold_s": cold_s, "inspect_warm_s": warm_s}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gb", type=float, default=2.0)
    ap.add_argument("--partitions", type=int, default=32)
    ap.add_argument("--cores", default="1,2")
    ap.add_argument("--quick", action="store_true", help="0.25 GB, 8 partitions")
    ap.add_argument("--child", nargs=2, metavar=("DIR", "CORES"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(in_session(args.child[0], int(args.child[1]))))
        return 0
    gb, parts = (0.25, 8) if args.quick else (args.gb, args.partitions)
    t0 = time.perf_counter()
    root = build(gb, parts)
    size = sum(f.stat().st_size for f in root.rglob("*.log"))
    print(f"log dir {root}: {parts} partitions, {size / 1e9:.2f} GB "
          f"(built or reused in {time.perf_counter() - t0:.1f} s); cpus: {os.cpu_count()}")
    kafkatx = [sys.executable, "-m", "kafkatx", "lso", str(root), "--format", "json"]
    local_s, local_out = timed([*kafkatx, "--engine", "local"])
    print(f"local engine   lso end to end: {local_s:7.1f} s   "
          f"({size / 1e6 / local_s:6.0f} MB/s)")
    for cores in (int(c) for c in args.cores.split(",")):
        spark_s, spark_out = timed([*kafkatx, "--engine", "spark", "--master",
                                    f"local[{cores}]"])
        same = "same JSON" if spark_out == local_out else "JSON DIFFERS"
        print(f"spark local[{cores}] lso end to end: {spark_s:7.1f} s   "
              f"({size / 1e6 / spark_s:6.0f} MB/s), {same}")
        _, out = timed([sys.executable, str(Path(__file__).resolve()), "--child", str(root),
                        str(cores)])
        m = json.loads(out.strip().splitlines()[-1])
        print(f"  session start {m['session_s']:.1f} s; kafka_segments {m['rows']:,} rows: "
              f"first {m['first_scan_s']:.1f} s, then {m['scan_s']:.1f} s "
              f"({m['rows'] / m['scan_s'] / 1e6:.2f} M rows/s); inspect cold "
              f"{m['inspect_cold_s']:.1f} s, warm {m['inspect_warm_s']:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
