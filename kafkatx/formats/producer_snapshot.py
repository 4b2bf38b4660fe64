"""Producer state snapshots (``<offset>.snapshot``).

Mirrors ``org.apache.kafka.storage.internals.log.ProducerStateManager``
(``PID_SNAPSHOT_MAP_SCHEMA``, ``PRODUCER_SNAPSHOT_ENTRY_SCHEMA``, ``readSnapshot``,
``writeSnapshot``) and ``LogFileUtils`` (file names). Layout (big-endian)::

    version int16 (= 1) | crc uint32 | count int32 | count x 46-byte entries

The CRC is CRC-32C over bytes [6, EOF), i.e. everything after the crc field. Each entry holds only
the *last* batch of a producer. The file name is the 20-digit, zero-padded map end offset, which
is exclusive: the snapshot covers every batch below it.
"""

from __future__ import annotations

import functools
import os
import struct
from collections.abc import Iterable
from dataclasses import field
from typing import Any

from kafkatx.errors import CorruptSnapshotError, FormatError
from kafkatx.formats.batchscan import crc32c_of
from kafkatx.lazy_dataclass import dataclass

SNAPSHOT_VERSION = 1
CRC_OFFSET = 2
ENTRIES_OFFSET = 6  # PRODUCER_ENTRIES_OFFSET: where the CRC-covered bytes start
HEADER_SIZE = 10  # version + crc + entry count
ENTRY_SIZE = 46
SNAPSHOT_SUFFIX = ".snapshot"

# The fields with their ``struct`` codes, the one definition of the layout (field order as in
# PRODUCER_SNAPSHOT_ENTRY_SCHEMA): reading unpacks them with ``struct`` (no construct to import
# at start-up), building goes through their construct form (:func:`_layouts`), and
# tests/formats prove the two agree.
HEADER_FIELDS = (("version", "h"), ("crc", "I"), ("count", "i"))
ENTRY_FIELDS = (
    ("producer_id", "q"),
    ("producer_epoch", "h"),
    ("last_sequence", "i"),
    ("last_offset", "q"),
    ("offset_delta", "i"),
    ("timestamp", "q"),
    ("coordinator_epoch", "i"),
    ("current_txn_first_offset", "q"),
)
HEADER_STRUCT = struct.Struct(">" + "".join(code for _, code in HEADER_FIELDS))
ENTRY_STRUCT = struct.Struct(">" + "".join(code for _, code in ENTRY_FIELDS))
assert ENTRY_STRUCT.size == ENTRY_SIZE and HEADER_STRUCT.size == HEADER_SIZE

_FIELDS = tuple(name for name, _ in ENTRY_FIELDS)


@functools.cache
def _layouts() -> tuple[Any, Any]:
    """(entry, whole file) as construct definitions (loaded only to build or to check)."""
    import construct as c

    from kafkatx.formats.primitives import Array, struct_of

    entry = struct_of(ENTRY_FIELDS)
    head = struct_of(HEADER_FIELDS[:2])  # version, crc; the count is the array's prefix
    return entry, c.Struct(*head.subcons, "entries" / Array(entry))


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerSnapshotEntry:
    """One producer's persisted state (``ProducerStateEntry`` with its last batch only).

    ``last_offset`` -1 means no batch metadata; ``current_txn_first_offset`` -1 means no
    ongoing transaction. ``file_position`` is not compared.
    """

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int
    file_position: int | None = field(default=None, compare=False)

    @property
    def has_batch_metadata(self) -> bool:
        """Kafka restores the last batch only when ``last_offset >= 0`` (``readSnapshot``)."""
        return self.last_offset >= 0

    @property
    def has_ongoing_txn(self) -> bool:
        """Kafka re-creates an ongoing transaction when ``current_txn_first_offset >= 0``."""
        return self.current_txn_first_offset >= 0

    def to_dict(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in _FIELDS}


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerSnapshot:
    """A snapshot file as read: header values as stored, the entries, and any damage.

    ``version``/``crc``/``computed_crc`` are ``None`` when the file is too short to hold them.
    """

    version: int | None
    crc: int | None
    computed_crc: int | None
    entries: tuple[ProducerSnapshotEntry, ...]
    problems: tuple[FormatError, ...] = ()
    path: str | None = field(default=None, compare=False)

    @property
    def crc_valid(self) -> bool:
        return self.crc is not None and self.crc == self.computed_crc

    @property
    def loadable(self) -> bool:
        """Whether Kafka would load it (no ``CorruptSnapshotException``)."""
        return not any(isinstance(p, CorruptSnapshotError) for p in self.problems)

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "version": self.version,
            "crc": self.crc,
            "computed_crc": self.computed_crc,
            "crc_valid": self.crc_valid,
            "entries": [e.to_dict() for e in self.entries],
            "problems": [p.to_dict() for p in self.problems],
        }


