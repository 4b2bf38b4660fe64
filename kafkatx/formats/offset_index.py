"""Segment offset index files (``<base offset>.index``).

Mirrors ``org.apache.kafka.storage.internals.log.OffsetIndex`` / ``AbstractIndex``: no header,
no checksum, 8-byte entries ``relative_offset int32 | position int32`` (big-endian), absolute
offset = segment base offset + relative offset, entries strictly increasing in offset. A file is
preallocated with zero bytes (``segment.index.bytes``) and trimmed to its entries on clean close
or roll; after an unclean shutdown the active segment's index keeps its zero tail, which this
reader separates from the entries instead of reporting it as damage.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import field

from kafkatx.errors import FormatError
from kafkatx.formats.batch_values import INT32_MAX
from kafkatx.formats.index_file import IndexFileRead, length_problem, preallocated, relative_offset
from kafkatx.formats.zero_tail import zero_tail_start
from kafkatx.lazy_dataclass import dataclass

ENTRY_SIZE = 8

# The on-disk entry, (name, ``struct`` code) in file order: read with ``struct`` (a full index
# holds up to 1.3 million entries and construct is far too slow for that; the broker's segments
# read their last entry with it too), built through its construct form (``struct_of``).
ENTRY_FIELDS = (("relative_offset", "i"), ("position", "i"))
ENTRY_STRUCT = struct.Struct(">" + "".join(code for _, code in ENTRY_FIELDS))
assert ENTRY_STRUCT.size == ENTRY_SIZE



@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetIndexEntry:
    """One index entry: the batch holding ``offset`` (or one near it) starts at ``position``.

    ``file_position`` is where the entry sits in the index file (not compared).
    """

    offset: int
    relative_offset: int
    position: int
    file_position: int | None = field(default=None, compare=False)

    @classmethod
    def make(cls, *, base_offset: int, offset: int, position: int) -> OffsetIndexEntry:
        return cls(offset=offset, relative_offset=offset - base_offset, position=position)

    def to_dict(self) -> dict[str, object]:
        return {
            "offset": self.offset,
            "relative_offset": self.relative_offset,
            "position": self.position,
        }


class OffsetIndexRead(IndexFileRead[OffsetIndexEntry]):
    """What an offset index file holds: its entries, a preallocated zero tail, and any damage."""

    __slots__ = ()


def read_offset_index(
    data: bytes | memoryview, *, base_offset: int, path: str | None = None
) -> OffsetIndexRead:
    """Read every entry of an offset index; damage becomes ``problems``, never an exception.

    Entry 0 is always taken. A later entry whose relative offset is not greater than the last
    accepted one ends the entries when everything from it to the end of the file is zero bytes
    (the preallocated tail Kafka leaves after an unclean shutdown); otherwise it is reported and
    skipped. Negative relative offsets or positions (never written by Kafka) are reported and
    skipped too.
    """
    data = bytes(data)
    size = len(data)
    whole = size - size % ENTRY_SIZE
    zero_from = zero_tail_start(data, whole)  # every byte from here to ``whole`` is zero
    problems: list[FormatError] = []
    entries: list[OffsetIndexEntry] = []
    tail = 0
    last_rel: int | None = None
    for i, (rel, pos) in enumerate(ENTRY_STRUCT.iter_unpack(data[:whole])):
        at = i * ENTRY_SIZE
        if last_rel is not None and rel <= last_rel:
            if at >= zero_from:
                tail = whole - at
                break
            problems.append(FormatError(
                f"entry {i}: relative offset {rel} is not greater than the previous entry's "
                f"{last_rel}", path=path, position=at, field="relative_offset"))
            continue
        if rel < 0 or pos < 0:
            what = "relative offset" if rel < 0 else "position"
            problems.append(FormatError(
                f"entry {i}: negative {what} ({rel if rel < 0 else pos})",
                path=path, position=at, field="relative_offset" if rel < 0 else "position"))
            continue
        entries.append(OffsetIndexEntry(offset=base_offset + rel, relative_offset=rel,
                                        position=pos, file_position=at))
        last_rel = rel
    if size != whole:
        problems.append(length_problem(size, ENTRY_SIZE, path))
    return OffsetIndexRead(base_offset=base_offset, entries=tuple(entries),
                           problems=tuple(problems), preallocated_tail_bytes=tail, path=path)


def sanity_check(
    data: bytes | memoryview, *, base_offset: int, path: str | None = None
) -> list[FormatError]:
    """What ``OffsetIndex#sanityCheck`` would report for this file as it is on disk.

    Kafka assumes an existing index file is trimmed, so every whole 8-byte slot counts as an
    entry (a zero tail included): the last one's offset must not be below the base offset, and
    the length must be a multiple of 8.
    """
    size = len(data)
    entries = size // ENTRY_SIZE
    problems: list[FormatError] = []
    if entries:
        at = (entries - 1) * ENTRY_SIZE
        rel = ENTRY_STRUCT.unpack_from(data, at)[0]
        if rel < 0:
            problems.append(FormatError(
                f"corrupt index: non-zero size but the last offset is {base_offset + rel}, "
                f"which is less than the base offset {base_offset}",
                path=path, position=at, field="relative_offset"))
    if size % ENTRY_SIZE:
        problems.append(length_problem(size, ENTRY_SIZE, path))
    return problems


def build_offset_index(
    entries: Iterable[OffsetIndexEntry], base_offset: int, *, preallocate_to: int | None = None
) -> bytes:
    """Kafka's bytes for these entries (``OffsetIndex#append``), optionally zero-padded.

    ``preallocate_to`` pads with zero bytes to that size rounded down to a whole entry, like a
    not-yet-trimmed file (``AbstractIndex`` preallocation).
    """
    from kafkatx.formats.primitives import struct_of  # construct: only to build

    def entry_bytes(e: OffsetIndexEntry) -> bytes:
        rel = relative_offset(e, base_offset)
        if not 0 <= e.position <= INT32_MAX:
            raise ValueError(f"position {e.position} is not a non-negative int32")
        return struct_of(ENTRY_FIELDS).build({"relative_offset": rel, "position": e.position})

    return preallocated(map(entry_bytes, entries), ENTRY_SIZE, preallocate_to)
