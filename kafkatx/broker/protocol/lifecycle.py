"""Stopping ``kafkatx serve`` by signal at any moment: a clean stop first, a forced exit second.

The first SIGTERM or SIGINT asks for a clean stop, whatever the broker is doing: while the log
dir is loading (the load stops at its next partition or segment), while it serves, or before it
listens. A second signal, or a clean stop that has not finished within ``FORCE_AFTER_S``,
ends the process at once with status 128 + the signal number (nothing more is written: the next
start recovers as after a crash). Kafka's broker stops by the same signals through its shutdown
hook (``Exit.addShutdownHook`` -> ``KafkaRaftServer#shutdown``).

Only the standard library is imported here: ``python -m kafkatx serve`` installs the handlers
before the rest of kafkatx is imported (``install_early``). A signal that arrives before that,
while the interpreter itself starts, ends the process by the default action (nothing has been
read or written yet) unless the supervisor started it with the signals blocked: they are
unblocked once handled.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

FORCE_AFTER_S = 20.0
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def utc_stamp() -> str:
    """The time of a ``serve`` log line: UTC, said so (``21:48:50Z``), as every kafkatx time."""
    return time.strftime("%H:%M:%SZ", time.gmtime())


class StopRequest:
    """Whether a stop was asked for, and whom to tell (the event loop, once it runs)."""

    def __init__(self, *, force_after_s: float = FORCE_AFTER_S) -> None:
        self.force_after_s = force_after_s
        self.signum: int | None = None
        self._notify: Callable[[], None] | None = None
        self._watchdog: threading.Timer | None = None

    @property
    def requested(self) -> bool:
        return self.signum is not None

    def install(self) -> None:
        """Handle the stop signals from now on; signals a supervisor held back (blocked
        until kafkatx could handle them) arrive here."""
        for sig in STOP_SIGNALS:
            signal.signal(sig, self._handle)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)

    def uninstall(self) -> None:
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_DFL)
        if self._watchdog is not None:
            self._watchdog.cancel()

    def notify(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (thread-safely scheduled by the caller) on a stop request; at once
        when one was already made."""
        self._notify = callback
        if self.requested:
            callback()

    def _handle(self, signum: int, frame: Any) -> None:
        if self.requested:
            self.force(signum, "a second signal")
        self.signum = signum
        os.write(2, f"{utc_stamp()} kafkatx serve: {signal.Signals(signum).name}: stopping "
                    "cleanly (a second signal forces the exit)\n".encode())
        self._watchdog = threading.Timer(self.force_after_s, self.force,
                                         args=(signum, f"no clean stop within "
                                                       f"{self.force_after_s:g} s"))
        self._watchdog.daemon = True
        self._watchdog.start()
        if self._notify is not None:
            self._notify()

    @staticmethod
    def force(signum: int, why: str) -> None:
        name = signal.Signals(signum).name
        os.write(2, f"{utc_stamp()} kafkatx serve: {name}: {why}; exiting without a clean "
                    "shutdown\n".encode())
        os._exit(128 + signum)


_EARLY: StopRequest | None = None


def install_early() -> None:
    """Catch a stop signal from the first moment of ``kafkatx serve`` (before the imports)."""
    global _EARLY
    _EARLY = StopRequest()
    _EARLY.install()


def stop_request() -> StopRequest:
    """The process's stop request: the early one if installed, else a new one (installed)."""
    global _EARLY
    if _EARLY is None:
        install_early()
    assert _EARLY is not None
    return _EARLY
