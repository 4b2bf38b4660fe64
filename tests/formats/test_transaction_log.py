"""``__transaction_state`` layouts, checked against hand-assembled bytes and round-trips."""

from __future__ import annotations

import struct
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.errors import FormatError
from kafkatx.formats.transaction_log import (
    VALUE_TAGS,
    TransactionLogKey,
    TransactionLogValue,
    TransactionState,
    TxnTopicPartitions,
    build_key,
    build_value,
    parse_key,
    parse_value,
)
from kafkatx.semantics.transaction_states import (
    EXPIRATION_ALLOWED,
    VALID_PREVIOUS_STATES,
    is_expiration_allowed,
    is_valid_transition,
)
from tests.formats.roundtrip import assert_roundtrip
from tests.formats.roundtrip import classic_string as _classic_string

TS = 1_700_000_000_123


def _value(**kw: object) -> TransactionLogValue:
    base: dict[str, object] = {
        "version": 0,
        "producer_id": 4001,
        "producer_epoch": 7,
        "transaction_timeout_ms": 60_000,
        "state": TransactionState.EMPTY,
        "partitions": None,
        "last_update_timestamp_ms": TS,
        "start_timestamp_ms": -1,
    }
    base.update(kw)
    return TransactionLogValue(**base)  # type: ignore[arg-type]


# --- key ---------------------------------------------------------------------------------------


def test_key_testtranid_is_14_bytes_and_matches_hand_built() -> None:
    expected = struct.pack(">hh", 0, 10) + b"TesttranId"
    data = assert_roundtrip(
        TransactionLogKey(transactional_id="TesttranId"), build_key, parse_key, size=14
    )
    assert data == expected


def test_key_unknown_version_is_a_format_error() -> None:
    with pytest.raises(FormatError, match="unknown key version 1") as info:
        parse_key(struct.pack(">h", 1) + _classic_string("x"), path="seg.log", base=100)
    assert info.value.position == 100
    assert info.value.path == "seg.log"
    with pytest.raises(ValueError):
        build_key(TransactionLogKey(transactional_id="x", version=1))


@pytest.mark.parametrize(
    ("data", "position"),
    [
        (b"", 50),
        (b"\x00", 50),
        (b"\x00\x00\x00\x05ab", 54),  # string runs past the end
        (b"\x00\x00\x00\x02\xff\xfe", 54),  # not UTF-8
        (b"\x00\x00\x00\x01ab", 55),  # trailing byte
    ],
)
def test_bad_keys_raise_format_error_with_position(data: bytes, position: int) -> None:
    with pytest.raises(FormatError) as info:
        parse_key(data, path="p", base=50)
    assert info.value.position == position


@settings(max_examples=100)
@given(st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=40))
def test_key_roundtrip(txn_id: str) -> None:
    data = assert_roundtrip(TransactionLogKey(transactional_id=txn_id), build_key, parse_key)
    assert len(data) == 4 + len(txn_id.encode())


# --- value v0 ----------------------------------------------------------------------------------


def test_empty_v0_value_with_null_partitions_is_37_bytes() -> None:
    value = _value()
    expected = struct.pack(">hqhibiqq", 0, 4001, 7, 60_000, 0, -1, TS, -1)
    data = assert_roundtrip(value, build_value, parse_value, size=37)
    assert data == expected
    assert parse_value(data).partitions is None  # type: ignore[union-attr]


def test_v0_value_with_topictest_partition_0_is_56_bytes() -> None:
    value = _value(
        state=TransactionState.ONGOING,
        partitions=(TxnTopicPartitions(topic="TopicTest", partition_ids=(0,)),),
        start_timestamp_ms=TS - 5,
    )
    expected = (
        struct.pack(">hqhib", 0, 4001, 7, 60_000, 1)
        + struct.pack(">i", 1)  # one PartitionsSchema element
        + _classic_string("TopicTest")
        + struct.pack(">ii", 1, 0)  # partitionIds = [0]
        + struct.pack(">qq", TS, TS - 5)
    )
    data = assert_roundtrip(value, build_value, parse_value, size=56)
    assert data == expected


