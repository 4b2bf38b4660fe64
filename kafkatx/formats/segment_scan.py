"""Fast columnar scan of a whole segment: batch headers as numpy columns, problems on the side.

The v2 hot path runs in :func:`kafkatx.formats.batchscan.scan_v2_run` (C when built); anything
it stops at (legacy v0/v1 entries, damage, a partial tail) goes through the exact construct path
in :mod:`kafkatx.formats.segment`, after which the fast walk resumes. Control batches (a few per
transaction) have their control record decoded for ``control_type``/``coordinator_epoch``.
The result equals reading the segment with :func:`kafkatx.formats.segment.iter_segment`
(proven by tests), at a fraction of the cost.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from kafkatx.errors import FormatError
from kafkatx.formats import batchscan
from kafkatx.formats.batch_layout import RECORD_BATCH_OVERHEAD
from kafkatx.formats.batch_values import ControlType
from kafkatx.formats.batchscan import HeaderColumns, Release, StopReason, scan_v2_run
from kafkatx.lazy_dataclass import dataclass

if TYPE_CHECKING:  # the exact parsers (construct) load only where the C walk stops or a CRC fails
    from kafkatx.formats.segment import SegmentEntry, SegmentProblem

NO_CONTROL = -1


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class SegmentScan:
    """Every entry of one segment file as columns, in file order, plus what was wrong."""

    path: str | None
    headers: HeaderColumns
    control_type: npt.NDArray[np.int16]  # ControlType id, -1 for data batches
    coordinator_epoch: npt.NDArray[np.int32]  # from COMMIT/ABORT markers, else -1
    problems: tuple[SegmentProblem, ...]
    size: int

    def __len__(self) -> int:
        return len(self.headers)


def _entry_columns(entry: SegmentEntry) -> HeaderColumns:
    """One row from an entry read by the exact path (a legacy entry has no producer fields)."""
    from kafkatx.formats.record_batch import RecordBatch

    if isinstance(entry, RecordBatch):
        h = entry.header
        row: dict[str, int | bool] = {
            "position": entry.position, "base_offset": h.base_offset,
            "batch_length": h.batch_length, "partition_leader_epoch": h.partition_leader_epoch,
            "magic": h.magic, "crc": h.crc, "attributes": h.attributes,
            "last_offset_delta": h.last_offset_delta, "base_timestamp": h.base_timestamp,
            "max_timestamp": h.max_timestamp, "producer_id": h.producer_id,
            "producer_epoch": h.producer_epoch, "base_sequence": h.base_sequence,
            "records_count": h.records_count, "crc_valid": entry.crc_valid,
        }
    else:
        m = entry.message
        row = {
            "position": m.position, "base_offset": entry.base_offset,
            "batch_length": m.size, "partition_leader_epoch": -1, "magic": m.magic,
            "crc": m.crc, "attributes": m.attributes,
            "last_offset_delta": entry.last_offset - entry.base_offset,
            "base_timestamp": m.timestamp, "max_timestamp": m.timestamp, "producer_id": -1,
            "producer_epoch": -1, "base_sequence": -1, "records_count": entry.count,
            "crc_valid": m.crc_valid,
        }
    empty = HeaderColumns.empty()
    return HeaderColumns(**{name: np.array([row[name]], dtype=getattr(empty, name).dtype)
                            for name in HeaderColumns.COLUMNS})


def page_releaser(buf: object) -> Release | None:
    """For a memory-mapped segment, a ``release(lo, hi)`` that drops the mapping's pages of
    ``[lo, hi)`` from this process (``madvise(MADV_DONTNEED)``; whole pages, the one holding
    ``hi`` kept): the walk then holds a window of the file resident instead of all of it. The
    file and the page cache are untouched (a read-only shared mapping: a page read again is
    mapped again). None for bytes, which are in memory anyway."""
    if not isinstance(buf, mmap.mmap) or not hasattr(mmap, "MADV_DONTNEED"):
        return None
    page = mmap.PAGESIZE
    refused = False

    def release(lo: int, hi: int) -> None:
        nonlocal refused
        first, last = lo - lo % page, hi - hi % page
        if last > first and not refused:
            try:
                buf.madvise(mmap.MADV_DONTNEED, first, last - first)
            except OSError:
                refused = True  # a hint only: the scan goes on with the pages resident

    return release


def scan_segment(buf: bytes | memoryview, *, path: str | None = None) -> SegmentScan:
    """Scan every entry of a segment buffer into columns; damage becomes ``problems``.

    A mapped segment (``mmap``) is walked window by window and each window's pages dropped
    once walked (:func:`page_releaser`): what stays resident is the columns (76 bytes a batch,
    :class:`SegmentScan`), not the file."""
    return next(scan_segment_chunks(buf, path=path, release=page_releaser(buf)))


def scan_segment_chunks(buf: bytes | memoryview, *, path: str | None = None,
                        window: int | None = None, release: Release | None = None,
                        start: int = 0) -> Iterator[SegmentScan]:
    """:func:`scan_segment` as consecutive scans of about ``window`` bytes of the file each
    (None: one scan of all of it), in file order: their rows and problems, one after the
    other, are the whole scan's. A chunk ends at the first batch boundary at or past its
    window (a batch larger than a window is a chunk of its own); its ``size`` is where it
    ends. A caller holding one chunk at a time holds O(window) columns, not O(segment);
    ``release`` is handed what each walk leaves behind, as :func:`scan_segment` does.
    ``start``: where the walk begins, a batch boundary (the start of a chunk walked before)."""
    end = len(buf)
    pos = start
    while True:
        first = pos
        limit = end if window is None else min(end, pos + window)
        parts: list[HeaderColumns] = []
        problems: list[SegmentProblem] = []
        while pos < end:
            cols, stop, reason = scan_v2_run(buf, pos, limit, release=release)
            if len(cols):
                parts.append(cols)
                problems.extend(_crc_problems(buf, cols, path))
            pos = stop
            if stop == limit < end or (reason in _WINDOW_CUTS and limit < end):
                if parts or problems:
                    break  # the window's end, or a batch it cuts: the next chunk's start
                limit = min(end, limit + (window or end))  # a batch larger than a window
                continue
            if reason == StopReason.END:
                break
            from kafkatx.formats.segment import read_entry

            entry, found, nxt = read_entry(buf, stop, path=path)
            problems.extend(found)
            if entry is not None:
                parts.append(_entry_columns(entry))
            pos = end if nxt is None else nxt
            if pos >= limit:
                break
        yield _with_controls(buf, HeaderColumns.concat(parts), problems, path, release,
                             size=end if window is None else pos)
        if pos >= end or window is None:
            return
        assert pos > first, "each chunk moves on"


# How a walk stops at a window's end that is not the file's: a batch the window cuts.
_WINDOW_CUTS = (StopReason.PAST_END, StopReason.SHORT_HEADER)


def _with_controls(buf: bytes | memoryview, headers: HeaderColumns,
                   problems: list[SegmentProblem], path: str | None, release: Release | None,
                   *, size: int) -> SegmentScan:
    """The scan of ``headers``, its control batches' types and coordinator epochs decoded."""
    control_type = np.full(len(headers), NO_CONTROL, dtype=np.int16)
    coordinator_epoch = np.full(len(headers), -1, dtype=np.int32)
    controls = np.flatnonzero(headers.is_control & (headers.magic == 2)
                              & (headers.records_count > 0))
    for i in _decode_markers(buf, headers, controls, control_type, coordinator_epoch, release):
        from kafkatx.formats.record_batch import parse_batch
        from kafkatx.formats.segment import invalid_batch_problem

        pos = int(headers.position[i])
        try:
            control = parse_batch(buf, pos, path=path).control
        except FormatError as exc:
            problems.append(invalid_batch_problem(exc, pos, int(headers.size[i]), path))
            continue
        if control is not None:
            control_type[i] = control.type_id
            if control.coordinator_epoch is not None:
                coordinator_epoch[i] = control.coordinator_epoch
    problems.sort(key=lambda p: p.position)
    return SegmentScan(path=path, headers=headers, control_type=control_type,
                       coordinator_epoch=coordinator_epoch, problems=tuple(problems), size=size)


