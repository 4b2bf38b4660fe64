"""Segments as a table of batch headers: input splits, the reader, and the way back to scans.

This is the pure core of the ``kafka_segments`` Spark data source (no pyspark import here):

* :func:`plan_splits` cuts the live segments of partition dirs into byte ranges (whole small
  segments packed together, big segments split only at batch starts taken from their ``.index``
  and checked against the log) and bin-packs them into input partitions of about ``split_size``
  bytes;
* :func:`read_split` scans one byte range with the same scanner the local engine uses
  (:func:`kafkatx.formats.segment_scan.scan_segment`) and returns it as one Arrow record batch,
  built column by column from numpy (no per-row Python);
* :func:`scans_from_rows` turns a partition's rows back into the ``SegmentScan`` of each segment,
  so the analysis code runs unchanged. A segment whose splits did not all scan cleanly (damage,
  a range that did not end on a batch boundary) is not trusted: it is scanned again whole, so
  the result is always exactly what the local engine computes.

pyarrow is imported when a function needs it (it comes with the ``spark`` extra).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from kafkatx.errors import KafkatxError
from kafkatx.formats import batch_layout as layout
from kafkatx.formats.batchscan import HeaderColumns
from kafkatx.formats.offset_index import read_offset_index
from kafkatx.formats.segment_scan import SegmentScan, scan_segment
from kafkatx.lazy_dataclass import dataclass
from kafkatx.storage import filesystems
from kafkatx.storage.discovery import PartitionDir
from kafkatx.storage.filesystems import RemotePath

if TYPE_CHECKING:
    import pyarrow as pa

DEFAULT_SPLIT_SIZE = 128 * 1024 * 1024  # bytes of segments per input partition

# (column, arrow type name, Spark SQL type): the documented ``kafka_segments`` schema.
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("partition_dir", "string", "string"),
    ("topic", "string", "string"),
    ("partition", "int32", "int"),
    ("segment", "string", "string"),
    ("segment_base_offset", "int64", "bigint"),
    ("position", "int64", "bigint"),
    ("base_offset", "int64", "bigint"),
    ("last_offset", "int64", "bigint"),
    ("batch_length", "int32", "int"),
    ("partition_leader_epoch", "int32", "int"),
    ("magic", "int8", "tinyint"),
    ("crc", "int64", "bigint"),
    ("crc_valid", "bool_", "boolean"),
    ("attributes", "int16", "smallint"),
    ("compression", "int8", "tinyint"),
    ("timestamp_type", "int8", "tinyint"),
    ("is_transactional", "bool_", "boolean"),
    ("is_control", "bool_", "boolean"),
    ("last_offset_delta", "int32", "int"),
    ("base_timestamp", "int64", "bigint"),
    ("max_timestamp", "int64", "bigint"),
    ("producer_id", "int64", "bigint"),
    ("producer_epoch", "int16", "smallint"),
    ("base_sequence", "int32", "int"),
    ("last_sequence", "int32", "int"),
    ("records_count", "int32", "int"),
    ("control_type", "int16", "smallint"),
    ("coordinator_epoch", "int32", "int"),
    ("split_start", "int64", "bigint"),
    ("split_end", "int64", "bigint"),
    ("split_clean", "bool_", "boolean"),
)
COLUMN_NAMES = tuple(c[0] for c in COLUMNS)
SPARK_DDL = ", ".join(f"{name} {sql}" for name, _, sql in COLUMNS)

# What the analysis needs to rebuild a SegmentScan (everything but the constant strings).
SCAN_COLUMNS = ("partition_dir", "segment_base_offset", *HeaderColumns.COLUMNS, "control_type",
                "coordinator_epoch", "split_start", "split_end", "split_clean")


_UNITS = {"k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}


def parse_size(text: str) -> int:
    """``134217728``, ``128m``, ``1g`` -> bytes (ValueError otherwise)."""
    t = text.strip().lower().removesuffix("b")
    if t and t[-1] in _UNITS:
        return int(float(t[:-1]) * _UNITS[t[-1]])
    return int(t)


def arrow_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema([pa.field(name, getattr(pa, kind)(), nullable=True)
                      for name, kind, _ in COLUMNS])


# --------------------------------------------------------------------------------------------
# Reading byte ranges


def read_range(path: str | RemotePath, start: int, end: int) -> bytes:
    """Bytes ``[start, end)`` of ``path``: a local path (read-only, through
    :func:`kafkatx.storage.files.open_bytes`) or a URI (``s3://``, ``hdfs://``, ``file://``...,
    through :mod:`kafkatx.storage.filesystems`)."""
    return filesystems.read_range(path, start, end)


def file_size(path: str | RemotePath) -> int:
    return filesystems.size(path)


# --------------------------------------------------------------------------------------------
# Splits


@dataclass(frozen=True, slots=True)
class SegmentSplit:
    """Bytes ``[start, end)`` of one segment file; ``start`` is a batch boundary."""

    partition_dir: str
    topic: str
    partition: int
    segment: str
    base_offset: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


@dataclass(frozen=True, slots=True)
class SegmentRef:
    """A live segment to read: what the planner needs to know about it."""

    partition_dir: str
    topic: str
    partition: int
    log: str
    base_offset: int
    size: int
    index: str | None = None


def segment_refs(partitions: Iterable[PartitionDir]) -> list[SegmentRef]:
    """The live segments (with a ``.log``) of ``partitions``, in their order."""
    out = []
    for p in partitions:
        for s in p.segments:
            if s.log is None:
                continue
            out.append(SegmentRef(partition_dir=str(p.path), topic=p.topic,
                                  partition=p.partition, log=str(s.log),
                                  base_offset=s.base_offset, size=s.log_size,
                                  index=None if s.index is None else str(s.index)))
    return out


def _batch_starts_at(header: bytes, position: int, size: int) -> bool:
    """A v2 batch header that fits in the file starts at ``position``."""
    if (len(header) < layout.HEADER_SIZE_UP_TO_MAGIC
            or header[layout.MAGIC_OFFSET] != layout.MAGIC_V2):
        return False
    (length,) = layout.LENGTH_FIELD.unpack_from(header, layout.LENGTH_OFFSET)
    return length >= layout.MIN_BATCH_LENGTH and position + layout.LOG_OVERHEAD + length <= size


def cut_points(ref: SegmentRef, split_size: int) -> list[int]:
    """Positions inside ``ref`` where a split may start: about every ``split_size`` bytes, at
    ``.index`` entries (``OffsetIndex`` maps offsets to batch starts) whose position holds a
    plausible v2 batch header. Without a usable index the segment stays whole."""
    if ref.size <= split_size or ref.index is None:
        return []
    try:
        raw = read_range(ref.index, 0, file_size(ref.index))
    except (OSError, KafkatxError):
        return []
    try:
        index = read_offset_index(bytes(raw), base_offset=ref.base_offset, path=ref.index)
    except KafkatxError:
        return []
    cuts: list[int] = []
    next_at = split_size
    previous = 0
    for entry in index.entries:
        pos = entry.position
        if pos <= previous or pos >= ref.size:
            continue  # hints only: keep them strictly increasing and inside the file
        if pos >= next_at:
            try:
                header = bytes(read_range(ref.log, pos, min(pos + layout.HEADER_SIZE_UP_TO_MAGIC,
                                                            ref.size)))
            except (OSError, KafkatxError):
                break
            if _batch_starts_at(header, pos, ref.size):
                cuts.append(pos)
                previous = pos
                next_at = pos + split_size
    return cuts


def plan_splits(refs: Sequence[SegmentRef], split_size: int = DEFAULT_SPLIT_SIZE
                ) -> list[list[SegmentSplit]]:
    """Byte ranges of every non-empty segment, packed into groups of about ``split_size`` bytes
    (each group is one Spark task: tasks cost tens of ms each, so small segments share one)."""
    if split_size < 1:
        raise ValueError(f"split size must be positive, got {split_size}")
    splits: list[SegmentSplit] = []
    for ref in refs:
        if ref.size <= 0:
            continue
        bounds = [0, *cut_points(ref, split_size), ref.size]
        for start, end in itertools.pairwise(bounds):
            splits.append(SegmentSplit(partition_dir=ref.partition_dir, topic=ref.topic,
                                       partition=ref.partition, segment=ref.log,
                                       base_offset=ref.base_offset, start=start, end=end))
    groups: list[list[SegmentSplit]] = []
    current: list[SegmentSplit] = []
    filled = 0
    for split in splits:
        if current and filled + split.size > split_size:
            groups.append(current)
            current, filled = [], 0
        current.append(split)
        filled += split.size
    if current:
        groups.append(current)
    return groups


# --------------------------------------------------------------------------------------------
# One split -> Arrow


def _repeat(value: object, n: int, kind: Any) -> Any:
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.take(pa.array([value], type=kind), pa.array(np.zeros(n, dtype=np.int32)))


def scan_range(split: SegmentSplit) -> tuple[SegmentScan, bool]:
    """Scan the split's bytes; positions are made absolute in the file. ``clean`` means no
    problem was met and the batches end exactly at the split's end (then these rows are exactly
    the whole-file scan's rows in this range)."""
    data = read_range(split.segment, split.start, split.end)
    scan = scan_segment(data, path=split.segment)
    h = scan.headers
    ends_on_boundary = (split.size == 0 if not len(h)
                        else int(h.next_position[-1]) == split.size)
    clean = not scan.problems and ends_on_boundary
    if split.start and len(h):
        cols = {name: getattr(h, name) for name in HeaderColumns.COLUMNS}
        cols["position"] = h.position + split.start
        scan = SegmentScan(path=scan.path, headers=HeaderColumns(**cols),
                           control_type=scan.control_type,
                           coordinator_epoch=scan.coordinator_epoch, problems=scan.problems,
                           size=scan.size)
    return scan, clean


