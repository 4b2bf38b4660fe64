"""``kafkatx txn-partition``: which coordinator partition holds a transactional id or group id."""

from __future__ import annotations

import csv
import json
import sys

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


_COUNT = click.IntRange(min=1)
_ID_IS_GROUP = "\0id"  # a bare --group: the old switch, ID is a group id


@click.command("txn-partition", epilog="""\b
Examples:
  kafkatx txn-partition checkout-0
  kafkatx txn-partition --group payments-app --consumer-offsets-partitions 50 -f json""")
@click.argument("key", metavar="[ID]", required=False)
@click.option("--transactional-id", "transactional_id", metavar="ID", default=None,
              help="The transactional id (the same as giving ID), as timeline's option.")
@click.option("-g", "--group", metavar="NAME", default=None, is_flag=False,
              flag_value=_ID_IS_GROUP,
              help="A consumer group id, as groups' --group NAME: its __consumer_offsets "
                   "partition (a bare --group after ID, the old switch, still works).")
@click.option("--transaction-state-partitions", "state_partitions", type=_COUNT, default=None,
              metavar="N", help="transaction.state.log.num.partitions, as the analysis "
              f"commands' option (default {DEFAULT_NUM_PARTITIONS}).")
@click.option("--consumer-offsets-partitions", "offsets_partitions", type=_COUNT,
              default=None, metavar="N",
              help=f"offsets.topic.num.partitions, with --group (default "
                   f"{DEFAULT_NUM_PARTITIONS}).")
@click.option("--partitions", "either_partitions", type=_COUNT, default=None, hidden=True,
              help="Deprecated: the partition count of whichever topic is asked.")
@format_option(("table", "json", "jsonl", "csv"))
def txn_partition_command(key: str | None, transactional_id: str | None, group: str | None,
                          state_partitions: int | None, offsets_partitions: int | None,
                          either_partitions: int | None, fmt: str) -> None:
    """Print the __transaction_state partition that holds transactional id ID (with --group, the
    __consumer_offsets partition of group ID), as the broker computes it:
    Utils.abs(ID.hashCode()) % partitions, with Java's String.hashCode over UTF-16 code units.
    """
    if group == _ID_IS_GROUP:
        key, group = None, key
    given = [v for v in (key, transactional_id, group) if v is not None]
    if len(given) != 1:
        raise click.UsageError("give one id: ID (or --transactional-id ID), or --group NAME")
    key = given[0]
    is_group = group is not None
    if (offsets_partitions if not is_group else state_partitions) is not None:
        wrong = "--transaction-state-partitions" if is_group else "--consumer-offsets-partitions"
        raise click.UsageError(f"{wrong} is the other topic's count: "
                               + ("--consumer-offsets-partitions goes with --group" if is_group
                                  else "--transaction-state-partitions goes with a "
                                       "transactional id"))
    count = offsets_partitions if is_group else state_partitions
    num_partitions = count or either_partitions or DEFAULT_NUM_PARTITIONS
    if any("\udc80" <= ch <= "\udcff" for ch in key):
        raise click.BadParameter("not valid UTF-8 (Kafka ids are UTF-8 strings)",
                                 param_hint="ID")
    info = placement(key, num_partitions, group=is_group)
    if fmt in ("json", "jsonl"):  # one object: the same line either way
        click.echo(json.dumps(info, ensure_ascii=False))
        return
    if fmt == "csv":
        writer = csv.DictWriter(sys.stdout, fieldnames=list(info), lineterminator="\n")
        writer.writeheader()
        writer.writerow(info)
        return
    rows = [("group id" if is_group else "transactional id", key),
            ("topic", str(info["topic"])),
            ("partition", f"{info['partition']} of {num_partitions}"),
            ("hash code", f"{info['hash_code']} (Java String.hashCode)")]
    width = max(len(label) for label, _ in rows)
    for label, text in rows:
        click.echo(f"{label:<{width}}  {text}")
