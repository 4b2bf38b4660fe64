"""What Kafka's log cleaner keeps of a compacted log, pure and I/O-free.

Mirrors ``Cleaner`` in Kafka's ``LogCleaner.scala`` (3.1 and later, KIP-534 delete horizons in
the batch header): ``buildOffsetMapForSegment`` (the last offset of every key in the dirty
range, aborted batches skipped), ``cleanInto``'s ``RecordFilter`` (``checkBatchRetention``:
aborted data removed, the last batch of an active producer kept even when empty, the last batch
of the cleaning round kept, markers removed only after their transaction's data is gone and
their delete horizon passed; ``shouldRetainRecord``: the last value of each key, tombstones
until the batch's delete horizon), ``CleanedTransactionMetadata`` (aborted transactions from
the ``.txnindex``, which markers may go, the cleaned segment's ``.txnindex``) and
``MemoryRecords#filterTo`` (a batch written as it was when every record stays and no horizon is
due, else rebuilt with the retained records and the original last offset, or as an empty header
for RETAIN_EMPTY). Kafka before 3.1 (``LogCleaner.scala`` of 3.0) judged tombstones and
markers by the cleaned segment's modification time instead (``deleteHorizonMs`` = the last clean
segment's last modified - delete.retention.ms; ``retainDeletesAndTxnMarkers`` when a segment was
modified after it), did not keep the round's last batch, and filtered a marker's record like a
data record: pass ``legacy_retain_deletes`` (``retains_legacy_deletes``) for that rule, which
Kafka 3.1+ still applies to magic 0/1 batches.
"""

from __future__ import annotations

import enum
import heapq
from collections.abc import Callable, Iterable, Mapping
from dataclasses import field

from kafkatx.formats.batch_layout import TIMESTAMP_TYPE_MASK
from kafkatx.formats.record_batch import (
    NO_TIMESTAMP,
    ControlType,
    Record,
    RecordBatchHeader,
    build_batch,
)
from kafkatx.formats.txn_index import AbortedTxnEntry
from kafkatx.lazy_dataclass import dataclass


class BatchRetention(enum.Enum):
    """``RecordFilter.BatchRetention``."""

    DELETE = "delete"  # the batch goes without looking at its records
    RETAIN_EMPTY = "retain_empty"  # kept, as an empty header when no record stays
    DELETE_EMPTY = "delete_empty"  # kept only if a record stays


@dataclass(frozen=True, slots=True)
class LastRecord:
    """``LastRecord``: an active producer's last data offset (None when its last entry is a
    marker) and epoch, from ``UnifiedLog#lastRecordsOfActiveProducers``."""

    last_data_offset: int | None
    producer_epoch: int


@dataclass(slots=True)
class OffsetMap:
    """``OffsetMap``: the last offset of each key in the dirty range (Kafka keys it by an MD5
    of the key; here by the key itself) and the last offset mapped."""

    offsets: dict[bytes, int] = field(default_factory=dict)
    latest_offset: int = -1

    def put(self, key: bytes, offset: int) -> None:
        self.offsets[key] = offset
        self.latest_offset = offset

    def update_latest_offset(self, offset: int) -> None:
        self.latest_offset = offset


@dataclass(slots=True)
class _AbortedTxnMetadata:
    """``AbortedTransactionMetadata``: an aborted transaction the cleaner walks through."""

    entry: AbortedTxnEntry
    last_observed_batch_offset: int | None = None


class CleanedTransactionMetadata:
    """``CleanedTransactionMetadata``: the transactions the cleaner walks through, which of their
    batches and markers may go, and the aborted transactions the cleaned segment's
    ``.txnindex`` keeps (``cleaned_index``)."""

    def __init__(self) -> None:
        self._aborted: list[tuple[int, int, AbortedTxnEntry]] = []  # min-heap by first offset
        self._tie = 0
        self._ongoing_committed: set[int] = set()
        self._ongoing_aborted: dict[int, _AbortedTxnMetadata] = {}
        self.cleaned_index: list[AbortedTxnEntry] = []

    def add_aborted_transactions(self, entries: Iterable[AbortedTxnEntry]) -> None:
        for entry in entries:
            self._tie += 1
            heapq.heappush(self._aborted, (entry.first_offset, self._tie, entry))

    def _consume_aborted_up_to(self, offset: int) -> None:
        while self._aborted and self._aborted[0][0] <= offset:
            entry = heapq.heappop(self._aborted)[2]
            self._ongoing_aborted.setdefault(entry.producer_id, _AbortedTxnMetadata(entry))

    def on_control_batch_read(self, last_offset: int, producer_id: int,
                              control_type: int | None) -> bool:
        """``onControlBatchRead``: whether the marker may be discarded (``control_type`` None for
        a control batch already emptied by a clean)."""
        self._consume_aborted_up_to(last_offset)
        if control_type is None:
            return True
        if control_type == ControlType.ABORT:
            aborted = self._ongoing_aborted.pop(producer_id, None)
            if aborted is not None and aborted.last_observed_batch_offset is not None:
                # Kept until every batch of the transaction is gone.
                self.cleaned_index.append(aborted.entry)
                return False
            return True
        if control_type == ControlType.COMMIT:
            if producer_id in self._ongoing_committed:
                self._ongoing_committed.discard(producer_id)
                return False
            return True
        return False

    def on_batch_read(self, last_offset: int, producer_id: int, is_transactional: bool) -> bool:
        """``onBatchRead``: whether the data batch belongs to an aborted transaction."""
        self._consume_aborted_up_to(last_offset)
        if not is_transactional:
            return False
        aborted = self._ongoing_aborted.get(producer_id)
        if aborted is not None:
            aborted.last_observed_batch_offset = last_offset
            return True
        self._ongoing_committed.add(producer_id)
        return False


