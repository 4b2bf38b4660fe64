"""KRaft metadata log records: the ApiMessageAndVersion frame, control records, snapshot names.

A record of ``__cluster_metadata`` (log segments and ``.checkpoint`` snapshots alike) has a null
key and a value framed by ``AbstractApiMessageSerde`` (``MetadataRecordSerde``): unsigned varint
frame version (1; 0 was the 2.8 preview and is refused), unsigned varint record type (the
``apiKey`` of ``MetadataRecordType``), unsigned varint version, then the message. KRaft control
records (``ControlRecordType`` 2-6) carry ``LeaderChangeMessage``, ``SnapshotHeaderRecord`` etc.
as the value of a control batch's record (``ControlRecordUtils``). Snapshot files are named
``<offset:20>-<epoch:10>.checkpoint`` (``Snapshots#filenameFromSnapshotId``, ``SnapshotPath``).

Unknown record types (a newer Kafka) are kept with their type number and raw bytes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from kafkatx.errors import FormatError
from kafkatx.formats.kafka_messages import read_message, to_json, write_message
from kafkatx.formats.metadata_schemas import BY_API_KEY, BY_NAME, CONTROL_RECORDS
from kafkatx.formats.primitives import encode_uvarint, read_uvarint
from kafkatx.formats.record_batch import NO_PRODUCER_ID, ControlType, Record, build_batch
from kafkatx.lazy_dataclass import dataclass

FRAME_VERSION = 1  # AbstractApiMessageSerde.DEFAULT_FRAME_VERSION
CONTROL_RECORD_VERSION = 0  # ControlRecordUtils.*_CURRENT_VERSION
SNAPSHOT_SUFFIX = ".checkpoint"  # Snapshots.SUFFIX
_SNAPSHOT_NAME = re.compile(r"(\d{20})-(\d{10})\.checkpoint(\.part|\.deleted)?")
_SNAPSHOT_PART = re.compile(r"(\d{20})-(\d{10})-.*\.checkpoint\.part")


@dataclass(frozen=True, slots=True, kw_only=True)
class MetadataRecord:
    """One decoded ``ApiMessageAndVersion``: ``data`` is ``None`` for an unknown type."""

    type_id: int
    version: int
    data: dict[str, Any] | None
    raw: bytes | None = None
    frame_version: int = FRAME_VERSION

    @property
    def type(self) -> str:
        schema = BY_API_KEY.get(self.type_id)
        return schema.name if schema else "UNKNOWN"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "type_id": self.type_id,
                               "version": self.version}
        if self.data is not None:
            out["data"] = to_json(self.data)
        else:
            out["raw"] = to_json(self.raw or b"")
        return out


def parse_metadata_record(value: bytes | None, *, path: str | None = None,
                          base: int = 0) -> MetadataRecord:
    """``AbstractApiMessageSerde#read``: the frame, then the message of that type and version."""
    if value is None:
        raise FormatError("metadata record has a null value", path=path, position=base,
                          field="metadata record")
    pos = 0
    header = []
    for what in ("frame version", "record type", "record version"):
        try:
            n, pos = read_uvarint(value, pos)
        except FormatError as exc:
            raise FormatError(exc.message, path=path, position=base + pos, field=what) from None
        if n > 0x7FFF:
            raise FormatError(f"value {n} is too large", path=path, position=base, field=what)
        header.append(n)
    frame, type_id, version = header
    if frame != FRAME_VERSION:
        hint = " (the KRaft preview of 2.8)" if frame == 0 else ""
        raise FormatError(f"unknown frame version {frame}{hint}; only {FRAME_VERSION} is known",
                          path=path, position=base, field="frame version")
    schema = BY_API_KEY.get(type_id)
    body = value[pos:]
    if schema is None or version not in schema.versions:
        return MetadataRecord(type_id=type_id, version=version, data=None, raw=bytes(body))
    data, _ = read_message(schema, version, body, path=path, base=base + pos)
    return MetadataRecord(type_id=type_id, version=version, data=data)


def build_metadata_record(type_: str | int, version: int, data: Mapping[str, Any]) -> bytes:
    """``AbstractApiMessageSerde#write`` for a record named (or numbered) ``type_``."""
    schema = BY_NAME[type_] if isinstance(type_, str) else BY_API_KEY[type_]
    assert schema.api_key is not None
    return (encode_uvarint(FRAME_VERSION) + encode_uvarint(schema.api_key)
            + encode_uvarint(version) + write_message(schema, version, data))


def build_raw_metadata_record(type_id: int, version: int, body: bytes) -> bytes:
    """A framed record of any type number (for records of types this table lacks)."""
    return (encode_uvarint(FRAME_VERSION) + encode_uvarint(type_id) + encode_uvarint(version)
            + body)


