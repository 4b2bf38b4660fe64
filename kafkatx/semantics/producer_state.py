"""Kafka's partition-leader producer state: the one copy of these rules in kafkatx.

Mirrors ``org.apache.kafka.storage.internals.log``: ``BatchMetadata``, ``ProducerStateEntry``,
``ProducerAppendInfo``, ``TxnMetadata``, ``CompletedTxn`` and ``ProducerStateManager`` (Kafka
4.x). Pure and I/O-free: the forensic replay (``kafkatx.analysis``) and the embedded broker
(``kafkatx serve``) both run this code.

Validation follows the append origin exactly as Kafka does (CLIENT: epoch + sequence checks,
COORDINATOR: epoch only, REPLICATION: epoch problems only logged). Forensics adds one thing
Kafka has no need for: an ``audit`` callback that receives every rule a batch breaks, including
the CLIENT-only sequence rule evaluated for REPLICATION-origin replays, without changing what
the state becomes.
"""

from __future__ import annotations

import bisect
import enum
from collections import deque
from collections.abc import Callable, Iterator
from typing import NamedTuple

from kafkatx.formats.batch_values import (
    INT32_MAX,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    increment_sequence,
)
from kafkatx.formats.producer_snapshot import ProducerSnapshotEntry
from kafkatx.lazy_dataclass import dataclass

NUM_BATCHES_TO_RETAIN = 5  # ProducerStateEntry.NUM_BATCHES_TO_RETAIN
TV_UNKNOWN = -1  # TransactionVersion.TV_UNKNOWN: what data batches and replicated markers carry
LATE_TRANSACTION_BUFFER_MS = 5 * 60 * 1000  # ProducerStateManager.LATE_TRANSACTION_BUFFER_MS
DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000  # producer.id.expiration.ms


class AppendOrigin(enum.Enum):
    """``AppendOrigin``: who is appending, which decides how much is validated."""

    CLIENT = "client"
    COORDINATOR = "coordinator"
    REPLICATION = "replication"
    RAFT_LEADER = "raft_leader"  # the KRaft leader appending to __cluster_metadata


# Violation kinds (stable names; the forensic checks turn them into findings).
INVALID_EPOCH = "invalid_epoch"
SEQUENCE_GAP = "sequence_gap"
INVALID_TXN_STATE = "invalid_txn_state"
COORDINATOR_FENCED = "coordinator_epoch_regression"


class Violation(NamedTuple):
    """A rule of ProducerAppendInfo that a batch broke, at ``offset``."""

    kind: str
    producer_id: int
    producer_epoch: int
    offset: int
    message: str


class ProducerStateError(Exception):
    """A batch the partition leader would refuse (Kafka's exception named in ``kafka_error``)."""

    kafka_error = "KafkaException"

    def __init__(self, violation: Violation) -> None:
        super().__init__(violation.message)
        self.violation = violation


class InvalidProducerEpochError(ProducerStateError):
    kafka_error = "InvalidProducerEpochException"


class OutOfOrderSequenceError(ProducerStateError):
    kafka_error = "OutOfOrderSequenceException"


class InvalidTxnStateError(ProducerStateError):
    kafka_error = "InvalidTxnStateException"


class TransactionCoordinatorFencedError(ProducerStateError):
    kafka_error = "TransactionCoordinatorFencedException"


