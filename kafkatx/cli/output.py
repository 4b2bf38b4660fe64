"""Shared output plumbing: ``--format`` options, consoles, JSON/JSONL writers."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

import click

if TYPE_CHECKING:  # rich costs ~20 ms to import: only commands that draw load it
    from rich.console import Console

#: The formats every command's ``--format`` accepts (``timeline`` adds html); a command that
#: cannot give one refuses it with a one-line usage error (exit 2) saying why.
FORMATS = ("table", "json", "jsonl", "csv")
_FORMAT_USES = {"table": "a table for people", "html": "a page for a browser"}


class FormatNotApplicable(click.ClickException):
    """``--format X`` where the command's output has no X form: a usage error (exit 2)."""

    exit_code = 2


def format_option(supported: tuple[str, ...], default: str = "table", *,
                  why: dict[str, str] | None = None) -> Callable[[Any], Any]:
    """``-f/--format`` with the same choices on every command; ``supported`` the ones this
    command gives, ``why`` the reason for each other one."""
    choices = FORMATS + tuple(c for c in supported if c not in FORMATS)
    scripts = "/".join(c for c in supported if c not in _FORMAT_USES)
    uses = [_FORMAT_USES["table"]] if "table" in supported else []
    uses += [f"{scripts} for scripts"] if scripts else []
    uses += [f"html {_FORMAT_USES['html']}"] if "html" in supported else []

    def check(ctx: click.Context, param: click.Parameter, value: str) -> str:
        if value in supported:
            return value
        reason = (why or {}).get(value, "it has no such form")
        raise FormatNotApplicable(
            f"--format {value} does not apply to kafkatx {ctx.info_name}: {reason} (it writes "
            f"{', '.join(supported)})")

    return click.option(
        "-f", "--format", "fmt", type=click.Choice(choices), default=default, show_default=True,
        callback=check, help="Output format: " + ", ".join(uses) + ".",
    )


def write_json(items: list[dict[str, Any]], fmt: str, out: TextIO | None = None) -> None:
    """``items`` as one JSON array (``json``) or one object a line (``jsonl``)."""
    out = sys.stdout if out is None else out
    if fmt == "jsonl":
        writer = JsonWriter(out, array=False)
        for item in items:
            writer.write(item)
        writer.close()
    else:
        out.write(json.dumps(items, indent=1, ensure_ascii=False) + "\n")


def encodes(text: str, stream: TextIO | None = None) -> bool:
    """Whether ``stream`` (stdout) can write ``text`` in its encoding."""
    encoding = getattr(stream or sys.stdout, "encoding", None) or "ascii"
    try:
        text.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def glyph(text: str, ascii_text: str) -> str:
    """``text`` where stdout's encoding has it (UTF-8), else its ASCII stand-in."""
    return text if encodes(text) else ascii_text


def tolerate_any_encoding() -> None:
    """A terminal or pipe whose encoding lacks a character (``PYTHONIOENCODING=ascii``, a
    latin-1 locale) gets it as a backslash escape instead of an error: ``\\u2212`` stays
    valid JSON."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None and not encodes("\u2212\u21b3\u2026", stream):
            reconfigure(errors="backslashreplace")


# rich's emoji code pattern (rich._emoji_replace): ``:name:`` or ``:name-emoji:``/``-text:``.
_EMOJI_SPAN = re.compile(r"(:(\S*?)(?:(?:\-)(emoji|text))?:)")
_NO_EMOJI_NAME = re.compile(r"[0-9]{2}")  # a time's ``:MM:``; rich has no two-digit code


def emoji_free(text: str) -> bool:
    """Whether rich's emoji codes certainly leave ``text`` (printed with or without markup) as
    it is, told without loading rich's emoji table (~5 ms) where its only ``:name:`` spans are
    two digits (a time's minutes); False where rich's own replacement must decide."""
    if ":" not in text:
        return True
    if "[" in text:  # markup: rich replaces codes in the pieces between the tags
        return False
    return all(_NO_EMOJI_NAME.fullmatch(m.group(2)) for m in _EMOJI_SPAN.finditer(text))


def emoji_option(text: str) -> bool | None:
    """``Console.print``'s ``emoji`` for ``text``: False (the same bytes, and rich's emoji
    table left unloaded) where :func:`emoji_free`, else the console's default."""
    return False if emoji_free(text) else None


