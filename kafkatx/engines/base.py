"""The engine protocol: what an engine answers (the factory that picks one is
:mod:`kafkatx.engines.factory`, above both engines).

An engine runs the partition-wise work of the analysis commands: rebuilding every partition's
producer state, transactions, LSO and findings (``inspect``, ``lso``, ``verify``), and a
consumer's replay of one partition (``replay``). Both engines call the same
:mod:`kafkatx.analysis` / :mod:`kafkatx.semantics` code, so they give the same answers:

* ``local`` (:class:`kafkatx.engines.local.LocalEngine`): in this process, one segment at a time;
* ``spark`` (:class:`kafkatx.engines.spark.SparkEngine`): the same code in PySpark tasks, for
  fleets of log dirs on a Spark cluster. pyspark is the ``kafkatx[spark]`` extra and is imported
  only when this engine is opened.

``auto`` picks Spark only when a master is given or the input is large, and pyspark is there.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from kafkatx.engines.local import AnalysisOptions, Inspection, Progress
from kafkatx.errors import KafkatxError
from kafkatx.storage.discovery import PartitionDir

if TYPE_CHECKING:  # the replay's types: imported by the commands that replay
    from kafkatx.analysis.consumer_view import BatchFormatter, ConsumerView, ReplayedRecord
    from kafkatx.analysis.timeline import Selection
    from kafkatx.semantics.read_committed import IsolationLevel

LOCAL = "local"
SPARK = "spark"
AUTO = "auto"
ENGINE_NAMES = (AUTO, LOCAL, SPARK)
SPARK_INSTALL_HINT = "pip install 'kafkatx[spark]'"


class EngineUnavailableError(KafkatxError):
    """The chosen engine cannot run here (pyspark missing, Java missing...)."""


class EngineConfig(NamedTuple):
    """What the CLI's ``--engine``, ``--master``, ``--spark-conf`` say."""

    name: str = LOCAL  # auto | local | spark
    master: str | None = None  # None: Spark's own default (local[*], or spark-submit's)
    spark_conf: tuple[tuple[str, str], ...] = ()
    split_size: int | None = None  # bytes of segments per Spark task (None: 128 MiB)
    quiet: bool = True  # Spark's JVM logs go to a file instead of stderr
    progress: bool | None = None  # None: a progress bar when stderr is a terminal


class Engine(Protocol):
    """What every engine answers; results are the local engine's types."""

    name: str

    def inspect(self, paths: Iterable[str | os.PathLike[str]], *,
                options: AnalysisOptions | None = None, progress: Progress | None = None,
                on_partition: Callable[[PartitionDir], None] | None = None,
                keep_timeline: bool = False, selection: Selection | None = None) -> Inspection:
        """Discover every partition under ``paths``, analyze each one, and join them with the
        coordinator's log (``inspect_paths``); ``keep_timeline`` keeps the joined timeline."""
        ...

    def consumer_view(self, pdir: PartitionDir, *, isolation: IsolationLevel,
                      high_watermark: int | None, as_of_offset: int | None = None,
                      index_source: str = "file",
                      log_start_offset: int | None = None,
                      high_watermark_at_log_end: bool = False,
                      after_restart: bool = False) -> ConsumerView:
        """The replayed moment of one partition (see ``consumer_view.prepare``)."""
        ...

    def replay_records(self, pdir: PartitionDir, view: ConsumerView, *,
                       from_offset: int | None = None, to_offset: int | None = None,
                       show_hidden: bool = False,
                       on_problem: Callable[[str], None] | None = None,
                       only_hidden: bool = False,
                       formatter: BatchFormatter | None = None,
                       on_bytes: Callable[[int], None] | None = None
                       ) -> Iterator[ReplayedRecord]:
        """The consumer's fetches (see ``consumer_view.replay_records``)."""
        ...

    def write_tables(self, target: str, tables: dict[str, Any]) -> list[str]:
        """Write Arrow tables as Parquet datasets ``target/<name>.parquet`` (``--output``)."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Engine: ...

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None: ...
