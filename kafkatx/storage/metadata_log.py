"""A KRaft node's metadata log dir (``__cluster_metadata-0``), read-only: its segments,
``.checkpoint`` snapshots and ``quorum-state``, and the metadata records they hold.

Mirrors what ``KafkaMetadataLog`` keeps on disk (``Snapshots`` for the snapshot files: complete
ones are ``<offset>-<epoch>.checkpoint``; ``.checkpoint.part`` is unfinished and
``.checkpoint.deleted`` on its way out, both ignored as Kafka's loader ignores them).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import field
from pathlib import Path

from kafkatx.errors import FormatError, KafkatxError
from kafkatx.formats import metadata_records
from kafkatx.formats.metadata_records import MetadataRecord, SnapshotId
from kafkatx.formats.quorum_state import FILE_NAME as QUORUM_STATE_FILE
from kafkatx.formats.quorum_state import QuorumState, read_quorum_state
from kafkatx.formats.record_batch import RecordBatch
from kafkatx.formats.record_decode import read_records
from kafkatx.formats.segment import SegmentProblem, iter_segment
from kafkatx.lazy_dataclass import dataclass
from kafkatx.storage.files import open_bytes, read_text
from kafkatx.storage.layout import parse_offset_file_name


@dataclass(frozen=True, slots=True)
class MetadataEntry:
    """One record of the metadata log or a snapshot: a metadata record, or a KRaft control
    record (``control_type`` and ``control``), with where it was read."""

    offset: int
    timestamp: int
    leader_epoch: int
    path: str
    position: int
    record: MetadataRecord | None = None
    control_type: int | None = None
    control: dict | None = None


@dataclass(slots=True)
class MetadataLogDir:
    """A ``__cluster_metadata-0`` directory's segments, snapshots and quorum state."""

    path: Path
    segments: list[tuple[int, Path]] = field(default_factory=list)  # (base offset, path)
    snapshots: list[tuple[SnapshotId, Path]] = field(default_factory=list)
    quorum_state_path: Path | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def newest_snapshot(self) -> tuple[SnapshotId, Path] | None:
        return self.snapshots[-1] if self.snapshots else None

    def quorum_state(self) -> QuorumState | None:
        if self.quorum_state_path is None:
            return None
        try:
            return read_quorum_state(read_text(self.quorum_state_path),
                                     path=str(self.quorum_state_path))
        except (FormatError, KafkatxError) as exc:
            self.problems.append(str(exc))
            return None


def open_metadata_dir(path: Path) -> MetadataLogDir:
    out = MetadataLogDir(path=path)
    for child in sorted(path.iterdir()):
        snap = metadata_records.parse_snapshot_name(child.name)
        if snap is not None:
            if snap[1] is None:
                out.snapshots.append((snap[0], child))
            continue
        parsed = parse_offset_file_name(child.name)
        if parsed is not None and parsed[1] == ".log" and parsed[2] is None:
            out.segments.append((parsed[0], child))
        elif child.name == QUORUM_STATE_FILE:
            out.quorum_state_path = child
    out.segments.sort()
    out.snapshots.sort(key=lambda s: (s[0].end_offset, s[0].epoch))
    return out


def read_entries(path: Path, problems: list[str], *, from_offset: int = 0,
                 to_offset: int | None = None) -> Iterator[MetadataEntry]:
    """Every record of a metadata segment or snapshot file with offset in [from, to]; damage
    is added to ``problems`` as ``path:position: message`` and reading goes on."""
    file = str(path)
    with open_bytes(path) as data:
        for entry in iter_segment(data, path=file):
            if isinstance(entry, SegmentProblem):
                problems.append(str(entry))
                continue
            if not isinstance(entry, RecordBatch):
                problems.append(f"{file}:{entry.message.position}: a legacy message in a "
                                "metadata log")
                continue
            h = entry.header
            if h.last_offset < from_offset or (to_offset is not None
                                               and h.base_offset > to_offset):
                continue
            if not entry.crc_valid:
                problems.append(f"{file}:{entry.position}: CRC mismatch, batch at offset "
                                f"{h.base_offset} skipped")
                continue
            try:
                for rec in read_records(data, entry.position, h, path=file):
                    if rec.offset < from_offset or (to_offset is not None
                                                    and rec.offset > to_offset):
                        continue
                    yield _entry(rec, h.is_control, h.partition_leader_epoch, file,
                                 entry.position, problems)
            except FormatError as exc:
                problems.append(str(exc))


def _entry(rec, is_control: bool, epoch: int, file: str, position: int,
           problems: list[str]) -> MetadataEntry:
    base = MetadataEntry(offset=rec.offset, timestamp=rec.timestamp, leader_epoch=epoch,
                         path=file, position=position)
    try:
        if is_control:
            type_id = int.from_bytes((rec.key or b"\0\0\0\0")[2:4], "big", signed=True)
            control = metadata_records.parse_control_value(type_id, rec.value, path=file)
            return MetadataEntry(**{**_fields(base), "control_type": type_id,
                                    "control": control})
        record = metadata_records.parse_metadata_record(rec.value, path=file)
    except FormatError as exc:
        # The record's own position when the batch is not compressed, else the batch's.
        where = position if rec.position is None else rec.position
        problems.append(f"{file}:{where}: offset {rec.offset}: {exc.message}")
        return base
    return MetadataEntry(**{**_fields(base), "record": record})


def _fields(e: MetadataEntry) -> dict:
    return {"offset": e.offset, "timestamp": e.timestamp, "leader_epoch": e.leader_epoch,
            "path": e.path, "position": e.position}
