"""The Spark engine: kafkatx's analysis in PySpark tasks, for fleets of log dirs.

Same answers as the local engine, because the tasks run the same code:

1. ``kafka_segments`` (:mod:`kafkatx.engines.spark_sources`) scans every live segment on the
   executors into batch-header rows (splits of about 128 MiB, Arrow batches built with numpy).
2. The rows are co-grouped by partition dir with one descriptor row per partition (the
   partition's files, checkpointed high watermark and log start offset), and each group runs
   :func:`kafkatx.engines.local.analyze_partition` with a scan function answered from its rows
   (:func:`kafkatx.engines.segment_table.scans_from_rows`): producer state, transactions, LSO,
   index/snapshot checks, findings. No Kafka rule lives in SQL.
3. The driver gathers one report per partition and ranks the findings as the local engine does.

``replay`` rebuilds the consumer's view of the partition the same way, then decodes the records
of each segment in its own task (:func:`kafkatx.analysis.consumer_view.replay_segment`) and
streams them back in offset order.

Paths may be URIs (``s3://``, ``gs://``, ``hdfs://``, ``abfs://``, ``file://``; see
:mod:`kafkatx.storage.filesystems`): the driver lists them and reads the root checkpoints and the
coordinator's log; the executors read segments, indexes and snapshots through ``pyarrow.fs``,
opening the store from the URI as given (query string included). Settings taken from the
environment (``AWS_ACCESS_KEY_ID``, ``AWS_ENDPOINT_URL``, ``GOOGLE_APPLICATION_CREDENTIALS``,
``CLASSPATH`` for HDFS...) must be set for the executors too: ``--spark-conf
spark.executorEnv.NAME=VALUE`` (local masters inherit the driver's environment).

pyspark is imported when the engine starts a session (``kafkatx[spark]``).
"""

from __future__ import annotations

import json
import os
import pickle
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from types import TracebackType
from typing import TYPE_CHECKING, Any

from kafkatx.analysis.checks import PartitionContext
from kafkatx.analysis.consumer_view import (
    BatchFormatter,
    ConsumerView,
    ReplayedRecord,
    prepare,
    replay_segment,
    segment_fetches,
)
from kafkatx.analysis.findings import Finding
from kafkatx.analysis.replay_result import ReplayResult
from kafkatx.analysis.timeline import Selection
from kafkatx.engines import segment_table
from kafkatx.engines.base import SPARK, EngineConfig
from kafkatx.engines.local import (
    AnalysisOptions,
    Inspection,
    Progress,
    _placed,
    add_partition,
    analyze_partition,
    finish_inspection,
    start_inspection,
)
from kafkatx.errors import KafkatxError
from kafkatx.semantics.read_committed import IsolationLevel
from kafkatx.storage.discovery import LogDir, PartitionDir
from kafkatx.storage.filesystems import RemotePath, is_uri

if TYPE_CHECKING:
    import pyarrow as pa

    from kafkatx.engines.spark_session import SessionHandle

RECORDS_PER_CHUNK = 5_000  # replayed records per row shipped back to the driver
_DESCRIPTOR_DDL = ("partition_dir string, ord int, pdir binary, high_watermark bigint, "
                   "log_start_offset bigint, extra binary")
_RESULT_DDL = "ord int, result binary"


def detached(pdir: PartitionDir) -> PartitionDir:
    """``pdir`` with a bare copy of its log dir (label and path only), small to pickle."""
    if pdir.log_dir is None:
        return pdir
    ld = pdir.log_dir
    return replace(pdir, log_dir=LogDir(path=ld.path, label=ld.label,
                                        meta_properties=ld.meta_properties,
                                        clean_shutdown=ld.clean_shutdown))


def partition_key(pdir: PartitionDir) -> str:
    """The ``partition_dir`` value the data source gives this partition's rows."""
    if isinstance(pdir.path, RemotePath):
        return str(pdir.path)
    return os.path.abspath(str(pdir.path))


def source_path(path: str | os.PathLike[str] | RemotePath) -> str:
    """A path as the data source is given it: absolute, or a URI with its query (the
    executors open the store with the settings given on the command line)."""
    if isinstance(path, RemotePath):
        return path.uri
    text = os.fspath(path)
    return text if is_uri(text) else os.path.abspath(text)


