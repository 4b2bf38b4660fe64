"""The local engine: scan partitions in this process, a chunk of a segment in memory at a time.

For each partition: every live segment is walked in chunks of header columns
(``kafkatx.engines.segment_chunks``), each fed to the producer-state replay
(``kafkatx.analysis.replay``) and the segment checks with its index files; then snapshots are
compared, the partition is rebuilt a second time from its newest good snapshot plus the log tail
(as a restarting broker would), the LSO is computed against the checkpointed high watermark, and
the partition checks run. Files are only read (``kafkatx.storage.files``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import field, replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from kafkatx.analysis.checks import (
    PartitionContext,
    SegmentContext,
    partition_checks,
    segment_checks,
)
from kafkatx.analysis.cleaned import CleaningEvidence, cleaned_end
from kafkatx.analysis.coordinator_checks import CoordinatorChecks
from kafkatx.analysis.findings import Finding, rank
from kafkatx.analysis.metadata_settings import (
    DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
    leader_log_ends,
    max_transaction_timeout,
)
from kafkatx.analysis.partition_load import load_partition, read_snapshots
from kafkatx.analysis.partition_report import PartitionReport
from kafkatx.analysis.replay import ALL_SETTLED, PartitionReplayer
from kafkatx.analysis.replay_result import ABORTED, COMMITTED, OPEN, ReplayResult
from kafkatx.analysis.replica_authority import ReplicaSet, follower_paths, replica_sets
from kafkatx.analysis.stable_offsets import StableOffsets
from kafkatx.analysis.view_names import AFTER_RESTART, AS_FOUND, FORGOTTEN
from kafkatx.engines.partition_files import partition_file_findings, root_checkpoint_findings
from kafkatx.engines.segment_chunks import (
    ChunksOf,
    ScanOf,
    WalkedSegment,
    chunks_from,
    file_chunks,
    whole_scans,
)
from kafkatx.errors import FormatError, KafkatxError
from kafkatx.formats.index_columns import read_offset_index_columns, read_time_index_columns
from kafkatx.formats.offset_index import sanity_check as offset_index_sanity
from kafkatx.formats.segment_scan import SegmentScan, scan_segment
from kafkatx.formats.time_index import sanity_check as time_index_sanity
from kafkatx.formats.txn_index import TxnIndexRead, read_txn_index
from kafkatx.lazy_dataclass import dataclass
from kafkatx.semantics.producer_state import ProducerStateManager
from kafkatx.semantics.swap_recovery import SWAP_SUFFIX, SwapRecoveryPlan, plan_swap_recovery
from kafkatx.storage.discovery import (
    Discovery,
    LogDir,
    PartitionDir,
    discover,
    read_root_checkpoints,
)
from kafkatx.storage.files import open_bytes

if TYPE_CHECKING:
    from kafkatx.analysis.consumer_view import BatchFormatter, ConsumerView, ReplayedRecord
    from kafkatx.analysis.coordinator import CoordinatorView
    from kafkatx.analysis.replicas import ReplicaComparison
    from kafkatx.analysis.restart_view import RestartPrediction
    from kafkatx.analysis.timeline import Selection, Timeline
    from kafkatx.formats.segment import SegmentProblem
    from kafkatx.semantics.read_committed import IsolationLevel

Progress = Callable[[int], None]  # called with bytes scanned
ROWS_PER_RUN = 1 << 18  # batches per run of a whole-segment computation's temporaries
# Runs after a partition's checks with its context and findings; returns the findings to keep.
Finalize = Callable[[PartitionDir, PartitionContext, list[Finding]], list[Finding]]


class AnalysisOptions(NamedTuple):
    now_ms: int | None = None  # "now" for age-based findings; default: newest timestamp seen
    transaction_timeout_ms: int = 60_000  # the producer default transaction.timeout.ms
    # An open transaction is judged once its last write is older than max(its timeout, this):
    # kafka-transactions.sh find-hanging's --max-transaction-timeout; None: the metadata log's
    # transaction.max.timeout.ms when the evidence has one, else find-hanging's 15 minutes
    max_transaction_timeout_ms: int | None = None
    max_timeout_said: str = "--max-transaction-timeout-ms"
    # transaction.state.log.num.partitions; None: detected from the evidence
    transaction_state_partitions: int | None = None
    # Decode every record of every v2 batch (verify): undecodable ones are invalid_batch
    validate_records: bool = False
    view: str = AS_FOUND  # as_found | after_restart (kafkatx.analysis.restart_view)
    # the restart findings in the view as found (a second load of each partition; the
    # commands that show no findings skip it)
    predict_restart: bool = True


DEFAULT_OPTIONS = AnalysisOptions()


@dataclass(slots=True, kw_only=True)
class Inspection:
    """Everything one inspection of log dirs found."""

    partitions: list[PartitionReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    discovery: Discovery | None = None
    timeline: Timeline | None = None  # with keep_timeline: the transactions joined
    replicas: list[ReplicaComparison] = field(default_factory=list)  # several brokers' copies
    replica_sets: dict[tuple[str, int], ReplicaSet] = field(default_factory=dict)
    clusters: list[Any] = field(default_factory=list)  # ClusterViews of KRaft metadata logs
    coordinator: CoordinatorView | None = None  # the __transaction_state partitions replayed
    # what ages were measured from (kafkatx.engines.inspection): epoch ms, None for each
    # partition's newest record; and why that moment (given, capture, data)
    now_ms: int | None = None
    now_source: str = "data"

    @property
    def total_bytes(self) -> int:
        return sum(p.size_bytes for p in self.partitions)


def _read_small(path: Path | None) -> bytes | None:
    if path is None:
        return None
    with open_bytes(path) as data:
        return bytes(data)


def _read_index(
    path: Path, base_offset: int, read: Callable[..., Any],
    sanity: Callable[..., Iterable[FormatError]],
) -> tuple[Any, tuple[FormatError, ...]]:
    """An index file parsed, plus what Kafka's ``sanityCheck`` says of it as it is on disk."""
    raw = _read_small(path)
    assert raw is not None
    return (read(raw, base_offset=base_offset, path=str(path)),
            tuple(sanity(raw, base_offset=base_offset, path=str(path))))


