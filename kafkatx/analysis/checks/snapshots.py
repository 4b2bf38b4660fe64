"""Producer snapshots against the log: corrupt_snapshot, snapshot_mismatch.

A ``<offset>.snapshot`` holds the producer state after every batch below its offset
(``ProducerStateManager#takeSnapshot``/``#writeSnapshot``: one entry per producer, its last batch
only). The replay recorded its own state at each snapshot offset; the two must agree, except for
producers Kafka expired (``ProducerStateManager#isProducerExpired``: no open transaction and idle
for ``producer.id.expiration.ms``) and producers whose batches lie before the replayed log.

Snapshots are written before the log cleaner goes over their offsets: in the cleaned prefix
(:mod:`kafkatx.analysis.cleaned`) an entry may remember batches and markers the cleaner has
since removed, which is no mismatch.

A restarting broker (``UnifiedLog#rebuildProducerState`` -> ``ProducerStateManager
#truncateAndReload``) deletes snapshots beyond the log end or at/below the log start, loads the
newest one left (``#loadFromSnapshot``; one failing ``#readSnapshot`` with
``CorruptSnapshotException`` is deleted and the next older one tried) and replays the tail.
The engine rebuilt that too (``PartitionContext.snapshot_replay``); where it ends in a different
state than the whole log, a restart changes the partition's producers or LSO. A transaction the
loaded snapshot keeps open from below the log start offset is no difference to report: it is
the broker's state (:mod:`kafkatx.analysis.partition_load`), reported as an open transaction
holding the LSO at the log start offset.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from kafkatx.analysis.checks.context import PartitionContext, SnapshotFile
from kafkatx.analysis.findings import INFO, Finding, location
from kafkatx.errors import CorruptSnapshotError
from kafkatx.formats.producer_snapshot import ProducerSnapshotEntry
from kafkatx.semantics.producer_state import DEFAULT_PRODUCER_ID_EXPIRATION_MS

FIELDS = ("producer_epoch", "last_sequence", "last_offset", "offset_delta", "timestamp",
          "coordinator_epoch", "current_txn_first_offset")
MAX_DETAILED = 10  # producers reported one by one per snapshot; the rest are counted


def check_partition(ctx: PartitionContext) -> Iterator[Finding]:
    yield from _unloadable(ctx)
    reported: dict[int, set[int]] = {}
    for snap in ctx.snapshots:
        if snap.offset > ctx.log_end_offset:
            yield _beyond_log_end(ctx, snap)
            continue
        checkpoint = ctx.replay.snapshot_states.get(snap.offset)
        if checkpoint is None or not snap.snapshot.loadable:
            continue
        findings = list(_compare(ctx, snap, snap.snapshot.entries, checkpoint.entries,
                                 f"{_name(snap)} disagrees with the log replayed up to offset "
                                 f"{snap.offset}"))
        reported[snap.offset] = {f.producer_id for f in findings if f.producer_id is not None}
        yield from _capped(ctx, snap, findings)
    yield from _restart(ctx, reported)


def _name(snap: SnapshotFile) -> str:
    return os.path.basename(snap.path)


def _history_start(ctx: PartitionContext) -> int:
    """The first offset the replay saw; anything below it is history the log no longer has."""
    return ctx.replay.first_offset if ctx.replay.first_offset is not None else ctx.log_end_offset


def _capped(ctx: PartitionContext, snap: SnapshotFile, findings: list[Finding]
            ) -> Iterator[Finding]:
    yield from findings[:MAX_DETAILED]
    if len(findings) > MAX_DETAILED:
        yield Finding(kind="snapshot_mismatch", topic=ctx.topic, partition=ctx.partition,
                      offset=snap.offset, location=snap.path,
                      message=f"{_name(snap)}: {len(findings) - MAX_DETAILED} more producers "
                              "differ from the log")


# -- files Kafka would not use ------------------------------------------------------------------


def _unloadable(ctx: PartitionContext) -> Iterator[Finding]:
    """``ProducerStateManager#readSnapshot`` failures, and what ``#loadFromSnapshot`` does then."""
    in_range = sorted((s for s in ctx.snapshots
                       if ctx.log_start_offset < s.offset <= ctx.log_end_offset),
                      key=lambda s: s.offset)
    for snap in ctx.snapshots:
        problems = snap.snapshot.problems
        corrupt = [p for p in problems if isinstance(p, CorruptSnapshotError)]
        if not corrupt:
            for p in problems:
                yield Finding(kind="corrupt_snapshot", topic=ctx.topic, partition=ctx.partition,
                              offset=snap.offset, location=location(p.path, p.position),
                              severity=INFO,
                              message=f"{_name(snap)}: {p.message} (Kafka ignores them)")
            continue
        p = corrupt[0]
        older = [s for s in in_range if s.offset < snap.offset and s.snapshot.loadable]
        newer_good = [s for s in in_range if s.offset > snap.offset and s.snapshot.loadable]
        if not ctx.log_start_offset < snap.offset <= ctx.log_end_offset:
            then = "a restarting broker deletes it anyway (outside the log's offsets)"
        elif newer_good:
            then = (f"a restarting broker loads the newer {_name(newer_good[-1])} and never "
                    "reads this one")
        elif older:
            then = f"a restarting broker deletes it and falls back to {_name(older[-1])}"
        else:
            then = ("a restarting broker deletes it and rebuilds producer state from the log "
                    f"start offset {ctx.log_start_offset}, forgetting producers whose records "
                    "were deleted")
        yield Finding(kind="corrupt_snapshot", topic=ctx.topic, partition=ctx.partition,
                      offset=snap.offset, location=location(p.path, p.position),
                      message=f"{_name(snap)}: {p.message}: Kafka's readSnapshot throws "
                              f"CorruptSnapshotException; {then}")


