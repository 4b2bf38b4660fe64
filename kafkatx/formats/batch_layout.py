"""The v2 record batch header's byte layout, defined once: Kafka's ``DefaultRecordBatch``.

Every reader and writer of v2 batches takes its offsets, sizes, attribute bits and ``struct``
formats from here: the parser (:mod:`kafkatx.formats.record_batch`), the columnar scanner
(:mod:`kafkatx.formats.batchscan`; its C twin ``_batchscan.c`` repeats the numbers and is
proven equal in ``tests/formats``), the segment walker, the broker's in-place header patches and
the segment writer. Big-endian, as on the wire and on disk::

    offset  size  field                    DefaultRecordBatch constant
         0     8  base offset              BASE_OFFSET_OFFSET
         8     4  batch length             LENGTH_OFFSET          (from the next byte on)
        12     4  partition leader epoch   PARTITION_LEADER_EPOCH_OFFSET
        16     1  magic (2)                MAGIC_OFFSET
        17     4  CRC-32C                  CRC_OFFSET             (over [21, end of batch))
        21     2  attributes               ATTRIBUTES_OFFSET
        23     4  last offset delta        LAST_OFFSET_DELTA_OFFSET
        27     8  base timestamp           BASE_TIMESTAMP_OFFSET
        35     8  max timestamp            MAX_TIMESTAMP_OFFSET
        43     8  producer id              PRODUCER_ID_OFFSET
        51     2  producer epoch           PRODUCER_EPOCH_OFFSET
        53     4  base sequence            BASE_SEQUENCE_OFFSET
        57     4  records count            RECORDS_COUNT_OFFSET
        61        records                  RECORD_BATCH_OVERHEAD
"""

from __future__ import annotations

import struct

MAGIC_V2 = 2

BASE_OFFSET_OFFSET = 0
LENGTH_OFFSET = 8
LOG_OVERHEAD = 12  # Records.LOG_OVERHEAD: base offset + length, shared with v0/v1 entries
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16  # the magic byte sits here in v0/v1 entries too
HEADER_SIZE_UP_TO_MAGIC = MAGIC_OFFSET + 1  # what tells a v2 batch from a legacy entry
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
CRC_START = ATTRIBUTES_OFFSET  # the CRC covers [attributes, end of batch)
LAST_OFFSET_DELTA_OFFSET = 23
BASE_TIMESTAMP_OFFSET = 27
MAX_TIMESTAMP_OFFSET = 35
PRODUCER_ID_OFFSET = 43
PRODUCER_EPOCH_OFFSET = 51
BASE_SEQUENCE_OFFSET = 53
RECORDS_COUNT_OFFSET = 57
RECORD_BATCH_OVERHEAD = 61
HEADER_SIZE = RECORD_BATCH_OVERHEAD
MIN_BATCH_LENGTH = RECORD_BATCH_OVERHEAD - LOG_OVERHEAD

# The attributes' bits.
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
DELETE_HORIZON_FLAG = 0x40

# The whole header, base offset to records count, in field order.
HEADER_FIELDS = ("base_offset", "batch_length", "partition_leader_epoch", "magic", "crc",
                 "attributes", "last_offset_delta", "base_timestamp", "max_timestamp",
                 "producer_id", "producer_epoch", "base_sequence", "records_count")
HEADER = struct.Struct(">qiibIhiqqqhii")
# The log overhead every entry of a segment starts with: (base offset, batch length).
FRAME = struct.Struct(">qi")
# Single fields, read or patched at their offsets above.
BASE_OFFSET_FIELD = struct.Struct(">q")
LENGTH_FIELD = struct.Struct(">i")
PARTITION_LEADER_EPOCH_FIELD = struct.Struct(">i")
CRC_FIELD = struct.Struct(">I")
ATTRIBUTES_FIELD = struct.Struct(">h")
LAST_OFFSET_DELTA_FIELD = struct.Struct(">i")
MAX_TIMESTAMP_FIELD = struct.Struct(">q")

assert HEADER.size == RECORD_BATCH_OVERHEAD
assert FRAME.size == LOG_OVERHEAD
