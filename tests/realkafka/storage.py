"""Kafka's own log load as an oracle: ``java/LoadDriver.java`` run on copies of log dirs.

``KafkaLoad(version).load(log_dir)`` copies ``log_dir`` to a scratch directory (the load
truncates, rebuilds indexes and writes and deletes snapshots: never the evidence) and returns
what Kafka's ``LogManager#loadLog`` / ``UnifiedLog.create`` / ``LogLoader#load`` made of every
partition directory in it, as the driver's JSON (one JVM serves every call).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

from . import dist
from .node import end_line_driver, java_command


class KafkaLoad:
    """One JVM of Kafka ``version`` loading log dirs on request."""

    def __init__(self, version: str) -> None:
        self.version = version
        drivers = dist.driver_classes(version)
        self._proc = subprocess.Popen(
            java_command(version, "LoadDriver", log_level="error", extra_classpath=[drivers]),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self._lock = threading.Lock()
        self._scratch = Path(tempfile.mkdtemp(prefix="kafkatx-load-oracle-"))
        self._count = 0

    def load_in_place(self, log_dir: Path, now_ms: int) -> dict[str, Any]:
        """Load ``log_dir`` itself (it is changed: give a copy)."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        request = json.dumps({"log_dir": str(log_dir), "now_ms": now_ms})
        with self._lock:
            self._proc.stdin.write((request + "\n").encode())
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"Kafka's load driver ({self.version}) died")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"Kafka {self.version} could not load {log_dir}: {answer['error']}")
        return answer

    def load(self, log_dir: Path, now_ms: int) -> dict[str, Any]:
        """Load a copy of ``log_dir``; the copy is removed afterwards."""
        self._count += 1
        copy = self._scratch / f"load-{self._count}"
        shutil.copytree(log_dir, copy)
        try:
            return self.load_in_place(copy, now_ms)
        finally:
            shutil.rmtree(copy, ignore_errors=True)

    def close(self) -> None:
        end_line_driver(self._proc)
        shutil.rmtree(self._scratch, ignore_errors=True)
