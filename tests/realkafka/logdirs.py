"""Log dirs for the load oracle: a broker's history written as Kafka writes it, then damaged.

A :class:`LogDirSpec` (plain JSON) says what a broker appended (transactional, idempotent and
plain batches of a few producers, COMMIT/ABORT markers), where segments rolled, and what
happened afterwards: a clean or unclean shutdown, the checkpoints, retention or DeleteRecords
moving the log start, missing, stale or corrupt indexes, ``.txnindex`` files and snapshots, a
torn tail, leftovers of an interrupted cleaning. :func:`build` writes it deterministically, as
the running broker would have: ``.txnindex`` entries when an ABORT is appended
(``LogSegment#updateTxnIndex``), a producer snapshot at every roll (``UnifiedLog#roll``) and
at a clean shutdown, sparse indexes (``LogSegment#append``). :func:`specs` is the hypothesis
strategy the oracle draws them from.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from kafkatx.formats.checkpoints import CheckpointEntry, build_offset_checkpoint
from kafkatx.formats.producer_snapshot import build_producer_snapshot, snapshot_file_name
from kafkatx.formats.record_batch import ControlType, Record, build_batch, build_control_batch
from kafkatx.formats.txn_index import AbortedTxnEntry, build_txn_index
from kafkatx.semantics.producer_state import (
    AppendOrigin,
    ProducerStateManager,
)
from kafkatx.storage.segment_writer import PartitionWriter, segment_name

TOPIC = "orders"
PARTITION = 0
T0 = 1_763_700_000_000
NOW_MS = T0 + 3_600_000  # the clock the load sees
PIDS = (1000, 1001, 1002)
EPOCH = 3
COORDINATOR_EPOCH = 5
INDEX_INTERVAL = 96  # small, so segments get offset index entries


@dataclass(frozen=True)
class LogDirSpec:
    """What the broker appended and what became of the files (see the module doc)."""

    # ops: ["txn", p, n] | ["idem", p, n] | ["plain", n] | ["commit", p] | ["abort", p] | ["roll"]
    ops: tuple[tuple[Any, ...], ...] = ()
    clean_shutdown: bool = False
    recovery_point: int = 0  # index into [0, segment bases..., log end]; -1: no checkpoint line
    log_start: int = -1  # -1: no line; else an offset (DeleteRecords / retention)
    retention_segments: int = 0  # oldest segments deleted (their snapshots with them)
    high_watermark: int = -1  # -1: the log end
    missing_snapshots: tuple[int, ...] = ()  # indexes into the snapshots written
    corrupt_snapshots: tuple[int, ...] = ()
    missing_index: tuple[int, ...] = ()  # segment indexes whose .index is gone
    missing_timeindex: tuple[int, ...] = ()
    missing_txnindex: tuple[int, ...] = ()
    stale_txnindex: tuple[int, ...] = ()  # the last entry dropped
    bad_txnindex: tuple[int, ...] = ()  # an entry ending below the base offset added
    garbage_index: tuple[int, ...] = ()  # an .index entry past the log's end appended
    flipped: tuple[int, ...] = ()  # a byte flipped in the middle batch of these segments
    cleaned: tuple[int, ...] = ()  # these (non-active) segments lose their transactions' data
    torn_tail: int = 0  # bytes cut off the last segment (>0), or zero bytes appended (<0)
    leftovers: tuple[str, ...] = ()  # "deleted" | "cleaned"
    hours_later: int = 1  # the load's clock: T0 + this (producers idle 24 h expire on load)
    # 0: a leader wrote the log (one batch an append); N: a follower, appending fetched chunks
    # of N batches, whose .txnindex LSOs are computed once the whole chunk is in
    follower_chunk: int = 0

    @property
    def now_ms(self) -> int:
        return T0 + self.hours_later * 3_600_000

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> LogDirSpec:
        raw = json.loads(text)
        return cls(**{k: tuple(tuple(x) if isinstance(x, list) else x for x in v)
                      if isinstance(v, list) else v for k, v in raw.items()})


@dataclass
class _Broker:
    """The running broker's bookkeeping while the history is appended."""

    psm: ProducerStateManager = field(default_factory=ProducerStateManager)
    seq: dict[int, int] = field(default_factory=dict)
    offset: int = 0
    clock: int = T0
    aborted: dict[int, list[AbortedTxnEntry]] = field(default_factory=dict)  # by segment base
    snapshots: dict[int, bytes] = field(default_factory=dict)
    txn_batches: dict[int, list[int]] = field(default_factory=dict)  # open txn's data batches
    cleanable: set[tuple[int, int]] = field(default_factory=set)  # aborted txns' data batches
    completed: list[tuple[int, Any]] = field(default_factory=list)  # (segment, txn) this append
    chunk: int = 0  # batches in the append so far


