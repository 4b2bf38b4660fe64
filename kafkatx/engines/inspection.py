"""The library entry point of an inspection: what ``kafkatx inspect``, ``lso``, ``verify``,
``groups`` and ``timeline`` run, and what :mod:`kafkatx.testing` asks.

:func:`inspect` discovers the paths (a path holding no Kafka data is an error), opens the
engine the configuration names (local or Spark), analyzes every partition, joins them with the
KRaft metadata logs among the evidence, records a SHA-256 manifest of the files read and writes
the Parquet tables, and returns an :class:`InspectionRun`. It prints nothing: the commands
render what it returns.

    from kafkatx.engines.inspection import inspect
    run = inspect(["/copies/broker-1"])
    for finding in run.inspection.findings: ...
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from kafkatx.analysis.timefmt import iso_ms
from kafkatx.engines.base import SPARK, Engine, EngineConfig
from kafkatx.engines.cluster_metadata import join_inspection
from kafkatx.engines.factory import open_engine, resolve_engine_name
from kafkatx.engines.local import AnalysisOptions, Inspection
from kafkatx.errors import KafkatxError
from kafkatx.lazy_dataclass import dataclass
from kafkatx.storage.capture_time import newest_mtime_ms
from kafkatx.storage.discovery import MAX_SEARCH_DEPTH, Discovery, PartitionDir, discover
from kafkatx.storage.filesystems import canonical, is_inside, is_uri

if TYPE_CHECKING:
    from kafkatx.analysis.timeline import Selection
    from kafkatx.storage.manifest import Manifest

CAPTURE = "capture"  # --now: when the evidence was captured (its newest file time)
DATA = "data"  # --now: the newest record of each partition
GIVEN = "given"  # --now: a moment the user gave
# How far a record's CreateTime may run ahead of its broker's clock (Kafka 4's default
# log.message.timestamp.after.max.ms, ServerLogConfigs): a --now that much before the newest
# record is before the data, not a producer's clock running ahead.
TIMESTAMP_AFTER_MAX_MS = 3_600_000


class RequestError(KafkatxError):
    """The request itself is wrong (no path, a bad ``output`` or ``manifest`` target);
    ``option`` names the command-line option it came from, when one did."""

    def __init__(self, message: str, option: str | None = None) -> None:
        super().__init__(message)
        self.option = option


class ScanObserver(Protocol):
    """What sees the scan go by: bytes of segments scanned, and each partition started."""

    def advance(self, n: int) -> None: ...

    def partition(self, pdir: PartitionDir) -> None: ...


# (bytes to scan, engine name) -> a context manager giving the observer (e.g. a progress bar)
ProgressFactory = Callable[[int, str], AbstractContextManager[ScanObserver | None]]


@dataclass(slots=True)
class InspectionRun:
    """What :func:`inspect` returns: the inspection, and what it wrote beside it."""

    inspection: Inspection
    manifest_path: str | None = None  # where the manifest was written
    manifest_files: int = 0  # files it lists
    changed_paths: list[str] = field(default_factory=list)  # changed while being read
    written: list[str] = field(default_factory=list)  # the Parquet datasets of ``output``


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


class NoKafkaDataError(KafkatxError):
    """A path holds nothing kafkatx can analyse: no log dir, no partition dir."""


def discover_or_fail(paths: Sequence[str]) -> Discovery:
    """Discover ``paths``; a path that is missing or holds no Kafka data is an error."""
    disc = discover(paths)  # raises UnreadableFileError for a missing path / not a directory
    found = _found_dirs(disc)
    empty = [p for p in paths if not _holds_data(p, found)]
    if empty:
        names = ", ".join(empty)
        raise NoKafkaDataError(
            f"no Kafka data in {names}: looked for a broker log dir (meta.properties or "
            "*-offset-checkpoint files beside <topic>-<partition> dirs) or a partition dir "
            f"(<topic>-<partition> holding <offset>.log/.index/.snapshot files), up to "
            f"{MAX_SEARCH_DEPTH} levels deep")
    return disc


def scan_bytes(disc: Discovery) -> int:
    """Bytes of the live segments the engine will scan (the progress total)."""
    return sum(s.log_size for p in disc.all_partitions() for s in p.segments)


def check_output(output: str, paths: Sequence[str]) -> None:
    """A Parquet ``output`` must be a new directory outside every inspected path."""
    from kafkatx.engines.tables import check_output_dir, require_pyarrow

    try:
        require_pyarrow()
        check_output_dir(output, paths)
    except KafkatxError as exc:
        raise RequestError(str(exc), "--output") from None


def _manifest_for(paths: Sequence[str], target: Path) -> Manifest:
    from kafkatx.storage.manifest import Manifest  # loaded for --manifest only

    if any(is_uri(p) for p in paths):
        raise RequestError("--manifest records files read from the local disk: not with URIs")
    manifest = Manifest(roots=paths)
    try:
        manifest.check_target(target)
    except KafkatxError as exc:
        raise RequestError(str(exc), "--manifest") from None
    if not target.parent.is_dir():
        raise RequestError(f"{target.parent} is not a directory", "--manifest")
    return manifest


def write_inspection(engine: Engine, output: str, result: Inspection) -> list[str]:
    """``partitions.parquet`` and ``findings.parquet`` into ``output``; the datasets written."""
    from kafkatx.engines.tables import FINDINGS, PARTITIONS, findings_table, partitions_table

    reports = sorted(result.partitions, key=lambda r: (r.topic, r.partition, r.broker or "",
                                                       r.path))
    return engine.write_tables(output, {PARTITIONS: partitions_table(reports),
                                        FINDINGS: findings_table(result.findings)})


def inspect(paths: Sequence[str | os.PathLike[str]], *,
            options: AnalysisOptions | None = None,
            engine: EngineConfig | None = None,
            manifest: Path | None = None, output: str | None = None,
            progress: ProgressFactory | None = None,
            then: Callable[[Engine, Inspection], None] | None = None,
            keep_timeline: bool = False, selection: Selection | None = None,
            join_cluster: bool = True, now: int | str | None = None) -> InspectionRun:
    """Inspect ``paths`` (log dirs, partition dirs, folders of copies; local paths or URIs).

    ``options``: the analysis (``--now``, timeouts, the view); ``engine``: where it runs;
    ``manifest``: also write a sha256sum manifest of every file read there (local engine,
    local paths); ``output``: also write ``partitions.parquet`` and ``findings.parquet`` into
    that new directory (unless ``then`` writes its own: pass ``output=None``); ``progress``
    makes an observer of the scan; ``then`` runs with the engine still open (to replay
    partitions after the inspection); ``keep_timeline`` keeps the joined transactions
    ``selection`` picks; ``join_cluster=False`` leaves out the metadata-log joins.

    ``now``: what ages are measured from: epoch ms (refused when before the newest record),
    ``CAPTURE`` (the evidence's newest file time; the newest record when the files say
    nothing or are older than the data) or ``DATA`` (each partition's newest record); None
    keeps ``options.now_ms``.
    """
    options = AnalysisOptions() if options is None else options
    engine = EngineConfig() if engine is None else engine
    roots = [os.fspath(p) for p in paths]
    if not roots:
        raise RequestError("give at least one PATH")
    recorder = None if manifest is None else _manifest_for(roots, manifest)
    if output is not None:
        check_output(output, roots)
    disc = discover_or_fail(roots)
    total = scan_bytes(disc)
    if recorder is not None and resolve_engine_name(engine, total) == SPARK:
        raise RequestError("--manifest records the files read in this process: use it with "
                           "--engine local")
    source = GIVEN if options.now_ms is not None else DATA
    if isinstance(now, int):
        options, source = options._replace(now_ms=now), GIVEN
    elif now == DATA:
        options = options._replace(now_ms=None)
    elif now == CAPTURE:
        captured = newest_mtime_ms(disc, roots)
        options = options._replace(now_ms=captured)
        source = CAPTURE if captured is not None else DATA

    def recorded() -> AbstractContextManager[object]:
        if recorder is None:
            return nullcontext()
        from kafkatx.storage.manifest import recording

        return recording(recorder)

    run = InspectionRun(inspection=Inspection())
    with open_engine(engine, input_bytes=total) as runner:
        observing = progress(total, runner.name) if progress is not None else nullcontext()
        with observing as observer, recorded():
            result = runner.inspect(
                roots, options=options,
                progress=observer.advance if observer is not None else None,
                on_partition=observer.partition if observer is not None else None,
                keep_timeline=keep_timeline, selection=selection)
        newest = max((r.max_timestamp for r in result.partitions
                      if isinstance(getattr(r, "max_timestamp", None), int)), default=-1)
        if options.now_ms is not None and options.now_ms < newest:
            if source == GIVEN and options.now_ms < newest - TIMESTAMP_AFTER_MAX_MS:
                raise RequestError(
                    f"{iso_ms(options.now_ms)} is before the newest record of the evidence "
                    f"({iso_ms(newest)}): ages would be negative; give a later time, now, or "
                    "data", "--now")
            if source == CAPTURE:  # file times older than the data (copied without them)
                options, source = options._replace(now_ms=None), DATA
                with recorded():
                    result = runner.inspect(roots, options=options,
                                            keep_timeline=keep_timeline, selection=selection)
        if join_cluster:
            with recorded():  # the metadata log and the files the joins read
                join_inspection(roots, result)
        result.now_ms, result.now_source = options.now_ms, source
        run.inspection = result
        if then is not None:
            then(runner, result)
        if output is not None:
            run.written = write_inspection(runner, output, result)
    if recorder is not None and manifest is not None:
        run.manifest_path = str(recorder.write(manifest))
        run.manifest_files = len(recorder)
        run.changed_paths = [str(p) for p in recorder.changed_paths()]
    return run
