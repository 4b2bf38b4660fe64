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
