"""Coordinator partitioning: Java String.hashCode, Kafka Utils.abs, partitionFor."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.semantics.coordinator_partition import (
    java_string_hashcode,
    java_utils_abs,
    partition_for,
)

INT_MIN = -(2**31)


# Values Java itself is documented/known to produce (not recomputed here):
#   "Hello".hashCode() == 69609650, "hello".hashCode() == 99162322 (common textbook values),
#   "Aa" and "BB" both hash to 2112 (the classic collision), "" hashes to 0, and
#   "polygenelubricants".hashCode() == Integer.MIN_VALUE (the well-known Math.abs pitfall).
@pytest.mark.parametrize(
    ("text", "java_hash"),
    [
        ("", 0),
        ("Hello", 69609650),
        ("hello", 99162322),
        ("Aa", 2112),
        ("BB", 2112),
        ("polygenelubricants", INT_MIN),
    ],
)
def test_published_java_hash_codes(text: str, java_hash: int) -> None:
    assert java_string_hashcode(text) == java_hash


def _polynomial_hash_bmp(text: str) -> int:
    """Independent check for BMP-only text: sum of c*31^(n-1-i), reduced to int32 at the end."""
    n = len(text)
    total = sum(ord(ch) * 31 ** (n - 1 - i) for i, ch in enumerate(text)) % 2**32
    return total - 2**32 if total >= 2**31 else total


def test_fact_sheet_vectors() -> None:
    # kafka-formats.md §12; the BMP ones recomputed with the power-sum form above.
    vectors = {
        "TesttranId": (368658648, 48),
        "my-txn": (-1061187895, 45),
        "é": (233, 33),
        "日本": (835047, 47),
        "😀": (1772899, 49),
        "polygenelubricants": (INT_MIN, 0),
        "Hello": (69609650, 0),
        "": (0, 0),
    }
    for text, (h, partition) in vectors.items():
        assert java_string_hashcode(text) == h, text
        assert partition_for(text) == partition, text
        if all(ord(ch) < 0x10000 for ch in text):
            assert _polynomial_hash_bmp(text) == h, text


def test_astral_characters_hash_as_surrogate_pairs() -> None:
    # U+1F600 is the UTF-16 pair D83D DE00 in Java: 0xD83D * 31 + 0xDE00.
    assert java_string_hashcode("😀") == 0xD83D * 31 + 0xDE00 == 1772899
    assert java_string_hashcode("😀") != ord("😀")  # not the code point
    assert java_string_hashcode("a😀") == (97 * 31 + 0xD83D) * 31 + 0xDE00


def test_lone_surrogates_hash_like_java() -> None:
    assert java_string_hashcode("\ud800") == 0xD800


def test_utils_abs() -> None:
    assert java_utils_abs(INT_MIN) == 0
    assert java_utils_abs(-5) == 5
    assert java_utils_abs(2**31 - 1) == 2**31 - 1
    assert java_utils_abs(0) == 0


def test_partition_for_uses_the_partition_count() -> None:
    assert partition_for("TesttranId", 50) == 48
    assert partition_for("TesttranId", 1) == 0
    assert partition_for("Hello", 7) == 69609650 % 7
    assert partition_for("my-txn", 100) == 1061187895 % 100
    with pytest.raises(ValueError):
        partition_for("x", 0)


@settings(max_examples=100)
@given(st.text(max_size=30), st.integers(1, 500))
def test_partition_in_range_and_hash_is_int32(text: str, n: int) -> None:
    h = java_string_hashcode(text)
    assert INT_MIN <= h < 2**31
    assert 0 <= partition_for(text, n) < n
