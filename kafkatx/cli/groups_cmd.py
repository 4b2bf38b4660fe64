"""``kafkatx groups``: consumer groups' committed offsets beside log start, LSO and HW, lag three
ways, and the transaction that holds each stuck group."""

from __future__ import annotations

import csv
import sys
from collections.abc import Sequence

import click
from rich.console import Console
from rich.markup import escape

from kafkatx.analysis.groups import (
    CAUGHT_UP,
    GROUP_PARTITION_FIELDS,
    NOT_CAPTURED,
    OUT_OF_RANGE,
    STUCK_BEHIND_TRANSACTION,
    UNSTABLE,
    GroupPartition,
    GroupSummary,
)
from kafkatx.analysis.timefmt import duration, iso_ms
from kafkatx.cli.analysis_options import AnalysisCliOptions, analysis_options, run_inspection
from kafkatx.cli.output import format_option, stderr_console, stdout_console, write_json
from kafkatx.cli.render import Col, FitTable, print_view_line
from kafkatx.engines.base import Engine
from kafkatx.engines.group_positions import analyze_groups
from kafkatx.engines.local import Inspection
from kafkatx.formats.internal_topics import GROUP_METADATA_TOPIC

CSV_COLUMNS = tuple(name for name, _ in GROUP_PARTITION_FIELDS)


@click.command("groups", epilog=(
    "\b\nExamples:\n"
    "  kafkatx groups fixtures/logdir\n"
    "  kafkatx groups fixtures/logdir -g payments-app -f csv"))
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("-g", "--group", "groups", multiple=True, metavar="NAME",
              help="Only this consumer group (repeatable).")
@analysis_options
@format_option(("table", "json", "jsonl", "csv"))
def groups_command(paths: tuple[str, ...], groups: tuple[str, ...], fmt: str,
                   analysis: AnalysisCliOptions) -> None:
    """Consumer groups' committed offsets and lag, marker-aware, and what holds a stuck group.

    Offsets are loaded from __consumer_offsets as the group coordinator loads them
    (transactional commits count once their COMMIT marker is there). Per partition: lag in
    offsets (what kafka-consumer-groups.sh prints), the records a read_committed consumer will
    actually receive, and the records held behind the LSO; a group at the LSO of a partition
    whose open transaction holds it is stuck_behind_transaction, with that transaction named.
    --output DIR writes group_offsets.parquet and pending_transactional_commits.parquet.
    """
    summaries: list[GroupSummary] = []
    problems: list[str] = []

    def analyze(engine: Engine, result: Inspection) -> None:
        disc = result.discovery
        if disc is None or not any(p.topic == GROUP_METADATA_TOPIC
                                   for p in disc.all_partitions()):
            problems.append("no __consumer_offsets partition under the given paths: no "
                            "group to report")
        summaries.extend(analyze_groups(engine, result, problems, now_ms=result.now_ms,
                                        groups=groups))
        if analysis.engine.output is not None:
            from kafkatx.engines.group_tables import group_tables

            written = engine.write_tables(analysis.engine.output, group_tables(summaries))
            stderr_console().print(f"wrote {', '.join(written)}", markup=False)

    result = run_inspection(paths, analysis._replace(predict_restart=False), then=analyze,
                           own_output=True)
    err = stderr_console()
    for p in [*result.problems, *problems]:
        err.print(f"kafkatx: warning: {p}", markup=False)
    missing = sorted(set(groups) - {s.group for s in summaries})
    for name in missing:
        err.print(f"kafkatx: warning: no group {name!r} in __consumer_offsets", markup=False)
    if fmt in ("json", "jsonl"):
        write_json([{**s.to_dict(), "view": analysis.view} for s in summaries], fmt)
    elif fmt == "csv":
        writer = csv.DictWriter(sys.stdout, fieldnames=CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for s in summaries:
            for p in s.partitions:
                writer.writerow({k: "" if v is None else v for k, v in p.to_dict().items()})
    else:
        print_view_line(analysis.view)
        render(summaries, stdout_console(), now_ms=result.now_ms)
    sys.stdout.flush()


_STYLE = {STUCK_BEHIND_TRANSACTION: "bold red", UNSTABLE: "bold red", OUT_OF_RANGE: "red",
          NOT_CAPTURED: "dim",
          CAUGHT_UP: None}


def render(summaries: Sequence[GroupSummary], out: Console, *, now_ms: int | None) -> None:
    if not summaries:
        out.print("no consumer group found")
        return
    for s in summaries:
        out.print(group_line(s), markup=False)
        if s.partitions:
            partition_table(s.partitions).render(out)
        for p in s.pending:
            who = p.transactional_id or f"producer {p.producer_id}"
            out.print(f"  pending transactional commit: {p.topic}-{p.partition} offset "
                      f"{p.offset} by {who} (epoch {p.producer_epoch}) at "
                      f"{GROUP_METADATA_TOPIC}-{p.consumer_offsets_partition} offset "
                      f"{p.batch_offset}, {iso_ms(p.commit_timestamp)}: no marker, not "
                      f"applied{f' ({p.finding})' if p.finding else ''}; consumers that "
                      "fetch offsets with require_stable get UNSTABLE_OFFSET_COMMIT and wait "
                      "for that transaction", markup=False)
        out.print()


def group_line(s: GroupSummary) -> str:
    what = s.state
    if s.group_type == "consumer":  # KIP-848: the assignor runs on the broker
        what += f", consumer protocol, assignor {s.protocol or 'the broker default'}, group " \
                f"epoch {s.generation}, {s.members} member(s)"
    elif s.protocol_type:
        what += f", {s.protocol_type}/{s.protocol or '-'} generation {s.generation}, " \
                f"{s.members} member(s)"
    last = s.last_commit_timestamp
    where = "" if s.consumer_offsets_partition is None \
        else f" in {GROUP_METADATA_TOPIC}-{s.consumer_offsets_partition}"
    stuck = f", {s.stuck_partitions} stuck behind a transaction" if s.stuck_partitions else ""
    return (f"group {s.group} ({what}){where}: last commit {iso_ms(last)}, lag "
            f"{s.total('lag_offsets')} offsets / {s.total('lag_records_read_committed')} "
            f"read_committed records / {s.total('records_behind_lso')} behind the LSO{stuck}")


def partition_table(rows: Sequence[GroupPartition]) -> FitTable:
    t = FitTable([Col("topic"), Col("partition", "right"), Col("committed", "right"),
                  Col("log start", "right", give_way=3), Col("LSO", "right"), Col("HW", "right"),
                  Col("lag", "right"), Col("rc records", "right", give_way=2),
                  Col("behind LSO", "right", give_way=1), Col("status"),
                  Col("held by", wrap=True)])

    def num(v: int | None) -> str:
        return "-" if v is None else str(v)

    for r in rows:
        held = "-"
        if r.holder is not None:
            h = r.holder
            held = f"{h.transactional_id or 'producer'} {h.producer_id}/{h.producer_epoch}" \
                   f"@{h.first_offset}"
            if r.holder_age_ms is not None:
                held += f" ({duration(r.holder_age_ms)})"
            if h.finding:
                held += f" {h.finding}"
        t.add_row(escape(r.topic), str(r.partition), num(r.committed_offset),
                  num(r.log_start_offset), num(r.last_stable_offset), num(r.high_watermark),
                  num(r.lag_offsets), num(r.lag_records_read_committed),
                  num(r.records_behind_lso), r.status.replace("_", " "), escape(held),
                  style=_STYLE.get(r.status))
    return t
