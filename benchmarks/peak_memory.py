"""Peak memory of ``lso`` and ``inspect`` on one large segment, each command its own process.

    python benchmarks/peak_memory.py [--batches 2000000,8000000] [--commands lso,inspect]
                                     [--txn-batches 50] [--kafkatx-root ../other-checkout]

For each size a log dir from ``txn_logdir.py`` (one partition of one-record ~128-byte
transactional batches, 7 producers, a COMMIT after every 50 (``--txn-batches``) of a
producer's batches; 2 M batches are a ~250 MiB segment, 8 M ~1 GiB) is built once under
``benchmarks/data/`` (in a child process, whose memory no command inherits). Each command
then runs once, with ``/proc`` sampled every 5 ms: the table gives the peak RSS
(``ru_maxrss``), the largest anonymous memory (``RssAnon``: what the process allocated) and
the largest resident part of mapped files (``RssFile``: the segment's pages while it is
walked, plus the interpreter's own libraries), and the peak anonymous memory per batch of the
segment. Not a test; figures go to benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for p in (str(ROOT), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

from analysis import SMALL, build_in_child, compile_sources  # noqa: E402
from txn_logdir import TOPIC, Shape  # noqa: E402

COMMANDS = ("lso", "inspect")


def _status_kb(pid: int) -> dict[str, int]:
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("RssAnon", "RssFile"):
                out[key] = int(value.split()[0])
    return out


def measure(cmd: list[str], kafkatx_root: Path) -> dict[str, float]:
    """Wall and CPU seconds, peak RSS and the largest RssAnon and RssFile (MiB) of one run."""
    env = {**os.environ, "PYTHONPATH": str(kafkatx_root)}
    peaks = {"RssAnon": 0, "RssFile": 0}
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env,
                                cwd=kafkatx_root)
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                try:
                    for key, kb in _status_kb(proc.pid).items():
                        peaks[key] = max(peaks[key], kb)
                except (OSError, ValueError):
                    return
                time.sleep(0.005)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        done.set()
        sampler.join()
        if os.waitstatus_to_exitcode(status) not in (0, 1):
            err.seek(0)
            raise SystemExit(f"{' '.join(cmd)} failed:\n{err.read().decode(errors='replace')}")
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime,
            "rss": usage.ru_maxrss / 1024, "anon": peaks["RssAnon"] / 1024,
            "file": peaks["RssFile"] / 1024}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", default="2000000,8000000", help="segment sizes, in batches")
    ap.add_argument("--commands", default=",".join(COMMANDS))
    ap.add_argument("--txn-batches", type=int, default=SMALL["txn_batches"],
                    help="a producer's data batches a transaction (1: a marker after each)")
    ap.add_argument("--kafkatx-root", type=Path, default=ROOT,
                    help="the checkout whose kafkatx runs (before/after comparisons)")
    args = ap.parse_args(argv)
    compile_sources(args.kafkatx_root)
    print(f"{'segment':>18} {'command':<8} {'wall s':>7} {'cpu s':>6} {'peak RSS MB':>12} "
          f"{'RssAnon MB':>11} {'RssFile MB':>11} {'anon B/batch':>13}")
    for batches in (int(b) for b in args.batches.split(",")):
        shape = Shape(producers=7, **{**SMALL, "batches": batches,
                                      "txn_batches": args.txn_batches})
        root = build_in_child(shape)
        log = root / f"{TOPIC}-0" / "00000000000000000000.log"
        rows = shape.batches + shape.batches // shape.txn_batches
        label = f"{log.stat().st_size / 2**20:,.0f} MiB {rows / 1e6:.1f}M"
        for command in args.commands.split(","):
            m = measure([sys.executable, "-m", "kafkatx", command, str(root), "--format",
                         "json"], args.kafkatx_root)
            print(f"{label:>18} {command:<8} {m['wall']:>7.2f} {m['cpu']:>6.2f} "
                  f"{m['rss']:>12,.0f} {m['anon']:>11,.0f} {m['file']:>11,.0f} "
                  f"{m['anon'] * 2**20 / rows:>13,.0f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