def decrement_sequence(sequence: int, decrement: int) -> int:
    """``DefaultRecordBatch.decrementSequence``."""
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def in_sequence(last_seq: int, next_seq: int) -> bool:
    """``ProducerAppendInfo#inSequence`` (computed without int overflow, as Kafka does with 1L)."""
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class BatchMetadata(NamedTuple):
    """``BatchMetadata``: what is remembered of one of a producer's last five batches."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass(slots=True)
class VerificationStateEntry:
    """``VerificationStateEntry`` (KIP-890 partition verification), as far as appends use it."""

    lowest_sequence: int
    supports_epoch_bump: bool


class ProducerStateEntry:
    """``ProducerStateEntry``: a producer's epoch, coordinator epoch, last batches, open txn."""

    __slots__ = ("batch_metadata", "coordinator_epoch", "current_txn_first_offset",
                 "last_timestamp", "producer_epoch", "producer_id")

    def __init__(
        self,
        producer_id: int,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        coordinator_epoch: int = -1,
        last_timestamp: int = NO_TIMESTAMP,
        current_txn_first_offset: int | None = None,
        first_batch: BatchMetadata | None = None,
    ) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.coordinator_epoch = coordinator_epoch
        self.last_timestamp = last_timestamp
        self.current_txn_first_offset = current_txn_first_offset
        self.batch_metadata: deque[BatchMetadata] = deque()
        if first_batch is not None:
            self.batch_metadata.append(first_batch)

    @classmethod
    def empty(cls, producer_id: int) -> ProducerStateEntry:
        return cls(producer_id)

    @property
    def is_empty(self) -> bool:
        return not self.batch_metadata

    @property
    def first_seq(self) -> int:
        return self.batch_metadata[0].first_seq if self.batch_metadata else NO_SEQUENCE

    @property
    def last_seq(self) -> int:
        return self.batch_metadata[-1].last_seq if self.batch_metadata else NO_SEQUENCE

    @property
    def first_data_offset(self) -> int:
        return self.batch_metadata[0].first_offset if self.batch_metadata else -1

    @property
    def last_data_offset(self) -> int:
        return self.batch_metadata[-1].last_offset if self.batch_metadata else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batch_metadata[-1].offset_delta if self.batch_metadata else 0

    def with_producer_id(self, producer_id: int) -> ProducerStateEntry:
        """Copy without batch metadata (``withProducerIdAndBatchMetadata(id, empty)``)."""
        return ProducerStateEntry(producer_id, self.producer_epoch, self.coordinator_epoch,
                                  self.last_timestamp, self.current_txn_first_offset)

    def add_batch(self, epoch: int, last_seq: int, last_offset: int, offset_delta: int,
                  timestamp: int) -> None:
        self.maybe_update_producer_epoch(epoch)
        self._add_batch_metadata(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp

    def maybe_update_producer_epoch(self, epoch: int) -> bool:
        if self.producer_epoch != epoch:
            self.batch_metadata.clear()
            self.producer_epoch = epoch
            return True
        return False

    def _add_batch_metadata(self, batch: BatchMetadata) -> None:
        if len(self.batch_metadata) == NUM_BATCHES_TO_RETAIN:
            self.batch_metadata.popleft()
        self.batch_metadata.append(batch)

    def update(self, nxt: ProducerStateEntry) -> None:
        """Merge an append's updated entry into this one (``update(ProducerStateEntry)``)."""
        self.maybe_update_producer_epoch(nxt.producer_epoch)
        for batch in nxt.batch_metadata:
            self._add_batch_metadata(batch)
        self.coordinator_epoch = nxt.coordinator_epoch
        self.current_txn_first_offset = nxt.current_txn_first_offset
        self.last_timestamp = nxt.last_timestamp

    def update_on_marker(self, epoch: int, coordinator_epoch: int, timestamp: int) -> None:
        """``update(short, int, long)``: a marker ends the transaction and keeps no batch."""
        self.maybe_update_producer_epoch(epoch)
        self.coordinator_epoch = coordinator_epoch
        self.current_txn_first_offset = None
        self.last_timestamp = timestamp

    def find_duplicate_batch(
        self, epoch: int, first_seq: int, last_seq: int
    ) -> BatchMetadata | None:
        """``findDuplicateBatch``: a retained batch with exactly this sequence range."""
        if epoch != self.producer_epoch:
            return None
        for batch in self.batch_metadata:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None

    def to_snapshot_entry(self) -> ProducerSnapshotEntry:
        """The entry ``ProducerStateManager#writeSnapshot`` would persist (last batch only)."""
        return ProducerSnapshotEntry(
            producer_id=self.producer_id, producer_epoch=self.producer_epoch,
            last_sequence=self.last_seq, last_offset=self.last_data_offset,
            offset_delta=self.last_offset_delta, timestamp=self.last_timestamp,
            coordinator_epoch=self.coordinator_epoch,
            current_txn_first_offset=(-1 if self.current_txn_first_offset is None
                                      else self.current_txn_first_offset),
        )

    @classmethod
    def from_snapshot_entry(cls, e: ProducerSnapshotEntry) -> ProducerStateEntry:
        """``ProducerStateManager#readSnapshot``: batch metadata only when last_offset >= 0."""
        batch = (BatchMetadata(e.last_sequence, e.last_offset, e.offset_delta, e.timestamp)
                 if e.last_offset >= 0 else None)
        return cls(e.producer_id, e.producer_epoch, e.coordinator_epoch, e.timestamp,
                   e.current_txn_first_offset if e.current_txn_first_offset >= 0 else None, batch)

    def __repr__(self) -> str:
        return (f"ProducerStateEntry(producer_id={self.producer_id}, "
                f"epoch={self.producer_epoch}, txn_first_offset={self.current_txn_first_offset}, "
                f"coordinator_epoch={self.coordinator_epoch}, last_ts={self.last_timestamp}, "
                f"batches={list(self.batch_metadata)})")


@dataclass(slots=True)
class TxnMetadata:
    """``TxnMetadata``: an ongoing (``last_offset`` None) or completed transaction."""

    producer_id: int
    first_offset: int
    last_offset: int | None = None


class CompletedTxn(NamedTuple):
    """``CompletedTxn``: what a COMMIT/ABORT marker closed (``last_offset`` = marker offset)."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


Audit = Callable[[Violation], None]


class ProducerAppendInfo:
    """``ProducerAppendInfo``: validates one producer's batches of an append, collects changes."""

    def __init__(
        self,
        producer_id: int,
        current_entry: ProducerStateEntry,
        origin: AppendOrigin,
        verification: VerificationStateEntry | None = None,
        *,
        audit: Audit | None = None,
        audit_origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> None:
        self.producer_id = producer_id
        self.audit_origin = audit_origin
        self.current_entry = current_entry
        self.origin = origin
        self.verification = verification
        self.audit = audit
        self.updated_entry = current_entry.with_producer_id(producer_id)
        self.started_transactions: list[TxnMetadata] = []

    # -- validation ------------------------------------------------------------------------

    def _violate(self, error: type[ProducerStateError], kind: str, epoch: int, offset: int,
                 message: str, *, raise_it: bool) -> None:
        v = Violation(kind=kind, producer_id=self.producer_id, producer_epoch=epoch,
                      offset=offset, message=message)
        if self.audit is not None:
            self.audit(v)
        if raise_it:
            raise error(v)

    def _check_producer_epoch(self, epoch: int, offset: int, transaction_version: int) -> None:
        current = self.updated_entry.producer_epoch
        invalid = epoch <= current if transaction_version >= 2 else epoch < current
        if not invalid:
            return
        if (transaction_version >= 2 and epoch == current
                and self.updated_entry.current_txn_first_offset is None):
            return  # KAFKA-19999: an idempotent retry of a TV2 marker already written
        op = "<=" if transaction_version >= 2 else "<"
        self._violate(
            InvalidProducerEpochError, INVALID_EPOCH, epoch, offset,
            f"epoch of producer {self.producer_id} at offset {offset} is {epoch}, which is {op} "
            f"the last seen epoch {current} (TV{max(transaction_version, 0)})",
            raise_it=self.origin != AppendOrigin.REPLICATION,
        )

    def _check_sequence(self, epoch: int, first_seq: int, offset: int, *, raise_it: bool) -> None:
        ver = self.verification
        if (ver is not None and ver.supports_epoch_bump and first_seq != 0
                and self.current_entry.is_empty):
            self._violate(OutOfOrderSequenceError, SEQUENCE_GAP, epoch, offset,
                          f"invalid sequence {first_seq} for producer {self.producer_id} at "
                          f"offset {offset}: a transactions-v2 producer with no state must start "
                          "at 0", raise_it=raise_it)
            return
        if ver is not None and first_seq > ver.lowest_sequence:
            self._violate(OutOfOrderSequenceError, SEQUENCE_GAP, epoch, offset,
                          f"out of order sequence {first_seq} for producer {self.producer_id} at "
                          f"offset {offset}: earliest seen {ver.lowest_sequence}",
                          raise_it=raise_it)
            return
        updated = self.updated_entry
        if epoch != updated.producer_epoch:
            if first_seq != 0 and updated.producer_epoch != NO_PRODUCER_EPOCH:
                self._violate(OutOfOrderSequenceError, SEQUENCE_GAP, epoch, offset,
                              f"invalid sequence {first_seq} for new epoch {epoch} of producer "
                              f"{self.producer_id} at offset {offset} (current epoch "
                              f"{updated.producer_epoch}; a new epoch starts at 0)",
                              raise_it=raise_it)
            return
        if not updated.is_empty:
            current_last_seq = updated.last_seq
        elif epoch == self.current_entry.producer_epoch:
            current_last_seq = self.current_entry.last_seq
        else:
            current_last_seq = NO_SEQUENCE
        # No current epoch (state lost to retention or DeleteRecords): any sequence is accepted.
        if not (self.current_entry.producer_epoch == NO_PRODUCER_EPOCH
                or in_sequence(current_last_seq, first_seq)):
            self._violate(OutOfOrderSequenceError, SEQUENCE_GAP, epoch, offset,
                          f"out of order sequence {first_seq} for producer {self.producer_id} at "
                          f"offset {offset}: expected {increment_sequence(current_last_seq, 1)} "
                          f"after {current_last_seq}", raise_it=raise_it)

    # -- appends ---------------------------------------------------------------------------

    def append_data_batch(
        self,
        epoch: int,
        first_seq: int,
        last_seq: int,
        last_timestamp: int,
        first_offset: int,
        last_offset: int,
        is_transactional: bool,
    ) -> None:
        """``appendDataBatch``; raises what Kafka raises for this origin."""
        self._check_producer_epoch(epoch, first_offset, TV_UNKNOWN)
        if self.origin == AppendOrigin.CLIENT:
            self._check_sequence(epoch, first_seq, first_offset, raise_it=True)
        elif self.audit is not None and self.audit_origin == AppendOrigin.CLIENT:
            self._check_sequence(epoch, first_seq, first_offset, raise_it=False)
        self.updated_entry.add_batch(epoch, last_seq, last_offset, last_offset - first_offset,
                                     last_timestamp)
        current_txn = self.updated_entry.current_txn_first_offset
        if current_txn is not None and not is_transactional:
            self._violate(InvalidTxnStateError, INVALID_TXN_STATE, epoch, first_offset,
                          f"non-transactional write from producer {self.producer_id} at offset "
                          f"{first_offset} while its transaction from offset {current_txn} is "
                          "open", raise_it=True)
        elif current_txn is None and is_transactional:
            self.updated_entry.current_txn_first_offset = first_offset
            self.started_transactions.append(TxnMetadata(self.producer_id, first_offset))

    def append_end_txn_marker(
        self,
        *,
        is_commit: bool,
        coordinator_epoch: int,
        producer_epoch: int,
        offset: int,
        timestamp: int,
        transaction_version: int = TV_UNKNOWN,
    ) -> CompletedTxn | None:
        """``appendEndTxnMarker``: a CompletedTxn only when a transaction was open."""
        if transaction_version == TV_UNKNOWN and self.origin != AppendOrigin.REPLICATION:
            raise ValueError(f"transaction version must be given for origin {self.origin.name}")
        effective = 0 if transaction_version == TV_UNKNOWN else transaction_version
        self._check_producer_epoch(producer_epoch, offset, effective)
        if self.updated_entry.coordinator_epoch > coordinator_epoch:
            self._violate(
                TransactionCoordinatorFencedError, COORDINATOR_FENCED, producer_epoch, offset,
                f"marker for producer {self.producer_id} at offset {offset} has coordinator "
                f"epoch {coordinator_epoch}, older than the {self.updated_entry.coordinator_epoch} "
                "already seen (a zombie coordinator)",
                raise_it=self.origin != AppendOrigin.REPLICATION,
            )
        first = self.updated_entry.current_txn_first_offset
        completed = (CompletedTxn(self.producer_id, first, offset, not is_commit)
                     if first is not None else None)
        self.updated_entry.update_on_marker(producer_epoch, coordinator_epoch, timestamp)
        return completed


class ProducerStateManager:
    """``ProducerStateManager``: producers, ongoing and unreplicated transactions of a partition."""

    def __init__(
        self,
        *,
        max_transaction_timeout_ms: int = 900_000,
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    ) -> None:
        self.max_transaction_timeout_ms = max_transaction_timeout_ms
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self.producers: dict[int, ProducerStateEntry] = {}
        self.ongoing_txns = _OffsetMap()  # first offset -> TxnMetadata
        self.unreplicated_txns = _OffsetMap()  # completed, marker at or above the HW
        self.last_map_offset = 0
        self.last_snap_offset = 0

    def prepare_update(
        self,
        producer_id: int,
        origin: AppendOrigin,
        verification: VerificationStateEntry | None = None,
        *,
        audit: Audit | None = None,
        audit_origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> ProducerAppendInfo:
        """``audit_origin``: whose rules the audit reports (CLIENT for data written by
        producers; COORDINATOR for the group coordinator's offset commits, which carry no
        sequences)."""
        current = self.producers.get(producer_id) or ProducerStateEntry.empty(producer_id)
        return ProducerAppendInfo(producer_id, current, origin, verification, audit=audit,
                                  audit_origin=audit_origin)

    def update(self, append_info: ProducerAppendInfo) -> None:
        if append_info.producer_id == NO_PRODUCER_ID:
            raise ValueError("invalid producer id -1 passed to update")
        updated = append_info.updated_entry
        current = self.producers.get(append_info.producer_id)
        if current is not None:
            current.update(updated)
        else:
            self.producers[append_info.producer_id] = updated
        for txn in append_info.started_transactions:
            self.ongoing_txns.put(txn.first_offset, txn)

    def update_map_end_offset(self, offset: int) -> None:
        self.last_map_offset = offset

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self.producers.get(producer_id)

    def has_ongoing_transaction(self, producer_id: int, producer_epoch: int) -> bool:
        """``ProducerStateManager#hasOngoingTransaction``: this producer, at this epoch, has a
        transaction open in the partition (KIP-890 verification is then not needed)."""
        entry = self.producers.get(producer_id)
        return (entry is not None and entry.current_txn_first_offset is not None
                and entry.producer_epoch == producer_epoch)

    def first_undecided_offset(self) -> int | None:
        first = self.ongoing_txns.first()
        return None if first is None else first.first_offset

    def first_unstable_offset(self) -> int | None:
        """The smaller of the oldest ongoing and the oldest unreplicated transaction's start."""
        candidates = [t.first_offset for t in (self.ongoing_txns.first(),
                                               self.unreplicated_txns.first()) if t is not None]
        return min(candidates) if candidates else None

    def on_high_watermark_updated(self, high_watermark: int, *,
                                  keep: TxnMetadata | None = None) -> None:
        """``ProducerStateManager#onHighWatermarkUpdated``; ``keep``: a transaction the caller
        still needs in the map (the forensic replay's newest unreplicated one)."""
        self._remove_unreplicated_transactions(high_watermark, keep)

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        self._remove_unreplicated_transactions(log_start_offset)
        self.last_map_offset = max(self.last_map_offset, log_start_offset)

    def _remove_unreplicated_transactions(self, offset: int,
                                          keep: TxnMetadata | None = None) -> None:
        self.unreplicated_txns.retain(
            lambda txn: txn is keep or txn.last_offset is None or txn.last_offset >= offset)

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """The LSO stored in the .txnindex for ``completed`` (before ``complete_txn``)."""
        for txn in self.ongoing_txns.values():
            if txn.producer_id != completed.producer_id:
                return txn.first_offset
        return completed.last_offset + 1

    def complete_txn(self, completed: CompletedTxn) -> None:
        txn = self.ongoing_txns.remove(completed.first_offset)
        if txn is None:
            raise ValueError(f"attempted to complete transaction {completed} which was not started")
        txn.last_offset = completed.last_offset
        self.unreplicated_txns.put(completed.first_offset, txn)

    def oldest_txn_last_timestamp(self) -> int:
        first = self.ongoing_txns.first()
        if first is None:
            return -1
        entry = self.producers.get(first.producer_id)
        return entry.last_timestamp if entry is not None else -1

    def has_late_transaction(self, now_ms: int) -> bool:
        last = self.oldest_txn_last_timestamp()
        return last > 0 and now_ms - last > (self.max_transaction_timeout_ms
                                              + LATE_TRANSACTION_BUFFER_MS)

    def is_producer_expired(self, now_ms: int, entry: ProducerStateEntry) -> bool:
        return (entry.current_txn_first_offset is None
                and now_ms - entry.last_timestamp >= self.producer_id_expiration_ms)

    def remove_expired_producers(self, now_ms: int) -> list[int]:
        expired = [pid for pid, e in self.producers.items() if self.is_producer_expired(now_ms, e)]
        for pid in expired:
            del self.producers[pid]
        return expired

    def load_producer_entry(self, entry: ProducerStateEntry) -> None:
        self.producers[entry.producer_id] = entry
        if entry.current_txn_first_offset is not None:
            self.ongoing_txns.put(entry.current_txn_first_offset,
                                  TxnMetadata(entry.producer_id, entry.current_txn_first_offset))

    def load_snapshot(self, entries: list[ProducerSnapshotEntry], snapshot_offset: int,
                      now_ms: int | None = None) -> None:
        """``loadFromSnapshot`` for one good snapshot: expired producers are dropped on load."""
        self.truncate_fully_and_start_at(snapshot_offset)
        for e in entries:
            entry = ProducerStateEntry.from_snapshot_entry(e)
            if now_ms is not None and self.is_producer_expired(now_ms, entry):
                continue
            self.load_producer_entry(entry)
        self.last_snap_offset = snapshot_offset
        self.last_map_offset = snapshot_offset

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self.producers.clear()
        self.ongoing_txns = _OffsetMap()
        self.unreplicated_txns = _OffsetMap()
        self.last_snap_offset = 0
        self.last_map_offset = offset

    def snapshot_entries(self) -> list[ProducerSnapshotEntry]:
        """What ``takeSnapshot`` would write now (sorted by producer id for stable output)."""
        return [self.producers[pid].to_snapshot_entry() for pid in sorted(self.producers)]


class _OffsetMap:
    """A small TreeMap<Long, TxnMetadata>: sorted keys + dict."""

    __slots__ = ("keys", "values_by_key")

    def __init__(self) -> None:
        self.keys: list[int] = []
        self.values_by_key: dict[int, TxnMetadata] = {}

    def put(self, key: int, value: TxnMetadata) -> None:
        if key not in self.values_by_key:
            bisect.insort(self.keys, key)
        self.values_by_key[key] = value

    def put_all(self, items: list[tuple[int, TxnMetadata]]) -> None:
        """``put`` for many entries at once (keys not present yet)."""
        self.values_by_key.update(items)
        self.keys = sorted(self.values_by_key)

    def remove(self, key: int) -> TxnMetadata | None:
        value = self.values_by_key.pop(key, None)
        if value is not None:
            del self.keys[bisect.bisect_left(self.keys, key)]
        return value

    def retain(self, keep: Callable[[TxnMetadata], bool]) -> None:
        """Drop every entry ``keep`` rejects, in one pass (not one list deletion each)."""
        kept = [k for k in self.keys if keep(self.values_by_key[k])]
        if len(kept) != len(self.keys):
            self.values_by_key = {k: self.values_by_key[k] for k in kept}
            self.keys = kept

    def first(self) -> TxnMetadata | None:
        return self.values_by_key[self.keys[0]] if self.keys else None

    def values(self) -> Iterator[TxnMetadata]:
        return (self.values_by_key[k] for k in self.keys)

    def items(self) -> Iterator[tuple[int, TxnMetadata]]:
        return ((k, self.values_by_key[k]) for k in self.keys)

    def __len__(self) -> int:
        return len(self.keys)


def last_stable_offset(first_unstable_offset: int | None, high_watermark: int) -> int:
    """``UnifiedLog#lastStableOffset``: the first unstable offset if below the HW, else the HW."""
    if first_unstable_offset is not None and first_unstable_offset < high_watermark:
        return first_unstable_offset
    return high_watermark
