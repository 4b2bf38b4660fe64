"""kafkatx's analysis commands against peers' bare scans, end to end, each as its own process.

    python benchmarks/analysis.py [--cases small-7p,large-7p] [--commands lso,inspect]
                                  [--repeat 3] [--quick]

For each case a log dir from ``txn_logdir.py`` (one partition of transactional batches, a
producer's COMMIT after every ``txn_batches`` of its batches, the last transactions left open)
is built once under ``benchmarks/data/``; then every command runs in a fresh process (best of
``--repeat`` wall times):

* ``aiokafka C`` -- aiokafka's Cython ``MemoryRecords`` over the segment file: every batch's
  header fields read and its CRC validated (the bare scan a peer does; no producer state);
* ``kafka-python`` -- the same walk with kafka-python's pure-Python reader;
* ``kafkatx <command>`` -- ``lso``, ``inspect``, ``verify`` with ``--format json``,
  ``timeline --format jsonl``, and ``replay --diff --format jsonl`` (what read_committed
  hides: the whole log walked).

It prints wall seconds and CPU seconds (user + system of the child process, steadier than wall
time on a shared machine), the ratio of each to the aiokafka C reader on the same bytes (``vs
aiokafka``, by wall and by CPU time; the goal for ``lso`` is <= 1.0), of each kafkatx command's
CPU time to ``lso``'s (goal <= 2.0 for the others) and each process's peak RSS (the segment's
pages read through an mmap count too). kafkatx's sources are byte-compiled first, as an
install leaves them. Not a test; figures go to benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for p in (str(ROOT), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

from txn_logdir import DATA_DIR, TOPIC, Shape  # noqa: E402

SMALL = {"records": 1, "value_size": 44, "batches": 2_000_000, "txn_batches": 50}  # ~128 B
LARGE = {"records": 10, "value_size": 1000, "batches": 25_000, "txn_batches": 5}  # ~10 KB
CASES: dict[str, Shape] = {
    f"{size}-{n}p": Shape(producers=n, **params)
    for size, params in (("small", SMALL), ("large", LARGE)) for n in (1, 7, 1000)
}
COMMANDS: dict[str, list[str]] = {
    "lso": ["lso", "--format", "json"],
    "inspect": ["inspect", "--format", "json"],
    "verify": ["verify", "--format", "json"],
    "timeline": ["timeline", "--format", "jsonl"],
    "replay": ["replay", "--topic", TOPIC, "--partition", "0", "--diff", "--format", "jsonl"],
}
PEERS = ("aiokafka C", "kafka-python")


def peer_walk(reader: str, path: str) -> int:
    """Every batch's header fields and CRC with a peer's reader (run in a child process)."""
    if reader == "aiokafka C":
        from aiokafka.record import _crecords
        from aiokafka.record.memory_records import MemoryRecords

        assert MemoryRecords is _crecords.MemoryRecords, "aiokafka without its C extension"
    else:
        from kafka.record.memory_records import MemoryRecords  # type: ignore[no-redef]
    from scan import _read_batches

    with open(path, "rb") as f:
        data = f.read()
    return _read_batches(MemoryRecords(data))


def run(cmd: list[str], repeat: int, kafkatx_root: Path = ROOT) -> tuple[float, float, int]:
    """Best wall seconds, best CPU seconds (user + system) and the largest peak RSS (bytes)
    of ``repeat`` runs."""
    best_wall = best_cpu = float("inf")
    peak = 0
    env = {**os.environ, "PYTHONPATH": str(kafkatx_root)}
    for _ in range(repeat):
        with tempfile.TemporaryFile() as err:
            t0 = time.perf_counter()
            # cwd: ``python -m`` puts the working directory first on sys.path.
            proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env,
                                    cwd=kafkatx_root)
            _, status, usage = os.wait4(proc.pid, 0)
            elapsed = time.perf_counter() - t0
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode not in (0, 1):  # verify exits 1 on error findings
                err.seek(0)
                raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n"
                                 f"{err.read().decode(errors='replace')}")
        best_wall = min(best_wall, elapsed)
        best_cpu = min(best_cpu, usage.ru_utime + usage.ru_stime)
        peak = max(peak, usage.ru_maxrss * 1024)  # Linux: kilobytes
    return best_wall, best_cpu, peak


def compile_sources(kafkatx_root: Path) -> None:
    """Byte-compile the checkout once, as ``pip install`` does for an installed package (the
    peers run from site-packages with their .pyc files; PYTHONDONTWRITEBYTECODE would otherwise
    make every kafkatx run compile its modules again)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(kafkatx_root / "kafkatx")],
                   check=True)


