"""The authorized-operations bit fields a broker without an authorizer reports.

Mirrors ``AuthHelper#authorizedOperations`` with no ``authorizer.class.name``: every operation
``AclEntry.supportedOperations`` lists for the resource type is allowed, and the set is packed
with ``Utils#to32BitField`` (bit ``1 << AclOperation.code``). The sets are Kafka 3.x's; Kafka 4.0
(KAFKA-14510, group configs) adds DESCRIBE_CONFIGS and ALTER_CONFIGS to GROUP. A field nobody
asked for keeps the schema default ``Integer.MIN_VALUE``.
"""

from __future__ import annotations

from enum import IntEnum

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)  # the schemas' default: "not requested"


class AclOperation(IntEnum):
    """``org.apache.kafka.common.acl.AclOperation`` codes."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


_OP = AclOperation
TOPIC_OPERATIONS = frozenset({_OP.READ, _OP.WRITE, _OP.CREATE, _OP.DESCRIBE, _OP.DELETE,
                              _OP.ALTER, _OP.DESCRIBE_CONFIGS, _OP.ALTER_CONFIGS})
GROUP_OPERATIONS = frozenset({_OP.READ, _OP.DESCRIBE, _OP.DELETE})
CLUSTER_OPERATIONS = frozenset({_OP.CREATE, _OP.CLUSTER_ACTION, _OP.DESCRIBE_CONFIGS,
                                _OP.ALTER_CONFIGS, _OP.IDEMPOTENT_WRITE, _OP.ALTER,
                                _OP.DESCRIBE})


def to_32bit_field(operations: frozenset[AclOperation]) -> int:
    """``Utils#to32BitField``."""
    value = 0
    for op in operations:
        value |= 1 << int(op)
    return value


TOPIC_AUTHORIZED_OPERATIONS = to_32bit_field(TOPIC_OPERATIONS)  # 3576
GROUP_AUTHORIZED_OPERATIONS = to_32bit_field(GROUP_OPERATIONS)  # 328
CLUSTER_AUTHORIZED_OPERATIONS = to_32bit_field(CLUSTER_OPERATIONS)  # 8096
