"""``kafkatx inspect``: the one-screen incident overview of one or many copied log dirs."""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Sequence

import click
from rich.console import Console
from rich.markup import escape

from kafkatx.analysis.cluster_view import cluster_dict
from kafkatx.analysis.groups import OUT_OF_RANGE, UNSTABLE, GroupPartition, needing_attention
from kafkatx.analysis.partition_report import PartitionReport
from kafkatx.analysis.replicas import ReplicaComparison, ReplicaCopy
from kafkatx.analysis.timefmt import duration, iso_ms
from kafkatx.cli.analysis_options import AnalysisCliOptions, analysis_options, run_inspection
from kafkatx.cli.output import emoji_option, format_option, stdout_console
from kafkatx.cli.render import (
    PER_KIND,
    STUCK_HELP,
    Col,
    FitTable,
    human_size,
    lso_table,
    newest_timestamp,
    now_dict,
    now_text,
    oldest_timestamp,
    print_problems,
    print_view_line,
    render_cluster_summary,
    render_findings,
    severity_counts,
    sorted_reports,
    stuck,
    summary_text,
    table_footer,
    worst_first,
)
from kafkatx.engines.base import Engine
from kafkatx.engines.group_positions import analyze_groups
from kafkatx.engines.local import Inspection
from kafkatx.formats.internal_topics import TRANSACTION_STATE_TOPIC as COORDINATOR_TOPIC


def _header(result: Inspection, paths: Sequence[str], out: Console) -> None:
    disc = result.discovery
    reports = result.partitions
    out.print(f"[bold]kafkatx inspect[/] {escape(' '.join(paths))}", highlight=False)
    if disc is not None:
        dirs = [f"{escape(d.label)} ({escape(str(d.path))}"
                + (", clean shutdown" if d.clean_shutdown else "")
                + ("" if d.checkpoints else ", no checkpoint files") + ")"
                for d in disc.log_dirs]
        if disc.bare_partitions:
            dirs.append(f"{len(disc.bare_partitions)} partition dir(s) given on their own")
        out.print(f"log dirs: {'; '.join(dirs) or '-'}", highlight=False)
        inactive = disc.inactive_partitions()
        if inactive:
            names = ", ".join(f"{p.name} ({p.state})" for p in inactive[:5])
            more = f" and {len(inactive) - 5} more" if len(inactive) > 5 else ""
            out.print(f"kept apart (not analyzed): {escape(names)}{more}", highlight=False)
    segments = sum(r.segments for r in reports)
    line = (f"partitions: {len(reports)}, segments: {segments}, "
            f"size: {human_size(sum(r.size_bytes for r in reports))}")
    firsts = [t for t in map(oldest_timestamp, reports) if t is not None]
    lasts = [t for t in map(newest_timestamp, reports) if t is not None]
    if firsts and lasts:
        line += (f", data from {iso_ms(min(firsts))} to {iso_ms(max(lasts))} "
                 f"({duration(max(lasts) - min(firsts))})")
    out.print(line, highlight=False)
    ages = now_text(result)
    out.print(ages, highlight=False, markup=False, emoji=emoji_option(ages))
    view = result.coordinator
    if view is not None and view.partition_count is not None:
        present = sorted(view.partitions_present)
        out.print(f"coordinator: {len(present)} {COORDINATOR_TOPIC} partition(s) of "
                  f"{escape(view.partition_count.describe)}", highlight=False)


def coordinator_dict(result: Inspection) -> dict[str, object] | None:
    """``{"num_partitions", "source", "ids_placed", "ids", "alternatives",
    "partitions_present"}`` of the coordinator's partitions, None without any."""
    view = result.coordinator
    if view is None or view.partition_count is None:
        return None
    return {**view.partition_count.to_dict(),
            "partitions_present": sorted(view.partitions_present)}