def _end_append(b: _Broker) -> None:
    """The end of one ``UnifiedLog#append``: each transaction it completed gets its
    ``.txnindex`` entry with ``ProducerStateManager#lastStableOffset`` as the state stands after
    the whole append (a follower's chunk: transactions other producers began or ended later in
    it count), then ``completeTxn``."""
    for base, completed in b.completed:
        if completed.is_aborted:
            b.aborted.setdefault(base, []).append(AbortedTxnEntry(
                producer_id=completed.producer_id, first_offset=completed.first_offset,
                last_offset=completed.last_offset,
                last_stable_offset=b.psm.last_stable_offset(completed)))
        b.psm.complete_txn(completed)
    b.completed.clear()
    b.chunk = 0


def _records(offset: int, n: int, ts: int) -> list[Record]:
    return [Record(offset=offset + i, timestamp=ts, key=b"k%d" % (offset + i), value=b"v" * 20)
            for i in range(n)]


def build(spec: LogDirSpec, log_dir: Path) -> Path:
    """Write ``spec`` as a log dir at ``log_dir``; returns the partition dir."""
    pdir = log_dir / f"{TOPIC}-{PARTITION}"
    pdir.mkdir(parents=True)
    writer = PartitionWriter(pdir, index_interval_bytes=INDEX_INTERVAL)
    b = _Broker()
    epochs = {pid: EPOCH for pid in PIDS}
    writer.roll(0)
    bases = [0]
    for op in spec.ops:
        kind = op[0]
        b.clock += 10
        if kind == "roll":
            _end_append(b)  # a fetched chunk is appended to one segment (UnifiedLog#maybeRoll)
            if writer.active is not None and writer.active.size and b.offset not in bases:
                _snapshot(b, b.offset)  # UnifiedLog#roll takes a snapshot at the new base
                writer.roll(b.offset)
                bases.append(b.offset)
            continue
        if kind == "bump":  # InitProducerId after a fence: the next epoch, sequences from 0
            epochs[PIDS[op[1]]] += 1
            b.seq[PIDS[op[1]]] = 0
            continue
        if kind in ("txn", "idem"):
            pid = PIDS[op[1]]
            n = int(op[2])
            seq = b.seq.get(pid, 0)
            epoch = epochs[pid]
            data = build_batch(_records(b.offset, n, b.clock), base_offset=b.offset,
                               producer_id=pid, producer_epoch=epoch, base_sequence=seq,
                               is_transactional=kind == "txn")
            info = b.psm.prepare_update(pid, AppendOrigin.REPLICATION)
            info.append_data_batch(epoch, seq, seq + n - 1, b.clock, b.offset, b.offset + n - 1,
                                   kind == "txn")
            b.psm.update(info)
            b.seq[pid] = seq + n
            if kind == "txn":
                b.txn_batches.setdefault(pid, []).append(b.offset)
            writer.append(data)
            b.offset += n
        elif kind == "plain":
            n = int(op[1])
            writer.append(build_batch(_records(b.offset, n, b.clock), base_offset=b.offset))
            b.offset += n
        else:  # commit / abort / fence
            pid = PIDS[op[1]]
            commit = kind == "commit"
            epoch = epochs[pid] + (1 if kind == "fence" else 0)
            if kind == "fence":  # the coordinator aborts with a bumped epoch (a timeout)
                epochs[pid] = epoch
                b.seq[pid] = 0
            data = build_control_batch(
                base_offset=b.offset, producer_id=pid, producer_epoch=epoch,
                control_type=ControlType.COMMIT if commit else ControlType.ABORT,
                timestamp=b.clock, coordinator_epoch=COORDINATOR_EPOCH)
            info = b.psm.prepare_update(pid, AppendOrigin.REPLICATION)
            completed = info.append_end_txn_marker(
                is_commit=commit, coordinator_epoch=COORDINATOR_EPOCH, producer_epoch=epoch,
                offset=b.offset, timestamp=b.clock)
            b.psm.update(info)
            batches = b.txn_batches.pop(pid, [])
            if completed is not None:
                if completed.is_aborted:
                    b.cleanable.update((pid, o) for o in batches)
                b.completed.append((bases[-1], completed))
            writer.append(data)
            b.offset += 1
        b.psm.update_map_end_offset(b.offset)
        b.chunk += 1
        if b.chunk >= max(1, spec.follower_chunk):
            _end_append(b)
    _end_append(b)
    writer.close()
    leo = b.offset
    if spec.clean_shutdown and leo not in b.snapshots:
        _snapshot(b, leo)  # UnifiedLog#close
    for base in bases:
        if b.aborted.get(base):
            (pdir / segment_name(base, ".txnindex")).write_bytes(build_txn_index(b.aborted[base]))
    _damage(spec, pdir, bases, b, leo)
    _root_files(spec, log_dir, bases, leo)
    return pdir


