"""Kafka's ``TransactionState`` ids and names, as ``__transaction_state`` values hold them.

Mirrors ``org.apache.kafka.coordinator.transaction.TransactionState``. Apart from the record
layouts (:mod:`kafkatx.formats.transaction_log`, which gives them too) so that joining data
partitions without a coordinator partition does not load construct.
"""

from __future__ import annotations

import enum


class TransactionState(enum.IntEnum):
    """Kafka's ``TransactionState`` ids; ``str()`` / ``kafka_name`` give Kafka's names."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        return _KAFKA_NAMES[self]

    @classmethod
    def from_kafka_name(cls, name: str) -> TransactionState:
        for state, kafka_name in _KAFKA_NAMES.items():
            if kafka_name == name:
                return state
        raise ValueError(f"unknown transaction state name {name!r}")

    def __str__(self) -> str:
        return _KAFKA_NAMES[self]


_KAFKA_NAMES: dict[TransactionState, str] = {
    TransactionState.EMPTY: "Empty",
    TransactionState.ONGOING: "Ongoing",
    TransactionState.PREPARE_COMMIT: "PrepareCommit",
    TransactionState.PREPARE_ABORT: "PrepareAbort",
    TransactionState.COMPLETE_COMMIT: "CompleteCommit",
    TransactionState.COMPLETE_ABORT: "CompleteAbort",
    TransactionState.DEAD: "Dead",
    TransactionState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
