"""What the analysis commands render alike, in one place: the view line, the partitions' LSO
table and its footer, findings by severity, the cluster summary, warnings on stderr. Each
command renders through this module (never through another command's)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from kafkatx.analysis.findings import ERROR, INFO, KINDS, WARNING, Finding, Step
from kafkatx.analysis.partition_report import PartitionReport
from kafkatx.analysis.timefmt import duration, iso_ms
from kafkatx.analysis.view_names import AFTER_RESTART, VIEW_LINES
from kafkatx.cli.output import StderrLines, StdoutLines, emoji_option, glyph
from kafkatx.cli.plain_table import plain_table_text
from kafkatx.engines.local import Inspection
from kafkatx.formats.internal_topics import METADATA_TOPIC

if TYPE_CHECKING:  # rich is imported by what draws (a table, findings), not by --format json
    from rich.console import Console
    from rich.table import Table


class Col(NamedTuple):
    """A column of a :class:`FitTable`. ``give_way``: 0 for a column that identifies or
    explains its row (never dropped, never cut); else the order in which columns are left out
    when the terminal is too narrow (the highest first). ``wrap``: long text, wrapped at
    spaces in the width left (never cut inside a word shorter than the column)."""

    name: str
    justify: str = "left"
    give_way: int = 0
    wrap: bool = False


TABLE_GAP = 2  # spaces between columns
WRAP_MIN = 16  # a wrapped column is left at least this wide (or its longest word)
WRAP_WORD = 24  # longer words (a record's contents) are folded rather than kept whole


def escape(text: str) -> str:
    """rich's markup escape of ``text`` (which leaves it as it is without a ``[`` or a
    backslash at its end: rich is not imported for those)."""
    if "[" not in text and not text.endswith("\\"):
        return text
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def _plain(text: str) -> str:
    from rich.text import Text

    return Text.from_markup(text).plain if "[" in text else text


class FitTable:
    """A table that fits the console: the columns that identify a row are never cut or
    dropped; less important ones give way first (said under the table), then long text wraps;
    when even the kept columns are wider than the terminal, rows run past it whole (the
    terminal wraps them) rather than lose a digit. Piped output (220 columns) keeps all."""

    def __init__(self, columns: Sequence[Col], *, show_header: bool = True,
                 title: str | None = None) -> None:
        self.columns = list(columns)
        self.show_header = show_header
        self.title = title
        self.rows: list[tuple[list[str], str | None]] = []

    @property
    def row_count(self) -> int:
        return len(self.rows)

    def add_row(self, *cells: str, style: str | None = None) -> None:
        self.rows.append((list(cells), style))

    def _widths(self) -> tuple[list[int], list[int]]:
        """(natural, least) width of each column's content."""
        from rich.cells import cell_len

        natural, least = [], []
        for i, col in enumerate(self.columns):
            texts = [_plain(cells[i]) for cells, _ in self.rows]
            head = [col.name] if self.show_header else []
            nat = max((cell_len(t) for t in [*head, *texts]), default=1)
            natural.append(nat)
            if col.wrap:
                words = [cell_len(w) for t in [*head, *texts] for w in t.split()]
                least.append(min(nat, max(WRAP_MIN, min(max(words, default=0), WRAP_WORD))))
            else:
                least.append(nat)
        return natural, least

    def fit(self, width: int) -> tuple[Table, list[str], int]:
        """The table for ``width`` columns, the columns left out, and its width."""
        from rich.table import Table

        _, least = self._widths()
        shown = list(range(len(self.columns)))

        def needed() -> int:
            return sum(least[i] for i in shown) + TABLE_GAP * (len(shown) - 1)

        dropped: list[str] = []
        while needed() > width:
            candidates = [i for i in shown if self.columns[i].give_way > 0]
            if not candidates:
                break
            worst = max(candidates, key=lambda i: self.columns[i].give_way)
            shown.remove(worst)
            dropped.append(self.columns[worst].name)
        for name in reversed(list(dropped)):  # a narrow one left out early may fit again
            i = next(i for i, c in enumerate(self.columns) if c.name == name)
            if needed() + least[i] + TABLE_GAP <= width:
                shown = sorted([*shown, i])
                dropped.remove(name)
        table = Table(show_header=self.show_header, box=None, pad_edge=False,
                      header_style="bold", padding=(0, TABLE_GAP, 0, 0), title=self.title,
                      title_justify="left")
        for i in shown:
            col = self.columns[i]
            table.add_column(col.name, justify=col.justify,  # type: ignore[arg-type]
                             no_wrap=not col.wrap, min_width=least[i], overflow="fold")
        for cells, style in self.rows:
            table.add_row(*(cells[i] for i in shown), style=style)
        return table, dropped, needed()

    def render(self, out: Console | StdoutLines, *, note: bool = True) -> list[str]:
        """Print the table fitted to ``out``; with ``note``, say which columns gave way.
        Piped (``out`` a :class:`StdoutLines` of a pipe), a table ``plain_table_text`` writes
        needs no rich."""
        plain = None if self.title else plain_table_text(
            out, self.columns, [cells for cells, _ in self.rows], show_header=self.show_header,
            gap=TABLE_GAP)
        if plain is not None:
            out.file.write(plain)
            return []
        table, dropped, needed = self.fit(out.width)
        if needed > out.width:
            out.print(table, width=needed, crop=False)
        else:
            out.print(table)
        if dropped and note:
            said = (f"(left out at {out.width} columns: {', '.join(dropped)}; a wider "
                    "terminal or --format json shows them)")
            out.print(said, style="dim", markup=False, highlight=False,
                      emoji=emoji_option(said))
        return dropped


