"""Every ``console`` example in the README and ``docs/`` runs, and prints what it shows.

A ```` ```console ```` block holds ``$ kafkatx ...`` command lines, each followed by the output
it prints (stdout), compared line by line with trailing spaces ignored (run without
``COLUMNS``, so help texts wrap as on an 80-column pipe; examples on the Spark engine run in
the test session's SparkSession). A command that exits with another status than 0 ends its
output with a line ``[exit status N]`` (as ``kafkatx verify`` does when it finds an error).
Commands run from the repository root; only ``kafkatx`` commands are allowed in such blocks
(shell set-up goes in ``sh`` blocks, which are not run).

The docs are also checked as a set: every page in ``docs/`` is linked from the README or from
``docs/README.md``, and every relative link (and its ``#anchor``) resolves, in them and in the
fixtures' and benchmarks' READMEs.

``python tests/test_docs_examples.py [FILE...]`` rewrites the output under each command with
what it prints now (all docs, or the files given): for a new example or a deliberate change of
output; review the diff.
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

# The bundled fixtures' file times are when they were checked out: outputs on them measure ages
# from each partition's newest record (--now data), so they do not depend on that moment.
os.environ.setdefault("KAFKATX_NOW", "data")

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINKING = [*DOCS, ROOT / "fixtures" / "README.md", ROOT / "benchmarks" / "README.md"]
_BLOCK = re.compile(r"^```console\n(.*?)^```$", re.M | re.S)
_EXIT = re.compile(r"^\[exit status (\d+)\]$")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```$", re.M | re.S)


def parse_block(block: str) -> list[tuple[str, list[str], int]]:
    """The (command, expected stdout lines, expected exit status) of one console block."""
    out: list[tuple[str, list[str], int]] = []
    command: str | None = None
    expected: list[str] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            if command is not None:
                out.append((command, *_split_status(expected)))
            command, expected = line[2:], []
        elif command is not None:
            expected.append(line.rstrip())
    if command is not None:
        out.append((command, *_split_status(expected)))
    return out


def _split_status(lines: list[str]) -> tuple[list[str], int]:
    if lines and (match := _EXIT.match(lines[-1])):
        return lines[:-1], int(match.group(1))
    return lines, 0


def examples() -> list[tuple[str, str, list[str], int]]:
    return [(doc.name if doc.parent == ROOT else f"docs/{doc.name}", *example)
            for doc in DOCS
            for block in _BLOCK.findall(doc.read_text())
            for example in parse_block(block)]


def run(command: str) -> subprocess.CompletedProcess[str]:
    argv = shlex.split(command)
    assert argv[0] == "kafkatx", f"only kafkatx commands run in console blocks: {command}"
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return subprocess.run([sys.executable, "-m", "kafkatx", *argv[1:]], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def printed(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [line.rstrip() for line in proc.stdout.rstrip("\n").splitlines()]


EXAMPLES = examples()


def test_there_are_examples() -> None:
    assert EXAMPLES


def uses_spark(command: str) -> bool:
    argv = shlex.split(command)
    return "--master" in argv or "--engine=spark" in argv or any(
        a == "--engine" and b == "spark" for a, b in itertools.pairwise(argv))


def run_in_spark_session(command: str, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    """A Spark example runs in this process, in the test session's SparkSession (kafkatx uses
    an active session, as under spark-submit), not in a JVM of its own: the same output in
    seconds instead of half a minute (``tests/engines`` run the separate-process path)."""
    from click.testing import CliRunner

    from kafkatx.cli.main import cli

    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("COLUMNS", raising=False)
    result = CliRunner().invoke(cli, shlex.split(command)[1:])
    return result.exit_code, result.stdout


@pytest.mark.parametrize(("doc", "command", "expected", "status"), EXAMPLES,
                         ids=[f"{d}: {c}" for d, c, _, _ in EXAMPLES])
def test_example_prints_what_the_docs_show(doc: str, command: str, expected: list[str],
                                           status: int, request: pytest.FixtureRequest,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    if uses_spark(command):
        request.getfixturevalue("spark_session")
        code, stdout = run_in_spark_session(command, monkeypatch)
    else:
        proc = run(command)
        assert proc.returncode == status, f"{doc}: {command}: {proc.stderr}"
        code, stdout = proc.returncode, proc.stdout
    assert code == status, f"{doc}: {command}"
    assert [line.rstrip() for line in stdout.rstrip("\n").splitlines()] == expected, \
        f"{doc}: {command}"


def test_the_spark_data_source_example_prints_what_the_docs_show(
        spark_session: Any, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/spark.md's ``python`` block, run in the test session's SparkSession as ``spark``,
    prints the ``text`` block after it (the ``kafka_segments`` source, as Spark users read it)."""
    page = (ROOT / "docs" / "spark.md").read_text()
    match = re.search(r"^```python\n(.*?)^```\n.*?^```text\n(.*?)^```$", page, re.M | re.S)
    assert match, "docs/spark.md: a python block followed by its text output"
    monkeypatch.chdir(ROOT)
    exec(compile(match.group(1), "docs/spark.md", "exec"), {"spark": spark_session})
    assert capsys.readouterr().out.strip() == match.group(2).strip()