# The one control record of an uncompressed COMMIT/ABORT marker as Kafka writes it
# (``EndTransactionMarker``: key = version 0 + type, value = version 0 + coordinator epoch),
# from the batch start: record length 16 (zigzag 0x20), attributes, single-byte timestamp and
# offset deltas, key length 4 (0x08), 4 key bytes, value length 6 (0x0c), 6 value bytes, no
# headers (0x00).
MARKER_RECORD_END = RECORD_BATCH_OVERHEAD + 17
_MARKER_BYTES = {61: 0x20, 65: 0x08, 70: 0x0C, 77: 0x00}


# Control batches whose marker bytes are gathered at once, at most: a group also spans at most
# ``RELEASE_WINDOW`` bytes of the file, and its pages are dropped again after it (``release``),
# so a mapped segment's markers never make all of it resident (one marker every few 10 KB
# batches touches every page).
MARKER_GROUP = 4096


def _decode_markers(buf: bytes | memoryview, headers: HeaderColumns, rows: npt.NDArray[np.intp],
                    control_type: npt.NDArray[np.int16],
                    coordinator_epoch: npt.NDArray[np.int32],
                    release: Release | None = None) -> npt.NDArray[np.intp]:
    """Fill ``control_type``/``coordinator_epoch`` of the control batches at ``rows`` that have
    exactly the fixed layout above, read straight from the bytes; returns the other rows (any
    other layout, type or compression), which the caller decodes the exact way."""
    if release is None or not len(rows):
        return _decode_marker_group(buf, headers, rows, control_type, coordinator_epoch)
    positions = headers.position[rows]
    rest = []
    start = 0
    while start < len(rows):
        span_end = int(np.searchsorted(positions, positions[start] + batchscan.RELEASE_WINDOW))
        stop = max(start + 1, min(span_end, start + MARKER_GROUP))
        group = rows[start:stop]
        rest.append(_decode_marker_group(buf, headers, group, control_type, coordinator_epoch))
        release(int(positions[start]), int(positions[stop - 1]) + MARKER_RECORD_END)
        start = stop
    return np.concatenate(rest)


