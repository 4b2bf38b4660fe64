"""Append side of a partition directory: segments and their sparse indexes, written as Kafka does.

Mirrors ``LogSegment#append`` in Kafka 4.x: for each appended batch, the max timestamp so far is
updated, and when more than ``index.interval.bytes`` were appended since the last index entry an
offset-index entry (batch last offset -> batch start position) and a time-index entry (max
timestamp so far -> its batch's last offset, appended only when the timestamp grew,
``TimeIndex#maybeAppend``) are added. On roll/close the time index gets a final
``maybeAppend`` (``LogSegment#onBecomeInactiveSegment``) and indexes are trimmed to their entries
(``AbstractIndex#trimToValidSize``). Used by the fixture generator and by ``kafkatx serve``; it is
never pointed at evidence.
"""

from __future__ import annotations

import os
from dataclasses import field
from pathlib import Path

from kafkatx.formats.batch_layout import (
    FRAME,
    LAST_OFFSET_DELTA_FIELD,
    LAST_OFFSET_DELTA_OFFSET,
    MAX_TIMESTAMP_FIELD,
    MAX_TIMESTAMP_OFFSET,
)
from kafkatx.formats.offset_index import OffsetIndexEntry, build_offset_index
from kafkatx.formats.time_index import TimeIndexEntry, build_time_index
from kafkatx.lazy_dataclass import dataclass

DEFAULT_INDEX_INTERVAL_BYTES = 4096


def segment_name(base_offset: int, suffix: str) -> str:
    """``LogFileUtils.filenamePrefixFromOffset`` + suffix: 20 zero-padded digits."""
    return f"{base_offset:020d}{suffix}"


@dataclass(slots=True)
class SegmentIndexes:
    """The sparse indexes of one segment as its batches are appended (or recovered)."""

    base_offset: int
    index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES
    size: int = 0
    bytes_since_last_index_entry: int = 0
    max_timestamp_so_far: int = -1
    offset_of_max_timestamp_so_far: int = -1
    offset_entries: list[OffsetIndexEntry] = field(default_factory=list)
    time_entries: list[TimeIndexEntry] = field(default_factory=list)

    def on_append(self, position: int, size: int, last_offset: int, max_timestamp: int) -> None:
        """``LogSegment#append``'s index bookkeeping for a batch written at ``position``."""
        if max_timestamp > self.max_timestamp_so_far:
            self.max_timestamp_so_far = max_timestamp
            self.offset_of_max_timestamp_so_far = last_offset
        if self.bytes_since_last_index_entry > self.index_interval_bytes:
            self.offset_entries.append(OffsetIndexEntry(
                offset=last_offset, relative_offset=last_offset - self.base_offset,
                position=position))
            self.maybe_append_time(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far)
            self.bytes_since_last_index_entry = 0
        self.size = position + size
        self.bytes_since_last_index_entry += size

    def write_indexes(self, directory: Path, file_suffix: str = "") -> None:
        """``LogSegment#onBecomeInactiveSegment`` + trimmed index files (named with
        ``file_suffix`` after the extension, e.g. ``.cleaned``)."""
        if self.max_timestamp_so_far >= 0:
            self.maybe_append_time(self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far)
        (directory / (segment_name(self.base_offset, ".index") + file_suffix)).write_bytes(
            build_offset_index(self.offset_entries, self.base_offset))
        (directory / (segment_name(self.base_offset, ".timeindex") + file_suffix)).write_bytes(
            build_time_index(self.time_entries, self.base_offset))

    def maybe_append_time(self, timestamp: int, offset: int) -> None:
        last = self.time_entries[-1].timestamp if self.time_entries else None
        if last is None or timestamp > last:
            self.time_entries.append(TimeIndexEntry(
                timestamp=timestamp, offset=offset, relative_offset=offset - self.base_offset))


class PartitionWriter:
    """Writes batches (already-built v2 batch bytes) into ``<dir>/<base>.log`` segments."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
        segment_bytes: int = 1 << 30,
        keep_open: bool = False,
        file_suffix: str = "",
    ) -> None:
        """``keep_open``: keep the active segment's file open between appends (the broker does;
        call ``close`` or ``release``), rather than opening it for each append. ``file_suffix``
        is appended to every file name (``.cleaned`` for the log cleaner's segments)."""
        self.dir = Path(directory)
        self.file_suffix = file_suffix
        self.keep_open = keep_open
        self._fd: int | None = None
        self._active_path: Path | None = None
        self.dir.mkdir(parents=True, exist_ok=True)
        self.index_interval_bytes = index_interval_bytes
        self.segment_bytes = segment_bytes
        self.active: SegmentIndexes | None = None
        self.log_end_offset = 0
        self.segment_bases: list[int] = []

    def append(self, batch: bytes) -> int:
        """Append one batch; return its byte position in the active segment."""
        base_offset, _length = FRAME.unpack_from(batch, 0)
        last_offset_delta = LAST_OFFSET_DELTA_FIELD.unpack_from(batch, LAST_OFFSET_DELTA_OFFSET)[0]
        max_ts = MAX_TIMESTAMP_FIELD.unpack_from(batch, MAX_TIMESTAMP_OFFSET)[0]
        last_offset = base_offset + last_offset_delta
        if self.active is None or (self.active.size and
                                   self.active.size + len(batch) > self.segment_bytes):
            self.roll(base_offset)
        seg = self.active
        assert seg is not None
        position = seg.size
        self._write(batch)
        seg.on_append(position, len(batch), last_offset, max_ts)
        self.log_end_offset = last_offset + 1
        return position

    def _write(self, batch: bytes | bytearray) -> None:
        """Append to the active segment: in the kernel's page cache when this returns, as after
        ``FileChannel#write`` (no fsync: Kafka flushes segments only when they roll)."""
        assert self._active_path is not None
        if not self.keep_open:
            with open(self._active_path, "ab") as f:
                f.write(batch)
            return
        if self._fd is None:
            self._fd = os.open(self._active_path,
                               os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o666)
        view = memoryview(batch)
        while view:
            view = view[os.write(self._fd, view):]

    def roll(self, new_base_offset: int | None = None) -> None:
        """Close the active segment (final time-index entry, trimmed indexes) and start another."""
        self._close_active()
        base = self.log_end_offset if new_base_offset is None else new_base_offset
        self.active = SegmentIndexes(base_offset=base,
                                     index_interval_bytes=self.index_interval_bytes)
        self.segment_bases.append(base)
        self._active_path = self.dir / (segment_name(base, ".log") + self.file_suffix)
        self._active_path.touch()

    def release(self) -> None:
        """Close the active segment's file without writing anything more."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _close_active(self) -> None:
        self.release()
        seg = self.active
        if seg is None:
            return
        seg.write_indexes(self.dir, self.file_suffix)
        self.active = None

    def close(self) -> None:
        self._close_active()