def test_null_and_empty_partitions_are_distinct_but_both_dump_as_empty_object() -> None:
    null_value, empty_value = _value(partitions=None), _value(partitions=())
    assert build_value(null_value) != build_value(empty_value)
    assert parse_value(build_value(empty_value)).partitions == ()  # type: ignore[union-attr]
    assert null_value.to_dict()["partitions"] == {} == empty_value.to_dict()["partitions"]


def test_to_dict_contract_keeps_partition_order() -> None:
    value = _value(
        state=TransactionState.PREPARE_COMMIT,
        partitions=(
            TxnTopicPartitions(topic="zeta", partition_ids=(3, 1)),
            TxnTopicPartitions(topic="alpha", partition_ids=(0,)),
        ),
    )
    d = value.to_dict()
    assert d == {
        "version": 0,
        "producer_id": 4001,
        "producer_epoch": 7,
        "transaction_timeout_ms": 60_000,
        "state": "PrepareCommit",
        "partitions": {"zeta": [3, 1], "alpha": [0]},
        "last_update_timestamp_ms": TS,
        "start_timestamp_ms": -1,
    }
    assert list(d["partitions"]) == ["zeta", "alpha"]  # type: ignore[call-overload]
    assert parse_value(build_value(value)).topic_partitions == (  # type: ignore[union-attr]
        ("zeta", 3), ("zeta", 1), ("alpha", 0)
    )


def test_unknown_state_id_is_kept_and_named() -> None:
    value = parse_value(build_value(_value(state=9)))
    assert value is not None
    assert value.state == 9 and value.transaction_state is None
    assert value.to_dict()["state"] == "Unknown(9)"


def test_v0_cannot_carry_tagged_fields() -> None:
    with pytest.raises(ValueError, match="client_transaction_version"):
        build_value(_value(client_transaction_version=2))
    with pytest.raises(ValueError):
        build_value(_value(unknown_tags={9: b"x"}))


def test_tombstone_is_none() -> None:
    assert parse_value(None) is None


@pytest.mark.parametrize("version", [2, -1, 0x7FFF])
def test_unknown_value_version_is_a_format_error(version: int) -> None:
    data = struct.pack(">h", version) + build_value(_value())[2:]
    with pytest.raises(FormatError, match=f"unknown value version {version}") as info:
        parse_value(data, path="p", base=7)
    assert info.value.position == 7


def test_truncated_value_reports_the_field_position() -> None:
    data = build_value(_value())
    with pytest.raises(FormatError, match="truncated") as info:
        parse_value(data[:20], base=1000)
    # version 2 + producer id 8 + epoch 2 + timeout 4 + status 1 = 17: the array count is cut.
    assert info.value.position == 1017


# --- value v1 (flexible) -------------------------------------------------------------------------


def test_v1_value_matches_hand_built_compact_encoding() -> None:
    topic = "t" * 200  # compact length 201 needs a two-byte varint: 0xC9 0x01
    value = _value(
        version=1,
        state=TransactionState.ONGOING,
        partitions=(TxnTopicPartitions(topic=topic, partition_ids=(0, 5)),),
        start_timestamp_ms=TS - 10,
        previous_producer_id=4000,
        client_transaction_version=2,
    )
    expected = (
        struct.pack(">hqhib", 1, 4001, 7, 60_000, 1)
        + b"\x02"  # compact array: 1 element + 1
        + b"\xc9\x01" + topic.encode()
        + b"\x03" + struct.pack(">ii", 0, 5)  # compact int32 array of 2
        + b"\x00"  # element's empty tagged-field section
        + struct.pack(">qq", TS, TS - 10)
        + b"\x02"  # two tagged fields, in tag order
        + b"\x00\x08" + struct.pack(">q", 4000)  # tag 0 PreviousProducerId
        + b"\x02\x02" + struct.pack(">h", 2)  # tag 2 ClientTransactionVersion
    )
    assert assert_roundtrip(value, build_value, parse_value) == expected


def test_v1_sizes_from_the_fact_sheet() -> None:
    ongoing = _value(
        version=1,
        state=TransactionState.ONGOING,
        partitions=(TxnTopicPartitions(topic="TopicTest", partition_ids=(0,)),),
        client_transaction_version=2,
    )
    assert len(build_value(ongoing)) == 55
    assert len(build_value(_value(version=1, client_transaction_version=2))) == 39
    assert len(build_value(_value(version=1))) == 35


