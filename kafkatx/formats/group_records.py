"""``__consumer_offsets`` records of the group types after the classic three: KIP-848 consumer
groups, share groups and streams groups, decoded with their schemas
(:mod:`kafkatx.formats.group_record_schemas`).

Mirrors ``CoordinatorRecordSerde#deserialize`` with ``GroupCoordinatorRecordSerde``: the key's
fields are read after its int16 record type, the value's after its int16 version, and neither
read checks that the buffer is used up (Kafka ignores trailing bytes; so does this). A value
version the schema lacks is Kafka's ``UnknownRecordVersionException``, a ``FormatError``
here.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from kafkatx.formats.group_record_schemas import KEY_SCHEMAS, VALUE_SCHEMAS
from kafkatx.formats.kafka_messages import read_message, to_json, write_message
from kafkatx.lazy_dataclass import dataclass

GROUP_ID = "group_id"


def known(record_type: int) -> bool:
    """A record type whose key and value this module decodes."""
    return record_type in KEY_SCHEMAS


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupTypeKey:
    """The key of a record type 3+: its group id, and the member id or regular expression of
    the per-member types (``fields``: snake_case names, ``group_id`` included)."""

    record_type: int
    fields: dict[str, Any] = field(default_factory=dict)

    @property
    def group(self) -> str:
        return str(self.fields[GROUP_ID])

    @property
    def member_id(self) -> str | None:
        return self.fields.get("member_id")

    @property
    def name(self) -> str:
        """Kafka's record name (``CoordinatorRecordType#name``): the schema without ``Key``."""
        return KEY_SCHEMAS[self.record_type].name.removesuffix("Key")

    def to_dict(self) -> dict[str, object]:
        rest = {k: v for k, v in self.fields.items() if k != GROUP_ID}
        return {"record_type": self.record_type, "record_type_name": self.name,
                "group": self.group, **rest}


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupTypeValue:
    """The value of a record type 3+: its version and its schema's fields (snake_case)."""

    record_type: int
    version: int
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {"version": self.version, **to_json(self.data)}


def parse_key(record_type: int, body: bytes, *, path: str | None, base: int) -> GroupTypeKey:
    """The key fields after the int16 record type (``body``; ``base``: its file position)."""
    values, _ = read_message(KEY_SCHEMAS[record_type], 0, body, path=path, base=base,
                             exact=False)
    return GroupTypeKey(record_type=record_type, fields=values)


def parse_value(record_type: int, version: int, body: bytes, *, path: str | None,
                base: int) -> GroupTypeValue:
    """The value fields after the int16 version (``body``; ``base``: its file position)."""
    values, _ = read_message(VALUE_SCHEMAS[record_type], version, body, path=path, base=base,
                             exact=False)
    return GroupTypeValue(record_type=record_type, version=version, data=values)


def build_key_body(key: GroupTypeKey) -> bytes:
    return write_message(KEY_SCHEMAS[key.record_type], 0, key.fields)


def build_value_body(value: GroupTypeValue) -> bytes:
    return write_message(VALUE_SCHEMAS[value.record_type], value.version, value.data)