def last_records_of_active_producers(
        producers: Mapping[int, tuple[int, int]]) -> dict[int, LastRecord]:
    """``UnifiedLog#lastRecordsOfActiveProducers`` from producer id -> (last data offset or -1,
    epoch) of every producer in the producer state."""
    return {pid: LastRecord(last if last >= 0 else None, epoch)
            for pid, (last, epoch) in producers.items()}


@dataclass(frozen=True, slots=True)
class BatchDecision:
    """``checkBatchRetention``'s answer: the batch's retention, whether its records are all
    discarded (``discardBatchRecords``) and ``containsMarkerForEmptyTxn``."""

    retention: BatchRetention
    discard_records: bool
    marker_for_empty_txn: bool


def legacy_delete_horizon_ms(last_clean_segment_modified_ms: int | None,
                             delete_retention_ms: int) -> int:
    """Kafka 3.0 ``Cleaner#clean``'s ``deleteHorizonMs`` (3.1+: ``legacyDeleteHorizonMs``): the
    last modified time of the last segment below the first dirty offset, minus
    delete.retention.ms; 0 when there is none."""
    if last_clean_segment_modified_ms is None:
        return 0
    return last_clean_segment_modified_ms - delete_retention_ms


def retains_legacy_deletes(segment_modified_ms: int, legacy_horizon_ms: int) -> bool:
    """``retainDeletesAndTxnMarkers`` for one segment being cleaned."""
    return segment_modified_ms > legacy_horizon_ms


def check_batch_retention(header: RecordBatchHeader, control_type: int | None, *,
                          transactions: CleanedTransactionMetadata,
                          active_producers: Mapping[int, LastRecord],
                          upper_bound_offset: int, now_ms: int,
                          legacy_retain_deletes: bool | None = None) -> BatchDecision:
    """``cleanInto``'s ``checkBatchRetention`` for one batch, in log order (Kafka 3.1+; with
    ``legacy_retain_deletes``, Kafka 3.0's)."""
    legacy = legacy_retain_deletes is not None
    if header.is_control:
        can_discard = transactions.on_control_batch_read(header.last_offset, header.producer_id,
                                                         control_type)
        horizon = header.delete_horizon_ms
        if legacy:
            discard_records = can_discard and not legacy_retain_deletes
        else:
            discard_records = can_discard and horizon is not None and horizon <= now_ms
    else:
        can_discard = transactions.on_batch_read(header.last_offset, header.producer_id,
                                                 header.is_transactional)
        discard_records = can_discard
    has_producer_id = header.producer_id >= 0
    if has_producer_id and _is_last_batch_of_producer(header, active_producers):
        retention = BatchRetention.RETAIN_EMPTY
    elif not legacy and header.last_offset + 1 == upper_bound_offset:
        # The last batch of the round stays, even empty, so the last offset is not lost.
        retention = BatchRetention.RETAIN_EMPTY
    elif discard_records:
        retention = BatchRetention.DELETE
    else:
        retention = BatchRetention.DELETE_EMPTY
    return BatchDecision(retention, discard_records,
                         not legacy and can_discard and header.is_control)


def _is_last_batch_of_producer(header: RecordBatchHeader,
                               active_producers: Mapping[int, LastRecord]) -> bool:
    last = active_producers.get(header.producer_id)
    if last is None:
        return False
    if last.last_data_offset is not None:
        return header.last_offset == last.last_data_offset
    return header.is_control and header.producer_epoch == last.producer_epoch


