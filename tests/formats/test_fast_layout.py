"""The compiled struct readers of coordinator layouts against construct, the definition.

For generated keys and values of every version (nulls, tagged fields, damage: truncation, a
changed byte, an int16 -1, trailing bytes, random bodies) the fast reader either gives exactly
construct's parse or hands over, and what it hands over ends in construct's result or error.
"""

from __future__ import annotations

from typing import Any

import construct as c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.errors import FormatError
from kafkatx.formats import consumer_offsets as co
from kafkatx.formats import fast_layout, primitives
from kafkatx.formats import transaction_log as tl
from tests.formats.test_consumer_offsets import _group_values, _offset_values
from tests.formats.test_transaction_log import _values as _txn_values

_text = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=20)

# (layout, strategy of whole key/value bytes, bytes of the version/type prefix)
_CASES: dict[str, tuple[c.Construct, st.SearchStrategy[bytes]]] = {
    "offset key": (co._OFFSET_KEY_BODY, st.builds(
        co.OffsetCommitKey, group=_text, topic=_text, partition=st.integers(-1, 2**31 - 1),
        record_type=st.sampled_from([0, 1])).map(co.build_key)),
    "group key": (co._GROUP_KEY_BODY, st.builds(co.GroupMetadataKey, group=_text)
                  .map(co.build_key)),
    "txn key": (tl._KEY_BODY, st.builds(tl.TransactionLogKey, transactional_id=_text)
                .map(tl.build_key)),
    **{f"offset value v{v}": (co._OFFSET_VALUES[v], _offset_values(v).map(co.build_value))
       for v in co.OFFSET_COMMIT_VALUE_VERSIONS},
    **{f"group value v{v}": (co._GROUP_VALUES[v], _group_values(v).map(co.build_value))
       for v in co.GROUP_METADATA_VALUE_VERSIONS},
    **{f"txn value v{v}": (tl._VALUE_BODIES[v], _txn_values(v).map(tl.build_value))
       for v in tl.VALUE_VERSIONS},
}


def _plain(obj: Any) -> Any:
    if isinstance(obj, dict):  # construct's Container (with its _io) and fast_layout.Fields
        return {k: _plain(v) for k, v in obj.items()
                if not (isinstance(k, str) and k.startswith("_"))}
    if isinstance(obj, list):
        return [_plain(v) for v in obj]
    return obj


def _construct(layout: c.Construct, body: bytes) -> Any:
    try:
        return primitives.parse_exact(layout, body, what="x", base=2)
    except FormatError as exc:
        return (str(exc), exc.position)


def _fast_or_handover(layout: c.Construct, body: bytes) -> Any:
    try:
        return fast_layout.parse_exact(layout, body, what="x", base=2)
    except FormatError as exc:
        return (str(exc), exc.position)


def _damage(data: bytes, how: str, at: int, byte: int) -> bytes:
    if how == "truncate":
        return data[: at % (len(data) + 1)]
    if how == "flip" and data:
        i = at % len(data)
        return data[:i] + bytes([byte]) + data[i + 1:]
    if how == "minus1" and len(data) > 1:  # an int16 length of -1: null where allowed
        i = at % (len(data) - 1)
        return data[:i] + b"\xff\xff" + data[i + 2:]
    if how == "trail":
        return data + bytes([byte])
    return data


@pytest.mark.parametrize("name", sorted(_CASES))
@settings(max_examples=200)
@given(data=st.data(), how=st.sampled_from(["none", "truncate", "flip", "minus1", "trail"]),
       at=st.integers(0, 10_000), byte=st.integers(0, 255))
def test_the_fast_reader_gives_constructs_parse_or_hands_over(
    name: str, data: st.DataObject, how: str, at: int, byte: int
) -> None:
    layout, strategy = _CASES[name]
    body = _damage(data.draw(strategy), how, at, byte)[2:]
    fast = fast_layout.read_fast(layout, body)
    expected = _construct(layout, body)
    if fast is not None:
        assert not isinstance(expected, tuple), f"accepted what construct refuses: {expected}"
        assert _plain(fast) == _plain(expected)
    # through the public entry point, handed over or not: construct's value or error
    assert _plain(_fast_or_handover(layout, body)) == _plain(expected)


@pytest.mark.parametrize("name", sorted(_CASES))
@settings(max_examples=40)
@given(body=st.binary(max_size=60))
def test_random_bodies_decode_as_construct_decodes_them(name: str, body: bytes) -> None:
    layout, _ = _CASES[name]
    fast = fast_layout.read_fast(layout, body)
    expected = _construct(layout, body)
    if fast is not None:
        assert _plain(fast) == _plain(expected)
    assert _plain(_fast_or_handover(layout, body)) == _plain(expected)


@pytest.mark.parametrize("name", sorted(_CASES))
def test_every_hot_layout_compiles(name: str) -> None:
    assert fast_layout.reader_of(_CASES[name][0]) is not None


@settings(max_examples=60)
@given(version=st.sampled_from(co.OFFSET_COMMIT_VALUE_VERSIONS), data=st.data())
def test_tagless_common_shapes_take_the_fast_path(version: int, data: st.DataObject) -> None:
    """What Kafka writes for offset commits and transaction records (no tagged field present)
    is decided by the fast reader, not handed over."""
    value = data.draw(_offset_values(version))
    if version >= co.FLEXIBLE_FROM:
        value = co.OffsetCommitValue(version=version, offset=value.offset,
                                     metadata=value.metadata, leader_epoch=value.leader_epoch,
                                     commit_timestamp_ms=value.commit_timestamp_ms)
    assert fast_layout.read_fast(co._OFFSET_VALUES[version], co.build_value(value)[2:])
    txn = data.draw(_txn_values(0))
    assert fast_layout.read_fast(tl._VALUE_BODIES[0], tl.build_value(txn)[2:])


def test_a_tagged_field_is_handed_to_construct() -> None:
    value = co.OffsetCommitValue(version=4, offset=5, metadata="m", commit_timestamp_ms=1,
                                 topic_id=b"\x01" * 16)
    body = co.build_value(value)[2:]
    assert fast_layout.read_fast(co._OFFSET_VALUES[4], body) is None
    assert co.parse_value(co.OffsetCommitKey(group="g", topic="t", partition=0), co.build_value(
        value)) == value
