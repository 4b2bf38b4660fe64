"""``kafkatx replay``: what a consumer of one partition received, record by record, and why."""

from __future__ import annotations

import csv
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import click

from kafkatx.analysis.consumer_view import (
    ABORTED,
    BEYOND_HW,
    ConsumerView,
    ReplayedRecord,
    find_partition,
)
from kafkatx.analysis.metadata_settings import leader_log_ends
from kafkatx.analysis.timefmt import iso_ms
from kafkatx.cli.analysis_options import (
    EngineCliOptions,
    after_restart_option,
    check_output,
    engine_options,
)
from kafkatx.cli.offset_range import OFFSET, check_offset_range
from kafkatx.cli.output import (
    JsonWriter,
    StderrLines,
    StdoutLines,
    format_option,
    stderr_console,
    stdout_console,
)
from kafkatx.cli.progress import output_progress
from kafkatx.cli.render import Col, FitTable, print_view_line, shorten
from kafkatx.cli.replay_parquet import ParquetRecords
from kafkatx.cli.replay_table import CHUNK, TableWriter
from kafkatx.cli.replay_writer import ReplayWriter, blank
from kafkatx.engines.factory import open_engine
from kafkatx.semantics.read_committed import IsolationLevel
from kafkatx.storage.discovery import discover, high_watermarks, log_start_offsets

if TYPE_CHECKING:
    from rich.console import Console


@click.command("replay", epilog=(
    "\b\nExamples:\n"
    "  kafkatx replay fixtures/logdir -t payments -p 0\n"
    "  kafkatx replay fixtures/logdir -t payments -p 0 --diff\n"
    "  kafkatx replay fixtures/logdir -t payments -p 0 -f jsonl -o payments-0.jsonl"))
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("-t", "--topic", required=True, help="Topic of the partition to replay.")
@click.option("-p", "--partition", "partition", type=click.IntRange(min=0), required=True,
              help="Partition number.")
@click.option("--broker", default=None, metavar="LABEL",
              help="The copy to replay when the partition is in several log dirs: the log "
                   "dir's label as inspect shows it (e.g. broker-2); default: the "
                   "authoritative copy.")
@click.option("--isolation", type=click.Choice(["read_committed", "read_uncommitted"]),
              default="read_committed", show_default=True, help="The consumer's isolation.level.")
@click.option("--from-offset", type=OFFSET, help="Where the consumer starts fetching "
              "(default: the log start; may fall inside a batch).")
@click.option("--to-offset", type=OFFSET, help="Stop after this offset.")
@click.option("--as-of-offset", type=OFFSET, help="Replay the partition as it stood when its log "
              "end offset was N: the LSO and aborted set of that moment.")
@click.option("--show-hidden", is_flag=True, help="Also list the records the consumer did not "
              "get, with the reason (aborted, beyond_lso, beyond_high_watermark).")
@click.option("--records", is_flag=True, help="Show keys, values and headers in the table "
              "(jsonl/csv always carry them).")
@click.option("--index-source", type=click.Choice(["file", "rebuild"]), default="file",
              show_default=True, help="Aborted transactions from the .txnindex files (what the "
              "broker used) or rebuilt from the ABORT markers in the log.")
@click.option("--diff", is_flag=True, help="Only the records read_uncommitted sees and "
              "read_committed does not, grouped by transaction, with counts per reason.")
@after_restart_option
@format_option(("table", "jsonl", "csv"), why={
    "json": "records stream as they are decoded; jsonl is their JSON form (one a line)"})
