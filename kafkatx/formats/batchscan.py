"""Columnar scan of RecordBatch v2 headers: numpy columns for a whole segment in one pass.

Mirrors the header layout and checks of Kafka's ``DefaultRecordBatch`` (magic 2): for each
batch the 61-byte header is decoded and the stored CRC-32C is compared with the one computed
over ``[attributes, end of batch)`` (``DefaultRecordBatch.isValid``).

The walk runs in the C extension ``kafkatx.formats._batchscan`` when it is built, else in a
pure-Python implementation that gives identical results (set ``KAFKATX_NO_EXTENSION=1`` before
import to force it). A walk stops at the first position it cannot decode as a complete v2
batch and reports why (:class:`StopReason`); the caller handles that spot and may resume.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import field
from enum import IntEnum
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from kafkatx.formats.batch_layout import (
    ATTRIBUTES_OFFSET,
    COMPRESSION_MASK,
    CONTROL_FLAG,
    DELETE_HORIZON_FLAG,
    HEADER,
    HEADER_SIZE_UP_TO_MAGIC,
    LENGTH_FIELD,
    LENGTH_OFFSET,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MIN_BATCH_LENGTH,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG,
)
from kafkatx.lazy_dataclass import dataclass

INT32_MAX = 2**31 - 1
NO_SEQUENCE = -1
DEFAULT_CHUNK = 1 << 22  # rows per C call
# Bytes walked between two ``release`` calls: large enough that a call costs nothing against
# the walk, small against a segment (Kafka's default segment.bytes is 1 GiB).
RELEASE_WINDOW = 16 << 20
Release = Callable[[int, int], None]  # told that buf[lo:hi] will not be read again



class StopReason(IntEnum):
    """Why a scan stopped at ``stop_position`` (checked in this order at each batch)."""

    END = 0  # stop_position == end: everything was consumed
    CAPACITY = 1  # the chunk was full (never returned by scan_v2_run)
    NOT_V2 = 2  # magic byte != 2: a v0/v1 entry, or garbage
    SHORT_HEADER = 3  # fewer than 17, or (magic 2) fewer than 61 bytes remain
    BAD_LENGTH = 4  # batchLength < 49 (negative included)
    PAST_END = 5  # the batch extends past end: a truncated batch


STOP_END = StopReason.END
STOP_CAPACITY = StopReason.CAPACITY
STOP_NOT_V2 = StopReason.NOT_V2
STOP_SHORT_HEADER = StopReason.SHORT_HEADER
STOP_BAD_LENGTH = StopReason.BAD_LENGTH
STOP_PAST_END = StopReason.PAST_END


def _load_extension() -> Any:
    if os.environ.get("KAFKATX_NO_EXTENSION", "") not in ("", "0"):
        return None
    try:
        from kafkatx.formats import _batchscan  # type: ignore[attr-defined]
    except ImportError:
        return None
    # A stale build whose constants disagree with ours is ignored rather than trusted.
    if any(getattr(_batchscan, f"STOP_{r.name}", None) != r.value for r in StopReason):
        return None
    return _batchscan


_ext = _load_extension()
HAVE_EXTENSION: bool = _ext is not None


def _package_crc32c(data: Any) -> int:
    import crc32c  # imported on first use: the package reads its metadata (~15 ms of start-up)

    return int(crc32c.crc32c(data))


# CRC-32C (Castagnoli) of a bytes-like object, as Kafka's Crc32C: the extension's (SSE4.2),
# else the crc32c package's.
crc32c_of: Callable[[Any], int] = _ext._crc32c if _ext is not None else _package_crc32c

# Column name -> dtype, in the order of the C function's out_* arguments (magic excluded: it
# is always 2 for a scanned batch and is filled in here).
_C_COLUMNS: tuple[tuple[str, type[np.generic]], ...] = (
    ("position", np.int64),
    ("base_offset", np.int64),
    ("batch_length", np.int32),
    ("partition_leader_epoch", np.int32),
    ("crc", np.uint32),
    ("attributes", np.int16),
    ("last_offset_delta", np.int32),
    ("base_timestamp", np.int64),
    ("max_timestamp", np.int64),
    ("producer_id", np.int64),
    ("producer_epoch", np.int16),
    ("base_sequence", np.int32),
    ("records_count", np.int32),
    ("crc_valid", np.bool_),
)
_DTYPES: dict[str, np.dtype[Any]] = {name: np.dtype(t) for name, t in _C_COLUMNS}
_DTYPES["magic"] = np.dtype(np.int8)


def _wrap_int32(values: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Two's complement wraparound of int64 values into the int32 range (Java int overflow)."""
    return ((values + 2**31) & 0xFFFFFFFF) - 2**31


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class HeaderColumns:
    """RecordBatch v2 headers as parallel read-only numpy arrays, one row per batch.

    ``position`` is the byte offset of the batch in the scanned buffer; the other columns are
    the raw header fields; ``crc_valid`` says whether the stored crc matched the CRC-32C of
    the batch bytes from the attributes field to the end.
    """

    position: npt.NDArray[np.int64]
    base_offset: npt.NDArray[np.int64]
    batch_length: npt.NDArray[np.int32]
    partition_leader_epoch: npt.NDArray[np.int32]
    magic: npt.NDArray[np.int8]
    crc: npt.NDArray[np.uint32]
    attributes: npt.NDArray[np.int16]
    last_offset_delta: npt.NDArray[np.int32]
    base_timestamp: npt.NDArray[np.int64]
    max_timestamp: npt.NDArray[np.int64]
    producer_id: npt.NDArray[np.int64]
    producer_epoch: npt.NDArray[np.int16]
    base_sequence: npt.NDArray[np.int32]
    records_count: npt.NDArray[np.int32]
    crc_valid: npt.NDArray[np.bool_]
    # Derived columns computed once (read-only like the others): the analysis reads some of
    # them several times per segment.
    _derived: dict[str, npt.NDArray[Any]] = field(default_factory=dict, init=False,
                                                  repr=False)

    COLUMNS: ClassVar[tuple[str, ...]] = (
        "position",
        "base_offset",
        "batch_length",
        "partition_leader_epoch",
        "magic",
        "crc",
        "attributes",
        "last_offset_delta",
        "base_timestamp",
        "max_timestamp",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "records_count",
        "crc_valid",
    )

    def __post_init__(self) -> None:
        n = len(self.position)
        for name in self.COLUMNS:
            arr = getattr(self, name)
            if not isinstance(arr, np.ndarray) or arr.ndim != 1:
                raise ValueError(f"column {name} must be a 1-d numpy array")
            if arr.dtype != _DTYPES[name]:
                raise ValueError(f"column {name} has dtype {arr.dtype}, want {_DTYPES[name]}")
            if len(arr) != n:
                raise ValueError(f"column {name} has {len(arr)} rows, position has {n}")
            arr.flags.writeable = False

    def __len__(self) -> int:
        return len(self.position)

    @classmethod
    def empty(cls) -> HeaderColumns:
        return cls(**{name: np.empty(0, dtype=_DTYPES[name]) for name in cls.COLUMNS})

    @classmethod
    def concat(cls, parts: list[HeaderColumns] | tuple[HeaderColumns, ...]) -> HeaderColumns:
        """Rows of ``parts`` one after the other."""
        if not parts:
            return cls.empty()
        if len(parts) == 1:
            return parts[0]
        return cls(
            **{name: np.concatenate([getattr(p, name) for p in parts]) for name in cls.COLUMNS}
        )

    def _once(self, name: str, compute: Callable[[], npt.NDArray[Any]]) -> npt.NDArray[Any]:
        values = self._derived.get(name)
        if values is None:
            values = compute()
            values.flags.writeable = False
            self._derived[name] = values
        return values

    @property
    def last_offset(self) -> npt.NDArray[np.int64]:
        """``DefaultRecordBatch.lastOffset``: baseOffset + lastOffsetDelta."""
        return self._once("last_offset",
                          lambda: self.base_offset + self.last_offset_delta.astype(np.int64))

    @property
    def size(self) -> npt.NDArray[np.int64]:
        """Total bytes of each batch (``sizeInBytes``): 12 + batchLength."""
        return self._once("size", lambda: self.batch_length.astype(np.int64) + LOG_OVERHEAD)

    @property
    def next_position(self) -> npt.NDArray[np.int64]:
        return self.position + self.size

    @property
    def compression(self) -> npt.NDArray[np.int16]:
        """Codec id (attributes & 7): 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd."""
        return self.attributes & COMPRESSION_MASK

    @property
    def timestamp_type(self) -> npt.NDArray[np.int16]:
        """0 CreateTime, 1 LogAppendTime (attribute bit 3)."""
        return (self.attributes & TIMESTAMP_TYPE_MASK) >> 3

    @property
    def is_transactional(self) -> npt.NDArray[np.bool_]:
        return self._once("is_transactional",
                          lambda: (self.attributes & TRANSACTIONAL_FLAG) != 0)

    @property
    def is_control(self) -> npt.NDArray[np.bool_]:
        return self._once("is_control", lambda: (self.attributes & CONTROL_FLAG) != 0)

    @property
    def has_delete_horizon(self) -> npt.NDArray[np.bool_]:
        return (self.attributes & DELETE_HORIZON_FLAG) != 0

    @property
    def last_sequence(self) -> npt.NDArray[np.int32]:
        """``DefaultRecordBatch.lastSequence``: incrementSequence(baseSequence, lastOffsetDelta).

        Sequences wrap from INT32_MAX to 0 as in ``DefaultRecordBatch.incrementSequence``, with
        Java int overflow semantics for any input; -1 (NO_SEQUENCE) stays -1.
        """
        return self._once("last_sequence", self._last_sequence)

    def _last_sequence(self) -> npt.NDArray[np.int32]:
        seq = self.base_sequence.astype(np.int64)
        delta = self.last_offset_delta.astype(np.int64)
        if bool(((seq < NO_SEQUENCE) | (delta < 0)).any()):
            # Garbage (never written by Kafka): Java's int arithmetic step by step.
            wraps = seq > _wrap_int32(INT32_MAX - delta)
            result = _wrap_int32(np.where(wraps, delta - (INT32_MAX - seq) - 1, seq + delta))
            return np.where(seq == NO_SEQUENCE, NO_SEQUENCE, result).astype(np.int32)
        # Sequences >= 0 (or -1) and deltas >= 0: seq + delta, minus 2^31 past INT32_MAX.
        last = seq
        last += delta
        last[last > INT32_MAX] -= INT32_MAX + 1
        last[self.base_sequence == NO_SEQUENCE] = NO_SEQUENCE
        return last.astype(np.int32)

    def to_dict(self) -> dict[str, list[int] | list[bool]]:
        """Column name -> list of plain ints (bools for crc_valid)."""
        return {name: getattr(self, name).tolist() for name in self.COLUMNS}


