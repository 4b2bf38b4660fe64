"""``replay --format jsonl|csv``: records written as they are decoded, whole batches at a time.

:class:`ReplayWriter` writes a :class:`ReplayedRecord` as the jsonl/csv contract says
(``write``), and, as the ``formatter`` of ``consumer_view.replay_segment``, whole batches of
records straight from their bytes through the C formatter (``batch``): the text that is the
same for every record of the batch (producer, visibility, reason, view) is cut from the Python
rendering of a sample record of that batch, so the two paths cannot disagree on it, and the
per-record part (offset, timestamp, key, value, headers) follows the same rendering rules
(proven equal by tests/cli/test_replay_writer.py). Text goes out in large writes.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from typing import Any, TextIO, TypeVar

import numpy as np

from kafkatx.analysis.consumer_view import ConsumerView, ReplayedRecord, classify
from kafkatx.cli.output import BufferedText
from kafkatx.formats.batchscan import HeaderColumns
from kafkatx.formats.record_format import (
    INT64_MAX,
    INT64_MIN,
    Templates,
    format_batch,
    format_batches_function,
)
from kafkatx.formats.record_values import Record
from kafkatx.semantics.read_committed import DECISIONS, Decision

_format_batches = format_batches_function()
# Bytes of a segment whose records are written as jsonl/csv by one call, at most: their text
# (~3x that) is one allocation, a few hundred KB the allocator reuses; pieces of several MB
# were mapped and unmapped again each time, every page of them faulted in anew.
TEXT_BYTES_AT_ONCE = 1 << 17

CSV_COLUMNS = ("offset", "timestamp", "producer_id", "producer_epoch", "key", "key_encoding",
               "value", "value_encoding", "headers", "visible", "reason", "abort_marker_offset",
               "transaction_first_offset", "pinned_by_producer_id", "pinned_by_first_offset")

def csv_row(d: dict[str, Any]) -> list[Any]:
    """A record's ``to_dict`` as its CSV columns."""
    pin = d.get("pinned_by") or {}
    return [d["offset"], d["timestamp"], d["producer_id"], d["producer_epoch"],
            "" if d["key"] is None else d["key"], d.get("key_encoding", ""),
            "" if d["value"] is None else d["value"], d.get("value_encoding", ""),
            json.dumps(d["headers"], ensure_ascii=False), str(d["visible"]).lower(),
            d.get("reason", ""), blank(d.get("abort_marker_offset")),
            blank(d.get("transaction_first_offset")), blank(pin.get("producer_id")),
            blank(pin.get("first_offset"))]


def blank(v: Any) -> Any:
    return "" if v is None else v


T = TypeVar("T")
TemplateKey = tuple[int, int, bool, Decision, bool]


def batch_templates(headers: HeaderColumns, rows: np.ndarray, codes: np.ndarray,
                    beyond: np.ndarray, template_for: Callable[[TemplateKey], T]
                    ) -> tuple[list[T | None], np.ndarray]:
    """The distinct (producer id, epoch, transactional, decision, beyond) of the batches at
    ``rows`` -- all a record's fields beside its own depend on -- each with the caller's
    template (None for an aborted batch within the fetch bound: each of its records' aborted
    transaction is looked up on its own offset), and each batch's index into them (-1: None)."""
    # One int64 per batch for what its text depends on (sorting records is ~50x slower):
    # producer (by rank), epoch, transactional, decision code (< 4), beyond.
    pids, pid_rank = np.unique(headers.producer_id[rows], return_inverse=True)
    combined = pid_rank.reshape(-1).astype(np.int64) << 20
    combined |= (headers.producer_epoch[rows].astype(np.int64) & 0xFFFF) << 4
    combined |= headers.is_transactional[rows].astype(np.int64) << 3
    combined |= codes.astype(np.int64) << 1
    combined |= beyond.astype(np.int64)
    unique, inverse = np.unique(combined, return_inverse=True)
    templates: list[T | None] = []
    for k in unique.tolist():
        epoch = (k >> 4) & 0xFFFF
        decision = DECISIONS[(k >> 1) & 3]
        key = (int(pids[k >> 20]), epoch - 0x10000 if epoch >= 0x8000 else epoch,
               bool(k >> 3 & 1), decision, bool(k & 1))
        if decision == Decision.ABORTED and not key[4]:
            templates.append(None)
        else:
            templates.append(template_for(key))
    template_of = np.array([-1 if t is None else k for k, t in enumerate(templates)],
                           dtype=np.int64)
    index = template_of[inverse.reshape(-1)] if templates else np.empty(0, np.int64)
    return templates, index


