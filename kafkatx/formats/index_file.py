"""What the offset and time index files share (``AbstractIndex``): fixed-size entries with no
header or checksum, offsets relative to the segment's base offset, and a file preallocated with
zero bytes that Kafka trims to its entries on clean close or roll."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import field
from typing import Generic, Protocol, TypeVar

from kafkatx.errors import FormatError
from kafkatx.formats.batch_values import INT32_MAX
from kafkatx.lazy_dataclass import dataclass


class _Entry(Protocol):
    @property
    def offset(self) -> int: ...

    @property
    def relative_offset(self) -> int: ...

    def to_dict(self) -> dict[str, object]: ...


EntryT = TypeVar("EntryT", bound=_Entry)


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexFileRead(Generic[EntryT]):
    """What an index file holds: its entries, a preallocated zero tail, and any damage."""

    base_offset: int
    entries: tuple[EntryT, ...]
    problems: tuple[FormatError, ...] = ()
    preallocated_tail_bytes: int = 0
    path: str | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "base_offset": self.base_offset,
            "entries": [e.to_dict() for e in self.entries],
            "preallocated_tail_bytes": self.preallocated_tail_bytes,
            "problems": [p.to_dict() for p in self.problems],
        }


def relative_offset(entry: _Entry, base_offset: int) -> int:
    """An entry's relative offset as ``AbstractIndex#relativeOffset`` computes it, checked
    against the one the entry holds; ``ValueError`` when it does not fit an int32."""
    rel = entry.offset - base_offset
    if rel != entry.relative_offset:
        raise ValueError(f"entry {entry}: relative offset does not match base offset {base_offset}")
    if not 0 <= rel <= INT32_MAX:
        raise ValueError(f"offset {entry.offset} is not within 2**31-1 of base {base_offset}")
    return rel


def preallocated(entries: Iterable[bytes], entry_size: int, preallocate_to: int | None) -> bytes:
    """The entries' bytes, zero-padded to ``preallocate_to`` rounded down to a whole entry (a
    not-yet-trimmed file, ``AbstractIndex`` preallocation) when it is given."""
    out = b"".join(entries)
    if preallocate_to is None:
        return out
    target = preallocate_to - preallocate_to % entry_size
    if target < len(out):
        raise ValueError(f"preallocate_to={preallocate_to} is smaller than the entries")
    return out + bytes(target - len(out))


def length_problem(size: int, entry_size: int, path: str | None) -> FormatError:
    """A file whose length is not a whole number of entries."""
    return FormatError(
        f"file length {size} is not a multiple of {entry_size} "
        f"({size % entry_size} trailing bytes ignored)",
        path=path, position=size - size % entry_size, field="length")
