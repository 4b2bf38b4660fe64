"""Run kafkatx in a real pseudo-terminal of a given size (what an SRE's terminal shows)."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def run_in_terminal(args: list[str], columns: int, *, lines: int = 50,
                    env: dict[str, str] | None = None, timeout: float = 120,
                    stdout_to: Path | None = None, stderr_too: bool = False
                    ) -> tuple[int, str, str]:
    """(exit status, what the terminal showed without colours, stderr) of ``kafkatx ARGS``
    with stdout on a pseudo-terminal ``columns`` wide; ``stdout_to``: stdout into that file
    and stderr on the terminal instead; ``stderr_too``: both on the terminal (stderr "")."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", lines, columns, 0, 0))
    base = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    base.update({"TERM": "xterm", **(env or {})})
    stdout = slave if stdout_to is None else open(stdout_to, "wb")  # noqa: SIM115
    stderr = slave if stdout_to is not None or stderr_too else subprocess.PIPE
    proc = subprocess.Popen([sys.executable, "-m", "kafkatx", *args], stdin=slave,
                            stdout=stdout, stderr=stderr, cwd=ROOT, env=base)
    if stdout_to is not None:
        stdout.close()  # type: ignore[union-attr]
    os.close(slave)
    out = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], timeout)
            if not ready:
                proc.kill()
                raise TimeoutError(f"kafkatx {' '.join(args)} printed nothing for {timeout}s")
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
    proc.wait(timeout)
    err = ""
    if proc.stderr is not None:
        err = proc.stderr.read().decode()
        proc.stderr.close()
    shown = _ANSI.sub("", out.decode(errors="replace")).replace("\r\n", "\n")
    return proc.returncode, shown, err
