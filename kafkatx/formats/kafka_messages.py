"""A generic reader/writer for Kafka's generated message classes, driven by a schema table.

Mirrors what Kafka's ``MessageGenerator`` emits for a JSON message schema (``read(Readable,
short version)`` / ``write(Writable, ObjectSerializationCache, short version)``): fields in schema
order, each present only in its ``versions``; from the message's first flexible version on,
strings/bytes/arrays are compact (unsigned varint length + 1, 0 = null) and every struct ends
with a tagged-field section (uvarint count, then uvarint tag, uvarint size, bytes; tags strictly
increasing). A tagged field is written only when it differs from its default. A nullable struct
starts with a marker: an int8 (-1 null, 1 present), or in a tagged field an unsigned varint (0
null, 1 present). Tags a schema does
not know are kept as raw bytes and written back unchanged.

Values are plain dicts with snake_case field names (``LeaderRecoveryState`` ->
``leader_recovery_state``); uuids are Kafka's ``Uuid#toString`` (22-character URL-safe base64),
``bytes`` fields are ``bytes``. Unknown tags are under ``UNKNOWN_TAGS`` as ``{tag: bytes}``.
"""

from __future__ import annotations

import base64
import functools
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import field
from typing import Any

from kafkatx.errors import FormatError
from kafkatx.formats.checkpoints import ZERO_UUID, uuid_from_bytes, uuid_to_bytes
from kafkatx.formats.primitives import encode_uvarint, read_uvarint
from kafkatx.lazy_dataclass import dataclass

UNKNOWN_TAGS = "_unknown_tagged_fields"

_FIXED = {
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "uint16": struct.Struct(">H"),
    "int32": struct.Struct(">i"),
    "uint32": struct.Struct(">I"),
    "int64": struct.Struct(">q"),
    "float64": struct.Struct(">d"),
}
_SCALARS = (*_FIXED, "bool", "uuid", "string", "bytes")


class Versions:
    """A Kafka version range string: ``"0+"``, ``"1-3"``, ``"2"``, or ``"none"``."""

    __slots__ = ("high", "low", "text")

    def __init__(self, text: str | None) -> None:
        self.text = text or "none"
        if self.text == "none":
            self.low, self.high = 1, 0  # empty
        elif self.text.endswith("+"):
            self.low, self.high = int(self.text[:-1]), 2**15 - 1
        elif "-" in self.text:
            lo, hi = self.text.split("-")
            self.low, self.high = int(lo), int(hi)
        else:
            self.low = self.high = int(self.text)

    def __contains__(self, version: int) -> bool:
        return self.low <= version <= self.high

    def __repr__(self) -> str:
        return f"Versions({self.text!r})"


@functools.cache
def versions(text: str | None) -> Versions:
    """A parsed version range, shared (ranges are immutable in use)."""
    return Versions(text)


@functools.cache
def snake_case(name: str) -> str:
    """Kafka's CamelCase field name in snake_case (``KRaftVersion`` -> ``kraft_version``)."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name.replace("KRaft", "Kraft"))
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


@dataclass(frozen=True)
class Field:
    """One field of a message schema, as in Kafka's JSON (names in Kafka's CamelCase).

    ``type`` is a scalar (``int32``, ``string``, ``uuid``, ...), ``[]scalar``, ``[]Struct`` or
    ``Struct`` (the last two with ``fields``). ``default`` is the schema's default as a Python
    value (``None`` for ``"null"``); when absent, Kafka's implicit default for the type.
    """

    name: str
    type: str
    versions: str
    nullable_versions: str | None = None
    tagged_versions: str | None = None
    tag: int | None = None
    default: Any = field(default=...)
    fields: tuple[Field, ...] = ()

    @functools.cached_property
    def key(self) -> str:
        return snake_case(self.name)

    @functools.cached_property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @functools.cached_property
    def element(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @functools.cached_property
    def is_struct(self) -> bool:
        return self.element not in _SCALARS

    def default_value(self) -> Any:
        if self.default is not ...:
            return self.default
        if self.is_array:
            return []
        if self.is_struct:
            return default_struct(self.fields)
        return _SCALAR_DEFAULTS[self.type]


_SCALAR_DEFAULTS: dict[str, Any] = {
    **{t: 0 for t in _FIXED}, "float64": 0.0, "bool": False, "uuid": ZERO_UUID, "string": "",
    "bytes": b"",
}


@dataclass(frozen=True, slots=True)
class MessageSchema:
    """A message of Kafka's JSON schemas: name, api key (metadata records), versions, fields."""

    name: str
    valid_versions: str
    flexible_versions: str
    fields: tuple[Field, ...]
    api_key: int | None = None

    @property
    def versions(self) -> range:
        v = versions(self.valid_versions)
        return range(v.low, v.high + 1)


