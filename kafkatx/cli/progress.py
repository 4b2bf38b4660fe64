"""A scan progress bar on stderr: only on a terminal, and only once a scan takes a moment."""

from __future__ import annotations

import os
import sys
import time
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # rich is imported only once a bar is drawn (start-up of quick commands)
    from rich.console import Console
    from rich.progress import Progress, TaskID

    from kafkatx.cli.output import StderrLines
    from kafkatx.storage.discovery import PartitionDir

# Quick scans finish before the bar would appear (the variable: tests draw it at once).
SHOW_AFTER_S = float(os.environ.get("KAFKATX_PROGRESS_AFTER_S", "0.5"))


def output_progress(total: int, verb: str, console: Console | StderrLines) -> ScanProgress:
    """The bar of a command that streams its output (``replay``, ``dump``): on stderr when it
    is a terminal and stdout is not (records going to a terminal would break through the
    bar). ``console`` (stderr's) prints its lines above the bar meanwhile."""
    enabled = sys.stderr.isatty() and not sys.stdout.isatty()
    return ScanProgress(total, console=console, enabled=enabled, verb=verb)


class ScanProgress:
    """Bytes of segments scanned out of ``total``; a context manager.

    ``advance`` and ``partition`` fit the engine's ``progress`` and ``on_partition`` callbacks.
    Nothing is drawn unless ``enabled`` (default: stderr is a TTY) and ``delay_s`` has passed;
    the bar is transient (erased when done).
    """

    def __init__(self, total: int, *, console: Console | StderrLines | None = None,
                 enabled: bool | None = None, delay_s: float = SHOW_AFTER_S,
                 verb: str = "scanning") -> None:
        self.total = total
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.delay_s = delay_s
        self.verb = verb
        self.done = 0
        self._console = console
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._started_at = time.monotonic()
        self._label = ""

    def __enter__(self) -> ScanProgress:
        self._started_at = time.monotonic()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def advance(self, n: int) -> None:
        self.done += n
        self._update()

    def partition(self, pdir: PartitionDir) -> None:
        self.label(pdir.name)

    def label(self, text: str) -> None:
        """What is being read now (a partition, a file)."""
        self._label = text
        self._update()

    @property
    def shown(self) -> bool:
        return self._progress is not None

    def _update(self) -> None:
        if self._progress is None:
            if not self.enabled or time.monotonic() - self._started_at < self.delay_s:
                return
            self._start()
        assert self._progress is not None and self._task is not None
        self._progress.update(self._task, completed=min(self.done, self.total),
                              description=_escape(self._label))

    def _start(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        from kafkatx.cli.output import StderrLines

        console = self._console.console if isinstance(self._console, StderrLines) \
            else self._console or Console(file=sys.stderr)
        self._progress = Progress(
            TextColumn(f"{self.verb} [bold]{{task.description}}", markup=True),
            BarColumn(), DownloadColumn(), TransferSpeedColumn(), TimeRemainingColumn(),
            # the command's output may be streaming to stdout meanwhile: left alone
            console=console, transient=True, redirect_stdout=False, redirect_stderr=False,
        )
        self._task = self._progress.add_task(_escape(self._label), total=max(self.total, 1),
                                             completed=min(self.done, self.total))
        self._progress.start()


def _escape(label: str) -> str:
    from rich.markup import escape

    return escape(label)
