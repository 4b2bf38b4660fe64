"""Benchmark: columnar RecordBatch v2 header scan against other readers, on the same bytes.

Run from the repo root:  python benchmarks/scan.py [--mb 200] [--quick] [--sample-mb 20]

Generates two synthetic segments in benchmarks/data/ (kept between runs): 1-record ~100-byte
batches and 10-record ~10 KB batches. Each file is read into memory, then every reader is timed
(best of --repeat) on it:

* kafkatx C      -- kafkatx.formats.batchscan.scan_v2_run (the C extension)
* kafkatx Python -- scan_v2_run_python, on a prefix of --sample-mb MB (rates extrapolate)
* kafka-python   -- kafka.record.memory_records.MemoryRecords + next_batch(), reading the
                    header fields and validate_crc(); on the same prefix
* aiokafka C     -- aiokafka.record.memory_records.MemoryRecords (Cython), same work, whole file
* crc32c ceiling -- one crc32c.crc32c() over the whole buffer: the memory-bandwidth ceiling
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import crc32c
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kafkatx.formats import batchscan  # noqa: E402

DATA_DIR = Path(__file__).resolve().parent / "data"
BASE_TIMESTAMP = 1_700_000_000_000
CRC_START = 21


@dataclass(frozen=True)
class Shape:
    name: str
    records: int
    key_size: int
    value_size: int


SMALL = Shape("small", records=1, key_size=8, value_size=21)  # ~100-byte batches
LARGE = Shape("large", records=10, key_size=16, value_size=1000)  # ~10 KB batches


def build_template(shape: Shape) -> bytes:
    """One idempotent transactional batch built by kafka-python (base offset 0, sequence 0)."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    rng = random.Random(shape.name)
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=True,
        producer_id=4242,
        producer_epoch=7,
        base_sequence=0,
        batch_size=1 << 20,
    )
    for i in range(shape.records):
        key = rng.randbytes(shape.key_size)
        value = rng.randbytes(shape.value_size)
        builder.append(i, BASE_TIMESTAMP + i, key, value, [])
    return bytes(builder.build())


def crc_contributions(template: bytes, field_at: int, width: int) -> np.ndarray:
    """table[k][v]: how the CRC changes when byte ``field_at + k`` is xor-ed with ``v``.

    CRC-32C is affine: crc(m ^ d) == crc(m) ^ crc(d) ^ crc(zeros), so a patched field's effect
    on the stored crc can be added per byte with table lookups, for all batches at once.
    """
    n = len(template) - CRC_START
    zero_crc = crc32c.crc32c(bytes(n))
    table = np.zeros((width, 256), dtype=np.uint32)
    for k in range(width):
        delta = bytearray(n)
        for v in range(256):
            delta[field_at + k - CRC_START] = v
            table[k, v] = crc32c.crc32c(delta) ^ zero_crc
    return table


