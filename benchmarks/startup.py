"""Start-up of the CLI: ``kafkatx --version`` and ``lso`` on a one-partition log dir.

Each command runs ``--repeat`` times as a fresh process; the best wall and CPU (user + sys)
seconds are printed, beside the floors measured the same way: a bare interpreter and one that
only imports numpy (which ``lso`` needs), with OpenBLAS's default threads and with the one thread
the CLI asks for (``OPENBLAS_NUM_THREADS=1``). Bytecode is cached under a temporary
``PYTHONPYCACHEPREFIX`` (as an installed package has it), even where the environment sets
``PYTHONDONTWRITEBYTECODE``.

    .venv/bin/python benchmarks/startup.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def best_of(argv: list[str], repeat: int, env: dict[str, str]) -> tuple[float, float]:
    subprocess.run(argv, env=env, capture_output=True, check=True)  # warm the bytecode cache
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, env=env, capture_output=True, check=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return min(walls), min(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kafkatx-startup-") as tmp:
        logdir = Path(tmp) / "logdir"
        logdir.mkdir()
        shutil.copytree(ROOT / "fixtures" / "logdir" / "payments-0", logdir / "payments-0")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        kafkatx = [sys.executable, "-m", "kafkatx"]
        runs = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "python -c 'import numpy'": [sys.executable, "-c", "import numpy"],
            "  ... OPENBLAS_NUM_THREADS=1": ["env", "OPENBLAS_NUM_THREADS=1", sys.executable, "-c",
                                             "import numpy"],
            "kafkatx --version": [*kafkatx, "--version"],
            "kafkatx lso (table)": [*kafkatx, "lso", str(logdir)],
            "kafkatx lso --format json": [*kafkatx, "lso", str(logdir), "--format", "json"],
        }
        print(f"{'command':28} {'wall s':>8} {'cpu s':>8}   (best of {args.repeat})")
        for name, argv in runs.items():
            wall, cpu = best_of(argv, args.repeat, env)
            print(f"{name:28} {wall:8.3f} {cpu:8.3f}")


if __name__ == "__main__":
    main()
