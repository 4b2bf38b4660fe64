"""The small text files of a log dir: offset checkpoints, leader epochs, partition.metadata,
meta.properties, and Kafka's topic-id ``Uuid`` string form.

Mirrors ``org.apache.kafka.server.common.CheckpointFile`` (``CheckpointReadBuffer`` /
``CheckpointWriteBuffer``), ``OffsetCheckpointFile`` and ``LeaderEpochCheckpointFile`` (their
``Formatter``s), ``PartitionMetadataReadBuffer`` / ``PartitionMetadata#encode``,
``MetaProperties`` / ``MetaPropertiesVersion`` / ``PropertiesUtils`` (a ``java.util.Properties``
file) and ``org.apache.kafka.common.Uuid#toString/fromString``.

Readers are tolerant: where Kafka throws at the first bad line, these report every bad line as a
``FormatError`` (byte position of the line's start; the message names the 1-based line number)
and keep the good ones.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import field
from datetime import UTC, datetime
from typing import TypeVar

from kafkatx.errors import FormatError
from kafkatx.lazy_dataclass import dataclass

CHECKPOINT_VERSION = 0  # OffsetCheckpointFile / LeaderEpochCheckpointFile CURRENT_VERSION

# Checkpoint files at the root of a log dir (all OffsetCheckpointFile: `topic partition offset`).
CHECKPOINT_FILE_NAMES: Mapping[str, str] = {
    "replication-offset-checkpoint":
        "high watermark of each partition (ReplicaManager HighWatermarkFilename)",
    "recovery-point-offset-checkpoint":
        "offset up to which each log is flushed and known good; segments above it are recovered "
        "after an unclean shutdown (LogManager RECOVERY_POINT_CHECKPOINT_FILE)",
    "log-start-offset-checkpoint":
        "log start offset of each partition, after retention or DeleteRecords "
        "(LogManager LOG_START_OFFSET_CHECKPOINT_FILE)",
    "cleaner-offset-checkpoint":
        "first dirty offset of each compacted partition: log cleaner progress "
        "(LogCleanerManager offsetCheckpointFile)",
}
LEADER_EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint"  # in each partition directory
PARTITION_METADATA_FILE = "partition.metadata"  # in each partition directory
META_PROPERTIES_FILE = "meta.properties"  # at the root of a log dir

INT32_RANGE = (-(2**31), 2**31 - 1)
INT64_RANGE = (-(2**63), 2**63 - 1)

_JAVA_WS = re.compile(r"[ \t\n\x0b\f\r]+")  # Java regex \s+
_LINE_END = re.compile(rb"\r\n|\r|\n")  # BufferedReader#readLine terminators
_JAVA_INT = re.compile(r"[+-]?[0-9]+")


def _problem_dicts(problems: Iterable[FormatError]) -> list[dict[str, object]]:
    return [p.to_dict() for p in problems]


# --------------------------------------------------------------------------------------------
# Java-compatible pieces


def _lines(data: bytes) -> list[tuple[int, bytes]]:
    """(byte position, content) of each line, as ``BufferedReader#readLine`` splits them."""
    out: list[tuple[int, bytes]] = []
    start = 0
    for m in _LINE_END.finditer(data):
        out.append((start, data[start : m.start()]))
        start = m.end()
    if start < len(data):
        out.append((start, data[start:]))
    return out


def _java_int(text: str, bounds: tuple[int, int]) -> int | None:
    """``Integer.parseInt`` / ``Long.parseLong`` (ASCII digits), or ``None`` when it would throw."""
    if not _JAVA_INT.fullmatch(text):
        return None
    value = int(text)
    return value if bounds[0] <= value <= bounds[1] else None


def _java_split_ws(line: str) -> list[str]:
    """``line.split("\\\\s+")``: a leading empty part is kept, trailing empty parts dropped."""
    if not _JAVA_WS.search(line):
        return [line]
    parts = _JAVA_WS.split(line)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _as_bytes(data: str | bytes | memoryview) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


