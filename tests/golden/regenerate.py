"""Record what every command prints on every bundled fixture (``tests/golden/``).

``python tests/golden/regenerate.py`` runs each case of ``tests/golden/cases.py`` and writes its
golden file: the command line, stdout, stderr (after a ``[stderr]`` line, when there is any)
and the exit status. ``tests/test_golden_outputs.py`` compares them with what the commands
print now, so a refactoring that changes an output fails. After a deliberate change of output
(a Kafka fidelity fix), run this script and review ``git diff tests/golden``: every changed line
is a behaviour change to explain in the commit.

``python tests/golden/regenerate.py NAME...`` rewrites only the cases whose name (``command/
case.format``) starts with one of the NAMEs. Stale golden files (no case) are removed.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import click
from click.testing import CliRunner

from kafkatx.cli.main import main as kafkatx_main
from tests.golden.cases import GOLDEN, ROOT, cases


@click.command(context_settings={"ignore_unknown_options": True, "help_option_names": []})
@click.argument("argv", nargs=-1, type=click.UNPROCESSED)
def _ENTRY(argv: tuple[str, ...]) -> None:
    """The installed ``kafkatx`` entry point (errors become one line and an exit status)."""
    kafkatx_main(list(argv))


def golden_path(name: str) -> Path:
    return GOLDEN / f"{name}.txt"


def run(argv: list[str]) -> str:
    """What ``kafkatx ARGV`` prints from the repository root, as one text."""
    previous = Path.cwd()
    os.chdir(ROOT)
    try:
        env = {"COLUMNS": None, "LINES": None, "KAFKATX_NO_EXTENSION": None, "TZ": "UTC"}
        result = CliRunner().invoke(_ENTRY, argv, env=env, catch_exceptions=False)
    finally:
        os.chdir(previous)
    text = f"$ kafkatx {shlex.join(argv)}\n{result.stdout}"
    if not text.endswith("\n"):
        text += "\n"
    if result.stderr:
        text += f"[stderr]\n{result.stderr}"
        if not text.endswith("\n"):
            text += "\n"
    return text + f"[exit status {result.exit_code}]\n"


def main(prefixes: list[str]) -> None:
    wanted = [(n, a) for n, a in cases() if not prefixes or n.startswith(tuple(prefixes))]
    for name, argv in wanted:
        path = golden_path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(run(argv))
    if not prefixes:
        known = {golden_path(n) for n, _ in cases()}
        for stale in GOLDEN.glob("*/*.txt"):
            if stale not in known:
                stale.unlink()
    print(f"{len(wanted)} golden file(s) written under {GOLDEN.relative_to(ROOT)}")


if __name__ == "__main__":
    main(sys.argv[1:])