def _beyond_log_end(ctx: PartitionContext, snap: SnapshotFile) -> Finding:
    return Finding(
        kind="snapshot_mismatch", topic=ctx.topic, partition=ctx.partition, offset=snap.offset,
        location=snap.path,
        message=f"{_name(snap)} covers offsets up to {snap.offset}, beyond the log end offset "
                f"{ctx.log_end_offset}: this copy lost batches the broker once had (a truncated "
                "copy, unclean shutdown or leader change); a restarting broker deletes the "
                "snapshot (ProducerStateManager#truncateAndReload)")


# -- entry comparison ---------------------------------------------------------------------------


def _expired(entry: ProducerSnapshotEntry, now_ms: int) -> bool:
    """``ProducerStateManager#isProducerExpired`` with the default producer.id.expiration.ms."""
    return (entry.current_txn_first_offset < 0
            and now_ms - entry.timestamp >= DEFAULT_PRODUCER_ID_EXPIRATION_MS)


def _newest(*groups: Iterable[ProducerSnapshotEntry]) -> int:
    return max((e.timestamp for g in groups for e in g), default=-1)


def _compare(ctx: PartitionContext, snap: SnapshotFile,
             have_entries: Iterable[ProducerSnapshotEntry],
             want_entries: Iterable[ProducerSnapshotEntry], what: str) -> Iterator[Finding]:
    """Entries by producer id: ``have`` (a snapshot, or a state rebuilt from one) against
    ``want`` (the whole log's replay). "Now" for expiry is the newest producer timestamp of
    either side: the broker's clock was at least that when the snapshot was written."""
    have = {e.producer_id: e for e in have_entries}
    want = {e.producer_id: e for e in want_entries}
    now = _newest(have.values(), want.values())
    start = _history_start(ctx)

    def finding(pid: int, epoch: int, message: str, entry: ProducerSnapshotEntry | None
                ) -> Finding:
        pos = entry.file_position if entry is not None else None
        return Finding(kind="snapshot_mismatch", topic=ctx.topic, partition=ctx.partition,
                       producer_id=pid, producer_epoch=epoch, offset=snap.offset,
                       location=location(snap.path, pos), message=message)

    for pid in sorted(have.keys() | want.keys()):
        h, w = have.get(pid), want.get(pid)
        if h is None:
            assert w is not None
            if not _expired(w, now):
                yield finding(pid, w.producer_epoch,
                              f"{what}: producer {pid} (epoch {w.producer_epoch}, last batch at "
                              f"offset {w.last_offset}) is missing, though it was not idle for "
                              "producer.id.expiration.ms (24h) and Kafka only drops expired "
                              "producers", None)
        elif w is None:
            if 0 <= h.last_offset < start or (h.last_offset < 0 and start > 0):
                continue  # state of records before the replayed log: what snapshots are for
            if ctx.cleaned_end > 0 and h.last_offset < ctx.cleaned_end and (
                    h.current_txn_first_offset < 0
                    or _closed_later(ctx, pid, h.current_txn_first_offset)):
                continue  # the cleaner removed every batch it remembers
            txn = (f", with a transaction open from offset {h.current_txn_first_offset} "
                   "(it would hold the LSO)" if h.current_txn_first_offset >= 0 else "")
            yield finding(pid, h.producer_epoch,
                          f"{what}: it has producer {pid} (epoch {h.producer_epoch}, last batch "
                          f"at offset {h.last_offset}){txn}, which the log never shows", h)
        else:
            diffs = [(f, getattr(h, f), getattr(w, f)) for f in FIELDS
                     if getattr(h, f) != getattr(w, f) and not _explained(f, h, w, start)
                     and not _cleaned(ctx, f, h, w)]
            if diffs:
                text = ", ".join(f"{f} {a} (log: {b})" for f, a, b in diffs)
                lso = (" (this changes the LSO)" if any(f == "current_txn_first_offset"
                                                        for f, _, _ in diffs) else "")
                yield finding(pid, h.producer_epoch,
                              f"{what} for producer {pid}: {text}{lso}", h)


