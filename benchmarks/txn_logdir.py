"""A broker log dir holding one partition of many small transactional batches, written fast.

    python benchmarks/txn_logdir.py [--batches 2000000] [--producers 7] [--txn-batches 50]
                                    [--records 1] [--value-size 60] [--out DIR]

The shape transactional producers with a low ``linger.ms`` leave: ``--producers`` producers
write round robin, each a one-record (``--records``) transactional batch at a time with
consecutive sequences, and each producer's transaction ends with a COMMIT marker after
``--txn-batches`` of its batches. The copy is taken mid-transaction: every producer's last,
unfinished transaction stays open, so the LSO is pinned by the oldest one.

Built from two templates (one data batch, one COMMIT marker, both by kafkatx's own builders)
replicated with numpy: offsets, producer ids, sequences and timestamps are patched column-wise
and every CRC-32C is fixed up with per-byte lookup tables (CRC-32C is affine), so 2 M batches
take seconds. Next to the ``.log``: the ``.index`` and ``.timeindex`` a broker appends
(``LogSegment#append`` with ``index.interval.bytes`` 4096), ``meta.properties`` and a
``replication-offset-checkpoint`` at the log end offset. Output goes under
``benchmarks/data/`` (gitignored) and is reused when it exists.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import crc32c
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kafkatx.formats.record_batch import (  # noqa: E402
    ControlType,
    Record,
    build_batch,
    build_control_batch,
)

DATA_DIR = Path(__file__).resolve().parent / "data"
T0 = 1_763_700_000_000  # 2025-11-21T04:40:00Z
TOPIC = "txn"
FIRST_PRODUCER_ID = 4000
PRODUCER_EPOCH = 3
COORDINATOR_EPOCH = 5
INDEX_INTERVAL_BYTES = 4096
CRC_START = 21  # the CRC covers [attributes, end of batch)
PATCHED = slice(27, 57)  # base/max timestamp, producer id, epoch, base sequence
ROWS_PER_CHUNK = 65_536


@dataclass(frozen=True)
class Shape:
    batches: int = 2_000_000
    producers: int = 7
    txn_batches: int = 50
    records: int = 1
    key_size: int = 16
    value_size: int = 44

    @property
    def name(self) -> str:
        return (f"txn-{self.batches}b-{self.producers}p-{self.txn_batches}t-{self.records}r-"
                f"{self.key_size}k{self.value_size}v")


def data_template(shape: Shape) -> bytes:
    records = [Record(offset=i, timestamp=T0 + i, key=b"k" * shape.key_size,
                      value=bytes((i + j) % 251 for j in range(shape.value_size)))
               for i in range(shape.records)]
    return build_batch(records, producer_id=0, producer_epoch=0, base_sequence=0,
                       is_transactional=True)


def marker_template() -> bytes:
    return build_control_batch(base_offset=0, producer_id=0, producer_epoch=0,
                               control_type=ControlType.COMMIT, timestamp=T0,
                               coordinator_epoch=COORDINATOR_EPOCH)


def crc_tables(template: bytes) -> np.ndarray:
    """table[k][v]: how the stored CRC changes when byte ``PATCHED.start + k`` is xor-ed with v."""
    n = len(template) - CRC_START
    zero = crc32c.crc32c(bytes(n))
    width = PATCHED.stop - PATCHED.start
    table = np.zeros((width, 256), dtype=np.uint32)
    for k in range(width):
        delta = bytearray(n)
        for v in range(256):
            delta[PATCHED.start + k - CRC_START] = v
            table[k, v] = crc32c.crc32c(delta) ^ zero
    return table


@dataclass(slots=True)
class Layout:
    """One row per batch, in file order."""

    is_marker: np.ndarray
    producer: np.ndarray  # 0..producers-1
    base_offset: np.ndarray
    base_sequence: np.ndarray
    timestamp: np.ndarray
    size: np.ndarray
    position: np.ndarray


def layout(shape: Shape, data_size: int, marker_size: int) -> Layout:
    """Round robin data batches; a producer's marker right after its ``txn_batches``-th batch."""
    i = np.arange(shape.batches, dtype=np.int64)
    producer = i % shape.producers
    nth = i // shape.producers  # this producer's n-th batch
    closes = (nth + 1) % shape.txn_batches == 0
    rows_per_data = 1 + closes.astype(np.int64)
    data_row = np.concatenate(([0], np.cumsum(rows_per_data)[:-1]))
    n_rows = int(rows_per_data.sum())
    is_marker = np.ones(n_rows, dtype=bool)
    is_marker[data_row] = False
    row_producer = np.empty(n_rows, dtype=np.int64)
    row_producer[data_row] = producer
    row_producer[data_row[closes] + 1] = producer[closes]
    seq = np.full(n_rows, -1, dtype=np.int64)
    seq[data_row] = (nth * shape.records) % 2**31
    offsets_taken = np.where(is_marker, 1, shape.records)
    base_offset = np.concatenate(([0], np.cumsum(offsets_taken)[:-1]))
    size = np.where(is_marker, marker_size, data_size).astype(np.int64)
    position = np.concatenate(([0], np.cumsum(size)[:-1]))
    timestamp = T0 + np.arange(n_rows, dtype=np.int64)  # one batch per millisecond
    return Layout(is_marker=is_marker, producer=row_producer, base_offset=base_offset,
                  base_sequence=seq, timestamp=timestamp, size=size, position=position)