def read_producer_snapshot(
    data: bytes | memoryview, *, path: str | None = None
) -> ProducerSnapshot:
    """Read a snapshot; damage becomes ``problems``, never an exception.

    Whatever Kafka's ``readSnapshot`` rejects (wrong version, CRC mismatch, schema errors such as
    truncation or a negative count, an empty file) is a ``CorruptSnapshotError``; the entries that
    do parse are still returned. Bytes after the last entry are a plain ``FormatError``: Kafka
    ignores them (they are covered by the CRC, though).
    """
    data = bytes(data)
    size = len(data)
    problems: list[FormatError] = []

    def corrupt(message: str, position: int, what: str) -> None:
        problems.append(CorruptSnapshotError(message, path=path, position=position, field=what))

    if size == 0:
        corrupt("empty snapshot file", 0, "version")
        return ProducerSnapshot(version=None, crc=None, computed_crc=None, entries=(),
                                problems=tuple(problems), path=path)
    version = int.from_bytes(data[:2], "big", signed=True) if size >= 2 else None
    crc = (int.from_bytes(data[CRC_OFFSET:ENTRIES_OFFSET], "big")
           if size >= ENTRIES_OFFSET else None)
    computed = crc32c_of(data[ENTRIES_OFFSET:]) if size >= ENTRIES_OFFSET else None
    if version is not None and version != SNAPSHOT_VERSION:
        corrupt(f"unknown snapshot version {version} (expected {SNAPSHOT_VERSION})", 0, "version")
    if crc is not None and crc != computed:
        corrupt(f"CRC is not valid: stored {crc}, computed {computed}", CRC_OFFSET, "crc")
    if size < HEADER_SIZE:
        corrupt(f"file ends after {size} bytes, inside the {HEADER_SIZE}-byte header", size,
                "header")
        return ProducerSnapshot(version=version, crc=crc, computed_crc=computed, entries=(),
                                problems=tuple(problems), path=path)

    count = HEADER_STRUCT.unpack_from(data)[2]
    available = (size - HEADER_SIZE) // ENTRY_SIZE
    if count < 0:
        corrupt(f"entry count {count} cannot be negative", ENTRIES_OFFSET, "count")
        count = 0
    elif count > available:
        at = HEADER_SIZE + available * ENTRY_SIZE
        corrupt(f"truncated: the count says {count} entries but only {available} fit "
                f"({size - at} bytes of a partial entry)", at, "entries")
    entries = tuple(_parse_entry(data, HEADER_SIZE + i * ENTRY_SIZE)
                    for i in range(min(count, available)))
    end = HEADER_SIZE + count * ENTRY_SIZE
    if end < size:
        problems.append(FormatError(f"{size - end} bytes after the last of {count} entries",
                                    path=path, position=end, field="entries"))
    return ProducerSnapshot(version=version, crc=crc, computed_crc=computed, entries=entries,
                            problems=tuple(problems), path=path)


def _parse_entry(data: bytes, at: int) -> ProducerSnapshotEntry:
    values = ENTRY_STRUCT.unpack_from(data, at)
    return ProducerSnapshotEntry(**dict(zip(_FIELDS, values, strict=True)), file_position=at)


def build_producer_snapshot(
    entries: Iterable[ProducerSnapshotEntry], *, version: int = SNAPSHOT_VERSION
) -> bytes:
    """Kafka's bytes for these entries, CRC filled in (``ProducerStateManager#writeSnapshot``)."""
    value = {
        "version": version,
        "crc": 0,
        "entries": [{name: getattr(e, name) for name in _FIELDS} for e in entries],
    }
    import construct as c

    try:
        body = _layouts()[1].build(value)
    except c.ConstructError as exc:
        raise ValueError(f"cannot encode snapshot: {exc}") from None
    crc = crc32c_of(body[ENTRIES_OFFSET:])
    return body[:CRC_OFFSET] + crc.to_bytes(4, "big") + body[ENTRIES_OFFSET:]


def snapshot_file_name(offset: int) -> str:
    """``LogFileUtils#producerSnapshotFile``: the offset zero-padded to 20 digits, ``.snapshot``."""
    if offset < 0:
        raise ValueError(f"offset {offset} is negative")
    return f"{offset:020d}{SNAPSHOT_SUFFIX}"


def snapshot_offset_from_name(filename: str) -> int:
    """The (exclusive) end offset in a snapshot file name (``LogFileUtils#offsetFromFileName``).

    Accepts a path; the name must be ``<digits>.snapshot``, optionally followed by a further
    suffix such as ``.deleted``.
    """
    name = os.path.basename(filename)
    prefix, dot, rest = name.partition(".")
    if (not dot or not prefix.isascii() or not prefix.isdigit()
            or not ("." + rest + ".").startswith(SNAPSHOT_SUFFIX + ".")):
        raise FormatError(f"not a producer snapshot file name: {name!r}", path=filename,
                          field="name")
    offset = int(prefix)
    if offset >= 2**63:
        raise FormatError(f"offset in file name {name!r} does not fit an int64", path=filename,
                          field="name")
    return offset
