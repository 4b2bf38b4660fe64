"""Segment time index files (``<base offset>.timeindex``).

Mirrors ``org.apache.kafka.storage.internals.log.TimeIndex`` / ``AbstractIndex``: no header, no
checksum, 12-byte entries ``timestamp int64 | relative_offset int32`` (big-endian). An entry
(T, O) means the largest timestamp seen up to offset O is T. Kafka appends only when the
timestamp grows (``TimeIndex#maybeAppend``), so timestamps strictly increase and offsets never
go back.
Like the offset index, the file is preallocated with zeros and trimmed on clean close or roll.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import field

from kafkatx.errors import FormatError
from kafkatx.formats.index_file import IndexFileRead, length_problem, preallocated, relative_offset
from kafkatx.formats.zero_tail import zero_tail_start
from kafkatx.lazy_dataclass import dataclass

ENTRY_SIZE = 12
NO_TIMESTAMP = -1  # RecordBatch.NO_TIMESTAMP: the "last timestamp" of an empty time index

# The on-disk entry, (name, ``struct`` code) in file order: read with ``struct`` for speed,
# built through its construct form (``primitives.struct_of``).
ENTRY_FIELDS = (("timestamp", "q"), ("relative_offset", "i"))
ENTRY_STRUCT = struct.Struct(">" + "".join(code for _, code in ENTRY_FIELDS))
assert ENTRY_STRUCT.size == ENTRY_SIZE



@dataclass(frozen=True, slots=True, kw_only=True)
class TimeIndexEntry:
    """One time index entry (``TimestampOffset``); ``file_position`` is not compared."""

    timestamp: int
    offset: int
    relative_offset: int
    file_position: int | None = field(default=None, compare=False)

    @classmethod
    def make(cls, *, base_offset: int, timestamp: int, offset: int) -> TimeIndexEntry:
        return cls(timestamp=timestamp, offset=offset, relative_offset=offset - base_offset)

    def to_dict(self) -> dict[str, object]:
        return {
            "timestamp": self.timestamp,
            "offset": self.offset,
            "relative_offset": self.relative_offset,
        }


class TimeIndexRead(IndexFileRead[TimeIndexEntry]):
    """What a time index file holds: its entries, a preallocated zero tail, and any damage."""

    __slots__ = ()


def read_time_index(
    data: bytes | memoryview, *, base_offset: int, path: str | None = None
) -> TimeIndexRead:
    """Read every entry of a time index; damage becomes ``problems``, never an exception.

    The first all-zero entry from which the rest of the file is zero ends the entries (the
    preallocated tail). This includes entry 0: a file of only zeros has no entries (a genuine
    first entry of timestamp 0 at the base offset cannot be told apart from preallocation).
    ``TimeIndex#maybeAppend`` appends only a timestamp greater than the last one (-1 when
    empty) and never a smaller offset, so an entry whose timestamp is not greater than the last
    accepted one, or whose offset is below the last accepted one or the base offset, is
    reported and skipped.
    """
    data = bytes(data)
    size = len(data)
    whole = size - size % ENTRY_SIZE
    zero_from = zero_tail_start(data, whole)  # every byte from here to ``whole`` is zero
    problems: list[FormatError] = []
    entries: list[TimeIndexEntry] = []
    tail = 0
    last: tuple[int, int] | None = None
    for i, (ts, rel) in enumerate(ENTRY_STRUCT.iter_unpack(data[:whole])):
        at = i * ENTRY_SIZE
        if at >= zero_from:
            tail = whole - at
            break
        message = None
        if rel < 0:
            message = f"entry {i}: negative relative offset {rel}"
        elif ts <= (NO_TIMESTAMP if last is None else last[0]):
            message = (f"entry {i}: timestamp {ts} is not greater than "
                       + ("-1" if last is None else f"the previous entry's {last[0]}"))
        elif last is not None and rel < last[1]:
            message = (f"entry {i}: offset {base_offset + rel} is less than the previous "
                       f"entry's {base_offset + last[1]}")
        if message is not None:
            problems.append(FormatError(message, path=path, position=at, field="entry"))
            continue
        entries.append(TimeIndexEntry(timestamp=ts, offset=base_offset + rel, relative_offset=rel,
                                      file_position=at))
        last = (ts, rel)
    if size != whole:
        problems.append(length_problem(size, ENTRY_SIZE, path))
    return TimeIndexRead(base_offset=base_offset, entries=tuple(entries),
                         problems=tuple(problems), preallocated_tail_bytes=tail, path=path)


def sanity_check(
    data: bytes | memoryview, *, base_offset: int, path: str | None = None
) -> list[FormatError]:
    """What ``TimeIndex#sanityCheck`` would report for this file as it is on disk.

    Kafka treats every whole 12-byte slot as an entry (it assumes the file was trimmed): the last
    timestamp must not be below the first, the last offset not below the base offset, and the
    length must be a multiple of 12. An untrimmed file with a zero tail fails the first rule.
    """
    size = len(data)
    entries = size // ENTRY_SIZE
    problems: list[FormatError] = []
    if entries:
        at = (entries - 1) * ENTRY_SIZE
        first_ts = ENTRY_STRUCT.unpack_from(data, 0)[0]
        last_ts, last_rel = ENTRY_STRUCT.unpack_from(data, at)
        if last_ts < first_ts:
            problems.append(FormatError(
                f"corrupt time index: non-zero size but the last timestamp is {last_ts}, "
                f"which is less than the first timestamp {first_ts}",
                path=path, position=at, field="timestamp"))
        if last_rel < 0:
            problems.append(FormatError(
                f"corrupt time index: non-zero size but the last offset is "
                f"{base_offset + last_rel}, which is less than the first offset {base_offset}",
                path=path, position=at + 8, field="relative_offset"))
    if size % ENTRY_SIZE:
        problems.append(length_problem(size, ENTRY_SIZE, path))
    return problems


def build_time_index(
    entries: Iterable[TimeIndexEntry], base_offset: int, *, preallocate_to: int | None = None
) -> bytes:
    """Kafka's bytes for these entries (``TimeIndex#maybeAppend``), optionally zero-padded."""
    from kafkatx.formats.primitives import struct_of  # construct: only to build

    def entry_bytes(e: TimeIndexEntry) -> bytes:
        rel = relative_offset(e, base_offset)
        if not -(2**63) <= e.timestamp < 2**63:
            raise ValueError(f"timestamp {e.timestamp} is not an int64")
        return struct_of(ENTRY_FIELDS).build({"timestamp": e.timestamp, "relative_offset": rel})

    return preallocated(map(entry_bytes, entries), ENTRY_SIZE, preallocate_to)
