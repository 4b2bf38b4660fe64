"""No behaviour change unnoticed: every command prints what its golden file holds.

The golden files (``tests/golden/<command>/<case>.<format>.txt``) are what each command printed
on every bundled fixture, in each output format it has, when they were recorded by
``python tests/golden/regenerate.py`` (cases in ``tests/golden/cases.py``). A refactoring must
leave them all equal; a deliberate change of output (a Kafka fidelity fix) regenerates them
and the reviewed diff of ``tests/golden/`` goes into the same commit.
"""

from __future__ import annotations

import difflib

import pytest

from tests.golden.cases import GOLDEN, cases
from tests.golden.regenerate import golden_path, run

CASES = cases()


def test_every_case_has_a_golden_file_and_every_golden_file_a_case() -> None:
    recorded = {p.relative_to(GOLDEN).with_suffix("").as_posix()
                for p in GOLDEN.glob("*/*.txt")}
    assert recorded == {name for name, _ in CASES}, \
        "run python tests/golden/regenerate.py and review the diff"


def test_the_cases_cover_every_analysis_command() -> None:
    commands = {name.split("/")[0] for name, _ in CASES}
    assert commands == {"lso", "inspect", "verify", "timeline", "replay", "dump", "groups",
                        "cluster", "txn-partition"}


@pytest.mark.parametrize(("name", "argv"), CASES, ids=[name for name, _ in CASES])
def test_command_prints_its_golden_output(name: str, argv: list[str]) -> None:
    expected = golden_path(name).read_text()
    actual = run(argv)
    if actual != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(keepends=True),
                                            actual.splitlines(keepends=True),
                                            f"golden/{name}", "now", n=2))
        pytest.fail(f"{name} changed (python tests/golden/regenerate.py {name} after a "
                    f"deliberate change; review the diff):\n{diff[:6000]}", pytrace=False)