# --------------------------------------------------------------------------------------------
# Kafka Uuid (topic ids, directory ids)

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID.toString()
_UUID_TEXT = re.compile(r"[A-Za-z0-9_-]{22}(==)?")


def uuid_to_bytes(text: str) -> bytes:
    """``Uuid#fromString``: URL-safe base64 (22 characters, padding optional) to 16 bytes.

    Raises ``FormatError`` for anything Java's URL-safe decoder would not turn into 16 bytes.
    """
    if len(text) > 24 or not _UUID_TEXT.fullmatch(text):
        raise FormatError(f"{text!r} is not a base64 (URL-safe) encoded 16-byte Uuid",
                          field="uuid")
    return base64.urlsafe_b64decode(text[:22] + "==")


def uuid_from_bytes(raw: bytes) -> str:
    """``Uuid#toString``: 16 bytes (most significant long first) to 22-character base64."""
    if len(raw) != 16:
        raise ValueError(f"a Uuid is 16 bytes, got {len(raw)}")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


# --------------------------------------------------------------------------------------------
# CheckpointFile (version line, count line, entry lines)

T = TypeVar("T")


def _read_checkpoint(
    data: bytes,
    path: str | None,
    parse_line: Callable[[str, int], T | str],
) -> tuple[int | None, int | None, tuple[T, ...], tuple[FormatError, ...]]:
    """``CheckpointFile.CheckpointReadBuffer#read``, tolerant. ``parse_line`` returns an entry or
    an error message."""
    problems: list[FormatError] = []
    lines = _lines(data)
    if not lines:
        return None, None, (), ()  # empty file: no entries, as in Kafka

    def bad(pos: int, number: int, what: str, message: str) -> None:
        problems.append(FormatError(f"line {number}: {message}", path=path, position=pos,
                                    field=what))

    def text_of(index: int, what: str) -> str | None:
        pos, raw = lines[index]
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(FormatError(f"line {index + 1}: not valid UTF-8", path=path,
                                        position=pos + exc.start, field=what))
            return None

    version: int | None = None
    text = text_of(0, "version")
    if text is not None:
        version = _java_int(text, INT32_RANGE)
        if version is None:
            bad(0, 1, "version", f"malformed version line {text!r}")
        elif version != CHECKPOINT_VERSION:
            bad(0, 1, "version",
                f"unrecognised version {version}, expected version {CHECKPOINT_VERSION}")
    if len(lines) == 1:
        return version, None, (), tuple(problems)  # Kafka: no entries

    count: int | None = None
    text = text_of(1, "count")
    if text is not None:
        count = _java_int(text, INT32_RANGE)
        if count is None:
            bad(lines[1][0], 2, "count", f"malformed entry count line {text!r}")
    entries: list[T] = []
    for index in range(2, len(lines)):
        text = text_of(index, "entry")
        if text is None:
            continue
        result = parse_line(text, index + 1)
        if isinstance(result, str):
            bad(lines[index][0], index + 1, "entry", f"malformed line {text!r}: {result}")
        else:
            entries.append(result)
    found = len(lines) - 2
    if count is not None and found != count:
        bad(lines[1][0], 2, "count",
            f"expected {count} entries but the file has {found} entry lines")
    return version, count, tuple(entries), tuple(problems)


def _checkpoint_text(lines: Iterable[str], version: int) -> bytes:
    """``CheckpointFile.CheckpointWriteBuffer#write`` (``BufferedWriter#newLine`` is ``\\n``)."""
    body = list(lines)
    return "".join(f"{line}\n" for line in [str(version), str(len(body)), *body]).encode("utf-8")


