"""What ``kafkatx dump`` shows: every file of a log dir decoded into plain JSON-ready items.

Each item is a dict with ``kind`` (what it is), ``file`` (where it came from) and the fields of
the documented contract for that kind. Damage is reported as items of kind ``problem``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import field
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from kafkatx.analysis import dump_lines
from kafkatx.analysis.dump_filter import DumpFilter
from kafkatx.analysis.dump_lines import (
    HAVE_LINES,
    HAVE_TABLE,
    SlowItems,
    kept_rows,
    line_items,
    table_items,
)
from kafkatx.errors import FormatError, KafkatxError, UnreadableFileError
from kafkatx.formats.batch_layout import (
    COMPRESSION_MASK,
    CONTROL_FLAG,
    DELETE_HORIZON_FLAG,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG,
)
from kafkatx.formats.batch_values import ControlType, control_type_name
from kafkatx.formats.batchscan import HeaderColumns
from kafkatx.formats.internal_topics import (
    GROUP_METADATA_TOPIC,
    METADATA_TOPIC,
    TRANSACTION_STATE_TOPIC,
)
from kafkatx.formats.record_format import (
    HAVE_FORMATTER,
    INT64_MAX,
    INT64_MIN,
    RECORD_JSON,
    RawJsonList,
    format_records_at,
)
from kafkatx.formats.record_values import render_bytes
from kafkatx.formats.segment_scan import (
    NO_CONTROL,
    SegmentScan,
    page_releaser,
    scan_segment_chunks,
)
from kafkatx.lazy_dataclass import dataclass
from kafkatx.storage.file_walk import present, segment_files, topic_partition_dirs, walk_files
from kafkatx.storage.layout import offset_from_filename, parse_partition_dir, strip_transient_suffix
from kafkatx.storage.readers import file_bytes, segment_buffer

if TYPE_CHECKING:
    from kafkatx.formats.legacy_message import LegacyEntry
    from kafkatx.formats.record_batch import RecordBatch
    from kafkatx.formats.segment import SegmentEntry, SegmentProblem

# The readers of everything but a data segment's v2 batches (construct's parsers, the
# coordinators' and KRaft's record decoders, the codecs) are imported where a file or batch
# needs them: ``dump --records`` of a data partition loads none of them
# (tests/test_cli_startup.py).

SCAN_ROWS_AT_ONCE = 1 << 16  # batches whose header fields are Python ints at a time

OFFSET_CHECKPOINTS = (
    "replication-offset-checkpoint",
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "cleaner-offset-checkpoint",
)
SUFFIX_TYPES = {
    ".log": "segment",
    ".index": "offset_index",
    ".timeindex": "time_index",
    ".txnindex": "txn_index",
    ".snapshot": "producer_snapshot",
}
NAME_TYPES = {
    **{name: "offset_checkpoint" for name in OFFSET_CHECKPOINTS},
    "leader-epoch-checkpoint": "leader_epoch_checkpoint",
    "partition.metadata": "partition_metadata",
    "meta.properties": "meta_properties",
    "quorum-state": "quorum_state",  # kafkatx.formats.quorum_state.FILE_NAME
}


@dataclass(slots=True)
class DumpStats:
    """What a ``dump`` run read, could not read, skipped and found wrong."""

    files: int = 0
    unreadable: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)
    problems: int = 0


def file_type(path: Path) -> str | None:
    """Which decoder reads ``path``: by name, then by suffix (``.deleted`` etc. stripped)."""
    if ".checkpoint" in path.name:  # every KRaft snapshot's name (Snapshots.SUFFIX)
        from kafkatx.formats.metadata_records import parse_snapshot_name

        if parse_snapshot_name(path.name) is not None:
            return "metadata_snapshot"
    name, _ = strip_transient_suffix(path.name)
    if name in NAME_TYPES:
        return NAME_TYPES[name]
    return SUFFIX_TYPES.get(Path(name).suffix)


def internal_topic(path: Path) -> str | None:
    """``__transaction_state``, ``__consumer_offsets`` or ``__cluster_metadata`` when ``path``
    lies in such a partition."""
    parsed = parse_partition_dir(path.parent.name)
    if parsed and parsed.topic in (TRANSACTION_STATE_TOPIC, GROUP_METADATA_TOPIC,
                                   METADATA_TOPIC):
        return parsed.topic
    return None


def expand_paths(paths: Iterable[str], stats: DumpStats) -> list[Path]:
    """Files given, plus every known file under directories given (sorted, recursive)."""
    return walk_files(paths, lambda child: file_type(child) is not None)


def dump(
    paths: Iterable[str], flt: DumpFilter, *, records: bool, stats: DumpStats,
    encoded: bool = False, lines: str | None = None, table_runs: bool = False,
) -> Iterator[dict]:
    """Yield the dump items of every file under ``paths``; ``encoded``: a data batch's
    ``records`` may be their JSON text already (``RawJsonList``, for JSON output); ``lines``
    too: runs of data batches may come as their items' JSON text already, joined by ``lines``
    (``{"kind": "encoded", "file", "position", "text"}``, ``text`` UTF-8 bytes,
    :mod:`kafkatx.analysis.dump_lines`);
    ``table_runs`` (with ``encoded``): runs of data batches as ``{"kind": "batch_run", "file",
    "position", "run"}`` (``dump_lines.TableRun``: the table's text, or these items)."""
    files = expand_paths(paths, stats)
    last_of = {str(path): i for i, path in enumerate(files)}  # a file given twice: its last
    for i, path in enumerate(files):
        kind = file_type(path)
        if kind is None:
            if not present(path):
                stats.unreadable.append(f"{path}: no such file or directory")
            else:
                stats.ignored.append(str(path))
            continue
        stats.files += 1
        try:
            # a file's table ends with it unless the same file comes again (the same table)
            for item in _dump_file(path, kind, flt, records=records, encoded=encoded,
                                   lines=lines, table_runs=table_runs,
                                   closes_at_end=last_of[str(path)] == i):
                if item["kind"] == "problem":
                    stats.problems += 1
                yield item
        except UnreadableFileError as exc:
            stats.unreadable.append(str(exc))


def _dump_file(path: Path, kind: str, flt: DumpFilter, *, records: bool,
               encoded: bool, lines: str | None, table_runs: bool, closes_at_end: bool
               ) -> Iterator[dict]:
    file = str(path)
    if kind == "segment":
        yield from _dump_segment(path, flt, records=records, encoded=encoded, lines=lines,
                                 table_runs=table_runs, closes_at_end=closes_at_end)
        return
    if kind == "metadata_snapshot":  # a KRaft snapshot is record batches, wherever it lies
        yield from _dump_segment(path, flt, records=True, topic=METADATA_TOPIC)
        return
    if flt.selects and kind in _UNSELECTABLE_FILES:
        return  # no producer, no record offset: nothing in it can be what a filter selects
    # Bytes, not text: each reader says which line is not UTF-8, as a problem of the file.
    data = file_bytes(path)
    if kind in _ONE_VALUE_FILES:
        read_value, problem = _ONE_VALUE_FILES[kind]
        try:
            value = read_value(data, path=file)
        except FormatError as exc:
            yield from _from_format_errors(file, [exc], problem)
        else:
            yield {"kind": kind, "file": file, **value.to_dict()}
        return
    read_entries, item_kind, problem, keep = _ENTRY_FILES[kind]
    base = offset_from_filename(strip_transient_suffix(path.name)[0])
    read = read_entries(data, file, base)
    for e in read.entries:
        if keep(e, flt):
            yield {"kind": item_kind, "file": file, **e.to_dict()}
    yield from _from_format_errors(file, read.problems, problem)


def _problem(file: str, position: int | None, message: str, problem: str) -> dict:
    return {"kind": "problem", "file": file, "problem": problem, "position": position,
            "message": message}


def _from_format_errors(file: str, problems: Iterable[FormatError], problem: str) -> Iterator[dict]:
    for exc in problems:
        msg = f"{exc.field}: {exc.message}" if exc.field else exc.message
        yield _problem(file, exc.position, msg, problem)


def _every_entry(e: Any, flt: DumpFilter) -> bool:
    return True


def _offset_in_range(e: Any, flt: DumpFilter) -> bool:
    """An index entry names an offset, not a producer: a producer filter selects none."""
    if flt.filters_producers or flt.transactional_id is not None:
        return False
    return flt.offsets_overlap(e.offset, e.offset)


def _reader(module: str, name: str) -> Callable[..., Any]:
    """``kafkatx.formats.<module>.<name>``, imported when a file of its kind is read."""
    def read(*args: Any, **kwargs: Any) -> Any:
        return getattr(import_module(f"kafkatx.formats.{module}"), name)(*args, **kwargs)

    return read


# kind -> (reader of (bytes, file, base offset), each entry's item kind, each problem's kind,
# which entries the filter keeps)
_ENTRY_FILES: dict[str, tuple[Callable[[bytes, str, int | None], Any], str, str,
                              Callable[[Any, DumpFilter], bool]]] = {
    "offset_index": (lambda data, file, base: _reader("offset_index", "read_offset_index")(
        data, base_offset=base or 0, path=file), "index_entry", "invalid_index",
        _offset_in_range),
    "time_index": (lambda data, file, base: _reader("time_index", "read_time_index")(
        data, base_offset=base or 0, path=file), "time_index_entry", "invalid_index",
        _offset_in_range),
    "txn_index": (lambda data, file, base: _reader("txn_index", "read_txn_index")(
        data, path=file, base_offset=base), "aborted_txn", "invalid_txn_index",
        lambda e, flt: flt.producer_matches(e.producer_id)
        and flt.offsets_overlap(e.first_offset, e.last_offset)),
    "producer_snapshot": (lambda data, file, _: _reader(
        "producer_snapshot", "read_producer_snapshot")(data, path=file), "producer",
        "invalid_snapshot", lambda e, flt: flt.producer_matches(e.producer_id, e.producer_epoch)),
    "offset_checkpoint": (lambda data, file, _: _reader(
        "checkpoints", "read_offset_checkpoint")(data, path=file), "checkpoint_entry",
        "invalid_checkpoint", _every_entry),
    "leader_epoch_checkpoint": (lambda data, file, _: _reader(
        "checkpoints", "read_leader_epoch_checkpoint")(data, path=file), "leader_epoch_entry",
        "invalid_checkpoint", _every_entry),
}
# Files whose entries carry neither a producer nor a record offset: not written under a filter.
_UNSELECTABLE_FILES = frozenset({"offset_checkpoint", "leader_epoch_checkpoint",
                                 "partition_metadata", "quorum_state", "meta_properties"})
# kind (also the item's kind) -> (reader, the problem's kind when it does not read)
_ONE_VALUE_FILES: dict[str, tuple[Callable[..., Any], str]] = {
    "partition_metadata": (_reader("checkpoints", "read_partition_metadata"),
                           "invalid_checkpoint"),
    "quorum_state": (_reader("quorum_state", "read_quorum_state"), "invalid_quorum_state"),
    "meta_properties": (_reader("checkpoints", "read_meta_properties"), "invalid_checkpoint"),
}


def _dump_segment(path: Path, flt: DumpFilter, *, records: bool,
                  topic: str | None = None, encoded: bool = False,
                  lines: str | None = None, table_runs: bool = False,
                  closes_at_end: bool = True) -> Iterator[dict]:
    file = str(path)
    topic = topic or internal_topic(path)
    decode = records or topic is not None
    with segment_buffer(path) as data:
        if not decode:
            for scan in _scan_chunks(data, file):
                yield from _scan_items(scan, flt, file)
            return
        if encoded and topic is None and HAVE_FORMATTER:
            if table_runs and HAVE_TABLE and (lines is None or not HAVE_LINES):
                yield from table_items(data, _scan_chunks(data, file), flt, file,
                                       _slow_items(data, flt, file), _segment_problem,
                                       closes_at_end=closes_at_end)
                return
            for scan in _scan_chunks(data, file):
                if lines is not None and HAVE_LINES:
                    yield from line_items(data, scan, flt, file, lines,
                                          _slow_items(data, flt, file), _segment_problem)
                else:
                    yield from _encoded_items(data, scan, flt, file)
            return
        from kafkatx.formats.segment import SegmentProblem, iter_segment

        for entry in iter_segment(data, path=file, decode_records=False):
            if isinstance(entry, SegmentProblem):
                yield _segment_problem(entry, file)
                continue
            yield from _entry_items(data, entry, topic, flt, file)


def _scan_chunks(data: Any, file: str) -> Iterator[SegmentScan]:
    """The scan of ``data`` a window at a time, each window's mapped pages dropped once its
    items are out (columns and pages of one window held at once, whatever the segment's
    size)."""
    release = page_releaser(data)
    done = 0
    for scan in scan_segment_chunks(data, path=file, window=dump_lines.WINDOW):
        yield scan
        if release is not None:
            release(done, scan.size)
        done = scan.size


def _entry_items(data: bytes, entry: SegmentEntry, topic: str | None, flt: DumpFilter,
                 file: str) -> Iterator[dict]:
    """The item of one entry with its records decoded (and the problems they raise)."""
    from kafkatx.formats.legacy_message import LegacyEntry

    if isinstance(entry, LegacyEntry):
        if flt.filters_producers or not flt.offsets_overlap(entry.base_offset, entry.last_offset):
            return
        yield {"kind": "batch", "file": file, **legacy_batch_dict(entry, records=True)}
        return
    h = entry.header
    # Coordinator batches carry no producer: filter their records by value instead.
    if topic != TRANSACTION_STATE_TOPIC and not flt.producer_matches(h.producer_id,
                                                                      h.producer_epoch):
        return
    if not flt.offsets_overlap(h.base_offset, h.last_offset):
        return
    item = {"kind": "batch", "file": file, **entry.to_dict()}
    if entry.control is not None and entry.control.raw_value is not None:
        _decode_kraft_control(item, entry, file)
    undecodable: list[dict] = []
    try:
        item["records"] = _records(data, entry, topic, file, flt, undecodable)
    except FormatError as exc:
        item["records"] = []
        yield item
        yield _problem(file, exc.position, f"records do not decode: {exc.message}",
                       "invalid_batch")
        return
    filtered = flt.transactional_id is not None or flt.filters_producers
    if topic == TRANSACTION_STATE_TOPIC and filtered and not item["records"]:
        return
    yield item
    yield from undecodable


def _encoded_items(data: bytes, scan: SegmentScan, flt: DumpFilter, file: str
                   ) -> Iterator[dict]:
    """The items of a scanned chunk of a data topic's segment, each v2 batch's records
    already JSON text (``RawJsonList``) from the C formatter (:func:`_encoded_batch`)."""
    encoded = _encoded_batch(data, flt, file)
    for _, item in _scan_rows(scan, flt, file):
        if item["kind"] == "batch":
            yield from encoded(item)
        else:
            yield item


def _encoded_batch(data: Any, flt: DumpFilter, file: str) -> Callable[[dict], Iterator[dict]]:
    """The items of a scanned batch's item: its records JSON text (``RawJsonList``) from the C
    formatter. A control batch other than a transaction marker, a legacy entry, or one the
    formatter refuses goes through :func:`_entry_items` as before."""
    low = INT64_MIN if flt.from_offset is None else flt.from_offset
    high = INT64_MAX if flt.to_offset is None else flt.to_offset

    def items(item: dict) -> Iterator[dict]:
        # A COMMIT/ABORT marker's item is whole from the columns; other control batches (KRaft's)
        # decode their control record through the entry
        marker = item.get("control", {}).get("type") in ("COMMIT", "ABORT")
        done = None if item["magic"] != 2 or (item["is_control"] and not marker) else \
            format_records_at(
                data, item["position"], item["size"], item["attributes"], item["count"],
                item["base_offset"], item["base_timestamp"], item["max_timestamp"],
                RECORD_JSON, min_offset=low, max_offset=high, stop_at_max=False, path=file)
        if done is None:
            from kafkatx.formats.segment import read_entry

            entry = read_entry(data, item["position"], path=file)[0]
            assert entry is not None, "the scan read a batch here"
            yield from _entry_items(data, entry, None, flt, file)
            return
        del item["attributes"]
        item["records"] = RawJsonList(done.text)
        yield item

    return items


def _slow_items(data: Any, flt: DumpFilter, file: str) -> SlowItems:
    """:func:`kafkatx.analysis.dump_lines.line_items`' items of rows the C function leaves."""
    encoded = _encoded_batch(data, flt, file)

    def items(scan: SegmentScan, rows: npt.NDArray[np.intp]) -> Iterator[dict]:
        for _, item in _row_items(scan, rows, file):
            yield from encoded(item)

    return items


def _scan_items(scan: SegmentScan, flt: DumpFilter, file: str) -> Iterator[dict]:
    """Batch items straight from the scanned columns (no per-batch parsing), problems in place."""
    for _, item in _scan_rows(scan, flt, file):
        item.pop("attributes", None)
        yield item


def _scan_rows(scan: SegmentScan, flt: DumpFilter, file: str
               ) -> Iterator[tuple[int | None, dict]]:
    """:func:`_scan_items` with each batch's row in the columns (None for a problem), a
    batch's item with its ``attributes`` still in."""
    problems = scan.problems
    p = 0
    for i, item in _row_items(scan, kept_rows(scan.headers, flt), file):
        while p < len(problems) and problems[p].position <= item["position"]:
            yield None, _segment_problem(problems[p], file)
            p += 1
        yield i, item
    for problem in problems[p:]:
        yield None, _segment_problem(problem, file)


def _row_items(scan: SegmentScan, rows: npt.NDArray[np.intp], file: str
               ) -> Iterator[tuple[int, dict]]:
    """The batch item of each of ``rows`` (no problems), with its ``attributes`` (not an
    item's field: the caller takes it out)."""
    from kafkatx.formats import compression

    h = scan.headers
    # a name per codec id, looked up once (name_for costs microseconds a batch)
    codec_names = {c: compression.name_for(c) for c in range(COMPRESSION_MASK + 1)}
    for chunk in range(0, len(rows), SCAN_ROWS_AT_ONCE):
        # Python ints for a chunk of rows at a time: a whole segment's would take ~0.5 KB a
        # batch (1 M batches: 0.5 GB)
        part = rows[chunk:chunk + SCAN_ROWS_AT_ONCE]
        columns = {name: getattr(h, name)[part].tolist() for name in HeaderColumns.COLUMNS}
        last_l, last_seq = h.last_offset[part].tolist(), h.last_sequence[part].tolist()
        size = h.size[part].tolist()
        ctl, coord = scan.control_type[part].tolist(), scan.coordinator_epoch[part].tolist()
        for n, i in enumerate(part.tolist()):
            yield i, _scan_item(columns, n, last_l, last_seq, size, ctl, coord, codec_names,
                                file)


def _scan_item(columns: dict[str, list], i: int, last_l: list, last_seq: list, size: list,
               ctl: list, coord: list, codec_names: dict[int, str], file: str) -> dict:
    """The item of row ``i`` of a chunk's lists (``attributes`` last, for the caller)."""
    pos = columns["position"][i]
    attrs = columns["attributes"][i]
    magic = columns["magic"][i]
    item = {
        "kind": "batch", "file": file,
        "base_offset": columns["base_offset"][i], "last_offset": last_l[i],
        "count": columns["records_count"][i], "producer_id": columns["producer_id"][i],
        "producer_epoch": columns["producer_epoch"][i],
        "base_sequence": columns["base_sequence"][i], "last_sequence": last_seq[i],
        "partition_leader_epoch": columns["partition_leader_epoch"][i],
        "is_transactional": bool(attrs & TRANSACTIONAL_FLAG),
        "is_control": bool(attrs & CONTROL_FLAG), "position": pos, "size": size[i],
        "magic": magic, "compression": codec_names[attrs & COMPRESSION_MASK],
        "timestamp_type": _timestamp_type(magic, attrs),
        "base_timestamp": columns["base_timestamp"][i],
        "max_timestamp": columns["max_timestamp"][i],
        "delete_horizon_ms": (columns["base_timestamp"][i]
                              if magic == 2 and attrs & DELETE_HORIZON_FLAG else None),
        "crc": columns["crc"][i], "crc_valid": columns["crc_valid"][i],
    }
    if ctl[i] != NO_CONTROL:
        control = {"type": control_type_name(ctl[i])}
        if control["type"] == "UNKNOWN":
            control["type_id"] = ctl[i]
        if coord[i] >= 0 or ctl[i] in (ControlType.ABORT, ControlType.COMMIT):
            control["coordinator_epoch"] = coord[i]
        item["control"] = control
    item["attributes"] = attrs
    return item


def _timestamp_type(magic: int, attributes: int) -> str:
    if magic == 0:
        return "NoTimestampType"
    return "LogAppendTime" if attributes & TIMESTAMP_TYPE_MASK else "CreateTime"


def _segment_problem(problem: SegmentProblem, file: str) -> dict:
    return {"kind": "problem", "file": file, "problem": problem.kind,
            "position": problem.position, "length": problem.length, "message": problem.message}


def _records(data: bytes, batch: RecordBatch, topic: str | None, file: str,
             flt: DumpFilter, undecodable: list[dict]) -> list[dict]:
    """The batch's records as dicts; a coordinator or metadata record whose key or value does
    not decode keeps its bytes with ``decode_error`` and adds an ``invalid_record`` problem (at
    the record's position, or the batch's when compressed) to ``undecodable``."""
    from kafkatx.formats.record_decode import read_records

    out = []
    for rec in read_records(data, batch.position, batch.header, path=file):
        if not flt.offsets_overlap(rec.offset, rec.offset):
            continue
        if batch.header.is_control and topic == METADATA_TOPIC:
            d = _kraft_control_record(rec, file)
        elif batch.header.is_control:
            d = rec.to_dict()
        elif topic == METADATA_TOPIC:
            d = _metadata_record(rec, file)
        elif topic == TRANSACTION_STATE_TOPIC:
            d = _txn_log_record(rec, file)
            if not _txn_record_matches(d, flt):
                continue
        elif topic == GROUP_METADATA_TOPIC:
            d = _group_record(rec, file)
        else:
            d = rec.to_dict()
        out.append(d)
        if "decode_error" in d:
            where = batch.position if rec.position is None else rec.position
            undecodable.append(_problem(file, where, f"offset {rec.offset}: record does not "
                                        f"decode: {d['decode_error']}", "invalid_record"))
    return out


def _decode_kraft_control(item: dict, batch: RecordBatch, file: str) -> None:
    """The batch-level ``control`` of a KRaft control batch gets its first record decoded."""
    from kafkatx.formats import kafka_messages, metadata_records

    control = batch.control
    assert control is not None
    try:
        data = metadata_records.parse_control_value(control.type_id, control.raw_value,
                                                    path=file, base=batch.position)
    except FormatError:
        return  # the records list says what failed
    if data is not None:
        ctl = dict(item["control"])
        ctl.pop("value_base64", None)
        ctl["data"] = kafka_messages.to_json(data)
        item["control"] = ctl


def _kraft_control_record(rec, file: str) -> dict:
    from kafkatx.formats import kafka_messages, metadata_records

    d: dict[str, object] = {"offset": rec.offset, "timestamp": rec.timestamp}
    try:
        if rec.key is None or len(rec.key) < 4:
            raise FormatError("control record key is shorter than 4 bytes")
        type_id = int.from_bytes(rec.key[2:4], "big", signed=True)
        d["control_type"] = control_type_name(type_id)
        if d["control_type"] == "UNKNOWN":
            d["control_type_id"] = type_id
        data = metadata_records.parse_control_value(type_id, rec.value, path=file)
    except FormatError as exc:
        d.update(render_bytes("value", rec.value))
        d["decode_error"] = exc.message
        return d
    if data is None:
        d.update(render_bytes("value", rec.value))
    else:
        d["data"] = kafka_messages.to_json(data)
    return d


def _metadata_record(rec, file: str) -> dict:
    from kafkatx.formats import metadata_records

    d: dict[str, object] = {"offset": rec.offset, "timestamp": rec.timestamp}
    try:
        d.update(metadata_records.parse_metadata_record(rec.value, path=file).to_dict())
    except FormatError as exc:
        d.update(render_bytes("key", rec.key))
        d.update(render_bytes("value", rec.value))
        d["decode_error"] = exc.message
    return d


def _txn_record_matches(d: dict, flt: DumpFilter) -> bool:
    key = d.get("key") if isinstance(d.get("key"), dict) else {}
    if flt.transactional_id is not None and key.get("transactional_id") != flt.transactional_id:
        return False
    if flt.filters_producers:
        value = d.get("value") if isinstance(d.get("value"), dict) else None
        if value is None:  # tombstones name no producer
            return flt.transactional_id is not None and flt.producer_ids is None
        return flt.producer_matches(value["producer_id"], value["producer_epoch"])
    return True


def transaction_state_dirs(paths: Iterable[str]) -> list[Path]:
    """``__transaction_state-N`` dirs among, inside, or beside the given paths."""
    return topic_partition_dirs(paths, TRANSACTION_STATE_TOPIC)


def producer_ids_for(transactional_id: str, paths: Iterable[str]) -> tuple[set[int], list[Path]]:
    """Producer ids the coordinator ever gave ``transactional_id`` (from __transaction_state)."""
    dirs = transaction_state_dirs(paths)
    pids: set[int] = set()
    flt = DumpFilter(transactional_id=transactional_id)
    for d in dirs:
        for seg in segment_files(d):
            for item in _dump_segment(seg, flt, records=True):
                for rec in item.get("records", []) if item["kind"] == "batch" else []:
                    value = rec.get("value")
                    if isinstance(value, dict):
                        for k in ("producer_id", "previous_producer_id", "next_producer_id"):
                            if isinstance(value.get(k), int) and value[k] >= 0:
                                pids.add(value[k])
    return pids, dirs


def _internal_record(rec, file: str, parse_key, parse_value) -> dict:
    d: dict[str, object] = {"offset": rec.offset, "timestamp": rec.timestamp}
    try:
        key = parse_key(rec.key or b"", path=file)
        d["key"] = key.to_dict()
        value = parse_value(key, rec.value, path=file)
        d["value"] = None if value is None else value.to_dict()
    except (FormatError, KafkatxError) as exc:
        d.update(render_bytes("key", rec.key))
        d.update(render_bytes("value", rec.value))
        d["decode_error"] = str(exc.message if isinstance(exc, FormatError) else exc)
    d["headers"] = [{"key": k, **render_bytes("value", v)} for k, v in rec.headers]
    return d


def _txn_log_record(rec, file: str) -> dict:
    from kafkatx.formats import transaction_log

    return _internal_record(
        rec, file, transaction_log.parse_key,
        lambda key, value, path: transaction_log.parse_value(value, path=path),
    )


def _group_record(rec, file: str) -> dict:
    from kafkatx.formats import consumer_offsets

    return _internal_record(rec, file, consumer_offsets.parse_key, consumer_offsets.parse_value)


def legacy_batch_dict(entry: LegacyEntry, *, records: bool) -> dict:
    """A legacy (v0/v1) entry in the same shape as a v2 batch (producer fields -1)."""
    m = entry.message
    out: dict[str, object] = {
        "base_offset": entry.base_offset,
        "last_offset": entry.last_offset,
        "count": entry.count,
        "producer_id": -1,
        "producer_epoch": -1,
        "base_sequence": -1,
        "last_sequence": -1,
        "partition_leader_epoch": -1,
        "is_transactional": False,
        "is_control": False,
        "position": m.position,
        "size": m.size,
        "magic": m.magic,
        "compression": m.compression,
        "timestamp_type": m.timestamp_type,
        "base_timestamp": m.timestamp,
        "max_timestamp": m.timestamp,  # AbstractLegacyRecordBatch#maxTimestamp: the wrapper's
        "delete_horizon_ms": None,
        "crc": m.crc,
        "crc_valid": m.crc_valid,
    }
    if records:
        msgs = entry.inner or (m,)
        out["records"] = [
            {"offset": x.offset, "timestamp": x.timestamp, **render_bytes("key", x.key),
             **render_bytes("value", x.value), "headers": []}
            for x in msgs
        ]
    return out
