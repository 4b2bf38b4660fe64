"""The C record formatter writes exactly what the Python rendering writes, or refuses.

For ``replay --format jsonl|csv`` (``ReplayWriter.batch`` and ``.segment``, the C formatter,
against ``ReplayWriter.write`` of each record decoded by construct's ``iter_records`` and
classified by ``consumer_view.classify``) and for ``dump --records`` (``RECORD_JSON`` against
``Record.to_dict`` through the JSON encoder): batches of every codec with null, empty, UTF-8,
non-printable, non-UTF-8 and CSV-hostile keys, values and headers, control batches, offset
windows, every decision and the records beyond the fetch bound on either side of the high
watermark; then the same batches damaged. A batch the formatter refuses (None) must be one
the Python path renders (or reports) itself; a well-formed batch is never refused, except a
CSV text field holding a CR.
"""

from __future__ import annotations

import io
import json

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkatx.analysis.consumer_view import ConsumerView, classify
from kafkatx.cli.replay_writer import ReplayWriter
from kafkatx.errors import FormatError
from kafkatx.formats.batchscan import HeaderColumns, scan_v2_run
from kafkatx.formats.record_batch import (
    ControlType,
    Record,
    build_batch,
    build_control_batch,
    iter_records,
    parse_header,
)
from kafkatx.formats.record_format import (
    HAVE_FORMATTER,
    INT64_MAX,
    INT64_MIN,
    RECORD_JSON,
    format_batch,
)
from kafkatx.semantics.read_committed import (
    CODE_ABORTED,
    CODE_DELIVER,
    DECISIONS,
    Decision,
    IsolationLevel,
)
from tests.formats.test_record_decode import damaged

T0 = 1_763_700_000_000

# Text that is printable, text that is not (controls, U+2028, unassigned...), bytes that are
# not UTF-8, and what JSON and CSV must escape or quote.
texts = st.one_of(st.text(max_size=12), st.sampled_from(
    ["", "a,b", 'q"q', "line\nbreak", "cr\rx", "tab\tx", "back\\slash", "\x00\x7f",
     "é中\u2028", "\U0001f600", "\u0301x", "\ufffe"]))
payloads = st.one_of(st.none(), st.binary(max_size=40), texts.map(str.encode))
header_lists = st.lists(st.tuples(st.one_of(st.text(max_size=8), texts), payloads), max_size=3)


@st.composite
def batches(draw: st.DrawFn) -> bytes:
    if draw(st.integers(0, 9)) == 0:
        return build_control_batch(
            base_offset=draw(st.integers(0, 2**40)), producer_id=7, producer_epoch=1,
            timestamp=T0, control_type=draw(st.sampled_from([ControlType.COMMIT,
                                                             ControlType.ABORT])),
            coordinator_epoch=draw(st.integers(-1, 100)))
    n = draw(st.integers(0, 8))
    base = draw(st.integers(0, 2**40))
    offsets = sorted(draw(st.lists(st.integers(0, 50), min_size=n, max_size=n, unique=True)))
    records = [Record(offset=base + off, timestamp=draw(st.integers(T0 - 10**9, T0 + 10**9)),
                      key=draw(payloads), value=draw(payloads),
                      headers=tuple(draw(header_lists))) for off in offsets]
    log_append = draw(st.one_of(st.none(), st.integers(T0, T0 + 10**9)))
    return build_batch(records, compression_id=draw(st.integers(0, 4)),
                       log_append_time=log_append, is_transactional=draw(st.booleans()),
                       producer_id=7, producer_epoch=1, base_sequence=0)


def _view(high_watermark: int, pinned: bool) -> ConsumerView:
    return ConsumerView(topic="t", partition=0, isolation=IsolationLevel.READ_COMMITTED,
                        log_end_offset=high_watermark + 10, high_watermark=high_watermark,
                        high_watermark_source="checkpoint", last_stable_offset=high_watermark - 5,
                        lso_source="open_transaction",
                        index_source="file", pinning=(7, 1, 3) if pinned else None)


