"""Kafka request/response plumbing over ``kio``: framing, header peeking, parse, encode, zero-fill.

Mirrors the parts of Kafka's ``RequestContext#parseRequest`` / ``RequestHeader`` /
``AbstractResponse#serializeWithHeader`` a broker needs: the api key, version and correlation id
are read from the first 8 bytes (the same in every header version), the header and body are
parsed with kio's native readers, responses get their header version from kio (which already
encodes Kafka's rule that ApiVersions responses always use header v0). Responses are encoded as
chunks: the records of a fetch response go to the socket as the bytes read from the segment,
never copied into one buffer (``encode_response_chunks``); a handler may hand back a body it
wrote itself (``EncodedResponse``, the Produce hot path).
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import io
import struct
import sys
import types
import typing
import uuid
from collections.abc import Callable
from typing import Any

from kio.index import KioIndexError, load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import SerialError

from kafkatx.broker.wire import legacy_schema
from kafkatx.broker.wire.bounds import check_lengths
from kafkatx.lazy_dataclass import dataclass

_PEEK = struct.Struct(">hhi")
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_SIZE = struct.Struct(">i")
_SIZE_AND_CORRELATION = struct.Struct(">ii")
MAX_FRAME_BYTES = 100 * 1024 * 1024  # socket.request.max.bytes (Kafka's default: 104857600)


class CloseConnection(Exception):
    """Raised by a handler where Kafka closes the connection (an acks=0 produce that failed)."""


class RequestDecodeError(Exception):
    """A frame kio cannot parse (truncated, unknown tagged field, bad string...)."""


@dataclass(frozen=True, slots=True)
class RequestHeaderInfo:
    """What every request header starts with: api key, api version, correlation id."""

    api_key: int
    api_version: int
    correlation_id: int


def peek_header(payload: bytes) -> RequestHeaderInfo:
    """The first 8 bytes of any request header (``RequestHeader`` v0..v2 share them)."""
    if len(payload) < _PEEK.size:
        raise RequestDecodeError(f"request of {len(payload)} bytes is shorter than a header")
    key, version, corr = _PEEK.unpack_from(payload, 0)
    return RequestHeaderInfo(key, version, corr)


@functools.cache
def request_type(api_key: int, api_version: int) -> type | None:
    """kio's request class for (key, version), else the old versions of
    :mod:`kafkatx.broker.wire.legacy_schema`, or None when neither has that schema."""
    try:
        return load_request_schema(api_key, api_version)
    except (KioIndexError, ImportError, AttributeError, ValueError):
        return legacy_schema.request_type(api_key, api_version)


@functools.cache
def response_type(api_key: int, api_version: int) -> type:
    legacy = legacy_schema.response_type(api_key, api_version)
    return legacy if legacy is not None else load_response_schema(api_key, api_version)


def response_module(response_cls: type) -> types.ModuleType:
    """The kio module holding a response class and its nested entity classes."""
    return sys.modules[response_cls.__module__]


@functools.cache
def _reader(cls: type) -> Callable[[Any, int], tuple[Any, int]]:
    return entity_reader(cls)


@functools.cache
def _writer(cls: type) -> Callable[[io.BytesIO, Any], None]:
    return entity_writer(cls)


def parse_request(payload: bytes, request_cls: type) -> tuple[Any, Any]:
    """(header, body) of a request frame; ``RequestDecodeError`` for anything kio rejects.

    kio raises ``KeyError`` for unknown tagged fields (the protocol says to skip them) and its
    own ``SerialError``s for truncation; both become ``RequestDecodeError`` here. Every
    declared length is checked against the frame first (:mod:`kafkatx.broker.wire.bounds`), so
    kio never reserves room for more entries than the frame can hold.
    """
    try:
        check_lengths(payload, request_cls)
        header, used = _reader(request_cls.__header_schema__)(payload, 0)
        body, _ = _reader(request_cls)(payload, used)
    except (SerialError, KeyError, ValueError, IndexError, OverflowError, TypeError,
            UnicodeDecodeError) as exc:
        raise RequestDecodeError(f"{type(exc).__name__}: {exc}") from None
    return header, body


_BY_REFERENCE = 32 * 1024  # writes this large (fetched records) are kept, not copied


class _Chunks:
    """A kio ``Writable`` collecting an encoding as chunks: small writes are joined, large ones
    (the records of a fetch response, read from a segment) are kept by reference, so a response
    is never copied as a whole before it goes to the socket."""

    __slots__ = ("_small", "chunks", "size")

    def __init__(self) -> None:
        self.chunks: list[bytes | bytearray] = []
        self.size = 0
        self._small = bytearray()

    def write(self, data: bytes | bytearray) -> int:
        n = len(data)
        if n >= _BY_REFERENCE:
            if self._small:
                self.chunks.append(self._small)
                self._small = bytearray()
            self.chunks.append(data)
        else:
            self._small += data
        self.size += n
        return n

    def done(self) -> list[bytes | bytearray]:
        if self._small:
            self.chunks.append(self._small)
            self._small = bytearray()
        return self.chunks


@dataclass(frozen=True, slots=True)
class EncodedResponse:
    """A response body a handler wrote itself (a hot path), framed like the kio response
    ``response_cls`` it encodes."""

    response_cls: type
    body: bytes | bytearray


@functools.cache
def _header_tail(header_cls: type) -> bytes:
    """What a response header of this class holds after its correlation id (v1: an empty
    tagged-field section), from kio's encoding of it."""
    buf = io.BytesIO()
    _writer(header_cls)(buf, header_cls(correlation_id=0))
    raw = buf.getvalue()
    if raw[:4] != b"\0\0\0\0":
        raise RuntimeError(f"{header_cls.__module__}: unexpected response header layout")
    return raw[4:]