def default_struct(fields: Sequence[Field]) -> dict[str, Any]:
    return {f.key: f.default_value() for f in fields}


def default_message(schema: MessageSchema) -> dict[str, Any]:
    return default_struct(schema.fields)


# ---------------------------------------------------------------------------------------------
# Reading


class _Reader:
    __slots__ = ("base", "buf", "end", "path", "pos")

    def __init__(self, buf: bytes, pos: int, end: int, path: str | None, base: int) -> None:
        self.buf, self.pos, self.end, self.path, self.base = buf, pos, end, path, base

    def fail(self, message: str, what: str, at: int | None = None) -> FormatError:
        return FormatError(message, path=self.path,
                           position=self.base + (self.pos if at is None else at), field=what)

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or self.pos + n > self.end:
            raise self.fail(f"needs {n} bytes, {self.end - self.pos} remain (truncated)", what)
        out = self.buf[self.pos : self.pos + n]
        self.pos += n
        return out

    def uvarint(self, what: str) -> int:
        try:
            value, self.pos = read_uvarint(self.buf[: self.end], self.pos)
        except FormatError as exc:
            raise self.fail(exc.message, what) from None
        return value


def read_message(
    schema: MessageSchema, version: int, data: bytes, *, path: str | None = None,
    base: int = 0, exact: bool = True,
) -> tuple[dict[str, Any], int]:
    """Decode ``data`` as ``schema`` at ``version``; return (values, bytes consumed).

    With ``exact`` (Kafka's serdes check ``remaining() == 0``), bytes left over are an error.
    """
    if version not in versions(schema.valid_versions):
        raise FormatError(f"{schema.name} has no version {version} (valid: "
                          f"{schema.valid_versions})", path=path, position=base,
                          field=schema.name)
    r = _Reader(bytes(data), 0, len(data), path, base)
    flexible = version in versions(schema.flexible_versions)
    values = _read_struct(r, schema.fields, version, flexible, schema.name)
    if exact and r.pos != r.end:
        raise r.fail(f"{r.end - r.pos} byte(s) left after the {schema.name}", schema.name)
    return values, r.pos


@dataclass(frozen=True, slots=True)
class _Plan:
    """How one struct reads at one version: (key, field, path or None for "absent: default",
    nullable) in schema order, and the tagged fields by tag."""

    steps: tuple[tuple[str, Field, str | None, bool], ...]
    tagged: dict[int, tuple[Field, str, bool]]


_PLANS: dict[tuple[int, int, bool, str], tuple[_Plan, Sequence[Field]]] = {}


def _plan(fields: Sequence[Field], version: int, flexible: bool, what: str) -> _Plan:
    key = (id(fields), version, flexible, what)
    hit = _PLANS.get(key)
    if hit is not None:
        return hit[0]
    steps = []
    tagged = {}
    for f in fields:
        nullable = version in versions(f.nullable_versions)
        path = f"{what}.{f.name}"
        if f.tag is not None and flexible and version in versions(f.tagged_versions):
            tagged[f.tag] = (f, path, nullable)
            steps.append((f.key, f, None, nullable))
        elif version in versions(f.versions):
            steps.append((f.key, f, path, nullable))
        else:
            steps.append((f.key, f, None, nullable))
    plan = _Plan(tuple(steps), tagged)
    _PLANS[key] = (plan, fields)  # the fields kept alive: their id stays theirs
    return plan


