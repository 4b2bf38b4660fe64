"""Replay what a consumer received from one partition, record by record, and why.

The partition is first rebuilt with the producer-state replay up to the chosen log end offset
(``--as-of-offset``, default the whole log): that gives the LSO and the pinning transaction of
that moment, and the aborted transactions rebuilt from ABORT markers. Then the consumer's fetches
are replayed as Kafka's broker and Java client do them (:mod:`kafkatx.semantics.read_committed`):
each fetch reads from one segment, bounded by the LSO (read_committed) or the high watermark,
carries the aborted transactions the broker collects from the ``.txnindex`` files (or from the
markers, with ``index_source="rebuild"``), and the client filters batch by batch. Memory stays
bounded by one segment's header columns plus one batch's records plus the aborted set.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable, Generator, Iterator
from dataclasses import field
from pathlib import Path

import numpy as np

from kafkatx.analysis.partition_load import load_partition, read_snapshots
from kafkatx.analysis.replay import ALL_SETTLED, OffsetsWentBack, PartitionReplayer
from kafkatx.analysis.replay_result import ReplayResult
from kafkatx.errors import FormatError, KafkatxError
from kafkatx.formats.batch_values import ControlType
from kafkatx.formats.batchscan import HeaderColumns
from kafkatx.formats.record_decode import read_records_at
from kafkatx.formats.record_values import Record, render_bytes
from kafkatx.formats.segment_scan import (
    SegmentScan,
    page_releaser,
    scan_segment_chunks,
)
from kafkatx.formats.txn_index import AbortedTxnEntry
from kafkatx.lazy_dataclass import dataclass
from kafkatx.semantics.read_committed import (
    CODE_ABORTED,
    CODE_CONTROL,
    CODE_DELIVER,
    DECISIONS,
    AbortedTransaction,
    Decision,
    IsolationLevel,
    ReadCommittedFilter,
    collect_aborted_transactions,
    decide_batches,
    max_fetch_offset,
)
from kafkatx.storage.discovery import PartitionDir
from kafkatx.storage.readers import read_txn_index_file, scan_segment_file, segment_buffer

#: Writes batches' records itself (``replay_writer.ReplayWriter.segment``): called once a
#: segment with its bytes, header columns, the rows of the batches whose records are shown,
#: their decision codes (``DECISIONS``), whether each is beyond the fetch bound, the lowest and
#: highest offsets wanted and the path; returns ``run(i, end)``, which writes the records of
#: rows ``i`` up to ``end`` (indexes into those rows) as far as it can and returns where it
#: stopped (a row it leaves to be decoded here, or ``end``) and whether the consumer stops.
BatchFormatter = Callable[..., Callable[[int, int], tuple[int, bool]]]
# Bytes of a segment scanned and held as columns at once (at most ~69,000 batches, ~7 MB).
CHUNK_BYTES = 4 << 20
ROWS_AT_ONCE = 1024  # batches between progress reports

VISIBLE = None
ABORTED = "aborted"
BEYOND_LSO = "beyond_lso"
BEYOND_HW = "beyond_high_watermark"


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplayedRecord:
    """A record as a consumer of the partition meets it: visible or why not."""

    record: Record
    producer_id: int
    producer_epoch: int
    is_transactional: bool
    visible: bool
    reason: str | None = None  # aborted | beyond_lso | beyond_high_watermark
    abort_marker_offset: int | None = None
    transaction_first_offset: int | None = None  # of the aborted transaction
    pinned_by: tuple[int, int] | None = None  # (producer id, first offset) holding the LSO

    def to_dict(self) -> dict[str, object]:
        """The ``kafkatx replay --format jsonl`` contract for one record."""
        out = {"offset": self.record.offset, "timestamp": self.record.timestamp,
               "producer_id": self.producer_id, "producer_epoch": self.producer_epoch}
        out.update(render_bytes("key", self.record.key))
        out.update(render_bytes("value", self.record.value))
        out["headers"] = [{"key": k, **render_bytes("value", v)} for k, v in self.record.headers]
        out["visible"] = self.visible
        if not self.visible:
            out["reason"] = self.reason
            if self.reason == ABORTED:
                out["abort_marker_offset"] = self.abort_marker_offset
                out["transaction_first_offset"] = self.transaction_first_offset
            elif self.reason == BEYOND_LSO and self.pinned_by is not None:
                out["pinned_by"] = {"producer_id": self.pinned_by[0],
                                    "first_offset": self.pinned_by[1]}
        return out


@dataclass(slots=True, kw_only=True)
class ConsumerView:
    """The moment replayed: offsets that bound the fetch, and the aborted set used."""

    topic: str
    partition: int
    isolation: IsolationLevel
    log_end_offset: int
    high_watermark: int
    high_watermark_source: str  # checkpoint | leader_log_end | log_end_offset | as_of_offset
    last_stable_offset: int
    lso_source: str
    index_source: str
    aborted: list[AbortedTxnEntry] = field(default_factory=list)
    disagreements: list[str] = field(default_factory=list)  # .txnindex vs markers
    notes: list[str] = field(default_factory=list)
    pinning: tuple[int, int, int] | None = None  # (producer id, epoch, first offset)
    view: str = "as_found"  # as_found | after_restart
    start_offset: int | None = None  # where the consumer starts (the restart view: log start)
    valid_bytes: dict[int, int] = field(default_factory=dict)  # by segment base: recovery's cut


def _scan(path: Path) -> SegmentScan:
    return scan_segment_file(path)


def _scan_chunks(path: Path) -> Iterator[SegmentScan]:
    """A segment's scan a chunk of batches at a time, the file open (mapped when large)."""
    with segment_buffer(path) as data:
        yield from scan_segment_chunks(data, path=str(path), window=CHUNK_BYTES,
                                       release=page_releaser(data))