@engine_options
def replay_command(
    paths: tuple[str, ...], topic: str, partition: int, broker: str | None, isolation: str,
    from_offset: int | None,
    to_offset: int | None, as_of_offset: int | None, show_hidden: bool, records: bool,
    index_source: str, diff: bool, after_restart: bool, fmt: str, engine: EngineCliOptions,
) -> None:
    """Replay what a consumer of one partition received, as Kafka's broker and client decide it.

    Default: the visible data records in offset order. The consumer's fetches are replayed
    segment by segment: bounded by the LSO (read_committed) or the high watermark, with the
    aborted transactions the broker collects from the .txnindex files and the Java client's
    filtering of aborted batches and control records.
    """
    check_offset_range(from_offset, to_offset)
    err = StderrLines()  # rich only for what needs it (a terminal, a progress bar)
    if engine.output is not None:
        check_output(engine.output, paths)
    disc = discover(paths)
    if broker is None:
        pdir = find_partition(disc.all_partitions(), topic, partition)
    else:
        from kafkatx.analysis.replicas import replica_of

        pdir = replica_of(disc.all_partitions(), topic, partition, broker)
    copies = sum((p.topic, p.partition) == (topic, partition) for p in disc.all_partitions())
    if broker is None and copies > 1:
        err.print(f"{topic}-{partition} is in {copies} log dirs: replaying "
                  f"{pdir.log_dir.label if pdir.log_dir is not None else pdir.path}'s copy, the "
                  "authoritative one (newest leader epoch, then longest, then highest HW), as a "
                  "consumer of the leader reads it; --broker LABEL replays another",
                  markup=False, highlight=False)
    hw = high_watermarks(pdir.log_dir).get((topic, partition)) if pdir.log_dir else None
    at_log_end = (topic, partition) in leader_log_ends(disc, pdir.log_dir)
    start = log_start_offsets(pdir.log_dir).get((topic, partition)) if pdir.log_dir else None
    level = IsolationLevel.READ_COMMITTED if diff else IsolationLevel(isolation)
    size = sum(s.log_size for s in pdir.segments)
    with open_engine(engine.config, input_bytes=size) as runner, \
            ParquetRecords(engine.output) as out, output_progress(size, "replaying", err) as bar:
        bar.label(pdir.name)
        view = runner.consumer_view(pdir, isolation=level, high_watermark=hw,
                                    as_of_offset=as_of_offset, index_source=index_source,
                                    log_start_offset=start,
                                    high_watermark_at_log_end=at_log_end,
                                    after_restart=after_restart)
        if after_restart and fmt == "table":
            print_view_line(view.view)
        _print_header(err, view)
        problems: list[str] = []
        # jsonl/csv/table straight to stdout: whole batches formatted at once (and decoded
        # into columns for --output's Parquet)
        writer: ReplayWriter | None = None
        if fmt in ("jsonl", "csv") and not diff:
            writer = ReplayWriter(fmt, view, sys.stdout)
        elif fmt == "table" and not (diff or records):
            # rich's console only where a chunk needs it (a terminal, a row the C writer leaves)
            writer = TableWriter(view, StdoutLines(), table_cells)
        formatter = None if writer is None else writer.segment
        if formatter is not None and engine.output is not None:
            formatter = out.tee_formatter(formatter, view)
        items = runner.replay_records(pdir, view, from_offset=from_offset, to_offset=to_offset,
                                      show_hidden=show_hidden or diff,
                                      on_problem=problems.append,
                                      # --output keeps every record: decode them all then
                                      only_hidden=diff and engine.output is None,
                                      formatter=formatter, on_bytes=bar.advance)
        if writer is not None:
            try:
                for r in items:
                    out.add(r)
                    writer.write(r)
            finally:  # what was decoded before an error is still written
                writer.close()
            if fmt == "table" and writer.count == 0:
                err.print("no records in that range", markup=False)
        else:
            _render(out.tee(items), diff=diff, fmt=fmt, records=records)
    if out.written:
        err.print(f"wrote {out.written}", markup=False)
    for p in problems:
        err.print(f"kafkatx: problem: {p}", markup=False)


def _render(items: Iterable[ReplayedRecord], *, diff: bool, fmt: str, records: bool) -> None:
    if diff:
        _render_diff((r for r in items if not r.visible and r.reason != BEYOND_HW), fmt)
    else:
        _render_table(items, records=records)


def _print_header(err: Any, view: ConsumerView) -> None:
    pin = f" ({view.lso_source})"
    if view.pinning is not None:
        kind = "open" if view.lso_source == "open_transaction" else "unreplicated"
        pid, epoch, first = view.pinning
        pin = (f", held by the {kind} transaction of producer {pid} epoch {epoch} "
               f"from offset {first}")
    source = ".txnindex files" if view.index_source == "file" else "ABORT markers"
    err.print(f"{view.topic}-{view.partition} {view.isolation.value}: log end offset "
              f"{view.log_end_offset}, high watermark {view.high_watermark} "
              f"({view.high_watermark_source}), last stable offset {view.last_stable_offset}"
              f"{pin}; {len(view.aborted)} aborted transaction(s) from "
              f"{source}", markup=False, highlight=False)
    for note in view.notes:
        err.print(f"note: {note}", markup=False)
    for d in view.disagreements:
        err.print(f"finding: txnindex_mismatch: {d}", markup=False)


def _status(r: ReplayedRecord) -> str:
    if r.visible:
        return "[green]visible[/]"
    if r.reason == ABORTED:
        return f"[red]aborted[/] (marker {r.abort_marker_offset})"
    if r.reason == BEYOND_HW:
        return "[dim]beyond HW[/]"
    pin = f" (pinned by {r.pinned_by[0]}@{r.pinned_by[1]})" if r.pinned_by else ""
    return f"[yellow]beyond LSO[/]{pin}"