def encode_response_chunks(correlation_id: int, response: Any) -> list[bytes | bytearray]:
    """The size-prefixed frame of ``response`` (a kio response or an ``EncodedResponse``) as
    chunks to write in order: the response header kio assigns to this response type, then the
    body."""
    out = _Chunks()
    encoded = isinstance(response, EncodedResponse)
    response_cls = response.response_cls if encoded else type(response)
    out.write(_SIZE_AND_CORRELATION.pack(0, correlation_id))
    out.write(_header_tail(response_cls.__header_schema__))
    if encoded:
        out.write(response.body)
    else:
        _writer(response_cls)(out, response)
    chunks = out.done()
    _SIZE.pack_into(chunks[0], 0, out.size - 4)  # chunks[0] is the small one holding the size
    return chunks


def encode_response(correlation_id: int, response: Any) -> bytes:
    """Size-prefixed frame: the response header kio assigns to this response type, then body."""
    return b"".join(encode_response_chunks(correlation_id, response))


# --------------------------------------------------------------------------------------------
# Building kio entities with only the fields a version has


@dataclass(frozen=True, slots=True)
class _FieldPlan:
    names: frozenset[str]
    zeros: tuple[tuple[str, Callable[[], Any]], ...]  # required fields and their zero value


def _zero_for(annotation: Any) -> Callable[[], Any]:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        return lambda: None
    if origin is tuple:
        return tuple
    if isinstance(annotation, type):
        if issubclass(annotation, ErrorCode):
            return lambda: ErrorCode.none
        if issubclass(annotation, bool):
            return lambda: False
        if issubclass(annotation, int):
            return lambda: 0
        if issubclass(annotation, str):
            return str
        if issubclass(annotation, bytes):
            return bytes
        if issubclass(annotation, datetime.timedelta):
            return datetime.timedelta
        if issubclass(annotation, datetime.datetime):
            return lambda: _EPOCH
        if issubclass(annotation, uuid.UUID):
            return lambda: uuid.UUID(int=0)
        if dataclasses.is_dataclass(annotation):
            return lambda: make(annotation)
    raise TypeError(f"no zero value for {annotation!r}")


@functools.cache
def _plan(cls: type) -> _FieldPlan:
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)
    zeros = tuple(
        (f.name, _zero_for(hints[f.name])) for f in fields
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    )
    return _FieldPlan(frozenset(f.name for f in fields), zeros)


def make(cls: type, **values: Any) -> Any:
    """Instantiate a kio entity from the ``values`` its version has; missing required fields get
    a zero value (0, "", (), None for nullable fields, ErrorCode.none, nested zero entities)."""
    plan = _plan(cls)
    kwargs = {k: v for k, v in values.items() if k in plan.names}
    for name, zero in plan.zeros:
        if name not in kwargs:
            kwargs[name] = zero()
    return cls(**kwargs)


def has_field(cls: type, name: str) -> bool:
    return name in _plan(cls).names


def error_response(response_cls: type, error: ErrorCode) -> Any:
    """A zero-filled response with ``error`` in its top-level error code, when it has one
    (Kafka's ``AbstractRequest#getErrorResponse`` for APIs with a top-level code)."""
    return make(response_cls, error_code=error)


def ms_to_datetime(value: int) -> datetime.datetime | None:
    """A kio ``datetime_i64`` value for epoch-ms ``value`` (None encodes -1)."""
    if value < 0:
        return None
    return _EPOCH + datetime.timedelta(milliseconds=value)


def ms(value: datetime.timedelta | int) -> int:
    """Milliseconds of a kio timedelta field (or a plain int)."""
    if isinstance(value, datetime.timedelta):
        return value // datetime.timedelta(milliseconds=1)
    return int(value)