# --------------------------------------------------------------------------------------------
# OffsetCheckpointFile: `topic partition offset`


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointEntry:
    """One ``topic partition offset`` line; ``line_number`` (1-based) is not compared."""

    topic: str
    partition: int
    offset: int
    line_number: int | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, object]:
        return {"topic": self.topic, "partition": self.partition, "offset": self.offset,
                "line_number": self.line_number}


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCheckpoint:
    """An offset checkpoint file as read. ``version``/``declared_count`` are ``None`` when absent
    or malformed (an empty file has neither and no entries, as in Kafka)."""

    version: int | None
    declared_count: int | None
    entries: tuple[CheckpointEntry, ...]
    problems: tuple[FormatError, ...] = ()
    path: str | None = field(default=None, compare=False)

    def as_map(self) -> dict[tuple[str, int], int]:
        """(topic, partition) -> offset, later lines winning, like ``OffsetCheckpointFile#read``."""
        return {(e.topic, e.partition): e.offset for e in self.entries}

    def to_dict(self) -> dict[str, object]:
        return {"path": self.path, "version": self.version,
                "declared_count": self.declared_count,
                "entries": [e.to_dict() for e in self.entries],
                "problems": _problem_dicts(self.problems)}


def _parse_offset_line(text: str, number: int) -> CheckpointEntry | str:
    """``OffsetCheckpointFile.Formatter#fromString``."""
    parts = _java_split_ws(text)
    if len(parts) != 3:
        return f"expected 3 whitespace-separated fields, found {len(parts)}"
    partition = _java_int(parts[1], INT32_RANGE)
    if partition is None:
        return f"partition {parts[1]!r} is not an int32"
    offset = _java_int(parts[2], INT64_RANGE)
    if offset is None:
        return f"offset {parts[2]!r} is not an int64"
    return CheckpointEntry(topic=parts[0], partition=partition, offset=offset,
                           line_number=number)


def read_offset_checkpoint(
    data: str | bytes | memoryview, *, path: str | None = None
) -> OffsetCheckpoint:
    """Read ``replication-offset-checkpoint``, ``recovery-point-offset-checkpoint``,
    ``log-start-offset-checkpoint`` or ``cleaner-offset-checkpoint``."""
    version, count, entries, problems = _read_checkpoint(_as_bytes(data), path,
                                                         _parse_offset_line)
    return OffsetCheckpoint(version=version, declared_count=count, entries=entries,
                            problems=problems, path=path)


def build_offset_checkpoint(
    entries: Iterable[CheckpointEntry], *, version: int = CHECKPOINT_VERSION
) -> bytes:
    """Kafka's text for these entries (``OffsetCheckpointFile.Formatter#toString``)."""
    lines = []
    for e in entries:
        if not e.topic or _JAVA_WS.search(e.topic):
            raise ValueError(f"topic {e.topic!r} is empty or contains whitespace")
        lines.append(f"{e.topic} {e.partition} {e.offset}")
    return _checkpoint_text(lines, version)


# --------------------------------------------------------------------------------------------
# LeaderEpochCheckpointFile: `epoch start_offset`


@dataclass(frozen=True, slots=True, kw_only=True)
class EpochEntry:
    """One ``leader_epoch start_offset`` line; ``line_number`` is not compared."""

    epoch: int
    start_offset: int
    line_number: int | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, object]:
        return {"epoch": self.epoch, "start_offset": self.start_offset,
                "line_number": self.line_number}


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderEpochCheckpoint:
    """A ``leader-epoch-checkpoint`` file as read."""

    version: int | None
    declared_count: int | None
    entries: tuple[EpochEntry, ...]
    problems: tuple[FormatError, ...] = ()
    path: str | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, object]:
        return {"path": self.path, "version": self.version,
                "declared_count": self.declared_count,
                "entries": [e.to_dict() for e in self.entries],
                "problems": _problem_dicts(self.problems)}


def _parse_epoch_line(text: str, number: int) -> EpochEntry | str:
    """``LeaderEpochCheckpointFile.Formatter#fromString``."""
    parts = _java_split_ws(text)
    if len(parts) != 2:
        return f"expected 2 whitespace-separated fields, found {len(parts)}"
    epoch = _java_int(parts[0], INT32_RANGE)
    if epoch is None:
        return f"leader epoch {parts[0]!r} is not an int32"
    start = _java_int(parts[1], INT64_RANGE)
    if start is None:
        return f"start offset {parts[1]!r} is not an int64"
    return EpochEntry(epoch=epoch, start_offset=start, line_number=number)