def table_cells(r: ReplayedRecord) -> list[str]:
    """A record's offset, timestamp, pid/epoch and status cells in ``replay``'s table."""
    pid = "-" if r.producer_id < 0 else f"{r.producer_id}/{r.producer_epoch}"
    return [str(r.record.offset), iso_ms(r.record.timestamp), pid, _status(r)]


def _render_table(items: Iterable[ReplayedRecord], *, records: bool,
                  out: Console | None = None, chunk: int = CHUNK) -> None:
    """The table in Python, ``chunk`` rows sized together (``TableWriter`` gives the same
    text from the C formatter's rows without ``--records``)."""
    out = out or stdout_console()
    count = 0

    def new_table() -> FitTable:
        columns = [Col("offset", "right"), Col("timestamp (UTC)", give_way=1),
                   Col("pid/epoch", "right"), Col("status", wrap=True)]
        if records:
            columns += [Col("key", wrap=True), Col("value", wrap=True),
                        Col("headers", wrap=True, give_way=2)]
        return FitTable(columns, show_header=count == 0)

    table = new_table()
    for r in items:
        row = table_cells(r)
        if records:  # keys, values and headers rendered only when shown
            d = r.to_dict()
            row += [shorten(d["key"], 40), shorten(d["value"], 100),
                    ",".join(f"{h['key']}={h.get('value')}" for h in d["headers"]) or "-"]
        table.add_row(*row)
        count += 1
        if table.row_count >= chunk:
            table.render(out, note=count == chunk)
            table = new_table()
    if table.row_count:
        table.render(out, note=count <= chunk)
    if count == 0:
        stderr_console().print("no records in that range", markup=False)


def _render_diff(hidden: Iterable[ReplayedRecord], fmt: str) -> None:
    """Group read_uncommitted-only records by transaction and reason."""
    groups: dict[tuple[str, int, int], dict[str, Any]] = {}
    for r in hidden:
        first = r.transaction_first_offset if r.reason == ABORTED else -1
        key = (r.reason or "", r.producer_id, first if first is not None else -1)
        g = groups.setdefault(key, {
            "reason": r.reason, "producer_id": r.producer_id, "producer_epoch": r.producer_epoch,
            "transaction_first_offset": r.transaction_first_offset,
            "abort_marker_offset": r.abort_marker_offset,
            "pinned_by": None if r.pinned_by is None else
            {"producer_id": r.pinned_by[0], "first_offset": r.pinned_by[1]},
            "is_transactional": r.is_transactional, "records": 0,
            "first_offset": r.record.offset, "last_offset": r.record.offset})
        g["records"] += 1
        g["last_offset"] = r.record.offset
    rows = sorted(groups.values(), key=lambda g: (g["first_offset"], g["producer_id"]))
    totals: dict[str, int] = {}
    for g in rows:
        totals[g["reason"]] = totals.get(g["reason"], 0) + g["records"]
    if fmt == "jsonl":
        writer = JsonWriter(sys.stdout, array=False)
        for g in rows:
            writer.write(g)
        writer.close()
    elif fmt == "csv":
        w = csv.writer(sys.stdout, lineterminator="\n")
        cols = ["reason", "producer_id", "producer_epoch", "transaction_first_offset",
                "abort_marker_offset", "is_transactional", "records", "first_offset",
                "last_offset"]
        w.writerow(cols)
        for g in rows:
            w.writerow([blank(g[c]) for c in cols])
    else:
        out = stdout_console()
        t = FitTable([Col("reason"), Col("producer"), Col("transaction", wrap=True),
                      Col("records", give_way=1), Col("offsets")])
        for g in rows:
            txn = (f"from {g['transaction_first_offset']}, ABORT at {g['abort_marker_offset']}"
                   if g["reason"] == ABORTED else
                   ("open, holds the LSO" if g["pinned_by"] and g["pinned_by"]["producer_id"]
                    == g["producer_id"] else "waits behind the LSO"))
            pid = "-" if g["producer_id"] < 0 else f"{g['producer_id']}/{g['producer_epoch']}"
            t.add_row(g["reason"], pid, txn, str(g["records"]),
                      f"{g['first_offset']}..{g['last_offset']}")
        t.render(out)
    summary = ", ".join(f"{n} {reason}" for reason, n in sorted(totals.items())) or "none"
    stderr_console().print(f"records read_uncommitted sees and read_committed does not: "
                           f"{summary}", markup=False)
