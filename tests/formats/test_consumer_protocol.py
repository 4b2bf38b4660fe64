"""The consumer protocol subscription as the classic group coordinator reads it
(``ConsumerProtocol#deserializeSubscription`` with the v0 prefix every version shares)."""

from __future__ import annotations

import base64
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkatx.errors import FormatError
from kafkatx.formats.consumer_protocol import (
    ASSIGNMENT,
    SUBSCRIPTION,
    build_subscription,
    decode_member_data,
    subscription_topics,
)

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


def test_member_data_decodes_as_kafkas_offsets_decoder_shows_it() -> None:
    """A classic consumer group's member data Kafka 4.4 wrote (subscription v3, assignment v3)
    and what ``kafka-dump-log.sh --offsets-decoder`` printed for them."""
    subscription = base64.b64decode("AAMAAAABAAN0eHT/////AAAAAP///////w==")
    assignment = base64.b64decode("AAMAAAABAAN0eHQAAAABAAAAAP////8=")
    assert decode_member_data(SUBSCRIPTION, subscription) == {
        "version": 3, "topics": ["txt"], "user_data": None, "owned_partitions": [],
        "generation_id": -1, "rack_id": None}
    assert decode_member_data(ASSIGNMENT, assignment) == {
        "version": 3, "assigned_partitions": [{"topic": "txt", "partitions": [0]}],
        "user_data": None}
    v0 = decode_member_data(SUBSCRIPTION, build_subscription(["a", "b"], b"u"))
    assert v0 == {"version": 0, "topics": ["a", "b"], "user_data": "dQ=="}
    # a newer version reads as the newest known; bytes that do not decode stay undecoded
    assert decode_member_data(ASSIGNMENT, b"\x00\x09" + assignment[2:])["version"] == 9
    assert decode_member_data(ASSIGNMENT, b"\x00\x03\x00") is None