def _snapshot(b: _Broker, offset: int) -> None:
    b.snapshots[offset] = build_producer_snapshot(b.psm.snapshot_entries())


def _damage(spec: LogDirSpec, pdir: Path, bases: list[int], b: _Broker, leo: int) -> None:
    gone = bases[:min(spec.retention_segments, len(bases) - 1)]
    kept = [base for base in bases if base not in gone]
    for base in gone:  # retention: the segment's files and its snapshot (deleteProducerSnapshots)
        for kind in (".log", ".index", ".timeindex", ".txnindex"):
            (pdir / segment_name(base, kind)).unlink(missing_ok=True)
        b.snapshots.pop(base, None)
    first = kept[0]
    snap_offsets = sorted(o for o in b.snapshots if o > first or o == first)
    for i, offset in enumerate(snap_offsets):
        if i in spec.missing_snapshots:
            continue
        raw = bytearray(b.snapshots[offset])
        if i in spec.corrupt_snapshots and len(raw) > 8:
            raw[-1] ^= 0xFF
        (pdir / snapshot_file_name(offset)).write_bytes(bytes(raw))
    for i, base in enumerate(kept):
        if i in spec.missing_index:
            (pdir / segment_name(base, ".index")).unlink(missing_ok=True)
        if i in spec.missing_timeindex:
            (pdir / segment_name(base, ".timeindex")).unlink(missing_ok=True)
        txn = pdir / segment_name(base, ".txnindex")
        entries = list(b.aborted.get(base, []))
        changed = False
        if i in spec.stale_txnindex and entries:
            entries.pop()
            changed = True
        if i in spec.bad_txnindex and base > 0:
            entries.append(AbortedTxnEntry(producer_id=PIDS[0], first_offset=0,
                                           last_offset=base - 1, last_stable_offset=base))
            changed = True
        if i in spec.missing_txnindex:
            txn.unlink(missing_ok=True)
        elif changed:
            txn.write_bytes(build_txn_index(entries))
    for i, base in enumerate(kept):
        log = pdir / segment_name(base, ".log")
        if i in spec.cleaned and i < len(kept) - 1:
            _clean(log, b.cleanable)
        # Not the last segment: a broker whose last offset index points past the file's end
        # reads the log end as the segment's base (readNextOffset) yet serves the segment's
        # bytes up to the file's size (fetches are bounded by position): the restart view
        # bounds them by offsets, a known difference (docs/analysis.md).
        if (i in spec.garbage_index and i < len(kept) - 1
                and (pdir / segment_name(base, ".index")).exists()):
            with open(pdir / segment_name(base, ".index"), "ab") as f:
                f.write((1000).to_bytes(4, "big") + (1 << 20).to_bytes(4, "big"))
        if i in spec.flipped and log.stat().st_size:
            _flip(log)
    last = pdir / segment_name(kept[-1], ".log")
    size = last.stat().st_size
    if spec.torn_tail > 0 and size:
        with open(last, "r+b") as f:
            f.truncate(max(size - spec.torn_tail, 0))
    elif spec.torn_tail < 0:
        with open(last, "ab") as f:
            f.write(b"\0" * -spec.torn_tail)
    for leftover in spec.leftovers:
        if leftover == "deleted":
            (pdir / (segment_name(max(leo, 1) * 1000, ".log") + ".deleted")).write_bytes(b"x")
        elif leftover == "cleaned":
            (pdir / (segment_name(kept[0], ".log") + ".cleaned")).write_bytes(b"")