def _scan(path: Path) -> SegmentScan:
    with open_bytes(path) as data:
        return scan_segment(data, path=str(path))


def _with_record_problems(path: Path, scan: SegmentScan) -> SegmentScan:
    """``scan`` with an ``invalid_batch`` problem for each batch whose records do not decode."""
    from kafkatx.formats.record_validation import record_problems  # decodes with construct

    with open_bytes(path) as data:
        found = record_problems(data, scan)
    if not found:
        return scan
    return replace(scan, problems=tuple(sorted((*scan.problems, *found),
                                               key=lambda p: p.position)))


def chunk_source(scan: ScanOf | None) -> ChunksOf:
    """The segments' chunks: read from the files here, or each the whole scan ``scan`` gives."""
    return file_chunks() if scan is None else whole_scans(scan)


def _whole_scan(path: Path, scan: ScanOf | None, options: AnalysisOptions) -> SegmentScan:
    whole = (scan or _scan)(path)
    return _with_record_problems(path, whole) if options.validate_records else whole


RootOffsets = dict[tuple[str, int], int]


def _root_offsets(log_dir: LogDir | None) -> tuple[list[RootOffsets], list[Finding]]:
    """High watermarks, log start offsets and the cleaner's first dirty offsets from a log dir's
    checkpoint files."""
    if log_dir is None:
        return [{}, {}, {}], []
    cps = read_root_checkpoints(log_dir)
    out: list[RootOffsets] = []
    for name in ("replication-offset-checkpoint", "log-start-offset-checkpoint",
                 "cleaner-offset-checkpoint"):
        cp = cps.get(name)
        out.append({} if cp is None else {(e.topic, e.partition): e.offset for e in cp.entries})
    return out, root_checkpoint_findings(log_dir)


