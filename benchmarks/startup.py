"""Start-up of the CLI: ``kafkatx --version``, ``lso`` and ``replay`` on a one-partition log dir.

Each command runs ``--repeat`` times as a fresh process; the best wall and CPU (user + sys)
seconds are printed, beside the floors measured the same way: a bare interpreter and one that
only imports numpy (which ``lso`` needs), with OpenBLAS's default threads and with the one thread
the CLI asks for (``OPENBLAS_NUM_THREADS=1``), and then click too (the floor of any analysis
command: what is above it is kafkatx's own). Bytecode is cached under a temporary
``PYTHONPYCACHEPREFIX`` (as an installed package has it), even where the environment sets
``PYTHONDONTWRITEBYTECODE``. The commands run in a temporary directory, so ``--python`` of
another environment (a regular ``pip install .``, what users run, rather than this checkout's
editable install) measures that environment's kafkatx. ``--regular-install`` builds one itself:
this checkout installed as a wheel (``pip install --no-deps --target``) into a scratch venv
that takes its other packages from this interpreter's site-packages (without running their
``.pth`` files, so without the editable install's finder); both are then measured in the same
run, the editable install's figures first. ``--kafkatx-root`` runs another checkout's package
instead (``PYTHONPATH``; its C extension built in place) for a before/after in one window.
``--instructions`` also counts each command's instructions once under valgrind's callgrind
(~20 s a command): a figure the other processes on a shared machine do not change.

    .venv/bin/python benchmarks/startup.py [--repeat 15] [--python /other/venv/bin/python]
    .venv/bin/python benchmarks/startup.py --regular-install [--kafkatx-root ../before]
    .venv/bin/python benchmarks/startup.py --repeat 5 --instructions
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import site
import subprocess
import sys
import sysconfig
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


def instructions(argv: list[str], env: dict[str, str], cwd: str) -> int:
    """Instructions the process executes, counted by valgrind's callgrind: unlike seconds, the
    same on a loaded machine (string hashing fixed, ``PYTHONHASHSEED=0``)."""
    if argv[0] == "env":  # valgrind does not follow env's exec: set its variables here
        while "=" in argv[1]:
            name, value = argv[1].split("=", 1)
            env, argv = {**env, name: value}, [argv[0], *argv[2:]]
        argv = argv[1:]
    proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                           *argv], env={**env, "PYTHONHASHSEED": "0"}, cwd=cwd,
                          capture_output=True, text=True, check=True)
    return int(re.search(r"Collected : (\d+)", proc.stderr).group(1))


def regular_install(tmp: Path) -> str:
    """A scratch venv holding this checkout as a regular (non-editable) install; its other
    packages come from this interpreter's site-packages, appended to its path by a ``.pth``
    line (a directory added that way has its own ``.pth`` files ignored: no editable
    finder). Returns the venv's python."""
    venv = tmp / "regular"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    purelib = "import sysconfig; print(sysconfig.get_path('purelib'))"
    target = subprocess.run([python, "-c", purelib], check=True, capture_output=True,
                            text=True).stdout.strip()
    print(f"building a regular install of {ROOT} into {target} ...", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    target, str(ROOT)], check=True)
    ours = [sysconfig.get_path("purelib"), *site.getsitepackages()]
    Path(target, "zz_startup_benchmark_deps.pth").write_text(
        "\n".join(dict.fromkeys(p for p in ours if Path(p).is_dir())) + "\n")
    return python


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter whose kafkatx is measured (default: this one)")
    parser.add_argument("--regular-install", action="store_true",
                        help="also measure this checkout as a regular install (a scratch venv)")
    parser.add_argument("--instructions", action="store_true",
                        help="also count each command's instructions once (valgrind)")
    parser.add_argument("--kafkatx-root", type=Path,
                        help="run the kafkatx package of another checkout (PYTHONPATH; its C "
                             "extension built in place), for a before/after in one window")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kafkatx-startup-") as tmp:
        pythons = {"": args.python}
        if args.regular_install:
            pythons = {"editable ": args.python, "regular ": regular_install(Path(tmp))}
        logdir = Path(tmp) / "logdir"
        logdir.mkdir()
        shutil.copytree(ROOT / "fixtures" / "logdir" / "payments-0", logdir / "payments-0")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        if args.kafkatx_root is not None:
            env["PYTHONPATH"] = str(args.kafkatx_root.resolve())
        for label, python in pythons.items():
            run_all(label, python, logdir, env, tmp, args.repeat, args.instructions)


def run_all(label: str, python: str, logdir: Path, env: dict[str, str], tmp: str,
            repeat: int, count: bool) -> None:
    kafkatx = [python, "-m", "kafkatx"]
    runs = {
        "python -c pass": [python, "-c", "pass"],
        "python -c 'import numpy'": [python, "-c", "import numpy"],
        "  ... OPENBLAS_NUM_THREADS=1": ["env", "OPENBLAS_NUM_THREADS=1", python, "-c",
                                         "import numpy"],
        "  ... and click (the floor)": ["env", "OPENBLAS_NUM_THREADS=1", python, "-c",
                                        "import numpy, click"],
        "kafkatx --version": [*kafkatx, "--version"],
        "kafkatx lso (table)": [*kafkatx, "lso", str(logdir)],
        "kafkatx lso --format json": [*kafkatx, "lso", str(logdir), "--format", "json"],
        "kafkatx replay -f jsonl": [*kafkatx, "replay", str(logdir), "-t", "payments",
                                    "-p", "0", "-f", "jsonl"],
    }
    where = subprocess.run([python, "-c", "import kafkatx; print(kafkatx.__file__)"], env=env,
                           cwd=tmp, check=True, capture_output=True, text=True).stdout.strip()
    print(f"{label}install: {python} (kafkatx from {where})")
    print(f"{'command':28} {'wall s':>8} {'cpu s':>8}{' instr M':>9}   (best of {repeat})")
    for name, argv in runs.items():
        wall, cpu = best_of(argv, repeat, env, tmp)
        count_text = f"{instructions(argv, env, tmp) / 1e6:9.0f}" if count else ""
        print(f"{name:28} {wall:8.3f} {cpu:8.3f}{count_text}", flush=True)


if __name__ == "__main__":
    main()
