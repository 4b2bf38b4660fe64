"""Every record of every v2 batch decoded, as a consumer (and Kafka's ``LogValidator``) will:
what does not decode becomes an ``invalid_batch`` problem naming the batch and the byte.

A batch whose CRC is right can still hold records no client can read: a record length running
past the batch, a codec flag over bytes that are not of that codec, fewer or more records than
the header declares, bytes after the last record. The broker's log load never looks
(``LogSegment#recover`` checks CRCs and offsets only), so such a batch sits in a log until a
fetch fails (``DefaultRecordBatch#iterator``: ``InvalidRecordException`` / ``KafkaException``,
librdkafka's "Decompression failed"). The scan (:mod:`kafkatx.formats.segment_scan`) reads
headers only; :func:`record_problems` is the deeper pass ``verify`` adds.
"""

from __future__ import annotations

import numpy as np

from kafkatx.errors import FormatError
from kafkatx.formats.record_decode import check_records_at
from kafkatx.formats.segment import INVALID_BATCH, SegmentProblem
from kafkatx.formats.segment_scan import SegmentScan


def record_problems(buf: bytes | memoryview, scan: SegmentScan) -> list[SegmentProblem]:
    """One ``invalid_batch`` problem per v2 data batch of ``scan`` (CRC valid; a bad CRC is
    reported already) whose records do not decode, at the byte where decoding stopped."""
    h = scan.headers
    rows = np.flatnonzero((h.magic == 2) & h.crc_valid & ~h.is_control)
    out: list[SegmentProblem] = []
    for row in rows:
        i = int(row)
        try:
            check_records_at(buf, h, i, path=scan.path)
        except FormatError as exc:
            out.append(undecodable_batch(exc, int(h.position[i]), int(h.size[i]),
                                         int(h.base_offset[i]), int(h.last_offset[i]),
                                         scan.path))
    return out


def undecodable_batch(exc: FormatError, position: int, size: int, base_offset: int,
                      last_offset: int, path: str | None) -> SegmentProblem:
    what = f"{exc.field}: {exc.message}" if exc.field else exc.message
    where = exc.position if exc.position is not None else position
    return SegmentProblem(
        kind=INVALID_BATCH, position=position, length=size, path=path,
        message=f"the records of batch {base_offset}..{last_offset} do not decode: {what} "
                f"(at byte {where}); a consumer fetching it fails (Kafka's LogValidator "
                f"would have refused it: CORRUPT_MESSAGE)")
