"""The fuzz targets (``targets.py``): every corpus input replayed, then each target run under
atheris for a bounded time from that corpus.

``KAFKATX_FUZZ_SECONDS`` sets each target's time (default 4; a soak: 720 each is an hour in
all); new inputs go to a temporary directory, never into ``tests/fuzz/corpus``. A failing
input is kept in the test's temporary directory and named in the failure, with the target's
traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz.targets import TARGETS

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).with_name("corpus")
SECONDS = int(os.environ.get("KAFKATX_FUZZ_SECONDS", "4"))
#: The slowest target (a whole partition through inspect's analysis) gets inputs this large.
MAX_LEN = {"partition_dir": 4096, "segment": 8192}


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_every_corpus_input_ends_in_values_or_located_errors(name: str) -> None:
    seeds = sorted((CORPUS / name).iterdir())
    assert seeds, f"tests/fuzz/corpus/{name} is empty: python -m tests.fuzz.seed_corpus"
    for seed in seeds:
        try:
            TARGETS[name](seed.read_bytes())
        except Exception as exc:  # pragma: no cover - the failure message names the input
            raise AssertionError(f"{seed}: {type(exc).__name__}: {exc}") from exc


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_coverage_guided_fuzzing_finds_nothing(name: str, tmp_path: Path) -> None:
    pytest.importorskip("atheris", reason="atheris (the test extra) runs the fuzzers")
    new_inputs = tmp_path / "new"
    new_inputs.mkdir()
    artifacts = tmp_path / "failing"
    artifacts.mkdir()
    command = [sys.executable, "-m", "tests.fuzz.run", name,
               f"-max_total_time={SECONDS}", "-timeout=20", "-rss_limit_mb=4096",
               f"-max_len={MAX_LEN.get(name, 4096)}", f"-artifact_prefix={artifacts}/",
               "-print_final_stats=1", str(new_inputs), str(CORPUS / name)]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env,
                          timeout=SECONDS + 120, check=False)
    failing = sorted(artifacts.iterdir())
    assert done.returncode == 0 and not failing, (
        f"fuzz target {name} failed on {[str(f) for f in failing]}:\n{done.stderr[-6000:]}")
    runs = [line for line in done.stderr.splitlines()
            if line.startswith("stat::number_of_executed_units")]
    assert runs and int(runs[0].split(":")[-1]) > 0, done.stderr[-3000:]
