"""Options shared by the analysis commands (``lso``, ``inspect``, ``verify``) and their common run:
discovery with clear errors for paths holding no Kafka data, the progress bar, the manifest."""

from __future__ import annotations

import datetime as dt
import functools
import gc
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from kafkatx.analysis.metadata_settings import DEFAULT_MAX_TRANSACTION_TIMEOUT_MS
from kafkatx.analysis.restart_view import AFTER_RESTART, AS_FOUND, VIEW_LINES
from kafkatx.cli.output import stderr_console, stdout_console
from kafkatx.cli.progress import ScanProgress
from kafkatx.engines.base import AUTO, ENGINE_NAMES, SPARK, Engine, EngineConfig
from kafkatx.engines.factory import open_engine, resolve_engine_name
from kafkatx.engines.local import AnalysisOptions, Inspection
from kafkatx.errors import KafkatxError
from kafkatx.storage.discovery import MAX_SEARCH_DEPTH, Discovery, discover
from kafkatx.storage.filesystems import canonical, is_inside, is_uri
from kafkatx.storage.manifest import Manifest, recording

# The analysis keeps objects by the ten thousand (transactions, verdicts, timeline rows) and
# frees few: with Python's default young-generation threshold (700 allocations) the cyclic GC
# walks them again and again (measured: 0.2-0.5 of 2.4 CPU-s for ``timeline`` on 40,000
# transactions). The analysis commands collect every 100,000 allocations instead.
ANALYSIS_GC_THRESHOLD = (100_000, 50, 100)
DEFAULT_TRANSACTION_TIMEOUT_MS = 60_000  # the producer's transaction.timeout.ms default
_EARLIEST_PLAUSIBLE_MS = 10**11  # 1973: smaller "epoch ms" values are seconds given by mistake
_LATEST_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z, the last instant ISO-8601 can say


class NowParam(click.ParamType):
    """``--now``: ISO-8601 (``Z``/offset; naive means UTC) or epoch milliseconds -> epoch ms."""

    name = "TIME"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        text = str(value).strip()
        if text.isdigit():
            ms = int(text)
            if ms < _EARLIEST_PLAUSIBLE_MS:
                self.fail(f"{text!r} is before 1973 as epoch milliseconds; did you give seconds? "
                          f"(use {ms * 1000})", param, ctx)
            if ms > _LATEST_MS:
                self.fail(f"{text!r} is after the year 9999 as epoch milliseconds", param, ctx)
            return ms
        try:
            when = dt.datetime.fromisoformat(text)
        except ValueError:
            self.fail(f"{text!r} is neither ISO-8601 (e.g. 2025-11-21T05:00:00Z) nor epoch "
                      "milliseconds", param, ctx)
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        return int(when.timestamp() * 1000)


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineCliOptions:
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
    click.option("--output", "engine_output", default=None, metavar="PATH",
                 help="Also write the tabular results as Parquet into the new directory PATH "
                      "(outside the inspected paths): partitions.parquet and findings.parquet "
                      "(records.parquet for replay)."),
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
        before = gc.get_threshold()
        gc.set_threshold(*ANALYSIS_GC_THRESHOLD)
        try:
            return f(*args, engine=opts, **kwargs)
        finally:
            gc.set_threshold(*before)

    for option in reversed(_ENGINE_OPTIONS if output else _ENGINE_OPTIONS[:-1]):
        wrapper = option(wrapper)
    return wrapper


