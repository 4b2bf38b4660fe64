"""The fixed-width file layouts read with ``struct`` and built with construct are one layout.

``.txnindex`` (``AbortedTxn``), ``.snapshot`` (``PRODUCER_SNAPSHOT_ENTRY_SCHEMA``), ``.index``
(``OffsetIndex``) and ``.timeindex`` (``TimeIndex``) entries are defined once, as (name,
``struct`` code) pairs: the readers unpack them with ``struct`` (construct is not loaded to
read them), the builders use their construct form. Any bytes decode to the same values both
ways, and building then reading gives the values back.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.formats import offset_index, producer_snapshot, time_index, txn_index
from kafkatx.formats.primitives import struct_of

ENTRY_LAYOUTS = {
    "txnindex": (txn_index.ENTRY_FIELDS, txn_index.ENTRY_STRUCT),
    "snapshot": (producer_snapshot.ENTRY_FIELDS, producer_snapshot.ENTRY_STRUCT),
    "index": (offset_index.ENTRY_FIELDS, offset_index.ENTRY_STRUCT),
    "timeindex": (time_index.ENTRY_FIELDS, time_index.ENTRY_STRUCT),
}


@pytest.mark.parametrize("kind", sorted(ENTRY_LAYOUTS))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_struct_and_construct_read_the_same_values(kind: str, data: st.DataObject) -> None:
    fields, layout = ENTRY_LAYOUTS[kind]
    entry: Any = struct_of(fields)
    assert entry.sizeof() == layout.size
    raw = data.draw(st.binary(min_size=layout.size, max_size=layout.size))
    by_construct = entry.parse(raw)
    by_struct = dict(zip((name for name, _ in fields), layout.unpack(raw), strict=True))
    assert by_struct == {name: by_construct[name] for name, _ in fields}
    assert entry.build(by_struct) == raw


def test_snapshot_header_is_the_construct_header() -> None:
    """The header read with ``HEADER_STRUCT`` (version, crc, count) is what the construct
    definition of the whole file writes before its entries (the count is the array's)."""
    entries = [producer_snapshot.ProducerSnapshotEntry(
        producer_id=7, producer_epoch=1, last_sequence=4, last_offset=99, offset_delta=4,
        timestamp=1_700_000_000_000, coordinator_epoch=3, current_txn_first_offset=-1)] * 3
    data = producer_snapshot.build_producer_snapshot(entries)
    version, crc, count = producer_snapshot.HEADER_STRUCT.unpack_from(data)
    assert (version, count) == (producer_snapshot.SNAPSHOT_VERSION, 3)
    assert crc == struct.unpack_from(">I", data, producer_snapshot.CRC_OFFSET)[0]
    assert producer_snapshot.read_producer_snapshot(data).crc_valid