NOW_SOURCES = {"given": "given with --now",
               "capture": "capture time: the evidence's newest file time; --now to change",
               "data": "each partition's newest record; --now to change"}


def now_text(result: Inspection) -> str:
    """``ages at 2026-...Z (capture time: ...)``: what the ages shown are measured from."""
    when = "-" if result.now_ms is None else iso_ms(result.now_ms)
    if result.now_ms is None:
        return f"ages at: {NOW_SOURCES['data']}"
    return f"ages at: {when} ({NOW_SOURCES.get(result.now_source, result.now_source)})"


def now_dict(result: Inspection) -> dict[str, object]:
    """``{"ms", "source"}`` of the JSON: what ages were measured from (ms None: data)."""
    return {"ms": result.now_ms, "source": result.now_source}


def print_view_line(view: str) -> None:
    """The first line of a table: which view answers (only the restart view says it; the
    view as found is every command's default)."""
    if view == AFTER_RESTART:
        StdoutLines().print(VIEW_LINES[view], style="bold", highlight=False, markup=False,
                            emoji=emoji_option(VIEW_LINES[view]))



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
              with_counts: bool = False) -> FitTable:
    """The ``lso`` columns; ``with_counts`` adds ``inspect``'s segment and transaction figures.
    In a narrow terminal the counts give way first, then pending, HW−LSO and the LSO source;
    the partition, its offsets and its open transactions always stay."""
    brokers = several_log_dirs(reports)
    columns = [Col("topic"), Col("partition", "right")]
    if brokers:
        columns.append(Col("log dir"))
    columns += [Col("log start", "right"), Col("LEO", "right"), Col("HW", "right"),
                Col("LSO", "right"), Col("LSO source", give_way=10),
                Col(glyph("HW−LSO", "HW-LSO"), "right", give_way=11),
                Col("pending", "right", give_way=12)]
    if with_counts:
        columns += [Col("segs", "right", give_way=19), Col("size", "right", give_way=18),
                    Col("producers", "right", give_way=17), Col("commit", "right", give_way=14),
                    Col("abort", "right", give_way=15), Col("open", "right", give_way=13),
                    Col("longest txn", "right", give_way=16)]
    columns.append(Col("open transactions (pid/epoch@offset, age)", wrap=True))
    t = FitTable(columns)
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


STUCK_HELP = ("Only the partitions whose LSO is behind the HW in the table (read_committed "
              "consumers stuck there); findings are still listed in full.")
SCREENFUL_PIPED = 50  # rows of a partition table piped or redirected before it is summed up


def stuck(report: PartitionReport) -> bool:
    """The LSO is behind the HW: read_committed consumers stop short of the HW."""
    return report.hw_minus_lso > 0


