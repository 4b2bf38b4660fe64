"""A small, independent model of Kafka's log cleaner, to age test log dirs by compaction.

Follows ``Cleaner#cleanInto``/``#buildOffsetMap``, ``CleanedTransactionMetadata`` and
``MemoryRecords#filterTo`` (Kafka 3.x/4.x) for one cleaning round over ``[0, upper)``:

- the offset map holds each key's latest offset among the round's non-aborted data records;
- a data batch of an aborted transaction (one with a ``.txnindex`` entry) is discarded; a COMMIT
  marker may go once no batch of its transaction was seen in the round, an ABORT marker too
  (else it stays and its entry is carried into the cleaned index); a marker that may go is first
  stamped with a delete horizon (``now + delete.retention.ms``) and only removed after it;
- a batch keeps the records the map keeps (latest offset for the key; keyless records go);
- a producer's last batch (its last data batch, or its last marker when the epoch moved on) and
  the round's last batch are kept even with no records left (``BatchRetention.RETAIN_EMPTY``:
  header only, offsets and sequences as they were); other batches with nothing left go;
- a batch that lost records is rewritten with its base offset, last offset and base sequence.

Histories here have no tombstones, so delete horizons only ever apply to markers. It reads and
writes real batches (``kafkatx.formats.record_batch``) but shares no code with kafkatx's replay.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from kafkatx.formats.record_batch import (
    ControlType,
    Record,
    RecordBatch,
    build_batch,
    parse_batch,
)
from kafkatx.formats.segment_scan import scan_segment
from kafkatx.formats.txn_index import read_txn_index
from kafkatx.storage.segment_writer import segment_name
from tests.analysis.logdirs import PartitionBuilder

DELETE_RETENTION_MS = 86_400_000  # delete.retention.ms default


@dataclass(frozen=True, slots=True)
class Batch:
    """What the cleaner needs of one v2 batch."""

    base_offset: int
    last_offset: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    is_transactional: bool
    is_control: bool
    max_timestamp: int
    records: tuple[Record, ...]
    delete_horizon_ms: int | None = None

    @property
    def control_type(self) -> int | None:
        if not self.is_control or not self.records:
            return None
        return int.from_bytes(self.records[0].key[2:4], "big")  # (version, type) int16s

    def to_bytes(self) -> bytes:
        return build_batch(
            list(self.records), base_offset=self.base_offset,
            last_offset_delta=self.last_offset - self.base_offset,
            is_transactional=self.is_transactional, is_control=self.is_control,
            producer_id=self.producer_id, producer_epoch=self.producer_epoch,
            base_sequence=self.base_sequence, max_timestamp=self.max_timestamp,
            base_timestamp=self.records[0].timestamp if self.records else self.max_timestamp,
            delete_horizon_ms=self.delete_horizon_ms)


def read_batches(data: bytes) -> list[Batch]:
    """Every batch of a segment file, records decoded."""
    out = []
    for pos in scan_segment(data).headers.position.tolist():
        b: RecordBatch = parse_batch(data, pos, decode_records=True)
        h = b.header
        horizon = h.base_timestamp if h.attributes & 0x40 else None
        out.append(Batch(base_offset=h.base_offset, last_offset=h.last_offset,
                         producer_id=h.producer_id, producer_epoch=h.producer_epoch,
                         base_sequence=h.base_sequence, is_transactional=bool(h.attributes & 0x10),
                         is_control=bool(h.attributes & 0x20), max_timestamp=h.max_timestamp,
                         records=b.records or (), delete_horizon_ms=horizon))
    return out


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # the ABORT marker


def aborted_transactions(batches: Iterable[Batch]) -> list[AbortedTxn]:
    """The aborted transactions of an uncleaned log (what its ``.txnindex`` files list)."""
    open_first: dict[int, int] = {}
    out = []
    for b in batches:
        if b.is_control:
            first = open_first.pop(b.producer_id, None)
            if first is not None and b.control_type == ControlType.ABORT:
                out.append(AbortedTxn(b.producer_id, first, b.base_offset))
        elif b.is_transactional:
            open_first.setdefault(b.producer_id, b.base_offset)
    return out


def last_records_of_active_producers(batches: Iterable[Batch]) -> dict[int, tuple[int | None, int]]:
    """``UnifiedLog#lastRecordsOfActiveProducers``: pid -> (last data offset at its current
    epoch, or None when a marker moved the epoch on; its epoch). No producer has expired."""
    out: dict[int, tuple[int | None, int]] = {}
    for b in batches:
        if b.producer_id < 0:
            continue
        last, epoch = out.get(b.producer_id, (None, b.producer_epoch))
        if b.producer_epoch != epoch:
            last = None
        if not b.is_control:
            last = b.last_offset
        out[b.producer_id] = (last, b.producer_epoch)
    return out


@dataclass
class CleanerState:
    """What carries over between rounds: the aborted transactions the index still lists."""

    aborted: list[AbortedTxn]
    cleaned_rounds: list[int] = field(default_factory=list)  # each round's upper bound


def _aborted_of(batch: Batch, aborted: list[AbortedTxn]) -> AbortedTxn | None:
    for a in aborted:
        if a.producer_id == batch.producer_id and a.first_offset <= batch.base_offset \
                and batch.last_offset < a.last_offset:
            return a
    return None


def clean(batches: list[Batch], state: CleanerState, *, upper: int, now_ms: int,
          active_producers: dict[int, tuple[int | None, int]]) -> list[Batch]:
    """One cleaning round over the batches below ``upper`` (the first uncleanable offset, a
    batch boundary at or below the LSO); the batches from ``upper`` on are kept as they are."""
    offset_map: dict[bytes, int] = {}
    for b in batches:
        if b.last_offset >= upper or b.is_control:
            continue
        if b.is_transactional and _aborted_of(b, state.aborted) is not None:
            continue
        for r in b.records:
            if r.key is not None:
                offset_map[r.key] = r.offset
    latest = max(offset_map.values(), default=-1)
    seen_commit: set[int] = set()  # producers with a batch of a committed txn in this round
    seen_abort: set[AbortedTxn] = set()
    kept_aborted: list[AbortedTxn] = []
    out: list[Batch] = []
    for b in batches:
        if b.last_offset >= upper:
            out.append(b)
            continue
        can_discard = False
        if b.is_control:
            kind = b.control_type
            if kind is None:
                can_discard = True  # already emptied
            elif kind == ControlType.ABORT:
                a = next((x for x in state.aborted if x.producer_id == b.producer_id
                          and x.last_offset == b.base_offset), None)
                if a is not None and a in seen_abort:
                    kept_aborted.append(a)
                else:
                    can_discard = True
            elif kind == ControlType.COMMIT:
                can_discard = b.producer_id not in seen_commit
            seen_commit.discard(b.producer_id)
            discard_records = (can_discard and b.delete_horizon_ms is not None
                               and b.delete_horizon_ms <= now_ms)
        else:
            if b.is_transactional:
                a = _aborted_of(b, state.aborted)
                if a is not None:
                    seen_abort.add(a)
                    can_discard = True
                else:
                    seen_commit.add(b.producer_id)
            discard_records = can_discard
        last, epoch = active_producers.get(b.producer_id, (None, -2))
        last_of_producer = b.producer_id >= 0 and (
            b.last_offset == last if last is not None
            else b.is_control and b.producer_epoch == epoch)
        if discard_records:
            records: tuple[Record, ...] = ()
        elif b.is_control:
            records = b.records
        else:
            records = tuple(r for r in b.records if r.key is not None and (
                r.offset > latest or r.offset >= offset_map.get(r.key, -1)))
        if records:
            horizon = b.delete_horizon_ms
            if b.is_control and can_discard and horizon is None:
                horizon = now_ms + DELETE_RETENTION_MS
            if records == b.records and horizon == b.delete_horizon_ms:
                out.append(b)
            else:
                out.append(replace(b, records=records, delete_horizon_ms=horizon,
                                   max_timestamp=max(r.timestamp for r in records)))
        elif last_of_producer or b.last_offset + 1 == upper:
            out.append(replace(b, records=()))  # RETAIN_EMPTY
    state.aborted = [a for a in state.aborted if a.last_offset >= upper or a in kept_aborted]
    state.cleaned_rounds.append(upper)
    return out


def copy_cleaned(src: Path, dst: PartitionBuilder, *, uppers: list[int], now_ms: int) -> None:
    """Write into ``dst`` the partition dir ``src`` after one cleaning round per entry of
    ``uppers`` (each at ``now_ms`` plus one delete retention more than the round before):
    the same segment files (a cleaned segment keeps its base offset), their indexes rebuilt,
    the ``.txnindex`` entries the cleaner keeps as they were written, the snapshots as they are
    (the cleaner never rewrites them)."""
    bases = sorted(int(f.name.split(".")[0]) for f in src.glob("*.log"))
    batches = [b for base in bases for b in read_batches((src / segment_name(base, ".log"))
                                                          .read_bytes())]
    state = CleanerState(aborted=aborted_transactions(batches))
    active = last_records_of_active_producers(batches)
    for k, upper in enumerate(uppers):
        batches = clean(batches, state, upper=upper, now_ms=now_ms + k * (DELETE_RETENTION_MS + 1),
                        active_producers=active)
    entries = [e for base in bases if (src / segment_name(base, ".txnindex")).exists()
               for e in read_txn_index((src / segment_name(base, ".txnindex")).read_bytes(),
                                       base_offset=base).entries]
    listed = {(a.producer_id, a.last_offset) for a in state.aborted}
    by_segment: dict[int, list] = {}
    for e in entries:
        if (e.producer_id, e.last_offset) in listed:
            seg = max(b for b in bases if b <= e.last_offset)
            by_segment.setdefault(seg, []).append(e)
    dst.txn_index = False
    for i, base in enumerate(bases):
        dst.writer.roll(base)
        end = bases[i + 1] if i + 1 < len(bases) else None
        for b in batches:
            if b.base_offset >= base and (end is None or b.base_offset < end):
                dst.raw(b.to_bytes())
    dst.writer.log_end_offset = max(dst.writer.log_end_offset, batches[-1].last_offset + 1
                                    if batches else 0)
    for base, es in by_segment.items():
        dst.write_txn_index(base, es)
    for snap in src.glob("*.snapshot"):
        shutil.copyfile(snap, dst.dir / snap.name)