def slim_context(ctx: PartitionContext) -> PartitionContext:
    """What the driver's coordinator join reads of a partition's context (its transactions,
    replay events, time span, offsets), without the producer state and file contents."""
    r = ctx.replay
    replay = ReplayResult(transactions=r.transactions, events=r.events,
                          first_offset=r.first_offset, log_end_offset=r.log_end_offset,
                          max_timestamp=r.max_timestamp, min_timestamp=r.min_timestamp,
                          batches=r.batches, data_records=r.data_records)
    return PartitionContext(topic=ctx.topic, partition=ctx.partition, path=ctx.path,
                            replay=replay, stable=ctx.stable,
                            log_start_offset=ctx.log_start_offset,
                            log_end_offset=ctx.log_end_offset, now_ms=ctx.now_ms,
                            transaction_timeout_ms=ctx.transaction_timeout_ms,
                            max_transaction_timeout_ms=ctx.max_transaction_timeout_ms,
                            max_timeout_said=ctx.max_timeout_said)


def _analyze_group(options: AnalysisOptions) -> Callable[[pa.Table, pa.Table], pa.Table]:
    def run(descriptor: pa.Table, rows: pa.Table) -> pa.Table:
        import pyarrow as pa

        out_ord: list[int] = []
        out: list[bytes] = []
        for d in descriptor.to_pylist():
            pdir = pickle.loads(d["pdir"])
            scan_of = segment_table.scans_from_rows(pdir, rows)
            kept: list[PartitionContext] = []

            def keep(_pdir: PartitionDir, ctx: PartitionContext, findings: list[Finding],
                     kept: list[PartitionContext] = kept) -> list[Finding]:
                kept.append(slim_context(ctx))
                return findings

            cleaner, at_log_end = pickle.loads(d["extra"])
            report = analyze_partition(pdir, high_watermark=d["high_watermark"],
                                       high_watermark_at_log_end=at_log_end,
                                       log_start_offset=d["log_start_offset"],
                                       cleaner_offset=cleaner, options=options,
                                       scan=scan_of, finalize=keep)
            out_ord.append(d["ord"])
            out.append(pickle.dumps((report, kept[0]), protocol=pickle.HIGHEST_PROTOCOL))
        return pa.table({"ord": pa.array(out_ord, pa.int32()), "result": pa.array(out,
                                                                                  pa.binary())})

    return run


def _view_group(descriptor: pa.Table, rows: pa.Table) -> pa.Table:
    import pyarrow as pa

    out_ord: list[int] = []
    out: list[bytes] = []
    for d in descriptor.to_pylist():
        pdir = pickle.loads(d["pdir"])
        kwargs = pickle.loads(d["extra"])
        view = prepare(pdir, scan=segment_table.scans_from_rows(pdir, rows), **kwargs)
        out_ord.append(d["ord"])
        out.append(pickle.dumps(view, protocol=pickle.HIGHEST_PROTOCOL))
    return pa.table({"ord": pa.array(out_ord, pa.int32()), "result": pa.array(out, pa.binary())})


_REPLAY_DDL = "seq int, chunk int, done boolean, stopped boolean, items binary"


