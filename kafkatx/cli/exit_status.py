"""The exit status of every command, and an error as scripts read it.

0: nothing at error level; 1: error-level findings (``verify``); 2: a usage error, or evidence
that cannot be analysed (a path that is missing, not a directory or holds no Kafka data, a file
that cannot be read); 3: an internal error (a bug of kafkatx). With ``--format json`` or
``jsonl`` an error is also a JSON object on stdout (:func:`error_document`).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence

EXIT_OK = 0
EXIT_ERRORS_FOUND = 1
EXIT_USAGE = 2  # click's convention; also evidence that cannot be analysed
EXIT_INTERNAL = 3

USAGE = "usage"  # the command line is wrong
EVIDENCE = "evidence"  # what the paths hold cannot be analysed
INTERNAL = "internal"  # a bug of kafkatx

JSON_FORMATS = ("json", "jsonl")


def output_format(args: Sequence[str]) -> str | None:
    """The ``--format``/``-f`` the command line asks for, read before click parses it (an error
    may come before or during parsing)."""
    found = None
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg in ("--format", "-f") and i + 1 < len(args):
            found = args[i + 1]
        elif arg.startswith("--format="):
            found = arg.partition("=")[2]
        elif arg.startswith("-f") and not arg.startswith("--") and len(arg) > 2:
            found = arg[2:]
    return found


def error_document(kind: str, message: str, status: int, exc: BaseException | None = None
                   ) -> dict[str, object]:
    """``{"error": {"kind", "message", "exit_status", ...}}``; a file's error adds ``path``,
    and a format error ``position`` and ``field``."""
    error: dict[str, object] = {"kind": kind, "message": message, "exit_status": status}
    for name in ("path", "position", "field"):
        value = getattr(exc, name, None)
        if value is not None:
            error[name] = str(value) if name == "path" else value
    return {"error": error}


def write_error(fmt: str | None, kind: str, message: str, status: int,
                exc: BaseException | None = None) -> None:
    """The JSON error object on stdout when the command line asked for JSON."""
    if fmt not in JSON_FORMATS:
        return
    doc = error_document(kind, message, status, exc)
    text = json.dumps(doc, ensure_ascii=False, indent=1 if fmt == "json" else None)
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except (BrokenPipeError, ValueError, OSError):
        pass