def build_in_child(shape: Shape) -> Path:
    """The case's log dir, written by ``txn_logdir.py`` in a child process: built here, its
    arrays would stay in this process's peak RSS, which every command started afterwards
    inherits as its own (``ru_maxrss`` keeps the high-water mark across fork and exec)."""
    subprocess.run([sys.executable, str(HERE / "txn_logdir.py"), "--batches", str(shape.batches),
                    "--producers", str(shape.producers), "--txn-batches",
                    str(shape.txn_batches), "--records", str(shape.records), "--value-size",
                    str(shape.value_size)], check=True, stdout=subprocess.DEVNULL)
    return DATA_DIR / shape.name


def run_case(name: str, shape: Shape, commands: list[str], repeat: int,
             kafkatx_root: Path = ROOT) -> list[str]:
    root = build_in_child(shape)
    log = root / f"{TOPIC}-0" / "00000000000000000000.log"
    size = log.stat().st_size
    rows = shape.batches + shape.batches // shape.txn_batches
    times: dict[str, tuple[float, float, int]] = {}
    for peer in PEERS:
        times[peer] = run([sys.executable, str(HERE / "analysis.py"), "--peer", peer, str(log)],
                          repeat)
    compile_sources(kafkatx_root)
    for command in commands:
        times[f"kafkatx {command}"] = run(
            [sys.executable, "-m", "kafkatx", *COMMANDS[command], str(root)], repeat,
            kafkatx_root)
    lines = [f"\n{name}: {rows:,} batches of {size / rows:.0f} bytes, {size / 2**20:.1f} MiB, "
             f"{shape.producers} producer(s), COMMIT every {shape.txn_batches} batches",
             f"{'run':<20}{'wall s':>8}{'cpu s':>8}{'batches/s':>12}{'vs aiokafka':>13}"
             f"{'cpu vs aiokafka':>17}{'cpu vs lso':>12}{'peak RSS MB':>13}"]
    aio_wall, aio_cpu, _ = times["aiokafka C"]
    lso = times.get("kafkatx lso")
    for run_name, (wall, cpu, peak) in times.items():
        vs_lso = (f"{cpu / lso[1]:.2f}x" if lso and run_name.startswith("kafkatx") else "")
        lines.append(f"{run_name:<20}{wall:>8.2f}{cpu:>8.2f}{rows / wall:>12,.0f}"
                     f"{wall / aio_wall:>12.2f}x{cpu / aio_cpu:>16.2f}x{vs_lso:>12}"
                     f"{peak / 2**20:>13,.0f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES), help=f"of {', '.join(CASES)}")
    ap.add_argument("--commands", default=",".join(COMMANDS), help=f"of {', '.join(COMMANDS)}")
    ap.add_argument("--repeat", type=int, default=3, help="best of N (per command)")
    ap.add_argument("--quick", action="store_true", help="small-7p, lso only, once")
    ap.add_argument("--kafkatx-root", type=Path, default=ROOT,
                    help="run kafkatx from this checkout (e.g. an older one, for before/after)")
    ap.add_argument("--peer", nargs=2, metavar=("READER", "LOG"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.peer:
        peer_walk(*args.peer)
        return 0
    cases = ["small-7p"] if args.quick else args.cases.split(",")
    commands = ["lso"] if args.quick else args.commands.split(",")
    repeat = 1 if args.quick else args.repeat
    print(f"nproc={os.cpu_count()}  python={platform.python_version()}  "
          f"machine={platform.machine()}  best of {repeat}")
    for name in cases:
        for line in run_case(name, CASES[name], commands, repeat, args.kafkatx_root):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