def batch_columns(headers: HeaderColumns, rows: np.ndarray) -> list[np.ndarray]:
    """The header fields of the batches at ``rows`` the C extension's segment walkers take:
    position, whole size, attributes, records count, base offset, base and max timestamp."""
    return [np.ascontiguousarray(c, dtype=np.int64) for c in (
        headers.position[rows], headers.batch_length[rows] + 12, headers.attributes[rows],
        headers.records_count[rows], headers.base_offset[rows],
        headers.base_timestamp[rows], headers.max_timestamp[rows])]


class ReplayWriter:
    """Replayed records as jsonl (``view`` added to each) or csv (with its header row)."""

    def __init__(self, fmt: str, consumer: ConsumerView, out: TextIO) -> None:
        self.fmt = fmt
        self.consumer = consumer
        self.out = BufferedText(out)
        self.count = 0
        self._templates: dict[tuple[Any, ...], Templates] = {}
        self.mode = int(fmt == "csv")  # the C formatter's: 0 JSON, 1 CSV, 2 table
        self._encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
        if fmt == "csv":
            self.out.put(self._csv_line(CSV_COLUMNS))

    def write(self, r: ReplayedRecord) -> None:
        """One record rendered in Python (a batch the C formatter does not take)."""
        self.out.put(self._text(r))
        self.count += 1

    def batch(self, data: Any, headers: HeaderColumns, row: int, path: str, producer_id: int,
              producer_epoch: int, is_transactional: bool, decision: Decision, beyond: bool,
              min_offset: int, max_offset: int | None) -> bool | None:
        """The records of batch ``row`` within the offsets written at once; whether one past
        ``max_offset`` was met; None when this batch must go through :meth:`write`."""
        if decision == Decision.ABORTED and not beyond:
            return None  # each record's aborted transaction is looked up on its own offset
        templates = self._template(
            (producer_id, producer_epoch, is_transactional, decision, beyond))
        done = format_batch(data, headers, row, templates, min_offset=min_offset,
                            max_offset=INT64_MAX if max_offset is None else max_offset,
                            path=path)
        if done is None:
            return None
        self.out.put(done.text)
        self.count += done.written
        return done.stopped

    def segment(self, data: Any, headers: HeaderColumns, rows: np.ndarray, codes: np.ndarray,
                beyond: np.ndarray, min_offset: int, max_offset: int | None, path: str
                ) -> Callable[[int, int], tuple[int, bool]]:
        """``consumer_view.BatchFormatter``: the batches at ``rows`` of a segment (with their
        decision codes and whether each is beyond the fetch bound) formatted by the C
        extension many at a time; a compressed batch one at a time (:meth:`batch`); a batch
        neither takes is left to the caller."""
        high = INT64_MAX if max_offset is None else max_offset
        templates, index = batch_templates(headers, rows, codes, beyond, self._template)
        columns = batch_columns(headers, rows)
        packed = tuple((t.prefix, t.mid_timestamp, t.mid_key, t.suffix_low, t.suffix_high,
                        t.split) if t is not None else (b"", b"", b"", b"", b"", 0)
                       for t in templates)
        row_list = rows.tolist()

        positions = columns[0]

        def run(i: int, end: int) -> tuple[int, bool]:
            while i < end:
                if _format_batches is not None:
                    stop = end if self.mode == 2 else min(end, max(i + 1, int(np.searchsorted(
                        positions, positions[i] + TEXT_BYTES_AT_ONCE))))
                    text, written, stopped, i = _format_batches(
                        data, len(row_list), *columns, index, packed, min_offset, high,
                        self.mode, i, stop)
                    self.out.put(text.decode("utf-8"))
                    self.count += written
                    if stopped:
                        return i, True
                    if i >= end:
                        break
                    if i == stop:
                        continue  # a piece written whole: the next one
                template = templates[index[i]] if index[i] >= 0 else None
                done = None if template is None else format_batch(
                    data, headers, row_list[i], template, min_offset=min_offset,
                    max_offset=high, path=path)
                if done is None:
                    return i, False
                self.out.put(done.text)
                self.count += done.written
                i += 1
                if done.stopped:
                    return i, True
            return i, False

        return run

    def close(self) -> None:
        self.out.flush()

    def _template(self, key: tuple[int, int, bool, Decision, bool]) -> Templates:
        templates = self._templates.get(key)
        if templates is None:
            templates = self._templates[key] = self._make_templates(*key)
        return templates

    def _text(self, r: ReplayedRecord) -> str:
        d = r.to_dict()
        if self.fmt == "csv":
            return self._csv_line(csv_row(d))
        return self._encode({**d, "view": self.consumer.view}) + "\n"

    @staticmethod
    def _csv_line(row: Any) -> str:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow(row)
        return buf.getvalue()

    def _make_templates(self, producer_id: int, producer_epoch: int, is_transactional: bool,
                        decision: Decision, beyond: bool) -> Templates:
        """The text around a record's own fields, cut from sample records of the batch: one
        just below the high watermark and one at it (the only offset ``classify`` looks at)."""
        split = self.consumer.high_watermark if beyond else INT64_MIN
        low, high = (self._cut(classify(
            Record(offset=offset, timestamp=0, key=None, value=None), producer_id,
            producer_epoch, is_transactional, decision, beyond, self.consumer, None, None))
            for offset in (split - 1, split))
        prefix, mid_timestamp, mid_key, suffix_low = low
        if high[:3] != low[:3]:
            raise AssertionError("a batch's producer fields depend on the record's offset")
        if self.fmt == "csv":
            return Templates(prefix, mid_timestamp, mid_key, suffix_low, high[3], split,
                             csv=True)
        return Templates(prefix, mid_timestamp, mid_key, suffix_low, high[3], split)

    def _cut(self, sample: ReplayedRecord) -> tuple[bytes, bytes, bytes, bytes]:
        # The sample's offset only chose its classification: written as 0, like its empty
        # key and value, then cut out.
        text = self._text(ReplayedRecord(
            record=Record(offset=0, timestamp=0, key=None, value=None),
            producer_id=sample.producer_id, producer_epoch=sample.producer_epoch,
            is_transactional=sample.is_transactional, visible=sample.visible,
            reason=sample.reason, abort_marker_offset=sample.abort_marker_offset,
            transaction_first_offset=sample.transaction_first_offset,
            pinned_by=sample.pinned_by))
        if self.fmt == "csv":
            head, fields = "0,0", ",,,,[]"
            prefix, mid_timestamp = "", ","
        else:
            head, fields = '{"offset":0,"timestamp":0', '"key":null,"value":null,"headers":[]'
            prefix, mid_timestamp = '{"offset":', ',"timestamp":'
        if not text.startswith(head) or fields not in text:
            raise AssertionError(f"unexpected record text {text!r}")
        rest = text[len(head):]
        mid_key = rest[: rest.index(fields)]
        suffix = rest[len(mid_key) + len(fields):]
        return (prefix.encode(), mid_timestamp.encode(), mid_key.encode(), suffix.encode())