def parse_control_value(type_id: int, value: bytes | None, *, path: str | None = None,
                        base: int = 0) -> dict[str, Any] | None:
    """A KRaft control record's value decoded (``ControlRecordUtils#deserialize*``); ``None``
    for COMMIT/ABORT and unknown types, which other code reads."""
    schema = CONTROL_RECORDS.get(type_id)
    if schema is None or value is None:
        return None
    data, _ = read_message(schema, CONTROL_RECORD_VERSION, value, path=path, base=base,
                           exact=False)
    return data


def build_control_value(type_id: int, data: Mapping[str, Any]) -> bytes:
    return write_message(CONTROL_RECORDS[type_id], CONTROL_RECORD_VERSION, data)


def build_metadata_batch(
    records: list[tuple[str | int, int, Mapping[str, Any]] | bytes], *, base_offset: int,
    leader_epoch: int, timestamp: int,
) -> bytes:
    """A batch as the KRaft leader appends it (``BatchBuilder``): no producer, the raft epoch
    as partition leader epoch, one record per ApiMessageAndVersion, null keys."""
    values = [r if isinstance(r, bytes) else build_metadata_record(*r) for r in records]
    recs = [Record(offset=base_offset + i, timestamp=timestamp, key=None, value=v)
            for i, v in enumerate(values)]
    return build_batch(recs, base_offset=base_offset, partition_leader_epoch=leader_epoch,
                       producer_id=NO_PRODUCER_ID)


def build_kraft_control_batch(records: list[tuple[int, Mapping[str, Any]]], *,
                              base_offset: int, leader_epoch: int, timestamp: int) -> bytes:
    """A KRaft control batch (``MemoryRecordsBuilder#appendLeaderChangeMessage``,
    ``appendSnapshotHeaderMessage`` and siblings): control, not transactional, no producer, one
    record per (control type, message), each keyed (version 0, type)."""
    recs = [Record(offset=base_offset + i, timestamp=timestamp,
                   key=(0).to_bytes(2, "big") + type_id.to_bytes(2, "big"),
                   value=build_control_value(type_id, data))
            for i, (type_id, data) in enumerate(records)]
    return build_batch(recs, base_offset=base_offset, partition_leader_epoch=leader_epoch,
                       is_control=True, producer_id=NO_PRODUCER_ID)


def build_snapshot(
    batches: list[list[tuple[str | int, int, Mapping[str, Any]] | bytes]], *, epoch: int,
    last_contained_log_timestamp: int, timestamp: int,
    kraft_control: list[tuple[int, Mapping[str, Any]]] = (),  # type: ignore[assignment]
) -> bytes:
    """A ``.checkpoint`` file as ``RecordsSnapshotWriter`` writes it: offsets from 0 in the
    snapshot's epoch; a control batch with the SnapshotHeader (plus KRaftVersion/Voters records
    given in ``kraft_control``), the record batches, a control batch with the SnapshotFooter."""
    header = [(ControlType.SNAPSHOT_HEADER, {"version": 0, "last_contained_log_timestamp":
                                             last_contained_log_timestamp}), *kraft_control]
    out = [build_kraft_control_batch(header, base_offset=0, leader_epoch=epoch,
                                     timestamp=timestamp)]
    offset = len(header)
    for batch in batches:
        out.append(build_metadata_batch(batch, base_offset=offset, leader_epoch=epoch,
                                        timestamp=timestamp))
        offset += len(batch)
    out.append(build_kraft_control_batch([(ControlType.SNAPSHOT_FOOTER, {"version": 0})],
                                         base_offset=offset, leader_epoch=epoch,
                                         timestamp=timestamp))
    return b"".join(out)


@dataclass(frozen=True, slots=True)
class SnapshotId:
    """``OffsetAndEpoch`` of a snapshot: it holds the records of offsets below ``end_offset``."""

    end_offset: int
    epoch: int


def parse_snapshot_name(name: str) -> tuple[SnapshotId, str | None] | None:
    """``Snapshots#parse``: (id, ``None`` | ``".part"`` | ``".deleted"``), or ``None``."""
    m = _SNAPSHOT_NAME.fullmatch(name)
    if m:
        return SnapshotId(int(m.group(1)), int(m.group(2))), m.group(3)
    m = _SNAPSHOT_PART.fullmatch(name)
    if m:
        return SnapshotId(int(m.group(1)), int(m.group(2))), ".part"
    return None


def snapshot_file_name(snapshot: SnapshotId) -> str:
    """``Snapshots#filenameFromSnapshotId`` + ``.checkpoint``."""
    return f"{snapshot.end_offset:020d}-{snapshot.epoch:010d}{SNAPSHOT_SUFFIX}"