def prepare(
    pdir: PartitionDir,
    *,
    isolation: IsolationLevel,
    high_watermark: int | None,
    as_of_offset: int | None = None,
    index_source: str = "file",
    scan: Callable[[Path], SegmentScan] | None = None,
    log_start_offset: int | None = None,
    after_restart: bool = False,
    now_ms: int | None = None,
    high_watermark_at_log_end: bool = False,
) -> ConsumerView:
    """Rebuild the partition up to ``as_of_offset`` as the broker loads it (its newest loadable
    snapshot plus the log tail, :mod:`kafkatx.analysis.partition_load`) and decide the fetch
    bounds and aborted set.

    ``scan`` returns a segment's scan by ``.log`` path (default: read and scan it here);
    ``log_start_offset`` is the checkpointed one (the first segment's base offset is the floor);
    ``high_watermark_at_log_end``: the broker leads the partition as its only replica, so its
    HW is the log end offset (``kafkatx.semantics.leader_high_watermark``).
    """
    if after_restart:
        if as_of_offset is not None:
            raise KafkatxError("--as-of-offset replays the log as it stood at an offset; "
                               "--after-restart replays it as a broker loads it now: give one")
        return _after_restart(pdir, isolation=isolation,
                              high_watermark=None if high_watermark_at_log_end
                              else high_watermark, scan=_scan if scan is None else scan,
                              now_ms=now_ms)
    args = (pdir, isolation, high_watermark, as_of_offset, index_source, scan, log_start_offset,
            high_watermark_at_log_end)
    # Completed transactions are forgotten once settled below the HW the view is read at (it
    # ends at or above min(checkpoint, log end)): what is kept is the open ones.
    settled = ALL_SETTLED if high_watermark is None or (
        high_watermark_at_log_end and as_of_offset is None) else high_watermark
    try:
        return _prepare(*args, forget_settled=settled)
    except OffsetsWentBack:  # what was forgotten may matter again: everything kept
        return _prepare(*args, forget_settled=None)


