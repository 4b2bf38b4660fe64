"""``kafkatx txn-partition``: which coordinator partition holds a transactional id or group id."""

from __future__ import annotations

import json

import click

from kafkatx.cli.output import format_option
from kafkatx.formats.internal_topics import GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC
from kafkatx.semantics.coordinator_partition import (
    DEFAULT_NUM_PARTITIONS,
    java_string_hashcode,
    partition_for,
)


def placement(key: str, num_partitions: int, *, group: bool) -> dict[str, object]:
    """The JSON contract: ``{"id", "hash_code", "partition", "num_partitions", "topic"}``."""
    return {"id": key, "hash_code": java_string_hashcode(key),
            "partition": partition_for(key, num_partitions), "num_partitions": num_partitions,
            "topic": GROUP_METADATA_TOPIC if group else TRANSACTION_STATE_TOPIC}


@click.command("txn-partition")
@click.argument("key", metavar="ID")
@click.option("--partitions", "num_partitions", type=click.IntRange(min=1),
              default=DEFAULT_NUM_PARTITIONS, show_default=True,
              help="Partition count of the topic: transaction.state.log.num.partitions, or with "
                   "--group offsets.topic.num.partitions.")
@click.option("--group", is_flag=True,
              help="ID is a consumer group id: give its __consumer_offsets partition.")
@format_option(("table", "json"))
def txn_partition_command(key: str, num_partitions: int, group: bool, fmt: str) -> None:
    """Print the __transaction_state partition that holds transactional id ID (with --group, the
    __consumer_offsets partition of group ID), as the broker computes it:
    Utils.abs(ID.hashCode()) % partitions, with Java's String.hashCode over UTF-16 code units.
    """
    if any("\udc80" <= ch <= "\udcff" for ch in key):
        raise click.BadParameter("not valid UTF-8 (Kafka ids are UTF-8 strings)",
                                 param_hint="ID")
    info = placement(key, num_partitions, group=group)
    if fmt == "json":
        click.echo(json.dumps(info, ensure_ascii=False))
        return
    rows = [("group id" if group else "transactional id", key),
            ("topic", str(info["topic"])),
            ("partition", f"{info['partition']} of {num_partitions}"),
            ("hash code", f"{info['hash_code']} (Java String.hashCode)")]
    width = max(len(label) for label, _ in rows)
    for label, text in rows:
        click.echo(f"{label:<{width}}  {text}")
