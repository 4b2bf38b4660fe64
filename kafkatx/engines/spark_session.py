"""Starting a SparkSession for kafkatx: quiet, UTC, workers on this Python, progress on stderr.

* The master is set only when ``--master`` is given: otherwise PySpark's launcher decides
  (``local[*]``, or whatever ``spark-submit --master`` / ``PYSPARK_SUBMIT_ARGS`` say).
* For local masters, workers run ``sys.executable`` (``PYSPARK_PYTHON``), the environment kafkatx
  is installed in, and the driver binds to loopback (``SPARK_LOCAL_IP``); both only when unset.
* Quiet (the default): the JVM's stdout and stderr go to a log file in a fresh temporary
  directory (never beside the evidence), so the terminal shows kafkatx's output only. Under
  ``spark-submit`` the JVM already runs and keeps its own logging.
* Progress: a bar of finished/total tasks of the running Spark stages, read from the
  ``StatusTracker``, shown on stderr when it is a terminal.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
from types import TracebackType
from typing import Any

from kafkatx.engines.base import EngineConfig, EngineUnavailableError

GATEWAY_PORT_VAR = "PYSPARK_GATEWAY_PORT"  # set when running under spark-submit
LOG4J2 = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.repl.name = org.apache.spark.api.python.PythonGatewayServer
logger.repl.level = error
logger.hadoop.name = org.apache.hadoop.util.NativeCodeLoader
logger.hadoop.level = error
"""


def is_local_master(master: str | None) -> bool:
    return master is None or master.startswith("local")


def defaults(config: EngineConfig) -> dict[str, str]:
    """Settings kafkatx applies unless ``--spark-conf`` (or spark-submit) sets them."""
    out = {
        "spark.app.name": "kafkatx",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "false",
        # Rows of one partition are handed to Python in Arrow batches of this size.
        "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
    }
    if is_local_master(config.master):
        out["spark.ui.enabled"] = "false"
        cores = os.cpu_count() or 2
        out["spark.sql.shuffle.partitions"] = str(max(2, 2 * cores))
    return out


class SessionHandle:
    """A started session, whether kafkatx owns it (stops it on ``close``), and its log file."""

    def __init__(self, spark: Any, *, owned: bool, log_path: str | None) -> None:
        self.spark = spark
        self.owned = owned
        self.log_path = log_path

    def close(self, *, keep_log: bool = False) -> None:
        """Stop the session if kafkatx started it; remove the log folder unless asked to
        keep it (after a failure, to read)."""
        if self.owned:
            self.spark.stop()
            self.owned = False
        if self.log_path is not None and not keep_log:
            shutil.rmtree(os.path.dirname(self.log_path), ignore_errors=True)
            self.log_path = None


def start_session(config: EngineConfig) -> SessionHandle:
    """A SparkSession as ``config`` asks (see the module docstring)."""
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    under_submit = GATEWAY_PORT_VAR in os.environ
    if is_local_master(config.master) and not under_submit:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    active = SparkSession.getActiveSession()
    if active is not None:  # e.g. a notebook, or tests: its settings stay, --spark-conf added
        for key, value in config.spark_conf:
            active.conf.set(key, value)
        return SessionHandle(active, owned=False, log_path=None)
    conf = SparkConf()
    for key, value in defaults(config).items():
        conf.setIfMissing(key, value)
    for key, value in config.spark_conf:
        conf.set(key, value)
    if config.master is not None:
        conf.setMaster(config.master)
    if under_submit:
        builder = SparkSession.builder.config(conf=conf)
        return SessionHandle(builder.getOrCreate(), owned=False, log_path=None)
    log_path = None
    popen: dict[str, Any] = {"stdout": 2}  # JVM stdout to stderr: stdout is for kafkatx
    if config.quiet:
        folder = tempfile.mkdtemp(prefix="kafkatx-spark-")
        props = os.path.join(folder, "log4j2.properties")
        with open(props, "w", encoding="utf-8") as f:
            f.write(LOG4J2)
        java_opt = f"-Dlog4j2.configurationFile=file://{props}"
        given = conf.get("spark.driver.extraJavaOptions")
        conf.set("spark.driver.extraJavaOptions", f"{given} {java_opt}" if given else java_opt)
        log_path = os.path.join(folder, "spark.log")
        log = open(log_path, "ab")  # noqa: SIM115 - handed to the JVM, closed below
        popen = {"stdout": log, "stderr": log}
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway

    try:
        try:
            gateway = launch_gateway(conf, popen_kwargs=popen)
        finally:
            if config.quiet:
                log.close()  # the JVM holds its own copy of the descriptor
    except Exception as exc:
        where = f"; Spark's log: {log_path}" if log_path else ""
        raise EngineUnavailableError(
            f"could not start Spark ({type(exc).__name__}): it needs Java 17 or 21 on PATH or "
            f"in JAVA_HOME{where}") from None
    sc = SparkContext(conf=conf, gateway=gateway)
    spark = SparkSession(sc)
    if config.quiet:
        sc.setLogLevel("ERROR")
    return SessionHandle(spark, owned=True, log_path=log_path)


class StageProgress:
    """Finished/total tasks of the active Spark stages on a rich progress bar (a terminal
    only), polled from ``SparkContext.statusTracker()`` in a daemon thread."""

    def __init__(self, spark: Any, description: str, *, enabled: bool | None = None,
                 interval_s: float = 0.25) -> None:
        self.spark = spark
        self.description = description
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.seen: dict[int, tuple[int, int]] = {}  # stage id -> (done, total)

    def __enter__(self) -> StageProgress:
        if self.enabled:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def poll(self) -> tuple[int, int]:
        """Finished and total tasks of every stage seen so far."""
        tracker = self.spark.sparkContext.statusTracker()
        for sid in tracker.getActiveStageIds():
            info = tracker.getStageInfo(sid)
            if info is not None:
                self.seen[sid] = (info.numCompletedTasks, info.numTasks)
        return (sum(d for d, _ in self.seen.values()), sum(t for _, t in self.seen.values()))

    def _run(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        with Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                      MofNCompleteColumn(), TextColumn("Spark tasks"),
                      console=Console(file=sys.stderr), transient=True) as bar:
            task = bar.add_task(self.description, total=None)
            while not self._stop.wait(self.interval_s):
                try:
                    done, total = self.poll()
                except Exception:  # the session is going away; progress is best effort
                    return
                bar.update(task, completed=done, total=max(total, 1))