def read_leader_epoch_checkpoint(
    data: str | bytes | memoryview, *, path: str | None = None
) -> LeaderEpochCheckpoint:
    version, count, entries, problems = _read_checkpoint(_as_bytes(data), path,
                                                         _parse_epoch_line)
    return LeaderEpochCheckpoint(version=version, declared_count=count, entries=entries,
                                 problems=problems, path=path)


def build_leader_epoch_checkpoint(
    entries: Iterable[EpochEntry], *, version: int = CHECKPOINT_VERSION
) -> bytes:
    return _checkpoint_text((f"{e.epoch} {e.start_offset}" for e in entries), version)


# --------------------------------------------------------------------------------------------
# partition.metadata: `version: 0\ntopic_id: <Uuid>`

PARTITION_METADATA_VERSION = 0
_KEY_SEP = re.compile(r":[ \t\n\x0b\f\r]+")  # PartitionMetadataReadBuffer ":\\s+"


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionMetadata:
    """A ``partition.metadata`` file as read (``None`` where a line is missing or malformed)."""

    version: int | None
    topic_id: str | None
    problems: tuple[FormatError, ...] = ()
    path: str | None = field(default=None, compare=False)

    @property
    def topic_id_bytes(self) -> bytes | None:
        return None if self.topic_id is None else uuid_to_bytes(self.topic_id)

    def to_dict(self) -> dict[str, object]:
        return {"path": self.path, "version": self.version, "topic_id": self.topic_id,
                "problems": _problem_dicts(self.problems)}


def read_partition_metadata(
    data: str | bytes | memoryview, *, path: str | None = None
) -> PartitionMetadata:
    """``PartitionMetadataReadBuffer#read``: a ``version`` line (any value >= 0 is accepted, for
    downgrades) then a ``topic_id`` line holding a non-zero Uuid; later lines are ignored."""
    raw = _as_bytes(data)
    lines = _lines(raw)
    problems: list[FormatError] = []

    def line_value(index: int, key: str) -> tuple[int, str] | None:
        if index >= len(lines):
            problems.append(FormatError(f"line {index + 1}: missing the {key!r} line", path=path,
                                        position=len(raw), field=key))
            return None
        pos, content = lines[index]
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(FormatError(f"line {index + 1}: not valid UTF-8", path=path,
                                        position=pos + exc.start, field=key))
            return None
        parts = _KEY_SEP.split(text, maxsplit=1)
        if len(parts) != 2 or parts[0] != key:
            problems.append(FormatError(f"line {index + 1}: malformed line {text!r}, expected "
                                        f"'{key}: <value>'", path=path, position=pos, field=key))
            return None
        return pos, parts[1]

    version: int | None = None
    got = line_value(0, "version")
    if got is not None:
        version = _java_int(got[1], INT32_RANGE)
        if version is None:
            problems.append(FormatError(f"line 1: version {got[1]!r} is not an int32", path=path,
                                        position=got[0], field="version"))
        elif version < PARTITION_METADATA_VERSION:
            problems.append(FormatError(f"line 1: unrecognized version {version}", path=path,
                                        position=got[0], field="version"))
    topic_id: str | None = None
    got = line_value(1, "topic_id")
    if got is not None:
        try:
            if uuid_to_bytes(got[1]) == bytes(16):
                problems.append(FormatError("line 2: invalid (zero) topic id", path=path,
                                            position=got[0], field="topic_id"))
            topic_id = got[1]
        except FormatError as exc:
            problems.append(FormatError(f"line 2: {exc.message}", path=path, position=got[0],
                                        field="topic_id"))
    return PartitionMetadata(version=version, topic_id=topic_id, problems=tuple(problems),
                             path=path)


def build_partition_metadata(topic_id: str, *, version: int = PARTITION_METADATA_VERSION) -> bytes:
    """``PartitionMetadata#encode``: no trailing newline."""
    try:
        uuid_to_bytes(topic_id)
    except FormatError as exc:
        raise ValueError(exc.message) from None
    return f"version: {version}\ntopic_id: {topic_id}".encode()


# --------------------------------------------------------------------------------------------
# meta.properties (java.util.Properties)

