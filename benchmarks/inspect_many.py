"""How `kafkatx inspect` scales with partitions: time and peak memory on a generated log dir.

    python benchmarks/inspect_many.py [--partitions 10000] [--big-mb 64]

Builds (once, under benchmarks/data/, gitignored) a broker log dir with N small partitions
(a few batches each: plain, idempotent, a committed and an open transaction) plus one partition
whose single segment is --big-mb large, then runs `kafkatx inspect --format json` on it in a
child process and reports wall time and the child's peak RSS. The claim to check: peak memory
is bounded by the largest segment's header columns (plus per-partition summaries), not by the
total size of the log dir. Figures are recorded in benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kafkatx.formats.record_batch import (  # noqa: E402
    ControlType,
    Record,
    build_batch,
    build_control_batch,
)
from kafkatx.storage.segment_writer import PartitionWriter  # noqa: E402

T0 = 1_763_700_000_000


def small_partition(directory: Path, i: int) -> None:
    w = PartitionWriter(directory)
    recs = [Record(offset=o, timestamp=T0 + o, key=b"k", value=b"v" * 50) for o in range(3)]
    w.append(build_batch(recs))
    w.append(build_batch([Record(offset=3, timestamp=T0, key=b"k", value=b"x")],
                         producer_id=10_000 + i, producer_epoch=0, base_sequence=0,
                         is_transactional=True))
    w.append(build_control_batch(base_offset=4, producer_id=10_000 + i, producer_epoch=0,
                                 control_type=ControlType.COMMIT, timestamp=T0 + 5))
    if i % 10 == 0:  # every tenth partition keeps an open transaction
        w.append(build_batch([Record(offset=5, timestamp=T0 + 9, key=b"k", value=b"y")],
                             producer_id=20_000 + i, producer_epoch=1, base_sequence=0,
                             is_transactional=True))
    w.close()


def big_partition(directory: Path, megabytes: int) -> None:
    batch_records = 10
    offset = 0
    seq = 0
    with open(directory / "00000000000000000000.log", "wb") as f:
        written = 0
        while written < megabytes * 1024 * 1024:
            recs = [Record(offset=offset + j, timestamp=T0 + j, key=None, value=b"z" * 100)
                    for j in range(batch_records)]
            data = build_batch(recs, producer_id=7, producer_epoch=0, base_sequence=seq)
            f.write(data)
            written += len(data)
            offset += batch_records
            seq += batch_records


def build(root: Path, partitions: int, big_mb: int) -> None:
    marker = root / f".complete-{partitions}-{big_mb}"
    if marker.exists():
        return
    import shutil

    shutil.rmtree(root, ignore_errors=True)
    logdir = root / "logdir"
    logdir.mkdir(parents=True)
    for i in range(partitions):
        small_partition(logdir / f"orders-{i}", i)
    big = logdir / "big-0"
    big.mkdir()
    big_partition(big, big_mb)
    marker.touch()


def _rss_anon_kib(pid: int) -> int:
    """The process's anonymous resident memory (heap, numpy arrays; not mapped file pages)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--big-mb", type=int, default=64)
    args = ap.parse_args()
    root = ROOT / "benchmarks" / "data" / "inspect_many"
    t = time.perf_counter()
    build(root, args.partitions, args.big_mb)
    print(f"log dir ready in {time.perf_counter() - t:.1f}s: {args.partitions} small partitions "
          f"+ one {args.big_mb} MiB segment")
    t = time.perf_counter()
    out = root / "inspect.json"
    with open(out, "w") as sink:
        child = subprocess.Popen([sys.executable, "-m", "kafkatx", "inspect", "--format", "json",
                                  str(root / "logdir")], stdout=sink, stderr=subprocess.PIPE,
                                 text=True, cwd=ROOT)
        peak_anon = 0
        while child.poll() is None:
            peak_anon = max(peak_anon, _rss_anon_kib(child.pid))
            time.sleep(0.02)
    wall = time.perf_counter() - t
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if child.returncode != 0:
        print(child.stderr.read()[-2000:] if child.stderr else "")
        raise SystemExit(f"kafkatx inspect exited {child.returncode}")
    result = json.loads(out.read_text())
    print(f"inspect: {len(result['partitions'])} partitions, {len(result['findings'])} findings "
          f"in {wall:.1f}s; peak RSS {peak_mb:.0f} MiB (includes the mapped segment's file "
          f"pages), peak anonymous memory {peak_anon / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