def _read_struct(r: _Reader, fields: Sequence[Field], version: int, flexible: bool,
                 what: str) -> dict[str, Any]:
    plan = _plan(fields, version, flexible, what)
    out: dict[str, Any] = {}
    for key, f, path, nullable in plan.steps:
        out[key] = (f.default_value() if path is None
                    else _read_value(r, f, version, flexible, path, nullable))
    if flexible:
        count = r.uvarint(f"{what} tagged fields")
        last = -1
        unknown: dict[int, bytes] = {}
        for _ in range(count):
            at = r.pos
            tag = r.uvarint(f"{what} tag")
            if tag <= last:
                raise r.fail(f"tagged field {tag} out of order", what, at)
            last = tag
            size = r.uvarint(f"{what} tag {tag} size")
            raw = r.take(size, f"{what} tag {tag}")
            known = plan.tagged.get(tag)
            if known is None:
                unknown[tag] = raw
                continue
            field_, path, nullable = known
            sub = _Reader(raw, 0, len(raw), r.path, r.base + r.pos - size)
            out[field_.key] = _read_value(sub, field_, version, True, path, nullable,
                                          tagged=True)
            if sub.pos != sub.end:
                raise sub.fail(f"{sub.end - sub.pos} byte(s) left in tagged field {tag}",
                               field_.name)
        if unknown:
            out[UNKNOWN_TAGS] = unknown
    return out


def _read_value(r: _Reader, f: Field, version: int, flexible: bool, what: str,
                nullable: bool, *, tagged: bool = False) -> Any:
    if f.is_struct and not f.is_array and nullable:
        # The generator's null marker: an unsigned varint (0: null) in a tagged field, else an
        # int8 (negative: null).
        present = (r.uvarint(what) > 0 if tagged
                   else _FIXED["int8"].unpack(r.take(1, what))[0] >= 0)
        if not present:
            return None
    if f.is_array:
        n = r.uvarint(what) - 1 if flexible else _FIXED["int32"].unpack(r.take(4, what))[0]
        if n < 0:
            if n == -1 and nullable:
                return None
            raise r.fail(f"invalid array length {n}", what)
        if f.is_struct:
            return [_read_struct(r, f.fields, version, flexible, what) for _ in range(n)]
        return [_read_scalar(r, f.element, False, flexible, what) for _ in range(n)]
    if f.is_struct:
        return _read_struct(r, f.fields, version, flexible, what)
    return _read_scalar(r, f.type, nullable, flexible, what)


def _read_scalar(r: _Reader, kind: str, nullable: bool, flexible: bool, what: str) -> Any:
    fixed = _FIXED.get(kind)
    if fixed is not None:
        return fixed.unpack(r.take(fixed.size, what))[0]
    if kind == "bool":
        return r.take(1, what) != b"\x00"
    if kind == "uuid":
        return uuid_from_bytes(r.take(16, what))
    if flexible:
        n = r.uvarint(what) - 1
    else:
        width = 2 if kind == "string" else 4
        n = int.from_bytes(r.take(width, what), "big", signed=True)
    if n < 0:
        if n == -1 and nullable:
            return None
        raise r.fail(f"invalid {kind} length {n}", what)
    raw = r.take(n, what)
    if kind == "bytes":
        return raw
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise r.fail(f"invalid UTF-8 at byte {exc.start} of a string", what) from None


# ---------------------------------------------------------------------------------------------
# Writing


def write_message(schema: MessageSchema, version: int, values: Mapping[str, Any]) -> bytes:
    """Encode ``values`` as ``schema`` at ``version`` (missing fields take their defaults).

    A non-default value in a field the version does not have is a ``ValueError``, as Kafka's
    writer throws ``UnsupportedVersionException``.
    """
    if version not in versions(schema.valid_versions):
        raise ValueError(f"{schema.name} has no version {version}")
    out = bytearray()
    _write_struct(out, schema.fields, version,
                  version in versions(schema.flexible_versions), values, schema.name)
    return bytes(out)


