"""Options shared by the analysis commands (``lso``, ``inspect``, ``verify``, ``groups``,
``timeline``, ``replay``), and the call of the library's inspection
(:mod:`kafkatx.engines.inspection`) with the progress bar and what it wrote said on stderr."""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import click

from kafkatx.analysis.metadata_settings import DEFAULT_MAX_TRANSACTION_TIMEOUT_MS
from kafkatx.analysis.view_names import AFTER_RESTART, AS_FOUND
from kafkatx.cli.now_option import NOW_HELP, NowParam, default_now
from kafkatx.cli.output import stderr_console
from kafkatx.cli.output_path import check_output_file, format_for_output, stdout_to, suffix_format
from kafkatx.cli.progress import ScanProgress
from kafkatx.engines.base import AUTO, ENGINE_NAMES, SPARK, Engine, EngineConfig
from kafkatx.engines.inspection import CAPTURE, RequestError, inspect
from kafkatx.engines.inspection import check_output as check_parquet_output
from kafkatx.engines.local import AnalysisOptions, Inspection

T = TypeVar("T")

# The analysis keeps objects by the ten thousand (transactions, verdicts, timeline rows) and
# frees few: with Python's default young-generation threshold (700 allocations) the cyclic GC
# walks them again and again (measured: 0.2-0.5 of 2.4 CPU-s for ``timeline`` on 40,000
# transactions). The analysis commands collect every 100,000 allocations instead.
ANALYSIS_GC_THRESHOLD = (100_000, 50, 100)
DEFAULT_TRANSACTION_TIMEOUT_MS = 60_000  # the producer's transaction.timeout.ms default
class EngineCliOptions(NamedTuple):
    """``--engine``, ``--master``, ``--spark-conf``, ``--output``."""

    engine: str = AUTO
    master: str | None = None
    spark_conf: tuple[tuple[str, str], ...] = ()
    output: str | None = None
    split_size: int | None = None
    verbose: int = 0

    @property
    def config(self) -> EngineConfig:
        return EngineConfig(name=self.engine, master=self.master, spark_conf=self.spark_conf,
                            split_size=self.split_size, quiet=self.verbose < 1)


def _spark_conf(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]
                ) -> tuple[tuple[str, str], ...]:
    out = []
    for item in value:
        key, sep, val = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", ctx=ctx, param=param)
        out.append((key.strip(), val))
    return tuple(out)


