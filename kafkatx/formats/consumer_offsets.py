"""``__consumer_offsets`` records: offset commits, classic group metadata, newer record types.

Mirrors Kafka's ``CoordinatorRecordSerde#deserialize`` / ``GroupCoordinatorRecordSerde`` (and the
Scala ``GroupMetadataManager#readMessageKey/readOffsetMessageValue/readGroupMessageValue`` before
it) with the schemas in ``group-coordinator/src/main/resources/common/message/``:
``LegacyOffsetCommitKey`` (type 0) / ``OffsetCommitKey`` (type 1), ``OffsetCommitValue``
(v0-v4, flexible from v4), ``GroupMetadataKey`` (type 2), ``GroupMetadataValue`` (v0-v4, flexible
from v4). Types 3 and up (KIP-848 consumer groups, KIP-932 share groups, KIP-1071 streams groups)
are decoded by :mod:`kafkatx.formats.group_records`; a type no Kafka version writes is kept raw.

Key   = int16 record type (older Kafka: the key version) + key body (classic encoding).
Value = int16 value version + body; a null value is a tombstone.
"""

from __future__ import annotations

import base64
import enum
from dataclasses import field
from typing import Any

import construct as c

from kafkatx.formats import fast_layout, group_records
from kafkatx.formats.consumer_protocol import ASSIGNMENT, SUBSCRIPTION, decode_member_data
from kafkatx.formats.group_records import GroupTypeKey, GroupTypeValue
from kafkatx.formats.primitives import (
    Array,
    Bytes,
    CompactArray,
    CompactBytes,
    CompactNullableString,
    CompactString,
    Int16,
    Int32,
    Int64,
    NullableString,
    String,
    TaggedFields,
)
from kafkatx.formats.transaction_log import (
    RawTags,
    TagSpec,
    build_struct,
    decode_tags,
    encode_tags,
    normalize_tags,
    parse_versioned,
    present_tags,
    read_version,
    tags_to_json,
)
from kafkatx.lazy_dataclass import dataclass

ZERO_UUID = bytes(16)


class GroupRecordType(enum.IntEnum):
    """Record types of ``__consumer_offsets`` (the generated ``CoordinatorRecordType`` ids)."""

    LEGACY_OFFSET_COMMIT = 0
    OFFSET_COMMIT = 1
    GROUP_METADATA = 2
    CONSUMER_GROUP_METADATA = 3
    CONSUMER_GROUP_PARTITION_METADATA = 4
    CONSUMER_GROUP_MEMBER_METADATA = 5
    CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA = 6
    CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER = 7
    CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT = 8
    SHARE_GROUP_PARTITION_METADATA = 9  # removed again before share groups went GA
    SHARE_GROUP_MEMBER_METADATA = 10
    SHARE_GROUP_METADATA = 11
    SHARE_GROUP_TARGET_ASSIGNMENT_METADATA = 12
    SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER = 13
    SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT = 14
    SHARE_GROUP_STATE_PARTITION_METADATA = 15
    CONSUMER_GROUP_REGULAR_EXPRESSION = 16
    STREAMS_GROUP_METADATA = 17
    STREAMS_GROUP_PARTITION_METADATA = 18  # removed again before streams groups went GA
    STREAMS_GROUP_MEMBER_METADATA = 19
    STREAMS_GROUP_TARGET_ASSIGNMENT_METADATA = 20
    STREAMS_GROUP_TARGET_ASSIGNMENT_MEMBER = 21
    STREAMS_GROUP_CURRENT_MEMBER_ASSIGNMENT = 22
    STREAMS_GROUP_TOPOLOGY = 23
    STREAMS_GROUP_TARGET_ASSIGNMENT_RESOLVED_TOPIC_IDS = 24

    @property
    def kafka_name(self) -> str:
        """``CoordinatorRecordType#name``: the schema name without ``Key``."""
        return "".join(part.capitalize() for part in self.name.split("_"))


def record_type_name(record_type: int) -> str | None:
    try:
        return GroupRecordType(record_type).kafka_name
    except ValueError:
        return None


# ---------------------------------------------------------------------------------------------
# Wire layouts

_OFFSET_KEY_BODY = c.Struct(
    "group" / String, "topic" / String, "partition" / Int32
)
_GROUP_KEY_BODY = c.Struct("group" / String)
# Every key of type >= 3 starts with its GroupId as a classic string.
_GROUP_ID_PREFIX = c.Struct("group" / String, "rest" / c.GreedyBytes)

