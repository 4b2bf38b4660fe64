"""Struct-based readers compiled from construct layouts, for coordinator records read in bulk.

The construct ``Struct`` stays the one definition of each layout (the coordinator records mirror
the message JSON schemas of Kafka's ``transaction-coordinator`` and ``group-coordinator``
modules, ``src/main/resources/common/message/``). ``reader_of`` compiles such a Struct into a
reader of ``struct.unpack_from`` steps for the shapes it knows: fixed-width integers (runs of
them read at once), classic and compact (nullable) strings and bytes, arrays of those, and a
tagged-field section that is empty. Anything else -- a tagged field present, a length or null
the type refuses, bad UTF-8, truncation, trailing bytes -- makes the reader hand the bytes over,
and ``parse_exact`` parses them with construct: results and errors are construct's.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

import construct as c

from kafkatx.formats import primitives
from kafkatx.formats.primitives import UVarInt

# A reader takes (data, position) and returns (value, position after it); it raises _HandOver
# (or struct.error / UnicodeDecodeError) for what construct must decide.
Reader = Callable[[bytes, int], tuple[Any, int]]
_FixedRun = tuple[struct.Struct, tuple[str, ...]]


class _HandOver(Exception):
    """The fast reader does not decide this input: construct parses it."""


_REFUSED = (_HandOver, struct.error, UnicodeDecodeError, IndexError)
_INT16 = struct.Struct(">h").unpack_from
_INT32 = struct.Struct(">i").unpack_from


class Fields(dict):  # type: ignore[type-arg]
    """A parsed struct: construct Container's attribute access and ``get``, without ``_io``.

    A missing attribute is a ``KeyError`` (dict's own lookup, for speed); readers of optional
    fields use ``get`` as they do on a Container.
    """

    __slots__ = ()
    __getattr__ = dict.__getitem__


def _uvarint(data: bytes, pos: int) -> tuple[int, int]:
    """``_UnsignedVarInt(5)``: at most 5 bytes (a longer one is handed over)."""
    value = 0
    for i in range(5):
        b = data[pos + i]  # IndexError past the end: caught as truncation below
        value |= (b & 0x7F) << (7 * i)
        if not b & 0x80:
            return value, pos + i + 1
    raise _HandOver


def _length_reader(length: c.Construct, compact: bool) -> Reader:
    if length is primitives.Int16:
        return lambda data, pos: (_INT16(data, pos)[0], pos + 2)
    if length is primitives.Int32:
        return lambda data, pos: (_INT32(data, pos)[0], pos + 4)
    if length is UVarInt and compact:
        def compact_length(data: bytes, pos: int) -> tuple[int, int]:
            n, pos = _uvarint(data, pos)
            return n - 1, pos
        return compact_length
    raise _HandOver


def _bytes_reader(sub: Any, text: bool) -> Reader:
    length = _length_reader(sub.length, sub.compact)
    nullable = sub.nullable

    def read(data: bytes, pos: int) -> tuple[Any, int]:
        n, pos = length(data, pos)
        if n < 0:
            if nullable and n == -1:
                return None, pos
            raise _HandOver
        end = pos + n
        if end > len(data):
            raise _HandOver
        raw = data[pos:end]
        return (raw.decode("utf-8") if text else raw), end
    return read


def _array_reader(sub: Any) -> Reader:
    count = _length_reader(sub.count, sub.compact)
    nullable = sub.nullable
    element = _unwrap(sub.element)
    if isinstance(element, c.FormatField):
        code = element.fmtstr[1:]
        size = element.length

        def read_ints(data: bytes, pos: int) -> tuple[Any, int]:
            n, pos = count(data, pos)
            if n < 0:
                if nullable and n == -1:
                    return None, pos
                raise _HandOver
            return list(struct.unpack_from(f">{n}{code}", data, pos)), pos + n * size
        return read_ints
    read_element = _compile(element)

    def read(data: bytes, pos: int) -> tuple[Any, int]:
        n, pos = count(data, pos)
        if n < 0:
            if nullable and n == -1:
                return None, pos
            raise _HandOver
        out = []
        for _ in range(n):
            item, pos = read_element(data, pos)
            out.append(item)
        return out, pos
    return read


def _empty_tags(data: bytes, pos: int) -> tuple[dict[int, bytes], int]:
    if data[pos] != 0:
        raise _HandOver  # tagged fields present: construct and the schema's TagSpecs decide
    return {}, pos + 1


def _unwrap(sub: Any) -> Any:
    return sub.subcon if isinstance(sub, c.Renamed) else sub


def _compile(sub: Any) -> Reader:
    """The reader of one construct; ``_HandOver`` at compile time = a shape not handled here."""
    sub = _unwrap(sub)
    if isinstance(sub, c.Struct):
        return _struct_reader(sub)
    if isinstance(sub, primitives._Utf8) and isinstance(sub.subcon,
                                                        primitives._LengthPrefixedBytes):
        return _bytes_reader(sub.subcon, text=True)
    if isinstance(sub, primitives._LengthPrefixedBytes):
        return _bytes_reader(sub, text=False)
    if isinstance(sub, primitives._Array):
        return _array_reader(sub)
    if isinstance(sub, primitives._TaggedFields):
        return _empty_tags
    raise _HandOver


def _struct_reader(layout: c.Struct) -> Reader:
    # Steps: a run of fixed-width integers (one unpack_from) or one named variable-size field.
    steps: list[Callable[[bytes, int, Fields], int]] = []
    run: list[tuple[str, str]] = []

    def close_run() -> None:
        if run:
            steps.append(_fixed_step(struct.Struct(">" + "".join(code for _, code in run)),
                                     tuple(name for name, _ in run)))
            run.clear()

    for field in layout.subcons:
        if not isinstance(field, c.Renamed) or not field.name:
            raise _HandOver
        inner = field.subcon
        if isinstance(inner, c.FormatField) and inner.fmtstr[0] == ">":
            run.append((field.name, inner.fmtstr[1:]))
            continue
        close_run()
        steps.append(_field_step(field.name, _compile(inner)))
    close_run()

    def read(data: bytes, pos: int) -> tuple[Fields, int]:
        out = Fields()
        for step in steps:
            pos = step(data, pos, out)
        return out, pos
    return read


def _fixed_step(layout: struct.Struct, names: tuple[str, ...]) -> Callable[[bytes, int, Fields],
                                                                           int]:
    unpack_from, size = layout.unpack_from, layout.size

    def step(data: bytes, pos: int, out: Fields) -> int:
        out.update(zip(names, unpack_from(data, pos), strict=False))  # same length: one layout
        return pos + size
    return step


def _field_step(name: str, reader: Reader) -> Callable[[bytes, int, Fields], int]:
    def step(data: bytes, pos: int, out: Fields) -> int:
        out[name], pos = reader(data, pos)
        return pos
    return step


_READERS: dict[int, tuple[c.Construct, Reader | None]] = {}


def reader_of(layout: c.Construct) -> Reader | None:
    """The compiled reader of ``layout`` (cached), ``None`` if it has a shape not handled here."""
    cached = _READERS.get(id(layout))
    if cached is not None and cached[0] is layout:
        return cached[1]
    try:
        reader: Reader | None = _compile(layout)
    except _HandOver:
        reader = None
    _READERS[id(layout)] = (layout, reader)
    return reader


def read_fast(layout: c.Construct, data: bytes) -> Any | None:
    """``layout`` parsed from all of ``data`` by the compiled reader, or ``None``: hand over."""
    cached = _READERS.get(id(layout))
    reader = cached[1] if cached is not None and cached[0] is layout else reader_of(layout)
    if reader is None:
        return None
    try:
        value, end = reader(data, 0)
    except _REFUSED:
        return None
    return value if end == len(data) else None


def parse_exact(layout: c.Construct, data: bytes, *, what: str, path: str | None = None,
                base: int = 0) -> Any:
    """``primitives.parse_exact`` through the compiled reader where it decides."""
    value = read_fast(layout, data)
    if value is not None:
        return value
    return primitives.parse_exact(layout, data, what=what, path=path, base=base)