META_PROPERTIES_VERSIONS = (0, 1, 2)  # MetaPropertiesVersion V0 (ZooKeeper), V1, V2 (KRaft)
_PROP_WS = " \t\f"
_LOAD_ESCAPES = {"t": "\t", "r": "\r", "n": "\n", "f": "\f"}
_JAVA_TRIM = "".join(chr(i) for i in range(33))  # String#trim strips every char <= ' '


@dataclass(frozen=True, slots=True, kw_only=True)
class MetaProperties:
    """A ``meta.properties`` file as read: every key kept, Kafka's fields derived.

    ``node_id`` comes from ``broker.id`` in version 0 and from ``node.id`` otherwise.
    ``comments`` holds the comment lines without their marker; ``Properties#store`` writes an
    empty one and the write date (``Date#toString``).
    """

    properties: dict[str, str]
    version: int | None
    cluster_id: str | None = None
    node_id: int | None = None
    directory_id: str | None = None
    comments: tuple[str, ...] = ()
    problems: tuple[FormatError, ...] = ()
    path: str | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, object]:
        return {"path": self.path, "version": self.version, "cluster_id": self.cluster_id,
                "node_id": self.node_id, "directory_id": self.directory_id,
                "properties": dict(self.properties), "comments": list(self.comments),
                "problems": _problem_dicts(self.problems)}


def _logical_lines(text: str) -> tuple[list[tuple[int, int, str]], tuple[str, ...]]:
    """``Properties.LineReader``: the logical lines as (position, line number, text) without
    leading whitespace and continuation backslashes, and the comment lines' text."""
    natural: list[tuple[int, str]] = []
    start = 0
    for m in re.finditer(r"\r\n|\r|\n", text):
        natural.append((start, text[start : m.start()]))
        start = m.end()
    if start < len(text):
        natural.append((start, text[start:]))
    lines: list[tuple[int, int, str]] = []
    comments: list[str] = []
    i = 0
    while i < len(natural):
        pos, line = natural[i]
        number = i + 1
        i += 1
        line = line.lstrip(_PROP_WS)
        if not line:
            continue
        if line[0] in "#!":
            comments.append(line[1:])
            continue
        parts: list[str] = []
        while True:
            trailing = len(line) - len(line.rstrip("\\"))
            if trailing % 2 == 0:
                parts.append(line)
                break
            parts.append(line[:-1])  # an odd number of backslashes continues the line
            if i >= len(natural):
                break
            line = natural[i][1].lstrip(_PROP_WS)
            i += 1
        lines.append((pos, number, "".join(parts)))
    return lines, tuple(comments)


def _load_convert(s: str) -> str:
    """``Properties#loadConvert``; raises ``ValueError`` for a malformed ``\\uxxxx``."""
    out: list[str] = []
    i = 0
    while i < len(s):
        ch = s[i]
        i += 1
        if ch != "\\" or i >= len(s):
            out.append(ch)
            continue
        ch = s[i]
        i += 1
        if ch == "u":
            digits = s[i : i + 4]
            if len(digits) != 4 or not re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                raise ValueError("malformed \\uxxxx encoding")
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_LOAD_ESCAPES.get(ch, ch))
    return "".join(out)


def _split_property(line: str) -> tuple[str, str]:
    """``Properties#load0``: the key ends at the first unescaped ``=``, ``:`` or whitespace."""
    key_len = 0
    value_start = len(line)
    has_sep = False
    backslash = False
    while key_len < len(line):
        ch = line[key_len]
        if ch in "=:" and not backslash:
            value_start = key_len + 1
            has_sep = True
            break
        if ch in _PROP_WS and not backslash:
            value_start = key_len + 1
            break
        backslash = (not backslash) if ch == "\\" else False
        key_len += 1
    while value_start < len(line):
        ch = line[value_start]
        if ch not in _PROP_WS:
            if not has_sep and ch in "=:":
                has_sep = True
            else:
                break
        value_start += 1
    return _load_convert(line[:key_len]), _load_convert(line[value_start:])


