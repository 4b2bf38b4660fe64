"""The consumer protocol's subscription (the metadata a ``consumer`` group member joins with)
and assignment (what its leader hands it).

Mirrors ``ConsumerProtocol#deserializeVersion`` + ``#deserializeSubscription(buffer, 0)`` as the
classic group coordinator uses them (``GroupMetadata#computeSubscribedTopics``): every version
starts with the v0 layout (``ConsumerProtocolSubscription.json``: int16 version, topics as an
int32-counted array of int16-length strings, nullable user data), so the topics are read with
v0 whatever the version; what later versions add (owned partitions, generation, rack) follows and
is not read. A negative version or a truncated prefix is a ``FormatError``.

``decode_member_data`` reads either message whole (``ConsumerProtocolSubscription.json`` and
``ConsumerProtocolAssignment.json``, v0-v3), as ``kafka-dump-log.sh --offsets-decoder`` shows it.
"""

from __future__ import annotations

from typing import Any

import construct as c

from kafkatx.errors import FormatError
from kafkatx.formats.kafka_messages import Field, MessageSchema, read_message, to_json, versions
from kafkatx.formats.primitives import Array, Int16, NullableBytes, String

_SUBSCRIPTION_V0_PREFIX = c.Struct(
    "version" / Int16,
    "topics" / Array(String),
    "user_data" / NullableBytes,
)


def subscription_topics(data: bytes) -> tuple[str, ...]:
    """The topics of a serialized ``ConsumerProtocolSubscription`` (any version)."""
    try:
        parsed = _SUBSCRIPTION_V0_PREFIX.parse(data)
    except (c.ConstructError, UnicodeDecodeError) as exc:
        raise FormatError("not a consumer protocol subscription: " + " ".join(str(exc).split()),
                          field="subscription") from None
    if parsed.version < 0:
        raise FormatError(f"Unsupported subscription version: {parsed.version}",
                          field="subscription")
    return tuple(parsed.topics)


def build_subscription(topics: list[str], user_data: bytes | None = None,
                       version: int = 0) -> bytes:
    """A v0-layout subscription (later versions' extra fields are not written)."""
    return _SUBSCRIPTION_V0_PREFIX.build(dict(version=version, topics=topics,
                                              user_data=user_data))


_TOPIC_PARTITION = (Field("Topic", "string", "0+"), Field("Partitions", "[]int32", "0+"))
SUBSCRIPTION = MessageSchema("ConsumerProtocolSubscription", "0-3", "none", (
    Field("Topics", "[]string", "0+"),
    Field("UserData", "bytes", "0+", nullable_versions="0+", default=None),
    Field("OwnedPartitions", "[]TopicPartition", "1+", fields=_TOPIC_PARTITION),
    Field("GenerationId", "int32", "2+", default=-1),
    Field("RackId", "string", "3+", nullable_versions="3+", default=None),
))
ASSIGNMENT = MessageSchema("ConsumerProtocolAssignment", "0-3", "none", (
    Field("AssignedPartitions", "[]TopicPartition", "0+", fields=_TOPIC_PARTITION),
    Field("UserData", "bytes", "0+", nullable_versions="0+", default=None),
))


def decode_member_data(schema: MessageSchema, data: bytes) -> dict[str, Any] | None:
    """A classic ``consumer`` group member's subscription or assignment as JSON-ready fields
    of its version (``version`` added), or ``None`` when it does not decode.

    What ``DumpLogSegments``' offsets decoder shows for them (``replaceField``): the int16
    version, then the message read at that version, whatever follows ignored; a version above
    the schema's reads as its newest (the generated reader only tests ``version >= n``).
    """
    if len(data) < 2:
        return None
    version = int.from_bytes(data[:2], "big", signed=True)
    newest = schema.versions[-1]
    try:
        values, _ = read_message(schema, max(0, min(version, newest)), data[2:], exact=False)
    except FormatError:
        return None
    present = {f.key for f in schema.fields if version in versions(f.versions)}
    return {"version": version, **{k: v for k, v in to_json(values).items() if k in present}}
