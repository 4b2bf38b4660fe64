"""A partition log's reads: fetches bounded by the high watermark or the LSO, offsets by
timestamp, batches and records for the cleaner and the coordinators (``UnifiedLog#read``,
``fetchOffsetByTimestamp``, ``legacyFetchOffsetsBefore``, ``LocalLog#collectAbortedTransactions``).
A mixin of :class:`kafkatx.broker.logs.partition_log.PartitionLog`."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator

from kio.schema.errors import ErrorCode

from kafkatx.broker.logs.batch_header import (
    BatchFrameError,
    split_batches,
)
from kafkatx.broker.logs.log_segment import BatchTable, LogSegment, modified_ms
from kafkatx.broker.logs.log_values import (
    _CACHED_TABLES,
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    NO_TIMESTAMP,
    AppendError,
    OffsetAndTimestamp,
    ReadResult,
    StoredBatch,
)
from kafkatx.errors import FormatError
from kafkatx.formats.record_batch import (
    Record,
    RecordBatch,
    iter_key_values,
    iter_records,
    parse_batch,
    parse_header,
)
from kafkatx.semantics.producer_state import (
    last_stable_offset,
)
from kafkatx.semantics.read_committed import (
    IsolationLevel,
    collect_aborted_transactions,
    max_fetch_offset,
)


class LogReads:
    """Reads and offset lookups of a :class:`PartitionLog`."""

    # -- reads -------------------------------------------------------------------------------

    @property
    def last_stable_offset(self) -> int:
        """``UnifiedLog#maybeIncrementFirstUnstableOffset`` keeps the first unstable offset at or
        above the log start offset."""
        first_unstable = self.producer_state.first_unstable_offset()
        if first_unstable is not None:
            first_unstable = max(first_unstable, self.log_start_offset)
        return last_stable_offset(first_unstable, self.high_watermark)

    def read(
        self,
        fetch_offset: int,
        max_bytes: int,
        isolation: IsolationLevel,
        *,
        min_one_message: bool,
        log_end: bool = False,
    ) -> ReadResult:
        """``UnifiedLog#read`` + ``LocalLog#read`` for a consumer, or with ``log_end`` for a
        follower (``FetchIsolation.LOG_END``: up to the log end offset); raises
        ``AppendError`` with OFFSET_OUT_OF_RANGE outside [log start, log end]."""
        if fetch_offset < self.log_start_offset or fetch_offset > self.log_end_offset:
            raise AppendError(ErrorCode.offset_out_of_range,
                              f"Received request for offset {fetch_offset} for partition "
                              f"{self.name}, but we only have log segments in the range "
                              f"{self.log_start_offset} to {self.log_end_offset}.")
        hw = self.high_watermark
        lso = self.last_stable_offset
        bound = self.log_end_offset if log_end else max_fetch_offset(isolation, hw, lso)
        committed = isolation == IsolationLevel.READ_COMMITTED and not log_end
        empty = ReadResult(records=b"", high_watermark=hw, last_stable_offset=lso,
                           log_start_offset=self.log_start_offset,
                           aborted_transactions=[] if committed else None)
        found = self._locate(fetch_offset) if fetch_offset < bound else None
        if found is None:
            return empty
        k, seg, i = found
        table = self._batches_of(seg)
        first_position, first_size = table.position[i], table.size[i]
        j = bisect.bisect_left(table.last, bound)
        max_position = table.position[j] if j < len(table) else seg.size
        limit = max(max_bytes, first_size) if min_one_message else max_bytes
        size = min(max_position - first_position, limit)
        if size <= 0:
            return empty
        data = seg.pread(size, first_position)
        aborted = None
        if committed:
            upper = self._fetch_upper_bound(k, table, first_position + size)
            aborted = collect_aborted_transactions(
                [(s.base_offset, s.aborted) for s in self.segments], fetch_offset, upper)
        return ReadResult(records=data, high_watermark=hw, last_stable_offset=lso,
                          log_start_offset=self.log_start_offset, aborted_transactions=aborted,
                          first_entry_incomplete=limit < first_size)

    def _locate(self, offset: int) -> tuple[int, LogSegment, int] | None:
        """``LocalLog#read``'s walk: from the floor segment of ``offset`` on, the first batch
        whose last offset is at or above it (segment index, segment, batch index)."""
        k = max(bisect.bisect_right(self._bases, offset) - 1, 0)
        while k < len(self.segments):
            seg = self.segments[k]
            table = self._batches_of(seg)
            i = bisect.bisect_left(table.last, offset)
            if i < len(table):
                return k, seg, i
            k += 1
        return None

    def _batches_of(self, seg: LogSegment) -> BatchTable:
        """The segment's batch table, scanned on first use; only the tables of the last few
        segments read stay in memory (the active segment's always does)."""
        if seg.table is not None:
            return seg.table
        table = seg.batches()
        self._tables.append(seg)
        while len(self._tables) > _CACHED_TABLES:
            old = self._tables.pop(0)
            if old is not self.segments[-1]:
                old.table = None
        return table

    def _fetch_upper_bound(self, k: int, table: BatchTable, end_position: int) -> int:
        """``LogSegment#fetchUpperBoundOffset`` at batch granularity: the first batch at or past
        ``end_position``, else the next segment's base offset or the log end offset
        (``LocalLog#addAbortedTransactions``)."""
        i = bisect.bisect_left(table.position, end_position)
        if i < len(table):
            return table.base[i]
        return (self.segments[k + 1].base_offset if k + 1 < len(self.segments)
                else self.log_end_offset)

    def offset_for_timestamp(self, timestamp: int,
                             isolation: IsolationLevel | None) -> OffsetAndTimestamp | None:
        """``Partition#fetchOffsetForTimestamp`` + ``UnifiedLog#fetchOffsetByTimestamp``."""
        if isolation == IsolationLevel.READ_COMMITTED:
            last_fetchable = self.last_stable_offset
        elif isolation == IsolationLevel.READ_UNCOMMITTED:
            last_fetchable = self.high_watermark
        else:
            last_fetchable = self.log_end_offset
        if timestamp == LATEST_TIMESTAMP:
            return OffsetAndTimestamp(last_fetchable, NO_TIMESTAMP, self.leader_epoch)
        if timestamp == EARLIEST_TIMESTAMP:
            return OffsetAndTimestamp(self.log_start_offset, NO_TIMESTAMP, self.leader_epoch)
        if timestamp == MAX_TIMESTAMP:
            found = self._max_timestamp_offset()
        elif timestamp >= 0:
            found = self._search_timestamp(timestamp)
        else:
            return None
        if found is None or found.offset >= last_fetchable:
            return None
        return found

    def legacy_offsets_before(self, timestamp: int, max_num_offsets: int,
                              now_ms: int) -> list[int]:
        """``UnifiedLog#legacyFetchOffsetsBefore`` (ListOffsets v0): each segment's base offset
        (at least the log start offset) with its file's modification time, plus the log end
        offset at ``now_ms`` when the active segment holds data; the latest -1, the earliest -2,
        else the last entry modified at or before ``timestamp``, and the entries before it, at
        most ``max_num_offsets`` of them, in descending order."""
        pairs = [(max(seg.base_offset, self.log_start_offset), modified_ms(seg.path, now_ms))
                 for seg in self.segments]
        if self.segments and self.segments[-1].size > 0:
            pairs.append((self.log_end_offset, now_ms))
        if timestamp == LATEST_TIMESTAMP:
            start = len(pairs) - 1
        elif timestamp == EARLIEST_TIMESTAMP:
            start = 0
        else:
            start = len(pairs) - 1
            while start >= 0 and pairs[start][1] > timestamp:
                start -= 1
        count = min(max_num_offsets, start + 1)
        if count < 0:
            raise ValueError(f"negative number of offsets: {count}")  # NegativeArraySize
        return sorted((pairs[start - j][0] for j in range(count)), reverse=True)

    def iter_stored_batches(self, warn: Callable[[str], None] | None = None
                            ) -> Iterator[StoredBatch]:
        """Every batch of every segment, in offset order, its header read and its bytes shared
        with the rest of its segment (what a coordinator reads when it loads its partition:
        ``UnifiedLog#read`` with ``FetchIsolation.LOG_END``). Decode records with
        ``iter_key_values(batch.data, batch.header.position, batch.header)``. What cannot be
        read goes to ``warn`` (default: ``load_problems``)."""
        report = warn or self.load_problems.append
        for seg in list(self.segments):
            if seg.size == 0:
                continue
            data = seg.pread(seg.size, 0)
            try:
                headers, _ = split_batches(data)
            except BatchFrameError as exc:
                report(f"{seg.path}: {exc}")
                continue
            for header in headers:
                yield StoredBatch(header, data)

    def iter_batches(self) -> Iterator[RecordBatch]:
        """Every stored batch with its records decoded (the exact parser); a batch that does not
        decode is reported in ``load_problems`` and skipped."""
        for batch in self.iter_stored_batches():
            try:
                yield parse_batch(batch.data, batch.header.position, decode_records=True)
            except FormatError as exc:
                self.load_problems.append(f"{self.name} offset {batch.header.base_offset}: {exc}")

    def iter_key_values(self, warn: Callable[[str], None] | None = None) -> Iterator[
            tuple[StoredBatch, list[tuple[int, bytes | None, bytes | None]]]]:
        """Each stored batch with its records' (offset, key, value); a batch whose records do
        not decode goes to ``warn`` (default: ``load_problems``) and is skipped."""
        report = warn or self.load_problems.append
        for batch in self.iter_stored_batches(report):
            try:
                records = list(iter_key_values(batch.data, batch.header.position, batch.header))
            except FormatError as exc:
                report(f"{self.name} offset {batch.header.base_offset}: {exc}")
                continue
            yield batch, records

    def _records_at(self, seg: LogSegment, position: int, size: int) -> Iterator[Record]:
        """The records of one stored batch (decompressed); FormatError if they do not decode."""
        data = seg.pread(size, position)
        return iter_records(data, 0, parse_header(data, 0))

    def _max_timestamp_offset(self) -> OffsetAndTimestamp | None:
        """``UnifiedLog#fetchOffsetByTimestamp(MAX_TIMESTAMP)``: the (first) segment with the
        largest ``maxTimestampSoFar``, then the record holding it."""
        best: LogSegment | None = None
        for seg in self.segments:
            if best is None or seg.max_timestamp_so_far > best.max_timestamp_so_far:
                best = seg
        if best is None or best.max_timestamp_so_far < 0:
            return None
        table = self._batches_of(best)
        try:
            i = table.max_timestamp.index(best.max_timestamp_so_far)
        except ValueError:
            return OffsetAndTimestamp(best.offset_of_max_timestamp_so_far,
                                      best.max_timestamp_so_far, self.leader_epoch)
        try:
            for record in self._records_at(best, table.position[i], table.size[i]):
                if record.timestamp == table.max_timestamp[i]:
                    return OffsetAndTimestamp(record.offset, record.timestamp, self.leader_epoch)
        except FormatError:
            pass
        return OffsetAndTimestamp(table.last[i], table.max_timestamp[i], self.leader_epoch)

    def _search_timestamp(self, target: int) -> OffsetAndTimestamp | None:
        """``LogSegment#findOffsetByTimestamp`` from the log start offset: segments whose
        ``maxTimestampSoFar`` is below the target are skipped without reading them."""
        k = max(bisect.bisect_right(self._bases, self.log_start_offset) - 1, 0)
        for seg in self.segments[k:]:
            if seg.max_timestamp_so_far < target:
                continue
            table = self._batches_of(seg)
            start = bisect.bisect_left(table.last, self.log_start_offset)
            for i in range(start, len(table)):
                if table.max_timestamp[i] < target:
                    continue
                try:
                    for record in self._records_at(seg, table.position[i], table.size[i]):
                        if record.timestamp >= target and record.offset >= self.log_start_offset:
                            return OffsetAndTimestamp(record.offset, record.timestamp,
                                                      self.leader_epoch)
                except FormatError:
                    continue
        return None