def _decode_marker_group(buf: bytes | memoryview, headers: HeaderColumns,
                         rows: npt.NDArray[np.intp], control_type: npt.NDArray[np.int16],
                         coordinator_epoch: npt.NDArray[np.int32]) -> npt.NDArray[np.intp]:
    if not len(rows):
        return rows
    fits = ((headers.compression[rows] == 0)
            & (headers.size[rows] >= MARKER_RECORD_END))
    cand = rows[fits]
    data = np.frombuffer(buf, dtype=np.uint8)
    at = headers.position[cand][:, None] + np.arange(MARKER_RECORD_END, dtype=np.int64)
    rec = data[at] if len(cand) else np.zeros((0, MARKER_RECORD_END), dtype=np.uint8)
    ok = np.ones(len(cand), dtype=bool)
    for offset, value in _MARKER_BYTES.items():
        ok &= rec[:, offset] == value
    ok &= (rec[:, 63] < 0x80) & (rec[:, 64] < 0x80)  # one-byte varints
    ok &= rec[:, 66] < 0x80  # key version >= 0
    key_type = (rec[:, 68].astype(np.int16) << 8) | rec[:, 69]
    ok &= (rec[:, 68] < 0x80) & ((key_type == ControlType.ABORT)
                                  | (key_type == ControlType.COMMIT))
    epoch = rec[:, 73:77].copy().view(">i4").reshape(-1).astype(np.int32)
    control_type[cand[ok]] = key_type[ok]
    coordinator_epoch[cand[ok]] = epoch[ok]
    rest = np.ones(len(rows), dtype=bool)
    rest[np.flatnonzero(fits)[ok]] = False
    return rows[rest]


def _crc_problems(
    buf: bytes | memoryview, cols: HeaderColumns, path: str | None
) -> list[SegmentProblem]:
    bad = np.flatnonzero(~cols.crc_valid)
    if not len(bad):
        return []
    from kafkatx.formats.record_batch import compute_crc
    from kafkatx.formats.segment import CRC_MISMATCH, SegmentProblem, crc_mismatch_message

    out = []
    for i in bad:
        pos, size = int(cols.position[i]), int(cols.size[i])
        out.append(SegmentProblem(
            kind=CRC_MISMATCH, position=pos, length=size, path=path,
            message=crc_mismatch_message(int(cols.base_offset[i]), int(cols.crc[i]),
                                         compute_crc(buf, pos, size)),
        ))
    return out