def analyze_partition(
    pdir: PartitionDir,
    *,
    high_watermark: int | None = None,
    high_watermark_at_log_end: bool = False,
    log_start_offset: int | None = None,
    cleaner_offset: int | None = None,
    options: AnalysisOptions = DEFAULT_OPTIONS,
    progress: Progress | None = None,
    scan: ScanOf | None = None,
    finalize: Finalize | None = None,
    chunks: ChunksOf | None = None,
) -> PartitionReport:
    """Everything kafkatx knows about one partition dir.

    ``high_watermark``, ``log_start_offset`` and ``cleaner_offset`` (the first dirty offset)
    are the root checkpoints' values for it (None: not there); ``high_watermark_at_log_end``:
    the log dir's broker leads it as its only replica, so its HW is the log end offset
    (``kafkatx.semantics.leader_high_watermark``), whatever the checkpoint says.

    ``scan`` returns a segment's scan by ``.log`` path (default: read and scan the file here);
    the Spark engine answers it from the rows its data source scanned on the executors, each
    segment one chunk. Otherwise each segment is walked in chunks (``chunks``, default
    ``segment_chunks.file_chunks()``): every phase holds a chunk's columns, not a segment's.
    """
    chunks_of = chunks or chunk_source(scan)
    topic, partition = pdir.topic, pdir.partition
    findings: list[Finding] = []
    snapshot_offsets = [off for off, _ in pdir.snapshots]
    # The state forgets transactions as the HW passes them (every one stays in the result).
    replayer = PartitionReplayer(
        snapshot_offsets=snapshot_offsets, topic=topic,
        high_watermark=(ALL_SETTLED if high_watermark is None or high_watermark_at_log_end
                        else high_watermark))
    seg_checks = segment_checks()
    txn_indexes = {}
    txn_index_paths = {}
    segments = list(pdir.segments)
    walked: list[WalkedSegment] = []  # per segment with a .log: where its chunks start
    previous_last: int | None = None
    evidence: list[int | None] = []  # per segment: how far it shows the cleaner has been
    size = 0
    for i, seg in enumerate(segments):
        if seg.log is None:
            continue
        ctx = SegmentContext(
            topic=topic, partition=partition, base_offset=seg.base_offset, log_path=str(seg.log),
            previous_last_offset=previous_last,
            next_base_offset=segments[i + 1].base_offset if i + 1 < len(segments) else None,
        )
        if seg.index is not None:
            ctx.offset_index, ctx.offset_index_sanity = _read_index(
                seg.index, seg.base_offset, read_offset_index_columns, offset_index_sanity)
            ctx.offset_index_path = str(seg.index)
        if seg.timeindex is not None:
            ctx.time_index, ctx.time_index_sanity = _read_index(
                seg.timeindex, seg.base_offset, read_time_index_columns, time_index_sanity)
            ctx.time_index_path = str(seg.timeindex)
        raw = _read_small(seg.txnindex)
        if raw is not None:
            ctx.txn_index = read_txn_index(raw, path=str(seg.txnindex), base_offset=seg.base_offset)
            ctx.txn_index_path = str(seg.txnindex)
            txn_indexes[seg.base_offset] = ctx.txn_index
            txn_index_paths[seg.base_offset] = str(seg.txnindex)
        walks = [check(ctx) for check in seg_checks]
        cleaning = CleaningEvidence(previous_last)
        walk = WalkedSegment(seg.log)
        problems: list[SegmentProblem] = []
        for chunk in chunks_of(seg.log, 0):
            if options.validate_records:
                chunk = _with_record_problems(seg.log, chunk)
            if progress is not None:
                progress(chunk.size - walk.end)
            walk.add(chunk)
            problems.extend(chunk.problems)
            replayer.feed(chunk)
            cleaning.feed(chunk, problems)
            for w in walks:
                w.feed(chunk)
            del chunk
        size += walk.end
        ctx.batches, ctx.size, ctx.problems = walk.batches, walk.end, tuple(problems)
        for k, w in enumerate(walks):
            if w.whole_segment_needed:  # its offsets go back: judged on the whole segment
                w = seg_checks[k](ctx)
                w.feed(_whole_scan(seg.log, scan, options))
            findings.extend(w.findings())
        walked.append(walk)
        evidence.append(cleaning.end)
        if walk.last_offset is not None:
            previous_last = walk.last_offset
        del ctx, walks
    findings.extend(partition_file_findings(pdir))
    replay = replayer.result
    # A segment without its .log is no segment to the broker (orphaned_index): the log's bounds
    # come from the segments that have one.
    bases = [s.base_offset for s in segments if s.log is not None]
    leo = max(replay.log_end_offset, bases[-1] if bases else 0)
    first_base = bases[0] if bases else 0
    lso_start = first_base if log_start_offset is None else max(log_start_offset, first_base)

    hw_source = ("leader_log_end" if high_watermark_at_log_end
                 else "log_end_offset" if high_watermark is None else "checkpoint")
    if high_watermark_at_log_end:
        high_watermark = leo
    snapshots = read_snapshots(pdir.snapshots)
    loaded = load_partition(replay, snapshots,
                            lambda start: chunks_from(walked, start, chunks_of),
                            log_start_offset=lso_start, log_end_offset=leo,
                            high_watermark=high_watermark)
    stable = loaded.stable
    state = loaded.state
    prediction = None
    if options.predict_restart or options.view == AFTER_RESTART:
        # the model of the log load: loaded only for the restart view and its findings
        from kafkatx.analysis.restart_view import predict_restart, restart_findings

        found_aborts = [e for read in txn_indexes.values() for e in read.entries]
        prediction = predict_restart(pdir, replay,
                                     high_watermark=(None if high_watermark_at_log_end
                                                     else high_watermark),
                                     found_aborts=found_aborts, now_ms=options.now_ms,
                                     chunks=chunks_of)
        records_closed_by = _records_closed_by(replay)
        findings.extend(restart_findings(
            prediction, topic=topic, partition=partition, path=str(pdir.path), as_found=stable,
            log_end_offset=leo, view=options.view,
            records_between=lambda lo, hi: _records_between(walked, lo, hi, chunks_of),
            abort_records=lambda e: records_closed_by(e.last_offset)))
    if prediction is not None and options.view == AFTER_RESTART and not prediction.failed:
        replay, state, stable, leo, lso_start, txn_indexes = _after_restart(
            replay, prediction, txn_indexes)
    pctx = PartitionContext(
        topic=topic, partition=partition, path=str(pdir.path), replay=replay, stable=stable,
        log_start_offset=lso_start, log_end_offset=leo,
        segment_bases=[s.base_offset for s in segments], txn_indexes=txn_indexes,
        txn_index_paths=txn_index_paths, snapshots=snapshots,
        snapshot_replay=loaded.snapshot_replay, snapshot_replay_offset=loaded.snapshot_offset,
        cleaned_end=cleaned_end(cleaner_offset, evidence, leo),
        swap_recovery=swap_recovery_of(pdir),
        now_ms=options.now_ms if options.now_ms is not None else replay.max_timestamp,
        transaction_timeout_ms=options.transaction_timeout_ms,
        max_transaction_timeout_ms=(options.max_transaction_timeout_ms
                                    or DEFAULT_MAX_TRANSACTION_TIMEOUT_MS),
        max_timeout_said=options.max_timeout_said,
    )
    if prediction is not None and options.view != AFTER_RESTART and not prediction.failed:
        pctx.restart_forgets = {(t.producer_id, t.first_offset): t.records
                                for t in prediction.forgotten}
    for check in partition_checks():
        findings.extend(check(pctx))
    if finalize is not None:
        findings = finalize(pdir, pctx, [_placed(f, topic, partition) for f in findings])
    hw = leo if stable.high_watermark is None else stable.high_watermark
    report = PartitionReport(
        topic=topic, partition=partition, path=str(pdir.path),
        broker=pdir.log_dir.label if pdir.log_dir is not None else None, state=pdir.state,
        log_start_offset=lso_start, log_end_offset=leo, high_watermark=stable.high_watermark,
        high_watermark_source=hw_source, last_stable_offset=stable.last_stable_offset,
        lso_source=stable.lso_source,
        records_pending=_records_between(walked, stable.last_stable_offset, hw, chunks_of),
        open_transactions=replay.open_transactions, segments=len(segments), size_bytes=size,
        batches=replay.batches, data_records=replay.data_records,
        producers=len(state.producers),
        transactions_committed=int(replay.transactions.outcome_is(COMMITTED).sum()),
        transactions_aborted=int(replay.transactions.outcome_is(ABORTED).sum()),
        longest_transaction_ms=_longest(replay),
        min_timestamp=replay.min_timestamp if replay.min_timestamp >= 0 else None,
        max_timestamp=replay.max_timestamp if replay.max_timestamp >= 0 else None,
        findings=[_placed(f, topic, partition) for f in findings],
    )
    return report