OFFSET_COMMIT_VALUE_VERSIONS = (0, 1, 2, 3, 4)
GROUP_METADATA_VALUE_VERSIONS = (0, 1, 2, 3, 4)
FLEXIBLE_FROM = 4  # first flexible version of both OffsetCommitValue and GroupMetadataValue


def _offset_value_struct(version: int) -> c.Struct:
    flexible = version >= FLEXIBLE_FROM
    fields = ["offset" / Int64]
    if version >= 3:
        fields.append("leader_epoch" / Int32)
    fields.append("metadata" / (CompactString if flexible else String))
    fields.append("commit_timestamp_ms" / Int64)
    if version == 1:
        fields.append("expire_timestamp_ms" / Int64)
    if flexible:
        fields.append("tags" / TaggedFields)
    return c.Struct(*fields)


def _group_value_struct(version: int) -> c.Struct:
    flexible = version >= FLEXIBLE_FROM
    string = CompactString if flexible else String
    nullable_string = CompactNullableString if flexible else NullableString
    data = CompactBytes if flexible else Bytes
    member = ["member_id" / string]
    if version >= 3:
        member.append("group_instance_id" / nullable_string)
    member += ["client_id" / string, "client_host" / string]
    if version >= 1:
        member.append("rebalance_timeout_ms" / Int32)
    member += ["session_timeout_ms" / Int32, "subscription" / data, "assignment" / data]
    if flexible:
        member.append("tags" / TaggedFields)
    fields = [
        "protocol_type" / string,
        "generation" / Int32,
        "protocol" / nullable_string,
        "leader" / nullable_string,
    ]
    if version >= 2:
        fields.append("current_state_timestamp_ms" / Int64)
    fields.append("members" / (CompactArray if flexible else Array)(c.Struct(*member)))
    if flexible:
        fields.append("tags" / TaggedFields)
    return c.Struct(*fields)


_OFFSET_VALUES = {v: _offset_value_struct(v) for v in OFFSET_COMMIT_VALUE_VERSIONS}
_GROUP_VALUES = {v: _group_value_struct(v) for v in GROUP_METADATA_VALUE_VERSIONS}

# OffsetCommitValue v4+ tagged fields (trunk adds topicId, a uuid, as tag 0).
OFFSET_VALUE_TAGS: dict[int, TagSpec] = {
    0: TagSpec("topic_id", c.Bytes(16), 16, ZERO_UUID),
}
_NO_TAGS: dict[int, TagSpec] = {}


