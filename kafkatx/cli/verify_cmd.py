"""``kafkatx verify``: every check on every partition; exit status 1 when any error is found."""

from __future__ import annotations

import json
import sys

import click

from kafkatx.analysis.findings import ERROR, INFO, WARNING
from kafkatx.cli.analysis_options import AnalysisCliOptions, analysis_options, run_inspection
from kafkatx.cli.exit_status import EXIT_ERRORS_FOUND
from kafkatx.cli.output import format_option, stdout_console, write_json
from kafkatx.cli.render import (
    plural,
    print_problems,
    print_view_line,
    render_findings,
    severity_counts,
    summary_text,
)


@click.command("verify", epilog=(
    "\b\nExamples:\n"
    "  kafkatx verify fixtures/logdir; echo \"exit $?\"\n"
    "  kafkatx verify fixtures/logdir -f jsonl"))
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@analysis_options
@click.option("--all", "show_all", is_flag=True, help="Show every finding in the table.")
@format_option(("table", "json", "jsonl"), why={
    "csv": "findings carry nested remediation steps; jsonl gives one finding a line"})
def verify_command(paths: tuple[str, ...], fmt: str, show_all: bool,
                   analysis: AnalysisCliOptions) -> None:
    """Run every check; exit status 1 when any error-severity finding exists, else 0.

    Checks: CRCs, truncation, every record of every batch decoded, offsets, indexes, the
    .txnindex against the log's aborts, snapshots against the rebuilt producer state,
    sequences, duplicates, stale epochs (zombies), markers, open and pinning transactions.
    Warnings and info never fail.
    """
    result = run_inspection(paths, analysis._replace(validate_records=True))
    counts = severity_counts(result.findings)
    partitions = len(result.partitions)
    failed = counts[ERROR] > 0
    if fmt == "json":
        doc = {"view": analysis.view, "ok": not failed,
               "summary": {"errors": counts[ERROR], "warnings": counts[WARNING],
                           "info": counts[INFO], "partitions": partitions},
               "findings": [f.to_dict() for f in result.findings],
               "problems": list(result.problems)}
        sys.stdout.write(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    elif fmt == "jsonl":
        write_json([{**f.to_dict(), "view": analysis.view} for f in result.findings], fmt)
    else:
        print_problems(result)
        out = stdout_console()
        print_view_line(analysis.view)
        render_findings(result.findings, out, show_all=show_all)
        style = "bold red" if failed else "green"
        out.print(f"{summary_text(counts)} in {plural(partitions, 'partition')}", style=style,
                  highlight=False)
    sys.stdout.flush()
    if failed:
        sys.exit(EXIT_ERRORS_FOUND)
