"""``dump --records -f json|jsonl`` written by the C extension many batches at a time
(``dump_lines``, ``_dumpfmt.c``) is the text of the Python items, byte for byte.

The Python path -- each batch a dict with its records decoded, JSON-encoded by ``JsonWriter``
-- is the definition (it is what runs without the extension, ``KAFKATX_NO_EXTENSION=1``).
Generated segments hold every codec, null/empty/binary/non-printable keys, values and headers,
idempotent, transactional and plain batches, delete horizons, LogAppendTime, COMMIT/ABORT
markers and other control batches, legacy v0/v1 entries, damaged bytes, cut tails and zero
tails; filters by offsets and producer; scan windows and text chunks far smaller than the
segment, so every boundary between the C runs, the Python rows and the problems is met.
"""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.analysis import dump_lines
from kafkatx.analysis.dump import DumpFilter, DumpStats, dump
from kafkatx.cli.output import JsonWriter
from kafkatx.formats.legacy_message import build_legacy_entry
from kafkatx.formats.record_batch import Record, build_batch
from tests.formats.test_record_decode import damaged
from tests.formats.test_record_format import T0, batches, header_lists, payloads
from tests.formats.test_segment import control_batches

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@st.composite
def data_batches(draw: st.DrawFn, base: int) -> bytes:
    """A batch of a producer (none, idempotent or transactional) at ``base``."""
    n = draw(st.integers(1, 5))
    records = [Record(offset=base + i, timestamp=T0 + draw(st.integers(-5, 5)),
                      key=draw(payloads), value=draw(payloads),
                      headers=tuple(draw(header_lists))) for i in range(n)]
    pid = draw(st.sampled_from([-1, 7, 9]))
    return build_batch(
        records, compression_id=draw(st.sampled_from([0, 0, 0, 1, 2, 3, 4])),
        log_append_time=draw(st.sampled_from([None, None, T0 + 99])),
        is_transactional=pid >= 0 and draw(st.booleans()), producer_id=pid,
        producer_epoch=-1 if pid < 0 else draw(st.integers(0, 2)),
        base_sequence=-1 if pid < 0 else draw(st.integers(0, 2**31 - 1)),
        partition_leader_epoch=draw(st.integers(-1, 5)),
        delete_horizon_ms=draw(st.sampled_from([None, None, T0 + 7])))


@st.composite
def segments(draw: st.DrawFn) -> bytes:
    parts: list[bytes] = []
    offset = 0
    for _ in range(draw(st.integers(1, 10))):
        kind = draw(st.sampled_from(["data"] * 5 + ["any", "control", "legacy"]))
        if kind == "data":
            part = draw(data_batches(offset))
        elif kind == "any":  # markers among them
            part = draw(batches())
        elif kind == "control":
            part = draw(control_batches())
        else:
            part = build_legacy_entry(offset=offset, magic=draw(st.sampled_from([0, 1])),
                                      key=draw(payloads), value=draw(payloads) or b"v",
                                      timestamp=T0)
        if draw(st.integers(0, 7)) == 0 and kind != "legacy":
            part = damaged(part, [(draw(st.integers(0, 10**6)), draw(st.integers(0, 255)))],
                           draw(st.one_of(st.none(), st.integers(-1, 9))))
        elif draw(st.integers(0, 7)) == 0:  # a byte of the header (or of a legacy entry)
            at = draw(st.integers(0, min(len(part), 61) - 1))
            part = part[:at] + bytes([draw(st.integers(0, 255))]) + part[at + 1:]
        parts.append(part)
        offset += 10
    data = b"".join(parts)
    if draw(st.integers(0, 5)) == 0:
        data = data[:draw(st.integers(0, len(data)))]
    if draw(st.integers(0, 5)) == 0:
        data += bytes(draw(st.integers(1, 200)))
    return data


filters = st.builds(
    DumpFilter,
    producer_ids=st.sampled_from([None, None, frozenset({7}), frozenset({9, -1})]),
    producer_epoch=st.sampled_from([None, None, 1]),
    from_offset=st.one_of(st.none(), st.integers(0, 60)),
    to_offset=st.one_of(st.none(), st.integers(0, 90)))


