"""A small builder of Kafka log dirs for analysis tests.

    root = LogDirBuilder(tmp_path)
    p = root.partition("t", 0)
    p.data(pid=7, epoch=0, n=3, txn=True).abort(pid=7, epoch=0).roll().snapshot()
    root.build()  # indexes, .txnindex files, checkpoints

Batches are real v2 batches (``build_batch``/``build_control_batch``) appended through the
Kafka-style ``PartitionWriter``, so ``.log``/``.index``/``.timeindex`` are what a broker writes.
The ``.txnindex`` files and ``.snapshot`` files are computed by kafkatx's own replay
(``PartitionReplayer``, i.e. the semantics core), never by a second copy of Kafka's rules: a test
that needs a *wrong* file writes it explicitly with ``write_txn_index``/``write_snapshot``.
"""

from __future__ import annotations

from pathlib import Path

from kafkatx.analysis.replay import PartitionReplayer
from kafkatx.analysis.replay_result import ReplayResult
from kafkatx.formats.checkpoints import CheckpointEntry, build_offset_checkpoint
from kafkatx.formats.producer_snapshot import (
    ProducerSnapshotEntry,
    build_producer_snapshot,
    snapshot_file_name,
)
from kafkatx.formats.record_batch import ControlType, Record, build_batch, build_control_batch
from kafkatx.formats.segment_scan import SegmentScan, scan_segment
from kafkatx.formats.transaction_log import TransactionLogKey, TransactionLogValue
from kafkatx.formats.transaction_log import build_key as txn_key
from kafkatx.formats.transaction_log import build_value as txn_value
from kafkatx.formats.txn_index import AbortedTxnEntry, build_txn_index
from kafkatx.storage.segment_writer import PartitionWriter, segment_name

T0 = 1_763_700_000_000  # 2025-11-21T04:40:00Z


def txn_state_batch(tid: str, value: TransactionLogValue | None, *, offset: int, timestamp: int,
                    partition_leader_epoch: int = 0, key: bytes | None = None,
                    raw_value: bytes | None = None) -> bytes:
    """One ``__transaction_state`` record in a batch of its own, as
    ``TransactionStateManager#appendTransactionToLog`` writes it (``None``: a tombstone;
    ``key``/``raw_value``: bytes as they are, for damaged records)."""
    if raw_value is None and value is not None:
        raw_value = txn_value(value)
    return build_batch([Record(offset=offset, timestamp=timestamp,
                               key=txn_key(TransactionLogKey(transactional_id=tid))
                               if key is None else key,
                               value=raw_value)], partition_leader_epoch=partition_leader_epoch)


