"""KRaft metadata records: the schema table against Kafka's JSON schemas, hand-built bytes,
round trips of every type and version, unknown types and tags, damage."""

from __future__ import annotations

import csv
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.errors import FormatError
from kafkatx.formats.checkpoints import uuid_from_bytes
from kafkatx.formats.kafka_messages import (
    UNKNOWN_TAGS,
    Field,
    MessageSchema,
    Versions,
    default_message,
    read_message,
    write_message,
)
from kafkatx.formats.metadata_records import (
    SnapshotId,
    build_control_value,
    build_metadata_record,
    build_raw_metadata_record,
    parse_control_value,
    parse_metadata_record,
    parse_snapshot_name,
    snapshot_file_name,
)
from kafkatx.formats.metadata_schemas import BY_API_KEY, CONTROL_RECORDS, METADATA_RECORDS

TABLE = Path(__file__).parent / "data" / "kraft_schema_fields.tsv"
TOPIC_ID = uuid_from_bytes(bytes(range(16)))
ALL_SCHEMAS = [*METADATA_RECORDS, *CONTROL_RECORDS.values()]


def _kafka_table() -> dict[tuple[str, int], list[tuple[str, str, str, str]]]:
    rows = [line for line in TABLE.read_text().splitlines() if not line.startswith("#")]
    out: dict[tuple[str, int], list[tuple[str, str, str, str]]] = {}
    for r in csv.DictReader(rows, delimiter="\t"):
        fields = out.setdefault((r["record"], int(r["version"])), [])
        if r["field"] != "-":
            fields.append((r["field"], r["type"], r["tag"], r["nullable"]))
    return out


def _our_fields(fields: tuple[Field, ...], version: int, prefix: str = ""
                ) -> list[tuple[str, str, str, str]]:
    out = []
    for f in fields:
        if version not in Versions(f.versions):
            continue
        tagged = f.tag is not None and version in Versions(f.tagged_versions)
        out.append((prefix + f.name, f.type, str(f.tag) if tagged else "-",
                    "yes" if version in Versions(f.nullable_versions) else "no"))
        out += _our_fields(f.fields, version, prefix + f.name + ".")
    return out


def test_schema_table_matches_kafkas_json_schemas_field_for_field() -> None:
    """Every (record, version) of Kafka's metadata and KRaft control schemas (MetadataRecordType,
    ControlRecordType) has exactly the fields, types, tags and nullability of our table."""
    kafka = _kafka_table()
    ours = {(s.name, v): _our_fields(s.fields, v) for s in ALL_SCHEMAS for v in s.versions}
    assert set(ours) == set(kafka)
    for key, fields in kafka.items():
        assert ours[key] == fields, key
    api_keys = {r["record"]: r["api_key"] for r in csv.DictReader(
        [x for x in TABLE.read_text().splitlines() if not x.startswith("#")], delimiter="\t")}
    for s in METADATA_RECORDS:
        assert api_keys[s.name] == str(s.api_key)


def test_topic_record_bytes_as_metadata_record_serde_writes_them() -> None:
    """AbstractApiMessageSerde#write: frame 1, type 2, version 0, then TopicRecord v0 (compact
    string, uuid, empty tagged-field section)."""
    data = build_metadata_record("TopicRecord", 0, {"name": "foo", "topic_id": TOPIC_ID})
    assert data == b"\x01\x02\x00" + b"\x04foo" + bytes(range(16)) + b"\x00"
    rec = parse_metadata_record(data)
    assert (rec.type, rec.type_id, rec.version) == ("TopicRecord", 2, 0)
    assert rec.data == {"name": "foo", "topic_id": TOPIC_ID}


def test_partition_change_record_writes_only_changed_tagged_fields() -> None:
    """PartitionChangeRecord: Leader (tag 1) and Isr (tag 0) are tagged; defaults (-2, null)
    are left out, as the generated writer does."""
    data = build_metadata_record("PartitionChangeRecord", 0,
                                 {"partition_id": 3, "topic_id": TOPIC_ID, "leader": 2})
    body = struct.pack(">i", 3) + bytes(range(16)) + b"\x01" + b"\x01\x04" + struct.pack(">i", 2)
    assert data == b"\x01\x05\x00" + body
    rec = parse_metadata_record(data)
    assert rec.data is not None
    assert rec.data["leader"] == 2 and rec.data["isr"] is None and rec.data["replicas"] is None
    assert rec.data["leader_recovery_state"] == -1


def test_unknown_record_type_is_kept_raw_with_its_number() -> None:
    """A record type this table does not know (a newer Kafka) is kept, not an error."""
    data = build_raw_metadata_record(99, 3, b"\x07\x08")
    rec = parse_metadata_record(data)
    assert (rec.type, rec.type_id, rec.version, rec.raw) == ("UNKNOWN", 99, 3, b"\x07\x08")
    assert rec.to_dict() == {"type": "UNKNOWN", "type_id": 99, "version": 3, "raw": "Bwg="}


def test_unknown_tagged_fields_survive_a_round_trip() -> None:
    """Tags the schema does not know are kept as raw bytes and written back (generated classes'
    _unknownTaggedFields)."""
    schema = BY_API_KEY[2]
    data = write_message(schema, 0, {"name": "t", "topic_id": TOPIC_ID,
                                     UNKNOWN_TAGS: {7: b"\xaa\xbb"}})
    values, _ = read_message(schema, 0, data)
    assert values[UNKNOWN_TAGS] == {7: b"\xaa\xbb"}
    assert write_message(schema, 0, values) == data


