"""The one round-trip check of every format test: build, parse, compare, rebuild, compare, size."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


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
