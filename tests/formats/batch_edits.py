"""Broken v2 batches for tests, made as a broken producer would send them: a built batch with a
field or its records section changed, and its length and CRC-32C made right again, so only the
change is wrong. The byte positions are spelt here by hand (tests check the layout, they do not
borrow it): length at 8, CRC at 17 over bytes 21.., attributes at 21, record count at 57."""

from __future__ import annotations

import struct

import crc32c

HEADER_SIZE = 61


def recrc(batch: bytearray) -> bytes:
    """``batch`` with its CRC-32C over bytes 21.. written at 17."""
    struct.pack_into(">I", batch, 17, crc32c.crc32c(bytes(batch[21:])))
    return bytes(batch)


def with_records_section(batch: bytes, section: bytes, *, count: int | None = None,
                         attributes: int | None = None) -> bytes:
    """``batch``'s header with ``section`` as its records, the length fitted and, when given,
    another record count or attributes; the CRC made right."""
    out = bytearray(batch[:HEADER_SIZE] + section)
    struct.pack_into(">i", out, 8, len(out) - 12)
    if count is not None:
        struct.pack_into(">i", out, 57, count)
    if attributes is not None:
        struct.pack_into(">h", out, 21, attributes)
    return recrc(out)