def test_frame_version_0_is_refused_like_kafka() -> None:
    """AbstractApiMessageSerde#read refuses frame version 0 (the 2.8 KRaft preview)."""
    with pytest.raises(FormatError, match="frame version 0"):
        parse_metadata_record(b"\x00\x02\x00")


def test_truncated_record_names_the_field_and_position() -> None:
    """A record cut short is a FormatError at the byte where it ends (MetadataParseException)."""
    data = build_metadata_record("TopicRecord", 0, {"name": "foo", "topic_id": TOPIC_ID})
    with pytest.raises(FormatError) as err:
        parse_metadata_record(data[:10], path="x.log", base=100)
    assert err.value.position == 100 + 7 and "TopicId" in (err.value.field or "")


def test_trailing_bytes_are_an_error() -> None:
    """AbstractApiMessageSerde#read: "Found N byte(s) of garbage after" the record."""
    data = build_metadata_record("NoOpRecord", 0, {}) + b"\x00"
    with pytest.raises(FormatError, match="left after"):
        parse_metadata_record(data)


def test_field_of_a_newer_version_cannot_be_written_at_an_older_one() -> None:
    """Generated write(): UnsupportedVersionException for a non-default field absent from the
    version (PartitionRecord.Directories is 1+)."""
    with pytest.raises(ValueError, match="Directories"):
        build_metadata_record("PartitionRecord", 0, {"topic_id": TOPIC_ID,
                                                     "directories": [TOPIC_ID]})


def test_leader_change_message_as_control_value() -> None:
    """ControlRecordUtils#deserializeLeaderChangeMessage reads version 0."""
    data = {"version": 0, "leader_id": 1, "voters": [{"voter_id": 1, "voter_directory_id":
                                                      "AAAAAAAAAAAAAAAAAAAAAA"}],
            "granting_voters": []}
    raw = build_control_value(2, data)
    assert raw == b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x02\x00\x00\x00\x01\x00" + b"\x01\x00"
    assert parse_control_value(2, raw) == data
    assert parse_control_value(0, b"\x00\x00\x00\x00\x00\x00") is None


def test_snapshot_file_names() -> None:
    """Snapshots#filenameFromSnapshotId and Snapshots#parse (20-digit offset, 10-digit epoch)."""
    sid = SnapshotId(4321, 7)
    name = snapshot_file_name(sid)
    assert name == "00000000000000004321-0000000007.checkpoint"
    assert parse_snapshot_name(name) == (sid, None)
    assert parse_snapshot_name(name + ".deleted") == (sid, ".deleted")
    assert parse_snapshot_name("00000000000000004321-0000000007-123.checkpoint.part") == (
        sid, ".part")
    assert parse_snapshot_name("4321-7.checkpoint") is None


# --- round trips of every type and version -----------------------------------------------------

_INT_RANGES = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


def _scalar(kind: str) -> st.SearchStrategy[Any]:
    if kind in _INT_RANGES:
        b = _INT_RANGES[kind]
        return st.integers(-(2 ** (b - 1)), 2 ** (b - 1) - 1)
    if kind == "uint16":
        return st.integers(0, 65535)
    if kind == "float64":
        return st.floats(allow_nan=False)
    if kind == "bool":
        return st.booleans()
    if kind == "uuid":
        return st.binary(min_size=16, max_size=16).map(uuid_from_bytes)
    if kind == "bytes":
        return st.binary(max_size=20)
    return st.text(max_size=12)


def _value(f: Field, version: int) -> st.SearchStrategy[Any]:
    if f.is_array:
        element = (_struct(f.fields, version) if f.is_struct else _scalar(f.element))
        strategy: st.SearchStrategy[Any] = st.lists(element, max_size=3)
    elif f.is_struct:
        strategy = _struct(f.fields, version)
    else:
        strategy = _scalar(f.type)
    if version in Versions(f.nullable_versions):
        strategy = st.none() | strategy
    return strategy


def _struct(fields: tuple[Field, ...], version: int) -> st.SearchStrategy[dict[str, Any]]:
    parts = {f.key: (_value(f, version) if version in Versions(f.versions)
                     else st.just(f.default_value())) for f in fields}
    return st.fixed_dictionaries(parts)


@st.composite
def _message(draw: st.DrawFn) -> tuple[MessageSchema, int, dict[str, Any]]:
    schema = draw(st.sampled_from(ALL_SCHEMAS))
    version = draw(st.sampled_from(list(schema.versions)))
    return schema, version, draw(_struct(schema.fields, version))


@settings(max_examples=400, deadline=None)
@given(_message())
def test_every_type_and_version_round_trips(case: tuple[MessageSchema, int, dict]) -> None:
    """read(write(v)) == v and write(read(b)) == b for every metadata and control record type
    and version (the generated Message classes' read/write)."""
    schema, version, values = case
    data = write_message(schema, version, values)
    parsed, size = read_message(schema, version, data)
    assert size == len(data)
    assert parsed == values
    assert write_message(schema, version, parsed) == data
    if schema.api_key is not None:
        rec = parse_metadata_record(build_metadata_record(schema.api_key, version, values))
        assert rec.data == values and rec.type == schema.name


def test_defaults_write_and_read_back() -> None:
    """Each schema's default message (Kafka's field defaults) round trips at every version."""
    for schema in ALL_SCHEMAS:
        for version in schema.versions:
            values = default_message(schema)
            data = write_message(schema, version, values)
            assert read_message(schema, version, data)[0] == values, (schema.name, version)
