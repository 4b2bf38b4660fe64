"""A segment's ``.index`` and ``.timeindex`` against its batches: index_mismatch.

Mirrors how Kafka writes them, ``LogSegment#append`` (and ``LogSegment#recover``, which rebuilds
them the same way): every ``index.interval.bytes`` an offset-index entry maps a batch's last
offset to the batch's start position (Kafka 4.x, per batch; older brokers wrote the largest
offset of the whole append, or its first offset, at the append's start position), and the time
index gets ``TimeIndex#maybeAppend(maxTimestampSoFar, offsetOfMaxTimestampSoFar)``. So an offset
entry must point at the start of a batch, with an offset from that batch's base offset up to the
last offset written before the next entry's position; a time entry's offset must lie in the
segment and its timestamp cannot be newer than every batch up to that offset.

Also reported: what ``OffsetIndex#sanityCheck`` / ``TimeIndex#sanityCheck`` reject (what
``kafka-dump-log.sh --index-sanity-check`` prints), entries the readers had to skip, and a
preallocated zero tail left on a segment that is no longer active (``LogSegment#
onBecomeInactiveSegment`` trims it on roll). Missing index files are a note only: ``LogLoader
#loadSegmentFiles`` rebuilds a missing offset index and recreates a missing time index.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from kafkatx.analysis.checks.context import SegmentContext
from kafkatx.analysis.findings import Finding, location
from kafkatx.errors import FormatError
from kafkatx.formats.index_columns import OffsetIndexColumns, TimeIndexColumns

INFO = "info"


def check_segment(ctx: SegmentContext) -> Iterator[Finding]:
    yield from _missing_files(ctx)
    if ctx.offset_index is not None:
        yield from _offset_index(ctx, ctx.offset_index)
    if ctx.time_index is not None:
        yield from _time_index(ctx, ctx.time_index)


def _finding(ctx: SegmentContext, message: str, where: str | None, *, offset: int | None = None,
             severity: str | None = None) -> Finding:
    return Finding(kind="index_mismatch", topic=ctx.topic, partition=ctx.partition,
                   offset=offset, location=where, message=message, severity=severity)


def _missing_files(ctx: SegmentContext) -> Iterator[Finding]:
    """``LogLoader#loadSegmentFiles``: no .index -> the segment is recovered (indexes rebuilt);
    no .timeindex -> an empty one is created (``LogSegment#sanityCheck``)."""
    if not len(ctx.scan.headers):
        return
    name = os.path.basename(ctx.log_path)
    if ctx.offset_index is None:
        yield _finding(ctx, f"{name} has no .index file: a broker loading this log dir rebuilds "
                            "the segment's indexes from the log (LogLoader recovers it)",
                       ctx.log_path, severity=INFO)
    elif ctx.time_index is None:
        yield _finding(ctx, f"{name} has no .timeindex file: a broker loading this log dir "
                            "creates an empty one, so timestamp lookups scan this segment",
                       ctx.log_path, severity=INFO)


def _is_active(ctx: SegmentContext) -> bool:
    return ctx.next_base_offset is None


def _file_problems(ctx: SegmentContext, read: OffsetIndexColumns | TimeIndexColumns,
                   sanity: Sequence[FormatError], kafka_check: str) -> Iterator[Finding]:
    """Entries the reader skipped, the sanity check's verdict, and a leftover zero tail."""
    path = read.path
    name = os.path.basename(path) if path else "index"
    seen: set[tuple[int | None, str]] = set()
    for p in read.problems:
        seen.add((p.position, p.message))
        note = "" if p.field == "length" else " (entry ignored)"
        yield _finding(ctx, f"{name}: {p.message}{note}", location(p.path, p.position))
    tail = read.preallocated_tail_bytes
    tail_fails_sanity = False
    for p in sanity:
        if (p.position, p.message) in seen:
            continue
        if tail and p.field == "timestamp":
            tail_fails_sanity = True  # the zero tail's last slot: reported with the tail below
            continue
        yield _finding(ctx, f"{name} fails {kafka_check} (kafka-dump-log.sh "
                            f"--index-sanity-check): {p.message}",
                       location(p.path, p.position))
    if tail and not _is_active(ctx):
        msg = (f"{name} keeps a {tail}-byte preallocated zero tail after {len(read)} "
               "entries although its segment is no longer active (Kafka trims indexes on roll): "
               "the broker stopped before the trim reached disk")
        if tail_fails_sanity:
            msg += f"; {kafka_check} rejects the file as it is"
        yield _finding(ctx, msg, path, severity=INFO)


def _offset_index(ctx: SegmentContext, read: OffsetIndexColumns) -> Iterator[Finding]:
    """Entries against batch positions and offsets (``LogSegment#append``/``#recover``)."""
    yield from _file_problems(ctx, read, ctx.offset_index_sanity, "OffsetIndex#sanityCheck")
    if len(read):
        yield from _first_bad_entry(ctx, read, _bad_offset_entries(ctx, read),
                                    lambda e: f"offset {e.offset} -> position {e.position}")


def _first_bad_entry(ctx: SegmentContext, read: OffsetIndexColumns | TimeIndexColumns,
                     bad: list[tuple[int, str]], entry: Callable[[Any], str]
                     ) -> Iterator[Finding]:
    """One finding for the entries of ``read`` that disagree with the log, at the first."""
    if bad:
        k, reason = bad[0]
        e = read.entry(k)
        yield _finding(ctx, _summary(read.path, len(bad), len(read), k, entry(e), reason),
                       location(read.path, e.file_position), offset=e.offset)


def _summary(path: str | None, bad: int, total: int, k: int, entry: str, reason: str) -> str:
    name = os.path.basename(path) if path else "the index"
    if bad == 1:
        return f"{name} entry {k} ({entry}) disagrees with the log: {reason}"
    return (f"{bad} of {total} entries of {name} disagree with the log; the first, entry {k} "
            f"({entry}): {reason}")


def _bad_offset_entries(ctx: SegmentContext,
                        read: OffsetIndexColumns) -> list[tuple[int, str]]:
    h = ctx.scan.headers
    n = len(h)
    size = ctx.scan.size
    m = len(read)
    eo, ep = read.offset, read.position
    if not n:
        # An all-zero entry 0 is the preallocated file of a live or crashed segment, not an
        # entry: the append that indexes a batch is never a segment's first
        # (``LogSegment#append`` indexes past ``index.interval.bytes``)
        zero = int(eo[0]) == ctx.base_offset and int(ep[0]) == 0 if m else False
        return [(k, f"the segment holds no batches ({size} bytes)") for k in range(m)
                if not (k == 0 and zero)]
    pos, base, last = h.position, h.base_offset, h.last_offset
    i = np.searchsorted(pos, ep)
    ic = np.minimum(i, n - 1)
    at_batch = (i < n) & (pos[ic] == ep)
    # The append that wrote an entry ends at or before the next entry's position.
    next_pos = np.append(ep[1:], np.iinfo(np.int64).max)
    j = np.clip(np.searchsorted(pos, next_pos, side="left") - 1, 0, n - 1)
    lower, upper = base[ic], last[j]
    ok = at_batch & (eo >= lower) & (eo <= upper)
    seg_last = int(last[-1])
    out: list[tuple[int, str]] = []
    for k in np.flatnonzero(~ok).tolist():
        p, o = int(ep[k]), int(eo[k])
        if p >= size:
            reason = f"position {p} is beyond the end of the segment ({size} bytes)"
        elif not at_batch[k]:
            reason = f"position {p} is not the start of a batch" + _damage_note(ctx, p)
        elif o > seg_last:
            reason = f"offset {o} is beyond the segment's last offset {seg_last}"
        elif o < lower[k]:
            reason = (f"the batch at position {p} holds offsets {int(lower[k])}.."
                      f"{int(last[ic[k]])}, above the entry's offset: lookups of offset {o} "
                      "skip records")
        else:
            reason = (f"offset {o} is above {int(upper[k])}, the last offset written before "
                      "the next entry's position (Kafka indexes a batch's last offset)")
        out.append((k, reason))
    return out


def _damage_note(ctx: SegmentContext, position: int) -> str:
    for p in ctx.scan.problems:
        if p.position <= position < p.position + max(p.length, 1):
            return f" (it falls in damaged bytes at {p.position}: {p.kind})"
    return ""


def _time_index(ctx: SegmentContext, read: TimeIndexColumns) -> Iterator[Finding]:
    """Entries against the batches' offsets and timestamps (``TimeIndex#maybeAppend``)."""
    yield from _file_problems(ctx, read, ctx.time_index_sanity, "TimeIndex#sanityCheck")
    if len(read):
        yield from _first_bad_entry(ctx, read, _bad_time_entries(ctx, read),
                                    lambda e: f"timestamp {e.timestamp} -> offset {e.offset}")


def _bad_time_entries(ctx: SegmentContext,
                      read: TimeIndexColumns) -> list[tuple[int, str]]:
    h = ctx.scan.headers
    n = len(h)
    m = len(read)
    eo, et = read.offset, read.timestamp
    if not n:
        return [(k, "the segment holds no batches") for k in range(m)]
    base, last = h.base_offset, h.last_offset
    newest: npt.NDArray[np.int64] = np.maximum.accumulate(h.max_timestamp)
    i = np.searchsorted(base, eo, side="right") - 1  # the last batch starting at or before
    ic = np.clip(i, 0, n - 1)
    seg_last = int(last[-1])
    bad = (eo > seg_last) | (i < 0) | (eo > last[ic]) | (et > newest[ic])
    out: list[tuple[int, str]] = []
    for k in np.flatnonzero(bad).tolist():
        o, t = int(eo[k]), int(et[k])
        if o > seg_last:
            reason = f"offset {o} is beyond the segment's last offset {seg_last}"
        elif i[k] < 0:
            reason = f"offset {o} is before the segment's first batch at {int(base[0])}"
        elif o > last[ic[k]]:
            reason = (f"offset {o} is in no batch of the segment (the batches around it end at "
                      f"{int(last[ic[k]])} and start again at {int(base[ic[k] + 1])})")
        else:
            reason = (f"no batch up to offset {o} has a timestamp as new as {t} (the newest is "
                      f"{int(newest[ic[k]])}; Kafka only indexes the newest timestamp seen so far)")
        out.append((k, reason))
    return out