def segment_case(parts: list[bytes], draw: st.DataObject) -> tuple[
        bytes, HeaderColumns, np.ndarray, np.ndarray, int, int | None, ConsumerView]:
    """A segment of ``parts`` as a replay meets it: its scanned headers, each batch's drawn
    decision (deliver or aborted) and beyond-the-HW flag, a fetch window [lo, hi] and a view."""
    data = b"".join(parts)
    headers, _, _ = scan_v2_run(data, 0, len(data))
    n = len(headers)
    codes = np.array(draw.draw(st.lists(st.sampled_from([CODE_DELIVER, CODE_ABORTED]),
                                        min_size=n, max_size=n)), dtype=np.int8)
    beyond = np.array(draw.draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    base = int(headers.base_offset.min()) if n else 0
    lo = base + draw.draw(st.integers(0, 30))
    hi = draw.draw(st.one_of(st.none(), st.integers(base, base + 2**41)))
    view = _view(base + draw.draw(st.integers(0, 60)), draw.draw(st.booleans()))
    return data, headers, codes, beyond, lo, hi, view


def _exact(data: bytes) -> list[Record] | None:
    try:
        return list(iter_records(data, 0, parse_header(data, 0)))
    except FormatError:
        return None


def _check_replay(data: bytes, fmt: str, decision: Decision, beyond: bool, lo: int,
                  hi: int | None, hw: int, pinned: bool) -> None:
    headers, _, _ = scan_v2_run(data, 0, len(data))
    if len(headers) != 1:
        return  # a damaged header: the scan stops before it, no batch to format
    view = _view(hw, pinned)
    fast_out, slow_out = io.StringIO(), io.StringIO()
    fast, slow = ReplayWriter(fmt, view, fast_out), ReplayWriter(fmt, view, slow_out)
    stopped = fast.batch(data, headers, 0, "f", 7, 1, True, decision, beyond, lo, hi)
    fast.close()
    records = _exact(data)
    if stopped is None:
        # refused: only what the Python path must see itself
        cr = fmt == "csv" and records is not None and any(
            b"\r" in (x or b"") for r in records for x in (r.key, r.value))
        assert records is None or cr or (decision == Decision.ABORTED and not beyond), records
        return
    assert records is not None, "formatted a batch construct does not decode"
    slow_stopped = False
    for rec in records:
        if rec.offset < lo:
            continue
        if hi is not None and rec.offset > hi:
            slow_stopped = True
            break
        slow.write(classify(rec, 7, 1, True, decision, beyond, view, None, None))
    slow.close()
    assert fast_out.getvalue() == slow_out.getvalue()
    assert stopped == slow_stopped
    assert fast.count == slow.count


def test_the_extension_has_the_formatter() -> None:
    assert HAVE_FORMATTER, "the extension was built without _recordfmt.c: pip install -e ."


windows = st.tuples(st.integers(0, 60), st.one_of(st.none(), st.integers(0, 60)))


@settings(max_examples=500, deadline=None)
@given(batches(), st.sampled_from(["jsonl", "csv"]),
       st.sampled_from([Decision.DELIVER, Decision.ABORTED]), st.booleans(), windows,
       st.integers(-5, 60), st.booleans())
def test_replay_batches_format_as_python_renders_them(
        data: bytes, fmt: str, decision: Decision, beyond: bool, window: tuple[int, int | None],
        hw_delta: int, pinned: bool) -> None:
    base = parse_header(data, 0).base_offset
    lo, hi = window
    _check_replay(data, fmt, decision, beyond, base + lo, None if hi is None else base + hi,
                  base + hw_delta, pinned)


@settings(max_examples=500, deadline=None)
@given(batches(), st.sampled_from(["jsonl", "csv"]),
       st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), min_size=1, max_size=4),
       st.one_of(st.none(), st.integers(-2, 12)), st.booleans())
def test_damaged_batches_are_refused_or_format_the_same(
        data: bytes, fmt: str, edits: list[tuple[int, int]], count: int | None,
        beyond: bool) -> None:
    data = damaged(data, edits, count)
    base = parse_header(data, 0).base_offset
    _check_replay(data, fmt, Decision.DELIVER, beyond, INT64_MIN, None, base + 3, False)


@settings(max_examples=300, deadline=None)
@given(batches(), windows, st.booleans())
def test_dump_records_format_as_to_dict_encodes_them(
        data: bytes, window: tuple[int, int | None], damage: bool) -> None:
    if damage:
        data = damaged(data, [(len(data) // 2, 0xFF)], None)
    headers, _, _ = scan_v2_run(data, 0, len(data))
    if len(headers) != 1:
        return
    base = int(headers.base_offset[0])
    lo, hi = base + window[0], INT64_MAX if window[1] is None else base + window[1]
    done = format_batch(data, headers, 0, RECORD_JSON, min_offset=lo, max_offset=hi,
                        stop_at_max=False)
    records = _exact(data)
    if done is None:
        assert records is None
        return
    assert records is not None
    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    shown = [r for r in records if lo <= r.offset <= hi]
    assert done.text == ",".join(encode(r.to_dict()) for r in shown)
    assert done.written == len(shown)


def _python_rows(writer: ReplayWriter, data: bytes, headers: HeaderColumns, rows: list[int],
                 codes: list[int], beyond: list[bool], lo: int, hi: int | None,
                 view: ConsumerView) -> bool:
    """What replay_segment does for batches the formatter leaves; whether it stopped."""
    for j, code, past in zip(rows, codes, beyond, strict=True):
        records = _exact(data[int(headers.position[j]):])
        for rec in records or []:
            if rec.offset < lo:
                continue
            if hi is not None and rec.offset > hi:
                return True
            writer.write(classify(rec, 7, 1, True, DECISIONS[code], past, view, None, None))
    return False


@settings(max_examples=300, deadline=None)
@given(st.lists(batches(), min_size=1, max_size=6), st.sampled_from(["jsonl", "csv"]),
       st.data())
def test_segments_format_as_python_renders_them(parts: list[bytes], fmt: str,
                                                draw: st.DataObject) -> None:
    """``ReplayWriter.segment``: many batches per C call, compressed ones one at a time, the
    rest left to the caller, as ``consumer_view.replay_segment`` drives it."""
    data, headers, codes, beyond, lo, hi, view = segment_case(parts, draw)
    n = len(headers)
    rows = np.arange(n)
    fast_out, slow_out = io.StringIO(), io.StringIO()
    fast, slow = ReplayWriter(fmt, view, fast_out), ReplayWriter(fmt, view, slow_out)
    run = fast.segment(data, headers, rows, codes, beyond, lo, hi, "f")
    i = 0
    while i < n:
        i, stopped = run(i, n)
        if stopped or (i < n and _python_rows(fast, data, headers, [i], [int(codes[i])],
                                              [bool(beyond[i])], lo, hi, view)):
            break
        i += i < n
    _python_rows(slow, data, headers, rows.tolist(), codes.tolist(), beyond.tolist(), lo, hi,
                 view)
    fast.close()
    slow.close()
    assert fast_out.getvalue() == slow_out.getvalue()