def _check_range(nbytes: int, start: int, end: int | None, chunk: int) -> int:
    if end is None:
        end = nbytes
    if not 0 <= start <= end <= nbytes:
        raise ValueError(f"need 0 <= start <= end <= {nbytes}, got start={start} end={end}")
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    return end


_WINDOW_STOPS = (StopReason.END, StopReason.PAST_END, StopReason.SHORT_HEADER)


def _fill(mv: memoryview, pos: int, end: int, cols: list[npt.NDArray[Any]],
          release: Release | None) -> tuple[int, int, int]:
    """One C call filling ``cols`` from ``pos``; with ``release``, window by window
    (``RELEASE_WINDOW`` bytes), each window's bytes handed to ``release`` once walked."""
    if release is None:
        return _ext.scan_v2(mv, pos, end, len(cols[0]), *cols)  # type: ignore[no-any-return]
    filled = 0
    stop = min(end, pos + RELEASE_WINDOW)
    while True:
        n, nxt, reason = _ext.scan_v2(mv, pos, stop, len(cols[0]) - filled,
                                      *(c[filled:] for c in cols))
        filled += n
        release(pos, nxt)
        pos = nxt
        # The window's end, or a batch it cuts, is no stop of the walk: the next window goes
        # on from there (growing past a batch larger than a window). Anything else is.
        if stop < end and reason in _WINDOW_STOPS:
            stop = min(end, stop + RELEASE_WINDOW)
            continue
        return filled, pos, reason


