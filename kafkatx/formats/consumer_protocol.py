"""The consumer protocol's subscription (the metadata a ``consumer`` group member joins with).

Mirrors ``ConsumerProtocol#deserializeVersion`` + ``#deserializeSubscription(buffer, 0)`` as the
classic group coordinator uses them (``GroupMetadata#computeSubscribedTopics``): every version
starts with the v0 layout (``ConsumerProtocolSubscription.json``: int16 version, topics as an
int32-counted array of int16-length strings, nullable user data), so the topics are read with
v0 whatever the version; what later versions add (owned partitions, generation, rack) follows and
is not read. A negative version or a truncated prefix is a ``FormatError``.
"""

from __future__ import annotations

import construct as c

from kafkatx.errors import FormatError
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