def _be(values: np.ndarray, dtype: str) -> np.ndarray:
    width = np.dtype(dtype).itemsize
    return values.astype(dtype).view(np.uint8).reshape(len(values), width)


def fill(out: np.ndarray, rows: np.ndarray, lay: Layout, template: bytes, table: np.ndarray,
         last_delta: int) -> None:
    """Write ``template`` at each row's position with its fields patched and its CRC fixed."""
    tmpl = np.frombuffer(template, dtype=np.uint8)
    width = len(tmpl)
    span = np.arange(width, dtype=np.int64)
    tmpl_crc = int.from_bytes(template[17:21], "big")
    for start in range(0, len(rows), ROWS_PER_CHUNK):
        r = rows[start:start + ROWS_PER_CHUNK]
        block = np.tile(tmpl, (len(r), 1))
        block[:, 0:8] = _be(lay.base_offset[r], ">i8")
        block[:, 27:35] = _be(lay.timestamp[r], ">i8")
        block[:, 35:43] = _be(lay.timestamp[r] + last_delta, ">i8")
        block[:, 43:51] = _be(FIRST_PRODUCER_ID + lay.producer[r], ">i8")
        block[:, 51:53] = _be(np.full(len(r), PRODUCER_EPOCH), ">i2")
        block[:, 53:57] = _be(lay.base_sequence[r], ">i4")
        delta = block[:, PATCHED] ^ tmpl[PATCHED]
        crc = np.full(len(r), tmpl_crc, dtype=np.uint32)
        for k in range(delta.shape[1]):
            crc ^= table[k][delta[:, k]]
        block[:, 17:21] = _be(crc, ">u4")
        out[(lay.position[r][:, None] + span).ravel()] = block.ravel()


def index_files(lay: Layout, last_offset: np.ndarray) -> tuple[bytes, bytes]:
    """The offset and time index entries ``LogSegment#append`` adds, one batch per append."""
    offset_entries: list[tuple[int, int]] = []
    time_entries: list[tuple[int, int]] = []
    since = 0
    max_ts, max_ts_offset = -1, -1
    last_time = None
    sizes = lay.size.tolist()
    positions = lay.position.tolist()
    lasts = last_offset.tolist()
    stamps = lay.timestamp.tolist()
    for size, pos, last, ts in zip(sizes, positions, lasts, stamps, strict=True):
        if ts > max_ts:
            max_ts, max_ts_offset = ts, last
        if since > INDEX_INTERVAL_BYTES:
            offset_entries.append((last, pos))
            if last_time is None or max_ts > last_time:
                time_entries.append((max_ts, max_ts_offset))
                last_time = max_ts
            since = 0
        since += size
    if max_ts >= 0 and (last_time is None or max_ts > last_time):
        time_entries.append((max_ts, max_ts_offset))  # onBecomeInactiveSegment
    offset_index = np.array(offset_entries, dtype=">i4").tobytes()
    time_index = np.array(
        [(ts, off) for ts, off in time_entries],
        dtype=[("ts", ">i8"), ("off", ">i4")]).tobytes()
    return offset_index, time_index


def build(shape: Shape, out: Path | None = None) -> Path:
    """The log dir for ``shape`` (built once; an existing complete one is reused)."""
    root = out if out is not None else DATA_DIR / shape.name
    done = root / ".complete"
    if done.exists():
        return root
    data = data_template(shape)
    marker = marker_template()
    lay = layout(shape, len(data), len(marker))
    total = int(lay.position[-1] + lay.size[-1])
    buf = np.empty(total, dtype=np.uint8)
    fill(buf, np.flatnonzero(~lay.is_marker), lay, data, crc_tables(data), shape.records - 1)
    fill(buf, np.flatnonzero(lay.is_marker), lay, marker, crc_tables(marker), 0)
    last_offset = lay.base_offset + np.where(lay.is_marker, 0, shape.records - 1)
    pdir = root / f"{TOPIC}-0"
    pdir.mkdir(parents=True, exist_ok=True)
    buf.tofile(pdir / "00000000000000000000.log")
    offset_index, time_index = index_files(lay, last_offset)
    (pdir / "00000000000000000000.index").write_bytes(offset_index)
    (pdir / "00000000000000000000.timeindex").write_bytes(time_index)
    leo = int(last_offset[-1]) + 1
    (root / "meta.properties").write_text("version=1\nnode.id=1\n")
    (root / "replication-offset-checkpoint").write_text(f"0\n1\n{TOPIC} 0 {leo}\n")
    (root / "log-start-offset-checkpoint").write_text(f"0\n1\n{TOPIC} 0 0\n")
    done.write_text("ok\n")
    return root


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", type=int, default=Shape.batches, help="data batches")
    ap.add_argument("--producers", type=int, default=Shape.producers)
    ap.add_argument("--txn-batches", type=int, default=Shape.txn_batches,
                    help="a producer's batches per transaction")
    ap.add_argument("--records", type=int, default=Shape.records, help="records per batch")
    ap.add_argument("--value-size", type=int, default=Shape.value_size)
    ap.add_argument("--out", type=Path, default=None, help="log dir to write")
    args = ap.parse_args(argv)
    shape = Shape(batches=args.batches, producers=args.producers, txn_batches=args.txn_batches,
                  records=args.records, value_size=args.value_size)
    t0 = time.perf_counter()
    root = build(shape, args.out)
    size = sum(f.stat().st_size for f in root.rglob("*.log"))
    print(f"{root}: {size / 2**20:.1f} MiB in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