def _written(paths: list[str], flt: DumpFilter, *, array: bool, fast: bool,
             lines: bool = True, utf8_stream: bool = False) -> str:
    """The JSON text of the dump items: the Python items (not ``fast``), or the C formatter's
    (``fast``: records as ``RawJsonList``, with ``lines`` whole batches' text); on a text
    stream, or (``utf8_stream``) a UTF-8 one over bytes (the C text then goes to its buffer
    as bytes, as onto stdout)."""
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8") if utf8_stream else io.StringIO()
    writer = JsonWriter(out, array=array)
    for item in dump(paths, flt, records=True, stats=DumpStats(), encoded=fast,
                     lines=writer.item_separator if fast and lines else None):
        if item["kind"] == "encoded":
            writer.write_encoded(item["text"])
        else:
            writer.write(item)
    writer.close()
    return raw.getvalue().decode() if utf8_stream else out.getvalue()


def test_the_extension_has_the_dump_formatter() -> None:
    assert dump_lines.HAVE_LINES, "the extension was built without _dumpfmt.c: pip install -e ."


@settings(max_examples=250, deadline=None)
@given(segments(), filters, st.booleans(), st.sampled_from([1, 200, 4096, 1 << 24]),
       st.sampled_from([1, 300, 1 << 20]))
def test_generated_segments_dump_as_the_python_items(
        data: bytes, flt: DumpFilter, array: bool, window: int, text_at_once: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp:
        seg = Path(tmp) / "t-0" / "00000000000000000000.log"
        seg.parent.mkdir()
        seg.write_bytes(data)
        mp.setattr(dump_lines, "WINDOW", window)
        mp.setattr(dump_lines, "TEXT_AT_ONCE", text_at_once)
        fast = _written([str(seg)], flt, array=array, fast=True)
        assert fast == _written([str(seg)], flt, array=array, fast=False)
        assert fast == _written([str(seg)], flt, array=array, fast=True, utf8_stream=True)
        # the records of each batch from the C formatter (what the table takes)
        assert fast == _written([str(seg)], flt, array=array, fast=True, lines=False)


def test_fixture_segments_dump_as_the_python_items(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every bundled log dir (data, markers, coordinator and metadata partitions, legacy and
    damaged segments, indexes, snapshots), small windows: the same JSON lines."""
    monkeypatch.setattr(dump_lines, "WINDOW", 4096)
    paths = [str(p) for p in sorted(FIXTURES.iterdir()) if p.is_dir()]
    fast = _written(paths, DumpFilter(), array=False, fast=True, utf8_stream=True)
    assert fast == _written(paths, DumpFilter(), array=False, fast=False)
    assert fast.count('"kind":"batch"') > 1000


_DECIMAL_EDGES = [0, -1, 2**63 - 1, -(2**63)] + [s * (10**k + d) for k in range(19)
                                                  for d in (-1, 0) for s in (1, -1)]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_DECIMAL_EDGES), st.integers(-(2**63), 2**63 - 1)),
                min_size=3, max_size=3))
def test_the_c_decimals_are_pythons(values: list[int]) -> None:
    """The C writers' integers (``put_ll``: producer ids, sequences, epochs, any int64) are
    ``str(int)``'s, at every number of digits and both ends of int64."""
    data = build_batch([Record(offset=0, timestamp=T0, key=b"k", value=None, headers=())])
    from kafkatx.formats.segment_scan import scan_segment

    scan = scan_segment(data)
    rows = dump_lines.kept_rows(scan.headers, DumpFilter())
    cols = np.ascontiguousarray(dump_lines.batch_columns(scan, rows))
    fields = dict(zip(("producer_id", "base_sequence", "last_sequence"), values, strict=True))
    for name, value in fields.items():
        cols[dump_lines.COLUMNS.index(name)] = value
    text, _ = dump_lines._format(data, cols, len(rows), b'{"base_offset":', b"\n",
                                 -(2**63), 2**63 - 1, 0, len(rows), 1 << 20)
    item = text.decode()
    for name, value in fields.items():
        assert f'"{name}":{value},' in item
