"""``__consumer_offsets`` keys and values, checked against hand-assembled bytes and round-trips."""

from __future__ import annotations

import base64
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.errors import FormatError
from kafkatx.formats.consumer_offsets import (
    GROUP_METADATA_VALUE_VERSIONS,
    OFFSET_COMMIT_VALUE_VERSIONS,
    GroupMember,
    GroupMetadataKey,
    GroupMetadataValue,
    GroupRecordType,
    OffsetCommitKey,
    OffsetCommitValue,
    UnknownGroupRecordKey,
    build_key,
    build_value,
    kafka_uuid_string,
    parse_key,
    parse_value,
)
from kafkatx.formats.group_record_schemas import KEY_SCHEMAS, VALUE_SCHEMAS
from kafkatx.formats.group_records import GroupTypeKey, GroupTypeValue
from kafkatx.formats.kafka_messages import default_message
from tests.formats.roundtrip import assert_roundtrip
from tests.formats.roundtrip import classic_string as _s

TS = 1_700_000_000_123


def _cs(text: str) -> bytes:  # compact string, short enough for a one-byte varint
    raw = text.encode()
    return bytes([len(raw) + 1]) + raw


def _b(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


# --- keys --------------------------------------------------------------------------------------


@pytest.mark.parametrize("record_type", [0, 1])
def test_offset_commit_key_matches_hand_built(record_type: int) -> None:
    key = OffsetCommitKey(group="billing", topic="payments", partition=7, record_type=record_type)
    expected = struct.pack(">h", record_type) + _s("billing") + _s("payments") + b"\x00\x00\x00\x07"
    assert assert_roundtrip(key, build_key, parse_key) == expected
    assert key.to_dict() == {
        "record_type": record_type,
        "record_type_name": "LegacyOffsetCommit" if record_type == 0 else "OffsetCommit",
        "group": "billing",
        "topic": "payments",
        "partition": 7,
    }


def test_group_metadata_key_matches_hand_built() -> None:
    key = GroupMetadataKey(group="billing")
    assert assert_roundtrip(key, build_key, parse_key) == b"\x00\x02" + _s("billing")
    assert key.to_dict()["group"] == "billing"


# Records Kafka 4.4's group coordinator wrote for a KIP-848 consumer group (group.protocol=
# consumer), as kafka-dump-log.sh --offsets-decoder printed them.
_MEMBER_KEY = "AAUABW5ldy1nABZwUHRhTFRwNVFjMnNPaGIyR3B4S3V3"
_MEMBER_VALUE = "AAAAABFjb25zdW1lci1uZXctZy0xCy8xMjcuMC4wLjECBHR4dAEABJPgAAEAAQA="
_ASSIGNMENT_VALUE = "AAAAAAACAAAAAAACCAuEdnZcSWSReHLlDLlXsAIAAAAAAQAFAgAAAAIBAA=="
_GROUP_VALUE = "AAAAAAACAQAIQn48Rgmj7tk="


def test_consumer_group_records_decode_as_kafka_prints_them() -> None:
    key = parse_key(base64.b64decode(_MEMBER_KEY))
    assert isinstance(key, GroupTypeKey)
    assert key.to_dict() == {"record_type": 5, "record_type_name": "ConsumerGroupMemberMetadata",
                             "group": "new-g", "member_id": "pPtaLTp5Qc2sOhb2GpxKuw"}
    value = parse_value(key, base64.b64decode(_MEMBER_VALUE))
    assert isinstance(value, GroupTypeValue)
    # the null ClassicMemberMetadata is written as tag 0 with a zero marker, and read back so
    assert value.to_dict() == {
        "version": 0, "instance_id": None, "rack_id": None, "client_id": "consumer-new-g-1",
        "client_host": "/127.0.0.1", "subscribed_topic_names": ["txt"],
        "subscribed_topic_regex": "", "rebalance_timeout_ms": 300000, "server_assignor": None,
        "classic_member_metadata": None}
    assert build_key(key) == base64.b64decode(_MEMBER_KEY)
    assert build_value(value) == base64.b64decode(_MEMBER_VALUE)
    assignment = parse_value(GroupTypeKey(record_type=8, fields={"group_id": "new-g"}),
                             base64.b64decode(_ASSIGNMENT_VALUE))
    assert assignment is not None and assignment.to_dict() == {
        "version": 0, "member_epoch": 2, "previous_member_epoch": 0, "state": 0,
        "assigned_partitions": [{"topic_id": "CAuEdnZcSWSReHLlDLlXsA", "partitions": [0],
                                 "assignment_epochs": [2]}],
        "partitions_pending_revocation": []}
    group = parse_value(GroupTypeKey(record_type=3, fields={"group_id": "new-g"}),
                        base64.b64decode(_GROUP_VALUE))
    assert group is not None and group.to_dict() == {
        "version": 0, "epoch": 2, "metadata_hash": 4791333325075902169}


def test_every_group_record_type_round_trips_and_an_unknown_version_is_an_error() -> None:
    for record_type, schema in VALUE_SCHEMAS.items():
        key = GroupTypeKey(record_type=record_type, fields={
            f.key: f"{f.key}-x" for f in KEY_SCHEMAS[record_type].fields})
        assert parse_key(build_key(key)) == key
        value = GroupTypeValue(record_type=record_type, version=0,
                               data=default_message(schema))
        assert parse_value(key, build_value(value)) == value
        with pytest.raises(FormatError, match="no version 1"):
            parse_value(key, b"\x00\x01" + build_value(value)[2:])
    # Kafka's deserializer does not check that a value is used up: neither does this
    assert parse_value(key, build_value(value) + b"\x07") == value
    tombstone = parse_key(struct.pack(">h", 5) + _s("my-group") + _s("member-1"))
    assert isinstance(tombstone, GroupTypeKey) and parse_value(tombstone, None) is None


def test_record_type_names_match_kafka_schemas() -> None:
    names = {t.value: t.kafka_name for t in GroupRecordType}
    assert names[3] == "ConsumerGroupMetadata"
    assert names[8] == "ConsumerGroupCurrentMemberAssignment"
    assert names[15] == "ShareGroupStatePartitionMetadata"
    assert names[16] == "ConsumerGroupRegularExpression"
    assert names[23] == "StreamsGroupTopology"
    assert names[24] == "StreamsGroupTargetAssignmentResolvedTopicIds"
    assert sorted(names) == list(range(25))
    unknown = parse_key(b"\x00\x63garbage")
    assert isinstance(unknown, UnknownGroupRecordKey)
    assert unknown.name is None and unknown.group is None
    assert unknown.to_dict()["raw"] == base64.b64encode(b"garbage").decode()


@pytest.mark.parametrize(
    ("data", "position"),
    [
        (b"\x00", 10),
        (b"\x00\x01" + _s("g") + _s("t"), 18),  # partition missing
        (b"\x00\x02" + _s("g") + b"x", 15),  # trailing byte
        (b"\x00\x02\x00\x01\xff", 14),  # not UTF-8
    ],
)
def test_bad_keys_raise_format_error_with_position(data: bytes, position: int) -> None:
    with pytest.raises(FormatError) as info:
        parse_key(data, path="00000.log", base=10)
    assert info.value.position == position and info.value.path == "00000.log"


# --- OffsetCommitValue -------------------------------------------------------------------------

_OFFSET_KEY = OffsetCommitKey(group="g", topic="t", partition=0)


def _parse_offset(data: bytes) -> object:
    return parse_value(_OFFSET_KEY, data)


def test_offset_value_v1_matches_hand_built() -> None:
    value = OffsetCommitValue(
        version=1, offset=42, metadata="m", commit_timestamp_ms=TS, expire_timestamp_ms=TS + 1
    )
    expected = struct.pack(">hq", 1, 42) + _s("m") + struct.pack(">qq", TS, TS + 1)
    assert assert_roundtrip(value, build_value, _parse_offset) == expected


def test_offset_value_v3_matches_hand_built() -> None:
    value = OffsetCommitValue(
        version=3, offset=42, leader_epoch=5, metadata="", commit_timestamp_ms=TS
    )
    expected = struct.pack(">hqi", 3, 42, 5) + _s("") + struct.pack(">q", TS)
    assert assert_roundtrip(value, build_value, _parse_offset, size=24) == expected
    assert value.to_dict() == {
        "version": 3,
        "offset": 42,
        "leader_epoch": 5,
        "metadata": "",
        "commit_timestamp_ms": TS,
        "expire_timestamp_ms": -1,
    }


def test_offset_value_v4_is_compact_with_tagged_topic_id() -> None:
    topic_id = bytes(range(1, 17))
    value = OffsetCommitValue(
        version=4, offset=42, leader_epoch=-1, metadata="meta", commit_timestamp_ms=TS,
        topic_id=topic_id,
    )
    expected = (
        struct.pack(">hqi", 4, 42, -1) + _cs("meta") + struct.pack(">q", TS)
        + b"\x01\x00\x10" + topic_id
    )
    assert assert_roundtrip(value, build_value, _parse_offset) == expected
    # Uuid.toString: URL-safe base64 without padding, 22 characters.
    assert value.to_dict()["topic_id"] == "AQIDBAUGBwgJCgsMDQ4PEA"
    plain = OffsetCommitValue(version=4, offset=1, metadata="", commit_timestamp_ms=TS)
    assert build_value(plain).endswith(b"\x00") and "topic_id" not in plain.to_dict()


def test_offset_value_rejects_fields_its_version_lacks() -> None:
    with pytest.raises(ValueError, match="leader_epoch"):
        build_value(OffsetCommitValue(version=2, offset=1, metadata="", commit_timestamp_ms=TS,
                                      leader_epoch=3))
    with pytest.raises(ValueError, match="expire_timestamp_ms"):
        build_value(OffsetCommitValue(version=3, offset=1, metadata="", commit_timestamp_ms=TS,
                                      expire_timestamp_ms=TS))


@pytest.mark.parametrize("version", [5, -1])
def test_unknown_offset_value_version_is_a_format_error(version: int) -> None:
    with pytest.raises(FormatError, match=f"unknown value version {version}") as info:
        parse_value(_OFFSET_KEY, struct.pack(">hq", version, 1), base=33)
    assert info.value.position == 33


def test_offset_tombstone_is_none() -> None:
    assert parse_value(_OFFSET_KEY, None) is None


# --- GroupMetadataValue ------------------------------------------------------------------------

_GROUP_KEY = GroupMetadataKey(group="g")


def _parse_group(data: bytes) -> object:
    return parse_value(_GROUP_KEY, data)


def _member(version: int) -> GroupMember:
    return GroupMember(
        member_id="consumer-1-abc",
        group_instance_id="inst-1" if version >= 3 else None,
        client_id="consumer-1",
        client_host="/10.0.0.1",
        rebalance_timeout_ms=300_000 if version >= 1 else -1,
        session_timeout_ms=45_000,
        subscription=b"\x00\x01sub",
        assignment=b"\x00\x01asg",
    )


def test_group_value_v0_matches_hand_built() -> None:
    value = GroupMetadataValue(
        version=0, protocol_type="consumer", generation=3, protocol="range",
        leader="consumer-1-abc", members=(_member(0),),
    )
    expected = (
        struct.pack(">h", 0) + _s("consumer") + struct.pack(">i", 3) + _s("range")
        + _s("consumer-1-abc") + struct.pack(">i", 1)
        + _s("consumer-1-abc") + _s("consumer-1") + _s("/10.0.0.1") + struct.pack(">i", 45_000)
        + _b(b"\x00\x01sub") + _b(b"\x00\x01asg")
    )
    assert assert_roundtrip(value, build_value, _parse_group) == expected
    assert value.effective_rebalance_timeout_ms(value.members[0]) == 45_000


def test_group_value_v3_matches_hand_built() -> None:
    value = GroupMetadataValue(
        version=3, protocol_type="consumer", generation=3, protocol=None, leader=None,
        current_state_timestamp_ms=TS, members=(_member(3),),
    )
    expected = (
        struct.pack(">h", 3) + _s("consumer") + struct.pack(">i", 3)
        + b"\xff\xff\xff\xff"  # null protocol, null leader
        + struct.pack(">qi", TS, 1)
        + _s("consumer-1-abc") + _s("inst-1") + _s("consumer-1") + _s("/10.0.0.1")
        + struct.pack(">ii", 300_000, 45_000) + _b(b"\x00\x01sub") + _b(b"\x00\x01asg")
    )
    assert assert_roundtrip(value, build_value, _parse_group) == expected
    d = value.to_dict()
    assert d["protocol"] is None and d["current_state_timestamp_ms"] == TS
    assert d["members"] == [{  # type: ignore[comparison-overlap]
        "member_id": "consumer-1-abc",
        "group_instance_id": "inst-1",
        "client_id": "consumer-1",
        "client_host": "/10.0.0.1",
        "rebalance_timeout_ms": 300_000,
        "session_timeout_ms": 45_000,
        "subscription": base64.b64encode(b"\x00\x01sub").decode(),
        "assignment": base64.b64encode(b"\x00\x01asg").decode(),
    }]


def test_group_value_v4_matches_hand_built_compact_encoding() -> None:
    member = GroupMember(
        member_id="m", group_instance_id=None, client_id="c", client_host="h",
        rebalance_timeout_ms=10, session_timeout_ms=20, subscription=b"", assignment=b"\x07",
        unknown_tags={9: b"z"},
    )
    value = GroupMetadataValue(
        version=4, protocol_type="", generation=0, protocol="range", leader=None,
        current_state_timestamp_ms=-1, members=(member,),
    )
    expected = (
        struct.pack(">h", 4) + _cs("") + struct.pack(">i", 0) + _cs("range") + b"\x00"
        + struct.pack(">q", -1) + b"\x02"
        + _cs("m") + b"\x00" + _cs("c") + _cs("h") + struct.pack(">ii", 10, 20)
        + b"\x01" + b"\x02\x07"  # compact bytes: length + 1
        + b"\x01\x09\x01z"  # member's tagged fields: tag 9 = "z"
        + b"\x00"  # value's empty tagged-field section
    )
    assert assert_roundtrip(value, build_value, _parse_group) == expected


def test_group_value_rejects_fields_its_version_lacks() -> None:
    with pytest.raises(ValueError, match="group_instance_id"):
        build_value(GroupMetadataValue(version=2, protocol_type="consumer", generation=1,
                                       protocol=None, leader=None, members=(_member(3),)))
    with pytest.raises(ValueError, match="unknown_tags"):
        build_value(GroupMetadataValue(version=3, protocol_type="consumer", generation=1,
                                       protocol=None, leader=None, members=(),
                                       unknown_tags={1: b""}))


# --- hypothesis round-trips ----------------------------------------------------------------------

_text = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=16)
_ts = st.integers(1_500_000_000_000, 2_000_000_000_000)
_tags = st.dictionaries(st.integers(0, 300), st.binary(max_size=8), max_size=3)