def kafka_uuid_string(raw: bytes) -> str:
    """``org.apache.kafka.common.Uuid#toString``: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


# ---------------------------------------------------------------------------------------------
# Keys


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitKey:
    """Key type 0 (LegacyOffsetCommitKey) or 1 (OffsetCommitKey): same body."""

    group: str
    topic: str
    partition: int
    record_type: int = int(GroupRecordType.OFFSET_COMMIT)

    def to_dict(self) -> dict[str, object]:
        return {
            "record_type": int(self.record_type),
            "record_type_name": record_type_name(self.record_type),
            "group": self.group,
            "topic": self.topic,
            "partition": self.partition,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupMetadataKey:
    """Key type 2: a classic group's metadata."""

    group: str
    record_type: int = int(GroupRecordType.GROUP_METADATA)

    def to_dict(self) -> dict[str, object]:
        return {
            "record_type": int(self.record_type),
            "record_type_name": record_type_name(self.record_type),
            "group": self.group,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class UnknownGroupRecordKey:
    """Any other record type: kept raw (``raw`` = the key bytes after the int16 type)."""

    record_type: int
    raw: bytes

    @property
    def name(self) -> str | None:
        """Kafka's record name (e.g. ``ConsumerGroupMetadata``), ``None`` if not a Kafka type."""
        return record_type_name(self.record_type)

    @property
    def group(self) -> str | None:
        """The leading GroupId of a known type's key, when it decodes."""
        if self.name is None:
            return None
        try:
            return _GROUP_ID_PREFIX.parse(self.raw).group
        except c.ConstructError:
            return None

    def to_dict(self) -> dict[str, object]:
        return {
            "record_type": self.record_type,
            "record_type_name": self.name,
            "group": self.group,
            "raw": _b64(self.raw),
        }


GroupRecordKey = OffsetCommitKey | GroupMetadataKey | GroupTypeKey | UnknownGroupRecordKey


# ---------------------------------------------------------------------------------------------
# Values


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetCommitValue:
    """``OffsetCommitValue`` v0-v4; fields a version lacks hold Kafka's defaults."""

    version: int
    offset: int
    metadata: str
    commit_timestamp_ms: int
    leader_epoch: int = -1  # v3+
    expire_timestamp_ms: int = -1  # v1 only
    topic_id: bytes = ZERO_UUID  # v4+ tag 0
    unknown_tags: RawTags = ()
    explicit_default_tags: frozenset[int] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        object.__setattr__(self, "topic_id", bytes(self.topic_id))
        object.__setattr__(self, "unknown_tags", normalize_tags(self.unknown_tags))
        object.__setattr__(self, "explicit_default_tags", frozenset(self.explicit_default_tags))

    @property
    def present_tags(self) -> list[int]:
        if self.version < FLEXIBLE_FROM:
            return []
        return present_tags({"topic_id": self.topic_id}, OFFSET_VALUE_TAGS,
                            self.explicit_default_tags)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "version": self.version,
            "offset": self.offset,
            "leader_epoch": self.leader_epoch,
            "metadata": self.metadata,
            "commit_timestamp_ms": self.commit_timestamp_ms,
            "expire_timestamp_ms": self.expire_timestamp_ms,
        }
        if 0 in self.present_tags:
            out["topic_id"] = kafka_uuid_string(self.topic_id)
        if self.unknown_tags:
            out["unknown_tags"] = tags_to_json(self.unknown_tags)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupMember:
    """``GroupMetadataValue.MemberMetadata``."""

    member_id: str
    client_id: str
    client_host: str
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes
    group_instance_id: str | None = None  # v3+
    rebalance_timeout_ms: int = -1  # v1+
    unknown_tags: RawTags = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "unknown_tags", normalize_tags(self.unknown_tags))

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "member_id": self.member_id,
            "group_instance_id": self.group_instance_id,
            "client_id": self.client_id,
            "client_host": self.client_host,
            "rebalance_timeout_ms": self.rebalance_timeout_ms,
            "session_timeout_ms": self.session_timeout_ms,
            "subscription": _b64(self.subscription),
            "assignment": _b64(self.assignment),
        }
        if self.unknown_tags:
            out["unknown_tags"] = tags_to_json(self.unknown_tags)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupMetadataValue:
    """``GroupMetadataValue`` v0-v4 (a classic group's state after a rebalance)."""

    version: int
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    members: tuple[GroupMember, ...]
    current_state_timestamp_ms: int = -1  # v2+
    unknown_tags: RawTags = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "members", tuple(self.members))
        object.__setattr__(self, "unknown_tags", normalize_tags(self.unknown_tags))

    def effective_rebalance_timeout_ms(self, member: GroupMember) -> int:
        """What Kafka loads: v0 has no rebalance timeout and uses the session timeout."""
        return member.session_timeout_ms if self.version == 0 else member.rebalance_timeout_ms

    def to_dict(self) -> dict[str, object]:
        members = [m.to_dict() for m in self.members]
        if self.protocol_type == "consumer":  # decoded as DumpLogSegments' offsets decoder does
            for member, m in zip(members, self.members, strict=True):
                for name, schema in (("subscription", SUBSCRIPTION), ("assignment", ASSIGNMENT)):
                    decoded = decode_member_data(schema, getattr(m, name))
                    if decoded is not None:
                        member[f"{name}_decoded"] = decoded
        out: dict[str, object] = {
            "version": self.version,
            "protocol_type": self.protocol_type,
            "generation": self.generation,
            "protocol": self.protocol,
            "leader": self.leader,
            "current_state_timestamp_ms": self.current_state_timestamp_ms,
            "members": members,
        }
        if self.unknown_tags:
            out["unknown_tags"] = tags_to_json(self.unknown_tags)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class UnknownGroupRecordValue:
    """Value of a record type this module does not decode: version + raw body."""

    version: int
    raw: bytes

    def to_dict(self) -> dict[str, object]:
        return {"version": self.version, "raw": _b64(self.raw)}


GroupRecordValue = (OffsetCommitValue | GroupMetadataValue | GroupTypeValue
                    | UnknownGroupRecordValue)


# ---------------------------------------------------------------------------------------------
# Reading


