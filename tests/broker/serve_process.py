"""Run ``kafkatx serve`` in a subprocess on 127.0.0.1 with a free port, and stop it with SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from kafkatx.testing import serve_line

START_TIMEOUT_S = 45.0  # a loaded 2-core CI machine recovering a killed log dir
STOP_TIMEOUT_S = 15.0


@dataclass
class ServeProcess:
    log_dir: Path
    args: tuple[str, ...] = ()
    proc: subprocess.Popen[bytes] | None = None
    port: int = 0
    stderr_path: Path = field(init=False)

    def __post_init__(self) -> None:
        self.stderr_path = self.log_dir.parent / f"{self.log_dir.name}.stderr.txt"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> ServeProcess:
        stderr = open(self.stderr_path, "ab")  # noqa: SIM115 - closed with the process
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kafkatx", "serve", "--host", "127.0.0.1", "--port", "0",
             "--log-dir", str(self.log_dir), *self.args],
            stdout=subprocess.PIPE, stderr=stderr, stdin=subprocess.DEVNULL)
        stderr.close()
        try:
            text = self._first_line()
            assert text.startswith("listening on "), text
        except BaseException:  # whatever stopped the start: no process left behind
            self.kill()
            raise
        self.port = int(text.rsplit(":", 1)[1])
        return self

    def _first_line(self) -> str:
        assert self.proc is not None
        text = serve_line(self.proc, START_TIMEOUT_S)
        if text is None:
            raise AssertionError(f"kafkatx serve did not start:\n{self.stderr()}")
        return text

    def stop(self) -> int:
        """SIGTERM, wait, return the exit status."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"kafkatx serve did not stop on SIGTERM:\n{self.stderr()}") from None
        finally:
            if self.proc.stdout is not None:
                self.proc.stdout.close()
        return rc

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()

    def stderr(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""
