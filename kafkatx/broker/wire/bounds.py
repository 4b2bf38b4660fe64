"""Every length a request declares checked against the bytes it came in, before kio reads it.

Kafka's generated readers refuse a collection longer than what is left of the frame
(``"Tried to allocate a collection of size N, but there are only M bytes remaining."``, an
``InvalidRequestException`` that closes the connection) before allocating it. kio's native
reader reserves the declared count at once, so a 20-byte frame declaring 2^31 entries would
reserve gigabytes (and a few of them abort the process). :func:`check_lengths` walks the frame
along the request's kio schema (the field layout of ``kio.serial``'s writers: legacy or compact
strings, bytes, records and arrays, nullable structs, tagged fields) and raises
``FrameBoundsError`` at the first length that does not fit; the walk reads lengths only and
skips contents, so it costs per field, not per byte.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

FIXED_SIZES = {"int8": 1, "bool": 1, "int16": 2, "uint16": 2, "error_code": 2, "int32": 4,
               "uint32": 4, "timedelta_i32": 4, "int64": 8, "uint64": 8, "float64": 8,
               "timedelta_i64": 8, "datetime_i64": 8, "uuid": 16}
SIZED = ("string", "bytes", "records")


class FrameBoundsError(ValueError):
    """A declared length past the end of the frame (Kafka: InvalidRequestException)."""


Step = Callable[[memoryview, int, int], int]  # (data, position, end) -> next position


def _uvarint(data: memoryview, pos: int, end: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= end:
            raise FrameBoundsError("a varint runs past the end of the request")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise FrameBoundsError("a varint is longer than 5 bytes")


def _int(data: memoryview, pos: int, end: int, size: int) -> tuple[int, int]:
    if pos + size > end:
        raise FrameBoundsError("a length runs past the end of the request")
    return int.from_bytes(data[pos:pos + size], "big", signed=True), pos + size


def _too_many(count: int, remaining: int) -> FrameBoundsError:
    return FrameBoundsError(f"Tried to allocate a collection of size {count}, but there are "
                            f"only {remaining} bytes remaining.")


def _fixed(size: int) -> Step:
    def step(data: memoryview, pos: int, end: int) -> int:
        if pos + size > end:
            raise FrameBoundsError(f"a {size}-byte field runs past the end of the request")
        return pos + size
    return step


def _sized(compact: bool, prefix: int) -> Step:
    """A string, bytes or records field: its length (-1 or compact 0: null) fits the frame."""
    def step(data: memoryview, pos: int, end: int) -> int:
        if compact:
            length, pos = _uvarint(data, pos, end)
            length -= 1
        else:
            length, pos = _int(data, pos, end, prefix)
        if length > end - pos:
            raise _too_many(length, end - pos)
        return pos + max(length, 0)
    return step


def _array(compact: bool, element: Step) -> Step:
    def step(data: memoryview, pos: int, end: int) -> int:
        if compact:
            count, pos = _uvarint(data, pos, end)
            count -= 1
        else:
            count, pos = _int(data, pos, end, 4)
        if count > end - pos:
            raise _too_many(count, end - pos)
        for _ in range(count):
            pos = element(data, pos, end)
        return pos
    return step


def _nullable_struct(inner: Step) -> Step:
    def step(data: memoryview, pos: int, end: int) -> int:
        marker, pos = _int(data, pos, end, 1)
        return pos if marker < 0 else inner(data, pos, end)
    return step


def _primitive(kafka_type: str, flexible: bool, client_id: bool) -> Step:
    if kafka_type in FIXED_SIZES:
        return _fixed(FIXED_SIZES[kafka_type])
    if kafka_type in SIZED:
        if client_id:  # RequestHeader.client_id is always a legacy nullable string
            return _sized(False, 2)
        return _sized(flexible, 2 if kafka_type == "string" else 4)
    raise TypeError(f"no bounds rule for kafka_type {kafka_type!r}")


def _field_step(field: dataclasses.Field[Any], flexible: bool, header: bool) -> Step:
    kind = classify_field(field)
    client_id = header and field.name == "client_id"
    if isinstance(kind, PrimitiveField):
        return _primitive(get_schema_field_type(field), flexible, client_id)
    if isinstance(kind, PrimitiveTupleField):
        return _array(flexible, _primitive(get_schema_field_type(field), flexible, False))
    if isinstance(kind, EntityField):
        inner = _lazy(kind.type_)
        return _nullable_struct(inner) if is_optional(field) else inner
    assert isinstance(kind, EntityTupleField)
    return _array(flexible, _lazy(kind.type_))


def _lazy(cls: type) -> Step:
    """The entity's step, built on first use (entities may nest deeply)."""
    def step(data: memoryview, pos: int, end: int) -> int:
        return entity_step(cls)(data, pos, end)
    return step


@functools.cache
def entity_step(cls: type) -> Step:
    flexible = bool(getattr(cls, "__flexible__", False))
    header = cls.__name__ == "RequestHeader"
    steps: list[Step] = []
    tagged: dict[int, Step] = {}
    for field in dataclasses.fields(cls):
        tag = get_field_tag(field)
        if tag is None:
            steps.append(_field_step(field, flexible, header))
        else:
            tagged[int(tag)] = _field_step(field, flexible, header)

    def step(data: memoryview, pos: int, end: int) -> int:
        for field_step in steps:
            pos = field_step(data, pos, end)
        if not flexible:
            return pos
        count, pos = _uvarint(data, pos, end)
        if count > end - pos:
            raise _too_many(count, end - pos)
        for _ in range(count):
            tag, pos = _uvarint(data, pos, end)
            size, pos = _uvarint(data, pos, end)
            if size > end - pos:
                raise _too_many(size, end - pos)
            known = tagged.get(tag)
            if known is not None:
                known(data, pos, pos + size)
            pos += size
        return pos
    return step


def check_lengths(payload: bytes | bytearray | memoryview, request_cls: type) -> None:
    """Raise ``FrameBoundsError`` when a length the header or body of ``request_cls``
    declares runs past the end of ``payload`` (a collection, string or bytes field)."""
    data = memoryview(payload)
    end = len(data)
    pos = entity_step(request_cls.__header_schema__)(data, 0, end)
    entity_step(request_cls)(data, pos, end)
