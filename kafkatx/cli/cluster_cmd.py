"""``kafkatx cluster``: the cluster a KRaft node's metadata log describes."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kafkatx.analysis.cluster_view import cluster_dict
from kafkatx.analysis.timefmt import iso_ms
from kafkatx.cli.output import format_option, glyph, stderr_console, stdout_console, write_json
from kafkatx.engines.cluster_metadata import cluster_views
from kafkatx.errors import KafkatxError

PARTITIONS_SHOWN = 10  # per topic in tables without --all


def load_clusters(paths: tuple[str, ...], as_of_offset: int | None) -> list[dict[str, Any]]:
    return [cluster_dict(v) for v in cluster_views(paths, as_of_offset=as_of_offset)]


@click.command("cluster", epilog=(
    "\b\nExamples:\n"
    "  kafkatx cluster fixtures/kraft\n"
    "  kafkatx cluster fixtures/kraft -f json > cluster.json"))
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("--as-of-offset", type=click.IntRange(min=0),
              help="The cluster as it stood after metadata log offset N.")
@click.option("--all", "show_all", is_flag=True,
              help=f"Every partition (tables show {PARTITIONS_SHOWN} per topic).")
@format_option(("table", "json", "jsonl"), why={
    "csv": "a metadata log's state is nested (topics, brokers, features); use json or jsonl"})
def cluster_command(paths: tuple[str, ...], as_of_offset: int | None, show_all: bool,
                    fmt: str) -> None:
    """Topics, partitions, leaders, configs, features, brokers and producer-id blocks, from a
    KRaft metadata log (__cluster_metadata-0: the newest snapshot, then the log after it).

    PATH may be the __cluster_metadata-0 dir, a log dir holding it, or a folder of copies from
    several nodes. Read-only.
    """
    clusters = load_clusters(paths, as_of_offset)
    if not clusters:
        raise KafkatxError(f"{' '.join(paths)}: no __cluster_metadata-N directory found (a KRaft "
                           "node keeps it in its metadata.log.dir)")
    if fmt in ("json", "jsonl"):
        write_json(clusters, fmt)
        return
    err = stderr_console()
    out = stdout_console()
    for c in clusters:
        for line in c["problems"]:
            err.print(f"[yellow]problem[/] {escape(line)}", highlight=False)
        render_cluster(c, out, show_all=show_all)


def _source_line(c: dict[str, Any]) -> str:
    s = c["source"]
    parts = [f"metadata log {c['path']}"]
    if s["log_end_offset"] is not None:
        parts.append(f"offsets {s['log_start_offset']}..{s['log_end_offset'] - 1}")
    if s["snapshot"]:
        parts.append(f"image: snapshot at {s['snapshot_end_offset']} + log tail")
    else:
        parts.append("image: log from offset 0")
    if s["as_of_offset"] is not None:
        parts.append(f"as of offset {s['as_of_offset']}")
    parts.append(f"history from offset {s['history_start_offset']}")
    return ", ".join(parts)


def _table(*columns: str) -> Table:
    t = Table(box=None, pad_edge=False, header_style="bold", padding=(0, 2, 0, 0))
    for col in columns:
        t.add_column(col, overflow="fold")
    return t


def _ids(xs: list[int]) -> str:
    return ",".join(map(str, xs)) or "-"


def render_cluster(c: dict[str, Any], out: Console, *, show_all: bool) -> None:
    out.print(f"[bold]kafkatx cluster[/] {escape(_source_line(c))}", highlight=False)
    qs = c["quorum_state"]
    if qs:
        out.print(f"quorum-state: leader {qs['leader_id']} in epoch {qs['leader_epoch']}, "
                  f"voted for {qs['voted_id']}", highlight=False)
    for r in c["raft_leaders"]:
        out.print(f"  quorum epoch {r['epoch']}: leader {r['leader_id']} from metadata offset "
                  f"{r['metadata_offset']} ({iso_ms(r['timestamp'])})", highlight=False)
    mv = c["metadata_version"]
    feats = ", ".join(f"{k}={v}" for k, v in c["features"].items() if k != "metadata.version")
    out.print(f"metadata.version: {mv['level']} ({mv['release']})" if mv else
              "metadata.version: not finalized", highlight=False)
    out.print(f"features: {feats or '-'}", highlight=False)
    if c["open_metadata_transaction"]:
        out.print(f"[yellow]open metadata transaction from offset "
                  f"{c['open_metadata_transaction']['metadata_offset']} (not applied)[/]")

    out.print("\n[bold]brokers[/]")
    t = _table("id", "epoch", "state", "endpoints", "rack", "log dirs")
    for b in c["brokers"]:
        state = "fenced" if b["fenced"] else "unfenced"
        if b["in_controlled_shutdown"]:
            state += ", controlled shutdown"
        t.add_row(str(b["broker_id"]), str(b["broker_epoch"]), state, " ".join(b["endpoints"]),
                  b["rack"] or "-", " ".join(b["log_dirs"]) or "-")
    out.print(t)

    out.print(f"security: {len(c['acls'])} ACLs, {len(c['scram_users'])} SCRAM credentials, "
              f"{len(c['delegation_tokens'])} delegation tokens; client quotas for "
              f"{len(c['client_quotas'])} entities", highlight=False)

    out.print("\n[bold]topics[/]")
    t = _table("topic", "topic id", "partitions", "created (offset)", "configs")
    for topic in c["topics"]:
        cfg = " ".join(f"{k}={v}" for k, v in sorted(topic["configs"].items())) or "-"
        created = topic["created"]["metadata_offset"]
        t.add_row(topic["topic"], topic["topic_id"], str(topic["partition_count"]),
                  "snapshot" if created is None else str(created), cfg)
    out.print(t)
    for other in c["configs"]:
        cfg = " ".join(f"{k}={v}" for k, v in other["configs"].items())
        name = other["resource_name"] or "(cluster default)"
        out.print(f"{other['resource_type']} {escape(name)} configs: {escape(cfg)}",
                  highlight=False)

    out.print("\n[bold]partitions[/]")
    t = _table("partition", "leader", "leader epoch", "isr", "replicas",
               "leader epochs (epoch:leader@metadata offset)")
    for topic in c["topics"]:
        parts = topic["partitions"]
        for p in parts if show_all else parts[:PARTITIONS_SHOWN]:
            history = " ".join(
                f"{e['leader_epoch']}:{e['leader']}@"
                f"{'snapshot' if e['metadata_offset'] is None else e['metadata_offset']}"
                for e in p["leader_epoch_history"])
            t.add_row(f"{topic['topic']}-{p['partition']}", str(p["leader"]),
                      str(p["leader_epoch"]), _ids(p["isr"]), _ids(p["replicas"]), history)
        if not show_all and len(parts) > PARTITIONS_SHOWN:
            more = glyph("…", "...")
            t.add_row(f"[dim]{more} {len(parts) - PARTITIONS_SHOWN} more of {topic['topic']} "
                      "(--all)[/]", "", "", "", "", "")
    out.print(t)

    out.print("\n[bold]history[/]")
    t = _table("metadata offset", "time (UTC)", "change")
    events: list[tuple[int, int, str]] = []
    for f in c["feature_history"]:
        rel = f" ({f['release']})" if "release" in f else ""
        events.append((f["metadata_offset"], f["timestamp"],
                       f"feature {f['feature']} = {f['level']}{rel}"))
    for e in c["topic_history"]:
        events.append((e["metadata_offset"], e["timestamp"],
                       f"topic {e['topic']} {e['event']} (id {e['topic_id']})"))
    for cfg in c["config_history"]:
        what = "deleted" if cfg["value"] is None else f"= {cfg['value']}"
        name = cfg["resource_name"] or "(cluster default)"
        events.append((cfg["metadata_offset"], cfg["timestamp"],
                       f"config {cfg['resource_type']} {name}: {cfg['name']} {what}"))
    for b in c["producer_id_blocks"]:
        events.append((b["metadata_offset"], b["timestamp"],
                       f"producer ids {b['first_producer_id']}..{b['last_producer_id']} to "
                       f"broker {b['broker_id']} (epoch {b['broker_epoch']})"))
    events.sort(key=lambda e: (-1 if e[0] is None else e[0]))
    for offset, ts, text in events:
        t.add_row("snapshot" if offset is None else str(offset), iso_ms(ts), escape(text))
    out.print(t)
    out.print(f"next producer id: {c['next_producer_id']}", highlight=False)
    for p in c["replay_problems"]:
        out.print(f"[yellow]replay problem at offset {p['metadata_offset']}: "
                  f"{escape(p['message'])}[/]")
    out.print()


