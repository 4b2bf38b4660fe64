"""Listing log dirs for the Spark data sources, and the small-file tables beside the segments.

Paths, local or URIs (``s3://``, ``hdfs://``, ``gs://``, ``file://``...), are discovered with
:func:`kafkatx.storage.discovery.discover` (the broker's rules for what is a partition dir and a
live segment; URIs through :mod:`kafkatx.storage.filesystems`).

The side tables (one Arrow batch per file, no pyspark here):

* ``txn_index``: one row per ``.txnindex`` entry;
* ``snapshot``: one row per producer of a ``.snapshot`` file;
* ``transaction_log``: one row per ``__transaction_state`` record, decoded by
  :func:`kafkatx.analysis.coordinator.read_partition`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from kafkatx.engines.segment_table import SegmentRef, segment_refs
from kafkatx.formats.internal_topics import TRANSACTION_STATE_TOPIC
from kafkatx.lazy_dataclass import dataclass
from kafkatx.storage import filesystems
from kafkatx.storage.discovery import PartitionDir, discover

if TYPE_CHECKING:
    import pyarrow as pa

TXN_INDEX = "txn_index"
SNAPSHOT = "snapshot"
TRANSACTION_LOG = "transaction_log"
FILES_PER_TASK = 256

_COMMON = (("partition_dir", "string", "string"), ("topic", "string", "string"),
           ("partition", "int32", "int"), ("file", "string", "string"))
_SCHEMAS: dict[str, tuple[tuple[str, str, str], ...]] = {
    TXN_INDEX: (*_COMMON,
        ("segment_base_offset", "int64", "bigint"), ("file_position", "int64", "bigint"),
        ("version", "int16", "smallint"), ("producer_id", "int64", "bigint"),
        ("first_offset", "int64", "bigint"), ("last_offset", "int64", "bigint"),
        ("last_stable_offset", "int64", "bigint")),
    SNAPSHOT: (*_COMMON,
        ("snapshot_offset", "int64", "bigint"), ("snapshot_version", "int16", "smallint"),
        ("crc_valid", "bool_", "boolean"), ("loadable", "bool_", "boolean"),
        ("file_position", "int64", "bigint"), ("producer_id", "int64", "bigint"),
        ("producer_epoch", "int16", "smallint"), ("last_sequence", "int32", "int"),
        ("last_offset", "int64", "bigint"), ("offset_delta", "int32", "int"),
        ("timestamp", "int64", "bigint"), ("coordinator_epoch", "int32", "int"),
        ("current_txn_first_offset", "int64", "bigint")),
    TRANSACTION_LOG: (*_COMMON,
        ("offset", "int64", "bigint"), ("timestamp", "int64", "bigint"),
        ("location", "string", "string"), ("transactional_id", "string", "string"),
        ("tombstone", "bool_", "boolean"), ("state", "string", "string"),
        ("producer_id", "int64", "bigint"), ("producer_epoch", "int16", "smallint"),
        ("transaction_timeout_ms", "int32", "int"),
        ("last_update_timestamp_ms", "int64", "bigint"),
        ("start_timestamp_ms", "int64", "bigint"), ("value_json", "string", "string")),
}


def spark_ddl(kind: str) -> str:
    return ", ".join(f"{name} {sql}" for name, _, sql in _SCHEMAS[kind])


def arrow_schema(kind: str) -> pa.Schema:
    import pyarrow as pa

    return pa.schema([pa.field(name, getattr(pa, t)(), nullable=True)
                      for name, t, _ in _SCHEMAS[kind]])


# --------------------------------------------------------------------------------------------
# Listing


@dataclass(frozen=True, slots=True)
class SideFile:
    """One small file (or, for the transaction log, one partition dir) to read in a task."""

    partition_dir: str
    topic: str
    partition: int
    path: str
    base_offset: int


def partitions(paths: Sequence[str]) -> tuple[PartitionDir, ...]:
    """The live partitions under ``paths`` (local paths or URIs)."""
    return discover(paths).all_partitions()


def list_segments(paths: Sequence[str]) -> list[SegmentRef]:
    """Every live segment under ``paths``, partition by partition."""
    return segment_refs(partitions(paths)) if paths else []


def list_side_files(paths: Sequence[str], kind: str) -> list[SideFile]:
    """The files a side table reads under ``paths``."""
    if kind not in _SCHEMAS:
        raise ValueError(f"unknown side table {kind!r}")
    out: list[SideFile] = []
    for p in partitions(paths) if paths else ():
        common = {"partition_dir": str(p.path), "topic": p.topic, "partition": p.partition}
        if kind == TXN_INDEX:
            out += [SideFile(**common, path=str(s.txnindex), base_offset=s.base_offset)
                    for s in p.segments if s.txnindex is not None]
        elif kind == SNAPSHOT:
            out += [SideFile(**common, path=str(path), base_offset=off)
                    for off, path in p.snapshots]
        elif kind == TRANSACTION_LOG and p.topic == TRANSACTION_STATE_TOPIC:
            out.append(SideFile(**common, path=str(p.path), base_offset=0))
    return out


def pack(files: Sequence[SideFile], per_task: int = FILES_PER_TASK) -> list[list[SideFile]]:
    return [list(files[i:i + per_task]) for i in range(0, len(files), per_task)]


# --------------------------------------------------------------------------------------------
# Reading


def _read_all(path: str) -> bytes:
    return filesystems.read_bytes(path)


def _rows(kind: str, f: SideFile) -> list[dict[str, Any]]:
    common = {"partition_dir": f.partition_dir, "topic": f.topic, "partition": f.partition,
              "file": f.path}
    if kind == TXN_INDEX:
        from kafkatx.formats.txn_index import read_txn_index

        read = read_txn_index(_read_all(f.path), path=f.path, base_offset=f.base_offset)
        return [{**common, "segment_base_offset": f.base_offset,
                 "file_position": e.file_position, **e.to_dict()} for e in read.entries]
    if kind == SNAPSHOT:
        from kafkatx.formats.producer_snapshot import read_producer_snapshot

        snap = read_producer_snapshot(_read_all(f.path), path=f.path)
        head = {**common, "snapshot_offset": f.base_offset, "snapshot_version": snap.version,
                "crc_valid": snap.crc_valid, "loadable": snap.loadable}
        return [{**head, "file_position": e.file_position, **e.to_dict()}
                for e in snap.entries]
    if kind == TRANSACTION_LOG:
        return _transaction_log_rows(f, common)
    raise ValueError(f"unknown side table {kind!r}")


def _transaction_log_rows(f: SideFile, common: dict[str, Any]) -> list[dict[str, Any]]:
    import json

    from kafkatx.analysis.coordinator import read_partition

    pdir = discover([f.path]).all_partitions()
    out = []
    for p in pdir:
        for rec in read_partition(p).records:
            v = rec.value
            out.append({**common, "offset": rec.offset, "timestamp": rec.timestamp,
                        "location": rec.location, "transactional_id": rec.transactional_id,
                        "tombstone": v is None, "state": rec.state_name,
                        "producer_id": None if v is None else v.producer_id,
                        "producer_epoch": None if v is None else v.producer_epoch,
                        "transaction_timeout_ms": None if v is None else v.transaction_timeout_ms,
                        "last_update_timestamp_ms":
                            None if v is None else v.last_update_timestamp_ms,
                        "start_timestamp_ms": None if v is None else v.start_timestamp_ms,
                        "value_json": None if v is None else json.dumps(v.to_dict(),
                                                                        sort_keys=True)})
    return out


def read_side_file(f: SideFile, kind: str) -> pa.RecordBatch:
    """The rows of one file as an Arrow record batch with exactly :func:`arrow_schema`."""
    import pyarrow as pa

    schema = arrow_schema(kind)
    rows = _rows(kind, f)
    return pa.RecordBatch.from_pylist(
        [{name: row.get(name) for name in schema.names} for row in rows], schema=schema)


def iter_local_rows(paths: Iterable[str | os.PathLike[str]], kind: str) -> list[dict[str, Any]]:
    """Every row of a side table, read in this process (for tests and the local engine)."""
    out: list[dict[str, Any]] = []
    for f in list_side_files([os.fspath(p) for p in paths], kind):
        out += _rows(kind, f)
    return out


__all__ = ["SNAPSHOT", "TRANSACTION_LOG", "TXN_INDEX", "SideFile", "arrow_schema",
           "list_segments", "list_side_files", "pack", "read_side_file", "spark_ddl"]
