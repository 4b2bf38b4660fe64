"""Each segment's ``.txnindex`` against the aborted transactions the log shows: txnindex_mismatch.

Kafka writes an ``AbortedTxn`` (producer id, first offset, ABORT marker offset, the LSO of that
moment) into the transaction index of the segment holding the marker
(``LogSegment#updateTxnIndex``, from ``ProducerStateManager#lastStableOffset``); the replay
computes the same entries (``ReplayResult.expected_aborted``). read_committed fetches filter
aborted records only through these entries (``TransactionIndex#collectAbortedTxns``), so a
missing entry shows aborted records to consumers, an extra one hides a producer's committed
records, and a last stable offset set too high can stop the search for aborted transactions early.

In the cleaned prefix (:mod:`kafkatx.analysis.cleaned`) the cleaner carries entries over as they
were written (``CleanedTransactionMetadata`` appends the old ``AbortedTxn``) while it removes
batches, so an entry may keep an earlier first offset and a lower LSO than the cleaned log
shows. A follower computes the LSO it writes after appending a whole fetched chunk
(``ReplayResult.expected_aborted`` has the one other value it can write); any other value is
reported. Entries that history explains are not reported either: an ABORT marker whose data the
replay never saw (deleted by retention, or removed by the cleaner, which keeps the entry) and
values that point below the first replayed offset.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator

import numpy as np

from kafkatx.analysis.checks.context import PartitionContext
from kafkatx.analysis.findings import WARNING, Finding, location
from kafkatx.analysis.replay_result import ExpectedAbortedTxn
from kafkatx.formats.txn_index import AbortedTxnEntry, TxnIndexRead

MAX_DETAILED = 10  # entries reported one by one per segment; the rest are counted
KIND = "txnindex_mismatch"


def check_partition(ctx: PartitionContext) -> Iterator[Finding]:
    bases = sorted(ctx.segment_bases)
    expected: dict[int, list[ExpectedAbortedTxn]] = {}
    for a in ctx.replay.expected_aborted:
        k = bisect.bisect_right(bases, a.last_offset) - 1
        expected.setdefault(bases[max(k, 0)] if bases else 0, []).append(a)
    lone_markers = {(e.batch.producer_id, e.batch.base_offset) for e in ctx.replay.events
                    if e.kind == "empty_transaction"}
    for base in sorted(set(expected) | set(ctx.txn_indexes)):
        read = ctx.txn_indexes.get(base)
        want = expected.get(base, [])
        if read is None:
            yield _missing_file(ctx, base, want)
            continue
        yield from _problems(ctx, read)
        yield from _compare(ctx, read, ctx.txn_index_paths.get(base, read.path), want,
                            lone_markers)


def _finding(ctx: PartitionContext, message: str, where: str | None, *,
             producer_id: int | None, offset: int | None,
             severity: str | None = None) -> Finding:
    return Finding(kind=KIND, topic=ctx.topic, partition=ctx.partition, producer_id=producer_id,
                   offset=offset, location=where, message=message, severity=severity)


def _name(base: int) -> str:
    return f"{base:020d}.txnindex"


def _missing_file(ctx: PartitionContext, base: int, want: list[ExpectedAbortedTxn]) -> Finding:
    first = want[0]
    more = f" ({len(want)} aborted transactions; the first: " if len(want) > 1 else " ("
    return _finding(
        ctx, f"{_name(base)} is missing but ABORT markers in this segment need entries"
             f"{more}producer {first.producer_id}, offsets {first.first_offset}.."
             f"{first.last_offset}): read_committed consumers will see the aborted records",
        ctx.path, producer_id=first.producer_id, offset=first.first_offset)


def _problems(ctx: PartitionContext, read: TxnIndexRead) -> Iterator[Finding]:
    """What the reader found (``TransactionIndex#sanityCheck`` and ``AbortedTxn`` rules)."""
    name = os.path.basename(read.path) if read.path else "txnindex"
    for p in read.problems:
        # A partial trailing entry is ignored by Kafka's iterator; the rest make it throw.
        harmless = p.field == "entry"
        note = " (Kafka ignores it)" if harmless else ""
        if "segment start offset" in p.message:
            note = ("; TransactionIndex#sanityCheck throws CorruptIndexException, so a restarting "
                    "broker rebuilds this segment's indexes")
        yield Finding(kind=KIND, topic=ctx.topic, partition=ctx.partition,
                      location=location(p.path, p.position),
                      severity=WARNING if harmless else None, message=f"{name}: {p.message}{note}")


def _compare(ctx: PartitionContext, read: TxnIndexRead, path: str | None,
             want: list[ExpectedAbortedTxn], lone_markers: set[tuple[int, int]]
             ) -> Iterator[Finding]:
    history_start = (ctx.replay.first_offset if ctx.replay.first_offset is not None
                     else ctx.log_end_offset)
    name = os.path.basename(path) if path else "txnindex"
    have = {(e.producer_id, e.last_offset): e for e in read.entries}
    wanted = {(a.producer_id, a.last_offset): a for a in want}
    out: list[Finding] = []
    for key, a in wanted.items():
        e = have.get(key)
        if e is None:
            out.append(_finding(
                ctx, f"{name} lacks the aborted transaction of producer {a.producer_id} at "
                     f"offsets {a.first_offset}..{a.last_offset} (ABORT marker at "
                     f"{a.last_offset}): read_committed consumers will see its records",
                path, producer_id=a.producer_id, offset=a.first_offset))
        else:
            out.extend(_differences(ctx, name, path, e, a, history_start))
    for key, e in have.items():
        if key in wanted or key in lone_markers:
            continue  # a marker that closed no replayed data: compacted or retained away
        out.append(_finding(
            ctx, f"{name} lists an aborted transaction of producer {e.producer_id} at offsets "
                 f"{e.first_offset}..{e.last_offset}, but the log has no ABORT closing one "
                 f"there: read_committed consumers will hide producer {e.producer_id}'s "
                 f"records from offset {e.first_offset} on, committed ones included",
            location(path, e.file_position), producer_id=e.producer_id, offset=e.first_offset))
    yield from out[:MAX_DETAILED]
    if len(out) > MAX_DETAILED:
        rest = out[MAX_DETAILED]
        yield _finding(ctx, f"{len(out) - MAX_DETAILED} more entries of {name} disagree with the "
                            "aborted transactions in the log", path,
                       producer_id=None, offset=rest.offset)


def _differences(ctx: PartitionContext, name: str, path: str | None, e: AbortedTxnEntry,
                 a: ExpectedAbortedTxn, history_start: int) -> Iterator[Finding]:
    where = location(path, e.file_position)
    what = f"{name}: the aborted transaction of producer {a.producer_id} ending at {a.last_offset}"
    cleaned = a.last_offset < ctx.cleaned_end  # entries the cleaner carried over unchanged
    if e.first_offset != a.first_offset and not (
            e.first_offset < a.first_offset and (
                cleaned or _no_other_data(ctx, a.producer_id, e.first_offset,
                                          a.first_offset))):
        if e.first_offset > a.first_offset:
            effect = (f"read_committed consumers will see its records at {a.first_offset}.."
                      f"{e.first_offset - 1}")
        else:
            effect = (f"read_committed consumers will also hide producer {a.producer_id}'s "
                      f"committed records from {e.first_offset}")
        yield _finding(ctx, f"{what} has first offset {e.first_offset}, the log says "
                            f"{a.first_offset}: {effect}",
                       where, producer_id=a.producer_id, offset=a.first_offset)
    if e.last_stable_offset != a.last_stable_offset and e.last_stable_offset >= history_start \
            and e.last_stable_offset != a.follower_last_stable_offset \
            and not (cleaned and e.last_stable_offset < a.last_stable_offset):
        if e.last_stable_offset > a.last_stable_offset:
            effect, severity = ("fetches may stop collecting aborted transactions too early and "
                                "show aborted records to read_committed consumers"), None
        else:
            effect, severity = "harmless: fetches only search further", WARNING
        yield _finding(ctx, f"{what} has last stable offset {e.last_stable_offset}, the log "
                            f"says {a.last_stable_offset}: {effect}",
                       where, producer_id=a.producer_id, offset=a.first_offset,
                       severity=severity)


def _no_other_data(ctx: PartitionContext, producer_id: int, start: int, end: int) -> bool:
    """Whether no other transaction of the producer touches [start, end) in the replayed log:
    an earlier first offset then hides nothing (those batches were compacted or deleted)."""
    t = ctx.replay.transactions
    last = np.where(t.is_null("marker_offset"), t.column("last_data_offset"),
                    t.column("marker_offset"))
    return not bool(((t.column("producer_id") == producer_id)
                     & (t.column("first_offset") < end) & (last >= start)).any())
