"""``__transaction_state`` records: key, value (v0 classic, v1 flexible) and the state table.

Mirrors Kafka's ``TransactionLog#keyToBytes/valueToBytes/read`` with the schemas
``TransactionLogKey.json`` / ``TransactionLogValue.json`` (``transaction-coordinator`` module,
formerly ``core``) and ``TransactionState`` (ids, names, validPreviousStates,
isExpirationAllowed).

Key   = int16 version (0) + String transactionalId.
Value = int16 version + fields. v0 uses the classic encoding; v1 is flexible: compact strings and
arrays, and a tagged-field section after the value struct and after each partitions element.
A null value is a tombstone: ``parse_value(None)`` returns ``None``.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from dataclasses import field
from typing import Any, NamedTuple

import construct as c

from kafkatx.errors import FormatError
from kafkatx.formats import fast_layout
from kafkatx.formats.primitives import (
    Array,
    CompactArray,
    CompactNullableArray,
    CompactString,
    Int8,
    Int16,
    Int32,
    Int64,
    NullableArray,
    String,
    TaggedFields,
)
from kafkatx.formats.transaction_state_ids import TransactionState
from kafkatx.lazy_dataclass import dataclass

KEY_VERSION = 0  # CoordinatorRecordType.TRANSACTION_LOG.id(); no other key version ever existed
VALUE_VERSIONS = (0, 1)
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1

RawTags = tuple[tuple[int, bytes], ...]


# ---------------------------------------------------------------------------------------------
# Helpers shared with consumer_offsets: typed tagged fields.




class TagSpec(NamedTuple):
    """A tagged field known to a schema: its attribute name, fixed-size type and default."""

    name: str
    struct: c.Construct
    size: int
    default: Any


def decode_tags(
    tags: Mapping[int, bytes] | None,
    known: Mapping[int, TagSpec],
    *,
    what: str,
    path: str | None,
    position: int,
) -> tuple[dict[str, Any], RawTags, frozenset[int]]:
    """Split a parsed tagged-field section into (known values, unknown raw tags, explicit defaults).

    Known tags absent from the section get their default. "Explicit defaults" are known tags that
    were on the wire although equal to their default (Kafka's writer never does that); they are
    remembered so the bytes rebuild exactly. ``None`` (a version without tagged fields) gives
    nothing: the dataclass's defaults stand.
    """
    if tags is None:
        return {}, (), frozenset()
    values = {spec.name: spec.default for spec in known.values()}
    unknown: list[tuple[int, bytes]] = []
    explicit: set[int] = set()
    for tag, raw in tags.items():
        spec = known.get(tag)
        if spec is None:
            unknown.append((tag, raw))
            continue
        if len(raw) != spec.size:
            raise FormatError(
                f"tagged field {tag} ({spec.name}) has {len(raw)} bytes, expected {spec.size}",
                path=path,
                position=position,
                field=what,
            )
        value = spec.struct.parse(raw)
        values[spec.name] = value
        if value == spec.default:
            explicit.add(tag)
    return values, tuple(sorted(unknown)), frozenset(explicit)


def encode_tags(
    values: Mapping[str, Any],
    known: Mapping[int, TagSpec],
    unknown: RawTags,
    explicit: frozenset[int],
) -> dict[int, bytes]:
    """Inverse of ``decode_tags``: known fields are written when not default (or explicit)."""
    out: dict[int, bytes] = {}
    for tag, raw in unknown:
        if tag in known:
            raise ValueError(f"unknown_tags holds tag {tag}, which is the known field "
                             f"{known[tag].name}")
        out[tag] = bytes(raw)
    for tag in explicit:
        if tag not in known:
            raise ValueError(f"explicit_default_tags holds tag {tag}, which is not a known field")
    for tag, spec in known.items():
        value = values[spec.name]
        if value != spec.default or tag in explicit:
            out[tag] = build_struct(spec.struct, value, what=spec.name)
    return out


def present_tags(values: Mapping[str, Any], known: Mapping[int, TagSpec],
                 explicit: frozenset[int]) -> list[int]:
    """Known tags that are (or would be) on the wire, in tag order."""
    return [t for t, s in sorted(known.items()) if values[s.name] != s.default or t in explicit]


def normalize_tags(tags: Mapping[int, bytes] | Iterable[tuple[int, bytes]]) -> RawTags:
    """Unknown tags as a sorted tuple of (tag, bytes) pairs (hashable, in wire order)."""
    items = tags.items() if isinstance(tags, Mapping) else tags
    return tuple(sorted((int(t), bytes(b)) for t, b in items))


def tags_to_json(tags: RawTags) -> dict[str, str]:
    return {str(t): base64.b64encode(b).decode("ascii") for t, b in tags}


def build_struct(struct: c.Construct, obj: Any, *, what: str) -> bytes:
    """Build with construct; a value the format cannot hold is a ``ValueError``."""
    try:
        return struct.build(obj)
    except c.ConstructError as exc:
        msg = str(exc).strip().splitlines()
        raise ValueError(f"cannot build {what}: {msg[-1] if msg else exc!r}") from None


def read_version(data: bytes, *, what: str, path: str | None, base: int) -> int:
    """The int16 version/record-type prefix every coordinator key and value starts with."""
    if len(data) < 2:
        raise FormatError(
            f"{len(data)} bytes, too short for the int16 version", path=path, position=base,
            field=what,
        )
    return int.from_bytes(data[:2], "big", signed=True)


def parse_versioned(data: bytes, bodies: Mapping[int, c.Construct], *, what: str,
                    path: str | None, base: int) -> tuple[int, Any]:
    """The int16 version, then the body that version selects, parsed whole (an unknown version
    is a ``FormatError``); through the body's compiled reader where it decides."""
    version = read_version(data, what=what, path=path, base=base)
    body = bodies.get(version)
    if body is None:
        raise FormatError(f"unknown value version {version}", path=path, position=base,
                          field=what)
    return version, fast_layout.parse_exact(body, data[2:], what=what, path=path, base=base + 2)


# ---------------------------------------------------------------------------------------------
# TransactionState


def state_name(state_id: int) -> str:
    """Kafka's name for a status id, or ``Unknown(<id>)`` (Kafka itself would refuse to load)."""
    try:
        return TransactionState(state_id).kafka_name
    except ValueError:
        return f"Unknown({state_id})"


# ---------------------------------------------------------------------------------------------
# Wire layouts (TransactionLogKey.json v0; TransactionLogValue.json v0 and v1)

_KEY_BODY = c.Struct("transactional_id" / String)

_PARTITIONS_V0 = c.Struct("topic" / String, "partition_ids" / Array(Int32))
_PARTITIONS_V1 = c.Struct(
    "topic" / CompactString,
    "partition_ids" / CompactArray(Int32),
    "tags" / TaggedFields,
)


def _value_struct(flexible: bool) -> c.Struct:
    partitions = (
        CompactNullableArray(_PARTITIONS_V1) if flexible else NullableArray(_PARTITIONS_V0)
    )
    fields = [
        "producer_id" / Int64,
        "producer_epoch" / Int16,
        "transaction_timeout_ms" / Int32,
        "state" / Int8,
        "partitions" / partitions,
        "last_update_timestamp_ms" / Int64,
        "start_timestamp_ms" / Int64,
    ]
    if flexible:
        fields.append("tags" / TaggedFields)
    return c.Struct(*fields)


_VALUE_BODIES = {0: _value_struct(False), 1: _value_struct(True)}

# Tagged fields of TransactionLogValue v1+. NextProducerEpoch (tag 3) is in trunk's schema
# (KIP-939 work) but in no 4.0/4.1 release; the tags are read whichever broker wrote them.
VALUE_TAGS: dict[int, TagSpec] = {
    0: TagSpec("previous_producer_id", Int64, 8, NO_PRODUCER_ID),
    1: TagSpec("next_producer_id", Int64, 8, NO_PRODUCER_ID),
    2: TagSpec("client_transaction_version", Int16, 2, 0),
    3: TagSpec("next_producer_epoch", Int16, 2, NO_PRODUCER_EPOCH),
}


# ---------------------------------------------------------------------------------------------
# Public types


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionLogKey:
    """Key of a ``__transaction_state`` record."""

    transactional_id: str
    version: int = KEY_VERSION

    def to_dict(self) -> dict[str, object]:
        return {"version": self.version, "transactional_id": self.transactional_id}


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnTopicPartitions:
    """One ``PartitionsSchema`` element: a topic and the partition ids in the transaction."""

    topic: str
    partition_ids: tuple[int, ...]
    unknown_tags: RawTags = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "partition_ids", tuple(self.partition_ids))
        object.__setattr__(self, "unknown_tags", normalize_tags(self.unknown_tags))


