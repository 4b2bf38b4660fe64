"""Shared fixtures: one SparkSession for the whole run, and the ``engine`` parametrization.

``engine`` runs a test once with the local engine and once with the Spark engine (real Spark in
``local[2]``, started once per test session: ~10 s of JVM start-up, then ~1 s per job). Without
pyspark installed the Spark half is skipped. Apply it to a focused subset only, so the suite
stays fast.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from kafkatx.engines.base import SPARK, EngineConfig
from kafkatx.engines.local import LocalEngine

# The bundled fixtures' file times are when they were checked out: outputs on them measure ages
# from each partition's newest record (--now data), so they do not depend on that moment.
os.environ.setdefault("KAFKATX_NOW", "data")

def _close_kafka_pythons_failed_sockets() -> None:
    """kafka-python 3.x leaves a socket open when its connect fails (``KafkaNetSocket.sock_connect``
    in kafka/net/inet.py raises without closing it): a test whose broker is stopped or killed
    leaks one per retry, and with warnings as errors their ResourceWarning later fails whatever
    test the garbage collector runs in. Close the socket on the way out, as the library should."""
    try:
        from kafka.net.inet import KafkaNetSocket
    except ImportError:  # kafka-python 2.x, or not installed
        return
    connect = KafkaNetSocket.sock_connect

    async def sock_connect(self: Any, net: Any, sock: Any, sockaddr: Any,
                           timeout_at: Any = None) -> Any:
        try:
            return await connect(self, net, sock, sockaddr, timeout_at=timeout_at)
        except BaseException:
            sock.close()
            raise

    KafkaNetSocket.sock_connect = sock_connect  # type: ignore[method-assign]


_close_kafka_pythons_failed_sockets()


SPARK_TEST_CONF = (("spark.sql.shuffle.partitions", "2"), ("spark.default.parallelism", "2"),
                   ("spark.ui.enabled", "false"),
                   ("spark.sql.execution.arrow.maxRecordsPerBatch", "10000"))
SPLIT_SIZE = 4096  # tiny input splits: big segments are cut at index entries, as in production


@pytest.fixture(scope="session")
def spark_session() -> Iterator[Any]:
    """Skipped without pyspark or Java on a developer's machine; CI installs both (the
    README's test command), and there a missing piece fails instead of skipping."""
    if not os.environ.get("CI"):
        pytest.importorskip("pyspark", reason="the Spark engine needs kafkatx[spark]")
        if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
            pytest.skip("the Spark engine needs Java 17 or 21")
    from kafkatx.engines.spark_session import start_session

    handle = start_session(EngineConfig(name=SPARK, master="local[2]",
                                        spark_conf=SPARK_TEST_CONF, quiet=True, progress=False))
    yield handle.spark
    handle.close()


@pytest.fixture
def spark_engine(spark_session: Any) -> Any:
    from kafkatx.engines.spark import SparkEngine

    return SparkEngine(session=spark_session, split_size=SPLIT_SIZE,
                       config=EngineConfig(name=SPARK, progress=False))


@pytest.fixture(params=["local", SPARK])
def engine(request: pytest.FixtureRequest) -> Any:
    """Each engine in turn; both must give the same answers."""
    if request.param == SPARK:
        return request.getfixturevalue("spark_engine")
    return LocalEngine()