def _empty(r: PartitionReport | ReplicaCopy) -> bool:
    """No record and nothing to say: left out of the human tables unless --all."""
    return (r.log_end_offset <= r.log_start_offset and not getattr(r, "open_transactions", ())
            and not getattr(r, "findings", ()))


def _hidden_note(hidden_topics: Sequence[str], what: str, out: Console) -> None:
    """``N <what> not shown (topic count, ...)`` under a table that left them out."""
    if not hidden_topics:
        return
    topics = ", ".join(f"{t} {n}" for t, n in sorted(Counter(hidden_topics).items()))
    out.print(f"{len(hidden_topics)} {what} not shown ({escape(topics)}); --all shows them",
              style="dim", highlight=False)


def replicas_table(comparisons: Sequence[ReplicaComparison]) -> FitTable:
    """One row per copy of each partition held by several log dirs."""
    t = FitTable([Col("topic"), Col("partition", "right"), Col("log dir"),
                  Col("epoch", "right", give_way=1), Col("log start", "right"),
                  Col("LEO", "right"), Col("HW", "right"), Col("LSO", "right"), Col("role"),
                  Col("truncates to", "right", give_way=2), Col("divergent", "right"),
                  Col("acknowledged", "right")], title="replicas (partitions in several log dirs)")
    for comp in comparisons:
        for c in comp.copies:
            style = {"diverged": "bold red" if c.acknowledged_divergent else "yellow",
                     "lagging": "dim"}.get(c.role)
            t.add_row(escape(comp.topic), str(comp.partition), escape(c.broker),
                      str(c.latest_leader_epoch), str(c.log_start_offset),
                      str(c.log_end_offset),
                      "-" if c.high_watermark is None else str(c.high_watermark),
                      str(c.last_stable_offset), c.role.replace("_", " "),
                      "-" if c.truncation_offset is None else str(c.truncation_offset),
                      str(c.divergent_records), str(c.acknowledged_divergent), style=style)
    return t


def attention_line(p: GroupPartition) -> str:
    """One line per stuck, unstable or out-of-range group position."""
    where = f"{p.group} on {p.topic}-{p.partition}: {p.status}"
    if p.status == UNSTABLE:
        return (f"{where}: a transactional commit of offset {p.pending_offset} has no marker; "
                "consumers fetching stable offsets wait for that transaction")
    if p.status == OUT_OF_RANGE:
        return (f"{where}: committed {p.committed_offset} outside [{p.log_start_offset}, "
                f"{p.log_end_offset}]: the consumer resets by auto.offset.reset")
    line = (f"{where} at {p.committed_offset} (LSO {p.last_stable_offset}, HW "
            f"{p.high_watermark if p.high_watermark is not None else p.log_end_offset}), "
            f"{p.records_behind_lso} record(s) behind the LSO")
    if p.holder is not None:
        h = p.holder
        line += (f", held by {h.transactional_id or 'producer'} {h.producer_id}/"
                 f"{h.producer_epoch} from offset {h.first_offset}")
        if p.holder_age_ms is not None:
            line += f" ({duration(p.holder_age_ms)})"
        if h.finding:
            line += f" [{h.finding}]"
    return line


def inactive_dicts(result: Inspection) -> list[dict[str, object]]:
    if result.discovery is None:
        return []
    return [{"topic": p.topic, "partition": p.partition, "state": p.state, "path": str(p.path)}
            for p in result.discovery.inactive_partitions()]


@click.command("inspect", epilog=(
    "\b\nExamples:\n"
    "  kafkatx inspect fixtures/logdir\n"
    "  kafkatx inspect /copies/broker-* --stuck\n"
    "  kafkatx inspect fixtures/logdir -f json > inspect.json"))
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@analysis_options
@click.option("--all", "show_all", is_flag=True,
              help=f"Show every finding and every partition (tables show the first {PER_KIND} "
                   "findings of each kind and leave out empty partitions).")