def _prepare(pdir: PartitionDir, isolation: IsolationLevel, high_watermark: int | None,
             as_of_offset: int | None, index_source: str,
             scan: Callable[[Path], SegmentScan] | None, log_start_offset: int | None,
             high_watermark_at_log_end: bool, *, forget_settled: int | None) -> ConsumerView:
    replayer = PartitionReplayer(forget_settled=forget_settled)
    notes: list[str] = []
    end_cut = as_of_offset
    logs = [seg for seg in pdir.segments if seg.log is not None
            and (end_cut is None or seg.base_offset < end_cut)]

    def scans(start: int = 0) -> Iterator[SegmentScan]:
        """The segments holding offsets >= ``start``, a chunk of batches at a time (one scan
        a segment from a given ``scan``)."""
        for i, seg in enumerate(logs):
            if i + 1 < len(logs) and logs[i + 1].base_offset <= start:
                continue
            assert seg.log is not None
            chunks = _scan_chunks(seg.log) if scan is None else iter((scan(seg.log),))
            for chunk in chunks:
                yield chunk if end_cut is None else _truncate_scan(chunk, end_cut)

    for segment_scan in scans():
        replayer.feed(segment_scan)
    replay: ReplayResult = replayer.result
    leo = replay.log_end_offset
    if as_of_offset is not None and leo != as_of_offset:
        notes.append(f"--as-of-offset {as_of_offset} is not a batch boundary or lies beyond the "
                     f"log: replayed the log as it stood at log end offset {leo}")
    if as_of_offset is not None:
        hw = leo if high_watermark is None else min(high_watermark, leo)
        hw_source = "as_of_offset" if high_watermark is None or high_watermark >= leo \
            else "checkpoint"
    elif high_watermark_at_log_end:
        hw, hw_source = leo, "leader_log_end"
    else:
        hw = leo if high_watermark is None else high_watermark
        hw_source = "log_end_offset" if high_watermark is None else "checkpoint"
        if high_watermark is None:
            notes.append("no high watermark checkpoint for this partition: the log end offset is "
                         "used as the high watermark")
    first_base = pdir.segments[0].base_offset if pdir.segments else 0
    log_start = first_base if log_start_offset is None else max(log_start_offset, first_base)
    loaded = load_partition(replay, read_snapshots(pdir.snapshots), scans,
                            log_start_offset=log_start, log_end_offset=leo, high_watermark=hw,
                            forget_settled=forget_settled)
    stable = loaded.stable
    hw = leo if stable.high_watermark is None else stable.high_watermark
    rebuilt = [AbortedTxnEntry(producer_id=a.producer_id, first_offset=a.first_offset,
                               last_offset=a.last_offset, last_stable_offset=a.last_stable_offset)
               for a in replay.expected_aborted]
    from_files = _txn_index_entries(pdir, leo)
    # A marker whose data is gone (retention, the cleaner) keeps its entry: no disagreement.
    lone = {(e.batch.producer_id, e.batch.base_offset) for e in replay.events
            if e.kind == "empty_transaction"}
    disagreements = _compare([e for e in from_files if _key(e) not in lone], rebuilt)
    aborted = rebuilt if index_source == "rebuild" else from_files
    pinning = None
    if stable.holder_first_offset is not None:
        held = np.flatnonzero(replay.transactions.column("first_offset")
                              == stable.holder_first_offset)
        if len(held):
            txn = replay.transactions[int(held[-1])]
            pinning = (txn.producer_id, txn.producer_epoch, txn.first_offset)
    if index_source == "file" and disagreements:
        notes.append("the .txnindex files and the ABORT markers disagree (below): this replay "
                     "follows the files, as the broker did; --index-source rebuild follows the "
                     "markers")
    return ConsumerView(
        topic=pdir.topic, partition=pdir.partition, isolation=isolation, log_end_offset=leo,
        high_watermark=hw, high_watermark_source=hw_source,
        last_stable_offset=stable.last_stable_offset, lso_source=stable.lso_source,
        index_source=index_source, aborted=aborted, disagreements=disagreements, notes=notes,
        pinning=pinning,
    )


