"""PySpark data sources over Kafka log dirs (``pyspark.sql.datasource``, Spark >= 4.0).

Read with Spark's usual API::

    spark.read.format("kafka_segments").load("/evidence/broker-1")

With kafkatx pip-installed for the Python Spark runs (``spark.pyspark.python``/``PYSPARK_PYTHON``),
Spark finds the sources by itself: once per JVM it imports every top-level module on that
Python's ``sys.path`` named ``pyspark_*`` that defines ``DefaultSource`` and registers it under
``DefaultSource.name()`` (``pyspark.sql.worker.lookup_data_sources``, found with
``pkgutil.iter_modules``). kafkatx installs one such module per source
(``pyspark_kafka_segments``...; the top-level ``pyspark_*.py`` files of the checkout). A default
editable install (``pip install -e .``) serves them through an import hook that
``pkgutil.iter_modules`` does not see; there use ``--config-settings editable_mode=compat``, put
the checkout on ``PYTHONPATH``, or register them once per session (the Spark engine does)::

    from kafkatx.engines.spark_sources import register
    register(spark)

* ``kafka_segments``: one row per batch header of every live segment (schema:
  :data:`kafkatx.engines.segment_table.SPARK_DDL`, documented in docs/spark.md). Input partitions
  are byte ranges of segments, packed to about ``splitSize`` bytes (option, default 128 MiB);
  big segments are split at batch starts taken from their ``.index``. The reader yields Arrow
  record batches built with numpy by the same scanner the local engine uses.
* ``kafka_txn_index``: one row per ``.txnindex`` entry (aborted transaction).
* ``kafka_producer_snapshots``: one row per producer of every ``.snapshot`` file.
* ``kafka_transaction_log``: one row per ``__transaction_state`` record (key and value decoded).

Options: ``path`` (what ``load(path)`` sets: a local path, or a URI such as
``s3://bucket/logdir``, ``hdfs://nn:8020/kafka``, ``file:///...``; see
:mod:`kafkatx.storage.filesystems`), or ``paths`` (a JSON list); ``splitSize`` (bytes, ``128m``
style suffixes allowed). Planning (``partitions()``) runs on the driver host, which must be able
to list the paths; ``read()`` runs on the executors, which must be able to read them: a URI's
query string (``?endpoint_override=...``) goes with it to the executors, while settings read
from the environment (``AWS_ACCESS_KEY_ID``, ``AWS_ENDPOINT_URL``...) must be set for the
executors too (``spark.executorEnv.NAME``; in local mode they inherit the driver's).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from kafkatx.engines import segment_table, side_tables
from kafkatx.lazy_dataclass import dataclass
from kafkatx.storage import filesystems

SEGMENTS = "kafka_segments"
TXN_INDEX = "kafka_txn_index"
PRODUCER_SNAPSHOTS = "kafka_producer_snapshots"
TRANSACTION_LOG = "kafka_transaction_log"


def option_paths(options: dict[str, str]) -> list[str]:
    """``paths`` (JSON list) or ``path``, as given to ``load``."""
    if options.get("paths"):
        value = json.loads(options["paths"])
        return [value] if isinstance(value, str) else [str(p) for p in value]
    if options.get("path"):
        return [options["path"]]
    raise ValueError("give a path: spark.read.format(...).load(PATH) or .option('paths', "
                     "json.dumps([...]))")


@dataclass(frozen=True)
class SplitGroup(InputPartition):  # type: ignore[misc]
    """One Spark task's share: a few segment byte ranges."""

    splits: tuple[segment_table.SegmentSplit, ...]


@dataclass(frozen=True)
class FileGroup(InputPartition):  # type: ignore[misc]
    """One Spark task's share of small files (indexes, snapshots, coordinator segments)."""

    files: tuple[side_tables.SideFile, ...]


class KafkaSegmentsReader(DataSourceReader):  # type: ignore[misc]
    def __init__(self, options: dict[str, str]) -> None:
        self.paths = option_paths(options)
        self.split_size = segment_table.parse_size(options.get("splitSize",
                                                 str(segment_table.DEFAULT_SPLIT_SIZE)))

    def partitions(self) -> Sequence[InputPartition]:
        refs = side_tables.list_segments(self.paths)
        groups = segment_table.plan_splits(refs, self.split_size)
        # Spark reads one default partition when given none: make it an empty one.
        return [SplitGroup(tuple(g)) for g in groups] or [SplitGroup(())]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, SplitGroup)
        filesystems.remember_all(self.paths)  # the URIs' settings, for the paths in the splits
        for split in partition.splits:
            yield segment_table.read_split(split)


class KafkaSegmentsDataSource(DataSource):  # type: ignore[misc]
    """``spark.read.format("kafka_segments").load(path)``: batch headers of every live segment."""

    @classmethod
    def name(cls) -> str:
        return SEGMENTS

    def schema(self) -> str:
        return segment_table.SPARK_DDL

    def reader(self, schema: Any) -> DataSourceReader:
        return KafkaSegmentsReader(self.options)


class _SideReader(DataSourceReader):  # type: ignore[misc]
    kind: str = ""

    def __init__(self, options: dict[str, str]) -> None:
        self.paths = option_paths(options)

    def partitions(self) -> Sequence[InputPartition]:
        files = side_tables.list_side_files(self.paths, self.kind)
        return [FileGroup(tuple(g)) for g in side_tables.pack(files)] or [FileGroup(())]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, FileGroup)
        filesystems.remember_all(self.paths)
        for f in partition.files:
            yield side_tables.read_side_file(f, self.kind)


class TxnIndexReader(_SideReader):
    kind = side_tables.TXN_INDEX


class ProducerSnapshotsReader(_SideReader):
    kind = side_tables.SNAPSHOT


class TransactionLogReader(_SideReader):
    kind = side_tables.TRANSACTION_LOG


class KafkaTxnIndexDataSource(DataSource):  # type: ignore[misc]
    """``kafka_txn_index``: one row per ``.txnindex`` entry (an aborted transaction)."""

    @classmethod
    def name(cls) -> str:
        return TXN_INDEX

    def schema(self) -> str:
        return side_tables.spark_ddl(side_tables.TXN_INDEX)

    def reader(self, schema: Any) -> DataSourceReader:
        return TxnIndexReader(self.options)


class KafkaProducerSnapshotsDataSource(DataSource):  # type: ignore[misc]
    """``kafka_producer_snapshots``: one row per producer of every ``.snapshot`` file."""

    @classmethod
    def name(cls) -> str:
        return PRODUCER_SNAPSHOTS

    def schema(self) -> str:
        return side_tables.spark_ddl(side_tables.SNAPSHOT)

    def reader(self, schema: Any) -> DataSourceReader:
        return ProducerSnapshotsReader(self.options)


class KafkaTransactionLogDataSource(DataSource):  # type: ignore[misc]
    """``kafka_transaction_log``: one row per ``__transaction_state`` record."""

    @classmethod
    def name(cls) -> str:
        return TRANSACTION_LOG

    def schema(self) -> str:
        return side_tables.spark_ddl(side_tables.TRANSACTION_LOG)

    def reader(self, schema: Any) -> DataSourceReader:
        return TransactionLogReader(self.options)


SOURCES: tuple[type[DataSource], ...] = (KafkaSegmentsDataSource, KafkaTxnIndexDataSource,
                                         KafkaProducerSnapshotsDataSource,
                                         KafkaTransactionLogDataSource)


def register(spark: Any) -> None:
    """Register every kafkatx data source with ``spark`` (a SparkSession)."""
    for source in SOURCES:
        spark.dataSource.register(source)