def read_meta_properties(
    data: str | bytes | memoryview, *, path: str | None = None
) -> MetaProperties:
    """Read ``meta.properties`` like ``PropertiesUtils#readPropertiesFile`` (``Properties#load``
    from a stream, i.e. ISO-8859-1) and check it like ``MetaProperties.Builder(Properties)``."""
    text = _as_bytes(data).decode("latin-1")  # so positions are byte offsets, as everywhere
    problems: list[FormatError] = []
    props: dict[str, str] = {}
    where: dict[str, tuple[int, int]] = {}
    lines, comments = _logical_lines(text)
    for pos, number, line in lines:
        try:
            key, value = _split_property(line)
        except ValueError as exc:
            problems.append(FormatError(f"line {number}: {exc}", path=path, position=pos,
                                        field="line"))
            continue
        props[key] = value
        where[key] = (pos, number)

    def bad(key: str, message: str) -> None:
        pos, number = where.get(key, (None, None))
        prefix = f"line {number}: " if number is not None else ""
        problems.append(FormatError(prefix + message, path=path, position=pos, field=key))

    raw_version = props.get("version", "0")
    version = _java_int(raw_version.strip(_JAVA_TRIM), INT32_RANGE)
    if version is None:
        bad("version", f"invalid meta.properties version string {raw_version!r}")
    elif version not in META_PROPERTIES_VERSIONS:
        bad("version", f"unknown meta.properties version number {version}")
        version = None
    node_id: int | None = None
    if version == 0:
        if "broker.id" in props:
            node_id = _java_int(props["broker.id"], INT32_RANGE)
            if node_id is None:
                bad("broker.id", "unable to read broker.id as a base-10 number")
    elif version is not None:
        if "node.id" not in props:
            bad("node.id", "node.id was not found")
        else:
            node_id = _java_int(props["node.id"], INT32_RANGE)
            if node_id is None:
                bad("node.id", "unable to read node.id as a base-10 number")
    cluster_id = props.get("cluster.id")
    if version == 1 and cluster_id is None:
        bad("cluster.id", "cluster.id was not found")
    directory_id = props.get("directory.id")
    if directory_id is not None:
        try:
            uuid_to_bytes(directory_id)
        except FormatError as exc:
            bad("directory.id", f"unable to read directory.id as a Uuid: {exc.message}")
            directory_id = None
    return MetaProperties(properties=props, version=version, cluster_id=cluster_id,
                          node_id=node_id, directory_id=directory_id, comments=comments,
                          problems=tuple(problems), path=path)


_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def java_date_string(when: datetime) -> str:
    """``java.util.Date#toString`` in UTC, e.g. ``Thu Nov 09 17:40:36 UTC 2023``."""
    t = when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)
    return (f"{_DAYS[t.weekday()]} {_MONTHS[t.month - 1]} {t.day:02d} "
            f"{t.hour:02d}:{t.minute:02d}:{t.second:02d} UTC {t.year}")


def _save_convert(s: str, *, escape_space: bool) -> str:
    """``Properties#saveConvert`` as used by ``store(Writer)`` (no ``\\uxxxx`` escaping)."""
    out: list[str] = []
    for i, ch in enumerate(s):
        if ch == " ":
            out.append("\\ " if i == 0 or escape_space else " ")
        elif ch == "\\":
            out.append("\\\\")
        elif ch in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[ch])
        elif ch in "=:#!":
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def build_meta_properties(
    properties: Mapping[str, str], *, written_at: datetime | None = None
) -> bytes:
    """The bytes ``PropertiesUtils#writePropertiesFile`` writes: ``Properties#store(writer, "")``
    with keys in sorted order (JDK 18+ ``store`` sorts; older JDKs used hash order), UTF-8.

    ``written_at`` is the date in the second comment line (default: now).
    """
    when = written_at or datetime.now(UTC)
    lines = ["#", "#" + java_date_string(when)]
    for key in sorted(properties):
        lines.append(_save_convert(key, escape_space=True) + "="
                     + _save_convert(properties[key], escape_space=False))
    return "".join(line + "\n" for line in lines).encode("utf-8")
