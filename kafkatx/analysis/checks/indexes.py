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
from kafkatx.formats.batchscan import HeaderColumns
from kafkatx.formats.index_columns import OffsetIndexColumns, TimeIndexColumns
from kafkatx.formats.segment_scan import SegmentScan

INFO = "info"


class IndexesWalk:
    """The segment's ``.index`` and ``.timeindex`` entries against its batches, walked chunk by
    chunk: per entry, what the batches it points at say (the index files are small next to the
    segment: an offset entry per ``index.interval.bytes``)."""

    def __init__(self, ctx: SegmentContext) -> None:
        self.ctx = ctx
        self.offsets = (None if ctx.offset_index is None or not len(ctx.offset_index)
                        else _OffsetEntries(ctx.offset_index))
        self.times = (None if ctx.time_index is None or not len(ctx.time_index)
                      else _TimeEntries(ctx.time_index))
        self.chunks = 0

    @property
    def whole_segment_needed(self) -> bool:
        return self.chunks > 1 and self.times is not None and not self.times.sorted

    def feed(self, chunk: SegmentScan) -> None:
        h = chunk.headers
        if not len(h):
            return
        self.chunks += 1
        if self.offsets is not None:
            self.offsets.feed(h)
        if self.times is not None:
            self.times.feed(h)

    def findings(self) -> Iterator[Finding]:
        ctx = self.ctx
        yield from _missing_files(ctx)
        if ctx.offset_index is not None:
            yield from _file_problems(ctx, ctx.offset_index, ctx.offset_index_sanity,
                                      "OffsetIndex#sanityCheck")
            if self.offsets is not None:
                yield from _first_bad_entry(ctx, ctx.offset_index, self.offsets.bad(ctx),
                                            lambda e: f"offset {e.offset} -> position "
                                                      f"{e.position}")
        if ctx.time_index is not None:
            yield from _file_problems(ctx, ctx.time_index, ctx.time_index_sanity,
                                      "TimeIndex#sanityCheck")
            if self.times is not None:
                yield from _first_bad_entry(ctx, ctx.time_index, self.times.bad(ctx),
                                            lambda e: f"timestamp {e.timestamp} -> offset "
                                                      f"{e.offset}")


walk_segment = IndexesWalk


def _finding(ctx: SegmentContext, message: str, where: str | None, *, offset: int | None = None,
             severity: str | None = None) -> Finding:
    return Finding(kind="index_mismatch", topic=ctx.topic, partition=ctx.partition,
                   offset=offset, location=where, message=message, severity=severity)


def _missing_files(ctx: SegmentContext) -> Iterator[Finding]:
    """``LogLoader#loadSegmentFiles``: no .index -> the segment is recovered (indexes rebuilt);
    no .timeindex -> an empty one is created (``LogSegment#sanityCheck``)."""
    if not ctx.batches:
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


class _Ordered:
    """Entry numbers in the order of their ``keys``: those with a key in a range are picked
    without a pass over every entry (a chunk meets few of a segment's index entries)."""

    def __init__(self, keys: npt.NDArray[np.int64]) -> None:
        self.order = np.argsort(keys, kind="stable")
        self.keys = keys[self.order]

    def between(self, lo: int, hi: int, *, closed: str) -> npt.NDArray[np.intp]:
        """Keys in [lo, hi) (``closed="lo"``), (lo, hi] (``"hi"``) or [lo, hi] (``"both"``)."""
        a = np.searchsorted(self.keys, lo, side="left" if closed in ("lo", "both") else "right")
        b = np.searchsorted(self.keys, hi, side="right" if closed in ("hi", "both") else "left")
        return self.order[a:b]


