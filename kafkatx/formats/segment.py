"""Segment ``.log`` files: every entry in file order, tolerant of damage.

Mirrors the framing Kafka's ``FileLogInputStream`` reads (offset int64, size int32, magic at
byte 16 chooses v2 ``DefaultRecordBatch`` or legacy v0/v1 messages). Unlike Kafka, which stops at
the first corrupt entry, this reader reports each bad region as a ``SegmentProblem`` and
resynchronises on the next entry whose header is plausible and whose CRC checks out.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator

import numpy as np

from kafkatx.errors import FormatError
from kafkatx.formats import legacy_message
from kafkatx.formats.batch_layout import (
    CRC_FIELD,
    CRC_OFFSET,
    CRC_START,
    HEADER_SIZE_UP_TO_MAGIC,
    LENGTH_FIELD,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V2,
    MIN_BATCH_LENGTH,
)
from kafkatx.formats.batchscan import crc32c_of
from kafkatx.formats.record_batch import RecordBatch, parse_batch
from kafkatx.lazy_dataclass import dataclass

# LegacyRecord.RECORD_OVERHEAD_V0 / V1: the smallest legacy message (without offset + size).
LEGACY_MIN_MESSAGE = {0: 14, 1: 22}

SegmentEntry = RecordBatch | legacy_message.LegacyEntry

# Problem kinds (stable names; they become finding kinds).
CRC_MISMATCH = "crc_mismatch"
TRUNCATED_BATCH = "truncated_batch"
CORRUPT_REGION = "corrupt_region"
INVALID_BATCH = "invalid_batch"
ZERO_PADDING = "zero_padding"


@dataclass(frozen=True, slots=True, kw_only=True)
class SegmentProblem:
    """A damaged or suspicious region of a segment: ``path:position: message``."""

    kind: str
    position: int
    length: int
    message: str
    path: str | None = None

    def __str__(self) -> str:
        return f"{self.path or '<bytes>'}:{self.position}: {self.message}"

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "path": self.path, "position": self.position,
                "length": self.length, "message": self.message}


def iter_segment(
    buf: bytes | memoryview,
    *,
    path: str | None = None,
    decode_records: bool = False,
    start: int = 0,
) -> Iterator[SegmentEntry | SegmentProblem]:
    """Yield every entry (``RecordBatch`` or ``LegacyEntry``) and problem, in file order."""
    end = len(buf)
    pos = start
    while pos < end:
        entry, problems, next_pos = read_entry(buf, pos, path=path, decode_records=decode_records)
        yield from problems
        if entry is not None:
            yield entry
        if next_pos is None:
            return
        pos = next_pos


def read_entry(
    buf: bytes | memoryview,
    pos: int,
    *,
    path: str | None = None,
    decode_records: bool = False,
) -> tuple[SegmentEntry | None, list[SegmentProblem], int | None]:
    """Read the entry at ``pos``; return (entry or None, problems, next position or None at end).

    This is the slow, exact path: it is what the fast scanner falls back to at anything unusual.
    """
    end = len(buf)
    remaining = end - pos
    if _all_zero(buf, pos, end):
        return None, [SegmentProblem(
            kind=ZERO_PADDING, position=pos, length=remaining, path=path,
            message=f"{remaining} zero bytes at the end of the file (preallocated segment or "
                    "unclean shutdown); no batch there",
        )], None
    if remaining < HEADER_SIZE_UP_TO_MAGIC:
        return None, [_truncated(path, pos, remaining, None)], None
    length = LENGTH_FIELD.unpack_from(buf, pos + LENGTH_OFFSET)[0]
    magic = buf[pos + MAGIC_OFFSET]
    problem: str
    if _all_zero(buf, pos, pos + HEADER_SIZE_UP_TO_MAGIC):
        return _resync(buf, pos, path, "zero-filled bytes where a batch header should start")
    if magic == MAGIC_V2:
        if length < MIN_BATCH_LENGTH:
            problem = f"batch length {length} is below the minimum {MIN_BATCH_LENGTH}"
        elif pos + LOG_OVERHEAD + length > end:
            return _damaged_or_truncated(buf, pos, path, length)
        else:
            try:
                batch = parse_batch(buf, pos, path=path, decode_records=decode_records)
            except FormatError as exc:
                # The frame is sound but its content is not: report, keep the header view, and
                # move on to the next frame.
                batch = parse_batch(buf, pos, path=path, decode_control=False)
                problems = [*_crc_problem(batch),
                            invalid_batch_problem(exc, pos, batch.header.size, path)]
                return batch, problems, pos + LOG_OVERHEAD + length
            return batch, _crc_problem(batch), pos + batch.header.size
    elif magic in (0, 1):
        if length < LEGACY_MIN_MESSAGE[magic]:
            problem = (f"legacy message size {length} is below the minimum "
                       f"{LEGACY_MIN_MESSAGE[magic]}")
        elif pos + LOG_OVERHEAD + length > end:
            return _damaged_or_truncated(buf, pos, path, length)
        else:
            try:
                entry = legacy_message.parse_legacy_entry(buf, pos, path=path)
            except FormatError as exc:
                problem = _message(exc)
            else:
                problems = []
                if not entry.message.crc_valid:
                    problems.append(SegmentProblem(
                        kind=CRC_MISMATCH, position=pos, length=LOG_OVERHEAD + length, path=path,
                        message=f"legacy message CRC mismatch: stored {entry.message.crc:#010x}, "
                                f"computed {entry.message.computed_crc:#010x}",
                    ))
                return entry, problems, pos + LOG_OVERHEAD + length
    else:
        problem = f"unknown magic byte {magic}"
    return _resync(buf, pos, path, problem)


def invalid_batch_problem(
    exc: FormatError, pos: int, size: int, path: str | None
) -> SegmentProblem:
    """A batch whose frame and header are sound but whose content does not decode."""
    return SegmentProblem(kind=INVALID_BATCH, position=pos, length=size, path=path,
                          message=f"batch content does not decode: {_message(exc)}")


def _message(exc: FormatError) -> str:
    where = f" (at byte {exc.position})" if exc.position is not None else ""
    what = f"{exc.field}: {exc.message}" if exc.field else exc.message
    return f"{what}{where}"


def _crc_problem(batch: RecordBatch) -> list[SegmentProblem]:
    if batch.crc_valid:
        return []
    return [SegmentProblem(
        kind=CRC_MISMATCH, position=batch.position, length=batch.header.size, path=batch.path,
        message=crc_mismatch_message(batch.header.base_offset, batch.header.crc,
                                     batch.computed_crc),
    )]


def crc_mismatch_message(base_offset: int, stored: int, computed: int) -> str:
    return (f"CRC mismatch in batch at offset {base_offset}: stored {stored:#010x}, "
            f"computed {computed:#010x}")


def _truncated(path: str | None, pos: int, remaining: int, length: int | None) -> SegmentProblem:
    if length is None:
        detail = f"only {remaining} bytes left, less than a batch header"
    else:
        detail = f"header declares {LOG_OVERHEAD + length} bytes, only {remaining} remain"
    return SegmentProblem(
        kind=TRUNCATED_BATCH, position=pos, length=remaining, path=path,
        message=f"trailing partial batch: {detail} (normal after a crash or a copy of a live "
                "segment)",
    )


def _damaged_or_truncated(
    buf: bytes | memoryview, pos: int, path: str | None, length: int
) -> tuple[None, list[SegmentProblem], int | None]:
    """A frame running past the end: a partial tail, unless a valid entry follows it."""
    nxt = find_next_entry(buf, pos + 1)
    if nxt is None:
        return None, [_truncated(path, pos, len(buf) - pos, length)], None
    return None, [SegmentProblem(
        kind=CORRUPT_REGION, position=pos, length=nxt - pos, path=path,
        message=f"batch length {length} runs past the end of the file; skipped {nxt - pos} bytes "
                f"to the next valid batch at position {nxt}",
    )], nxt


def _resync(
    buf: bytes | memoryview, pos: int, path: str | None, problem: str
) -> tuple[None, list[SegmentProblem], int | None]:
    nxt = find_next_entry(buf, pos + 1)
    skipped = (nxt if nxt is not None else len(buf)) - pos
    tail = (f"skipped {skipped} bytes to the next valid batch at position {nxt}"
            if nxt is not None else f"no valid batch in the remaining {skipped} bytes")
    return None, [SegmentProblem(kind=CORRUPT_REGION, position=pos, length=skipped, path=path,
                                 message=f"{problem}; {tail}")], nxt


def _all_zero(buf: bytes | memoryview, pos: int, end: int) -> bool:
    # A batch's first bytes (its base offset's high bytes) are zero but its magic byte is not:
    # the header is compared first, so a file is not read to its end at every batch.
    probe = min(end, pos + HEADER_SIZE_UP_TO_MAGIC)
    if bytes(buf[pos:probe]) != bytes(probe - pos):
        return False
    return not np.frombuffer(buf, dtype=np.uint8, count=end - probe, offset=probe).any()


def find_next_entry(buf: bytes | memoryview, start: int, window: int = 1 << 20) -> int | None:
    """First position >= ``start`` holding a plausible entry whose CRC is valid.

    Candidates are positions whose magic byte is 0, 1 or 2 (found with numpy, a window at a time);
    a v2 candidate needs a sane length, to fit in the data, and a valid CRC-32C; a legacy one a
    valid CRC-32. A CRC is the only strong evidence a position really starts a batch.
    """
    end = len(buf)
    arr = np.frombuffer(buf, dtype=np.uint8)
    lo = start
    while lo + HEADER_SIZE_UP_TO_MAGIC <= end:
        hi = min(end - MAGIC_OFFSET, lo + window)
        magics = arr[lo + MAGIC_OFFSET : hi + MAGIC_OFFSET]
        for rel in np.flatnonzero(magics <= MAGIC_V2):
            q = lo + int(rel)
            if _plausible_at(buf, q, end):
                return q
        lo = hi
    return None


def _plausible_at(buf: bytes | memoryview, q: int, end: int) -> bool:
    magic = buf[q + MAGIC_OFFSET]
    length = LENGTH_FIELD.unpack_from(buf, q + LENGTH_OFFSET)[0]
    if magic == MAGIC_V2:
        if length < MIN_BATCH_LENGTH or q + LOG_OVERHEAD + length > end:
            return False
        stored = CRC_FIELD.unpack_from(buf, q + CRC_OFFSET)[0]
        return crc32c_of(memoryview(buf)[q + CRC_START : q + LOG_OVERHEAD + length]) == stored
    if length < LEGACY_MIN_MESSAGE[magic] or q + LOG_OVERHEAD + length > end:
        return False
    stored = struct.unpack_from(">I", buf, q + LOG_OVERHEAD)[0]
    body = memoryview(buf)[q + LOG_OVERHEAD + 4 : q + LOG_OVERHEAD + length]
    return zlib.crc32(body) == stored