PIPED_WIDTH = 220  # a piped or redirected table's columns (every column whole, not 80)
# rich colours a stream that is no terminal where one of these says so (Console.is_terminal)
_FORCE_TERMINAL = frozenset({"FORCE_COLOR", "TTY_COMPATIBLE"})


def _plain_stream(stream: TextIO) -> bool:
    """Whether rich's console on ``stream`` would have no colours: no terminal, and no
    environment variable making it one."""
    return not stream.isatty() and not _FORCE_TERMINAL & set(os.environ)


def stdout_console(file: TextIO | None = None) -> Console:
    """rich's console on stdout (or ``file``, written as stdout is)."""
    from rich.console import Console

    file = sys.stdout if file is None else file
    # Piped or redirected tables keep every column whole instead of squeezing to 80 columns.
    width = None if file.isatty() else PIPED_WIDTH
    return Console(file=file, soft_wrap=False, width=width, highlight=False)


def stderr_console() -> Console:
    from rich.console import Console

    return Console(file=sys.stderr, highlight=False, soft_wrap=True)


# What a print may ask and still be written plainly: the styles kafkatx prints lines in (no
# colours, so rich writes none of them) and the options that change nothing else there.
_PLAIN_STYLES = frozenset({None, "dim", "bold", "bold red", "yellow", "green"})
_PLAIN_OPTIONS = frozenset({"markup", "highlight", "emoji", "style"})


def plain_line(objects: tuple[Any, ...], options: dict[str, Any],
               width: int | None) -> str | None:
    """What rich's console on a stream with no colours writes for ``print(*objects,
    **options)``, where that is one printable string that markup (none: no ``[``, or
    ``markup=False``) and emoji codes (none: :func:`emoji_free`, or ``emoji=False``) leave as
    it is, in one of ``_PLAIN_STYLES``, and ASCII no longer than ``width`` (None: a console
    that soft-wraps, which never folds a line): the text and a newline. None where only rich
    can tell."""
    text = objects[0] if len(objects) == 1 else None
    if not (isinstance(text, str) and _PLAIN_OPTIONS.issuperset(options)
            and options.get("style") in _PLAIN_STYLES and text.isprintable()):
        return None
    if options.get("markup") is not False and "[" in text:
        return None
    if options.get("emoji") is not False and not emoji_free(text):
        return None
    if width is not None and not (text.isascii() and len(text) <= width):
        return None
    return text + "\n"


class _LazyConsole:
    """A stream's rich console, created by ``make`` the first time something needs rich;
    ``plain``: the stream is no terminal (rich would write no colours). What it does not
    define itself is the console's."""

    def __init__(self, stream: TextIO, make: Callable[[], Console]) -> None:
        self._console: Console | None = None
        self._make = make
        self.plain = _plain_stream(stream)

    @property
    def console(self) -> Console:
        if self._console is None:
            self._console = self._make()
        return self._console

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # not set yet (a copy, a half-built object): not rich's
            raise AttributeError(name)
        return getattr(self.console, name)


class StderrLines(_LazyConsole):
    """stderr's console for lines of plain text: where stderr is no terminal, a line
    :func:`plain_line` can tell is written as rich would write it (the text and a newline,
    flushed) without importing rich; anything else goes to :func:`stderr_console` (created
    then). tests/test_cli_startup.py proves the bytes equal to rich's."""

    def __init__(self) -> None:
        super().__init__(sys.stderr, stderr_console)

    def print(self, *objects: Any, **options: Any) -> None:
        line = plain_line(objects, options, None) \
            if self.plain and self._console is None else None
        if line is None:
            self.console.print(*objects, **options)
            return
        sys.stderr.write(line)
        sys.stderr.flush()