class _OffsetEntries:
    """Per offset-index entry: the batch starting at its position (``LogSegment#append``
    indexes a batch's start) and the last offset written before the next entry's position."""

    def __init__(self, read: OffsetIndexColumns) -> None:
        self.eo, self.ep = read.offset, read.position
        m = len(read)
        self.next_pos = np.append(self.ep[1:], np.iinfo(np.int64).max)
        self.by_pos = _Ordered(self.ep)
        self.by_next_pos = _Ordered(self.next_pos)
        self.at_batch = np.zeros(m, dtype=bool)
        self.lower = np.zeros(m, dtype=np.int64)  # the base offset of the batch at it
        self.lower_last = np.zeros(m, dtype=np.int64)  # and its last offset
        self.upper = np.zeros(m, dtype=np.int64)
        self.upper_set = np.zeros(m, dtype=bool)
        self.first_last: int | None = None  # the segment's first batch's last offset
        self.prev_pos = -1  # the position of the last batch fed so far
        self.seg_last = -1  # and its last offset

    def feed(self, h: HeaderColumns) -> None:
        pos, base, last = h.position, h.base_offset, h.last_offset
        n = len(h)
        if self.first_last is None:
            self.first_last = int(last[0])
        k = self.by_pos.between(int(pos[0]), int(pos[-1]), closed="both")
        if len(k):
            ep = self.ep[k]
            i = np.searchsorted(pos, ep)
            ic = np.minimum(i, n - 1)
            hit = (i < n) & (pos[ic] == ep)
            self.at_batch[k[hit]] = True
            self.lower[k[hit]] = base[ic[hit]]
            self.lower_last[k[hit]] = last[ic[hit]]
        # The append that wrote an entry ends at or before the next entry's position: the last
        # batch before it is in this chunk, or the previous chunk's last.
        k = self.by_next_pos.between(self.prev_pos, int(pos[-1]), closed="hi")
        if len(k):
            j = np.searchsorted(pos, self.next_pos[k], side="left") - 1
            inside = j >= 0
            self.upper[k[inside]] = last[j[inside]]
            self.upper_set[k[inside]] = True
            if self.prev_pos >= 0:
                self.upper[k[~inside]] = self.seg_last
                self.upper_set[k[~inside]] = True
        self.prev_pos = int(pos[-1])
        self.seg_last = int(last[-1])

    def bad(self, ctx: SegmentContext) -> list[tuple[int, str]]:
        eo, ep = self.eo, self.ep
        size = ctx.size
        if self.first_last is None:
            # An all-zero entry 0 is the preallocated file of a live or crashed segment, not an
            # entry: the append that indexes a batch is never a segment's first
            # (``LogSegment#append`` indexes past ``index.interval.bytes``)
            zero = int(eo[0]) == ctx.base_offset and int(ep[0]) == 0
            return [(k, f"the segment holds no batches ({size} bytes)") for k in range(len(eo))
                    if not (k == 0 and zero)]
        after = self.by_next_pos.between(self.prev_pos, np.iinfo(np.int64).max, closed="hi")
        self.upper[after] = self.seg_last  # the next entry lies past the last batch
        self.upper_set[after] = True
        upper = np.where(self.upper_set, self.upper, self.first_last)
        lower, at_batch = self.lower, self.at_batch
        ok = at_batch & (eo >= lower) & (eo <= upper)
        seg_last = self.seg_last
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
                          f"{int(self.lower_last[k])}, above the entry's offset: lookups of "
                          f"offset {o} skip records")
            else:
                reason = (f"offset {o} is above {int(upper[k])}, the last offset written before "
                          "the next entry's position (Kafka indexes a batch's last offset)")
            out.append((k, reason))
        return out


def _damage_note(ctx: SegmentContext, position: int) -> str:
    for p in ctx.problems:
        if p.position <= position < p.position + max(p.length, 1):
            return f" (it falls in damaged bytes at {p.position}: {p.kind})"
    return ""


