"""Appending a coordinator's records to its partition of an internal topic.

Mirrors what ``TransactionStateManager#appendTransactionToLog`` and
``GroupMetadataManager#storeGroup`` / ``storeOffsets`` hand to ``ReplicaManager#appendRecords``:
one uncompressed v2 batch (``MemoryRecords#withRecords`` / ``MemoryRecords#builder``) with
CreateTime, appended with origin COORDINATOR (internal topics allowed, acks=-1), and the error
each coordinator reports when the append fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from kafkatx.broker.logs.log_values import AppendError, AppendResult
from kafkatx.formats.record_batch import NO_PRODUCER_EPOCH, NO_PRODUCER_ID, NO_SEQUENCE, Record
from kafkatx.formats.record_batch import build_batch as _build_batch
from kafkatx.semantics.producer_state import AppendOrigin

if TYPE_CHECKING:
    from kafkatx.broker.logdir.log_manager import LogManager

KeyValue = tuple[bytes, bytes | None]


class CoordinatorAppendError(Exception):
    """An append a coordinator could not make, with the Kafka error it maps to."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error


def build_batch(records: Sequence[KeyValue], now_ms: int, *, producer_id: int = NO_PRODUCER_ID,
                producer_epoch: int = NO_PRODUCER_EPOCH, base_sequence: int = NO_SEQUENCE,
                transactional: bool = False) -> bytes:
    return _build_batch(
        [Record(offset=i, timestamp=now_ms, key=k, value=v) for i, (k, v) in enumerate(records)],
        base_offset=0, producer_id=producer_id, producer_epoch=producer_epoch,
        base_sequence=base_sequence, is_transactional=transactional)


def append(logs: LogManager, topic: str, partition: int, batch: bytes,
           now_ms: int) -> AppendResult:
    """Append ``batch`` to ``topic``-``partition`` (created on first use) as the coordinator.

    Raises ``CoordinatorAppendError`` with the log-append error as Kafka's coordinators see it
    (``AppendError`` codes as they are, a storage failure as KAFKA_STORAGE_ERROR)."""
    try:
        log = logs.internal_log(topic, partition)
        return log.append_as_leader(batch, now_ms, origin=AppendOrigin.COORDINATOR)
    except AppendError as exc:
        raise CoordinatorAppendError(exc.error, exc.message) from None
    except OSError as exc:
        raise CoordinatorAppendError(ErrorCode.kafka_storage_error, str(exc)) from None