def parse_key(data: bytes, *, path: str | None = None, base: int = 0) -> GroupRecordKey:
    """Decode a key by its int16 record type (``GroupMetadataManager#readMessageKey``)."""
    data = bytes(data)
    what = "consumer offsets key"
    record_type = read_version(data, what=what, path=path, base=base)
    body = data[2:]
    if record_type in (GroupRecordType.LEGACY_OFFSET_COMMIT, GroupRecordType.OFFSET_COMMIT):
        raw = fast_layout.parse_exact(_OFFSET_KEY_BODY, body, what=what, path=path, base=base + 2)
        return OffsetCommitKey(
            group=raw.group, topic=raw.topic, partition=raw.partition, record_type=record_type
        )
    if record_type == GroupRecordType.GROUP_METADATA:
        raw = fast_layout.parse_exact(_GROUP_KEY_BODY, body, what=what, path=path, base=base + 2)
        return GroupMetadataKey(group=raw.group)
    if group_records.known(record_type):
        return group_records.parse_key(record_type, body, path=path, base=base + 2)
    return UnknownGroupRecordKey(record_type=record_type, raw=body)


def parse_value(
    key: GroupRecordKey, data: bytes | None, *, path: str | None = None, base: int = 0
) -> GroupRecordValue | None:
    """Decode a value with the schema the key's type selects; ``None`` (tombstone) stays ``None``.

    Both offset key types accept OffsetCommitValue v0-v4, as the Scala coordinator did (Kafka
    4.x pairs type 0 with LegacyOffsetCommitValue, which is OffsetCommitValue v0).
    """
    if data is None:
        return None
    data = bytes(data)
    if isinstance(key, OffsetCommitKey):
        return _parse_offset_value(data, path=path, base=base)
    if isinstance(key, GroupMetadataKey):
        return _parse_group_value(data, path=path, base=base)
    if isinstance(key, GroupTypeKey):
        version = read_version(data, what="consumer offsets value", path=path, base=base)
        return group_records.parse_value(key.record_type, version, data[2:], path=path,
                                         base=base + 2)
    if isinstance(key, UnknownGroupRecordKey):
        version = read_version(data, what="consumer offsets value", path=path, base=base)
        return UnknownGroupRecordValue(version=version, raw=data[2:])
    raise TypeError(f"not a consumer offsets key: {key!r}")


def _parse_offset_value(data: bytes, *, path: str | None, base: int) -> OffsetCommitValue:
    what = "offset commit value"
    version, raw = parse_versioned(data, _OFFSET_VALUES, what=what, path=path, base=base)
    tag_values, unknown, explicit = decode_tags(raw.get("tags"), OFFSET_VALUE_TAGS, what=what,
                                                path=path, position=base)
    return OffsetCommitValue(
        version=version,
        offset=raw.offset,
        metadata=raw.metadata,
        commit_timestamp_ms=raw.commit_timestamp_ms,
        leader_epoch=raw.get("leader_epoch", -1),
        expire_timestamp_ms=raw.get("expire_timestamp_ms", -1),
        unknown_tags=unknown,
        explicit_default_tags=explicit,
        **tag_values,
    )


def _parse_group_value(data: bytes, *, path: str | None, base: int) -> GroupMetadataValue:
    what = "group metadata value"
    version, raw = parse_versioned(data, _GROUP_VALUES, what=what, path=path, base=base)
    flexible = version >= FLEXIBLE_FROM
    members = tuple(
        GroupMember(
            member_id=m.member_id,
            group_instance_id=m.get("group_instance_id"),
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout_ms=m.get("rebalance_timeout_ms", -1),
            session_timeout_ms=m.session_timeout_ms,
            subscription=m.subscription,
            assignment=m.assignment,
            unknown_tags=normalize_tags(m.tags) if flexible else (),
        )
        for m in raw.members
    )
    return GroupMetadataValue(
        version=version,
        protocol_type=raw.protocol_type,
        generation=raw.generation,
        protocol=raw.protocol,
        leader=raw.leader,
        current_state_timestamp_ms=raw.get("current_state_timestamp_ms", -1),
        members=members,
        unknown_tags=normalize_tags(raw.tags) if flexible else (),
    )


# ---------------------------------------------------------------------------------------------
# Writing