def read_split(split: SegmentSplit) -> pa.RecordBatch:
    """The rows of one split as an Arrow record batch with exactly :func:`arrow_schema`."""
    import pyarrow as pa

    scan, clean = scan_range(split)
    h = scan.headers
    n = len(h)
    schema = arrow_schema()
    arrays: dict[str, Any] = {
        "partition_dir": _repeat(split.partition_dir, n, pa.string()),
        "topic": _repeat(split.topic, n, pa.string()),
        "partition": np.full(n, split.partition, dtype=np.int32),
        "segment": _repeat(split.segment, n, pa.string()),
        "segment_base_offset": np.full(n, split.base_offset, dtype=np.int64),
        "last_offset": h.last_offset,
        "crc": h.crc.astype(np.int64),
        "compression": h.compression.astype(np.int8),
        "timestamp_type": h.timestamp_type.astype(np.int8),
        "is_transactional": h.is_transactional,
        "is_control": h.is_control,
        "last_sequence": h.last_sequence,
        "control_type": scan.control_type,
        "coordinator_epoch": scan.coordinator_epoch,
        "split_start": np.full(n, split.start, dtype=np.int64),
        "split_end": np.full(n, split.end, dtype=np.int64),
        "split_clean": np.full(n, clean, dtype=np.bool_),
    }
    for name in HeaderColumns.COLUMNS:
        if name not in arrays:
            arrays[name] = getattr(h, name)
    columns = [a if isinstance(a, pa.Array | pa.ChunkedArray)
               else pa.array(a, type=schema.field(name).type)
               for name, a in ((f.name, arrays[f.name]) for f in schema)]
    return pa.RecordBatch.from_arrays(
        [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns],
        schema=schema)


