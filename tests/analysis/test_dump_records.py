"""``dump --records`` decodes records with the C decoder and gives what construct gives.

Construct (``record_batch.iter_records``, ``DefaultRecord#readFrom``) is the definition; the C
decoder (``record_decode``) is proven equal batch by batch in tests/formats/test_record_decode.py.
Here the whole dump of every bundled segment -- data, control, coordinator, KRaft metadata,
legacy and damaged ones -- is the same item for item with the decoder switched off.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkatx.analysis.dump import DumpFilter, DumpStats, dump
from kafkatx.formats import record_decode
from kafkatx.formats.record_batch import Record, build_batch

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SEGMENTS = sorted(str(p) for p in FIXTURES.rglob("*.log"))


def _dump(paths: list[str]) -> list[dict]:
    return list(dump(paths, DumpFilter(), records=True, stats=DumpStats()))


def test_fixture_dumps_are_the_same_without_the_decoder(monkeypatch: pytest.MonkeyPatch) -> None:
    assert record_decode.HAVE_FAST_DECODER
    assert len(SEGMENTS) > 100
    fast = _dump(SEGMENTS)
    monkeypatch.setattr(record_decode, "_decode", None)
    assert _dump(SEGMENTS) == fast
    assert sum(len(item.get("records") or ()) for item in fast) > 1000


def test_a_zero_tail_after_many_batches(tmp_path: Path) -> None:
    """Batches then a preallocated zero tail: every batch, then one zero_padding problem (the
    tail is looked for at each batch without reading the file to its end each time)."""
    batches = b"".join(build_batch([Record(offset=i, timestamp=i, key=None, value=b"v")],
                                   base_offset=i) for i in range(300))
    segment = tmp_path / "t-0" / "00000000000000000000.log"
    segment.parent.mkdir()
    segment.write_bytes(batches + bytes(4096))
    items = _dump([str(segment)])
    assert [i["base_offset"] for i in items if i["kind"] == "batch"] == list(range(300))
    assert [(i["problem"], i["position"], i["length"]) for i in items if i["kind"] == "problem"] \
        == [("zero_padding", len(batches), 4096)]