def _after_restart(pdir: PartitionDir, *, isolation: IsolationLevel, high_watermark: int | None,
                   scan: Callable[[Path], SegmentScan], now_ms: int | None) -> ConsumerView:
    """The view of a broker that has just loaded these files (:mod:`kafkatx.semantics.log_load`):
    its log start and end, its LSO, the ``.txnindex`` entries it serves (rebuilt where it
    recovers a segment) and the bytes recovery keeps of each segment."""
    from kafkatx.analysis.restart_view import load_after_restart
    from kafkatx.analysis.stable_offsets import stable_offsets

    outcome = load_after_restart(pdir, now_ms=now_ms, scan=scan)
    if outcome.failure is not None:
        raise KafkatxError(f"{pdir.path}: a broker restarting on these files would not bring "
                           f"the partition online: {outcome.failure}")
    leo = outcome.log_end_offset
    start = outcome.log_start_offset
    stable = stable_offsets(outcome.state, leo, high_watermark, start, outcome.offset_metadata)
    hw = leo if stable.high_watermark is None else stable.high_watermark
    pinning = None
    holder = stable.holder_first_offset
    for txn in outcome.state.ongoing_txns.values():
        if holder is not None and txn.first_offset == holder:
            entry = outcome.state.producers.get(txn.producer_id)
            pinning = (txn.producer_id, -1 if entry is None else entry.producer_epoch,
                       txn.first_offset)
    notes = ["after restart: what a broker starting on these files serves once it has loaded "
             "them (LogLoader#load)", *outcome.steps]
    if high_watermark is None:
        notes.append("no high watermark checkpoint for this partition: the log end offset is "
                     "used as the high watermark")
    return ConsumerView(
        topic=pdir.topic, partition=pdir.partition, isolation=isolation, log_end_offset=leo,
        high_watermark=hw, high_watermark_source="log_end_offset" if high_watermark is None
        else "checkpoint", last_stable_offset=stable.last_stable_offset,
        lso_source=stable.lso_source, index_source="file", aborted=outcome.aborted, notes=notes,
        pinning=pinning, view="after_restart", start_offset=start,
        valid_bytes={seg.base_offset: 0 for seg in pdir.segments}  # deleted by the load
        | {seg.base_offset: seg.size for seg in outcome.segments})


def _truncate_scan(scan: SegmentScan, end: int) -> SegmentScan:
    """Only the batches that lie wholly below ``end`` (the log as it stood then)."""
    keep = scan.headers.last_offset < end
    if keep.all():
        return scan
    from kafkatx.formats.batchscan import HeaderColumns

    h = scan.headers
    cols = HeaderColumns(**{name: getattr(h, name)[keep] for name in HeaderColumns.COLUMNS})
    return SegmentScan(path=scan.path, headers=cols, control_type=scan.control_type[keep],
                       coordinator_epoch=scan.coordinator_epoch[keep], problems=scan.problems,
                       size=scan.size)


def _txn_index_entries(pdir: PartitionDir, leo: int) -> list[AbortedTxnEntry]:
    out: list[AbortedTxnEntry] = []
    for seg in pdir.segments:
        if seg.txnindex is None:
            continue
        read = read_txn_index_file(seg.txnindex, base_offset=seg.base_offset)
        # An entry is written when its ABORT marker is appended: later ones did not exist yet.
        out.extend(e for e in read.entries if e.last_offset < leo)
    return out


def _key(e: AbortedTxnEntry) -> tuple[int, int]:
    """An aborted transaction is its producer and ABORT marker (the cleaner keeps an entry's
    first offset while it removes the first batches, so that may differ)."""
    return (e.producer_id, e.last_offset)