# --------------------------------------------------------------------------------------------
# Rows -> scans

_SCAN_DTYPES = {name: getattr(HeaderColumns.empty(), name).dtype
                for name in HeaderColumns.COLUMNS}

ScanOf = Callable[[Path], SegmentScan]


def _whole_file_scan(path: Path) -> SegmentScan:
    from kafkatx.storage.files import open_bytes

    with open_bytes(path) as data:
        return scan_segment(data, path=str(path))


def scans_from_rows(pdir: PartitionDir, table: pa.Table | None,
                    rescan: ScanOf = _whole_file_scan) -> ScanOf:
    """A ``path -> SegmentScan`` function over ``pdir``'s live segments, answered from the rows
    of ``table`` (the partition's ``kafka_segments`` rows, any order) when every split of the
    segment scanned clean and together they cover the file, else by ``rescan`` (the whole file,
    as the local engine reads it)."""
    by_base: dict[int, dict[str, np.ndarray]] = {}
    if table is not None and table.num_rows:
        cols = {name: table.column(name).to_numpy(zero_copy_only=False)
                for name in SCAN_COLUMNS if name != "partition_dir"}
        bases = cols["segment_base_offset"]
        order = np.lexsort((cols["position"], bases))
        bases = bases[order]
        cuts = np.flatnonzero(np.diff(bases)) + 1
        for chunk in np.split(np.arange(len(order)), cuts):
            if not len(chunk):
                continue
            rows = order[chunk]
            by_base[int(bases[chunk[0]])] = {k: v[rows] for k, v in cols.items()}
    sizes = {str(s.log): s.log_size for s in pdir.segments if s.log is not None}
    bases_of = {str(s.log): s.base_offset for s in pdir.segments if s.log is not None}

    def scan_of(path: Path) -> SegmentScan:
        key = str(path)
        size = sizes.get(key)
        base = bases_of.get(key)
        rows = by_base.get(base) if base is not None else None
        if rows is None:
            if size == 0:
                return scan_segment(b"", path=key)
            return rescan(path)
        if size is None or not _covers(rows, size):
            return rescan(path)
        headers = HeaderColumns(**{name: np.ascontiguousarray(rows[name],
                                                              dtype=_SCAN_DTYPES[name])
                                   for name in HeaderColumns.COLUMNS})
        return SegmentScan(path=key, headers=headers,
                           control_type=np.ascontiguousarray(rows["control_type"],
                                                             dtype=np.int16),
                           coordinator_epoch=np.ascontiguousarray(rows["coordinator_epoch"],
                                                                  dtype=np.int32),
                           problems=(), size=size)

    return scan_of


def _covers(rows: dict[str, np.ndarray], size: int) -> bool:
    """Every split clean, and the splits tile ``[0, size)`` with no gap or overlap."""
    if not bool(np.all(rows["split_clean"])):
        return False
    ranges = sorted({(int(a), int(b)) for a, b in zip(rows["split_start"], rows["split_end"],
                                                       strict=True)})
    at = 0
    for start, end in ranges:
        if start != at:
            return False
        at = end
    return at == size
