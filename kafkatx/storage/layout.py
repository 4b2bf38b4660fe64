"""Names inside a Kafka log dir: partition directories and segment-file names.

Mirrors ``LocalLog#parseTopicPartitionName`` (topic and partition split on the last '-', with
the ``.<uuid>-delete``/``-future``/``-stray`` suffixes) and ``LogFileUtils`` (20-digit offsets).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TRANSACTION_STATE_TOPIC = "__transaction_state"
CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"

_SUFFIXED = re.compile(r"^(\S+)-(\S+)\.(\S+)-(delete|future|stray)$")
_PLAIN = re.compile(r"^(.+)-(\d+)$")

# Extra suffixes Kafka appends after the normal one (LocalLog / LogFileUtils).
TRANSIENT_SUFFIXES = (".deleted", ".cleaned", ".swap")


@dataclass(frozen=True, slots=True)
class PartitionDirName:
    topic: str
    partition: int
    state: str  # "live", "delete", "future" or "stray"


def parse_partition_dir(name: str) -> PartitionDirName | None:
    m = _SUFFIXED.match(name)
    if m and m.group(2).isdigit():
        return PartitionDirName(m.group(1), int(m.group(2)), m.group(4))
    m = _PLAIN.match(name)
    if m:
        return PartitionDirName(m.group(1), int(m.group(2)), "live")
    return None


def strip_transient_suffix(filename: str) -> tuple[str, str | None]:
    """``00000000000000000000.log.deleted`` -> (``00000000000000000000.log``, ``.deleted``)."""
    for suffix in TRANSIENT_SUFFIXES:
        if filename.endswith(suffix):
            return filename[: -len(suffix)], suffix
    return filename, None


def offset_from_filename(filename: str) -> int | None:
    """``LogFileUtils.offsetFromFileName``: the digits before the first '.'."""
    head = filename.split(".", 1)[0]
    return int(head) if head.isdigit() else None
