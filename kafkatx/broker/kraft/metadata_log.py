"""The node's replica of the KRaft metadata log, ``<log-dir>/__cluster_metadata-0``, as the
only voter of a static quorum (``controller.quorum.voters=<node>@...``) keeps it.

Mirrors ``KafkaMetadataLog`` (a ``UnifiedLog`` with the topic id ``Uuid.METADATA_TOPIC_ID`` in
``partition.metadata``, retention off, recovered in full at every start: ``lastShutdownClean =
false``), ``FileQuorumStateStore`` (``quorum-state``, data version 0 as kraft.version 0 writes
it), ``KafkaRaftClient`` as a single voter (every start is an election: the epoch goes up by one,
the node votes for itself, becomes leader and appends a ``LeaderChangeMessage`` control batch;
each batch carries the raft epoch as its partition leader epoch, which ``LeaderEpochFileCache``
records in ``leader-epoch-checkpoint``) and the snapshots ``SnapshotGenerator`` has written
(``<end offset>-<epoch>.checkpoint``, written as ``.checkpoint.part`` and renamed,
``FileRawSnapshotWriter#freeze``) when ``metadata.log.max.record.bytes.between.snapshots`` bytes
of records were appended since the last one; here also at a clean shutdown.

The image the records build (``kafkatx.semantics.cluster_metadata.ClusterImage``, the replay the
forensic ``kafkatx cluster`` uses) is kept current as records are appended; a snapshot is that
image written out (``kafkatx.semantics.metadata_image_records``).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kafkatx.broker.logs.files import atomic_write, fsync_dir
from kafkatx.broker.logs.log_values import LogConfig
from kafkatx.broker.logs.partition_log import PartitionLog
from kafkatx.errors import FormatError
from kafkatx.formats.checkpoints import (
    LEADER_EPOCH_CHECKPOINT_FILE,
    PARTITION_METADATA_FILE,
    EpochEntry,
    build_leader_epoch_checkpoint,
    build_partition_metadata,
    read_leader_epoch_checkpoint,
)
from kafkatx.formats.internal_topics import METADATA_TOPIC
from kafkatx.formats.metadata_records import (
    SnapshotId,
    build_kraft_control_batch,
    build_metadata_batch,
    build_metadata_record,
    build_snapshot,
    parse_metadata_record,
    parse_snapshot_name,
    snapshot_file_name,
)
from kafkatx.formats.quorum_state import FILE_NAME as QUORUM_STATE_FILE
from kafkatx.formats.quorum_state import QuorumState, build_quorum_state, read_quorum_state
from kafkatx.formats.record_batch import ControlType
from kafkatx.semantics.cluster_metadata import ClusterImage, Where
from kafkatx.semantics.metadata_image_records import image_records
from kafkatx.semantics.producer_state import AppendOrigin
from kafkatx.storage.metadata_log import MetadataEntry, read_entries

METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"  # Uuid.METADATA_TOPIC_ID (Uuid.ONE_UUID)
METADATA_DIR = f"{METADATA_TOPIC}-0"
MAX_BATCH_SIZE_BYTES = 8 * 1024 * 1024  # KafkaRaftClient.MAX_BATCH_SIZE_BYTES
DEFAULT_SEGMENT_BYTES = 1 << 30  # metadata.log.segment.bytes
DEFAULT_SNAPSHOT_BYTES = 20 * 1024 * 1024  # metadata.log.max.record.bytes.between.snapshots
QUORUM_STATE_VERSION = 0  # KRaftVersion.KRAFT_VERSION_0.quorumStateVersion()

Rec = tuple[str, int, Mapping[str, Any]]


class KRaftMetadataLog:
    """``__cluster_metadata-0`` with this node as the quorum's leader."""

    def __init__(self, root: Path, *, node_id: int, segment_bytes: int = DEFAULT_SEGMENT_BYTES,
                 snapshot_bytes: int = DEFAULT_SNAPSHOT_BYTES) -> None:
        self.dir = root / METADATA_DIR
        self.node_id = node_id
        self.snapshot_bytes = snapshot_bytes
        self.log = PartitionLog(METADATA_TOPIC, 0, self.dir, LogConfig(
            segment_bytes=segment_bytes, max_message_bytes=MAX_BATCH_SIZE_BYTES, delete=False,
            retention_ms=-1, retention_bytes=-1))
        self.image = ClusterImage()
        self.epoch = 0
        self.epochs: list[EpochEntry] = []
        self.snapshots: list[SnapshotId] = []
        self.bytes_since_snapshot = 0
        self.problems: list[str] = []
        self.was_empty = True

    @property
    def end_offset(self) -> int:
        return self.log.log_end_offset

    # -- start ---------------------------------------------------------------------------------

    def open(self, now_ms: int) -> None:
        """Load (recover) the log, rebuild the image from the newest snapshot and the records
        after it (``MetadataLoader``), then win the election of a new epoch."""
        self.dir.mkdir(parents=True, exist_ok=True)
        meta = self.dir / PARTITION_METADATA_FILE
        if not meta.exists():
            atomic_write(meta, build_partition_metadata(METADATA_TOPIC_ID))
        self._drop_unfinished_snapshots()
        self.log.open(had_clean_shutdown=False, now_ms=now_ms)
        self.problems.extend(self.log.load_problems)
        self.epochs = self._read_epochs()
        state = self._quorum_state()
        start = 0
        newest = self.snapshots[-1] if self.snapshots else None
        if newest is not None and newest.end_offset <= self.end_offset:
            for entry in read_entries(self.dir / snapshot_file_name(newest), self.problems):
                self._replay(entry, snapshot=True)
            start = newest.end_offset
        last_epoch = -1
        for seg in self.log.segments:
            for entry in read_entries(seg.path, self.problems, from_offset=start):
                last_epoch = max(last_epoch, entry.leader_epoch)
                self._replay(entry, snapshot=False)
        self.was_empty = self.end_offset == 0
        previous = max(state.leader_epoch if state else 0, last_epoch,
                       self.epochs[-1].epoch if self.epochs else 0)
        self._become_leader(previous + 1, now_ms)

    def _drop_unfinished_snapshots(self) -> None:
        """``KafkaMetadataLog#recoverSnapshots``: ``.part`` and ``.deleted`` files go."""
        found = []
        for child in sorted(self.dir.iterdir()):
            parsed = parse_snapshot_name(child.name)
            if parsed is None:
                continue
            if parsed[1] is None:
                found.append(parsed[0])
            else:
                child.unlink(missing_ok=True)
        self.snapshots = sorted(found, key=lambda s: (s.end_offset, s.epoch))

    def _read_epochs(self) -> list[EpochEntry]:
        path = self.dir / LEADER_EPOCH_CHECKPOINT_FILE
        if not path.exists():
            return []
        checkpoint = read_leader_epoch_checkpoint(path.read_bytes(), path=str(path))
        return [e for e in checkpoint.entries if e.start_offset < self.end_offset]

    def _quorum_state(self) -> QuorumState | None:
        path = self.dir / QUORUM_STATE_FILE
        if not path.exists():
            return None
        try:
            return read_quorum_state(path.read_bytes(), path=str(path))
        except FormatError as exc:
            self.problems.append(str(exc))
            return None

    def _write_quorum_state(self, *, leader: bool) -> None:
        """``FileQuorumStateStore#writeElectionState``: the vote (candidate), then the leader."""
        atomic_write(self.dir / QUORUM_STATE_FILE, build_quorum_state(QuorumState(
            data_version=QUORUM_STATE_VERSION, cluster_id="",
            leader_id=self.node_id if leader else -1, leader_epoch=self.epoch,
            voted_id=self.node_id, applied_offset=0, current_voters=(self.node_id,))))

    def _become_leader(self, epoch: int, now_ms: int) -> None:
        """``QuorumState#transitionToCandidate`` then ``#transitionToLeader`` of the only voter,
        and ``LeaderState#appendStartOfEpochControlRecords`` (the LeaderChangeMessage)."""
        self.epoch = epoch
        self._write_quorum_state(leader=False)
        self._write_quorum_state(leader=True)
        voters = [{"voter_id": self.node_id}]
        batch = build_kraft_control_batch([(ControlType.LEADER_CHANGE, {
            "version": 0, "leader_id": self.node_id, "voters": voters,
            "granting_voters": voters})], base_offset=0, leader_epoch=epoch, timestamp=now_ms)
        self._append(batch, 1, now_ms)

    # -- appends -------------------------------------------------------------------------------

    def append(self, records: Sequence[Rec], now_ms: int) -> int:
        """One batch of metadata records, applied to the image; returns its first offset."""
        values = [build_metadata_record(*r) for r in records]
        first = self.end_offset
        batch = build_metadata_batch(list(values), base_offset=0, leader_epoch=self.epoch,
                                     timestamp=now_ms)
        self._append(batch, len(values), now_ms)
        for i, value in enumerate(values):
            self.image.replay(parse_metadata_record(value),
                              Where(first + i, now_ms, self.epoch))
        self.bytes_since_snapshot += sum(len(v) for v in values)
        if self.bytes_since_snapshot >= self.snapshot_bytes:
            self.snapshot(now_ms)
        return first

    def _append(self, batch: bytes, count: int, now_ms: int) -> None:
        first = self.end_offset
        self.log.leader_epoch = self.epoch
        self.log.append_as_leader(batch, now_ms, origin=AppendOrigin.RAFT_LEADER)
        if not self.epochs or self.epochs[-1].epoch < self.epoch:
            # LeaderEpochFileCache#assign on the first batch of a new epoch
            self.epochs.append(EpochEntry(epoch=self.epoch, start_offset=first))
            atomic_write(self.dir / LEADER_EPOCH_CHECKPOINT_FILE,
                         build_leader_epoch_checkpoint(self.epochs))

    def _replay(self, entry: MetadataEntry, *, snapshot: bool) -> None:
        if entry.record is None:
            return
        self.image.replay(entry.record, Where(None if snapshot else entry.offset,
                                              entry.timestamp, entry.leader_epoch, snapshot))

    # -- snapshots -----------------------------------------------------------------------------

    def snapshot(self, now_ms: int) -> SnapshotId | None:
        """The image as of the log end offset, written as ``<end>-<epoch>.checkpoint``
        (``RecordsSnapshotWriter``: header, records in batches of at most 8 MiB, footer); none
        when the newest snapshot already ends there."""
        end = self.end_offset
        if end == 0 or (self.snapshots and self.snapshots[-1].end_offset >= end):
            return None
        snapshot_id = SnapshotId(end, self.epochs[-1].epoch if self.epochs else self.epoch)
        data = build_snapshot(self._batches(image_records(self.image)), epoch=snapshot_id.epoch,
                              last_contained_log_timestamp=self._last_timestamp(now_ms),
                              timestamp=now_ms)
        self._write_snapshot(snapshot_id, data)
        self.bytes_since_snapshot = 0
        return snapshot_id

    def write_bootstrap_snapshot(self, records: Sequence[Rec], now_ms: int) -> None:
        """``kafka-storage format``'s bootstrap snapshot ``0-0`` (``Formatter`` writes the
        bootstrap records as the snapshot at offset 0, epoch 0)."""
        snapshot_id = SnapshotId(0, 0)
        if snapshot_id in self.snapshots:
            return
        data = build_snapshot([list(records)], epoch=0, last_contained_log_timestamp=now_ms,
                              timestamp=now_ms)
        self._write_snapshot(snapshot_id, data)

    def _write_snapshot(self, snapshot_id: SnapshotId, data: bytes) -> None:
        name = snapshot_file_name(snapshot_id)
        part = self.dir / f"{name[:-len('.checkpoint')]}-{uuid.uuid4()}.checkpoint.part"
        with open(part, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(part, self.dir / name)
        fsync_dir(self.dir)
        self.snapshots.append(snapshot_id)

    def _last_timestamp(self, now_ms: int) -> int:
        last = self.image.last
        return last.timestamp if last is not None else now_ms

    @staticmethod
    def _batches(records: list[tuple[str, int, dict[str, Any]]]) -> list[list[bytes]]:
        """Records packed into batches of at most ``MAX_BATCH_SIZE_BYTES``
        (``BatchAccumulator``)."""
        out: list[list[bytes]] = [[]]
        size = 0
        for r in records:
            value = build_metadata_record(*r)
            if out[-1] and size + len(value) > MAX_BATCH_SIZE_BYTES - 1024:
                out.append([])
                size = 0
            out[-1].append(value)
            size += len(value)
        return out if out[-1] else []

    # -- stop ----------------------------------------------------------------------------------

    def close(self, now_ms: int) -> None:
        """A snapshot of what the log holds, then ``UnifiedLog#close``."""
        self.snapshot(now_ms)
        self.log.close()

    def release(self) -> None:
        self.log.release()