def _offset_values(version: int) -> st.SearchStrategy[OffsetCommitValue]:
    flexible = version >= 4
    return st.builds(
        OffsetCommitValue,
        version=st.just(version),
        offset=st.integers(-1, 2**50),
        leader_epoch=st.integers(-1, 2**20) if version >= 3 else st.just(-1),
        metadata=_text,
        commit_timestamp_ms=_ts,
        expire_timestamp_ms=_ts if version == 1 else st.just(-1),
        topic_id=st.binary(min_size=16, max_size=16) if flexible else st.just(bytes(16)),
        unknown_tags=_tags.map(lambda d: {t + 1: b for t, b in d.items()})
        if flexible else st.just({}),
    )


def _group_values(version: int) -> st.SearchStrategy[GroupMetadataValue]:
    flexible = version >= 4
    member = st.builds(
        GroupMember,
        member_id=_text,
        group_instance_id=st.none() | _text if version >= 3 else st.none(),
        client_id=_text,
        client_host=_text,
        rebalance_timeout_ms=st.integers(1, 2**31 - 1) if version >= 1 else st.just(-1),
        session_timeout_ms=st.integers(1, 2**31 - 1),
        subscription=st.binary(max_size=24),
        assignment=st.binary(max_size=24),
        unknown_tags=_tags if flexible else st.just({}),
    )
    return st.builds(
        GroupMetadataValue,
        version=st.just(version),
        protocol_type=_text,
        generation=st.integers(-1, 2**31 - 1),
        protocol=st.none() | _text,
        leader=st.none() | _text,
        current_state_timestamp_ms=_ts if version >= 2 else st.just(-1),
        members=st.lists(member, max_size=3).map(tuple),
        unknown_tags=_tags if flexible else st.just({}),
    )


