"""Every ``console`` example in the README and ``docs/`` runs, and prints what it shows.

A ```` ```console ```` block holds ``$ kafkatx ...`` command lines, each followed by the output
it prints (stdout), compared line by line with trailing spaces ignored. Commands run from the
repository root; only ``kafkatx`` commands are allowed in such blocks (shell set-up goes in
``sh`` blocks, which are not run).
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"^```console\n(.*?)^```$", re.M | re.S)


def examples() -> list[tuple[str, str, list[str]]]:
    out = []
    for doc in DOCS:
        for block in _BLOCK.findall(doc.read_text()):
            command: str | None = None
            expected: list[str] = []
            for line in block.splitlines():
                if line.startswith("$ "):
                    if command is not None:
                        out.append((doc.name, command, expected))
                    command, expected = line[2:], []
                elif command is not None:
                    expected.append(line.rstrip())
            if command is not None:
                out.append((doc.name, command, expected))
    return out


EXAMPLES = examples()


def test_there_are_examples() -> None:
    assert EXAMPLES


@pytest.mark.parametrize(("doc", "command", "expected"), EXAMPLES,
                         ids=[f"{d}: {c}" for d, c, _ in EXAMPLES])
def test_example_prints_what_the_docs_show(doc: str, command: str,
                                           expected: list[str]) -> None:
    argv = shlex.split(command)
    assert argv[0] == "kafkatx", f"{doc}: only kafkatx commands run in console blocks"
    proc = subprocess.run([sys.executable, "-m", "kafkatx", *argv[1:]], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    got = [line.rstrip() for line in proc.stdout.rstrip("\n").splitlines()]
    assert got == [line for line in expected], f"{doc}: {command}"
