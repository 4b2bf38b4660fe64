"""kafka-python's own integration suite, from the sdist of the installed kafka-python, run in a
subprocess against a broker that is already running (``KAFKA_URI``).

The sdist ships ``test/integration`` and ``test/testutil.py`` but neither ``test/__init__.py``
nor the ``test/service.py`` the fixtures import; ``prepare`` adds both (``service_shim.py``) and a
``pytest.ini`` of its own, so neither kafka-python's pytest settings (pytest-timeout options)
nor ours (warnings as errors) apply to its tests.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

REPO_ROOT = Path(__file__).resolve().parents[3]
CACHE_DIR = REPO_ROOT / ".cache" / "kafka-python-sdist"
SHIM = Path(__file__).with_name("service_shim.py")
DOWNLOAD_TIMEOUT_S = 300.0
OUTCOME_LINE = re.compile(r"^(PASSED|FAILED|ERROR|XPASS|XFAIL) (\S+)")
SUMMARY_LINE = re.compile(r"^(?:=+ )?(\d+ \w+(?:, \d+ \w+)*) in [\d.]+s")


def installed_version() -> str:
    return importlib.metadata.version("kafka-python")


def sdist(version: str, cache_dir: Path = CACHE_DIR) -> Path:
    """The sdist of kafka-python ``version`` in ``cache_dir``, downloaded with pip if absent
    (into a temporary directory first, so an interrupted download never looks cached)."""
    for name in (f"kafka_python-{version}.tar.gz", f"kafka-python-{version}.tar.gz"):
        if (cache_dir / name).is_file():
            return cache_dir / name
    cache_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
        run = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--no-binary", ":all:", "--dest", tmp, f"kafka-python=={version}"],
            capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT_S, check=False)
        found = sorted(Path(tmp).glob("*.tar.gz"))
        if run.returncode != 0 or len(found) != 1:
            raise RuntimeError(f"pip download of the kafka-python {version} sdist failed "
                               f"(exit {run.returncode}):\n{run.stdout}\n{run.stderr}")
        target = cache_dir / found[0].name
        os.replace(found[0], target)
    return target


def prepare(sdist_path: Path, dest: Path) -> Path:
    """Extract the sdist's ``test/`` tree into ``dest``, add the shims; returns ``dest``."""
    with tarfile.open(sdist_path) as tar:
        for member in tar.getmembers():
            parts = PurePosixPath(member.name).parts
            if len(parts) < 3 or parts[1] != "test" or not member.isfile():
                continue
            if any(p in ("..", "") for p in parts) or PurePosixPath(member.name).is_absolute():
                raise RuntimeError(f"{sdist_path}: unsafe member {member.name!r}")
            target = dest.joinpath(*parts[1:])
            target.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            assert source is not None
            with source, open(target, "wb") as out:
                shutil.copyfileobj(source, out)
    suite = dest / "test"
    if not (suite / "integration" / "conftest.py").is_file():
        raise RuntimeError(f"{sdist_path}: no test/integration/conftest.py in the sdist")
    init = suite / "__init__.py"
    if not init.exists():
        init.write_text('"""kafka-python\'s tests (package marker added by kafkatx)."""\n')
    shutil.copyfile(SHIM, suite / "service.py")
    (dest / "pytest.ini").write_text("[pytest]\n")
    (dest / "kafka-root").mkdir(exist_ok=True)  # KAFKA_ROOT must exist; nothing runs from it
    return dest


@dataclass
class SuiteRun:
    returncode: int
    output: str
    outcomes: dict[str, str] = field(default_factory=dict)  # node id -> PASSED/FAILED/...
    summary: str = ""

    def counts(self) -> dict[str, int]:
        """The final ``N passed, M failed ...`` line as {"passed": N, "failed": M, ...}."""
        out = {}
        for part in self.summary.split(","):
            number, _, word = part.strip().partition(" ")
            out[word.rstrip("s") if word in ("errors", "warnings") else word] = int(number)
        return out


def run(suite_dir: Path, bootstrap: str, node_ids: list[str], *, kafka_version: str,
        timeout_s: float, log_level: str | None = None) -> SuiteRun:
    """``python -m pytest`` over ``node_ids`` in ``suite_dir`` against ``bootstrap``;
    ``log_level``: what a failed test's captured log shows (pytest's ``log_level``)."""
    env = dict(os.environ, KAFKA_URI=f"PLAINTEXT://{bootstrap}", KAFKA_VERSION=kafka_version,
               KAFKA_ROOT=str(suite_dir / "kafka-root"), PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTEST_ADDOPTS", None)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfEsxXp",
           "-W", "ignore::DeprecationWarning", "--durations=5",
           *(("-o", f"log_level={log_level}") if log_level else ()), *node_ids]
    try:
        proc = subprocess.run(cmd, cwd=suite_dir, env=env, capture_output=True, text=True,
                              timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        partial = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) \
            else exc.stdout or ""
        return SuiteRun(-1, f"timed out after {timeout_s:.0f}s\n{partial}")
    result = SuiteRun(proc.returncode, proc.stdout + proc.stderr)
    for line in proc.stdout.splitlines():
        if m := OUTCOME_LINE.match(line):
            result.outcomes[m.group(2)] = m.group(1)
        elif m := SUMMARY_LINE.match(line):
            result.summary = m.group(1)
    return result
