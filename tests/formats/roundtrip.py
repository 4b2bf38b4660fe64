"""The one round-trip check of every format test: build, parse, compare, rebuild, compare, size."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any


def classic_string(text: str) -> bytes:
    """A non-flexible Kafka STRING, assembled by hand: int16 length, then UTF-8 bytes."""
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def assert_roundtrip(
    value: Any,
    build: Callable[[Any], bytes],
    parse: Callable[[bytes], Any],
    *,
    size: int | None = None,
) -> bytes:
    """Build ``value``, parse it back, and require equality both ways (and the size, if given)."""
    data = build(value)
    parsed = parse(data)
    assert parsed == value, f"parse(build(v)) != v:\n{parsed!r}\n{value!r}"
    again = build(parsed)
    assert again == data, "build(parse(b)) != b"
    if size is not None:
        assert len(data) == size, f"expected {size} bytes, built {len(data)}"
    return data
