"""What a partition log's appends, reads and offset lookups return or raise, and the special
timestamps and offsets of ListOffsets and DeleteRecords (Kafka's ``LogAppendInfo``,
``FetchDataInfo``, ``TimestampAndOffset``)."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from kafkatx.broker.config.broker_config import DEFAULT_SEGMENT_MS
from kafkatx.broker.logs.batch_header import (
    BatchHeader,
)
from kafkatx.lazy_dataclass import dataclass
from kafkatx.semantics.producer_state import (
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    ProducerStateError,
    TransactionCoordinatorFencedError,
)
from kafkatx.semantics.read_committed import (
    AbortedTransaction,
)

EARLIEST_TIMESTAMP = -2  # ListOffsetsRequest.EARLIEST_TIMESTAMP
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3
NO_TIMESTAMP = -1
HIGH_WATERMARK = -1  # DeleteRecordsRequest.HIGH_WATERMARK
_CACHED_TABLES = 8

_PRODUCER_STATE_ERRORS: dict[type[ProducerStateError], ErrorCode] = {
    OutOfOrderSequenceError: ErrorCode.out_of_order_sequence_number,
    InvalidProducerEpochError: ErrorCode.invalid_producer_epoch,
    InvalidTxnStateError: ErrorCode.invalid_txn_state,
    TransactionCoordinatorFencedError: ErrorCode.transaction_coordinator_fenced,
}


class AppendError(Exception):
    """An append the leader refuses, with the Kafka error code its exception maps to;
    ``record_errors`` (batch index, message) for a ``RecordValidationException``, which Kafka
    answers with the partition's log start offset (``ReplicaManager#appendToLocalLog``)."""

    def __init__(self, error: ErrorCode, message: str, *,
                 record_errors: tuple[tuple[int, str | None], ...] = (),
                 log_start_offset: int = -1) -> None:
        super().__init__(message)
        self.error = error
        self.message = message
        self.record_errors = record_errors
        self.log_start_offset = log_start_offset


@dataclass(frozen=True, slots=True, kw_only=True)
class LogConfig:
    """The topic configs this log acts on (``LogConfig``)."""

    segment_bytes: int
    max_message_bytes: int
    log_append_time: bool = False  # message.timestamp.type=LogAppendTime
    segment_ms: int = DEFAULT_SEGMENT_MS  # segment.ms (log.roll.ms)
    delete: bool = True  # cleanup.policy includes "delete" (LogConfig#delete)
    compact: bool = False  # cleanup.policy includes "compact" (LogConfig#compact)
    retention_ms: int = 604_800_000  # retention.ms (-1: no time limit)
    retention_bytes: int = -1  # retention.bytes (-1: no size limit)
    delete_retention_ms: int = 86_400_000  # delete.retention.ms (tombstones, markers)
    min_cleanable_dirty_ratio: float = 0.5  # min.cleanable.dirty.ratio
    min_compaction_lag_ms: int = 0  # min.compaction.lag.ms
    max_compaction_lag_ms: int = 2**63 - 1  # max.compaction.lag.ms


@dataclass(frozen=True, slots=True, kw_only=True)
class AppendResult:
    """``LogAppendInfo`` as the produce response needs it."""

    first_offset: int
    last_offset: int
    log_append_time: int
    log_start_offset: int
    duplicate: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadResult:
    """``LogReadInfo``: bytes (possibly ending in a partial batch, as Kafka's slice can) and
    offsets; ``aborted_transactions`` is None unless the read was read_committed;
    ``first_entry_incomplete`` when the first batch did not fit (``FetchDataInfo``)."""

    records: bytes
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    aborted_transactions: list[AbortedTransaction] | None
    first_entry_incomplete: bool = False


@dataclass(frozen=True, slots=True)
class OffsetAndTimestamp:
    offset: int
    timestamp: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class StoredBatch:
    """One batch as stored: its header (position in ``data``) and its bytes."""

    header: BatchHeader
    data: bytes
