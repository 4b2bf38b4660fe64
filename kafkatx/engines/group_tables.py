"""Parquet schemas of ``kafkatx groups --output``: one row per group and partition, one per
pending transactional offset commit. Field names are the JSON contract's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kafkatx.engines.tables import _pa

if TYPE_CHECKING:
    import pyarrow as pa

    from kafkatx.analysis.groups import GroupSummary

GROUP_OFFSETS = "group_offsets"
PENDING_COMMITS = "pending_transactional_commits"


def group_offsets_schema() -> pa.Schema:
    from kafkatx.analysis.groups import GROUP_PARTITION_FIELDS

    pa = _pa()
    return pa.schema([(name, getattr(pa, kind)()) for name, kind in GROUP_PARTITION_FIELDS])


def pending_commits_schema() -> pa.Schema:
    pa = _pa()
    s, i64, i32 = pa.string(), pa.int64(), pa.int32()
    return pa.schema([
        ("group", s), ("topic", s), ("partition", i32), ("offset", i64), ("producer_id", i64),
        ("producer_epoch", pa.int16()), ("batch_offset", i64), ("commit_timestamp", i64),
        ("consumer_offsets_partition", i32), ("transactional_id", s), ("finding", s)])


def group_tables(groups: Sequence[GroupSummary]) -> dict[str, Any]:
    pa = _pa()
    rows = [p.to_dict() for g in groups for p in g.partitions]
    pending = [p.to_dict() for g in groups for p in g.pending]
    return {GROUP_OFFSETS: pa.Table.from_pylist(rows, schema=group_offsets_schema()),
            PENDING_COMMITS: pa.Table.from_pylist(pending, schema=pending_commits_schema())}