def build_key(key: GroupRecordKey) -> bytes:
    """``MessageUtil#toCoordinatorTypePrefixedBytes`` for the key types above."""
    if isinstance(key, OffsetCommitKey):
        if key.record_type not in (0, 1):
            raise ValueError(f"offset commit keys have record type 0 or 1, not {key.record_type}")
        body = build_struct(
            _OFFSET_KEY_BODY,
            {"group": key.group, "topic": key.topic, "partition": key.partition},
            what="offset commit key",
        )
    elif isinstance(key, GroupMetadataKey):
        if key.record_type != GroupRecordType.GROUP_METADATA:
            raise ValueError(f"group metadata keys have record type 2, not {key.record_type}")
        body = build_struct(_GROUP_KEY_BODY, {"group": key.group}, what="group metadata key")
    elif isinstance(key, GroupTypeKey):
        body = group_records.build_key_body(key)
    elif isinstance(key, UnknownGroupRecordKey):
        if key.record_type in (0, 1, 2):
            raise ValueError(f"record type {key.record_type} has a typed key class")
        body = bytes(key.raw)
    else:
        raise TypeError(f"not a consumer offsets key: {key!r}")
    return build_struct(Int16, int(key.record_type), what="record type") + body


def build_value(value: GroupRecordValue) -> bytes:
    """``MessageUtil#toVersionPrefixedBytes`` for the value types above."""
    if isinstance(value, OffsetCommitValue):
        body = _build_offset_value(value)
    elif isinstance(value, GroupMetadataValue):
        body = _build_group_value(value)
    elif isinstance(value, GroupTypeValue):
        body = group_records.build_value_body(value)
    elif isinstance(value, UnknownGroupRecordValue):
        body = bytes(value.raw)
    else:
        raise TypeError(f"not a consumer offsets value: {value!r}")
    return build_struct(Int16, value.version, what="value version") + body


def _require_default(version: int, name: str, value: object, default: object) -> None:
    if value != default:
        raise ValueError(f"value version {version} has no {name} (got {value!r})")


def _build_offset_value(value: OffsetCommitValue) -> bytes:
    v = value.version
    struct = _OFFSET_VALUES.get(v)
    if struct is None:
        raise ValueError(f"unknown offset commit value version {v}")
    if v < 3:
        _require_default(v, "leader_epoch", value.leader_epoch, -1)
    if v != 1:
        _require_default(v, "expire_timestamp_ms", value.expire_timestamp_ms, -1)
    obj: dict[str, Any] = {
        "offset": value.offset,
        "leader_epoch": value.leader_epoch,
        "metadata": value.metadata,
        "commit_timestamp_ms": value.commit_timestamp_ms,
        "expire_timestamp_ms": value.expire_timestamp_ms,
    }
    if v >= FLEXIBLE_FROM:
        obj["tags"] = encode_tags(
            {"topic_id": value.topic_id}, OFFSET_VALUE_TAGS, value.unknown_tags,
            value.explicit_default_tags,
        )
    else:
        _require_default(v, "topic_id", value.topic_id, ZERO_UUID)
        _require_default(v, "unknown_tags", value.unknown_tags, ())
        _require_default(v, "explicit_default_tags", value.explicit_default_tags, frozenset())
    return build_struct(struct, obj, what="offset commit value")


def _build_group_value(value: GroupMetadataValue) -> bytes:
    v = value.version
    struct = _GROUP_VALUES.get(v)
    if struct is None:
        raise ValueError(f"unknown group metadata value version {v}")
    flexible = v >= FLEXIBLE_FROM
    if v < 2:
        _require_default(v, "current_state_timestamp_ms", value.current_state_timestamp_ms, -1)
    if not flexible:
        _require_default(v, "unknown_tags", value.unknown_tags, ())
    members = []
    for m in value.members:
        if v < 3:
            _require_default(v, "group_instance_id", m.group_instance_id, None)
        if v < 1:
            _require_default(v, "rebalance_timeout_ms", m.rebalance_timeout_ms, -1)
        if not flexible:
            _require_default(v, "member unknown_tags", m.unknown_tags, ())
        members.append(
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "rebalance_timeout_ms": m.rebalance_timeout_ms,
                "session_timeout_ms": m.session_timeout_ms,
                "subscription": bytes(m.subscription),
                "assignment": bytes(m.assignment),
                "tags": encode_tags({}, _NO_TAGS, m.unknown_tags, frozenset()),
            }
        )
    obj = {
        "protocol_type": value.protocol_type,
        "generation": value.generation,
        "protocol": value.protocol,
        "leader": value.leader,
        "current_state_timestamp_ms": value.current_state_timestamp_ms,
        "members": members,
        "tags": encode_tags({}, _NO_TAGS, value.unknown_tags, frozenset()),
    }
    return build_struct(struct, obj, what="group metadata value")