def _explained(name: str, have: ProducerSnapshotEntry, want: ProducerSnapshotEntry,
               start: int) -> bool:
    """Differences that records before the replayed log account for."""
    if start <= 0:
        return False
    if name == "coordinator_epoch":
        return want.coordinator_epoch < 0  # the last marker lies before the replayed log
    if name in ("last_sequence", "last_offset", "offset_delta"):
        # The producer's last batch lies before the replayed log, which saw only its marker.
        return 0 <= have.last_offset < start and want.last_offset < 0
    if name == "current_txn_first_offset":
        # A transaction that began before the replayed log: the replay saw it start later.
        return 0 <= have.current_txn_first_offset < start <= want.current_txn_first_offset
    return False


def _cleaned(ctx: PartitionContext, name: str, have: ProducerSnapshotEntry,
             want: ProducerSnapshotEntry) -> bool:
    """Differences the log cleaner accounts for when what ``have`` remembers lies in the cleaned
    prefix (``Cleaner#cleanInto``): the batch it remembers was removed, so the log's last batch
    is an earlier one (or a record-filtered copy with a smaller max timestamp), the marker that
    set its coordinator epoch was removed after ``delete.retention.ms``, the first batches of its
    transaction (or, once it was aborted, all of them: its marker then shows it ended)."""
    cleaned_end = ctx.cleaned_end
    if cleaned_end <= 0:
        return False
    if name == "current_txn_first_offset":
        first = have.current_txn_first_offset
        if want.current_txn_first_offset > first >= 0:
            return first < cleaned_end
        return (0 <= first < cleaned_end and want.current_txn_first_offset < 0
                and _closed_later(ctx, have.producer_id, first))
    if name == "coordinator_epoch":
        return want.coordinator_epoch < have.coordinator_epoch
    if have.last_offset >= cleaned_end:
        return False
    if name == "timestamp":
        return want.timestamp <= have.timestamp
    if name == "producer_epoch":  # an emptied marker leaves an entry of epoch -1
        return want.producer_epoch < have.producer_epoch and (
            want.last_offset < have.last_offset or want.producer_epoch < 0)
    return want.last_offset < have.last_offset  # last_sequence, last_offset, offset_delta


def _closed_later(ctx: PartitionContext, producer_id: int, first_offset: int) -> bool:
    """Whether the log has a marker of the producer after ``first_offset`` (a transaction the
    cleaner emptied still shows its end that way)."""
    t = ctx.replay.transactions
    if bool(((t.column("producer_id") == producer_id) & ~t.is_null("marker_offset")
             & (t.column("marker_offset") > first_offset)).any()):
        return True
    return any(e.kind == "empty_transaction" and e.batch.producer_id == producer_id
               and e.batch.base_offset > first_offset for e in ctx.replay.events)


# -- what a restart would do --------------------------------------------------------------------


def _loaded(ctx: PartitionContext) -> SnapshotFile | None:
    if ctx.snapshot_replay is None or ctx.snapshot_replay_offset is None:
        return None
    for s in ctx.snapshots:
        if s.offset == ctx.snapshot_replay_offset and s.snapshot.loadable:
            return s
    return None


def _restart(ctx: PartitionContext, reported: dict[int, set[int]]) -> Iterator[Finding]:
    """The state rebuilt from the loaded snapshot plus the tail against the whole log's."""
    snap = _loaded(ctx)
    if snap is None or ctx.snapshot_replay is None:
        return
    skip = reported.get(snap.offset, set())  # already reported against the snapshot itself
    # Transactions open from below the log start: the whole log cannot know them.
    below_start = {e.producer_id for e in snap.snapshot.entries
                   if 0 <= e.current_txn_first_offset < ctx.log_start_offset}
    have = [e for e in ctx.snapshot_replay.state.snapshot_entries()
            if e.producer_id not in skip and e.producer_id not in below_start]
    want = [e for e in ctx.replay.state.snapshot_entries()
            if e.producer_id not in skip and e.producer_id not in below_start]
    yield from _capped(ctx, snap, list(_compare(
        ctx, snap, have, want,
        f"restarting from {_name(snap)} plus the log tail gives a state different from the "
        "whole log's")))