def test_v1_null_partitions_is_compact_zero() -> None:
    data = build_value(_value(version=1))
    assert data[17] == 0  # compact nullable array: 0 = null
    assert parse_value(data).partitions is None  # type: ignore[union-attr]


def test_v1_next_producer_epoch_is_tag_3_int16() -> None:
    value = _value(version=1, next_producer_id=5000, next_producer_epoch=0)
    data = build_value(value)
    assert data.endswith(
        b"\x02" + b"\x01\x08" + struct.pack(">q", 5000) + b"\x03\x02" + struct.pack(">h", 0)
    )
    parsed = parse_value(data)
    assert parsed == value
    assert parsed.to_dict()["next_producer_epoch"] == 0  # type: ignore[union-attr]
    assert "previous_producer_id" not in parsed.to_dict()  # type: ignore[union-attr]


def test_future_tagged_fields_are_kept_raw_like_kafka_test() -> None:
    # Mirrors TransactionLogTest#testDeserializeFutureTransactionLogValue: tags 100 (a classic
    # string "foo") and 101 (int32 4000) on the value and on the partitions element.
    foo, n = _classic_string("foo"), struct.pack(">i", 4000)
    tags = b"\x02" + b"\x64" + bytes([len(foo)]) + foo + b"\x65\x04" + n
    data = (
        struct.pack(">hqhib", 1, 1000, 100, 1000, TransactionState.COMPLETE_COMMIT)
        + b"\x02" + b"\x06topic" + b"\x02" + struct.pack(">i", 1) + tags
        + struct.pack(">qq", 2000, 3000)
        + tags
    )
    value = parse_value(data)
    assert value is not None
    assert value.unknown_tags == ((100, foo), (101, n))
    assert value.partitions is not None
    assert value.partitions[0].unknown_tags == ((100, foo), (101, n))
    assert value.partitions_by_topic == {"topic": [1]}
    assert (value.producer_id, value.producer_epoch) == (1000, 100)
    assert value.transaction_timeout_ms == 1000
    assert value.client_transaction_version == 0 and value.previous_producer_id == -1
    assert build_value(value) == data
    assert value.to_dict()["unknown_tags"] == {"100": "AANmb28=", "101": "AAAPoA=="}


def test_known_tag_with_wrong_size_is_a_format_error() -> None:
    data = build_value(_value(version=1))[:-1] + b"\x01\x00\x04" + b"\x00" * 4
    with pytest.raises(FormatError, match="tagged field 0"):
        parse_value(data)


def test_known_tag_written_with_its_default_round_trips() -> None:
    data = build_value(_value(version=1))[:-1] + b"\x01\x02\x02\x00\x00"  # tag 2 = 0 (default)
    value = parse_value(data)
    assert value is not None and value.explicit_default_tags == frozenset({2})
    assert value.to_dict()["client_transaction_version"] == 0
    assert build_value(value) == data


def test_unknown_tags_cannot_shadow_known_ones() -> None:
    with pytest.raises(ValueError, match="known field"):
        build_value(_value(version=1, unknown_tags={1: b"\x00" * 8}))


# --- hypothesis round-trips ----------------------------------------------------------------------

_text = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=20)
_ts = st.integers(1_500_000_000_000, 2_000_000_000_000)


def _unknown_tags(low: int) -> st.SearchStrategy[dict[int, bytes]]:
    return st.dictionaries(st.integers(low, 300), st.binary(max_size=12), max_size=3)


def _partitions(flexible: bool) -> st.SearchStrategy[tuple[TxnTopicPartitions, ...] | None]:
    element = st.builds(
        TxnTopicPartitions,
        topic=_text,
        partition_ids=st.lists(st.integers(0, 10_000), max_size=6).map(tuple),
        unknown_tags=_unknown_tags(0) if flexible else st.just({}),
    )
    return st.none() | st.lists(element, max_size=4).map(tuple)