@pytest.mark.parametrize("version", OFFSET_COMMIT_VALUE_VERSIONS)
@settings(max_examples=60)
@given(data=st.data())
def test_offset_value_roundtrip(version: int, data: st.DataObject) -> None:
    value = data.draw(_offset_values(version))
    assert_roundtrip(value, build_value, _parse_offset)
    assert_roundtrip(value, build_value, lambda b: parse_value(
        OffsetCommitKey(group="g", topic="t", partition=1, record_type=0), b))


@pytest.mark.parametrize("version", GROUP_METADATA_VALUE_VERSIONS)
@settings(max_examples=60)
@given(data=st.data())
def test_group_value_roundtrip(version: int, data: st.DataObject) -> None:
    assert_roundtrip(data.draw(_group_values(version)), build_value, _parse_group)


@settings(max_examples=100)
@given(
    st.one_of(
        st.builds(OffsetCommitKey, group=_text, topic=_text, partition=st.integers(0, 10_000),
                  record_type=st.sampled_from([0, 1])),
        st.builds(GroupMetadataKey, group=_text),
        st.builds(UnknownGroupRecordKey,
                  record_type=st.integers(3, 2**15 - 1).filter(lambda t: t not in KEY_SCHEMAS),
                  raw=st.binary(max_size=20)),
    )
)
def test_key_roundtrip(key: object) -> None:
    assert_roundtrip(key, build_key, parse_key)


