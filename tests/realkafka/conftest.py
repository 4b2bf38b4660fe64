"""Fixtures that run real Apache Kafka (``node.py``) and its tools (``tools.py``).

Without Java or Maven Central the tests here are skipped, and the run's summary says in one line
what they need. CI has both (``.ci/deps`` resolves the jars first): there (``CI`` set, as
``.ci/run`` runs) a missing piece fails every test instead, so none is ever skipped in CI.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from . import dist
from .node import KafkaCluster
from .storage import KafkaLoad
from .tools import JavaClient, KafkaTools

_unavailable: dict[str, str] = {}  # version -> why it cannot run here (asked once a session)


def require_kafka(version: str) -> None:
    if version not in _unavailable:
        try:
            dist.resolve(version)
            dist.driver_classes(version)
            return
        except dist.KafkaUnavailable as exc:
            _unavailable[version] = str(exc)
    if os.environ.get("CI"):
        pytest.fail(f"CI runs the real-Kafka tests, but {_unavailable[version]}", pytrace=False)
    pytest.skip(_unavailable[version])


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Why the real-Kafka tests were skipped, in one line (pytest hides skip reasons)."""
    by_reason: dict[str, list[str]] = {}
    for version, reason in _unavailable.items():
        by_reason.setdefault(reason.replace(version, "{v}"), []).append(version)
    if by_reason:
        terminalreporter.write_line("real-Kafka tests skipped: " + "; ".join(
            reason.replace("{v}", " and ".join(sorted(v))) for reason, v in by_reason.items()))


@pytest.fixture(scope="session")
def kafka_tools_by_version() -> Iterator[dict[str, KafkaTools]]:
    tools: dict[str, KafkaTools] = {}
    yield tools
    for tool in tools.values():
        tool.close()


@pytest.fixture(scope="session")
def kafka_load_by_version() -> Iterator[dict[str, KafkaLoad]]:
    """Kafka's log load (``storage.KafkaLoad``), one JVM per version for the session."""
    loads: dict[str, KafkaLoad] = {}
    yield loads
    for load in loads.values():
        load.close()


@pytest.fixture(scope="module", params=dist.KAFKA_VERSIONS,
                ids=[f"kafka-{v}" for v in dist.KAFKA_VERSIONS])
def kafka_version(request: pytest.FixtureRequest) -> str:
    """Each pinned Kafka version in turn (the newest 4.x, then the newest 4.0.x); module-scoped,
    so a module runs all its tests on one version, then all on the next, and a node shared by
    the module's tests (``module_kafka_cluster``) starts once per version."""
    require_kafka(request.param)
    return str(request.param)


@pytest.fixture(scope="module")
def kafka_tools(kafka_version: str, kafka_tools_by_version: dict[str, KafkaTools]) -> KafkaTools:
    """Kafka's command-line tools of this version, in one JVM shared by the session."""
    if kafka_version not in kafka_tools_by_version:
        kafka_tools_by_version[kafka_version] = KafkaTools(kafka_version)
    return kafka_tools_by_version[kafka_version]


@pytest.fixture
def kafka_load(kafka_version: str, kafka_load_by_version: dict[str, KafkaLoad]) -> KafkaLoad:
    """Kafka's own log load of this version (``LogManager#loadLog`` on copies of log dirs)."""
    if kafka_version not in kafka_load_by_version:
        kafka_load_by_version[kafka_version] = KafkaLoad(kafka_version)
    return kafka_load_by_version[kafka_version]


def _cluster_factory(version: str, home: Path) -> Iterator[Callable[..., KafkaCluster]]:
    clusters: list[KafkaCluster] = []

    def make(brokers: int = 1, settings: dict[str, str] | None = None,
             features: dict[str, int] | None = None, name: str = "kafka",
             start: bool = True) -> KafkaCluster:
        cluster = KafkaCluster.create(version, home / name, brokers=brokers,
                                      settings=settings, features=features)
        clusters.append(cluster)
        return cluster.start() if start else cluster

    yield make
    for cluster in clusters:
        cluster.kill()


@pytest.fixture
def kafka_cluster(kafka_version: str, tmp_path: Path) -> Iterator[Callable[..., KafkaCluster]]:
    """A factory: ``kafka_cluster(brokers=1, settings={...}, features={...})`` formats and
    starts real KRaft nodes (``start=False``: only formats them); all are killed when the test
    ends, their log dirs kept under ``tmp_path``."""
    yield from _cluster_factory(kafka_version, tmp_path)


@pytest.fixture(scope="module")
def module_kafka_cluster(kafka_version: str, tmp_path_factory: pytest.TempPathFactory
                         ) -> Iterator[Callable[..., KafkaCluster]]:
    """``kafka_cluster`` for nodes that the tests of one module share (one start per version);
    killed when the module's tests of that version are done."""
    yield from _cluster_factory(kafka_version, tmp_path_factory.mktemp(f"kafka-{kafka_version}"))


@pytest.fixture
def java_client(kafka_version: str, tmp_path: Path) -> Iterator[Callable[[], JavaClient]]:
    """A factory of Kafka's Java clients of this version; all are closed at the end."""
    clients: list[JavaClient] = []

    def make() -> JavaClient:
        client = JavaClient(kafka_version, tmp_path / f"java-client-{len(clients)}.log")
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.kill()
