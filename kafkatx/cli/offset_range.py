"""``--from-offset``/``--to-offset``: offsets are >= 0 and a range must not run backwards."""

from __future__ import annotations

import click

OFFSET = click.IntRange(min=0)


def check_offset_range(from_offset: int | None, to_offset: int | None) -> None:
    """A usage error (exit 2) when ``--from-offset`` lies after ``--to-offset``."""
    if from_offset is not None and to_offset is not None and from_offset > to_offset:
        raise click.UsageError(
            f"--from-offset {from_offset} is after --to-offset {to_offset}: the range is empty")