def _replay_tasks(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Each input row is one segment's fetch; output rows carry its records in chunks, then a
    last row saying whether the replay ended in that segment."""
    import pyarrow as pa

    schema = pa.schema([("seq", pa.int32()), ("chunk", pa.int32()), ("done", pa.bool_()),
                        ("stopped", pa.bool_()), ("items", pa.binary())])

    def row(seq: int, chunk: int, done: bool, stopped: bool, items: list[Any]) -> pa.RecordBatch:
        return pa.RecordBatch.from_pylist(
            [{"seq": seq, "chunk": chunk, "done": done, "stopped": stopped,
              "items": pickle.dumps(items, protocol=pickle.HIGHEST_PROTOCOL)}], schema=schema)

    for batch in batches:
        for task in batch.to_pylist():
            seq = task["seq"]
            fetch, view, bases, kwargs = pickle.loads(task["task"])
            items: list[Any] = []
            chunk = 0
            gen = replay_segment(fetch, view, bases, on_problem=items.append, **kwargs)
            stopped = False
            while True:
                try:
                    items.append(next(gen))
                except StopIteration as end:
                    stopped = bool(end.value)
                    break
                if len(items) >= RECORDS_PER_CHUNK:
                    yield row(seq, chunk, False, False, items)
                    items = []
                    chunk += 1
            yield row(seq, chunk, True, stopped, items)


def _is_spark_error(exc: Exception) -> bool:
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    return isinstance(exc, PySparkException | Py4JError)


def _spark_schema(schema: pa.Schema) -> Any:
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


class SparkEngine:
    """The Spark engine (:mod:`kafkatx.engines.base` describes the protocol).

    Give ``session`` to use an existing SparkSession (it is then not stopped by ``close``);
    otherwise one is started from ``config`` on first use.
    """

    name = SPARK

    def __init__(self, *, config: EngineConfig | None = None, session: Any = None,
                 split_size: int | None = None) -> None:
        self.config = config or EngineConfig(name=SPARK)
        self.split_size = (split_size or self.config.split_size
                           or segment_table.DEFAULT_SPLIT_SIZE)
        self._handle: SessionHandle | None = None
        self._session = session
        self._registered = False

    # -- session ---------------------------------------------------------------------------

    @property
    def spark(self) -> Any:
        if self._session is None:
            from kafkatx.engines.spark_session import start_session

            self._handle = start_session(self.config)
            self._session = self._handle.spark
        if not self._registered:
            from kafkatx.engines.spark_sources import register

            register(self._session)
            self._registered = True
        return self._session

    @property
    def log_path(self) -> str | None:
        return None if self._handle is None else self._handle.log_path

    def close(self, *, keep_log: bool = False) -> None:
        if self._handle is not None:
            self._handle.close(keep_log=keep_log)
            self._handle = None
            self._session = None

    def __enter__(self) -> SparkEngine:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close(keep_log=exc is not None)

    def _failed(self, exc: Exception, what: str) -> KafkatxError:
        """A Spark job failure as one line (the Python traceback's last line when there is
        one), pointing at Spark's log."""
        text = str(exc).strip().splitlines()
        last = next((line for line in reversed(text) if line.strip()), type(exc).__name__)
        where = f"; Spark's log: {self.log_path}" if self.log_path else ""
        return KafkatxError(f"the Spark job {what} failed: {last.strip()[:300]}{where}")

    def _progress(self, description: str) -> Any:
        from kafkatx.engines.spark_session import StageProgress

        return StageProgress(self.spark, description, enabled=self.config.progress)

    # -- building blocks ---------------------------------------------------------------------

    def segments(self, paths: Iterable[str | os.PathLike[str] | RemotePath]) -> Any:
        """The ``kafka_segments`` DataFrame of ``paths`` (absolute, or URIs; the executors must
        reach them)."""
        given = [source_path(p) for p in paths]
        return (self.spark.read.format("kafka_segments")
                .option("paths", json.dumps(given))
                .option("splitSize", str(self.split_size)).load())

    def _per_partition(self, pdirs: list[PartitionDir], extras: list[dict[str, Any]],
                       fn: Callable[[pa.Table, pa.Table], pa.Table],
                       description: str) -> list[Any]:
        """Run ``fn(descriptor rows, kafka_segments rows)`` once per partition dir; results
        unpickled, in the order of ``pdirs``."""
        import pyarrow as pa

        descriptors = pa.table({
            "partition_dir": pa.array([partition_key(p) for p in pdirs], pa.string()),
            "ord": pa.array(range(len(pdirs)), pa.int32()),
            "pdir": pa.array([pickle.dumps(detached(p)) for p in pdirs], pa.binary()),
            "high_watermark": pa.array([e.get("high_watermark") for e in extras], pa.int64()),
            "log_start_offset": pa.array([e.get("log_start_offset") for e in extras],
                                         pa.int64()),
            "extra": pa.array([pickle.dumps(e.get("extra")) for e in extras], pa.binary()),
        })
        spark = self.spark
        desc_df = spark.createDataFrame(descriptors, schema=_DESCRIPTOR_DDL)
        rows = self.segments([p.path for p in pdirs]).select(*segment_table.SCAN_COLUMNS)
        grouped = (desc_df.groupBy("partition_dir")
                   .cogroup(rows.groupBy("partition_dir"))
                   .applyInArrow(fn, _RESULT_DDL))
        with self._progress(description):
            try:
                collected = grouped.collect()
            except Exception as exc:
                if not _is_spark_error(exc):
                    raise
                raise self._failed(exc, description) from exc
        by_ord = {r["ord"]: pickle.loads(r["result"]) for r in collected if r["ord"] is not None}
        missing = [str(pdirs[i].path) for i in range(len(pdirs)) if i not in by_ord]
        if missing:
            raise KafkatxError(f"the Spark job returned no result for {', '.join(missing[:5])}")
        return [by_ord[i] for i in range(len(pdirs))]

    # -- the protocol ------------------------------------------------------------------------

    def write_tables(self, target: str, tables: dict[str, Any]) -> list[str]:
        """Each table written by Spark's Parquet writer as ``target/<name>.parquet`` (a
        directory of part files; ``target`` may be any URI the cluster writes to)."""
        spark = self.spark
        written = []
        remote = is_uri(target) and not target.startswith("file://")
        base = target if remote else os.path.abspath(target.removeprefix("file://"))
        for name, table in tables.items():
            out = f"{base.rstrip('/')}/{name}.parquet"
            df = spark.createDataFrame(table) if table.num_rows else spark.createDataFrame(
                [], schema=_spark_schema(table.schema))
            df.coalesce(1).write.mode("errorifexists").parquet(out)
            written.append(out)
        return written


    def inspect(self, paths: Iterable[str | os.PathLike[str]], *,
                options: AnalysisOptions | None = None, progress: Progress | None = None,
                on_partition: Callable[[PartitionDir], None] | None = None,
                keep_timeline: bool = False, selection: Selection | None = None) -> Inspection:
        """As :func:`kafkatx.engines.local.inspect_paths`: partitions analysed in Spark tasks,
        then joined with the coordinator's log on the driver, partition by partition in the
        same order (``progress``/``on_partition`` are not called: Spark's stage progress is
        shown instead)."""
        options = options or AnalysisOptions()
        result, joined, work, options = start_inspection(paths, options=options,
                                                         keep_timeline=keep_timeline,
                                                         selection=selection)
        pdirs = [pdir for pdir, *_ in work]
        extras = [{"high_watermark": hw, "log_start_offset": start,
                   "extra": (cleaner, at_log_end)}
                  for _, hw, start, cleaner, at_log_end in work]
        analysed = (self._per_partition(pdirs, extras, _analyze_group(options),
                                        "analysing partitions") if pdirs else [])
        for pdir, (report, ctx) in zip(pdirs, analysed, strict=True):
            # The join the local engine runs in analyze_partition's finalize, here on the driver.
            report.findings = [_placed(f, report.topic, report.partition)
                               for f in joined.on_partition(pdir, ctx, report.findings)]
            add_partition(result, report)
        return finish_inspection(result, joined)

    def consumer_view(self, pdir: PartitionDir, *, isolation: IsolationLevel,
                      high_watermark: int | None, as_of_offset: int | None = None,
                      index_source: str = "file",
                      log_start_offset: int | None = None,
                      high_watermark_at_log_end: bool = False,
                      after_restart: bool = False) -> ConsumerView:
        extra = {"isolation": isolation, "high_watermark": high_watermark,
                 "as_of_offset": as_of_offset, "index_source": index_source,
                 "log_start_offset": log_start_offset,
                 "high_watermark_at_log_end": high_watermark_at_log_end,
                 "after_restart": after_restart}
        [view] = self._per_partition([pdir], [{"extra": extra}], _view_group,
                                     "rebuilding the partition")
        return view  # type: ignore[no-any-return]

    def replay_records(self, pdir: PartitionDir, view: ConsumerView, *,
                       from_offset: int | None = None, to_offset: int | None = None,
                       show_hidden: bool = False,
                       on_problem: Callable[[str], None] | None = None,
                       only_hidden: bool = False,
                       formatter: BatchFormatter | None = None,
                       on_bytes: Callable[[int], None] | None = None
                       ) -> Iterator[ReplayedRecord]:
        """Each segment's records decoded in its own task; streamed back in order (every
        record as a ReplayedRecord: ``formatter`` and ``on_bytes`` are not used on executors,
        whose stages show their own progress)."""
        start, fetches = segment_fetches(pdir, view, from_offset=from_offset)
        if not fetches:
            return
        import pyarrow as pa

        bases = [s.base_offset for s in pdir.segments if s.log is not None]
        kwargs = {"start": start, "to_offset": to_offset, "show_hidden": show_hidden,
                  "only_hidden": only_hidden}
        tasks = pa.table({
            "seq": pa.array(range(len(fetches)), pa.int32()),
            "task": pa.array([pickle.dumps((f, view, bases, kwargs)) for f in fetches],
                             pa.binary()),
        })
        spark = self.spark
        df = spark.createDataFrame(tasks, schema="seq int, task binary")
        df = df.repartition(min(len(fetches), spark.sparkContext.defaultParallelism * 4))
        out = df.mapInArrow(_replay_tasks, _REPLAY_DDL).orderBy("seq", "chunk")
        for r in out.toLocalIterator():
            for item in pickle.loads(r["items"]):
                if isinstance(item, str):
                    if on_problem is not None:
                        on_problem(item)
                else:
                    yield item
            if r["done"] and r["stopped"]:
                return
