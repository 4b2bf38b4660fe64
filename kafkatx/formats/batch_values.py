"""The v2 record batch's "none" values, control record types and sequence arithmetic.

Mirrors ``org.apache.kafka.common.record.RecordBatch`` (``NO_PRODUCER_ID`` and the others),
``ControlRecordType`` and ``DefaultRecordBatch.incrementSequence``. Apart from the parser
(:mod:`kafkatx.formats.record_batch`, which gives them too) so that the columnar analysis uses
them without loading construct.
"""

from __future__ import annotations

import enum

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1
INT32_MAX = 2**31 - 1


class ControlType(enum.IntEnum):
    """Kafka's ``ControlRecordType`` ids."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


def control_type_name(type_id: int) -> str:
    """``ControlRecordType.fromTypeId``'s name, ``UNKNOWN`` for an id it does not know."""
    try:
        return ControlType(type_id).name
    except ValueError:
        return "UNKNOWN"


def increment_sequence(sequence: int, increment: int) -> int:
    """``DefaultRecordBatch.incrementSequence``: sequences wrap from INT32_MAX to 0, in Java's
    32-bit int arithmetic (what a damaged header's negative delta gives, as the scan's
    ``HeaderColumns.last_sequence``)."""
    if sequence > _java_int(INT32_MAX - increment):
        return _java_int(increment - (INT32_MAX - sequence) - 1)
    return _java_int(sequence + increment)


def _java_int(value: int) -> int:
    """``value`` wrapped into a Java int (two's complement overflow)."""
    return (value + 2**31) % 2**32 - 2**31
