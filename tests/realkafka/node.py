"""Real Apache Kafka KRaft nodes on 127.0.0.1, started, stopped, killed and restarted by tests.

Two shapes: one combined node (broker and controller in one process), and a cluster of brokers
with a controller of its own. Every node keeps its log dir under the test's directory, so a test
can copy it live or after a stop and give the copy to kafkatx. Settings favour small, fast
tests: segments roll by time, retention and the cleaner look often, few coordinator partitions.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from . import dist

START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 60.0
READY_LINE = "Kafka Server started"

#: Broker settings every test node gets (the test's own settings override them).
TEST_SETTINGS: dict[str, str] = {
    "offsets.topic.num.partitions": "4",
    "transaction.state.log.num.partitions": "4",
    "group.initial.rebalance.delay.ms": "0",
    "num.partitions": "1",
    "num.network.threads": "2",
    "num.io.threads": "2",
    "background.threads": "2",
    "log.cleaner.threads": "1",
    "log.cleaner.dedupe.buffer.size": "4194304",
    "log.cleaner.backoff.ms": "500",
    "log.retention.check.interval.ms": "1000",
    "log.initial.task.delay.ms": "500",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
    "transaction.remove.expired.transaction.cleanup.interval.ms": "2000",
    "producer.id.expiration.check.interval.ms": "2000",
    "share.coordinator.state.topic.num.partitions": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "auto.create.topics.enable": "true",
    # 128 KiB instead of 10 MiB preallocated per .index/.timeindex: every copy of a live log dir
    # writes them out in full, ~11 GB a run before.
    "log.index.size.max.bytes": "131072",
}

JVM_OPTIONS = ("-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
               "-Djava.awt.headless=true", "-Dorg.slf4j.simpleLogger.showDateTime=true",
               "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def java_command(version: str, main_class: str, *args: str, log_level: str = "info",
                 extra_classpath: Iterable[Path] = ()) -> list[str]:
    """A ``java`` command line running ``main_class`` of Kafka ``version``."""
    cp = os.pathsep.join([*map(str, extra_classpath), dist.classpath(version)])
    level = f"-Dorg.slf4j.simpleLogger.defaultLogLevel={log_level}"
    return [dist.java_binary(), *JVM_OPTIONS, level, "-cp", cp, main_class, *args]


def end_line_driver(proc: subprocess.Popen[bytes], timeout: float = 10) -> None:
    """End a JVM driven line by line on its stdin: close stdin (its read loop ends), wait
    ``timeout`` seconds, SIGKILL it if it is still there, close its pipes."""
    if proc.poll() is None:
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.close()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    close_pipes(proc)


def close_pipes(proc: subprocess.Popen[bytes]) -> None:
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None and not pipe.closed:
            with contextlib.suppress(BrokenPipeError):
                pipe.close()


@dataclass
class KafkaNode:
    """One KRaft process: ``roles`` is ``broker,controller``, ``broker`` or ``controller``."""

    version: str
    node_id: int
    roles: str
    home: Path
    voters: str = ""
    settings: dict[str, str] = field(default_factory=dict)
    port: int = 0
    controller_port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def log_dir(self) -> Path:
        return self.home / "data"

    @property
    def log_path(self) -> Path:
        return self.home / "node.log"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    @property
    def is_controller(self) -> bool:
        return "controller" in self.roles

    def properties(self) -> dict[str, str]:
        listeners, names = [], []
        if self.is_broker:
            listeners.append(f"PLAINTEXT://127.0.0.1:{self.port}")
        if self.is_controller:
            listeners.append(f"CONTROLLER://127.0.0.1:{self.controller_port}")
        names = ["PLAINTEXT:PLAINTEXT", "CONTROLLER:PLAINTEXT"]
        props = {
            "process.roles": self.roles,
            "node.id": str(self.node_id),
            "controller.quorum.voters": self.voters,
            "listeners": ",".join(listeners),
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": ",".join(names),
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.log_dir),
            **TEST_SETTINGS,
            **self.settings,
        }
        if self.is_broker:
            props["advertised.listeners"] = f"PLAINTEXT://127.0.0.1:{self.port}"
        else:
            props.pop("inter.broker.listener.name")
        return props

    def write_properties(self) -> Path:
        path = self.home / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in self.properties().items()))
        return path

    def format(self, cluster_id: str, features: Mapping[str, int]) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        props = self.write_properties()
        args = ["format", "-t", cluster_id, "-c", str(props)]
        for name, level in features.items():
            args += ["--feature", f"{name}={level}"]
        done = subprocess.run(java_command(self.version, "kafka.tools.StorageTool", *args),
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"StorageTool format failed for node {self.node_id}:\n"
                               f"{done.stdout}{done.stderr}")

    def start(self) -> KafkaNode:
        self.wait_ready(self.launch())
        return self

    def launch(self) -> int:
        """Start the process; returns where in ``node.log`` this start's lines begin."""
        assert self.proc is None or self.proc.poll() is not None, "already running"
        props = self.write_properties()
        self.starts += 1
        with open(self.log_path, "ab") as log:
            log.write(f"\n==== start {self.starts} ====\n".encode())
            offset = log.tell()
            self.proc = subprocess.Popen(java_command(self.version, "kafka.Kafka", str(props)),
                                         stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
        return offset

    def wait_ready(self, offset: int) -> None:
        self._wait_for(READY_LINE, offset)

    def _wait_for(self, text: str, offset: int) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            with open(self.log_path, "rb") as log:
                log.seek(offset)
                if text.encode() in log.read():
                    return
            if self.proc is not None and self.proc.poll() is not None:
                break
            time.sleep(0.2)
        tail = self.log_path.read_text(errors="replace")[-4000:]
        self.kill()
        raise RuntimeError(f"Kafka node {self.node_id} ({self.version}) did not start:\n{tail}")

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> int:
        """SIGTERM: a controlled shutdown that leaves ``.kafka_cleanshutdown`` behind."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.kill()
            raise RuntimeError(f"Kafka node {self.node_id} did not stop on SIGTERM") from None

    def kill(self) -> None:
        """SIGKILL: an unclean shutdown, as a crash or a pulled plug leaves the files."""
        if self.running:
            assert self.proc is not None
            self.proc.kill()
            self.proc.wait(10)

    def restart(self) -> KafkaNode:
        if self.running:
            self.stop()
        return self.start()

    def copy_log_dir(self, dest: Path) -> Path:
        """A copy of the log dir as an operator takes it (live if the node is running): a
        file the broker removes meanwhile (a checkpoint's ``.tmp`` renamed over the file, a
        deleted segment) is not in the copy."""
        shutil.copytree(self.log_dir, dest, ignore_dangling_symlinks=True,
                        copy_function=_copy_if_still_there)
        return dest


@dataclass
class KafkaCluster:
    """Nodes of one cluster: a combined node, or brokers with a controller of their own."""

    version: str
    nodes: list[KafkaNode]
    cluster_id: str

    @classmethod
    def create(cls, version: str, home: Path, brokers: int = 1,
               settings: Mapping[str, str] | None = None,
               features: Mapping[str, int] | None = None) -> KafkaCluster:
        """``brokers=1``: one combined node (id 1). More: a controller (id 100) and brokers
        1..n. ``features``, e.g. ``{"transaction.version": 1}``, are finalized at format."""
        cluster_id = _random_cluster_id()
        settings = dict(settings or {})
        if brokers > 1:
            settings.setdefault("offsets.topic.replication.factor", str(min(brokers, 3)))
            settings.setdefault("transaction.state.log.replication.factor", str(min(brokers, 3)))
            settings.setdefault("transaction.state.log.min.isr", "2")
            settings.setdefault("default.replication.factor", str(min(brokers, 3)))
        else:
            settings.setdefault("offsets.topic.replication.factor", "1")
            settings.setdefault("transaction.state.log.replication.factor", "1")
            settings.setdefault("transaction.state.log.min.isr", "1")
        if brokers == 1:
            nodes = [KafkaNode(version, 1, "broker,controller", home / "node-1",
                               settings=settings, port=free_port(), controller_port=free_port())]
        else:
            nodes = [KafkaNode(version, 100, "controller", home / "controller",
                               settings=settings, controller_port=free_port())]
            nodes += [KafkaNode(version, i, "broker", home / f"broker-{i}", settings=settings,
                                port=free_port()) for i in range(1, brokers + 1)]
        voters = ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}"
                          for n in nodes if n.is_controller)
        for node in nodes:
            node.voters = voters
            node.format(cluster_id, features or {})
        return cls(version, nodes, cluster_id)

    @property
    def brokers(self) -> list[KafkaNode]:
        return [n for n in self.nodes if n.is_broker]

    def broker(self, node_id: int) -> KafkaNode:
        return next(n for n in self.nodes if n.node_id == node_id)

    @property
    def bootstrap(self) -> str:
        return ",".join(n.bootstrap for n in self.brokers)

    def start(self) -> KafkaCluster:
        """All nodes at once (brokers wait for the controller quorum by themselves)."""
        offsets = [node.launch() for node in self.nodes]
        for node, offset in zip(self.nodes, offsets, strict=True):
            node.wait_ready(offset)
        return self

    def stop(self) -> None:
        for node in [*self.brokers, *(n for n in self.nodes if not n.is_broker)]:
            if node.running:
                node.stop()

    def kill(self) -> None:
        for node in self.nodes:
            node.kill()

    def copy_log_dirs(self, dest: Path) -> dict[int, Path]:
        """Each broker's log dir copied to ``dest/broker-<id>`` (the combined node: ``dest``)."""
        if len(self.nodes) == 1:
            return {self.nodes[0].node_id: self.nodes[0].copy_log_dir(dest)}
        return {n.node_id: n.copy_log_dir(dest / f"broker-{n.node_id}") for n in self.brokers}


def _copy_if_still_there(src: str, dst: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        shutil.copy2(src, dst)


def _random_cluster_id() -> str:
    """As ``Uuid#randomUuid``: never one starting with "-", which the tools' argument parsers
    take for an option (``kafka-storage format -t -xyz...`` fails)."""
    import base64

    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id