def _compare(files: list[AbortedTxnEntry], rebuilt: list[AbortedTxnEntry]) -> list[str]:
    out = []
    f = {_key(e): e for e in files}
    r = {_key(e): e for e in rebuilt}
    for k in sorted(r.keys() - f.keys(), key=lambda x: x[1]):
        out.append(f"the ABORT marker at offset {k[1]} (producer {k[0]}, transaction from "
                   f"{r[k].first_offset}) has no .txnindex entry: a read_committed consumer of "
                   "this broker would receive that aborted data")
    for k in sorted(f.keys() - r.keys(), key=lambda x: x[1]):
        out.append(f".txnindex entry (producer {k[0]}, {f[k].first_offset}..{k[1]}) matches no "
                   "ABORT marker in the log: a read_committed consumer would skip that "
                   "producer's data")
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class SegmentFetch:
    """The fetches a consumer makes from one segment: from ``fetch_offset`` up to
    ``upper_bound`` (the next segment's base offset, or the log end offset)."""

    index: int  # position among the partition's live segments with a .log
    log: Path
    base_offset: int
    fetch_offset: int
    upper_bound: int


def segment_fetches(pdir: PartitionDir, view: ConsumerView, *, from_offset: int | None = None
                    ) -> tuple[int, list[SegmentFetch]]:
    """Where the consumer starts, and each segment it reads, in order (as the Java consumer
    moves from one segment's fetches to the next)."""
    segments = [s for s in pdir.segments if s.log is not None]
    start = from_offset if from_offset is not None else (
        view.start_offset if view.start_offset is not None
        else segments[0].base_offset if segments else 0)
    fetch_offset = start
    out: list[SegmentFetch] = []
    for i, seg in enumerate(segments):
        next_base = segments[i + 1].base_offset if i + 1 < len(segments) else None
        if next_base is not None and next_base <= fetch_offset:
            continue
        if seg.base_offset >= view.log_end_offset:
            break
        upper_bound = next_base if next_base is not None else view.log_end_offset
        assert seg.log is not None
        out.append(SegmentFetch(index=i, log=seg.log, base_offset=seg.base_offset,
                                fetch_offset=fetch_offset,
                                upper_bound=upper_bound))
        fetch_offset = max(fetch_offset, upper_bound)
    return start, out


def replay_records(
    pdir: PartitionDir,
    view: ConsumerView,
    *,
    from_offset: int | None = None,
    to_offset: int | None = None,
    show_hidden: bool = False,
    on_problem: Callable[[str], None] | None = None,
    only_hidden: bool = False,
    formatter: BatchFormatter | None = None,
    on_bytes: Callable[[int], None] | None = None,
) -> Iterator[ReplayedRecord]:
    """The consumer's fetches, segment by segment, as records with their visibility.

    ``only_hidden`` (with ``show_hidden``): only the records the consumer does not receive
    (aborted, beyond the LSO or the HW); the batches it receives are not decoded at all.
    """
    start, fetches = segment_fetches(pdir, view, from_offset=from_offset)
    bases = [s.base_offset for s in pdir.segments if s.log is not None]
    for fetch in fetches:
        stopped = yield from replay_segment(fetch, view, bases, start=start, to_offset=to_offset,
                                            show_hidden=show_hidden, on_problem=on_problem,
                                            only_hidden=only_hidden, formatter=formatter,
                                            on_bytes=on_bytes)
        if stopped:
            return


