"""Run ``python -m kafkatx`` as a user does, from the repository root, for the CLI tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def kafkatx(*args: str | Path, columns: int | None = None,
            env: Mapping[str, str | None] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``kafkatx ARGS``, its output as text. ``columns``: the width it draws tables for (else
    what the environment says); ``env``: variables set (``None``: removed). A traceback on
    stderr fails the test: no input of a user may give one."""
    environ: dict[str, str | None] = {**os.environ}
    if columns is not None:
        environ["COLUMNS"] = str(columns)
    environ.update(env or {})
    proc = subprocess.run([sys.executable, "-m", "kafkatx", *map(str, args)],
                          capture_output=True, text=True, cwd=ROOT, timeout=timeout,
                          env={k: v for k, v in environ.items() if v is not None})
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc
