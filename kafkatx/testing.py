"""``kafkatx.testing``: a pytest plugin giving tests a real Kafka-protocol broker with faults.

Installed with kafkatx (entry point ``pytest11``), it adds the fixture ``kafka_broker``: a
``kafkatx serve`` subprocess on a free loopback port with a fresh log dir, torn down after the
test. Faults are switched on and off while the test runs (through serve's ``--control-port``),
and kafkatx's own analysis reads the log dir the broker wrote::

    def test_no_hanging_transaction_after_a_crash(kafka_broker):
        kafka_broker.crash_coordinator_after("prepare-commit")
        ...  # run your application against kafka_broker.bootstrap_servers
        kafka_broker.restart()
        assert not [f for f in kafka_broker.findings() if f["kind"] == "hanging_transaction"]

``@pytest.mark.kafka_broker("--transaction-version", "2")`` passes more ``kafkatx serve``
options; with ``"--brokers", "3"`` the fixture is a three-broker cluster
(``bootstrap_servers`` lists every broker; ``stop_broker``, ``kill_broker``, ``start_broker``,
``cut_replication`` and ``slow_replication`` act on it). :class:`KafkaBroker` works without
pytest too.
"""

from __future__ import annotations

import os
import selectors
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0
COMMAND_TIMEOUT_S = 30.0  # a broker stop (--brokers N) syncs every log of that broker
DEFAULT_ARGS = ("--group-initial-rebalance-delay-ms", "0")


class BrokerError(RuntimeError):
    """The broker did not start, stop or take a command as asked."""


def serve_line(proc: subprocess.Popen[bytes], timeout_s: float) -> str | None:
    """The next line ``kafkatx serve`` prints on stdout (``listening on HOST:PORT`` first), read
    without blocking past ``timeout_s``; None if the process exits or the time runs out first."""
    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout_s
    line = b""
    try:
        while not line.endswith(b"\n"):
            if time.monotonic() > deadline or proc.poll() is not None:
                return None
            if sel.select(0.1):
                line += os.read(proc.stdout.fileno(), 1)
    finally:
        sel.close()
    return line.decode().strip()


class KafkaBroker:
    """A ``kafkatx serve`` process on ``host`` with its log dir and fault control."""

    def __init__(self, log_dir: str | os.PathLike[str], args: Sequence[str] = (), *,
                 host: str = "127.0.0.1") -> None:
        self.log_dir = Path(log_dir)
        self.args = tuple(args)
        self.host = host
        self.port = 0
        self.ports: list[int] = []  # every broker's, with --brokers N
        self.control_port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None
        self._control_file: Any = None
        self.stderr_path = self.log_dir.parent / f"{self.log_dir.name}.serve.log"

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{self.host}:{port}" for port in self.ports or [self.port])

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def returncode(self) -> int | None:
        """The exit status once the process ended (3 after a crash fault), else None."""
        return None if self.proc is None else self.proc.poll()

    def start(self) -> KafkaBroker:
        """Start serving (on the previous port after a stop, so clients reconnect)."""
        if self.running:
            raise BrokerError("the broker is already running")
        with open(self.stderr_path, "ab") as stderr:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "kafkatx", "serve", "--host", self.host, "--port",
                 str(self.port), "--log-dir", str(self.log_dir), "--control-port", "0",
                 *DEFAULT_ARGS, *self.args],
                stdout=subprocess.PIPE, stderr=stderr, stdin=subprocess.DEVNULL)
        try:
            listening = self._line("listening on ")
            self.ports = [int(a.rsplit(":", 1)[1])
                          for a in listening.removeprefix("listening on ").split(",")]
            # One broker restarts on its port; a cluster's brokers on free ones (theirs need
            # not be consecutive).
            self.port = self.ports[0] if len(self.ports) == 1 else 0
            self.control_port = int(self._line("control on ").rsplit(":", 1)[1])
        except BaseException:  # whatever stopped the start: no process left behind
            self.kill()
            raise
        return self

    def stop(self) -> int:
        """SIGTERM: a clean shutdown (snapshots, checkpoints); the exit status."""
        self._close_control()
        if self.proc is None:
            raise BrokerError("the broker was never started")
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise BrokerError(f"no clean stop within {STOP_TIMEOUT_S} s:\n"
                                  f"{self.serve_log()}") from None
        self._close_stdout()
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL: the process dies mid-whatever, as in a power cut."""
        self._close_control()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._close_stdout()

    def restart(self) -> KafkaBroker:
        """Stop (cleanly, if still running) and start again on the same port and log dir.
        Faults added at run time are not kept; the start-up options are."""
        if self.running:
            self.stop()
        else:
            self._close_control()
            self._close_stdout()
        return self.start()

    def wait_exit(self, timeout_s: float = STOP_TIMEOUT_S) -> int:
        """Wait for the process to end by itself (e.g. a crash fault); its exit status."""
        if self.proc is None:
            raise BrokerError("the broker was never started")
        return self.proc.wait(timeout_s)

    def serve_log(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    # -- faults at run time --------------------------------------------------------------------

    def drop_markers(self, topic: str, partition: int) -> None:
        """The coordinator never writes COMMIT/ABORT markers to this partition."""
        self._command(f"add drop-marker:{topic}-{partition}")

    def delay_markers(self, topic: str, partition: int, delay_ms: int) -> None:
        """Markers to this partition are written ``delay_ms`` later."""
        self._command(f"add delay-marker:{topic}-{partition}:{delay_ms}")

    def crash_coordinator_after(self, state: str) -> None:
        """``prepare-commit`` or ``prepare-abort``: the broker exits (status 3) right after
        writing that record to ``__transaction_state``, before any marker."""
        self._command(f"add crash-after:{state}")

    def reject(self, api: str | int, error: str | int) -> None:
        """Every request of ``api`` (name like ``Produce`` or key) gets ``error``."""
        self._command(f"add reject:{api}:{error}")

    def stop_broker(self, node_id: int) -> None:
        """``--brokers N``: a clean (controlled) shutdown of one broker."""
        self._command(f"stop-broker {node_id}")

    def kill_broker(self, node_id: int) -> None:
        """``--brokers N``: one broker stops at once, writing nothing more."""
        self._command(f"kill-broker {node_id}")

    def start_broker(self, node_id: int) -> None:
        """``--brokers N``: a stopped broker starts again on its log dir."""
        self._command(f"start-broker {node_id}")

    def cut_replication(self, first: int, second: int) -> None:
        """``--brokers N``: no replica fetch between the two brokers until cleared."""
        self._command(f"add cut-replication:{first}-{second}")

    def slow_replication(self, node_id: int, delay_ms: int) -> None:
        """``--brokers N``: each replica fetch of the broker waits ``delay_ms`` first."""
        self._command(f"add slow-replication:{node_id}:{delay_ms}")

    def clear_faults(self) -> None:
        self._command("clear")

    def faults(self) -> list[str]:
        answer = self._command("list")
        return [r for r in answer.split(";") if r]

    # -- kafkatx's analysis of the log dir -----------------------------------------------------

    def findings(self, *, now_ms: int | None = None) -> list[dict[str, object]]:
        """``kafkatx inspect``'s findings on the log dir, as JSON-ready dicts (read-only; after
        :meth:`stop` the log dir is settled, while running it is read as it stands)."""
        return [f.to_dict() for f in self._inspect(now_ms).findings]

    def lso(self, topic: str, partition: int) -> int:
        """The partition's last stable offset, as ``kafkatx lso`` computes it."""
        for r in self._inspect(None).partitions:
            if (r.topic, r.partition) == (topic, partition):
                return r.last_stable_offset
        raise BrokerError(f"no partition {topic}-{partition} in {self.log_dir}")

    def _inspect(self, now_ms: int | None) -> Any:
        from kafkatx.engines.inspection import inspect
        from kafkatx.engines.local import AnalysisOptions

        return inspect([self.log_dir], options=AnalysisOptions(now_ms=now_ms)).inspection

    # -- plumbing ------------------------------------------------------------------------------

    def _line(self, prefix: str) -> str:
        assert self.proc is not None
        text = serve_line(self.proc, START_TIMEOUT_S)
        if text is None:
            self.kill()
            raise BrokerError(f"kafkatx serve did not start:\n{self.serve_log()}")
        if not text.startswith(prefix):
            raise BrokerError(f"expected {prefix!r} from kafkatx serve, got {text!r}")
        return text

    def _command(self, line: str) -> str:
        if not self.running:
            raise BrokerError("the broker is not running")
        if self._control is None:
            self._control = socket.create_connection((self.host, self.control_port),
                                                     timeout=COMMAND_TIMEOUT_S)
            self._control_file = self._control.makefile("rwb")
        self._control_file.write(line.encode() + b"\n")
        self._control_file.flush()
        answer = self._control_file.readline().decode().strip()
        if not answer.startswith("ok"):
            raise BrokerError(f"{line!r}: {answer}")
        return answer[3:]

    def _close_control(self) -> None:
        if self._control_file is not None:
            self._control_file.close()
            self._control_file = None
        if self._control is not None:
            self._control.close()
            self._control = None

    def _close_stdout(self) -> None:
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()


# -- the pytest plugin -------------------------------------------------------------------------

try:
    import pytest
except ImportError:  # kafkatx.testing without pytest: KafkaBroker only
    pytest = None  # type: ignore[assignment]

if pytest is not None:

    def pytest_configure(config: pytest.Config) -> None:
        config.addinivalue_line(
            "markers", "kafka_broker(*args): more `kafkatx serve` options for the kafka_broker "
                       "fixture of this test")

    @pytest.fixture
    def kafka_broker(request: pytest.FixtureRequest,
                     tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
        """A running ``kafkatx serve`` on a free loopback port with a fresh log dir."""
        marker = request.node.get_closest_marker("kafka_broker")
        args = tuple(str(a) for a in marker.args) if marker is not None else ()
        broker = KafkaBroker(tmp_path_factory.mktemp("kafka") / "log-dir", args).start()
        try:
            yield broker
        finally:
            broker.kill()