def _after_restart(replay: ReplayResult, prediction: RestartPrediction,
                   txn_indexes: dict[int, TxnIndexRead]
                   ) -> tuple[ReplayResult, ProducerStateManager, StableOffsets, int, int,
                              dict[int, TxnIndexRead]]:
    """The partition as the broker has it once it has loaded these files: its transactions
    (those it forgets are ``forgotten``, those only its state has are added), producer state,
    LSO, log bounds and the ``.txnindex`` entries it serves."""
    outcome = prediction.outcome
    assert prediction.stable is not None
    transactions = replay.transactions.copy()
    forgotten = {(t.producer_id, t.first_offset) for t in prediction.forgotten}
    kept = {t.producer_id: t for t in prediction.open_transactions}
    live = transactions.live_rows()
    for row, t in live.items():
        if (t.producer_id, t.first_offset) in forgotten and t.outcome == OPEN:
            transactions.replace_row(row, replace(t, outcome=FORGOTTEN))
        elif t.outcome == OPEN and t.producer_id in kept:
            transactions.replace_row(row, kept.pop(t.producer_id))
    for t in kept.values():
        transactions.append(t)
    transactions.sort_by_first_offset()
    indexes = {base: TxnIndexRead(entries=tuple(entries), problems=(), base_offset=base,
                                  path=txn_indexes[base].path if base in txn_indexes else None)
               for base, entries in outcome.txn_indexes()}
    return (replace(replay, transactions=transactions), outcome.state, prediction.stable,
            outcome.log_end_offset, outcome.log_start_offset, indexes)


