"""``kafkatx.testing``: the pytest plugin as an application's test suite uses it, from a
project directory outside this repository (the plugin found through its ``pytest11`` entry
point, as pip installed it), and the control protocol behind its run-time faults."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from kafkatx.broker.control import apply_command
from kafkatx.broker.faults import DropMarker, Faults

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
EXAMPLE = HERE / "example_test_app.py"


def test_the_example_runs_in_a_throwaway_project(tmp_path: Path) -> None:
    project = tmp_path / "my-app"
    project.mkdir()
    shutil.copy(EXAMPLE, project / "test_app.py")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "test_app.py"], cwd=project, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"\b2 passed\b", proc.stdout)


def test_the_docs_show_the_example() -> None:
    """The page shows the whole example file, as the test above runs it."""
    page = (ROOT / "docs" / "testing.md").read_text()
    assert f"```python\n{EXAMPLE.read_text().strip()}\n```" in page


def test_control_commands_change_the_faults_in_force() -> None:
    faults, answer = apply_command("add drop-marker:orders-0", Faults(()))
    assert answer == "ok drop-marker:orders-0"
    assert faults.rules == (DropMarker(topic="orders", partition=0),)
    assert faults.drops_marker("orders", 0) and not faults.drops_marker("orders", 1)
    same, answer = apply_command("add drop-marker:orders", faults)
    assert same is faults and answer.startswith("error: ")
    listed = apply_command("list", faults)[1]
    assert listed == "ok drop-marker:orders-0"
    none, answer = apply_command("remove drop-marker:orders-0", faults)
    assert none.rules == () and answer == "ok drop-marker:orders-0"
    assert apply_command("remove drop-marker:orders-0", none)[1].startswith("error: ")
    assert apply_command("clear", faults)[0].rules == ()
    assert apply_command("explode", faults)[1].startswith("error: unknown command")