@click.option("--stuck", "only_stuck", is_flag=True, help=STUCK_HELP)
@format_option(("table", "json"), why={
    "jsonl": "its result is one document (partitions, findings, replicas, cluster); "
             "verify -f jsonl gives one finding a line, lso -f jsonl one partition a line",
    "csv": "its result is one document; lso -f csv gives the partitions' rows"})
def inspect_command(paths: tuple[str, ...], fmt: str, show_all: bool, only_stuck: bool,
                    analysis: AnalysisCliOptions) -> None:
    """The incident overview: partitions, transactions, LSO vs HW, and findings by severity.

    PATH may be a broker's log dir, a partition dir, or a folder of copies from several
    brokers. Every partition's producer state is rebuilt as the broker does, every file is
    cross-checked, and findings are ranked (errors, warnings, info), each with its location and,
    where Kafka has one, the command an operator would run. Exit status 0 whatever is found
    (see `kafkatx verify` for a pass/fail status).
    """
    attention: list[GroupPartition] = []

    def groups_section(engine: Engine, result: Inspection) -> None:
        summaries = analyze_groups(engine, result, result.problems, now_ms=result.now_ms,
                                   replay_all=False)
        attention.extend(needing_attention(summaries))

    result = run_inspection(paths, analysis, then=groups_section)
    reports = sorted_reports(result.partitions)
    clusters = [cluster_dict(v) for v in result.clusters]
    if fmt == "json":
        doc = {"view": analysis.view,
               "partitions": [r.to_dict() for r in reports],
               "cluster": clusters,
               "findings": [f.to_dict() for f in result.findings],
               "problems": list(result.problems),
               "inactive_partitions": inactive_dicts(result),
               "groups": [p.to_dict() for p in attention],
               "replicas": [c.to_dict() for c in result.replicas],
               "coordinator": coordinator_dict(result),
               "now": now_dict(result)}
        sys.stdout.write(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
        sys.stdout.flush()
        return
    print_problems(result)
    out = stdout_console()
    print_view_line(analysis.view)
    _header(result, paths, out)
    for cluster in clusters:
        render_cluster_summary(cluster, out)
    shown = [r for r in reports if show_all or not _empty(r)]
    if only_stuck:
        shown = [r for r in shown if stuck(r)]
    left_out = 0
    if not show_all:
        shown, left_out = worst_first(shown, out)
    if shown:
        out.print()
        if left_out:
            out.print(f"the {len(shown)} worst of {len(shown) + left_out} partitions (the most "
                      "records behind the LSO first):", highlight=False)
        lso_table(shown, now_ms=result.now_ms, with_counts=True).render(out)
        table_footer(shown, out)
    if left_out:
        out.print(f"{left_out} more partition(s) not shown; --all, --stuck or --format json "
                  "shows them", style="dim", highlight=False)
    if only_stuck:
        out.print(f"{sum(not stuck(r) for r in reports)} partition(s) with the LSO at the HW "
                  "not shown (--stuck)", style="dim", highlight=False)
    _hidden_note([r.topic for r in reports if not (show_all or not _empty(r))],
                 "empty partition dir(s)", out)
    comparisons = [c for c in result.replicas
                   if show_all or not all(_empty(k) for k in c.copies)]
    if comparisons:
        out.print()
        replicas_table(comparisons).render(out)
    _hidden_note([c.topic for c in result.replicas
                  if not (show_all or not all(_empty(k) for k in c.copies))],
                 "replicated partition(s) with only empty copies", out)
    if attention:
        out.print()
        out.print(f"[bold]consumer groups needing attention[/] ({len(attention)}; "
                  "`kafkatx groups` shows every group)", highlight=False)
        for p in attention:
            out.print(f"  {attention_line(p)}", markup=False, highlight=False)
    out.print()
    counts = severity_counts(result.findings)
    out.print(f"[bold]findings[/] ({summary_text(counts)})", highlight=False)
    render_findings(result.findings, out, show_all=show_all)
