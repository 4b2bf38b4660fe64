"""Names inside a Kafka log dir: partition directories and segment-file names.

Mirrors ``LocalLog#parseTopicPartitionName`` (topic and partition split on the last '-', with
the ``.<uuid>-delete``/``-future``/``-stray`` suffixes) and ``LogFileUtils`` (20-digit offsets).
"""

from __future__ import annotations

import re
from typing import NamedTuple

# Extra suffixes Kafka appends after the normal one (LocalLog / LogFileUtils).
TRANSIENT_SUFFIXES = (".deleted", ".cleaned", ".swap")


class PartitionDirName(NamedTuple):
    topic: str
    partition: int
    state: str  # "live", "delete", "future" or "stray"


def parse_partition_dir(name: str) -> PartitionDirName | None:
    """A partition directory's topic, partition and state (see ``parse_topic_partition_name``)."""
    return parse_topic_partition_name(name)


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


# --------------------------------------------------------------------------------------------
# Exact parsing, as LocalLog#parseTopicPartitionName accepts or rejects a directory name

# Java's \S is ASCII-only: anything but [ \t\n\x0B\f\r].
_J_NON_WS = r"[^ \t\n\x0b\f\r]+"
_DIR_SUFFIX_PATTERNS = {
    state: re.compile(rf"^{_J_NON_WS}-{_J_NON_WS}\.{_J_NON_WS}-{state}")
    for state in ("delete", "future", "stray")
}
_JAVA_PARTITION = re.compile(r"\+?\d+")  # Integer.parseInt after the split on the last '-'
INT32_MAX = 2**31 - 1

REMOTE_LOG_INDEX_CACHE_DIR = "remote-log-index-cache"  # RemoteIndexCache.DIR_NAME, not a partition
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"  # CleanShutdownFileHandler.CLEAN_SHUTDOWN_FILE_NAME
LOCK_FILE = ".lock"  # LogManager.LockFileName

# Kinds of files in a partition dir, keyed by the part after the 20-digit offset prefix.
SEGMENT_FILE_KINDS = {".log": "log", ".index": "index", ".timeindex": "timeindex",
                      ".txnindex": "txnindex"}
SNAPSHOT_FILE_SUFFIX = ".snapshot"  # LogFileUtils.PRODUCER_SNAPSHOT_FILE_SUFFIX
_OFFSET_FILE = re.compile(r"([0-9]+)(\.log|\.index|\.timeindex|\.txnindex|\.snapshot)")
INT64_MAX = 2**63 - 1


def parse_topic_partition_name(name: str) -> PartitionDirName | None:
    """``LocalLog#parseTopicPartitionName``: ``None`` wherever Kafka throws.

    A name ending in ``-delete``/``-future``/``-stray`` must match that suffix's pattern in full
    and loses everything from its last '.'; the rest splits on its last '-' into a non-empty
    topic and an int32 partition (``Integer.parseInt``: an optional '+', decimal digits).
    """
    if "-" not in name:
        return None
    state = "live"
    for candidate, pattern in _DIR_SUFFIX_PATTERNS.items():
        if name.endswith("-" + candidate):
            if not pattern.fullmatch(name):
                return None
            state = candidate
            name = name[: name.rindex(".")]
            break
    index = name.rfind("-")
    topic, partition = name[:index], name[index + 1 :]
    if index < 0 or not topic or not _JAVA_PARTITION.fullmatch(partition):
        return None
    value = int(partition)
    if value > INT32_MAX:
        return None
    return PartitionDirName(topic, value, state)


def parse_offset_file_name(filename: str) -> tuple[int, str, str | None] | None:
    """``<offset>.<log|index|timeindex|txnindex|snapshot>[.deleted|.cleaned|.swap]`` ->
    (offset, ``.log``-style kind suffix, transient suffix or ``None``); ``None`` for any other
    name. The offset is the int64 before the first '.' (``LogFileUtils.offsetFromFileName``)."""
    base, transient = strip_transient_suffix(filename)
    m = _OFFSET_FILE.fullmatch(base)
    if m is None:
        return None
    offset = int(m.group(1))
    if offset > INT64_MAX:
        return None
    return offset, m.group(2), transient