def worst_first(reports: Sequence[PartitionReport], out: Console
                ) -> tuple[list[PartitionReport], int]:
    """More partitions than a screenful: the worst first (the most records behind the LSO,
    then the most open transactions), as many as fit; and how many are left out."""
    room = max(20, out.height - 12) if out.is_terminal else SCREENFUL_PIPED
    if len(reports) <= room:
        return list(reports), 0
    ranked = sorted(reports, key=lambda r: (-r.hw_minus_lso, -len(r.open_transactions),
                                            r.topic, r.partition))
    return ranked[:room], len(reports) - room


def table_footer(reports: Sequence[PartitionReport], out: Console | StdoutLines) -> None:
    # KRaft keeps the metadata log's high watermark in memory, never in a checkpoint file
    unknown = [r for r in reports if r.high_watermark is None and r.topic != METADATA_TOPIC]
    if unknown:
        names = ", ".join(f"{r.topic}-{r.partition}" for r in unknown[:5])
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        said = (f"HW unknown for {len(unknown)} partition(s) ({escape(names)}{more}): no "
                "replication-offset-checkpoint entry, so the log end offset was used as the HW")
        out.print(said, style="dim", emoji=emoji_option(said))
    stuck = [r for r in reports if r.hw_minus_lso > 0]
    if stuck:
        said = (f"{len(stuck)} partition(s) with the LSO behind the HW: read_committed "
                "consumers there cannot read past the LSO")
        out.print(said, style="dim", emoji=emoji_option(said))


def print_problems(result: Inspection) -> None:
    lines = [f"kafkatx: warning: {p}" for p in result.problems]
    if not result.partitions:
        lines.append("kafkatx: warning: no live partition found")
    if lines:  # rich's stderr console only for what a plain line cannot say
        err = StderrLines()
        for line in lines:
            err.print(line, markup=False, emoji=emoji_option(line))



PER_KIND = 10  # findings shown per kind in tables without --all
SEVERITY_STYLE = {ERROR: "bold red", WARNING: "yellow", INFO: "cyan"}


def _where(f: Finding) -> str:
    if f.topic is None:
        return "-"
    return f.topic if f.partition is None else f"{f.topic}-{f.partition}"


def steps_lines(steps: Sequence[Step], indent: str = "        ") -> list[str]:
    """``remediation:`` then one numbered step a line, each command whole on its own line
    (one step: on the ``remediation:`` line itself)."""
    if len(steps) == 1:
        text = steps[0].command or steps[0].what
        return [f"{indent}[green]remediation:[/] {escape(text)}"]
    lines = [f"{indent}[green]remediation:[/]"]
    for n, step in enumerate(steps, 1):
        lines.append(f"{indent}  {n}. {escape(step.what)}" + (":" if step.command else ""))
        if step.command:
            lines.append(f"{indent}     {escape(step.command)}")
    return lines


def plan_key(f: Finding) -> tuple[object, ...]:
    """The transaction a finding's plan is for: one plan however many copies hold it."""
    return (f.kind, f.topic, f.partition, f.producer_id, f.producer_epoch, f.offset)


def merged_steps(findings: Sequence[Finding]) -> tuple[Step, ...]:
    """Several copies' steps, step by step, each different step once (an export per copy,
    the live checks and the abort once)."""
    plans = [f.remediation_steps for f in findings]
    merged: list[Step] = []
    for i in range(max(len(p) for p in plans)):
        for plan in plans:
            if i < len(plan) and plan[i] not in merged:
                merged.append(plan[i])
    return tuple(merged)


def finding_lines(f: Finding, steps: Sequence[Step] | None = None) -> list[str]:
    """``severity kind topic-partition offset N: message (location)``, then the remediation
    (``steps``: the plan to show for it, None for its own)."""
    style = SEVERITY_STYLE.get(f.level, "")
    head = f"[{style}]{f.level:<7}[/] [bold]{escape(f.kind)}[/] {escape(_where(f))}"
    if f.offset is not None:
        head += f" offset {f.offset}"
    head += f": {escape(f.message)}"
    if f.location:
        head += f" [dim]({escape(f.location)})[/]"
    lines = [head]
    steps = f.remediation_steps if steps is None else steps
    if steps:
        lines += steps_lines(steps)
    return lines