class StdoutLines(_LazyConsole):
    """stdout's (or ``file``'s) console (:func:`stdout_console`), created when something
    needs rich. Where stdout is no terminal, what a plain writer asks of it is known without
    rich: no colours (``color_system`` None), ``PIPED_WIDTH`` columns; :meth:`print` writes a
    line :func:`plain_line` can tell (what fits in those columns) as rich would, and
    :meth:`heading` a ``[bold]TEXT[/] [dim](NOTE)[/]`` line whose text markup does not change
    (tests/test_cli_startup.py proves the bytes equal to rich's)."""

    def __init__(self, file: TextIO | None = None) -> None:
        self.file = sys.stdout if file is None else file
        super().__init__(self.file, lambda: stdout_console(self.file))

    @property
    def color_system(self) -> str | None:
        return None if self.plain else self.console.color_system

    @property
    def width(self) -> int:
        return PIPED_WIDTH if self.plain else self.console.width

    def print(self, *objects: Any, **options: Any) -> None:
        line = plain_line(objects, options, PIPED_WIDTH) if self.plain else None
        if line is None:
            self.console.print(*objects, **options)
            return
        self.file.write(line)
        self.file.flush()  # as rich does after each print: stderr's lines keep their place

    def heading(self, text: str, note: str) -> None:
        line = f"{text} ({note})"
        if "[" in line or "\\" in line:  # the tags around TEXT and NOTE would be read otherwise
            self.console.print(f"[bold]{text}[/] [dim]({note})[/]")
        else:
            self.print(line)


def write_utf8(file: TextIO, data: bytes) -> None:
    """UTF-8 ``data`` onto a text stream: as bytes onto a UTF-8 stream's buffer (the stream
    flushed first, so that the order stays; no decoding and encoding again), else as text."""
    buffer = getattr(file, "buffer", None)
    if buffer is not None and str(getattr(file, "encoding", "")).lower().replace("-", "") \
            == "utf8":
        file.flush()
        buffer.write(data)
    else:
        file.write(data.decode())


class BufferedText:
    """Text gathered and written in large pieces (one write per ``FLUSH_AT`` characters; at
    once to a terminal, where lines should show as they come)."""

    FLUSH_AT = 1 << 18

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._parts: list[str] = []
        self._size = 0
        isatty = getattr(out, "isatty", None)
        self._at_once = bool(isatty and isatty())

    def put(self, text: str) -> None:
        self._parts.append(text)
        self._size += len(text)
        if self._size >= self.FLUSH_AT or self._at_once:
            self.flush()

    def put_utf8(self, data: bytes) -> None:
        """UTF-8 text (a large piece: written at once, after what is gathered)."""
        self._write_parts()
        write_utf8(self.out, data)
        if self._at_once:
            self.out.flush()

    def _write_parts(self) -> None:
        if self._parts:
            self.out.write("".join(self._parts))
            self._parts.clear()
            self._size = 0

    def flush(self) -> None:
        self._write_parts()
        self.out.flush()


class JsonWriter:
    """Writes items as JSON lines, or as one JSON array at ``close``."""

    def __init__(self, out: TextIO, *, array: bool) -> None:
        from kafkatx.formats.raw_json import RawJsonList  # kafkatx.formats: not at start-up

        self._raw_type = RawJsonList
        self.out = BufferedText(out)
        self.array = array
        self.first = True
        # One encoder for every item (json.dumps with options builds one per call).
        self._encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

    def write(self, item: dict[str, Any]) -> None:
        self.write_encoded(self._encode_item(item))

    @property
    def item_separator(self) -> str:
        """What comes between two items' JSON text."""
        return ",\n" if self.array else "\n"

    def write_encoded(self, text: str | bytes) -> None:
        """Items already JSON text (or its UTF-8 bytes), joined by :attr:`item_separator` (as if
        written one by one)."""
        if isinstance(text, bytes):  # written whole: its last line, too, ends with it
            if self.array:
                self.out.put("[\n" if self.first else ",\n")
                self.out.put_utf8(text)
            else:
                self.out.put_utf8(text + b"\n")
        elif self.array:
            self.out.put(("[\n" if self.first else ",\n") + text)
        else:
            self.out.put(text + "\n")
        self.first = False

    def _encode_item(self, item: dict[str, Any]) -> str:
        """``item`` as JSON; a last value that is a ``RawJsonList`` spliced in as its array."""
        last = next(reversed(item), None)
        raw = item[last] if last is not None else None
        if not isinstance(raw, self._raw_type):
            return self._encode(item)
        del item[last]  # encoded without it, then given back
        try:
            head = self._encode(item)
        finally:
            item[last] = raw
        return f"{head[:-1]}{',' if len(item) > 1 else ''}{self._encode(last)}:[{raw.text}]}}"

    def close(self) -> None:
        if self.array:
            self.out.put("[]\n" if self.first else "\n]\n")
        self.out.flush()
