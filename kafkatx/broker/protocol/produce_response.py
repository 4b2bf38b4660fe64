"""The Produce response body (v0..v12) written directly with ``struct``: the broker's hot path.

kio's generic writer spends ~35 us on the three nested entities of a one-partition response
(about a fifth of a small produce request); this writes the same bytes in a few. Layout from
Kafka's ``ProduceResponse.json`` as kio generates it (v0-v2 as
:mod:`kafkatx.broker.wire.legacy_schema`
does): ``LogAppendTimeMs`` from v2, ``ThrottleTimeMs`` from v1, ``LogStartOffset`` from v5,
``RecordErrors`` and ``ErrorMessage`` from v8, flexible (compact lengths, tagged fields) from v9;
the v10+ tagged fields (``CurrentLeader``, ``NodeEndpoints``) keep their defaults and are not
written, as Kafka omits default-valued tags. ``tests/broker/test_produce_response.py`` checks it
byte for byte against kio for every version.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from kafkatx.lazy_dataclass import dataclass

_PARTITION = struct.Struct(">ihq")  # index, error code, base offset
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
FIRST_VERSION = 0
LAST_VERSION = 12
_FIRST_FLEXIBLE = 9


@dataclass(frozen=True, slots=True)
class PartitionResult:
    """One ``PartitionProduceResponse``: -1 for a log append time or log start offset that is
    not known, ``error_message`` None when there is none, ``record_errors`` the
    (batch index, message) of each record Kafka's ``LogValidator`` refused."""

    index: int
    error_code: int
    base_offset: int
    log_append_time: int
    log_start_offset: int
    error_message: str | None
    record_errors: tuple[tuple[int, str | None], ...] = ()


def _uvarint(out: bytearray, value: int) -> None:
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _length(out: bytearray, count: int, flexible: bool) -> None:
    """An array length or a non-null string/bytes length."""
    if flexible:
        _uvarint(out, count + 1)
    else:
        out += _I32.pack(count)


def _string(out: bytearray, value: str, flexible: bool) -> None:
    data = value.encode()
    if flexible:
        _uvarint(out, len(data) + 1)
    else:
        out += _I16.pack(len(data))
    out += data


def _nullable_string(out: bytearray, value: str | None, flexible: bool) -> None:
    if value is not None:
        _string(out, value, flexible)
    elif flexible:
        out.append(0)
    else:
        out += _I16.pack(-1)


def encode_produce_response(
        version: int, topics: Sequence[tuple[str, Sequence[PartitionResult]]]) -> bytearray:
    """The body of a ``ProduceResponse`` of ``version`` (throttle time 0)."""
    if not FIRST_VERSION <= version <= LAST_VERSION:
        raise ValueError(f"Produce response v{version} is not written here")
    flexible = version >= _FIRST_FLEXIBLE
    out = bytearray()
    _length(out, len(topics), flexible)
    for name, partitions in topics:
        _string(out, name, flexible)
        _length(out, len(partitions), flexible)
        for p in partitions:
            out += _PARTITION.pack(p.index, p.error_code, p.base_offset)
            if version >= 2:
                out += _I64.pack(p.log_append_time)
            if version >= 5:
                out += _I64.pack(p.log_start_offset)
            if version >= 8:
                _length(out, len(p.record_errors), flexible)
                for batch_index, message in p.record_errors:
                    out += _I32.pack(batch_index)
                    _nullable_string(out, message, flexible)
                    if flexible:
                        out.append(0)
                _nullable_string(out, p.error_message, flexible)
            if flexible:
                out.append(0)  # no tagged fields
        if flexible:
            out.append(0)
    if version >= 1:
        out += _I32.pack(0)  # ThrottleTimeMs
    if flexible:
        out.append(0)
    return out
