"""The reference pages in ``docs/`` cover what the code has: every finding kind with its
severity, every command in the README's list, every option of a command on its page.

A new finding kind, command or option fails here until it is documented where an operator
looks for it (the examples themselves are run by ``test_docs_examples.py``)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import click
import pytest

from kafkatx.analysis.findings import KINDS
from kafkatx.cli.main import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
_CATALOGUE_ROW = re.compile(r"^\| `([a-z_]+)` \| ([a-z]+)[^|]* \|", re.M)
# The README's command list: "- [`kafkatx NAME ...`](docs/PAGE.md): one line".
_COMMAND_LINE = re.compile(r"^- \[`kafkatx ([a-z-]+)[^`]*`\]\((docs/[a-z-]+\.md)\): .+$", re.M)


def command(name: str) -> click.Command:
    module, attribute, _ = COMMANDS[name]
    found: click.Command = getattr(importlib.import_module(module), attribute)
    return found


def readme_command_pages() -> dict[str, Path]:
    readme = (ROOT / "README.md").read_text()
    return {name: ROOT / page for name, page in _COMMAND_LINE.findall(readme)}


def test_the_readme_starts_with_the_two_set_up_commands_ci_runs() -> None:
    """The README's first lines are the install-and-inspect command and the test command;
    ``.ci/run`` runs exactly the second."""
    lines = (ROOT / "README.md").read_text().splitlines()
    assert lines[2] == "```sh" and lines[5] == "```"
    assert " && .venv/bin/kafkatx inspect fixtures/logdir" in lines[3]
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line and not line.startswith(("#", "set ", "cd "))]
    assert ci == [lines[4]]


def test_the_findings_catalogue_lists_every_kind_with_its_severity() -> None:
    """``kafkatx.analysis.findings.KINDS`` is what ``inspect`` and ``verify`` report: each kind
    has one row in docs/findings.md, whose severity column starts with the kind's severity
    (exceptions follow in parentheses)."""
    rows = dict(_CATALOGUE_ROW.findall((DOCS / "findings.md").read_text()))
    assert sorted(rows) == sorted(KINDS)
    assert {k: s for k, s in rows.items() if s != KINDS[k].severity} == {}


def test_the_readme_lists_every_command_with_its_page() -> None:
    pages = readme_command_pages()
    assert sorted(pages) == sorted(COMMANDS)
    assert [str(p) for p in pages.values() if not p.exists()] == []


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_is_on_the_commands_page(name: str) -> None:
    """Each long option of the command (as ``kafkatx NAME --help`` lists it) is named on the
    page the README links for that command."""
    page = readme_command_pages()[name].read_text()
    options = [opt for param in command(name).params for opt in param.opts
               if opt.startswith("--") and opt != "--help"]
    assert options
    assert [opt for opt in options
            if not re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", page)] == []
