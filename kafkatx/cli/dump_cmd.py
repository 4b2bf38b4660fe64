"""``kafkatx dump``: decode any file of a Kafka log dir, better than kafka-dump-log.sh."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import click

from kafkatx.analysis.dump import DumpFilter, DumpStats, dump, expand_paths, producer_ids_for
from kafkatx.analysis.timefmt import iso_ms
from kafkatx.cli.exit_status import EVIDENCE, EXIT_USAGE, error_document
from kafkatx.cli.offset_range import OFFSET, check_offset_range
from kafkatx.cli.output import (
    JsonWriter,
    StderrLines,
    StdoutLines,
    format_option,
    glyph,
    write_utf8,
)
from kafkatx.cli.progress import ScanProgress, output_progress
from kafkatx.errors import MissingPathError
from kafkatx.formats.raw_json import RawJsonList

if TYPE_CHECKING:  # the table's renderers load only for a table (-f json/jsonl: no rich)
    from kafkatx.analysis.dump_lines import TableRun
    from kafkatx.cli.render import FitTable

TABLE_CHUNK = 200


@click.command("dump", epilog=(
    "\b\nExamples:\n"
    "  kafkatx dump fixtures/logdir/payments-0 --producer-id 4003 --records\n"
    "  kafkatx dump fixtures/logdir/payments-0/00000000000000000000.log -f jsonl | head"))
@click.argument("paths", nargs=-1, required=True, metavar="FILE_OR_DIR...")
@click.option("--producer-id", "producer_ids", type=int, multiple=True,
              help="Only batches/entries of this producer id (repeatable).")
@click.option("--producer-epoch", type=int, help="Only batches/entries with this producer epoch.")
@click.option("--transactional-id",
              help="Only this transactional id: its __transaction_state records, and data of "
                   "the producer ids the coordinator gave it (needs __transaction_state "
                   "partitions among or beside the paths).")
@click.option("--from-offset", type=OFFSET, help="Only batches/entries with offsets >= N.")
@click.option("--to-offset", type=OFFSET, help="Only batches/entries with offsets <= N.")
@click.option("--records", is_flag=True,
              help="Decode records too (always on for __transaction_state/__consumer_offsets).")
@format_option(("table", "json", "jsonl"), why={
    "csv": "its entries differ by file (batches, records, index entries, snapshots); use "
           "jsonl, or replay -f csv for a partition's records"})
def dump_command(
    paths: tuple[str, ...],
    producer_ids: tuple[int, ...],
    producer_epoch: int | None,
    transactional_id: str | None,
    from_offset: int | None,
    to_offset: int | None,
    records: bool,
    fmt: str,
) -> None:
    """Decode segment .log, .index, .timeindex, .txnindex, .snapshot and checkpoint files, and
    the KRaft metadata log (__cluster_metadata-0 segments, .checkpoint snapshots, quorum-state).

    FILE_OR_DIR may be files or directories (a partition dir, a broker's log dir): the decoder is
    chosen by file suffix and by partition directory (__transaction_state-N, __consumer_offsets-N).
    Damaged regions are reported as `path:position: what is wrong` and the scan goes on.
    """
    check_offset_range(from_offset, to_offset)
    for path in paths:
        if not os.path.lexists(path):
            raise MissingPathError(path)
    err = StderrLines()  # rich only for what needs it (a terminal, a progress bar, colour)
    pid_filter: frozenset[int] | None = frozenset(producer_ids) if producer_ids else None
    if transactional_id is not None:
        pids, dirs = producer_ids_for(transactional_id, paths)
        if not dirs:
            raise click.UsageError(
                "--transactional-id needs __transaction_state partitions among or beside the "
                "given paths to map it to producer ids; none were found")
        if not pids:
            err.print(f"[yellow]no producer id found for transactional id "
                      f"{transactional_id!r} in {len(dirs)} __transaction_state partition(s)")
        pid_filter = frozenset(pids) if pid_filter is None else pid_filter & frozenset(pids)
    flt = DumpFilter(producer_ids=pid_filter, producer_epoch=producer_epoch,
                     from_offset=from_offset, to_offset=to_offset,
                     transactional_id=transactional_id)
    stats = DumpStats()
    # JSON output takes data batches as JSON text formatted in C, the table their records
    writer = JsonWriter(sys.stdout, array=fmt == "json")
    items = dump(paths, flt, records=records, stats=stats, encoded=True,
                 lines=None if fmt == "table" else writer.item_separator,
                 table_runs=fmt == "table")
    with output_progress(_total_size(paths), "decoding", err) as bar:
        items = _advancing(items, bar)
        if fmt == "table":
            _render_tables(items, err)
        else:
            try:
                for item in items:
                    if item["kind"] == "encoded":
                        writer.write_encoded(item["text"])
                        continue
                    writer.write(item)
                    if item["kind"] == "problem":
                        err.print(_problem_line(item), markup=False)
            finally:  # what was decoded before an error is still written
                writer.out.flush()
    if fmt != "table":
        for line in stats.unreadable:  # the files it could not read, as scripts see errors
            writer.write({"kind": "error", **error_document(EVIDENCE, line, EXIT_USAGE)})
        writer.close()
    for path in stats.ignored:
        err.print(f"ignoring unknown file {path}", markup=False)
    for line in stats.unreadable:
        err.print(f"kafkatx: error: {line}", markup=False)
    if stats.problems:
        err.print(f"{stats.problems} problem(s) found in {stats.files} file(s)", markup=False)
    if stats.unreadable:
        sys.exit(EXIT_USAGE)
    if stats.files == 0:
        raise click.UsageError("nothing to decode: no given path holds a file kafkatx dump "
                               "knows (segments, indexes, snapshots, checkpoints)")


def _total_size(paths: tuple[str, ...]) -> int:
    """Bytes of the files dump will read (what the progress bar counts up to)."""
    return sum(p.stat().st_size for p in expand_paths(paths, DumpStats()) if p.is_file())


def _advancing(items: Iterator[dict[str, Any]], bar: ScanProgress) -> Iterator[dict[str, Any]]:
    """``items``, the bar following the files and batch positions they come from."""
    file, done, size, n = None, 0, 0, 0
    for item in items:
        if item.get("file") != file:
            finished = size - done  # the rest of the previous file
            file, done, n = item.get("file"), 0, 0
            size = os.path.getsize(file) if file and os.path.isfile(file) else 0
            where = os.path.abspath(file or "")
            bar.label(os.path.join(os.path.basename(os.path.dirname(where)),
                                   os.path.basename(where)))
            bar.advance(finished)
        n += 1
        # an encoded item holds many batches
        if ((n % 256 == 0 or item["kind"] == "encoded") and "position" in item
                and item["position"] is not None):
            bar.advance(item["position"] - done)
            done = item["position"]
        yield item
    bar.advance(size - done)


def _problem_line(item: dict[str, Any]) -> str:
    return f"{item['file']}:{item['position']}: {item['problem']}: {item['message']}"


_COLUMNS: dict[str, list[tuple[str, str]]] = {
    "batch": [("offsets", "right"), ("n", "right"), ("pid/epoch", "right"),
              ("sequence", "right"), ("flags", "left"), ("position", "right"),
              ("size", "right"), ("codec", "left"), ("max timestamp (UTC)", "left"),
              ("crc", "left"), ("control / record", "left")],
    "index_entry": [("offset", "right"), ("position", "right")],
    "time_index_entry": [("timestamp (UTC)", "left"), ("timestamp", "right"),
                         ("offset", "right")],
    "aborted_txn": [("producer id", "right"), ("first offset", "right"),
                    ("last offset", "right"), ("last stable offset", "right")],
    "producer": [("producer id", "right"), ("epoch", "right"), ("last seq", "right"),
                 ("last offset", "right"), ("offset delta", "right"),
                 ("timestamp (UTC)", "left"), ("coord. epoch", "right"),
                 ("txn first offset", "right")],
    "checkpoint_entry": [("topic", "left"), ("partition", "right"), ("offset", "right")],
    "leader_epoch_entry": [("epoch", "right"), ("start offset", "right")],
    "partition_metadata": [("version", "right"), ("topic id", "left")],
    "meta_properties": [("property", "left"), ("value", "left")],
    "quorum_state": [("field", "left"), ("value", "left")],
}


# The batch table's header and justification as the C function takes them.
_BATCH_NAMES = "\n".join(name for name, _ in _COLUMNS["batch"]).encode()
_BATCH_JUSTIFY = "".join(justify[0] for _, justify in _COLUMNS["batch"]).encode()


def _batch_row(b: dict[str, Any]) -> list[str]:
    flags = ",".join(f for f, on in (("txn", b["is_transactional"]), ("ctrl", b["is_control"]))
                     if on) or "-"
    ctl = b.get("control")
    control = "-" if not ctl else " ".join(
        [ctl["type"]] + ([f"coord_epoch={ctl['coordinator_epoch']}"]
                         if "coordinator_epoch" in ctl else []))
    pid = "-" if b["producer_id"] < 0 else f"{b['producer_id']}/{b['producer_epoch']}"
    seq = "-" if b["base_sequence"] < 0 else f"{b['base_sequence']}..{b['last_sequence']}"
    crc = "ok" if b["crc_valid"] else "[bold red]BAD[/]"
    offsets = (str(b["base_offset"]) if b["base_offset"] == b["last_offset"]
               else f"{b['base_offset']}..{b['last_offset']}")
    return [offsets, str(b["count"]), pid, seq, flags, str(b["position"]), str(b["size"]),
            f"v{b['magic']} {b['compression']}", _iso_ms(b["max_timestamp"]), crc, control]


def _record_rows(b: dict[str, Any]) -> list[list[str]]:
    from kafkatx.cli.render import shorten

    rows = []
    records = b.get("records", [])
    if isinstance(records, RawJsonList):  # a data batch's records as the C formatter wrote them
        records = json.loads(f"[{records.text}]")
    if b["is_control"] and not any("control_type" in r for r in records):
        return rows  # the batch row already says COMMIT/ABORT and the coordinator epoch
    under = glyph("↳", "->")
    for r in records:
        key, value = r.get("key"), r.get("value")
        if "type_id" in r or "control_type" in r:
            text = _metadata_text(r)
        elif isinstance(key, dict):
            text = _internal_text(key, value)
        else:
            text = f"key={shorten(key, 40)} value={shorten(value, 100)}"
        headers = ",".join(f"{h['key']}={shorten(h.get('value'), 20)}"
                           for h in r.get("headers", []))
        if headers:
            text += f" headers={headers}"
        # Record lines sit under their batch: offset first, the content in the wide column.
        rows.append([f"{under} {r['offset']}", "", "", "", "", "", "", "",
                     _iso_ms(r["timestamp"]), "", text])
    return rows


_SECONDS: dict[int, str] = {}  # epoch second -> its ISO text, for the records of a chunk
ISO_EXACT_BELOW = 1 << 42  # iso_ms' float seconds are exact to the millisecond below it


def _iso_ms(ms: int) -> str:
    """``iso_ms(ms)``, the text of each second made once (records of a batch share it)."""
    if not 0 <= ms < ISO_EXACT_BELOW:
        return iso_ms(ms)
    second, milli = divmod(ms, 1000)
    head = _SECONDS.get(second)
    if head is None:
        if len(_SECONDS) >= 4096:
            _SECONDS.clear()
        head = _SECONDS[second] = iso_ms(second * 1000)[:-5]
    return f"{head}.{milli:03d}Z"


def _metadata_text(r: dict[str, Any]) -> str:
    """One line for a KRaft metadata or control record."""
    if "decode_error" in r:
        return f"undecodable: {r['decode_error']}"
    if "control_type" in r:
        head = r["control_type"]
    else:
        head = (f"{r['type']} v{r['version']}" if r["type"] != "UNKNOWN"
                else f"UNKNOWN type {r['type_id']} v{r['version']}")
    if "data" in r:
        return head + " " + " ".join(f"{k}={_compact(v)}" for k, v in r["data"].items())
    return head + (f" raw={r['raw']}" if "raw" in r else "")


def _internal_text(key: dict[str, Any], value: Any) -> str:
    """One line for a __transaction_state or __consumer_offsets record."""
    if "transactional_id" in key:
        head = key["transactional_id"]
        if not isinstance(value, dict):
            return f"{head}: tombstone (transactional id expired)"
        parts = ",".join(f"{t}{ids}" for t, ids in (value.get("partitions") or {}).items())
        return (f"{head}: {value['state']} pid={value['producer_id']}/{value['producer_epoch']} "
                f"timeout={value['transaction_timeout_ms']}ms partitions={parts or '-'} "
                f"started={iso_ms(value['start_timestamp_ms'])} v{value.get('version')}")
    head = " ".join(f"{_compact(x)}" for k, x in key.items() if k in ("group", "topic",
                                                                        "partition"))
    if not isinstance(value, dict):
        return f"{head or _compact(key)}: tombstone"
    if "offset" in value:
        return f"{head}: offset={value['offset']} leader_epoch={value.get('leader_epoch')}"
    if "generation" in value:
        members = len(value.get("members") or [])
        return (f"{head}: group {value.get('protocol_type')} generation={value['generation']} "
                f"protocol={value.get('protocol')} members={members}")
    return f"{head}: " + " ".join(f"{k}={_compact(x)}" for k, x in value.items())


def _compact(x: Any) -> str:
    if isinstance(x, dict):
        return "{" + ",".join(f"{k}:{_compact(v)}" for k, v in x.items()) + "}"
    if isinstance(x, list):
        return "[" + ",".join(_compact(v) for v in x) + "]"
    return "null" if x is None else str(x)


def _row(item: dict[str, Any]) -> list[list[str]]:
    from kafkatx.cli.render import shorten

    k = item["kind"]
    if k == "index_entry":
        return [[str(item["offset"]), str(item["position"])]]
    if k == "time_index_entry":
        return [[iso_ms(item["timestamp"]), str(item["timestamp"]), str(item["offset"])]]
    if k == "aborted_txn":
        return [[str(item[f]) for f in ("producer_id", "first_offset", "last_offset",
                                        "last_stable_offset")]]
    if k == "producer":
        return [[str(item["producer_id"]), str(item["producer_epoch"]),
                 str(item["last_sequence"]), str(item["last_offset"]), str(item["offset_delta"]),
                 iso_ms(item["timestamp"]), str(item["coordinator_epoch"]),
                 str(item["current_txn_first_offset"])]]
    if k == "checkpoint_entry":
        return [[str(item["topic"]), str(item["partition"]), str(item["offset"])]]
    if k == "leader_epoch_entry":
        return [[str(item["epoch"]), str(item["start_offset"])]]
    if k == "partition_metadata":
        return [[str(item.get("version")), str(item.get("topic_id"))]]
    if k == "meta_properties":
        return [[key, str(v)] for key, v in item.get("properties", {}).items()]
    if k == "quorum_state":
        return [[key, _compact(v)] for key, v in item.items() if key not in ("kind", "file")]
    return [[shorten(v) for v in item.values()]]


# What gives way first in a narrow terminal (the highest); offsets, producer ids, positions and
# CRCs never do.
_GIVE_WAY = {("batch", "codec"): 9, ("batch", "size"): 8, ("batch", "n"): 7,
             ("batch", "sequence"): 6, ("batch", "max timestamp (UTC)"): 5,
             ("batch", "flags"): 4, ("producer", "timestamp (UTC)"): 3,
             ("producer", "offset delta"): 2, ("producer", "coord. epoch"): 1,
             ("time_index_entry", "timestamp"): 1}


def _new_table(kind: str, title: str | None, header: bool) -> FitTable:
    from kafkatx.cli.render import Col, FitTable

    columns = _COLUMNS.get(kind, [("value", "left")])
    return FitTable([Col(name, justify, give_way=_GIVE_WAY.get((kind, name), 0),
                         wrap=i == len(columns) - 1 and justify == "left")
                     for i, (name, justify) in enumerate(columns)],
                    title=title, show_header=header)


def _render_tables(items: Any, err: Any) -> None:
    """Stream tables: one per file and kind, flushed every TABLE_CHUNK rows."""
    out = StdoutLines()  # rich's console only for a table the C function does not write
    table: FitTable | None = None
    current: tuple[str, str] | None = None
    rows = 0
    noted = False  # columns left out are said once per file and kind

    def flush() -> None:
        nonlocal table, rows, noted
        if table is not None and table.row_count:
            noted = bool(table.render(out.console, note=not noted)) or noted
        table = None
        rows = 0

    def add(item: dict[str, Any]) -> None:
        nonlocal table, current, rows, noted
        if item["kind"] == "problem":
            flush()
            err.print(_problem_line(item), style="bold red", markup=False, highlight=False)
            return
        key = (item["file"], item["kind"])
        if key != current:
            flush()
            current = key
            noted = False
            out.heading(item["file"], item["kind"].replace("_", " "))
            table = _new_table(item["kind"], None, True)
        elif table is None:
            table = _new_table(item["kind"], None, False)
        assert table is not None
        if item["kind"] == "batch":
            table.add_row(*_batch_row(item))
            for r in _record_rows(item):
                table.add_row(*r, style="dim")
        else:
            for r in _row(item):
                table.add_row(*r)
        rows += 1
        if rows >= TABLE_CHUNK:
            flush()

    def add_run(item: dict[str, Any]) -> None:
        """A run of batches: each whole chunk of it as the C function's padded rows when it
        can tell (the text ``plain_table`` writes), the rest as dump's items -- but for a
        chunk's first batches at a window's end, left to come again with the next window's
        (``TableRun.continues``)."""
        nonlocal table, current, noted
        run: TableRun = item["run"]
        key = (item["file"], "batch")
        while run.left:
            if rows == 0 and out.color_system is None:
                if run.left < TABLE_CHUNK and run.continues:
                    return
                if run.left >= TABLE_CHUNK or run.closes:
                    first = key != current
                    text = run.table_text(min(run.left, TABLE_CHUNK), _BATCH_NAMES,
                                          _BATCH_JUSTIFY, first,
                                          (glyph("↳", "->"), glyph("…", "...")), out.width)
                    if text is not None:
                        if first:
                            current, noted = key, False
                            out.heading(item["file"], "batch")
                        write_utf8(out.file, text)
                        table = None
                        continue
            for sub in run.items(min(run.left, TABLE_CHUNK - rows)):
                add(sub)

    for item in items:
        if item["kind"] == "batch_run":
            add_run(item)
        else:
            add(item)
    flush()