def scan_v2_run(
    buf: Any, start: int = 0, end: int | None = None, *, chunk: int = DEFAULT_CHUNK,
    release: Release | None = None,
) -> tuple[HeaderColumns, int, StopReason]:
    """Decode consecutive v2 batch headers in ``buf[start:end]``.

    ``buf`` is any C-contiguous bytes-like object (bytes, bytearray, memoryview, mmap).
    Returns the columns (positions are absolute in ``buf``), the position where the walk
    stopped and why (never ``CAPACITY``). Uses the C extension when built, else
    :func:`scan_v2_run_python`.

    The C function fills at most ``chunk`` rows per call; each call's arrays are sized
    ``min(chunk, remaining bytes // 61 + 1)`` (only touched pages become resident), and the
    chunks are concatenated at the end. A large chunk avoids that copy and the page faults of
    many small arrays: 4 Mi rows scans 200 MB of 100-byte batches about twice as fast as 64 Ki.

    ``release(lo, hi)``, when given, is called as the walk leaves ``buf[lo:hi]`` behind, every
    ``RELEASE_WINDOW`` bytes: a mapped segment's pages can then be dropped as it goes (see
    :func:`kafkatx.formats.segment_scan.scan_segment`) instead of all being resident at once.
    """
    if _ext is None:
        found = scan_v2_run_python(buf, start, end, chunk=chunk)
        if release is not None:
            release(start, found[1])
        return found
    with memoryview(buf) as raw, raw.cast("B") as mv:
        end = _check_range(mv.nbytes, start, end, chunk)
        parts: list[HeaderColumns] = []
        pos = start
        while True:
            # A batch takes at least 61 bytes: no need for more rows than that allows.
            capacity = min(chunk, (end - pos) // RECORD_BATCH_OVERHEAD + 1)
            cols = [np.empty(capacity, dtype=t) for _, t in _C_COLUMNS]
            n, pos, reason = _fill(mv, pos, end, cols, release)
            if n:
                # Shrink each array in place (realloc: no copy, the unused tail is freed; no
                # view of them exists yet).
                for c in cols:
                    if n < capacity:
                        c.resize(n, refcheck=False)
                named = {name: c for (name, _), c in zip(_C_COLUMNS, cols, strict=True)}
                parts.append(HeaderColumns(magic=np.full(n, 2, dtype=np.int8), **named))
            if reason != StopReason.CAPACITY:
                return HeaderColumns.concat(parts), pos, StopReason(reason)


_ROW_DTYPE = np.dtype(
    [("position", np.int64)]
    + [(name, _DTYPES[name]) for name in HeaderColumns.COLUMNS[1:-1]]
    + [("crc_valid", np.bool_)]
)


def _stop_reason(mv: memoryview, pos: int, end: int) -> StopReason:
    """Why no whole v2 batch starts at ``pos`` (same checks, same order as the C walk)."""
    remaining = end - pos
    if remaining == 0:
        return StopReason.END
    if remaining < HEADER_SIZE_UP_TO_MAGIC:
        return StopReason.SHORT_HEADER
    if mv[pos + MAGIC_OFFSET] != 2:
        return StopReason.NOT_V2
    if remaining < RECORD_BATCH_OVERHEAD:
        return StopReason.SHORT_HEADER
    (batch_length,) = LENGTH_FIELD.unpack_from(mv, pos + LENGTH_OFFSET)
    if batch_length < MIN_BATCH_LENGTH:
        return StopReason.BAD_LENGTH
    return StopReason.PAST_END


def scan_v2_run_python(
    buf: Any, start: int = 0, end: int | None = None, *, chunk: int = DEFAULT_CHUNK
) -> tuple[HeaderColumns, int, StopReason]:
    """Pure-Python twin of :func:`scan_v2_run` with identical results (``chunk`` is checked
    but otherwise unused)."""
    rows: list[tuple[Any, ...]] = []
    append = rows.append
    unpack = HEADER.unpack_from
    crc = _package_crc32c
    with memoryview(buf) as raw, raw.cast("B") as mv:
        end = _check_range(mv.nbytes, start, end, chunk)
        pos = start
        last_header = end - RECORD_BATCH_OVERHEAD
        while pos <= last_header and mv[pos + MAGIC_OFFSET] == 2:
            row = unpack(mv, pos)
            batch_length = row[1]
            next_pos = pos + LOG_OVERHEAD + batch_length
            if batch_length < MIN_BATCH_LENGTH or next_pos > end:
                break
            append((pos, *row, crc(mv[pos + ATTRIBUTES_OFFSET : next_pos]) == row[4]))
            pos = next_pos
        reason = _stop_reason(mv, pos, end)
    if not rows:
        return HeaderColumns.empty(), pos, reason
    table = np.array(rows, dtype=_ROW_DTYPE)
    columns = {name: np.ascontiguousarray(table[name]) for name in HeaderColumns.COLUMNS}
    return HeaderColumns(**columns), pos, reason