def should_retain_record(record: Record, header: RecordBatchHeader, offset_map: OffsetMap,
                         now_ms: int, legacy_retain_deletes: bool | None = None) -> bool:
    """``Cleaner#shouldRetainRecord``: past the map's last offset, or the key's last offset with
    a value, or a tombstone whose batch has no delete horizon yet or one still ahead (with
    ``legacy_retain_deletes``: a tombstone while the segment retains deletes)."""
    if record.offset > offset_map.latest_offset:
        return True
    if record.key is None:
        return False
    found = offset_map.offsets.get(record.key, -1)
    if record.offset < found:
        return False
    if record.value is not None:
        return True
    if legacy_retain_deletes is not None:
        return legacy_retain_deletes
    horizon = header.delete_horizon_ms
    return horizon is None or now_ms < horizon


def filter_batch(data: bytes, header: RecordBatchHeader, records: list[Record],
                 decision: BatchDecision, offset_map: OffsetMap, *, now_ms: int,
                 delete_retention_ms: int,
                 legacy_retain_deletes: bool | None = None) -> bytes | None:
    """``MemoryRecords#filterTo`` for one batch (``data`` its stored bytes, ``records`` decoded):
    the bytes the cleaned segment gets, or None when the batch goes. Kafka 3.0
    (``legacy_retain_deletes``) sets no delete horizon and filters a marker's record like a
    data record."""
    if decision.retention is BatchRetention.DELETE:
        return None
    if decision.discard_records:
        retained: list[Record] = []
    elif header.is_control and legacy_retain_deletes is None:
        retained = list(records)
    else:
        retained = [r for r in records if should_retain_record(
            r, header, offset_map, now_ms, legacy_retain_deletes)]
    if retained:
        has_tombstone = any(r.value is None for r in retained)
        set_horizon = ((has_tombstone or decision.marker_for_empty_txn)
                       and header.delete_horizon_ms is None and legacy_retain_deletes is None)
        if len(retained) == len(records) and not set_horizon:
            return data
        # Java's long addition would wrap past Long.MAX_VALUE; the horizon saturates instead.
        horizon = (min(now_ms + delete_retention_ms, 2**63 - 1) if set_horizon
                   else header.delete_horizon_ms)
        return _rebuild(header, retained, horizon)
    if decision.retention is BatchRetention.RETAIN_EMPTY:
        return _empty_header(header)
    return None


def _log_append_time(header: RecordBatchHeader) -> int | None:
    return header.max_timestamp if header.attributes & TIMESTAMP_TYPE_MASK else None


def _rebuild(header: RecordBatchHeader, retained: list[Record], horizon: int | None) -> bytes:
    """``buildRetainedRecordsInto``: same codec, producer fields and leader epoch, the original
    last offset (so the producer's last sequence stays)."""
    return build_batch(
        retained, base_offset=header.base_offset,
        partition_leader_epoch=header.partition_leader_epoch,
        compression_id=header.compression_id, log_append_time=_log_append_time(header),
        is_transactional=header.is_transactional, is_control=header.is_control,
        producer_id=header.producer_id, producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence, last_offset_delta=header.last_offset_delta,
        delete_horizon_ms=horizon)


def _empty_header(header: RecordBatchHeader) -> bytes:
    """``DefaultRecordBatch#writeEmptyHeader``: no records, no codec, base timestamp -1."""
    return build_batch(
        [], base_offset=header.base_offset, partition_leader_epoch=header.partition_leader_epoch,
        log_append_time=_log_append_time(header), is_transactional=header.is_transactional,
        is_control=header.is_control, producer_id=header.producer_id,
        producer_epoch=header.producer_epoch, base_sequence=header.base_sequence,
        last_offset_delta=header.last_offset_delta, base_timestamp=NO_TIMESTAMP,
        max_timestamp=header.max_timestamp)


def map_batch(offset_map: OffsetMap, header: RecordBatchHeader, control_type: int | None,
              records: Callable[[], Iterable[Record]], transactions: CleanedTransactionMetadata,
              start_offset: int) -> None:
    """``buildOffsetMapForSegment`` for one batch: keys of records at or past ``start_offset``
    (``records`` decodes them; not called for an aborted batch), then the map's last offset."""
    if header.is_control:
        transactions.on_control_batch_read(header.last_offset, header.producer_id, control_type)
    elif not transactions.on_batch_read(header.last_offset, header.producer_id,
                                        header.is_transactional):
        for record in records():
            if record.key is not None and record.offset >= start_offset:
                offset_map.put(record.key, record.offset)
    if header.last_offset >= start_offset:
        offset_map.update_latest_offset(header.last_offset)
