"""Evidence files read and parsed, for the analysis (which never opens a file itself).

Each reader opens its file read-only through :func:`kafkatx.storage.files.open_bytes` (so the
manifest records it) and hands back what ``kafkatx.formats`` parses from it; unreadable files
raise :class:`kafkatx.errors.UnreadableFileError` as ``open_bytes`` does.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from kafkatx.formats.checkpoints import LeaderEpochCheckpoint, read_leader_epoch_checkpoint
from kafkatx.formats.producer_snapshot import ProducerSnapshot, read_producer_snapshot
from kafkatx.formats.segment_scan import SegmentScan, scan_segment
from kafkatx.formats.txn_index import TxnIndexRead, read_txn_index
from kafkatx.storage.files import open_bytes

if TYPE_CHECKING:
    from kafkatx.formats.segment import SegmentEntry, SegmentProblem

PathLike = str | os.PathLike[str]


@contextmanager
def segment_buffer(path: PathLike) -> Iterator[bytes | mmap.mmap]:
    """A segment's bytes, mapped while the caller reads records out of chosen batches."""
    with open_bytes(path) as data:
        yield data


def file_bytes(path: PathLike) -> bytes:
    """The whole file."""
    with open_bytes(path) as data:
        return bytes(data)


def scan_segment_file(path: PathLike) -> SegmentScan:
    """A ``.log`` segment's batch headers as columns (``formats.segment_scan``)."""
    with open_bytes(path) as data:
        return scan_segment(data, path=str(path))


def iter_segment_file(path: PathLike, *, decode_records: bool
                      ) -> Iterator[SegmentEntry | SegmentProblem]:
    """A ``.log`` segment's entries one by one (``formats.segment.iter_segment``), the file
    mapped while they are read."""
    from kafkatx.formats.segment import iter_segment  # the exact parsers: not for a scan

    with open_bytes(path) as data:
        yield from iter_segment(data, path=str(path), decode_records=decode_records)


def read_txn_index_file(path: PathLike, *, base_offset: int) -> TxnIndexRead:
    with open_bytes(path) as data:
        return read_txn_index(bytes(data), path=str(path), base_offset=base_offset)


def read_snapshot_file(path: PathLike) -> ProducerSnapshot:
    with open_bytes(path) as data:
        return read_producer_snapshot(bytes(data), path=str(path))


def read_leader_epoch_checkpoint_file(path: PathLike) -> LeaderEpochCheckpoint:
    with open_bytes(path) as data:
        return read_leader_epoch_checkpoint(bytes(data), path=str(path))


__all__ = [
    "file_bytes",
    "iter_segment_file",
    "read_leader_epoch_checkpoint_file",
    "read_snapshot_file",
    "read_txn_index_file",
    "scan_segment_file",
    "segment_buffer",
]