def replay_segment(
    fetch: SegmentFetch,
    view: ConsumerView,
    segment_bases: list[int],
    *,
    start: int,
    to_offset: int | None = None,
    show_hidden: bool = False,
    on_problem: Callable[[str], None] | None = None,
    only_hidden: bool = False,
    formatter: BatchFormatter | None = None,
    on_bytes: Callable[[int], None] | None = None,
) -> Generator[ReplayedRecord, None, bool]:
    """The records of one segment's fetches; returns True when the replay ends in it (the
    consumer reached ``to_offset`` or the fetch bound), so later segments are not read.

    The client's batch decisions are taken for the whole segment at once over its header
    columns (``decide_batches``); records are decoded only for the batches that yield them.
    ``formatter`` (jsonl/csv output) is offered the batches first: the records it writes
    itself are not yielded. ``on_bytes`` is told how far into the segment the replay got
    (in bytes, every ``ROWS_AT_ONCE`` batches and at its end), for a progress bar.
    """
    max_offset = max_fetch_offset(view.isolation, view.high_watermark, view.last_stable_offset)
    txn_by_segment = _by_segment(segment_bases, view.aborted)
    marker_of = {(e.producer_id, e.first_offset): e.last_offset for e in view.aborted}
    fetch_offset = fetch.fetch_offset
    aborted = collect_aborted_transactions(txn_by_segment, fetch_offset, fetch.upper_bound)
    if view.isolation != IsolationLevel.READ_COMMITTED:
        aborted = []
    flt = ReadCommittedFilter(aborted, view.isolation)
    aborted_firsts: dict[int, list[int]] = {}
    for a in sorted(aborted):
        aborted_firsts.setdefault(a.producer_id, []).append(a.first_offset)
    log = fetch.log
    reported = 0
    ended = False  # the consumer stopped in this segment
    with segment_buffer(log) as data:
        release = page_releaser(data)  # a mapped segment's pages dropped behind the replay
        for scan in scan_segment_chunks(data, path=str(log), window=CHUNK_BYTES,
                                        release=release):
            h = scan.headers
            in_log = h.base_offset < view.log_end_offset
            limit = view.valid_bytes.get(fetch.base_offset)
            if limit is not None:  # recovery cuts the segment after its last valid batch
                in_log &= h.next_position <= limit
            rows = np.flatnonzero((h.last_offset >= fetch_offset) & in_log)
            base = h.base_offset[rows]
            beyond = base >= max_offset
            # The consumer stops at the first batch past ``to_offset``, or past the fetch
            # bound when hidden records are not shown.
            stops = (base > to_offset) if to_offset is not None else np.zeros(len(rows), bool)
            if not show_hidden:
                stops |= beyond
            stop = int(np.argmax(stops)) if stops.any() else len(rows)
            rows, beyond = rows[:stop], beyond[:stop]
            codes = np.full(len(rows), CODE_DELIVER, dtype=np.int8)
            within = rows[~beyond]
            codes[~beyond] = decide_batches(
                flt, h.producer_id[within], h.is_transactional[within], h.is_control[within],
                h.last_offset[within],
                h.is_control[within] & (scan.control_type[within] == ControlType.ABORT))
            shown = ~h.is_control[rows] & (codes != CODE_CONTROL)
            if not show_hidden:
                shown &= codes != CODE_ABORTED
            if only_hidden:
                shown &= beyond | (codes == CODE_ABORTED)
            sel, sel_codes, sel_beyond = rows[shown], codes[shown], beyond[shown]
            sel_position = h.position[sel]
            run = None if formatter is None or not len(sel) else formatter(
                data, h, sel, sel_codes, sel_beyond, max(fetch_offset, start), to_offset,
                str(log))
            i = 0
            while i < len(sel):
                if on_bytes is not None or release is not None:
                    at = int(sel_position[i])
                    if on_bytes is not None:
                        on_bytes(at - reported)
                    if release is not None:
                        release(reported, at)
                    reported = at
                end = min(i + ROWS_AT_ONCE, len(sel))
                if run is not None:
                    i, stopped = run(i, end)
                    if stopped:
                        return True
                    if i == end:
                        continue
                    end = i + 1  # the batch the formatter leaves: decoded here
                for j, decision, past in zip(sel[i:end].tolist(), sel_codes[i:end].tolist(),
                                             sel_beyond[i:end].tolist(), strict=True):
                    records = _batch_records(data, h, j, str(log), on_problem)
                    if records is None:
                        continue
                    pid = int(h.producer_id[j])
                    epoch = int(h.producer_epoch[j])
                    is_txn = bool(h.is_transactional[j])
                    for rec in records:
                        if rec.offset < fetch_offset or rec.offset < start:
                            continue
                        if to_offset is not None and rec.offset > to_offset:
                            return True
                        first = max((f for f in aborted_firsts.get(pid, ())
                                     if f <= rec.offset), default=None)
                        yield classify(rec, pid, epoch, is_txn, DECISIONS[decision], past,
                                       view, marker_of.get((pid, first if first is not None
                                                            else -1)), first)
                i = end
            if stop < len(stops):
                ended = True
                break
        if on_bytes is not None:
            on_bytes(len(data) - reported)
    return ended


