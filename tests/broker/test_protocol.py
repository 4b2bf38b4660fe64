"""kio plumbing: zero-filled error responses for every API, decode errors never escape."""

from __future__ import annotations

import contextlib
import struct

from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map

from kafkatx.broker.protocol.handlers import load_handlers
from kafkatx.broker.wire import codec


def test_every_kio_response_can_be_an_error_reply() -> None:
    count = 0
    for key in api_key_map:
        for version in range(20):
            if codec.request_type(key, version) is None:
                continue
            response_cls = codec.response_type(key, version)
            reply = codec.error_response(response_cls, ErrorCode.unsupported_version)
            frame = codec.encode_response(1234, reply)
            assert struct.unpack_from(">ii", frame) == (len(frame) - 4, 1234)
            if codec.has_field(response_cls, "error_code"):
                assert reply.error_code == ErrorCode.unsupported_version
            count += 1
    assert count > 250


def test_registered_versions_exist_in_kio() -> None:
    for handler in load_handlers().values():
        for version in range(handler.min_version, handler.max_version + 1):
            assert codec.request_type(handler.api_key, version) is not None


@settings(max_examples=150, deadline=None)
@given(key=st.sampled_from([0, 1, 2, 3, 10, 18, 19, 20, 22, 32]), version=st.integers(0, 12),
       body=st.binary(max_size=64))
def test_garbage_bodies_raise_only_decode_errors(key: int, version: int, body: bytes) -> None:
    cls = codec.request_type(key, version)
    if cls is None:
        return
    payload = struct.pack(">hhih", key, version, 7, 3) + b"abc" + body
    with contextlib.suppress(codec.RequestDecodeError):
        codec.parse_request(payload, cls)


def _populated(cls: type, depth: int = 0) -> object:
    """An entity of ``cls`` with every array holding two entries, strings and bytes filled."""
    import dataclasses
    import datetime
    import uuid

    from kio.serial._introspect import (
        EntityField,
        EntityTupleField,
        PrimitiveTupleField,
        classify_field,
        get_schema_field_type,
    )

    values: dict[str, object] = {}
    for field in dataclasses.fields(cls):
        kind = classify_field(field)
        if isinstance(kind, EntityTupleField):
            values[field.name] = () if depth > 3 else tuple(
                _populated(kind.type_, depth + 1) for _ in range(2))
        elif isinstance(kind, EntityField):
            values[field.name] = _populated(kind.type_, depth + 1)
        else:
            kafka_type = get_schema_field_type(field)
            one = {"string": "ab", "bytes": b"xy", "records": b"xyz", "uuid": uuid.UUID(int=5),
                   "bool": True, "error_code": ErrorCode.none, "float64": 1.5,
                   "timedelta_i32": datetime.timedelta(seconds=1),
                   "timedelta_i64": datetime.timedelta(seconds=1),
                   "datetime_i64": datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
                   }.get(kafka_type, 1)
            values[field.name] = (one, one) if isinstance(kind, PrimitiveTupleField) else one
    return cls(**values)


def _served() -> list[tuple[int, int]]:
    return [(key, version) for key in api_key_map for version in range(20)
            if codec.request_type(key, version) is not None] + [
        (0, 2), (1, 3), (2, 0)]  # legacy_schema's old versions


def test_the_bounds_walker_accepts_every_request_kio_writes_and_refuses_each_truncation() -> None:
    """kafkatx.broker.wire.bounds walks the same layout kio's writers produce: every served
    (api, version) with populated arrays passes and parses back; every cut of it is refused
    by the walker or by kio, never anything else."""
    import io

    from kio.serial import entity_writer

    from kafkatx.broker.wire.bounds import FrameBoundsError, check_lengths

    checked = 0
    for key, version in _served():
        cls = codec.request_type(key, version)
        assert cls is not None
        header = cls.__header_schema__(request_api_key=key, request_api_version=version,
                                       correlation_id=7, client_id="c")
        buf = io.BytesIO()
        entity_writer(cls.__header_schema__)(buf, header)
        body = _populated(cls)
        entity_writer(cls)(buf, body)
        payload = buf.getvalue()
        check_lengths(payload, cls)
        assert codec.parse_request(payload, cls)[1] == body
        for cut in range(8, len(payload)):
            with contextlib.suppress(codec.RequestDecodeError, FrameBoundsError):
                codec.parse_request(payload[:cut], cls)
        checked += 1
    assert checked > 250


def test_a_collection_longer_than_the_frame_is_refused_before_kio_reserves_it() -> None:
    """Kafka: "Tried to allocate a collection of size N, but there are only M bytes
    remaining." A Metadata v9 of 20 bytes declaring 2^31-2 topics (kio alone reserves 16 GiB
    for it)."""
    import io

    from kio.serial import entity_writer

    cls = codec.request_type(3, 9)
    buf = io.BytesIO()
    entity_writer(cls.__header_schema__)(buf, cls.__header_schema__(
        request_api_key=3, request_api_version=9, correlation_id=1, client_id="c"))
    payload = buf.getvalue() + b"\xff\xff\xff\xff\x07" + b"\x00\x00\x00\x00"
    try:
        codec.parse_request(payload, cls)
    except codec.RequestDecodeError as exc:
        assert "Tried to allocate a collection of size 2147483646, but there are only 4 " \
               "bytes remaining." in str(exc)
    else:
        raise AssertionError("parsed")