@settings(max_examples=200)
@given(
    st.sampled_from([_OFFSET_KEY, _GROUP_KEY]),
    st.sampled_from([b"\x00\x00", b"\x00\x01", b"\x00\x03", b"\x00\x04", b""]),
    st.binary(max_size=60),
)
def test_any_bytes_either_fail_cleanly_or_rebuild_exactly(
    key: OffsetCommitKey | GroupMetadataKey, prefix: bytes, body: bytes
) -> None:
    data = prefix + body
    try:
        value = parse_value(key, data)
    except FormatError:
        pass
    else:
        assert value is not None and build_value(value) == data
    try:
        parsed_key = parse_key(data)
    except FormatError:
        pass
    else:
        rebuilt = build_key(parsed_key)
        if isinstance(parsed_key, GroupTypeKey):
            # CoordinatorRecordSerde reads a key of type 3+ without checking it is used up
            assert data.startswith(rebuilt) and parse_key(rebuilt) == parsed_key
        else:
            assert rebuilt == data


def test_kafka_uuid_string_matches_kafka_format() -> None:
    # Uuid.ZERO_UUID.toString() is "AAAAAAAAAAAAAAAAAAAAAA" (22 'A's) in Kafka.
    assert kafka_uuid_string(bytes(16)) == "A" * 22