@dataclass(frozen=True, slots=True, kw_only=True)
class TransactionLogValue:
    """Value of a ``__transaction_state`` record, raw as stored.

    ``partitions`` keeps the on-disk order; ``None`` is a null array (what Kafka writes for
    Empty), ``()`` an empty one. The v1 tagged fields hold Kafka's defaults when absent.
    """

    version: int
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    state: int
    partitions: tuple[TxnTopicPartitions, ...] | None
    last_update_timestamp_ms: int
    start_timestamp_ms: int
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    client_transaction_version: int = 0
    next_producer_epoch: int = NO_PRODUCER_EPOCH
    unknown_tags: RawTags = ()
    explicit_default_tags: frozenset[int] = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if self.partitions is not None:
            object.__setattr__(self, "partitions", tuple(self.partitions))
        object.__setattr__(self, "unknown_tags", normalize_tags(self.unknown_tags))
        object.__setattr__(self, "explicit_default_tags", frozenset(self.explicit_default_tags))

    @property
    def transaction_state(self) -> TransactionState | None:
        """The state as Kafka's enum, or ``None`` for an id Kafka does not know."""
        try:
            return TransactionState(self.state)
        except ValueError:
            return None

    @property
    def state_name(self) -> str:
        return state_name(self.state)

    @property
    def partitions_by_topic(self) -> dict[str, list[int]]:
        """Topic -> partition ids, topics in first-seen order (repeated topics are merged)."""
        out: dict[str, list[int]] = {}
        for p in self.partitions or ():
            out.setdefault(p.topic, []).extend(p.partition_ids)
        return out

    @property
    def topic_partitions(self) -> tuple[tuple[str, int], ...]:
        return tuple((p.topic, i) for p in self.partitions or () for i in p.partition_ids)

    @property
    def present_tags(self) -> list[int]:
        """Known tagged fields on the wire (always empty for v0)."""
        if self.version < 1:
            return []
        return present_tags(self._tag_values(), VALUE_TAGS, self.explicit_default_tags)

    def _tag_values(self) -> dict[str, Any]:
        return {spec.name: getattr(self, spec.name) for spec in VALUE_TAGS.values()}

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "version": self.version,
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "transaction_timeout_ms": self.transaction_timeout_ms,
            "state": self.state_name,
            "partitions": self.partitions_by_topic,
            "last_update_timestamp_ms": self.last_update_timestamp_ms,
            "start_timestamp_ms": self.start_timestamp_ms,
        }
        for tag in self.present_tags:
            name = VALUE_TAGS[tag].name
            out[name] = getattr(self, name)
        if self.unknown_tags:
            out["unknown_tags"] = tags_to_json(self.unknown_tags)
        with_tags = [p for p in self.partitions or () if p.unknown_tags]
        if with_tags:
            out["partition_unknown_tags"] = [
                {"topic": p.topic, "tags": tags_to_json(p.unknown_tags)} for p in with_tags
            ]
        return out