def _values(version: int) -> st.SearchStrategy[TransactionLogValue]:
    flexible = version == 1
    pid = st.integers(0, 2**40)
    tagged = {
        "previous_producer_id": st.just(-1) | pid,
        "next_producer_id": st.just(-1) | pid,
        "client_transaction_version": st.sampled_from([0, 1, 2]),
        "next_producer_epoch": st.integers(-1, 32767),
        "unknown_tags": _unknown_tags(4),
        "explicit_default_tags": st.frozensets(st.integers(0, 3)),
    } if flexible else {}
    return st.builds(
        TransactionLogValue,
        version=st.just(version),
        producer_id=pid,
        producer_epoch=st.integers(0, 32767),
        transaction_timeout_ms=st.integers(1, 900_000),
        state=st.sampled_from(list(TransactionState)),
        partitions=_partitions(flexible),
        last_update_timestamp_ms=_ts,
        start_timestamp_ms=st.just(-1) | _ts,
        **tagged,
    )


def _effective_explicit(value: TransactionLogValue) -> TransactionLogValue:
    # An "explicit default" only means something for a field that is at its default.
    keep = {
        t for t in value.explicit_default_tags
        if getattr(value, VALUE_TAGS[t].name) == VALUE_TAGS[t].default
    }
    return replace(value, explicit_default_tags=frozenset(keep))


@settings(max_examples=150)
@given(_values(0))
def test_value_v0_roundtrip(value: TransactionLogValue) -> None:
    assert_roundtrip(value, build_value, parse_value)


@settings(max_examples=150)
@given(_values(1).map(_effective_explicit))
def test_value_v1_roundtrip_with_unknown_tags(value: TransactionLogValue) -> None:
    data = assert_roundtrip(value, build_value, parse_value)
    assert set(value.to_dict()) >= {"version", "producer_id", "state", "partitions"}
    assert len(data) >= 35


@settings(max_examples=200)
@given(st.sampled_from([b"", b"\x00\x00", b"\x00\x01"]), st.binary(max_size=80))
def test_any_bytes_either_fail_cleanly_or_rebuild_exactly(prefix: bytes, data: bytes) -> None:
    data = prefix + data
    try:
        key = parse_key(data)
    except FormatError:
        pass
    else:
        assert build_key(key) == data
    try:
        value = parse_value(data)
    except FormatError:
        pass
    else:
        assert value is not None and build_value(value) == data


# --- TransactionState -----------------------------------------------------------------------------


def test_state_ids_and_names_are_kafkas() -> None:
    assert [(int(s), str(s)) for s in TransactionState] == [
        (0, "Empty"), (1, "Ongoing"), (2, "PrepareCommit"), (3, "PrepareAbort"),
        (4, "CompleteCommit"), (5, "CompleteAbort"), (6, "Dead"), (7, "PrepareEpochFence"),
    ]
    assert TransactionState.from_kafka_name("PrepareEpochFence") is TransactionState(7)
    with pytest.raises(ValueError):
        TransactionState.from_kafka_name("EMPTY")


def test_valid_previous_states_table() -> None:
    s = TransactionState
    expected = {
        "Empty": {"Empty", "CompleteCommit", "CompleteAbort"},
        "Ongoing": {"Ongoing", "Empty", "CompleteCommit", "CompleteAbort"},
        "PrepareCommit": {"Ongoing"},
        "PrepareAbort": {"Ongoing", "PrepareEpochFence", "Empty", "CompleteCommit",
                         "CompleteAbort"},
        "CompleteCommit": {"PrepareCommit"},
        "CompleteAbort": {"PrepareAbort"},
        "Dead": {"Empty", "CompleteAbort", "CompleteCommit"},
        "PrepareEpochFence": {"Ongoing"},
    }
    assert {str(k): {str(p) for p in v} for k, v in VALID_PREVIOUS_STATES.items()} == expected
    assert is_valid_transition(s.PREPARE_COMMIT, s.COMPLETE_COMMIT)
    assert not is_valid_transition(s.PREPARE_COMMIT, s.COMPLETE_ABORT)
    assert not is_valid_transition(9, s.EMPTY)


def test_expiration_allowed() -> None:
    assert {str(s) for s in EXPIRATION_ALLOWED} == {"Empty", "CompleteCommit", "CompleteAbort"}
    assert is_expiration_allowed(4) and not is_expiration_allowed(TransactionState.ONGOING)
