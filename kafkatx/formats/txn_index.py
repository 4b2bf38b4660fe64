"""Transaction index files (``<base offset>.txnindex``): the aborted transactions of a segment.

Mirrors ``org.apache.kafka.storage.internals.log.AbortedTxn`` and ``TransactionIndex``: no file
header, 34-byte entries ``version int16 (0) | producer_id int64 | first_offset int64 |
last_offset int64 | last_stable_offset int64`` (big-endian). Only aborted transactions are
recorded, in the segment holding the ABORT marker (``last_offset``); entries have strictly
increasing ``last_offset``. The file is created lazily, so a missing file means "no aborts".
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator
from dataclasses import field

from kafkatx.errors import FormatError
from kafkatx.lazy_dataclass import dataclass

ENTRY_SIZE = 34
CURRENT_VERSION = 0

# The entry's fields in file order with their ``struct`` codes, the one definition: reading
# unpacks them with ``struct`` (no construct to import at start-up), building goes through the
# construct form of the same fields (``primitives.struct_of``), and tests/formats prove the two
# agree.
ENTRY_FIELDS = (("version", "h"), ("producer_id", "q"), ("first_offset", "q"),
                ("last_offset", "q"), ("last_stable_offset", "q"))
ENTRY_STRUCT = struct.Struct(">" + "".join(code for _, code in ENTRY_FIELDS))
assert ENTRY_STRUCT.size == ENTRY_SIZE



@dataclass(frozen=True, slots=True, kw_only=True)
class AbortedTxnEntry:
    """One aborted transaction (``AbortedTxn``); ``file_position`` is not compared.

    ``version`` is the int16 as stored; Kafka only looks at its first byte (``kafka_version``).
    """

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = CURRENT_VERSION
    file_position: int | None = field(default=None, compare=False)

    @property
    def kafka_version(self) -> int:
        """``AbortedTxn#version``: the first byte of the version field, as a signed byte."""
        high = (self.version >> 8) & 0xFF
        return high - 256 if high >= 128 else high

    def to_dict(self) -> dict[str, object]:
        return {
            "version": self.version,
            "producer_id": self.producer_id,
            "first_offset": self.first_offset,
            "last_offset": self.last_offset,
            "last_stable_offset": self.last_stable_offset,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnIndexRead:
    """The entries of a transaction index plus any damage found."""

    entries: tuple[AbortedTxnEntry, ...]
    problems: tuple[FormatError, ...] = ()
    base_offset: int | None = None
    path: str | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "base_offset": self.base_offset,
            "entries": [e.to_dict() for e in self.entries],
            "problems": [p.to_dict() for p in self.problems],
        }


def _iter_raw(data: bytes) -> Iterator[AbortedTxnEntry]:
    """Whole entries in file order, like ``TransactionIndex#iterable`` (partial tail dropped)."""
    for at in range(0, len(data) - ENTRY_SIZE + 1, ENTRY_SIZE):
        version, producer_id, first, last, lso = ENTRY_STRUCT.unpack_from(data, at)
        yield AbortedTxnEntry(
            version=version, producer_id=producer_id, first_offset=first, last_offset=last,
            last_stable_offset=lso, file_position=at)


def _version_problem(e: AbortedTxnEntry, path: str | None) -> FormatError:
    return FormatError(
        f"unexpected aborted transaction version {e.kafka_version} (stored int16 {e.version}), "
        f"current version is {CURRENT_VERSION}", path=path, position=e.file_position,
        field="version")


def _below_base_problem(e: AbortedTxnEntry, base_offset: int, path: str | None) -> FormatError:
    return FormatError(
        f"last offset {e.last_offset} of aborted transaction (producer {e.producer_id}) is less "
        f"than the segment start offset {base_offset}", path=path,
        position=None if e.file_position is None else e.file_position + 18, field="last_offset")


def read_txn_index(
    data: bytes | memoryview, *, path: str | None = None, base_offset: int | None = None
) -> TxnIndexRead:
    """Read every entry; damage becomes ``problems``, never an exception.

    Reported: a trailing partial entry (Kafka silently ignores it), a version Kafka rejects
    (first byte > 0; the entry is skipped, where Kafka would refuse the whole index), a
    ``last_offset`` not greater than the previous entry's (kept; ``TransactionIndex#append``
    would have refused it) and, when ``base_offset`` is given, :func:`sanity_check`'s rule.
    """
    data = bytes(data)
    problems: list[FormatError] = []
    entries: list[AbortedTxnEntry] = []
    last: int | None = None
    for e in _iter_raw(data):
        if e.kafka_version > CURRENT_VERSION:
            problems.append(_version_problem(e, path))
            continue
        if last is not None and e.last_offset <= last:
            problems.append(FormatError(
                f"last offset {e.last_offset} is not greater than the previous entry's {last}",
                path=path, position=e.file_position, field="last_offset"))
        if base_offset is not None and e.last_offset < base_offset:
            problems.append(_below_base_problem(e, base_offset, path))
        entries.append(e)
        last = e.last_offset
    partial = len(data) % ENTRY_SIZE
    if partial:
        problems.append(FormatError(
            f"{partial} trailing bytes do not make a whole {ENTRY_SIZE}-byte entry",
            path=path, position=len(data) - partial, field="entry"))
    return TxnIndexRead(entries=tuple(entries), problems=tuple(problems),
                        base_offset=base_offset, path=path)


def sanity_check(
    data: bytes | memoryview, *, base_offset: int, path: str | None = None
) -> list[FormatError]:
    """What ``TransactionIndex#sanityCheck`` would report: the first entry whose last offset is
    below the segment's base offset (Kafka throws on it), or the first entry with a version Kafka
    cannot read (its iterator throws there).
    """
    for e in _iter_raw(bytes(data)):
        if e.kafka_version > CURRENT_VERSION:
            return [_version_problem(e, path)]
        if e.last_offset < base_offset:
            return [_below_base_problem(e, base_offset, path)]
    return []


def build_txn_index(entries: Iterable[AbortedTxnEntry]) -> bytes:
    """Kafka's bytes for these entries (``AbortedTxn#toByteBuffer``, appended in order)."""
    import construct as c

    from kafkatx.formats.primitives import struct_of

    out = bytearray()
    for e in entries:
        try:
            out += struct_of(ENTRY_FIELDS).build({
                "version": e.version, "producer_id": e.producer_id,
                "first_offset": e.first_offset, "last_offset": e.last_offset,
                "last_stable_offset": e.last_stable_offset,
            })
        except c.ConstructError as exc:
            raise ValueError(f"cannot encode {e}: {exc}") from None
    return bytes(out)