def _size(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    if value is None:
        return None
    from kafkatx.engines.segment_table import parse_size

    try:
        size = parse_size(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a size (e.g. 128m)", ctx=ctx,
                                 param=param) from None
    if size < 1:
        raise click.BadParameter("must be positive", ctx=ctx, param=param)
    return size


_ENGINE_OPTIONS = (
    click.option("--engine", type=click.Choice(ENGINE_NAMES), default=AUTO, show_default=True,
                 help="Where the analysis runs: local (this process), spark (PySpark tasks; "
                      "needs kafkatx[spark]), or auto: spark when --master is given or the "
                      "input is large on a many-core machine, else local. Both give the same "
                      "answers."),
    click.option("--master", default=None, metavar="URL",
                 help="Spark master (local[4], spark://host:7077, yarn, k8s://...); implies "
                      "--engine spark under auto. Default: Spark's own (local[*], or what "
                      "spark-submit gives)."),
    click.option("--spark-conf", "spark_conf", multiple=True, metavar="KEY=VALUE",
                 callback=_spark_conf,
                 help="A Spark setting (repeatable), e.g. spark.driver.memory=4g."),
    click.option("--split-size", "split_size", callback=_size, default=None, metavar="SIZE",
                 help="Spark: bytes of segments per task (e.g. 64m, 256m; default 128m). Big "
                      "segments are split at batch starts from their .index."),
    click.option("-o", "--output", "engine_output", default=None, metavar="PATH",
                 help="Where the result goes (outside the inspected paths), its suffix saying "
                      "the format: FILE.json, .jsonl, .csv or .txt (the table) instead of "
                      "stdout; any other PATH (e.g. out.parquet) is a new directory of Parquet "
                      "datasets, the table still printed: partitions.parquet and "
                      "findings.parquet (records.parquet for replay)."),
)


def engine_options(f: Callable[..., Any] | None = None, *, output: bool = True) -> Any:
    """Add ``--engine``, ``--master``, ``--spark-conf``, ``--split-size`` and (unless
    ``output=False``: the command has its own) ``--output``; the command receives them as one
    ``engine: EngineCliOptions`` keyword. Use as ``@engine_options`` or
    ``@engine_options(output=False)``."""
    if f is None:
        return functools.partial(engine_options, output=output)

    @functools.wraps(f)
    def wrapper(*args: Any, engine: str, master: str | None,
                spark_conf: tuple[tuple[str, str], ...], split_size: int | None,
                **kwargs: Any) -> Any:
        target = kwargs.pop("engine_output", None) if output else None
        ctx = click.get_current_context(silent=True)
        verbose = 0
        if ctx is not None and ctx.find_root().obj:
            verbose = int(ctx.find_root().obj.get("verbose", 0))
        opts = EngineCliOptions(engine=engine, master=master, spark_conf=spark_conf,
                                output=target, split_size=split_size, verbose=verbose)
        writes = None
        if target is not None and suffix_format(target) is not None:  # a file, not Parquet
            kwargs["fmt"] = format_for_output(target, kwargs["fmt"])
            check_output_file(target, kwargs["paths"])
            writes, opts = stdout_to(target), opts._replace(output=None)
        before = gc.get_threshold()
        gc.set_threshold(*ANALYSIS_GC_THRESHOLD)
        try:
            with writes or nullcontext():
                return f(*args, engine=opts, **kwargs)
        finally:
            gc.set_threshold(*before)
            if writes is not None:
                stderr_console().print(f"wrote {target}", markup=False)

    for option in reversed(_ENGINE_OPTIONS if output else _ENGINE_OPTIONS[:-1]):
        wrapper = option(wrapper)
    return wrapper


class AnalysisCliOptions(NamedTuple):
    now: int | str = CAPTURE  # epoch ms, or capture / data (kafkatx.cli.now_option)
    transaction_timeout_ms: int = DEFAULT_TRANSACTION_TIMEOUT_MS
    max_transaction_timeout_ms: int | None = None
    transaction_state_partitions: int | None = None
    manifest: Path | None = None
    engine: EngineCliOptions = EngineCliOptions()
    after_restart: bool = False
    validate_records: bool = False  # verify: every record of every batch decoded
    predict_restart: bool = True  # False: a command that shows no findings (lso, groups)

    @property
    def view(self) -> str:
        return AFTER_RESTART if self.after_restart else AS_FOUND

    @property
    def engine_options(self) -> AnalysisOptions:
        return AnalysisOptions(now_ms=self.now if isinstance(self.now, int) else None,
                               transaction_timeout_ms=self.transaction_timeout_ms,
                               max_transaction_timeout_ms=self.max_transaction_timeout_ms,
                               transaction_state_partitions=self.transaction_state_partitions,
                               validate_records=self.validate_records, view=self.view,
                               predict_restart=self.predict_restart)


max_transaction_timeout_option = click.option(
    "--max-transaction-timeout-ms", "max_transaction_timeout_ms", type=click.IntRange(min=1),
    default=None, metavar="N",
    help="As kafka-transactions.sh find-hanging's --max-transaction-timeout: an open "
         "transaction is judged (lso_pinned, hanging) only once its last write is older than "
         "the larger of this and its transaction timeout (the one __transaction_state "
         "recorded, else --transaction-timeout-ms). Default: the cluster's "
         "transaction.max.timeout.ms when a KRaft metadata log among the paths has it as a "
         f"broker config, else {DEFAULT_MAX_TRANSACTION_TIMEOUT_MS} (find-hanging's 15 "
         "minutes).")

transaction_state_partitions_option = click.option(
    "--transaction-state-partitions", "transaction_state_partitions",
    type=click.IntRange(min=1), default=None, metavar="N",
    help="The cluster's transaction.state.log.num.partitions, for partitionFor (which "
         "__transaction_state partition holds a transactional id). Default: detected from the "
         "evidence (every __transaction_state-N directory 0..N-1 present, or the count that "
         "places the transactional ids found where they are; else Kafka's default 50).")


after_restart_option = click.option(
    "--after-restart", "after_restart", is_flag=True, default=False,
    help="Answer for a broker that has just restarted on exactly these files, once it has "
         "loaded them (Kafka's LogLoader: recovery after an unclean shutdown, rebuilt indexes "
         "and .txnindex files, producer state from the snapshots it keeps). Default: what the "
         "broker served when the files were taken. Differences are findings in both views "
         "(restart_changes, restart_keeps_transaction).")

_OPTIONS = (
    click.option("--now", type=NowParam(keywords=True), default=None, help=NOW_HELP),
    click.option("--transaction-timeout-ms", type=click.IntRange(min=1),
                 default=DEFAULT_TRANSACTION_TIMEOUT_MS, show_default=True,
                 help="The producers' transaction.timeout.ms (the producer default is "
                      "60000), assumed for a transaction __transaction_state has no record of; "
                      "see --max-transaction-timeout-ms."),
    max_transaction_timeout_option,
    transaction_state_partitions_option,
    after_restart_option,
    click.option("--manifest", type=click.Path(dir_okay=False, path_type=Path), default=None,
                 metavar="FILE",
                 help="Also write a SHA-256 manifest (sha256sum format) of every file read to "
                      "FILE, which must lie outside the inspected paths."),
)


def analysis_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Add ``--now``, ``--transaction-timeout-ms``, ``--max-transaction-timeout-ms``,
    ``--transaction-state-partitions``,
    ``--manifest`` and the engine options
    (:func:`engine_options`); the command receives them as one ``analysis: AnalysisCliOptions``
    keyword."""

    @functools.wraps(f)
    def wrapper(*args: Any, now: int | str | None, transaction_timeout_ms: int,
                max_transaction_timeout_ms: int | None,
                transaction_state_partitions: int | None, after_restart: bool,
                manifest: Path | None, engine: EngineCliOptions, **kwargs: Any) -> Any:
        opts = AnalysisCliOptions(now=default_now(now),
                                  transaction_timeout_ms=transaction_timeout_ms,
                                  max_transaction_timeout_ms=max_transaction_timeout_ms,
                                  transaction_state_partitions=transaction_state_partitions,
                                  manifest=manifest, engine=engine, after_restart=after_restart)
        return f(*args, analysis=opts, **kwargs)

    wrapper = engine_options(wrapper)
    for option in reversed(_OPTIONS):
        wrapper = option(wrapper)
    return wrapper


def scan_progress(total: int, engine_name: str) -> ScanProgress:
    """The progress bar of a scan (none under Spark: its stages show their own)."""
    return ScanProgress(total, enabled=None if engine_name != SPARK else False)


def library_call(call: Callable[[], T]) -> T:
    """Run a library call; its request errors become click's, naming the option."""
    try:
        return call()
    except RequestError as exc:
        if exc.option is None:
            raise click.UsageError(str(exc)) from None
        raise click.BadParameter(str(exc), param_hint=f"'{exc.option}'") from None


def check_output(output: str, paths: Sequence[str]) -> None:
    """``--output`` (Parquet) must be a new directory outside every inspected path."""
    library_call(lambda: check_parquet_output(output, paths))


def run_inspection(paths: Sequence[str], options: AnalysisCliOptions,
                   then: Callable[[Engine, Inspection], None] | None = None,
                   own_output: bool = False) -> Inspection:
    """The inspection (:func:`kafkatx.engines.inspection.inspect`) with a progress bar on a
    TTY; says on stderr what it wrote (``--manifest``, and ``--output`` unless ``own_output``:
    the command writes its own in ``then``)."""
    output = options.engine.output
    if own_output and output is not None:
        check_output(output, paths)
    run = library_call(lambda: inspect(
        paths, options=options.engine_options, engine=options.engine.config,
        manifest=options.manifest, output=None if own_output else output,
        progress=scan_progress, then=then, now=options.now))
    if not (run.written or run.manifest_path is not None):
        return run.inspection
    err = stderr_console()
    if run.written:
        err.print(f"wrote {', '.join(run.written)}", markup=False)
    if run.manifest_path is not None:
        err.print(f"manifest of {run.manifest_files} file(s) read written to "
                  f"{run.manifest_path}", markup=False)
        for path in run.changed_paths:
            err.print(f"kafkatx: warning: {path} changed while it was being read", markup=False)
    return run.inspection
