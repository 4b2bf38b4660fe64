"""Tabular results as Arrow tables, for ``--output PATH`` (Parquet), the same for both engines.

``PATH`` is a directory kafkatx creates (it must not exist yet, and must lie outside the
inspected paths: evidence is never written to). It holds one Parquet dataset per table:

* ``partitions.parquet``: one row per partition (the ``inspect --format json`` partition object,
  ``open_transactions`` as a list of structs);
* ``findings.parquet``: one row per finding (the JSON finding object);
* ``records.parquet`` (``replay``): one row per replayed record (the ``--format jsonl`` object,
  ``headers`` as a list of structs, ``pinned_by`` flattened).

The local engine writes each dataset as one file with pyarrow; the Spark engine writes it with
Spark's Parquet writer (a directory of part files, so ``PATH`` may be an ``hdfs://`` or ``s3a://``
URI the cluster can write). pyarrow, Spark, pandas and DuckDB read either form.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from kafkatx.analysis.findings import Finding
from kafkatx.analysis.partition_report import PartitionReport
from kafkatx.errors import KafkatxError
from kafkatx.storage.filesystems import canonical, is_inside, is_uri

if TYPE_CHECKING:
    import pyarrow as pa

PARTITIONS = "partitions"
FINDINGS = "findings"
RECORDS = "records"
PYARROW_HINT = "pip install pyarrow (or 'kafkatx[spark]')"


def require_pyarrow() -> None:
    """Raise a one-line ``KafkatxError`` naming the install when pyarrow is missing."""
    _pa()


def _pa() -> Any:
    try:
        import pyarrow as pa
    except ImportError:
        raise KafkatxError(f"--output writes Parquet, which needs pyarrow: {PYARROW_HINT}"
                           ) from None
    return pa


def _open_txn_type(pa: Any) -> Any:
    return pa.list_(pa.struct([
        ("producer_id", pa.int64()), ("producer_epoch", pa.int16()),
        ("first_offset", pa.int64()), ("last_offset", pa.int64()),
        ("first_timestamp", pa.int64()), ("last_timestamp", pa.int64())]))


def partitions_schema() -> pa.Schema:
    pa = _pa()
    i64, i32, s = pa.int64(), pa.int32(), pa.string()
    return pa.schema([
        ("topic", s), ("partition", i32), ("broker", s), ("log_start_offset", i64),
        ("log_end_offset", i64), ("high_watermark", i64), ("last_stable_offset", i64),
        ("lso_source", s), ("hw_minus_lso", i64), ("records_pending", i64),
        ("open_transactions", _open_txn_type(pa)), ("path", s), ("state", s),
        ("segments", i64), ("size_bytes", i64), ("batches", i64), ("data_records", i64),
        ("producers", i64), ("transactions_committed", i64), ("transactions_aborted", i64),
        ("transactions_open", i64), ("longest_transaction_ms", i64), ("min_timestamp", i64),
        ("max_timestamp", i64), ("findings", i64)])


def findings_schema() -> pa.Schema:
    pa = _pa()
    s = pa.string()
    return pa.schema([
        ("kind", s), ("severity", s), ("topic", s), ("partition", pa.int32()),
        ("producer_id", pa.int64()), ("producer_epoch", pa.int16()), ("transactional_id", s),
        ("offset", pa.int64()), ("location", s), ("message", s), ("remediation", s)])


def records_schema() -> pa.Schema:
    pa = _pa()
    s, i64 = pa.string(), pa.int64()
    header = pa.struct([("key", s), ("value", s), ("value_encoding", s)])
    return pa.schema([
        ("offset", i64), ("timestamp", i64), ("producer_id", i64), ("producer_epoch", pa.int16()),
        ("key", s), ("key_encoding", s), ("value", s), ("value_encoding", s),
        ("headers", pa.list_(header)), ("visible", pa.bool_()), ("reason", s),
        ("abort_marker_offset", i64), ("transaction_first_offset", i64),
        ("pinned_by_producer_id", i64), ("pinned_by_first_offset", i64)])


def partitions_table(reports: Sequence[PartitionReport]) -> pa.Table:
    pa = _pa()
    schema = partitions_schema()
    rows = [r.to_dict() for r in reports]
    return pa.Table.from_pylist([{k: row.get(k) for k in schema.names} for row in rows],
                                schema=schema)


def findings_table(findings: Sequence[Finding]) -> pa.Table:
    pa = _pa()
    schema = findings_schema()
    return pa.Table.from_pylist([f.to_dict() for f in findings], schema=schema)


def record_row(d: dict[str, Any]) -> dict[str, Any]:
    """One ``ReplayedRecord.to_dict()`` flattened into the ``records`` columns."""
    pin = d.get("pinned_by") or {}
    row = {k: d.get(k) for k in ("offset", "timestamp", "producer_id", "producer_epoch", "key",
                                 "key_encoding", "value", "value_encoding", "visible", "reason",
                                 "abort_marker_offset", "transaction_first_offset")}
    row["headers"] = [{"key": h.get("key"), "value": h.get("value"),
                       "value_encoding": h.get("value_encoding")} for h in d["headers"]]
    row["pinned_by_producer_id"] = pin.get("producer_id")
    row["pinned_by_first_offset"] = pin.get("first_offset")
    return row


def records_table(rows: Iterable[dict[str, Any]]) -> pa.Table:
    pa = _pa()
    return pa.Table.from_pylist(list(rows), schema=records_schema())


def check_output_dir(target: str, roots: Sequence[str]) -> None:
    """``--output`` must be new and outside every inspected root (local paths and ``file://``
    by their real paths, other URIs as text; whether a remote target exists is left to the
    writer, which refuses to overwrite)."""
    where = canonical(target)
    for root in roots:
        if is_uri(where) == is_uri(canonical(root)) and is_inside(where, canonical(root)):
            raise KafkatxError(f"refusing to write --output {target} inside the inspected path "
                               f"{root}: evidence directories are never written to")
    if is_uri(where):
        return
    path = target.removeprefix("file://")
    if os.path.exists(path):
        raise KafkatxError(f"--output {target}: already exists; give a new directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise KafkatxError(f"--output {target}: {parent} is not a directory")


def write_local(target: str, tables: dict[str, pa.Table]) -> list[str]:
    """Write each table as ``target/<name>.parquet`` (one file each) with pyarrow."""
    import pyarrow.parquet as pq

    path = target.removeprefix("file://")
    os.makedirs(path, exist_ok=False)
    written = []
    for name, table in tables.items():
        out = os.path.join(path, f"{name}.parquet")
        pq.write_table(table, out)
        written.append(out)
    return written
