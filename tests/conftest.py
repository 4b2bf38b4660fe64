"""Shared fixtures: one SparkSession for the whole run, and the ``engine`` parametrization.

``engine`` runs a test once with the local engine and once with the Spark engine (real Spark in
``local[2]``, started once per test session: ~10 s of JVM start-up, then ~1 s per job). Without
pyspark installed the Spark half is skipped. Apply it to a focused subset only, so the suite
stays fast.
"""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import signal
import time
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


def _serve_children() -> dict[int, str]:
    """This process's children that run ``kafkatx serve``, by pid."""
    found: dict[int, str] = {}
    me = str(os.getpid())
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as stat:
                ppid = stat.read().rsplit(")", 1)[1].split()[1]
            with open(f"/proc/{entry.name}/cmdline", "rb") as cmdline:
                argv = cmdline.read().split(b"\0")
        except OSError:
            continue
        if ppid == me and b"kafkatx" in argv and b"serve" in argv:
            found[int(entry.name)] = b" ".join(argv).decode(errors="replace")
    return found


def _librdkafka_clients() -> int:
    """How many librdkafka clients (confluent-kafka's) this process runs: each has one thread
    named ``rdk:main`` until it is destroyed."""
    count = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/comm") as comm:
                count += comm.read().strip() == "rdk:main"
        except OSError:
            continue
    return count


@pytest.fixture(scope="module", autouse=True)
def nothing_outlives_its_module() -> Iterator[None]:
    """A ``kafkatx serve`` child or a librdkafka client left running by a test module goes on
    using CPU (a client reconnects to its stopped brokers) through every later module, and a
    serve child can outlive the run: kill it, and fail the module that left it."""
    before_serve = set(_serve_children())
    before_clients = _librdkafka_clients()
    yield
    left = {pid: argv for pid, argv in _serve_children().items() if pid not in before_serve}
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    clients = _librdkafka_clients() - before_clients
    if clients > 0:  # one only a reference cycle keeps goes with the cycle
        gc.collect()
        deadline = time.monotonic() + 5  # a destroyed client's threads take a moment to end
        while (clients := _librdkafka_clients() - before_clients) > 0 \
                and time.monotonic() < deadline:
            time.sleep(0.05)
    problems = [f"kafkatx serve (pid {pid}) still running: {argv}" for pid, argv in left.items()]
    if clients > 0:
        problems.append(f"{clients} confluent-kafka client(s) still alive")
    if problems:
        pytest.fail("left running by this module: " + "; ".join(problems), pytrace=False)


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