# ---------------------------------------------------------------------------------------------
# Reading


def parse_key(data: bytes, *, path: str | None = None, base: int = 0) -> TransactionLogKey:
    """``TransactionLog#readTxnRecordKey``; any version but 0 is a ``FormatError``."""
    data = bytes(data)
    version = read_version(data, what="transaction log key", path=path, base=base)
    if version != KEY_VERSION:
        raise FormatError(f"unknown key version {version}", path=path, position=base,
                          field="transaction log key")
    raw = fast_layout.parse_exact(_KEY_BODY, data[2:], what="transaction log key", path=path,
                                  base=base + 2)
    return TransactionLogKey(transactional_id=raw.transactional_id, version=version)


def parse_value(
    data: bytes | None, *, path: str | None = None, base: int = 0
) -> TransactionLogValue | None:
    """``TransactionLog#read`` for the value: ``None`` (tombstone) stays ``None``."""
    if data is None:
        return None
    data = bytes(data)
    what = "transaction log value"
    version, raw = parse_versioned(data, _VALUE_BODIES, what=what, path=path, base=base)
    flexible = version >= 1
    partitions = None
    if raw.partitions is not None:
        partitions = tuple(
            TxnTopicPartitions(
                topic=p.topic,
                partition_ids=tuple(p.partition_ids),
                unknown_tags=normalize_tags(p.tags) if flexible else (),
            )
            for p in raw.partitions
        )
    values, unknown, explicit = decode_tags(raw.get("tags"), VALUE_TAGS, what=what, path=path,
                                            position=base)
    return TransactionLogValue(
        version=version,
        producer_id=raw.producer_id,
        producer_epoch=raw.producer_epoch,
        transaction_timeout_ms=raw.transaction_timeout_ms,
        state=raw.state,
        partitions=partitions,
        last_update_timestamp_ms=raw.last_update_timestamp_ms,
        start_timestamp_ms=raw.start_timestamp_ms,
        unknown_tags=unknown,
        explicit_default_tags=explicit,
        **values,
    )


