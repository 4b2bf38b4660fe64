"""The consumer protocol subscription as the classic group coordinator reads it
(``ConsumerProtocol#deserializeSubscription`` with the v0 prefix every version shares)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkatx.errors import FormatError
from kafkatx.formats.consumer_protocol import build_subscription, subscription_topics

TOPIC = st.text(alphabet="abcdefghijklmnopqrstuvwxyz._-0123456789", min_size=1, max_size=40)


@given(st.lists(TOPIC, max_size=8), st.one_of(st.none(), st.binary(max_size=32)),
       st.integers(0, 3), st.binary(max_size=16))
def test_topics_read_with_the_v0_prefix_whatever_follows(
        topics: list[str], user_data: bytes | None, version: int, tail: bytes) -> None:
    """Versions 1-3 append owned partitions, generation and rack after the v0 fields: the
    topics are read without them."""
    assert subscription_topics(build_subscription(topics, user_data, version) + tail) == \
        tuple(topics)


def test_librdkafka_subscription_bytes() -> None:
    """A v3 subscription as librdkafka writes it: one topic, null user data, no owned
    partitions, generation -1, null rack."""
    data = (struct.pack(">hih", 3, 1, 6) + b"orders" + struct.pack(">i", -1)
            + struct.pack(">i", 0) + struct.pack(">i", -1) + struct.pack(">h", -1))
    assert subscription_topics(data) == ("orders",)


@pytest.mark.parametrize("data", [b"", b"\x00\x00\x00\x00\x00\x02\x00\x01a",
                                  struct.pack(">hi", -1, 0) + struct.pack(">i", -1)])
def test_not_a_subscription(data: bytes) -> None:
    with pytest.raises(FormatError):
        subscription_topics(data)