def swap_recovery_of(pdir: PartitionDir) -> SwapRecoveryPlan | None:
    """What the next ``LogLoader#load`` does with the dir's ``.cleaned``/``.swap``/``.deleted``
    files (None: there are none); a ``.swap`` log is scanned for its next offset."""
    if not pdir.other_segments and not pdir.other_snapshots:
        return None
    names = [p.name for seg in (*pdir.segments, *pdir.other_segments) for p in seg.files]
    names += [p.name for _, p in (*pdir.snapshots, *pdir.other_snapshots)]
    swap_logs = {seg.log.name: seg for seg in pdir.other_segments
                 if seg.suffix == SWAP_SUFFIX and seg.log is not None}

    def next_offset(name: str) -> int:
        seg = swap_logs[name]
        assert seg.log is not None
        try:
            last = _scan(seg.log).headers.last_offset
        except KafkatxError:
            return seg.base_offset
        return int(last[-1]) + 1 if len(last) else seg.base_offset

    return plan_swap_recovery(names, next_offset)


def _placed(f: Finding, topic: str, partition: int) -> Finding:
    if f.topic is not None:
        return f
    from dataclasses import replace

    return replace(f, topic=topic, partition=partition)


def _longest(replay: ReplayResult) -> int | None:
    table = replay.transactions
    if not table:
        return None
    end = np.where(table.is_null("marker_timestamp"), table.column("last_timestamp"),
                   table.column("marker_timestamp"))
    return int((end - table.column("first_timestamp")).max())


def _records_closed_by(replay: ReplayResult) -> Callable[[int], int]:
    """The records of the transaction a marker offset closed (0: none)."""
    from kafkatx.analysis.transaction_table import MarkerRows

    index, records = MarkerRows(replay.transactions), replay.transactions.column("records")

    def records_of(marker_offset: int) -> int:
        row = int(index.last_rows([marker_offset])[0])
        return int(records[row]) if row >= 0 else 0

    return records_of


