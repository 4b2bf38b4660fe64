"""Installed as ``test/service.py`` of kafka-python's extracted integration suite.

The sdist ships ``test/integration`` but not the ``test/service.py`` its fixtures import. With
``KAFKA_URI`` set, the fixtures only build an ``ExternalService`` for a broker that is already
running (here ``kafkatx serve``); they never spawn a ZooKeeper or JVM broker, so
``SpawnedService`` refuses.
"""

from __future__ import annotations

from typing import Any


class ExternalService:
    """A broker someone else runs: nothing to start, stop or read logs from."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def dump_logs(self) -> None:
        pass

    def wait_for(self, pattern: str, timeout: float = 30) -> bool:
        return True


class SpawnedService:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("this run only targets an external broker (KAFKA_URI); "
                           "kafka-python's suite tried to spawn a JVM service")
