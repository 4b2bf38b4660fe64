"""Every entry of a partition's live segments, decoded, in log order (internal topics' loads)."""

from __future__ import annotations

from collections.abc import Iterator

from kafkatx.errors import UnreadableFileError
from kafkatx.formats.segment import SegmentEntry, SegmentProblem
from kafkatx.storage.discovery import PartitionDir
from kafkatx.storage.readers import iter_segment_file


def iter_partition_entries(pdir: PartitionDir, problems: list[str]
                           ) -> Iterator[tuple[str, SegmentEntry | SegmentProblem]]:
    """(segment path, entry or problem) for each live segment, records decoded; a segment
    that cannot be read adds its one-line error to ``problems`` and the rest are still read."""
    for seg in pdir.segments:
        if seg.log is None:
            continue
        path = str(seg.log)
        try:
            for item in iter_segment_file(seg.log, decode_records=True):
                yield path, item
        except UnreadableFileError as exc:
            problems.append(str(exc))