class PartitionBuilder:
    """Appends batches to one partition directory; every method returns ``self``."""

    def __init__(self, directory: Path, topic: str, partition: int, *,
                 index_interval_bytes: int = 256, start_ms: int = T0) -> None:
        self.dir = directory
        self.topic = topic
        self.partition = partition
        self.writer = PartitionWriter(directory, index_interval_bytes=index_interval_bytes)
        self.clock = start_ms
        self.high_watermark: int | None = None
        self.high_watermark_set = False  # else the checkpoint says HW = log end offset
        self.log_start_offset: int | None = None
        self.txn_index = True  # write the .txnindex files the replay computes
        self._seq: dict[int, tuple[int, int]] = {}  # pid -> (epoch, next sequence)
        self._retired: list[SegmentScan] = []  # segments deleted by retention, still history

    # -- appends ----------------------------------------------------------------------------

    @property
    def log_end_offset(self) -> int:
        return self.writer.log_end_offset

    def _tick(self, at: int | None, n: int) -> int:
        ts = self.clock if at is None else at
        self.clock = max(self.clock, ts + n)
        return ts

    def data(self, *, pid: int = -1, epoch: int = 0, n: int = 1, txn: bool = False,
             seq: int | None = None, at: int | None = None, size: int = 20,
             key: str | None = None) -> PartitionBuilder:
        """One data batch of ``n`` records; sequences continue per producer and epoch. Keys are
        unique (``k<offset>``) unless ``key`` names the one every record has."""
        first = self.log_end_offset
        ts = self._tick(at, n)
        records = [Record(offset=first + i, timestamp=ts + i,
                          key=(f"k{first + i}" if key is None else key).encode(),
                          value=b"v" * size) for i in range(n)]
        base_seq = -1
        if pid >= 0:
            cur_epoch, nxt = self._seq.get(pid, (epoch, 0))
            if cur_epoch != epoch:
                nxt = 0
            base_seq = nxt if seq is None else seq
            self._seq[pid] = (epoch, base_seq + n)
        self.writer.append(build_batch(records, producer_id=pid, producer_epoch=epoch,
                                       base_sequence=base_seq, is_transactional=txn))
        return self

    def raw(self, batch: bytes) -> PartitionBuilder:
        """Append prebuilt batch bytes as they are (offsets included)."""
        self.writer.append(batch)
        return self

    def txn_state(self, tid: str, value: TransactionLogValue | None, *,
                  timestamp: int | None = None, partition_leader_epoch: int = 0
                  ) -> PartitionBuilder:
        """Append one ``__transaction_state`` record (:func:`txn_state_batch`), at the value's
        update time unless ``timestamp`` says otherwise."""
        if timestamp is None:
            timestamp = T0 if value is None else value.last_update_timestamp_ms
        return self.raw(txn_state_batch(tid, value, offset=self.log_end_offset,
                                        timestamp=timestamp,
                                        partition_leader_epoch=partition_leader_epoch))

    def marker(self, kind: ControlType, *, pid: int, epoch: int, coordinator_epoch: int = 0,
               at: int | None = None) -> PartitionBuilder:
        ts = self._tick(at, 1)
        self.writer.append(build_control_batch(
            base_offset=self.log_end_offset, producer_id=pid, producer_epoch=epoch,
            control_type=kind, timestamp=ts, coordinator_epoch=coordinator_epoch))
        if self._seq.get(pid, (epoch, 0))[0] != epoch:
            self._seq[pid] = (epoch, 0)  # a bumped epoch (KIP-890 marker) restarts sequences
        return self

    def commit(self, *, pid: int, epoch: int, coordinator_epoch: int = 0,
               at: int | None = None) -> PartitionBuilder:
        return self.marker(ControlType.COMMIT, pid=pid, epoch=epoch,
                           coordinator_epoch=coordinator_epoch, at=at)

    def abort(self, *, pid: int, epoch: int, coordinator_epoch: int = 0,
              at: int | None = None) -> PartitionBuilder:
        return self.marker(ControlType.ABORT, pid=pid, epoch=epoch,
                           coordinator_epoch=coordinator_epoch, at=at)

    def roll(self) -> PartitionBuilder:
        """Start a new segment at the log end offset (indexes of the old one are trimmed)."""
        self.writer.roll()
        return self

    # -- files computed by kafkatx's replay ------------------------------------------------

    def replay(self) -> ReplayResult:
        """kafkatx's replay of every batch appended so far (deleted segments included: a
        broker's in-memory producer state keeps what retention removed from disk)."""
        replayer = PartitionReplayer()
        for scan in self._retired:
            replayer.feed(scan)
        for log in sorted(self.dir.glob("*.log")):
            replayer.feed(scan_segment(log.read_bytes(), path=str(log)))
        return replayer.result

    def snapshot(self) -> PartitionBuilder:
        """``takeSnapshot`` at the log end offset, with the state kafkatx's replay computes."""
        entries = self.replay().state.snapshot_entries()
        return self.write_snapshot(self.log_end_offset, entries)

    def _write_txn_indexes(self) -> None:
        bases = sorted(int(log.name.split(".")[0]) for log in self.dir.glob("*.log"))
        by_segment: dict[int, list[AbortedTxnEntry]] = {}
        for a in self.replay().expected_aborted:
            base = max((b for b in bases if b <= a.last_offset), default=None)
            if base is None:
                continue  # its segment was deleted
            by_segment.setdefault(base, []).append(AbortedTxnEntry(
                producer_id=a.producer_id, first_offset=a.first_offset,
                last_offset=a.last_offset, last_stable_offset=a.last_stable_offset))
        for base, entries in by_segment.items():
            self.write_txn_index(base, entries)

    # -- explicit files (right or wrong) ---------------------------------------------------

    def write_snapshot(self, offset: int, entries: list[ProducerSnapshotEntry]
                       ) -> PartitionBuilder:
        (self.dir / snapshot_file_name(offset)).write_bytes(build_producer_snapshot(entries))
        return self

    def write_txn_index(self, base: int, entries: list[AbortedTxnEntry]) -> PartitionBuilder:
        (self.dir / segment_name(base, ".txnindex")).write_bytes(build_txn_index(entries))
        return self

    def file(self, base: int, suffix: str) -> Path:
        return self.dir / segment_name(base, suffix)

    def hw(self, value: int | None) -> PartitionBuilder:
        """The checkpointed high watermark (``None``: no line in the checkpoint)."""
        self.high_watermark = value
        self.high_watermark_set = True
        return self

    def delete_segments_before(self, base: int) -> PartitionBuilder:
        """Retention: remove the segments (and snapshots) below ``base``; log start = ``base``."""
        for log in sorted(self.dir.glob("*.log")):
            if int(log.name.split(".")[0]) < base:
                self._retired.append(scan_segment(log.read_bytes(), path=str(log)))
        for path in self.dir.iterdir():
            prefix = path.name.split(".", 1)[0]
            if prefix.isdigit() and int(prefix) < base:
                path.unlink()
        self.writer.segment_bases = [b for b in self.writer.segment_bases if b >= base]
        self.log_start_offset = base
        return self

    def close(self) -> None:
        self.writer.close()
        if self.txn_index:
            self._write_txn_indexes()


class LogDirBuilder:
    """A broker log dir: partitions plus root checkpoint files written by ``build()``."""

    def __init__(self, root: Path, *, checkpoints: bool = True) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        self.checkpoints = checkpoints
        self.partitions: list[PartitionBuilder] = []

    def partition(self, topic: str, partition: int, **kwargs: int) -> PartitionBuilder:
        p = PartitionBuilder(self.root / f"{topic}-{partition}", topic, partition, **kwargs)
        self.partitions.append(p)
        return p

    def build(self) -> Path:
        """Close every partition and write ``replication-offset-checkpoint`` (HW = LEO unless
        set) and ``log-start-offset-checkpoint`` (when a log start was set)."""
        for p in self.partitions:
            p.close()
        if self.checkpoints:
            hws, starts = [], []
            for p in self.partitions:
                hw = p.high_watermark if p.high_watermark_set else p.log_end_offset
                if hw is not None:
                    hws.append(CheckpointEntry(topic=p.topic, partition=p.partition, offset=hw))
                if p.log_start_offset is not None:
                    starts.append(CheckpointEntry(topic=p.topic, partition=p.partition,
                                                  offset=p.log_start_offset))
            (self.root / "replication-offset-checkpoint").write_bytes(
                build_offset_checkpoint(hws))
            (self.root / "log-start-offset-checkpoint").write_bytes(
                build_offset_checkpoint(starts))
        return self.root