def generate(shape: Shape, path: Path, target_bytes: int) -> None:
    """Replicate the template with consecutive base offsets and sequences, fixing each crc."""
    template = build_template(shape)
    size = len(template)
    count = max(1, target_bytes // size)
    rows = np.tile(np.frombuffer(template, dtype=np.uint8), (count, 1))
    index = np.arange(count, dtype=np.int64)
    offsets = index * shape.records
    rows[:, 0:8] = offsets.astype(">i8").view(np.uint8).reshape(count, 8)
    sequences = (offsets % 2**31).astype(">i4")
    seq_bytes = sequences.view(np.uint8).reshape(count, 4)
    rows[:, 53:57] = seq_bytes
    table = crc_contributions(template, 53, 4)
    crc = np.full(count, int.from_bytes(template[17:21], "big"), dtype=np.uint32)
    for k in range(4):
        crc ^= table[k][seq_bytes[:, k]]
    rows[:, 17:21] = crc.astype(">u4").view(np.uint8).reshape(count, 4)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    rows.tofile(tmp)
    tmp.replace(path)


def segment(shape: Shape, mb: float) -> bytes:
    target = int(mb * 2**20)
    size = len(build_template(shape))
    path = DATA_DIR / f"v2-{shape.name}-{size}b-{target}.log"
    if not path.exists() or path.stat().st_size != max(1, target // size) * size:
        generate(shape, path, target)
    return path.read_bytes()


def best_of(repeat: int, fn: Callable[[], int]) -> tuple[float, int]:
    best = float("inf")
    result = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def ours_c(data: bytes) -> int:
    cols, _, reason = batchscan.scan_v2_run(data)
    assert reason == batchscan.StopReason.END and bool(cols.crc_valid.all())
    return len(cols)


def ours_python(data: bytes) -> int:
    cols, _, reason = batchscan.scan_v2_run_python(data)
    assert reason == batchscan.StopReason.END and bool(cols.crc_valid.all())
    return len(cols)


def _read_batches(records: object) -> int:
    n = 0
    next_batch = records.next_batch  # type: ignore[attr-defined]
    while (batch := next_batch()) is not None:
        _ = (
            batch.base_offset,
            batch.last_offset_delta,
            batch.attributes,
            batch.first_timestamp,
            batch.max_timestamp,
            batch.producer_id,
            batch.producer_epoch,
            batch.base_sequence,
            batch.crc,
        )
        assert batch.validate_crc()
        n += 1
    return n


def kafka_python(data: bytes) -> int:
    from kafka.record.memory_records import MemoryRecords

    return _read_batches(MemoryRecords(data))


def aiokafka_c(data: bytes) -> int:
    from aiokafka.record.memory_records import MemoryRecords

    return _read_batches(MemoryRecords(data))


def crc_ceiling(data: bytes) -> int:
    """Returns 0 batches: the caller counts the batches the buffer holds."""
    crc32c.crc32c(data)
    return 0


def aiokafka_is_c() -> bool:
    from aiokafka.record import _crecords
    from aiokafka.record.memory_records import MemoryRecords

    return MemoryRecords is _crecords.MemoryRecords and _crecords.__file__ is not None


def machine_facts() -> str:
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ext = "built" if batchscan.HAVE_EXTENSION else "NOT built (Python fallback)"
    hw = getattr(batchscan._ext, "HW_CRC", 0)
    return (
        f"nproc={os.cpu_count()}  cpu={model}  python={platform.python_version()}  "
        f"numpy={np.__version__}  extension={ext}  hw_crc={'sse4.2' if hw else 'table'}"
    )


def prefix(data: bytes, ends: np.ndarray, nbytes: int) -> bytes:
    """The longest run of whole batches from the start that fits in ``nbytes`` (at least one)."""
    cut = int(np.searchsorted(ends, nbytes, side="right"))
    return data[: int(ends[max(cut, 1) - 1])]


def run_shape(shape: Shape, mb: float, sample_mb: float, repeat: int) -> list[str]:
    data = segment(shape, mb)
    cols, _, _ = batchscan.scan_v2_run(data)
    sample = prefix(data, cols.next_position, int(sample_mb * 2**20))
    readers: list[tuple[str, Callable[[bytes], int], bytes]] = [
        ("kafkatx C", ours_c, data),
        ("kafkatx Python", ours_python, sample),
        ("kafka-python", kafka_python, sample),
        ("aiokafka C", aiokafka_c, data),
        ("crc32c ceiling", crc_ceiling, data),
    ]
    results: dict[str, tuple[float, float, int]] = {}
    for name, fn, buf in readers:
        seconds, batches = best_of(repeat, lambda fn=fn, buf=buf: fn(buf))
        if fn is crc_ceiling:
            batches = len(cols)
        results[name] = (seconds, len(buf) / seconds / 1e6, batches)
    aio_bps = results["aiokafka C"][2] / results["aiokafka C"][0]
    ceiling_mbps = results["crc32c ceiling"][1]
    batch_size = len(data) / len(cols)
    lines = [
        f"\n{shape.name}: {len(cols):,} batches of {batch_size:.0f} bytes, "
        f"{len(data) / 2**20:.1f} MiB (Python readers: first {len(sample) / 2**20:.1f} MiB)",
        f"{'reader':<16}{'MB':>9}{'seconds':>10}{'batches/s':>14}{'MB/s':>10}"
        f"{'vs aiokafka':>13}{'vs crc ceiling':>16}",
    ]
    for name, _, buf in readers:
        seconds, mbps, batches = results[name]
        bps = batches / seconds
        vs_aio = "" if name == "crc32c ceiling" else f"{bps / aio_bps:.2f}x"
        lines.append(
            f"{name:<16}{len(buf) / 1e6:>9.1f}{seconds:>10.4f}{bps:>14,.0f}{mbps:>10,.0f}"
            f"{vs_aio:>13}{mbps / ceiling_mbps:>15.2f}x"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=None, help="segment size in MiB (200)")
    parser.add_argument("--quick", action="store_true", help="~20 MiB segments, smoke run")
    parser.add_argument("--sample-mb", type=float, default=20.0, help="prefix for slow readers")
    parser.add_argument("--repeat", type=int, default=3, help="best of N")
    args = parser.parse_args(argv)
    mb = args.mb if args.mb is not None else (20.0 if args.quick else 200.0)
    sample_mb = min(args.sample_mb, mb)
    print(machine_facts())
    if not aiokafka_is_c():
        print("warning: aiokafka is NOT using its C (Cython) records implementation")
    for shape in (SMALL, LARGE):
        for line in run_shape(shape, mb, sample_mb, args.repeat):
            print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