def render_findings(findings: Sequence[Finding], out: Console, *, show_all: bool) -> None:
    """Ranked findings, at most ``PER_KIND`` of each kind unless ``show_all``; then what each
    kind means."""
    if not findings:
        out.print("no findings", style="green")
        return
    shown: Counter[str] = Counter()
    plans: dict[tuple[object, ...], list[Finding]] = {}
    for f in findings:
        if len(f.remediation_steps) > 1:
            plans.setdefault(plan_key(f), []).append(f)
    planned: set[tuple[object, ...]] = set()
    for f in findings:
        shown[f.kind] += 1
        if not show_all and shown[f.kind] > PER_KIND:
            continue
        key = plan_key(f)
        steps = None
        if len(plans.get(key, ())) > 1:  # several copies of one transaction: one plan
            steps = [] if key in planned else list(merged_steps(plans[key]))
            planned.add(key)
        for line in finding_lines(f, steps):
            out.print(line, highlight=False, soft_wrap=True)
        if steps == []:
            out.print("        [green]remediation:[/] the plan above (one for every copy)",
                      highlight=False)
    hidden = {k: n - PER_KIND for k, n in shown.items() if not show_all and n > PER_KIND}
    for kind, n in hidden.items():
        out.print(f"(+{n} more {escape(kind)}; --all shows every finding)", style="dim")
    out.print()
    for kind in shown:
        meaning = KINDS[kind].explanation if kind in KINDS else ""
        out.print(f"[dim]{escape(kind)}: {escape(meaning)}[/]", highlight=False)


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def summary_text(counts: dict[str, int]) -> str:
    """``N errors, M warnings, K info``."""
    return (f"{plural(counts[ERROR], 'error')}, {plural(counts[WARNING], 'warning')}, "
            f"{counts[INFO]} info")


def severity_counts(findings: Sequence[Finding]) -> dict[str, int]:
    counts = Counter(f.level for f in findings)
    return {ERROR: counts[ERROR], WARNING: counts[WARNING], INFO: counts[INFO]}



def render_cluster_summary(c: dict[str, Any], out: Console) -> None:
    """The few lines ``inspect`` shows of a metadata log (``kafkatx cluster`` has the rest)."""
    s = c["source"]
    span = (f", offsets {s['log_start_offset']}..{s['log_end_offset'] - 1}"
            if s["log_end_offset"] is not None else "")
    out.print(f"[bold]cluster[/] (KRaft metadata log {escape(c['path'])}{span})",
              highlight=False)
    mv = c["metadata_version"]
    parts = [f"metadata.version {mv['level']} ({mv['release']})" if mv
             else "metadata.version not finalized"]
    tv_changes = [f for f in c["feature_history"] if f["feature"] == "transaction.version"]
    tv = c["features"].get("transaction.version", 0)
    text = f"transaction.version {tv}"
    if len(tv_changes) > 1 and tv_changes[-1]["metadata_offset"] is not None:
        text += (f" since metadata offset {tv_changes[-1]['metadata_offset']} "
                 f"({tv_changes[-2]['level']} before)")
    parts.append(text)
    partitions = sum(t["partition_count"] for t in c["topics"])
    parts.append(f"{len(c['topics'])} topics, {partitions} partitions")
    out.print("  " + "; ".join(parts), highlight=False)
    brokers = ", ".join(f"{b['broker_id']} (epoch {b['broker_epoch']}, "
                        f"{'fenced' if b['fenced'] else 'unfenced'})" for b in c["brokers"])
    blocks = c["producer_id_blocks"]
    ids = (f"producer ids {blocks[0]['first_producer_id']}..{blocks[-1]['last_producer_id']} "
           f"in {len(blocks)} block(s), next {c['next_producer_id']}" if blocks
           else "no producer-id block")
    out.print(f"  brokers: {brokers or '-'}; {ids}", highlight=False)
    deleted = [e for e in c["topic_history"] if e["event"] == "deleted"]
    if deleted:
        out.print("  deleted topics: " + ", ".join(
            f"{escape(e['topic'])} (id {e['topic_id']}, metadata offset "
            f"{e['metadata_offset']})" for e in deleted), highlight=False)
    for line in c["problems"]:
        out.print(f"  [yellow]problem[/] {escape(line)}", highlight=False)


def shorten(v: Any, width: int = 60) -> str:
    """A cell's text cut to ``width`` with an ellipsis (``null`` for None)."""
    s = "null" if v is None else str(v)
    if len(s) <= width:
        return s
    more = glyph("…", "...")
    return s[: width - len(more)] + more
