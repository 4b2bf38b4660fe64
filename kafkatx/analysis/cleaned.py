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

import numpy as np

from kafkatx.formats.segment_scan import SegmentScan


def cleaning_evidence_end(scan: SegmentScan, previous_last_offset: int | None) -> int | None:
    """The exclusive end of the offsets this segment shows the cleaner has been over (None: it
    shows nothing): up to the last batch that is empty, short of records or stamped with a
    delete horizon, or that follows skipped offsets with no damage in between."""
    h = scan.headers
    n = len(h)
    if not n:
        return None
    base, last = h.base_offset, h.last_offset
    v2 = h.magic >= 2
    # Fewer records than offsets (RETAIN_EMPTY or filtered), or a delete horizon stamped
    # (MemoryRecords#filterTo sets it on tombstones and on markers it may remove later).
    short = v2 & ((h.records_count < (last - base + 1)) | h.has_delete_horizon)
    prev_last = np.concatenate(([base[0] - 1 if previous_last_offset is None
                                 else previous_last_offset], last[:-1]))
    gap = base > prev_last + 1
    if gap.any() and scan.problems:
        damaged = _damaged_gaps(scan, np.flatnonzero(gap))
        gap[damaged] = False
    end: int | None = None
    if short.any():
        end = int(last[np.flatnonzero(short)[-1]]) + 1
    if gap.any():
        at_gap = int(base[np.flatnonzero(gap)[-1]])
        end = at_gap if end is None else max(end, at_gap)
    return end


def _damaged_gaps(scan: SegmentScan, gaps: Sequence[int]) -> list[int]:
    """Gaps with a scan problem in the bytes before the batch that follows them."""
    h = scan.headers
    out = []
    for i in gaps:
        lo = int(h.position[i - 1] + h.size[i - 1]) if i else 0
        hi = int(h.position[i])
        if any(lo <= p.position < hi for p in scan.problems):
            out.append(int(i))
    return out


def cleaned_end(checkpoint_offset: int | None, evidence_ends: Sequence[int | None],
                log_end_offset: int) -> int:
    """Offsets below the returned one lie in the cleaned prefix (0: nothing is cleaned)."""
    ends = [e for e in (checkpoint_offset, *evidence_ends) if e is not None]
    return min(max(ends, default=0), log_end_offset)