class _TimeEntries:
    """Per time-index entry: the last batch starting at or before its offset, that batch's
    last offset, the next batch's base offset and the newest timestamp up to it
    (``TimeIndex#maybeAppend`` indexes the newest timestamp seen so far). Exact while the base
    offsets only go up (``sorted``); a segment whose offsets go back is judged whole."""

    def __init__(self, read: TimeIndexColumns) -> None:
        self.eo, self.et = read.offset, read.timestamp
        m = len(read)
        self.by_offset = _Ordered(self.eo)
        self.found = np.zeros(m, dtype=bool)
        self.at_last = np.zeros(m, dtype=np.int64)  # last offset of the batch found
        self.newest = np.zeros(m, dtype=np.int64)  # newest timestamp up to it
        self.next_base = np.zeros(m, dtype=np.int64)  # base offset of the batch after it
        self.pending = np.zeros(0, dtype=np.intp)  # found at a chunk's last batch
        self.first_base: int | None = None
        # The last batch fed so far: its base and last offset, the newest timestamp up to it
        self.carry: tuple[int, int, int] | None = None
        self.seg_last = -1
        self.sorted = True

    def _at(self, k: npt.NDArray[np.intp], h: HeaderColumns, newest: npt.NDArray[np.int64]
            ) -> None:
        """The entries ``k`` against the chunk ``h``: the last batch starting at or before
        their offset (a binary search of its base offsets, as for the whole segment)."""
        base = h.base_offset
        i = np.searchsorted(base, self.eo[k], side="right") - 1
        seen = i >= 0
        k, rows = k[seen], i[seen]
        self.found[k] = True
        self.at_last[k] = h.last_offset[rows]
        self.newest[k] = newest[rows]
        inside = rows + 1 < len(h)
        self.next_base[k[inside]] = base[rows[inside] + 1]
        self.pending = k[~inside]

    def feed(self, h: HeaderColumns) -> None:
        base = h.base_offset
        b0, b1 = int(base[0]), int(base[-1])
        if self.first_base is None:
            self.first_base = b0
        self.next_base[self.pending] = b0
        if self.sorted and ((self.carry is not None and b0 < self.carry[0])
                            or bool((base[1:] < base[:-1]).any())):
            self.sorted = False
        newest = np.maximum.accumulate(h.max_timestamp)
        if self.carry is not None:
            newest = np.maximum(newest, self.carry[2])
        if not self.sorted:  # judged on the whole segment: every entry against it
            self._at(np.arange(len(self.eo)), h, newest)
        else:
            if self.carry is not None:  # between the previous chunk's last batch and this one
                cb, clast, cnewest = self.carry
                k = self.by_offset.between(cb, b0, closed="lo")
                self.found[k] = True
                self.at_last[k] = clast
                self.newest[k] = cnewest
                self.next_base[k] = b0
            self._at(self.by_offset.between(b0, b1, closed="lo"), h, newest)
        self.carry = (b1, int(h.last_offset[-1]), int(newest[-1]))
        self.seg_last = int(h.last_offset[-1])

    def bad(self, ctx: SegmentContext) -> list[tuple[int, str]]:
        eo, et = self.eo, self.et
        if self.first_base is None:
            return [(k, "the segment holds no batches") for k in range(len(eo))]
        seg_last = self.seg_last
        if self.sorted and self.carry is not None:  # at or after the last batch's base
            cb, clast, cnewest = self.carry
            k = self.by_offset.between(cb, np.iinfo(np.int64).max, closed="both")
            self.found[k] = True
            self.at_last[k] = clast
            self.newest[k] = cnewest
        found, at_last, newest = self.found, self.at_last, self.newest
        bad = (eo > seg_last) | ~found | (eo > at_last) | (et > newest)
        out: list[tuple[int, str]] = []
        for k in np.flatnonzero(bad).tolist():
            o, t = int(eo[k]), int(et[k])
            if o > seg_last:
                reason = f"offset {o} is beyond the segment's last offset {seg_last}"
            elif not found[k]:
                reason = f"offset {o} is before the segment's first batch at {self.first_base}"
            elif o > at_last[k]:
                reason = (f"offset {o} is in no batch of the segment (the batches around it end "
                          f"at {int(at_last[k])} and start again at {int(self.next_base[k])})")
            else:
                reason = (f"no batch up to offset {o} has a timestamp as new as {t} (the newest "
                          f"is {int(newest[k])}; Kafka only indexes the newest timestamp seen so "
                          "far)")
            out.append((k, reason))
        return out
