"""Which offsets of a partition Kafka's log cleaner has been over.

The cleaner (``LogCleaner``/``Cleaner#cleanSegments``) always cleans a prefix of the log: from
the log start to the first uncleanable offset (never past the LSO nor into the active segment),
and ``LogCleanerManager#doneCleaning`` then writes the next dirty offset to
``cleaner-offset-checkpoint``. Inside that prefix it leaves what no producer wrote
(``Cleaner#cleanInto`` with ``CleanedTransactionMetadata``): batches removed whole (offset gaps,
sequence gaps), records removed from inside a batch (fewer records than offsets), a producer's
last batch kept with no records (``BatchRetention.RETAIN_EMPTY``), aborted data removed while
its ABORT marker and ``.txnindex`` entry stay until ``delete.retention.ms``, and markers emptied
after that. The checks judge that range by the rules that hold there: a rebuild replays it with
REPLICATION origin (no sequence checks), snapshots written before the cleaning may remember
batches that are gone, and ``.txnindex`` entries carried over by the cleaner keep the LSO of
their original append.

The range is known from ``cleaner-offset-checkpoint`` and from the log itself: only the cleaner
writes an empty v2 batch, a batch with fewer records than offsets or one with a delete horizon
(``DefaultRecordBatch`` attribute bit 6), and it is what leaves offsets out between batches (a
gap over damaged bytes is damage, not cleaning). A topic's ``cleanup.policy`` (from a KRaft
metadata log) is not used here; the metadata-log join refines ``offset_gap`` with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from kafkatx.formats.segment_scan import SegmentScan

if TYPE_CHECKING:
    from kafkatx.formats.segment import SegmentProblem


class CleaningEvidence:
    """How far one segment shows the cleaner has been, walked chunk by chunk (``feed`` in file
    order with the problems the walk met so far): ``end`` is the exclusive end of those
    offsets (None: it shows nothing), up to the last batch that is empty, short of records or
    stamped with a delete horizon, or that follows skipped offsets with no damage in between."""

    def __init__(self, previous_last_offset: int | None) -> None:
        self.prev_last = previous_last_offset  # the last offset of the batch before
        self.prev_end = 0  # where the batch before ends in the file (0: none in this segment)
        self.short_end: int | None = None
        self.gap_at: int | None = None

    def feed(self, chunk: SegmentScan, problems: Sequence[SegmentProblem]) -> None:
        h = chunk.headers
        if not len(h):
            return
        base, last = h.base_offset, h.last_offset
        v2 = h.magic >= 2
        # Fewer records than offsets (RETAIN_EMPTY or filtered), or a delete horizon stamped
        # (MemoryRecords#filterTo sets it on tombstones and on markers it may remove later).
        short = np.flatnonzero(v2 & ((h.records_count < (last - base + 1))
                                     | h.has_delete_horizon))
        if len(short):
            self.short_end = int(last[short[-1]]) + 1
        prev_last = np.concatenate(([base[0] - 1 if self.prev_last is None else self.prev_last],
                                    last[:-1]))
        gaps = np.flatnonzero(base > prev_last + 1)
        if len(gaps) and problems:
            ends = h.position + h.size
            gaps = np.array([i for i in gaps.tolist()
                             if not _damaged(problems, int(ends[i - 1]) if i else self.prev_end,
                                             int(h.position[i]))], dtype=np.intp)
        if len(gaps):
            self.gap_at = int(base[gaps[-1]])
        self.prev_last = int(last[-1])
        self.prev_end = int(h.position[-1] + h.size[-1])

    @property
    def end(self) -> int | None:
        if self.gap_at is None:
            return self.short_end
        return self.gap_at if self.short_end is None else max(self.short_end, self.gap_at)


def _damaged(problems: Sequence[SegmentProblem], lo: int, hi: int) -> bool:
    """A scan problem in the bytes before the batch that follows a gap."""
    return any(lo <= p.position < hi for p in problems)


def cleaned_end(checkpoint_offset: int | None, evidence_ends: Sequence[int | None],
                log_end_offset: int) -> int:
    """Offsets below the returned one lie in the cleaned prefix (0: nothing is cleaned)."""
    ends = [e for e in (checkpoint_offset, *evidence_ends) if e is not None]
    return min(max(ends, default=0), log_end_offset)
