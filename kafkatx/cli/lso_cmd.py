"""``kafkatx lso``: every partition's last stable offset, what pins it, and the lag it causes."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Sequence
from dataclasses import replace

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kafkatx.analysis.partition_report import PartitionReport
from kafkatx.analysis.replay_result import Transaction
from kafkatx.analysis.timefmt import duration, iso_ms
from kafkatx.cli.analysis_options import (
    AnalysisCliOptions,
    analysis_options,
    print_view_line,
    run_inspection,
)
from kafkatx.cli.output import format_option, stderr_console, stdout_console
from kafkatx.engines.local import Inspection
from kafkatx.formats.internal_topics import METADATA_TOPIC

CSV_COLUMNS = (
    "topic", "partition", "broker", "log_start_offset", "log_end_offset", "high_watermark",
    "last_stable_offset", "lso_source", "hw_minus_lso", "records_pending", "open_transactions",
    "oldest_open_first_offset", "oldest_open_producer_id", "oldest_open_producer_epoch",
)


def sorted_reports(reports: Sequence[PartitionReport]) -> list[PartitionReport]:
    """By topic, partition, then log dir label (several brokers' copies of one partition)."""
    return sorted(reports, key=lambda r: (r.topic, r.partition, r.broker or "", r.path))


def several_log_dirs(reports: Sequence[PartitionReport]) -> bool:
    return len({r.broker for r in reports}) > 1


def _timestamp(report: PartitionReport, name: str) -> int | None:
    ms = getattr(report, name, None)  # min/max_timestamp: only when the engine provides them
    return ms if isinstance(ms, int) and ms >= 0 else None


def newest_timestamp(report: PartitionReport) -> int | None:
    """The newest timestamp in the partition's log, when the report carries it."""
    return _timestamp(report, "max_timestamp")


def oldest_timestamp(report: PartitionReport) -> int | None:
    """The oldest timestamp in the partition's log, when the report carries it."""
    return _timestamp(report, "min_timestamp")


def oldest_open(report: PartitionReport) -> Transaction | None:
    txns = report.open_transactions
    return min(txns, key=lambda t: t.first_offset) if txns else None


def open_txn_text(report: PartitionReport, now_ms: int | None) -> str:
    """``pid/epoch@first_offset (age)`` for each open transaction, oldest first."""
    reference = now_ms if now_ms is not None else newest_timestamp(report)
    parts = []
    for t in sorted(report.open_transactions, key=lambda t: t.first_offset):
        text = f"{t.producer_id}/{t.producer_epoch}@{t.first_offset}"
        if reference is not None and t.first_timestamp >= 0:
            text += f" ({duration(reference - t.first_timestamp)})"
        elif t.first_timestamp >= 0:
            text += f" (since {iso_ms(t.first_timestamp)})"
        parts.append(text)
    return ", ".join(parts) or "-"


def lag_style(report: PartitionReport) -> str | None:
    """LSO behind the HW: red when an open transaction holds it, else yellow."""
    if report.hw_minus_lso <= 0:
        return None
    return "bold red" if report.lso_source == "open_transaction" else "yellow"


def lso_table(reports: Sequence[PartitionReport], *, now_ms: int | None,
              with_counts: bool = False) -> Table:
    """The ``lso`` columns; ``with_counts`` adds ``inspect``'s segment and transaction figures."""
    brokers = several_log_dirs(reports)
    t = Table(show_header=True, box=None, pad_edge=False, header_style="bold",
              padding=(0, 2, 0, 0))
    columns: list[tuple[str, str]] = [("topic", "left"), ("partition", "right")]
    if brokers:
        columns.append(("log dir", "left"))
    columns += [("log start", "right"), ("LEO", "right"), ("HW", "right"), ("LSO", "right"),
                ("LSO source", "left"), ("HW−LSO", "right"), ("pending", "right")]
    if with_counts:
        columns += [("segs", "right"), ("size", "right"), ("producers", "right"),
                    ("commit", "right"), ("abort", "right"), ("open", "right"),
                    ("longest txn", "right")]
    columns.append(("open transactions (pid/epoch@offset, age)", "left"))
    for i, (name, justify) in enumerate(columns):
        last = i == len(columns) - 1
        t.add_column(name, justify=justify, no_wrap=not last,  # type: ignore[arg-type]
                     overflow="fold" if last else "ellipsis")
    for r in reports:
        row = [escape(r.topic), str(r.partition)]
        if brokers:
            row.append(escape(r.broker or r.path))
        row += [str(r.log_start_offset), str(r.log_end_offset),
                "-" if r.high_watermark is None else str(r.high_watermark),
                str(r.last_stable_offset), r.lso_source.replace("_", " "), str(r.hw_minus_lso),
                str(r.records_pending)]
        if with_counts:
            row += [str(r.segments), human_size(r.size_bytes), str(r.producers),
                    str(r.transactions_committed), str(r.transactions_aborted),
                    str(len(r.open_transactions)),
                    "-" if r.longest_transaction_ms is None
                    else duration(r.longest_transaction_ms)]
        row.append(escape(open_txn_text(r, now_ms)))
        t.add_row(*row, style=lag_style(r))
    return t


def human_size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000  # type: ignore[assignment]
    return str(n)


def table_footer(reports: Sequence[PartitionReport], out: Console) -> None:
    # KRaft keeps the metadata log's high watermark in memory, never in a checkpoint file
    unknown = [r for r in reports if r.high_watermark is None and r.topic != METADATA_TOPIC]
    if unknown:
        names = ", ".join(f"{r.topic}-{r.partition}" for r in unknown[:5])
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        out.print(f"HW unknown for {len(unknown)} partition(s) ({escape(names)}{more}): no "
                  "replication-offset-checkpoint entry, so the log end offset was used as the "
                  "HW", style="dim")
    stuck = [r for r in reports if r.hw_minus_lso > 0]
    if stuck:
        out.print(f"{len(stuck)} partition(s) with the LSO behind the HW: read_committed "
                  "consumers there cannot read past the LSO", style="dim")


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


def print_problems(result: Inspection) -> None:
    err = stderr_console()
    for p in result.problems:
        err.print(f"kafkatx: warning: {p}", markup=False)
    if not result.partitions:
        err.print("kafkatx: warning: no live partition found", markup=False)


@click.command("lso")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@analysis_options
@format_option(("table", "json", "csv"))
def lso_command(paths: tuple[str, ...], fmt: str, analysis: AnalysisCliOptions) -> None:
    """The last stable offset (LSO) of every partition, and what holds it back.

    PATH may be a broker's log dir, a partition dir, or a folder of copies from several
    brokers. LSO = min(first unstable offset, high watermark) as the broker computes it; the HW
    comes from replication-offset-checkpoint (else the log end offset, said so). Rows where
    the LSO is behind the HW are highlighted: read_committed consumers stop at the LSO.
    """
    result = run_inspection(paths, replace(analysis, predict_restart=False))
    reports = sorted_reports(result.partitions)
    print_problems(result)
    if fmt == "json":
        rows = [{**r.lso_row(), "view": analysis.view} for r in reports]
        sys.stdout.write(json.dumps(rows, indent=1, ensure_ascii=False) + "\n")
    elif fmt == "csv":
        writer = csv.DictWriter(sys.stdout, fieldnames=CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for r in reports:
            writer.writerow(csv_row(r))
    else:
        out = stdout_console()
        print_view_line(analysis.view)
        if reports:
            out.print(lso_table(reports, now_ms=analysis.now_ms))
        table_footer(reports, out)
    sys.stdout.flush()
