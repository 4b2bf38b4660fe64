"""``-o/--output PATH``: one meaning on every command. PATH is where the result goes, and its
suffix says the format: ``.json``, ``.jsonl``, ``.csv``, ``.html`` (timeline), ``.txt`` (the
table) write that file, exactly what ``--format`` of that name prints on stdout; any other
PATH (``.parquet`` or no suffix) is a new directory of Parquet datasets (``inspect``, ``lso``,
``verify``, ``groups``, ``replay``), the table still printed. PATH lies outside the inspected
paths: evidence is never written to.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import click
from click.core import ParameterSource

SUFFIX_FORMATS = {".json": "json", ".jsonl": "jsonl", ".csv": "csv", ".html": "html",
                  ".txt": "table"}


def suffix_format(path: str | os.PathLike[str]) -> str | None:
    """The text format ``path``'s suffix names, None for a Parquet target."""
    return SUFFIX_FORMATS.get(Path(path).suffix.lower())


def format_for_output(path: str | os.PathLike[str], fmt: str) -> str:
    """The format of ``--output path``: its suffix's; a ``--format`` given on the command line
    that says otherwise is a usage error. The suffix's format is checked as ``--format`` is."""
    said = suffix_format(path)
    if said is None or said == fmt:
        return fmt
    ctx = click.get_current_context()
    if ctx.get_parameter_source("fmt") not in (ParameterSource.DEFAULT, None):
        raise click.UsageError(f"--output {path} is a .{Path(path).suffix[1:]} file but "
                               f"--format is {fmt}: give one of them, or the same format")
    param = next(p for p in ctx.command.params if p.name == "fmt")
    return param.process_value(ctx, said)  # type: ignore[no-any-return]


def check_output_file(output: str | os.PathLike[str], paths: Sequence[str]) -> None:
    """``--output`` must lie outside every inspected path (evidence is never written to)."""
    target = os.path.realpath(output)
    for root in paths:
        real_root = os.path.realpath(root)
        try:
            inside = os.path.commonpath([real_root, target]) == real_root
        except ValueError:
            inside = False
        if inside:
            raise click.BadParameter(
                f"{output} is inside the inspected path {root}: evidence directories are never "
                "written to; choose a location outside it", param_hint="'--output'")
    parent = Path(output).parent
    if not parent.is_dir():
        raise click.BadParameter(f"{parent} is not a directory", param_hint="'--output'")


@contextmanager
def stdout_to(output: str | os.PathLike[str]) -> Iterator[None]:
    """What the command prints on stdout goes to the file ``output``."""
    try:
        f = open(output, "w", encoding="utf-8")  # noqa: SIM115 (stdout for the block)
    except OSError as exc:
        raise click.FileError(str(output), hint=exc.strerror or str(exc)) from None
    saved = sys.stdout
    sys.stdout = f
    try:
        yield
    finally:
        sys.stdout = saved
        f.close()