def _batch_records(data: bytes | mmap.mmap, h: HeaderColumns, j: int, path: str,
                   on_problem: Callable[[str], None] | None) -> list[Record] | None:
    """The records of batch ``j`` (None: they do not decode; ``on_problem`` is told)."""
    if int(h.magic[j]) < 2:
        return _legacy_records(data, int(h.position[j]), path)
    try:
        return read_records_at(data, h, j, path=path)
    except FormatError as exc:
        if on_problem is not None:
            on_problem(str(exc))
        return None


def classify(rec: Record, pid: int, epoch: int, is_txn: bool, decision: Decision, beyond: bool,
              view: ConsumerView, marker: int | None, txn_first: int | None) -> ReplayedRecord:
    if beyond:
        rc = view.isolation == IsolationLevel.READ_COMMITTED
        if rc and rec.offset < view.high_watermark:
            return ReplayedRecord(record=rec, producer_id=pid, producer_epoch=epoch,
                                  is_transactional=is_txn, visible=False, reason=BEYOND_LSO,
                                  pinned_by=None if view.pinning is None
                                  else (view.pinning[0], view.pinning[2]))
        return ReplayedRecord(record=rec, producer_id=pid, producer_epoch=epoch,
                              is_transactional=is_txn, visible=False, reason=BEYOND_HW)
    if decision == Decision.ABORTED:
        return ReplayedRecord(record=rec, producer_id=pid, producer_epoch=epoch,
                              is_transactional=is_txn, visible=False, reason=ABORTED,
                              abort_marker_offset=marker, transaction_first_offset=txn_first)
    return ReplayedRecord(record=rec, producer_id=pid, producer_epoch=epoch,
                          is_transactional=is_txn, visible=True)


def _legacy_records(data: bytes, position: int, path: str) -> list[Record]:
    from kafkatx.formats.legacy_message import parse_legacy_entry

    try:
        entry = parse_legacy_entry(data, position, path=path)
    except FormatError:
        return []
    msgs = entry.inner or (entry.message,)
    return [Record(offset=m.offset, timestamp=m.effective_timestamp, key=m.key, value=m.value)
            for m in msgs]


def _by_segment(bases: list[int], entries: list[AbortedTxnEntry]
                ) -> list[tuple[int, list[AbortedTxnEntry]]]:
    """Aborted entries grouped under the segment holding their marker, as .txnindex files are."""
    import bisect

    out: list[tuple[int, list[AbortedTxnEntry]]] = [(b, []) for b in bases]
    for e in sorted(entries, key=lambda x: x.last_offset):
        i = max(bisect.bisect_right(bases, e.last_offset) - 1, 0)
        if out:
            out[i][1].append(e)
    return out


def find_partition(partitions: tuple[PartitionDir, ...], topic: str, partition: int,
                   problems: list[str] | None = None) -> PartitionDir:
    """The partition's dir; of several brokers' copies, the authoritative one, whose records a
    consumer of the leader gets (``replica_authority.authoritative_copy``)."""
    matches = [p for p in partitions if p.topic == topic and p.partition == partition]
    if not matches:
        raise KafkatxError(f"no partition {topic}-{partition} under the given paths")
    if len(matches) > 1:
        from kafkatx.analysis.replica_authority import authoritative_copy

        live = [p for p in matches if p.is_live] or matches
        return authoritative_copy(live, [] if problems is None else problems)
    return matches[0]


__all__ = ["AbortedTransaction", "BatchFormatter", "ConsumerView", "ReplayedRecord",
           "SegmentFetch", "classify", "find_partition", "prepare", "replay_records",
           "replay_segment", "segment_fetches"]