@dataclass(frozen=True, slots=True, kw_only=True)
class AnalysisCliOptions:
    now_ms: int | None = None
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
        return AnalysisOptions(now_ms=self.now_ms,
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
    click.option("--now", type=NowParam(), default=None,
                 help="The time to measure transaction ages against: ISO-8601 (UTC when no "
                      "offset is given) or epoch milliseconds. Default: the newest timestamp "
                      "in each partition's log (the copy may be old)."),
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
    def wrapper(*args: Any, now: int | None, transaction_timeout_ms: int,
                max_transaction_timeout_ms: int | None,
                transaction_state_partitions: int | None, after_restart: bool,
                manifest: Path | None, engine: EngineCliOptions, **kwargs: Any) -> Any:
        opts = AnalysisCliOptions(now_ms=now, transaction_timeout_ms=transaction_timeout_ms,
                                  max_transaction_timeout_ms=max_transaction_timeout_ms,
                                  transaction_state_partitions=transaction_state_partitions,
                                  manifest=manifest, engine=engine, after_restart=after_restart)
        return f(*args, analysis=opts, **kwargs)

    wrapper = engine_options(wrapper)
    for option in reversed(_OPTIONS):
        wrapper = option(wrapper)
    return wrapper


def print_view_line(view: str) -> None:
    """The first line of a table: which view answers (only the restart view says it; the
    view as found is every command's default)."""
    if view == AFTER_RESTART:
        stdout_console().print(VIEW_LINES[view], style="bold", highlight=False, markup=False)


def _found_dirs(disc: Discovery) -> list[str]:
    found = [canonical(d.path) for d in disc.log_dirs]
    found += [canonical(p.path) for d in disc.log_dirs for p in d.partitions]
    found += [canonical(p.path) for p in disc.bare_partitions]
    return found


def _holds_data(path: str, found: list[str]) -> bool:
    root = canonical(path)
    if is_uri(path) and not path.startswith("file://"):
        return any(is_inside(f, root) for f in found)
    return any(f == root or f.startswith(root.rstrip(os.sep) + os.sep) for f in found)


def discover_or_fail(paths: Sequence[str]) -> Discovery:
    """Discover ``paths``; a path that is missing or holds no Kafka data is an error (exit 1)."""
    disc = discover(paths)  # raises UnreadableFileError for a missing path / not a directory
    found = _found_dirs(disc)
    empty = [p for p in paths if not _holds_data(p, found)]
    if empty:
        names = ", ".join(empty)
        raise KafkatxError(
            f"no Kafka data in {names}: looked for a broker log dir (meta.properties or "
            "*-offset-checkpoint files beside <topic>-<partition> dirs) or a partition dir "
            f"(<topic>-<partition> holding <offset>.log/.index/.snapshot files), up to "
            f"{MAX_SEARCH_DEPTH} levels deep")
    return disc


def scan_bytes(disc: Discovery) -> int:
    """Bytes of the live segments the engine will scan (the progress bar's total)."""
    return sum(s.log_size for p in disc.all_partitions() for s in p.segments)


def run_inspection(paths: Sequence[str], options: AnalysisCliOptions,
                   then: Callable[[Engine, Inspection], None] | None = None,
                   own_output: bool = False) -> Inspection:
    """Discover, analyze with the chosen engine (a progress bar on a TTY), record and write the
    manifest, and the ``--output`` tables (unless ``own_output``: the command writes its own);
    ``then`` runs with the engine still open (for commands that replay partitions after the
    inspection)."""
    if not paths:
        raise click.UsageError("give at least one PATH")
    manifest = None
    if options.manifest is not None:
        if any(is_uri(p) for p in paths):
            raise click.UsageError("--manifest records files read from the local disk: not "
                                   "with URIs")
        manifest = Manifest(roots=paths)
        try:
            manifest.check_target(options.manifest)
        except KafkatxError as exc:
            raise click.BadParameter(str(exc), param_hint="'--manifest'") from None
        parent = options.manifest.parent
        if not parent.is_dir():
            raise click.BadParameter(f"{parent} is not a directory", param_hint="'--manifest'")
    output = options.engine.output
    if output is not None:
        check_output(output, paths)
    disc = discover_or_fail(paths)
    total = scan_bytes(disc)
    config = options.engine.config
    if manifest is not None and resolve_engine_name(config, total) == SPARK:
        raise click.UsageError("--manifest records the files read in this process: use it with "
                               "--engine local")
    with open_engine(config, input_bytes=total) as engine:
        with ScanProgress(total, enabled=None if engine.name != SPARK else False) as bar:
            if manifest is None:
                result = engine.inspect(paths, options=options.engine_options,
                                        progress=bar.advance, on_partition=bar.partition)
            else:
                with recording(manifest):
                    result = engine.inspect(paths, options=options.engine_options,
                                            progress=bar.advance, on_partition=bar.partition)
        if manifest is None:
            join_inspection(paths, result)
        else:
            with recording(manifest):  # the metadata log and the files the joins read
                join_inspection(paths, result)
        if then is not None:
            then(engine, result)
        if output is not None and not own_output:
            write_inspection(engine, output, result)
    if manifest is not None and options.manifest is not None:
        target = manifest.write(options.manifest)
        err = stderr_console()
        err.print(f"manifest of {len(manifest)} file(s) read written to {target}", markup=False)
        for path in manifest.changed_paths():
            err.print(f"kafkatx: warning: {path} changed while it was being read", markup=False)
    return result


def join_inspection(paths: Sequence[str], result: Inspection) -> None:
    from kafkatx.engines.cluster_metadata import join_inspection as join

    join(paths, result)


def check_output(output: str, paths: Sequence[str]) -> None:
    """``--output`` must be a new directory outside every inspected path."""
    from kafkatx.engines.tables import check_output_dir, require_pyarrow

    try:
        require_pyarrow()
        check_output_dir(output, paths)
    except KafkatxError as exc:
        raise click.BadParameter(str(exc), param_hint="'--output'") from None


def write_inspection(engine: Engine, output: str, result: Inspection) -> None:
    """``partitions.parquet`` and ``findings.parquet`` into ``output``."""
    from kafkatx.engines.tables import FINDINGS, PARTITIONS, findings_table, partitions_table

    reports = sorted(result.partitions, key=lambda r: (r.topic, r.partition, r.broker or "",
                                                       r.path))
    written = engine.write_tables(output, {PARTITIONS: partitions_table(reports),
                                           FINDINGS: findings_table(result.findings)})
    stderr_console().print(f"wrote {', '.join(written)}", markup=False)