def _records_between(walked: list[WalkedSegment], lso: int, hw: int, chunks_of: ChunksOf
                     ) -> int:
    """Data records with offsets in [lso, hw): what read_committed consumers cannot see yet."""
    if hw <= lso:
        return 0
    total = 0
    for chunk in chunks_from(walked, lso, chunks_of, upto=hw):
        h = chunk.headers
        # In runs of rows: temporaries of a run on top of the chunk's columns.
        for at in range(0, len(h), ROWS_PER_RUN):
            rows = slice(at, at + ROWS_PER_RUN)
            data = ~h.is_control[rows]
            lo = np.maximum(h.base_offset[rows], lso)
            hi = np.minimum(h.last_offset[rows], hw - 1)
            span = np.clip(hi - lo + 1, 0, None)
            # Exact for uncompacted batches (records = offsets); compaction can only lower it.
            total += int(np.minimum(span, h.records_count[rows])[data & (hi >= lo)].sum())
    return total


# (dir, high watermark, log start, the cleaner's first dirty offset) from the root checkpoints,
# and whether the HW is the log end offset (the broker leads it as its only replica)
Work = list[tuple[PartitionDir, int | None, int | None, int | None, bool]]


def start_inspection(
    paths: Iterable[str | os.PathLike[str]],
    *,
    options: AnalysisOptions = DEFAULT_OPTIONS,
    keep_timeline: bool = False,
    selection: Selection | None = None,
) -> tuple[Inspection, CoordinatorChecks, Work, AnalysisOptions]:
    """What every engine does before the per-partition work: discover, read the root
    checkpoints, load the coordinator's view for the join; returns the partitions to analyze
    (in order) with their checkpointed high watermark and log start offset, and ``options``
    with the defaults the evidence's metadata log decides filled in."""
    paths = list(paths)
    disc = discover(paths)
    if options.max_transaction_timeout_ms is None:
        value, said = max_transaction_timeout(disc)
        options = options._replace(max_transaction_timeout_ms=value, max_timeout_said=said)
    result = Inspection(discovery=disc, problems=list(disc.problems))
    result.replica_sets = replica_sets(disc.all_partitions(), result.problems)
    joined = CoordinatorChecks.for_discovery(disc, now_ms=options.now_ms,
                                             num_partitions=options.transaction_state_partitions,
                                             max_timeout_ms=options.max_transaction_timeout_ms,
                                             keep_timeline=keep_timeline,
                                             selection=selection,
                                             followers=follower_paths(result.replica_sets))
    checkpoints: dict[int, list[RootOffsets]] = {}
    for log_dir in disc.log_dirs:
        offsets, cp_findings = _root_offsets(log_dir)
        checkpoints[id(log_dir)] = offsets
        result.findings.extend(cp_findings)
    led = {id(log_dir): leader_log_ends(disc, log_dir) for log_dir in disc.log_dirs}
    work: Work = []
    for pdir in disc.all_partitions():
        hws, starts, cleaned = checkpoints.get(id(pdir.log_dir), [{}, {}, {}])
        key = (pdir.topic, pdir.partition)
        work.append((pdir, hws.get(key), starts.get(key), cleaned.get(key),
                     key in led.get(id(pdir.log_dir), ())))
    return result, joined, work, options


def add_partition(result: Inspection, report: PartitionReport) -> None:
    """A partition's report (its findings already joined), in discovery order."""
    result.partitions.append(report)
    result.findings.extend(report.findings)


