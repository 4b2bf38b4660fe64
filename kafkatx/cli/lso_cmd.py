"""``kafkatx lso``: every partition's last stable offset, what pins it, and the lag it causes."""

from __future__ import annotations

import csv
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from kafkatx.analysis.partition_report import PartitionReport
from kafkatx.analysis.replay_result import Transaction
from kafkatx.cli.analysis_options import AnalysisCliOptions, analysis_options, run_inspection
from kafkatx.cli.output import StdoutLines, emoji_option, format_option, write_json
from kafkatx.cli.render import (
    STUCK_HELP,
    lso_table,
    now_text,
    print_problems,
    print_view_line,
    sorted_reports,
    stuck,
    table_footer,
)

if TYPE_CHECKING:
    from rich.console import Console

CSV_COLUMNS = (
    "topic", "partition", "broker", "log_start_offset", "log_end_offset", "high_watermark",
    "last_stable_offset", "lso_source", "hw_minus_lso", "records_pending", "open_transactions",
    "oldest_open_first_offset", "oldest_open_producer_id", "oldest_open_producer_epoch",
)


def oldest_open(report: PartitionReport) -> Transaction | None:
    txns = report.open_transactions
    return min(txns, key=lambda t: t.first_offset) if txns else None


def csv_row(r: PartitionReport) -> dict[str, object]:
    row = r.lso_row()
    oldest = oldest_open(r)
    return {
        **{k: row[k] for k in CSV_COLUMNS if k in row and k != "open_transactions"},
        "broker": r.broker or "",
        "high_watermark": "" if r.high_watermark is None else r.high_watermark,
        "open_transactions": len(r.open_transactions),
        "oldest_open_first_offset": "" if oldest is None else oldest.first_offset,
        "oldest_open_producer_id": "" if oldest is None else oldest.producer_id,
        "oldest_open_producer_epoch": "" if oldest is None else oldest.producer_epoch,
    }


@click.command("lso", epilog=(
    "\b\nExamples:\n"
    "  kafkatx lso fixtures/logdir\n"
    "  kafkatx lso fixtures/logdir --stuck -f csv -o lso.csv"))
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@analysis_options
@click.option("--stuck", "only_stuck", is_flag=True, help=STUCK_HELP)
@format_option(("table", "json", "jsonl", "csv"))
def lso_command(paths: tuple[str, ...], fmt: str, only_stuck: bool,
                analysis: AnalysisCliOptions) -> None:
    """The last stable offset (LSO) of every partition, and what holds it back.

    PATH may be a broker's log dir, a partition dir, or a folder of copies from several
    brokers. LSO = min(first unstable offset, high watermark) as the broker computes it; the HW
    comes from replication-offset-checkpoint (else the log end offset, said so). Rows where
    the LSO is behind the HW are highlighted: read_committed consumers stop at the LSO.
    """
    result = run_inspection(paths, analysis._replace(predict_restart=False))
    reports = sorted_reports(result.partitions)
    if only_stuck and fmt == "table":
        reports = [r for r in reports if stuck(r)]
    print_problems(result)
    if fmt in ("json", "jsonl"):
        write_json([{**r.lso_row(), "view": analysis.view} for r in reports], fmt)
    elif fmt == "csv":
        writer = csv.DictWriter(sys.stdout, fieldnames=CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for r in reports:
            writer.writerow(csv_row(r))
    else:
        print_view_line(analysis.view)
        print_table(reports, result.now_ms, now_text(result), StdoutLines())
    sys.stdout.flush()


def print_table(reports: Sequence[PartitionReport], now_ms: int | None, ages: str,
                out: Console | StdoutLines) -> None:
    """The table form: the partitions, what their ages are measured from (``ages``, where a
    transaction is open) and the footer. On a :class:`StdoutLines`, rich only for what a plain
    line or table cannot say."""
    if reports:
        lso_table(reports, now_ms=now_ms).render(out)
    if any(r.open_transactions for r in reports):
        out.print(ages, style="dim", markup=False, highlight=False, emoji=emoji_option(ages))
    table_footer(reports, out)
