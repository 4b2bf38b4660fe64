"""``replay -o DIR``: ``records.parquet`` written through pyarrow in row groups, from columns.

:class:`ParquetRecords` takes the records of whole runs of batches as Arrow column buffers
decoded by the C extension (``record_columns``, _recordcols.c: offsets, timestamps, keys,
values and headers as ``render_bytes`` renders them), beside the text writer that prints them
(:func:`tee_formatter`); the fields that are the same for every record of a batch (producer,
visibility, reason...) are cut from ``record_row`` of a sample record of the batch, so the two
paths cannot disagree on them. A batch the extension leaves (legacy, damaged, aborted within
the fetch bound, no extension) comes back as records: :meth:`ParquetRecords.add` writes their
``record_row``. The table is the one the per-record path wrote (proven equal by
tests/test_replay_parquet.py). At most ``ROW_GROUP`` records (and ``MAX_BYTES`` of text
per column) are held: one row group each.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from types import TracebackType
from typing import Any

import numpy as np

from kafkatx.analysis.consumer_view import (
    BatchFormatter,
    ConsumerView,
    ReplayedRecord,
    classify,
)
from kafkatx.cli.replay_writer import TemplateKey, batch_columns, batch_templates
from kafkatx.engines.tables import RECORDS, record_row, records_schema, records_table
from kafkatx.errors import FormatError
from kafkatx.formats.batch_layout import COMPRESSION_MASK, HEADER_SIZE
from kafkatx.formats.batchscan import HAVE_EXTENSION, HeaderColumns, _ext
from kafkatx.formats.record_format import INT64_MAX, INT64_MIN
from kafkatx.formats.record_values import Record, payload_at

_record_columns: Any = getattr(_ext, "record_columns", None) if HAVE_EXTENSION else None

ROW_GROUP = 1 << 16  # records of a row group (the last one of a run of batches may pass it)
MAX_BYTES = 1 << 28  # text of one column decoded by one C call before a row group is cut
LEFT_FULL = 2  # record_columns' reason: a text buffer reached max_bytes
# The columns of record_row that are the same for every record of a batch (on one side of
# its split offset).
BATCH_FIELDS = ("producer_id", "producer_epoch", "visible", "reason", "abort_marker_offset",
                "transaction_first_offset", "pinned_by_producer_id", "pinned_by_first_offset")

Run = Callable[[int, int], tuple[int, bool]]


class ParquetRecords:
    """``--output``: every replayed record streamed into ``PATH/records.parquet`` (pyarrow,
    on the driver, whichever engine decoded the records); nothing when ``target`` is None."""

    def __init__(self, target: str | None) -> None:
        self.target = target
        self.written: str | None = None
        self.consumer: ConsumerView | None = None
        self._writer: Any = None
        self._schema: Any = None
        # Row groups in the making: C-decoded record batches (with each record's batch row
        # in the current segment, for take-backs) and lists of record_row dicts.
        self._pending: list[tuple[Any, np.ndarray] | list[dict[str, Any]]] = []
        self._count = 0
        self._splits: dict[TemplateKey, tuple[int, int]] = {}  # key -> (sample, split)
        self._samples: list[dict[str, Any]] = []  # record_row of each side of each key
        self._constants: dict[str, Any] = {}  # BATCH_FIELDS as Arrow arrays over samples

    def __enter__(self) -> ParquetRecords:
        return self

    def add(self, r: ReplayedRecord) -> None:
        """One record decoded in Python."""
        if self.target is None:
            return
        if not self._pending or not isinstance(self._pending[-1], list):
            self._pending.append([])
        rows = self._pending[-1]
        assert isinstance(rows, list)
        rows.append(record_row(r.to_dict()))
        self._count += 1
        if self._count >= ROW_GROUP:
            self._flush()

    def tee(self, items: Iterable[ReplayedRecord]) -> Iterator[ReplayedRecord]:
        for r in items:
            self.add(r)
            yield r
        # Records the renderer did not pull (it stops early only on errors) are not written.

    def tee_formatter(self, text: BatchFormatter, consumer: ConsumerView) -> BatchFormatter:
        """``text`` (the printed output's formatter) with the same batches' records decoded
        into this writer's columns: a batch either one leaves is left to the caller by both
        (its records then come back through :meth:`add` and the text writer's ``write``)."""
        self.consumer = consumer

        def segment(*args: Any) -> Run:
            columns, printed = self.segment(*args), text(*args)

            def run(i: int, end: int) -> tuple[int, bool]:
                if self._count >= ROW_GROUP:
                    self._flush()
                mark = len(self._pending)
                k, _ = columns(i, end)
                j, stopped = printed(i, k)
                if j < k:
                    self._take_back(mark, j)
                return j, stopped

            return run

        return segment

    def segment(self, data: Any, headers: HeaderColumns, rows: np.ndarray, codes: np.ndarray,
                beyond: np.ndarray, min_offset: int, max_offset: int | None, path: str) -> Run:
        """``consumer_view.BatchFormatter``: the records of the batches at ``rows`` decoded
        into column buffers by the C extension, many batches at a time (a compressed one
        decompressed first); the batches it leaves are left to the caller."""
        if _record_columns is None or self.target is None:
            return lambda i, end: (i, False)
        high = INT64_MAX if max_offset is None else max_offset

        def run(start: int, end: int) -> tuple[int, bool]:
            # The run's own header columns and templates: nothing is held per batch of the
            # segment (the caller's runs are ROWS_AT_ONCE batches).
            chunk = rows[start:end]
            templates, index = batch_templates(headers, chunk, codes[start:end],
                                               beyond[start:end], self._template)
            sample = np.array([-1 if t is None else t[0] for t in templates], dtype=np.int64)
            split = np.array([INT64_MIN if t is None else t[1] for t in templates],
                             dtype=np.int64)
            columns = batch_columns(headers, chunk)
            n = len(chunk)

            def add(buffers: tuple[bytes, ...], row_base: int) -> None:
                batch_rows = np.frombuffer(buffers[2], dtype=np.int64) + row_base
                which = index[batch_rows]
                offsets = np.frombuffer(buffers[0], dtype=np.int64)
                side = sample[which] * 2 + (offsets >= split[which])
                self._add_columns(buffers, side, batch_rows + start)

            i = 0
            while i < n:
                i, stopped, left, buffers = _record_columns(
                    data, n, *columns, index, min_offset, high, i, n, MAX_BYTES)
                add(buffers, 0)
                if stopped or i >= n:
                    return start + i, stopped
                if left == LEFT_FULL:
                    continue
                attributes = int(columns[2][i])
                if index[i] < 0 or not attributes & COMPRESSION_MASK:
                    return start + i, False
                try:
                    payload, _ = payload_at(data, int(columns[0][i]), int(columns[1][i]),
                                            attributes & COMPRESSION_MASK, path)
                except FormatError:
                    return start + i, False
                one = [np.array([v], dtype=np.int64) for v in (
                    0, HEADER_SIZE + len(payload), attributes & ~COMPRESSION_MASK,
                    columns[3][i], columns[4][i], columns[5][i], columns[6][i], index[i])]
                _, stopped, left, buffers = _record_columns(
                    bytes(HEADER_SIZE) + payload, 1, *one, min_offset, high, 0, 1, 1 << 62)
                if left:
                    return start + i, False
                add(buffers, i)
                i += 1
                if stopped:
                    return start + i, True
            return start + n, False

        return run

    def _template(self, key: TemplateKey) -> tuple[int, int]:
        """Where the batch fields of ``key``'s records sit in the samples, and its split (the
        high watermark for a batch beyond the fetch bound: ``classify`` tells the records
        below it from those at or above it)."""
        known = self._splits.get(key)
        if known is not None:
            return known
        assert self.consumer is not None
        split = self.consumer.high_watermark if key[4] else INT64_MIN
        for offset in (split - 1, split):
            row = record_row(classify(Record(offset=offset, timestamp=0, key=None, value=None),
                                      *key, self.consumer, None, None).to_dict())
            self._samples.append({k: row[k] for k in BATCH_FIELDS})
        self._constants = {}
        known = self._splits[key] = (len(self._samples) // 2 - 1, split)
        return known

    def _add_columns(self, buffers: tuple[bytes, ...], side: np.ndarray,
                     batch_rows: np.ndarray) -> None:
        import pyarrow as pa

        n = len(side)
        if n == 0:
            return
        schema = self._records_schema()
        if not self._constants:
            self._constants = {k: _constant(pa, schema.field(k).type, [s[k] for s in self._samples])
                               for k in BATCH_FIELDS}
        take = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(side)])
        header_type = schema.field("headers").type
        m = len(buffers[14])
        header_values = pa.StructArray.from_arrays(
            [_string(m, None, buffers[10], buffers[11]), _text(m, *buffers[12:15]),
             _encoding(buffers[14])], fields=list(header_type.value_type))
        columns = {
            "offset": pa.py_buffer(buffers[0]), "timestamp": pa.py_buffer(buffers[1]),
            "key": _text(n, *buffers[3:6]), "key_encoding": _encoding(buffers[5]),
            "value": _text(n, *buffers[6:9]), "value_encoding": _encoding(buffers[8]),
            "headers": pa.ListArray.from_arrays(
                pa.Array.from_buffers(pa.int32(), n + 1, [None, pa.py_buffer(buffers[9])]),
                header_values, type=header_type)}
        for name in ("offset", "timestamp"):
            columns[name] = pa.Array.from_buffers(pa.int64(), n, [None, columns[name]])
        for name in BATCH_FIELDS:
            columns[name] = self._constants[name].take(take)
        batch = pa.RecordBatch.from_arrays([columns[f.name] for f in schema], schema=schema)
        self._pending.append((batch, batch_rows))
        self._count += n

    def _take_back(self, mark: int, row: int) -> None:
        """Drop the records of batch rows from ``row`` on that were added since ``mark``."""
        for k in range(mark, len(self._pending)):
            piece = self._pending[k]
            assert not isinstance(piece, list)
            batch, batch_rows = piece
            cut = int(np.searchsorted(batch_rows, row))
            if cut < len(batch_rows):
                self._count -= sum(len(p[0]) for p in self._pending[k + 1:]  # type: ignore[misc]
                                   ) + len(batch_rows) - cut
                self._pending[k:] = [(batch.slice(0, cut), batch_rows[:cut])] if cut else []
                return

    def _records_schema(self) -> Any:
        if self._schema is None:
            self._schema = records_schema()
        return self._schema

    def _flush(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        schema = self._records_schema()
        tables = [records_table(p) if isinstance(p, list) else
                  pa.Table.from_batches([p[0]], schema=schema) for p in self._pending]
        table = pa.concat_tables(tables) if tables else records_table([])
        self._pending, self._count = [], 0
        if self._writer is None:
            assert self.target is not None
            os.makedirs(self.target.removeprefix("file://"), exist_ok=False)
            self.written = os.path.join(self.target.removeprefix("file://"),
                                        f"{RECORDS}.parquet")
            self._writer = pq.ParquetWriter(self.written, schema)
        self._writer.write_table(table, row_group_size=max(len(table), 1))

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.target is None:
            return
        if exc is None and (self._pending or self._writer is None):
            self._flush()
        if self._writer is not None:
            self._writer.close()


def _constant(pa: Any, kind: Any, values: list[Any]) -> Any:
    """``values`` (ints, bools or strings, None for null) as an Arrow array of ``kind``, built
    from its buffers: ``pa.array`` would import pandas (~0.4 CPU-s) to look for a frame."""
    valid = np.array([v is not None for v in values], dtype=bool)
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    if pa.types.is_string(kind):
        data = [b"" if v is None else v.encode() for v in values]
        offsets = np.zeros(len(values) + 1, dtype=np.int32)
        np.cumsum([len(d) for d in data], out=offsets[1:])
        buffers = [bitmap, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))]
    elif pa.types.is_boolean(kind):
        buffers = [bitmap, pa.py_buffer(np.packbits([bool(v) for v in values],
                                                    bitorder="little"))]
    else:
        buffers = [bitmap, pa.py_buffer(np.array([v or 0 for v in values],
                                                 dtype=kind.to_pandas_dtype()))]
    return pa.Array.from_buffers(kind, len(values), buffers)


def _text(n: int, offsets: bytes, data: bytes, kind: bytes) -> Any:
    """A string column from record_columns' offsets, data and kinds (0: null)."""
    valid = np.frombuffer(kind, dtype=np.uint8) != 0
    return _string(n, None if valid.all() else valid, offsets, data)


def _encoding(kind: bytes) -> Any:
    """``"base64"`` where the kind says base64, else null (render_bytes' ``*_encoding``)."""
    base64 = np.frombuffer(kind, dtype=np.uint8) == 2
    offsets = np.zeros(len(base64) + 1, dtype=np.int32)
    np.cumsum(base64 * np.int32(6), out=offsets[1:])
    return _string(len(base64), base64, offsets.tobytes(), b"base64" * int(base64.sum()))


def _string(n: int, valid: np.ndarray | None, offsets: bytes, data: bytes) -> Any:
    import pyarrow as pa

    bitmap = None if valid is None else pa.py_buffer(np.packbits(valid, bitorder="little"))
    nulls = 0 if valid is None else n - int(valid.sum())
    return pa.Array.from_buffers(pa.string(), n, [bitmap, pa.py_buffer(offsets),
                                                  pa.py_buffer(data)], null_count=nulls)


__all__ = ["ParquetRecords"]