def _flip(log: Path) -> None:
    """Bit rot inside the middle batch's CRC-covered bytes (its records)."""
    from kafkatx.formats.segment_scan import scan_segment

    raw = bytearray(log.read_bytes())
    h = scan_segment(bytes(raw)).headers
    j = len(h) // 2
    start, end = int(h.position[j]) + 61, int(h.next_position[j])
    raw[(start + end) // 2] ^= 0x5A
    log.write_bytes(bytes(raw))


def _clean(log: Path, cleanable: set[tuple[int, int]]) -> None:
    """What the cleaner leaves of a segment (``LogCleaner#cleanSegments``): the data batches
    of completed transactions in ``cleanable`` (producer id, base offset) removed, markers kept,
    offsets unchanged; its indexes rebuilt."""
    from kafkatx.formats.segment_scan import scan_segment

    raw = log.read_bytes()
    h = scan_segment(raw).headers
    kept = bytearray()
    for position, size, pid, base in zip(h.position.tolist(), h.next_position.tolist(),
                                          h.producer_id.tolist(), h.base_offset.tolist(),
                                          strict=True):
        if (pid, base) not in cleanable:
            kept += raw[position:size]
    log.write_bytes(bytes(kept))
    writer_dir = log.parent
    base_offset = int(log.name.split(".")[0])
    from kafkatx.storage.segment_writer import SegmentIndexes

    indexes = SegmentIndexes(base_offset=base_offset, index_interval_bytes=INDEX_INTERVAL)
    h = scan_segment(bytes(kept)).headers
    for position, size, last, ts in zip(h.position.tolist(), h.size.tolist(),
                                        h.last_offset.tolist(), h.max_timestamp.tolist(),
                                        strict=True):
        indexes.on_append(position, size, last, ts)
    indexes.write_indexes(writer_dir)


def _root_files(spec: LogDirSpec, log_dir: Path, bases: list[int], leo: int) -> None:
    kept = bases[min(spec.retention_segments, len(bases) - 1):]
    points = [0, *kept, leo]
    if spec.clean_shutdown:
        (log_dir / ".kafka_cleanshutdown").write_bytes(b"")
    if spec.recovery_point >= 0:
        rp = points[spec.recovery_point % len(points)]
        (log_dir / "recovery-point-offset-checkpoint").write_bytes(
            _checkpoint(rp))
    start = spec.log_start
    if spec.retention_segments and start < 0:
        start = kept[0]
    if start >= 0:
        (log_dir / "log-start-offset-checkpoint").write_bytes(
            _checkpoint(start))
    hw = leo if spec.high_watermark < 0 else min(spec.high_watermark, leo)
    (log_dir / "replication-offset-checkpoint").write_bytes(
        _checkpoint(hw))


def _checkpoint(offset: int) -> bytes:
    return build_offset_checkpoint([CheckpointEntry(topic=TOPIC, partition=PARTITION,
                                                    offset=offset)])


# -- the strategy ---------------------------------------------------------------------------


@st.composite
def histories(draw: st.DrawFn) -> tuple[tuple[Any, ...], ...]:
    """Appends of up to three producers: transactions committed, aborted or left open,
    idempotent and plain batches, segment rolls."""
    ops: list[tuple[Any, ...]] = []
    open_txn: set[int] = set()
    for _ in range(draw(st.integers(1, 24))):
        choice = draw(st.sampled_from(["txn", "txn", "txn", "end", "end", "idem", "plain",
                                       "roll", "roll", "bump"]))
        p = draw(st.integers(0, len(PIDS) - 1))
        if choice == "txn":
            ops.append(("txn", p, draw(st.integers(1, 3))))
            open_txn.add(p)
        elif choice == "end":
            if p in open_txn:
                ops.append((draw(st.sampled_from(["commit", "commit", "abort", "fence"])), p))
                open_txn.discard(p)
        elif choice == "bump":
            if p not in open_txn:
                ops.append(("bump", p))
        elif choice == "idem":
            if p not in open_txn:
                ops.append(("idem", p, draw(st.integers(1, 3))))
        elif choice == "plain":
            ops.append(("plain", draw(st.integers(1, 3))))
        else:
            ops.append(("roll",))
    return tuple(ops)


def _some(draw: st.DrawFn, limit: int = 4) -> tuple[int, ...]:
    return tuple(sorted(draw(st.sets(st.integers(0, limit), max_size=2))))


@st.composite
def specs(draw: st.DrawFn) -> LogDirSpec:
    damage = draw(st.booleans())
    return LogDirSpec(
        ops=draw(histories()),
        clean_shutdown=draw(st.booleans()),
        recovery_point=draw(st.integers(-1, 6)),
        log_start=draw(st.one_of(st.just(-1), st.integers(0, 30))),
        retention_segments=draw(st.integers(0, 2)),
        high_watermark=draw(st.one_of(st.just(-1), st.integers(0, 40))),
        missing_snapshots=_some(draw) if damage else (),
        corrupt_snapshots=_some(draw) if damage else (),
        missing_index=_some(draw) if damage else (),
        missing_timeindex=_some(draw) if damage else (),
        missing_txnindex=_some(draw) if damage else (),
        stale_txnindex=_some(draw) if damage else (),
        bad_txnindex=_some(draw) if damage else (),
        garbage_index=_some(draw) if damage else (),
        flipped=_some(draw) if damage and draw(st.booleans()) else (),
        cleaned=_some(draw),
        torn_tail=draw(st.sampled_from([0, 0, 0, 1, 7, 30, -12])),
        leftovers=tuple(draw(st.lists(st.sampled_from(["deleted", "cleaned"]), max_size=1))),
        hours_later=draw(st.sampled_from([1, 1, 1, 24, 48])),
        follower_chunk=draw(st.sampled_from([0, 0, 2, 5])),
    )
