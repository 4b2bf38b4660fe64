"""A :class:`~kafkatx.cli.render.FitTable` printed without rich where that gives rich's bytes.

rich measures and renders every cell through several layers of objects (~0.5 ms a row of
``replay``'s table, most of its time). On a console without colours (piped, redirected,
``NO_COLOR``) a table whose cells are plain printable ASCII and whose columns all fit at their
natural widths prints as fixed-width lines; :func:`plain_table_text` writes those lines itself
and returns None for anything else (colours, markup or emoji codes that change a cell,
spaces at either end of a cell, characters other than printable ASCII and the one-cell
glyphs ``↳``, ``…`` and ``−``, an empty column, a table that
must shrink or drop columns), which rich then renders.
tests/test_plain_table.py proves the text equal to rich's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from kafkatx.cli.output import emoji_free

if TYPE_CHECKING:
    from rich.console import Console

    from kafkatx.cli.output import StdoutLines


class Col(Protocol):
    """What a column needs here (``kafkatx.cli.render.Col`` has it)."""

    name: str
    justify: str

_PRINTABLE_ASCII = frozenset(chr(c) for c in range(32, 127))
# Besides printable ASCII, the one-cell glyphs kafkatx itself writes (``glyph``): a record's
# arrow under its batch (dump), ``shorten``'s ellipsis and the minus of a ``HWM−LSO`` header.
_ONE_CELL = _PRINTABLE_ASCII | {"\u21b3", "\u2026", "\u2212"}


def emoji_unchanged(text: str) -> bool:
    """Whether rich's emoji codes leave ``text`` (no markup) as it is; rich is imported only
    where :func:`emoji_free` cannot tell."""
    if emoji_free(text):
        return True
    from rich._emoji_replace import _emoji_replace

    return _emoji_replace(text) == text


def cell_text(out: Console | StdoutLines, cell: str) -> str | None:
    """The cell as rich shows it (markup applied), or None when that is not plain printable
    ASCII (and the glyphs of ``_ONE_CELL``) or holds an emoji code."""
    if "[" in cell:
        text = out.render_str(cell).plain
    elif not emoji_unchanged(cell):
        return None
    else:
        text = cell
    if not (_PRINTABLE_ASCII if text.isascii() else _ONE_CELL).issuperset(text):
        return None
    if text != text.strip(" "):  # rich strips a right-justified cell's trailing spaces
        return None
    return text


def plain_table_text(out: Console | StdoutLines, columns: Sequence[Col],
                     rows: Sequence[Sequence[str]], *, show_header: bool, gap: int
                     ) -> str | None:
    """The text rich prints for a table of ``columns`` (``box=None``, no edge padding, ``gap``
    spaces between columns) on ``out``, or None where only rich can tell."""
    if out.color_system is not None or not rows:
        return None
    shown: list[Sequence[str]] = []
    for col, cells in zip(columns, zip(*rows, strict=True), strict=True):
        if show_header:
            cells = (col.name, *cells)
        texts = _column_texts(out, cells)
        if texts is None:
            return None
        shown.append(texts)
    widths = [max(map(len, texts)) for texts in shown]
    if 0 in widths:  # rich sizes an empty column its own way
        return None
    if sum(widths) + gap * (len(columns) - 1) > out.width:
        return None
    line = (" " * gap).join(f"%{w}s" if col.justify == "right" else f"%-{w}s"
                            for w, col in zip(widths, columns, strict=True))
    return "\n".join(line % cells for cells in zip(*shown, strict=True)) + "\n"


def _column_texts(out: Console | StdoutLines, cells: Sequence[str]) -> Sequence[str] | None:
    """:func:`cell_text` of each of ``cells``, or None when one has none."""
    distinct = set(cells)  # a column's cells repeat (a status, a producer, empty cells)
    # All at once, when no cell has markup, an emoji code (a space between cells ends any
    # ``:name:`` span), spaces at an end, or characters beyond the plain ones: shown as they are.
    joined = " ".join(distinct)
    lines = "\n".join(distinct)
    if ("[" not in joined and emoji_unchanged(joined)
            and ((joined.isascii() and joined.isprintable()) or _ONE_CELL.issuperset(joined))
            and lines[:1] != " " and lines[-1:] != " " and " \n" not in lines
            and "\n " not in lines):
        return cells
    known = {cell: cell_text(out, cell) for cell in distinct}
    if None in known.values():
        return None
    if all(cell == text for cell, text in known.items()):
        return cells
    return [known[cell] for cell in cells]  # type: ignore[misc]
