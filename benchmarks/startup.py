"""Start-up of the CLI: ``kafkatx --version``, ``lso`` and ``replay`` on a one-partition log dir.

Each command runs ``--repeat`` times as a fresh process; the best wall and CPU (user + sys)
seconds are printed, beside the floors measured the same way: a bare interpreter and one that
only imports numpy (which ``lso`` needs), with OpenBLAS's default threads and with the one thread
the CLI asks for (``OPENBLAS_NUM_THREADS=1``). Bytecode is cached under a temporary
``PYTHONPYCACHEPREFIX`` (as an installed package has it), even where the environment sets
``PYTHONDONTWRITEBYTECODE``. The commands run in a temporary directory, so ``--python`` of
another environment (a regular ``pip install .``, what users run, rather than this checkout's
editable install) measures that environment's kafkatx.

    .venv/bin/python benchmarks/startup.py [--repeat 15] [--python /other/venv/bin/python]
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


def best_of(argv: list[str], repeat: int, env: dict[str, str], cwd: str) -> tuple[float, float]:
    subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=True)  # warm the cache
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=True)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return min(walls), min(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter whose kafkatx is measured (default: this one)")
    args = parser.parse_args()
    python = args.python
    with tempfile.TemporaryDirectory(prefix="kafkatx-startup-") as tmp:
        logdir = Path(tmp) / "logdir"
        logdir.mkdir()
        shutil.copytree(ROOT / "fixtures" / "logdir" / "payments-0", logdir / "payments-0")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        kafkatx = [python, "-m", "kafkatx"]
        runs = {
            "python -c pass": [python, "-c", "pass"],
            "python -c 'import numpy'": [python, "-c", "import numpy"],
            "  ... OPENBLAS_NUM_THREADS=1": ["env", "OPENBLAS_NUM_THREADS=1", python, "-c",
                                             "import numpy"],
            "kafkatx --version": [*kafkatx, "--version"],
            "kafkatx lso (table)": [*kafkatx, "lso", str(logdir)],
            "kafkatx lso --format json": [*kafkatx, "lso", str(logdir), "--format", "json"],
            "kafkatx replay -f jsonl": [*kafkatx, "replay", str(logdir), "-t", "payments",
                                        "-p", "0", "-f", "jsonl"],
        }
        print(f"{'command':28} {'wall s':>8} {'cpu s':>8}   (best of {args.repeat})")
        for name, argv in runs.items():
            wall, cpu = best_of(argv, args.repeat, env, tmp)
            print(f"{name:28} {wall:8.3f} {cpu:8.3f}")


if __name__ == "__main__":
    main()