def _anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation but ``-`` and ``_`` dropped, spaces
    to ``-``, a ``-N`` suffix for repeats."""
    seen: dict[str, int] = {}
    anchors = set()
    for heading in re.findall(r"^#{1,6} (.*)$", _FENCE.sub("", markdown), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def _links(doc: Path) -> list[str]:
    return _LINK.findall(_FENCE.sub("", doc.read_text()))


@pytest.mark.parametrize("page", sorted((ROOT / "docs").glob("*.md")), ids=lambda p: p.name)
def test_every_docs_page_starts_with_an_example(page: Path) -> None:
    """The first block of a page, before its first section, is a ``console`` example (run
    above); a guide to a Python API may start with a ``python`` block its own tests run."""
    text = page.read_text()
    section = re.search(r"^## ", text, re.M)
    first_section = section.start() if section else len(text)
    fence = re.search(r"^```(\w*)$", text, re.M)
    assert fence and fence.start() < first_section, f"{page.name}: no example first"
    assert fence.group(1) in ("console", "python"), f"{page.name}: starts with {fence.group(1)!r}"


def test_every_docs_page_is_linked_from_the_readme_or_the_docs_index() -> None:
    linked = set()
    for index in (ROOT / "README.md", ROOT / "docs" / "README.md"):
        for target in _links(index):
            if "://" not in target and not target.startswith("#"):
                linked.add((index.parent / target.split("#")[0]).resolve())
    pages = {page.resolve() for page in (ROOT / "docs").glob("*.md")} - {
        (ROOT / "docs" / "README.md").resolve()}
    assert (ROOT / "docs" / "README.md").resolve() in linked
    assert sorted(str(p.relative_to(ROOT)) for p in pages - linked) == []


@pytest.mark.parametrize("doc", LINKING, ids=lambda d: str(d.relative_to(ROOT)))
def test_relative_links_resolve(doc: Path) -> None:
    broken = []
    for target in _links(doc):
        if "://" in target or target.startswith("mailto:"):
            continue
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        anchor_missing = (file.exists() and bool(anchor) and file.suffix == ".md"
                          and anchor not in _anchors(file.read_text()))
        if not file.exists() or anchor_missing:
            broken.append(target)
    assert broken == []


def update(doc: Path) -> None:
    """Rewrite the output of every console example in ``doc`` with what it prints now."""
    def regenerate(match: re.Match[str]) -> str:
        lines = []
        for command, _, _ in parse_block(match.group(1)):
            proc = run(command)
            lines += [f"$ {command}", *printed(proc)]
            if proc.returncode:
                lines.append(f"[exit status {proc.returncode}]")
        return "```console\n" + "\n".join(lines) + "\n```"
    doc.write_text(_BLOCK.sub(regenerate, doc.read_text()))


if __name__ == "__main__":
    for name in sys.argv[1:] or [str(d) for d in DOCS]:
        update(Path(name).resolve())
