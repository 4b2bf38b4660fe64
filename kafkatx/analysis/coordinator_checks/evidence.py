"""What the join reads of one data partition beyond the replay: markers that closed no data,
transactional offset commits in ``__consumer_offsets``, and the partition's lane.

Reads are few and bounded: one control batch per marker that closed nothing, and, for the
timeline only, the transactional batches of ``__consumer_offsets`` (one batch in memory at a
time). Files are opened read-only (:mod:`kafkatx.storage.files`).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from typing import TYPE_CHECKING

from kafkatx.analysis.checks import PartitionContext
from kafkatx.analysis.coordinator_transactions import ABORT, COMMIT, Marker, OffsetCommit
from kafkatx.analysis.replay_result import COMMITTED, Transaction
from kafkatx.analysis.transaction_verdicts import PartitionEvidence
from kafkatx.errors import FormatError, KafkatxError
from kafkatx.formats.batch_values import ControlType
from kafkatx.formats.segment_scan import scan_segment
from kafkatx.storage.discovery import PartitionDir
from kafkatx.storage.readers import segment_buffer

if TYPE_CHECKING:
    from kafkatx.analysis.timeline import Lane

_LONE = ("empty_transaction",)


def partition_evidence(ctx: PartitionContext, *, now_ms: int,
                       max_timeout_ms: int = 900_000) -> PartitionEvidence:
    replay = ctx.replay
    return PartitionEvidence(
        topic=ctx.topic, partition=ctx.partition, transactions=replay.transactions,
        markers=list(lone_markers(ctx)), min_timestamp=replay.min_timestamp,
        max_timestamp=replay.max_timestamp,
        now_ms=now_ms, max_timeout_ms=max_timeout_ms)


def lone_markers(ctx: PartitionContext) -> Iterator[Marker]:
    """COMMIT/ABORT markers that closed no data here (the replay keeps only where they are)."""
    by_path: dict[str, list[int]] = {}
    for e in ctx.replay.events:
        if e.kind in _LONE and e.batch.path is not None:
            by_path.setdefault(e.batch.path, []).append(e.batch.position)
    for path, positions in by_path.items():
        try:
            with segment_buffer(path) as buf:
                for pos in positions:
                    m = _marker_at(buf, pos, path)
                    if m is not None:
                        yield m
        except KafkatxError:
            continue  # unreadable now: the segment checks report the file


def _marker_at(buf: bytes | memoryview, pos: int, path: str) -> Marker | None:
    from kafkatx.formats.record_batch import RecordBatch  # the parsers: only for a batch read
    from kafkatx.formats.segment import read_entry

    entry, _problems, _next = read_entry(buf, pos, path=path)
    if not isinstance(entry, RecordBatch) or entry.control is None:
        return None
    kind = entry.control.type_id
    if kind not in (ControlType.COMMIT, ControlType.ABORT):
        return None
    h = entry.header
    return Marker(offset=h.base_offset, producer_id=h.producer_id,
                  producer_epoch=h.producer_epoch,
                  type=COMMIT if kind == ControlType.COMMIT else ABORT,
                  timestamp=h.max_timestamp, coordinator_epoch=entry.control.coordinator_epoch)


def lane_of(pdir: PartitionDir, ctx: PartitionContext) -> Lane:
    from kafkatx.analysis.timeline import Lane  # a timeline's: not loaded without one

    replay, stable = ctx.replay, ctx.stable
    lso = stable.last_stable_offset
    holder = next((t for t in replay.open_transactions if stable.held_by(t.first_offset)), None)
    return Lane(
        topic=ctx.topic, partition=ctx.partition,
        broker=pdir.log_dir.label if pdir.log_dir is not None else None,
        log_start_offset=ctx.log_start_offset, log_end_offset=ctx.log_end_offset,
        high_watermark=stable.high_watermark, last_stable_offset=lso,
        lso_source=stable.lso_source,
        lso_timestamp_ms=holder.first_timestamp if holder is not None else None,
        first_timestamp_ms=replay.min_timestamp if replay.min_timestamp >= 0 else None,
        last_timestamp_ms=replay.max_timestamp if replay.max_timestamp >= 0 else None)


def read_offset_commits(pdir: PartitionDir, txns: list[Transaction]
                        ) -> dict[int, list[OffsetCommit]]:
    """The offsets committed in each transaction (by first offset) of a ``__consumer_offsets``
    partition: the records of its producer's transactional batches within the transaction's
    offsets (``TxnOffsetCommit`` writes them; the COMMIT marker makes them visible)."""
    out: dict[int, list[OffsetCommit]] = {}
    wanted = sorted(txns, key=lambda t: t.first_offset)
    if not wanted:
        return out
    segments = [s for s in pdir.segments if s.log is not None]
    firsts = [t.first_offset for t in wanted]
    for i, seg in enumerate(segments):
        end = segments[i + 1].base_offset if i + 1 < len(segments) else None
        # The transactions overlapping [base, end); a long one spans several segments.
        upto = bisect_left(firsts, end) if end is not None else len(wanted)
        inside = [t for t in wanted[:upto] if t.last_data_offset >= seg.base_offset]
        if not inside:
            continue
        assert seg.log is not None
        try:
            with segment_buffer(seg.log) as buf:
                _read_segment_commits(buf, str(seg.log), pdir.partition, inside, out)
        except KafkatxError:
            continue
    return out


def _read_segment_commits(buf: bytes | memoryview, path: str, offsets_partition: int,
                          txns: list[Transaction], out: dict[int, list[OffsetCommit]]) -> None:
    from kafkatx.formats.record_batch import RecordBatch
    from kafkatx.formats.segment import read_entry

    h = scan_segment(buf, path=path).headers
    pids = h.producer_id.tolist()
    bases, lasts = h.base_offset.tolist(), h.last_offset.tolist()
    txn_flags, ctl_flags = h.is_transactional.tolist(), h.is_control.tolist()
    positions = h.position.tolist()
    by_pid: dict[int, list[Transaction]] = {}
    for t in txns:  # in offset order
        by_pid.setdefault(t.producer_id, []).append(t)
    firsts = {pid: [t.first_offset for t in ts] for pid, ts in by_pid.items()}
    for i in range(len(h)):
        if not txn_flags[i] or ctl_flags[i] or pids[i] not in by_pid:
            continue
        k = bisect_right(firsts[pids[i]], bases[i]) - 1
        t = by_pid[pids[i]][k] if k >= 0 else None
        if t is None or lasts[i] > t.last_data_offset:
            continue
        entry, _problems, _next = read_entry(buf, positions[i], path=path, decode_records=True)
        if not isinstance(entry, RecordBatch) or entry.records is None:
            continue
        for rec in entry.records:
            commit = _offset_commit(rec.key, rec.value, rec.offset, offsets_partition,
                                    visible=t.outcome == COMMITTED, path=path)
            if commit is not None:
                out.setdefault(t.first_offset, []).append(commit)


def _offset_commit(key: bytes | None, value: bytes | None, record_offset: int, partition: int,
                   *, visible: bool, path: str) -> OffsetCommit | None:
    if key is None:
        return None
    # The group records' decoders are built only when a __consumer_offsets partition is read.
    from kafkatx.formats import consumer_offsets

    try:
        k = consumer_offsets.parse_key(key, path=path)
        if not isinstance(k, consumer_offsets.OffsetCommitKey):
            return None
        v = consumer_offsets.parse_value(k, value, path=path)
    except FormatError:
        return None  # dump shows the undecodable record; the timeline skips it
    offset = v.offset if isinstance(v, consumer_offsets.OffsetCommitValue) else None
    ts = v.commit_timestamp_ms if isinstance(v, consumer_offsets.OffsetCommitValue) else None
    return OffsetCommit(group=k.group, topic=k.topic, partition=k.partition, offset=offset,
                        commit_timestamp_ms=ts, record_offset=record_offset,
                        offsets_partition=partition, visible=visible)