def finish_inspection(result: Inspection, joined: CoordinatorChecks) -> Inspection:
    """The coordinator-side findings of the join, the ranking, the timeline."""
    if result.replica_sets:  # copies in several log dirs: their comparison's module loads
        from kafkatx.analysis.replicas import compare_replicas

        result.replicas = compare_replicas(result.discovery, result.partitions,
                                           result.problems, result.replica_sets)
    result.findings.extend(f for comp in result.replicas for f in comp.findings)
    told = joined.finish()  # may tell some partition findings again (joined.revise)
    result.findings = joined.revise(result.findings)
    for r in result.partitions:
        r.findings = joined.revise(r.findings)
    for f in told:
        result.findings.append(f)
        report = next((r for r in result.partitions
                       if (r.topic, r.partition) == (f.topic, f.partition)), None)
        if report is not None:
            report.findings.append(f)
    result.findings = rank(result.findings)
    result.timeline = joined.timeline([f for comp in result.replicas for f in comp.findings])
    result.coordinator = joined.view
    return result


def inspect_paths(
    paths: Iterable[str | os.PathLike[str]],
    *,
    options: AnalysisOptions = DEFAULT_OPTIONS,
    progress: Progress | None = None,
    on_partition: Callable[[PartitionDir], None] | None = None,
    keep_timeline: bool = False,
    selection: Selection | None = None,
) -> Inspection:
    """Discover every partition under ``paths`` and analyze each one, then join the
    transactions across partitions with the coordinator's log (``coordinator_checks``); with
    ``keep_timeline`` the joined transactions ``selection`` keeps are in ``result.timeline``."""
    result, joined, work, options = start_inspection(paths, options=options,
                                                     keep_timeline=keep_timeline,
                                                     selection=selection)
    for pdir, high_watermark, log_start_offset, cleaner_offset, at_log_end in work:
        if on_partition is not None:
            on_partition(pdir)
        report = analyze_partition(pdir, high_watermark=high_watermark,
                                   high_watermark_at_log_end=at_log_end,
                                   log_start_offset=log_start_offset,
                                   cleaner_offset=cleaner_offset, options=options,
                                   progress=progress, finalize=joined.on_partition)
        add_partition(result, report)
    return finish_inspection(result, joined)


class LocalEngine:
    """The in-process engine (:mod:`kafkatx.engines.base` describes the protocol)."""

    name = "local"

    def inspect(self, paths: Iterable[str | os.PathLike[str]], *,
                options: AnalysisOptions | None = None, progress: Progress | None = None,
                on_partition: Callable[[PartitionDir], None] | None = None,
                keep_timeline: bool = False, selection: Selection | None = None) -> Inspection:
        return inspect_paths(paths, options=options or AnalysisOptions(), progress=progress,
                             on_partition=on_partition, keep_timeline=keep_timeline,
                             selection=selection)

    def consumer_view(self, pdir: PartitionDir, *, isolation: IsolationLevel,
                      high_watermark: int | None, as_of_offset: int | None = None,
                      index_source: str = "file",
                      log_start_offset: int | None = None,
                      high_watermark_at_log_end: bool = False,
                      after_restart: bool = False) -> ConsumerView:
        from kafkatx.analysis.consumer_view import prepare

        return prepare(pdir, isolation=isolation, high_watermark=high_watermark,
                       as_of_offset=as_of_offset, index_source=index_source,
                       log_start_offset=log_start_offset,
                       high_watermark_at_log_end=high_watermark_at_log_end,
                       after_restart=after_restart)

    def replay_records(self, pdir: PartitionDir, view: ConsumerView, *,
                       from_offset: int | None = None, to_offset: int | None = None,
                       show_hidden: bool = False,
                       on_problem: Callable[[str], None] | None = None,
                       only_hidden: bool = False,
                       formatter: BatchFormatter | None = None,
                       on_bytes: Callable[[int], None] | None = None
                       ) -> Iterator[ReplayedRecord]:
        from kafkatx.analysis.consumer_view import replay_records

        return replay_records(pdir, view, from_offset=from_offset, to_offset=to_offset,
                              show_hidden=show_hidden, on_problem=on_problem,
                              only_hidden=only_hidden, formatter=formatter,
                              on_bytes=on_bytes)

    def write_tables(self, target: str, tables: dict[str, Any]) -> list[str]:
        from kafkatx.engines.tables import write_local

        return write_local(target, tables)

    def close(self) -> None:
        pass

    def __enter__(self) -> LocalEngine:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