# ---------------------------------------------------------------------------------------------
# Writing


def build_key(key: TransactionLogKey) -> bytes:
    """``TransactionLog#keyToBytes``."""
    if key.version != KEY_VERSION:
        raise ValueError(f"unknown key version {key.version}")
    return build_struct(Int16, key.version, what="key version") + build_struct(
        _KEY_BODY, {"transactional_id": key.transactional_id}, what="transaction log key"
    )


def build_value(value: TransactionLogValue) -> bytes:
    """``TransactionLog#valueToBytes`` for an already-decided value (no state checks)."""
    body = _VALUE_BODIES.get(value.version)
    if body is None:
        raise ValueError(f"unknown value version {value.version}")
    flexible = value.version >= 1
    if not flexible:
        _require_no_tags(value)
    obj: dict[str, Any] = {
        "producer_id": value.producer_id,
        "producer_epoch": value.producer_epoch,
        "transaction_timeout_ms": value.transaction_timeout_ms,
        "state": value.state,
        "partitions": None
        if value.partitions is None
        else [
            {
                "topic": p.topic,
                "partition_ids": list(p.partition_ids),
                "tags": encode_tags({}, {}, p.unknown_tags, frozenset()),
            }
            for p in value.partitions
        ],
        "last_update_timestamp_ms": value.last_update_timestamp_ms,
        "start_timestamp_ms": value.start_timestamp_ms,
    }
    if flexible:
        obj["tags"] = encode_tags(
            value._tag_values(), VALUE_TAGS, value.unknown_tags, value.explicit_default_tags
        )
    return build_struct(Int16, value.version, what="value version") + build_struct(
        body, obj, what="transaction log value"
    )


def _require_no_tags(value: TransactionLogValue) -> None:
    # Version 0 has no tagged fields: anything that would need one cannot be written.
    set_fields = [
        spec.name for spec in VALUE_TAGS.values() if getattr(value, spec.name) != spec.default
    ]
    if (
        set_fields
        or value.unknown_tags
        or value.explicit_default_tags
        or any(p.unknown_tags for p in value.partitions or ())
    ):
        raise ValueError(
            "value version 0 cannot hold tagged fields "
            f"(set: {', '.join(set_fields) or 'unknown/explicit tags'})"
        )
