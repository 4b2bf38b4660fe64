"""``kafkatx timeline``: every transaction across partitions, joined with its coordinator."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

import click
from rich.console import Console
from rich.markup import escape

from kafkatx.analysis.coordinator_transactions import PartitionEntry, tp_name
from kafkatx.analysis.timefmt import duration, iso_ms
from kafkatx.analysis.timeline import Selection, Timeline, TimelineTransaction
from kafkatx.analysis.view_names import AFTER_RESTART, AS_FOUND
from kafkatx.cli.analysis_options import (
    EngineCliOptions,
    NowParam,
    after_restart_option,
    engine_options,
    library_call,
    max_transaction_timeout_option,
    scan_progress,
    transaction_state_partitions_option,
)
from kafkatx.cli.now_option import NOW_HELP, default_now
from kafkatx.cli.output import format_option, stderr_console, stdout_console, write_json
from kafkatx.cli.output_path import check_output_file, format_for_output
from kafkatx.cli.render import Col, FitTable, finding_lines, print_view_line, steps_lines
from kafkatx.cli.timeline_html import render_html
from kafkatx.engines.inspection import inspect
from kafkatx.engines.local import AnalysisOptions

OUTCOME_STYLE = {"committed": "green", "aborted": "dim", "open": "yellow", "hanging": "bold red",
                 "forgotten": "magenta"}
_ENTRY_TEXT = {"hanging": "no marker, hanging", "open": "no marker yet",
               "forgotten": "no marker, forgotten by the load",
               "no_marker": "no marker", "marker_pending": "marker pending",
               "no_data": "nothing", "not_copied": "not copied", "unknown": "not covered"}


def entry_text(e: PartitionEntry) -> str:
    """``payments-0 19..21 COMMIT@14``, ``payments-0 19..21 no marker, hanging``."""
    text = tp_name(e.tp)
    if e.first_offset is not None:
        text += f" {e.first_offset}..{e.last_offset}"
    if e.marker_offset is not None:
        text += f" {e.marker_type}@{e.marker_offset}"
    else:
        text += " " + _ENTRY_TEXT.get(e.status, e.status)
    return text


def _duration(t: TimelineTransaction, now_ms: int) -> str:
    if t.start_timestamp_ms is None:
        return "-"
    if t.outcome in ("committed", "aborted") and t.end_timestamp_ms is not None:
        return duration(t.end_timestamp_ms - t.start_timestamp_ms)
    if now_ms < 0:
        return "-"
    return duration(now_ms - t.start_timestamp_ms) + "+"  # still open at now


def render_table(tl: Timeline, out: Console) -> None:
    """One row per transaction, then the abort commands of hanging ones and the notes."""
    if not tl.transactions:
        out.print("no transactions", style="green")
    else:
        table = FitTable([Col("transactional id"), Col("pid/epoch"),
                          Col("start (UTC)", give_way=2), Col("duration", give_way=3),
                          Col("outcome"), Col("partitions", wrap=True),
                          Col("anomalies", give_way=4)])
        for t in tl.transactions:
            epoch = "?" if t.producer_epoch is None else str(t.producer_epoch)
            table.add_row(
                escape(t.transactional_id or "-"), f"{t.producer_id}/{epoch}",
                iso_ms(t.start_timestamp_ms), _duration(t, tl.now_ms),
                f"[{OUTCOME_STYLE.get(t.outcome, '')}]{t.outcome}[/]",
                escape(", ".join(entry_text(e) for e in t.partitions) or "-"),
                escape(", ".join(t.anomalies) or "-"))
        table.render(out)
    for t in tl.transactions:
        for f in t.findings:
            if f.kind == "hanging_transaction" and f.remediation:
                head = (f"[bold red]hanging[/] {escape(t.transactional_id or '-')} "
                        f"{escape(f.topic or '')}-{f.partition} from offset {f.offset}")
                if len(f.remediation_steps) == 1:
                    out.print(f"{head}: {escape(f.remediation)}", highlight=False,
                              soft_wrap=True)
                    continue
                out.print(head, highlight=False, soft_wrap=True)
                for line in steps_lines(f.remediation_steps, indent="  "):
                    out.print(line, highlight=False, soft_wrap=True)
    if tl.replica_findings:
        out.print("[bold]replicas[/]: where brokers' copies disagree (the rows above are the "
                  "authoritative copies')", highlight=False, soft_wrap=True)
        for f in tl.replica_findings:
            for line in finding_lines(f):
                out.print(line, highlight=False, soft_wrap=True)
    for note in tl.notes + _missing(tl):
        out.print(f"[dim]note: {escape(note)}[/]", highlight=False, soft_wrap=True)


def _missing(tl: Timeline) -> list[str]:
    seen: dict[str, None] = {}
    for t in tl.transactions:
        for m in t.missing:
            if not m.endswith("not among the evidence"):  # summed up in the notes
                seen[f"{t.transactional_id or t.producer_id}: {m}"] = None
    return list(seen)


@click.command("timeline", epilog=(
    "\b\nExamples:\n"
    "  kafkatx timeline fixtures/logdir\n"
    "  kafkatx timeline fixtures/logdir --transactional-id ledger-writer -f jsonl\n"
    "  kafkatx timeline fixtures/logdir --html timeline.html"))
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--transactional-id", "transactional_ids", multiple=True, metavar="ID",
              help="Only this transactional id's transactions (repeatable).")
@click.option("--producer-id", "producer_ids", multiple=True, type=click.IntRange(min=0),
              metavar="N", help="Only this producer id's transactions (repeatable).")
@click.option("--since", type=NowParam(), default=None,
              help="Only transactions still running at or after TIME (ISO-8601 or epoch ms).")
@click.option("--until", type=NowParam(), default=None,
              help="Only transactions started at or before TIME (ISO-8601 or epoch ms).")
@click.option("--now", type=NowParam(keywords=True), default=None, help=NOW_HELP)
@max_transaction_timeout_option
@transaction_state_partitions_option
@after_restart_option
@format_option(("table", "json", "jsonl", "html"), why={
    "csv": "a transaction's partitions, states and findings are nested; use json or jsonl"})
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              metavar="FILE", help="Write to FILE (outside the inspected paths) instead of "
                                   "stdout, its suffix saying the format (.json, .jsonl, "
                                   ".html: one self-contained page, .txt: the table); another "
                                   "suffix takes --format's.")
@click.option("--html", "html_page", type=click.Path(dir_okay=False, path_type=Path),
              default=None, metavar="FILE",
              help="The HTML page into FILE: the Gantt chart, the findings and their "
                   "remediation steps (short for --format html --output FILE).")
@engine_options(output=False)
def timeline_command(paths: tuple[str, ...], transactional_ids: tuple[str, ...],
                     producer_ids: tuple[int, ...], since: int | None, until: int | None,
                     now: int | str | None, max_transaction_timeout_ms: int | None,
                     transaction_state_partitions: int | None, after_restart: bool, fmt: str,
                     output: Path | None, html_page: Path | None,
                     engine: EngineCliOptions) -> None:
    """Every transaction, joined across its coordinator and data partitions.

    For each transaction (transactional id, producer id, epoch, start): the coordinator's
    state changes from __transaction_state, and for each partition in its set the first and
    last data offsets and the marker (or its absence), with the transactional offset commits
    in __consumer_offsets. Outcomes: committed, aborted, open, hanging. Missing evidence
    (partitions not copied, the coordinator's partition absent) is said, not guessed.
    """
    if html_page is not None:
        if output is not None or fmt not in ("table", "html"):
            raise click.UsageError("--html FILE is --format html --output FILE: give it alone")
        fmt, output = "html", html_page
    if since is not None and until is not None and since > until:
        raise click.BadParameter("--since is after --until", param_hint="'--since'")
    if output is not None:
        fmt = format_for_output(output, fmt)
        check_output_file(output, paths)
    selection = Selection(transactional_ids=frozenset(transactional_ids),
                          producer_ids=frozenset(producer_ids), since_ms=since, until_ms=until)
    view = AFTER_RESTART if after_restart else AS_FOUND
    options = AnalysisOptions(max_transaction_timeout_ms=max_transaction_timeout_ms,
                              transaction_state_partitions=transaction_state_partitions,
                              view=view, predict_restart=False)
    result = library_call(lambda: inspect(paths, options=options, engine=engine.config,
                                          progress=scan_progress, keep_timeline=True,
                                          selection=selection, join_cluster=False,
                                          now=default_now(now))).inspection
    tl = result.timeline
    assert tl is not None
    err = stderr_console()
    for problem in result.problems:
        err.print(f"kafkatx: {problem}", markup=False)
    if fmt == "table" and output is None:
        print_view_line(view)
        render_table(tl, stdout_console())
        return
    if fmt != "table":
        for note in tl.notes:
            err.print(f"kafkatx: note: {note}", markup=False)
        if fmt != "html":
            for f in tl.replica_findings:
                at = "" if f.offset is None else f" offset {f.offset}"
                err.print(f"kafkatx: {f.level} {f.kind} {f.topic}-{f.partition}{at}: "
                          f"{f.message}", markup=False)
    if output is None:
        _write(fmt, tl, sys.stdout, view)
        return
    try:
        with open(output, "w", encoding="utf-8") as f:
            _write(fmt, tl, f, view)
    except OSError as exc:
        raise click.FileError(str(output), hint=exc.strerror or str(exc)) from None
    err.print(f"wrote {output} ({len(tl.transactions)} transaction(s))", markup=False)


def _write(fmt: str, tl: Timeline, out: TextIO, view: str) -> None:
    if fmt == "html":
        out.write(render_html(tl))
        out.flush()
    elif fmt in ("json", "jsonl"):
        write_json([{**t.to_dict(), "view": view} for t in tl.transactions], fmt, out)
    else:
        render_table(tl, Console(file=out, soft_wrap=False, width=220, highlight=False,
                                 color_system=None))