def _write_struct(out: bytearray, fields: Sequence[Field], version: int, flexible: bool,
                  values: Mapping[str, Any], what: str) -> None:
    tagged: dict[int, bytes] = {}
    for f in fields:
        value = values[f.key] if f.key in values else f.default_value()
        if f.tag is not None and flexible and version in versions(f.tagged_versions):
            if value != f.default_value():
                buf = bytearray()
                _write_value(buf, f, version, True, value, f"{what}.{f.name}", tagged=True)
                tagged[f.tag] = bytes(buf)
        elif version in versions(f.versions):
            _write_value(out, f, version, flexible, value, f"{what}.{f.name}")
        elif value != f.default_value():
            raise ValueError(f"{what}.{f.name} cannot be written at version {version}")
    if flexible:
        unknown = values.get(UNKNOWN_TAGS) or {}
        for tag, raw in unknown.items():
            if tag in tagged:
                raise ValueError(f"{what}: unknown tag {tag} is a known field")
            tagged[int(tag)] = bytes(raw)
        out += encode_uvarint(len(tagged))
        for tag in sorted(tagged):
            out += encode_uvarint(tag) + encode_uvarint(len(tagged[tag])) + tagged[tag]
    elif values.get(UNKNOWN_TAGS):
        raise ValueError(f"{what}: tagged fields need a flexible version")


def _write_value(out: bytearray, f: Field, version: int, flexible: bool, value: Any,
                 what: str, *, tagged: bool = False) -> None:
    nullable = version in versions(f.nullable_versions)
    if value is None and not nullable:
        raise ValueError(f"{what} is not nullable at version {version}")
    if f.is_struct and not f.is_array and nullable:
        present = value is not None
        out += (encode_uvarint(1 if present else 0) if tagged
                else _FIXED["int8"].pack(1 if present else -1))
        if not present:
            return
    if f.is_array:
        if value is None:
            out += encode_uvarint(0) if flexible else _FIXED["int32"].pack(-1)
            return
        out += encode_uvarint(len(value) + 1) if flexible else _FIXED["int32"].pack(len(value))
        for item in value:
            if f.is_struct:
                _write_struct(out, f.fields, version, flexible, item, what)
            else:
                _write_scalar(out, f.element, item, flexible, what)
        return
    if f.is_struct:
        _write_struct(out, f.fields, version, flexible, value, what)
        return
    _write_scalar(out, f.type, value, flexible, what)


def _write_scalar(out: bytearray, kind: str, value: Any, flexible: bool, what: str) -> None:
    fixed = _FIXED.get(kind)
    if fixed is not None:
        try:
            out += fixed.pack(value)
        except struct.error as exc:
            raise ValueError(f"{what}: {value!r} is not a {kind} ({exc})") from None
        return
    if kind == "bool":
        out.append(1 if value else 0)
        return
    if kind == "uuid":
        try:
            out += uuid_to_bytes(value)
        except FormatError as exc:
            raise ValueError(f"{what}: {exc.message}") from None
        return
    if value is None:
        out += encode_uvarint(0) if flexible else (b"\xff\xff" if kind == "string"
                                                   else b"\xff\xff\xff\xff")
        return
    raw = value.encode("utf-8") if kind == "string" else bytes(value)
    if flexible:
        out += encode_uvarint(len(raw) + 1)
    elif kind == "string":
        if len(raw) > 0x7FFF:
            raise ValueError(f"{what}: string of {len(raw)} bytes is too long")
        out += _FIXED["int16"].pack(len(raw))
    else:
        out += _FIXED["int32"].pack(len(raw))
    out += raw


# ---------------------------------------------------------------------------------------------
# JSON


def to_json(values: Any) -> Any:
    """Values as JSON-ready data: bytes as base64, unknown tags as ``{"tag": base64}``."""
    if isinstance(values, dict):
        out = {}
        for k, v in values.items():
            if k == UNKNOWN_TAGS:
                out["unknown_tagged_fields"] = {
                    str(t): base64.b64encode(b).decode("ascii") for t, b in v.items()}
            else:
                out[k] = to_json(v)
        return out
    if isinstance(values, list):
        return [to_json(v) for v in values]
    if isinstance(values, bytes):
        return base64.b64encode(values).decode("ascii")
    return values
