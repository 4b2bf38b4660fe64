"""Which ``__transaction_state`` / ``__consumer_offsets`` partition owns a transactional id / group.

Mirrors ``TransactionStateManager#partitionFor`` (``Utils.abs(transactionalId.hashCode) %
transactionTopicPartitionCount``) and ``GroupCoordinatorService#partitionFor`` (the same formula
over the group id and ``offsets.topic.num.partitions``); both topics default to 50 partitions
(``TransactionLogConfig.TRANSACTIONS_TOPIC_PARTITIONS_DEFAULT``,
``GroupCoordinatorConfig.OFFSETS_TOPIC_PARTITIONS_DEFAULT``).
"""

from __future__ import annotations

DEFAULT_NUM_PARTITIONS = 50
INT32_MIN = -(2**31)


def java_string_hashcode(s: str) -> int:
    """``java.lang.String#hashCode``: s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, int32.

    Characters outside the BMP count as their surrogate pair, as Java stores them.
    """
    data = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - 2**32 if h >= 2**31 else h


def java_utils_abs(n: int) -> int:
    """Kafka ``Utils.abs``: like ``Math.abs`` but Integer.MIN_VALUE maps to 0, not to itself."""
    return 0 if n == INT32_MIN else abs(n)


def partition_for(key: str, num_partitions: int = DEFAULT_NUM_PARTITIONS) -> int:
    """The coordinator partition of a transactional id or group id."""
    if num_partitions < 1:
        raise ValueError(f"num_partitions must be >= 1, not {num_partitions}")
    return java_utils_abs(java_string_hashcode(key)) % num_partitions
