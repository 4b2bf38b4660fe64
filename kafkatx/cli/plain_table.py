"""A :class:`~kafkatx.cli.render.FitTable` printed without rich where that gives rich's bytes.

rich measures and renders every cell through several layers of objects (~0.5 ms a row of
``replay``'s table, most of its time). On a console without colours (piped, redirected,
``NO_COLOR``) a table whose cells are plain printable ASCII and whose columns all fit at their
natural widths prints as fixed-width lines; :func:`plain_table_text` writes those lines itself
and returns None for anything else (colours, markup or emoji codes that change a cell,
spaces at either end of a cell, characters of other widths, an empty column, a table that
must shrink or drop columns), which rich then renders.
tests/test_plain_table.py proves the text equal to rich's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from rich.console import Console


class Col(Protocol):
    """What a column needs here (``kafkatx.cli.render.Col`` has it)."""

    name: str
    justify: str

_PRINTABLE_ASCII = frozenset(chr(c) for c in range(32, 127))


def cell_text(out: Console, cell: str) -> str | None:
    """The cell as rich shows it (markup applied), or None when that is not plain printable
    ASCII or holds an emoji code."""
    from rich._emoji_replace import _emoji_replace

    if "[" in cell:
        text = out.render_str(cell).plain
    elif ":" in cell and _emoji_replace(cell) != cell:
        return None
    else:
        text = cell
    if not text.isascii() or not _PRINTABLE_ASCII.issuperset(text):
        return None
    if text != text.strip(" "):  # rich strips a right-justified cell's trailing spaces
        return None
    return text


def plain_table_text(out: Console, columns: Sequence[Col], rows: Sequence[Sequence[str]], *,
                     show_header: bool, gap: int) -> str | None:
    """The text rich prints for a table of ``columns`` (``box=None``, no edge padding, ``gap``
    spaces between columns) on ``out``, or None where only rich can tell."""
    if out.color_system is not None or not rows:
        return None
    texts: list[list[str]] = []
    known: dict[str, str | None] = {}  # a column's cells repeat (a status, a producer)
    for cells in ([[c.name for c in columns]] if show_header else []) + [list(r) for r in rows]:
        line = []
        for cell in cells:
            text = known[cell] if cell in known else known.setdefault(cell, cell_text(out, cell))
            if text is None:
                return None
            line.append(text)
        texts.append(line)
    widths = [max(len(line[i]) for line in texts) for i in range(len(columns))]
    if 0 in widths:  # rich sizes an empty column its own way
        return None
    if sum(widths) + gap * (len(columns) - 1) > out.width:
        return None
    last = len(columns) - 1
    lines = []
    for line in texts:
        parts = []
        for i, (text, width, col) in enumerate(zip(line, widths, columns, strict=True)):
            parts.append(text.rjust(width) if col.justify == "right" else text.ljust(width))
            if i < last:
                parts.append(" " * gap)
        lines.append("".join(parts))
    return "\n".join(lines) + "\n"
