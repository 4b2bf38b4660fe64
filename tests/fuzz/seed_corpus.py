"""Write the fuzzers' seed corpus (``tests/fuzz/corpus/<target>/``) from the repository's
fixtures and from batches built in every codec: ``python -m tests.fuzz.seed_corpus``.

Deterministic (file names are the seeds' SHA-1, as libFuzzer names its units), small (each seed
under 8 KiB). Inputs the fuzzer found are added beside them by hand, named for what they
caught, so the corpus replay test (``test_fuzz.py``) keeps them fixed.
"""

from __future__ import annotations

import hashlib
import io
import struct
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).with_name("corpus")
MAX_SEED = 8192

INDEX_KINDS = {".index": 0, ".timeindex": 3, ".txnindex": 6, ".snapshot": 8}
NAME_KINDS = {"replication-offset-checkpoint": 9, "recovery-point-offset-checkpoint": 9,
              "log-start-offset-checkpoint": 9, "cleaner-offset-checkpoint": 9,
              "leader-epoch-checkpoint": 10, "partition.metadata": 11, "meta.properties": 12,
              "quorum-state": 13}
FIXTURE_DIRS = ("logdir", "legacy", "corrupt", "kraft")


def _fixture_files() -> Iterator[Path]:
    for name in FIXTURE_DIRS:
        yield from sorted(p for p in (ROOT / "fixtures" / name).rglob("*") if p.is_file())


def _built_segments() -> Iterator[bytes]:
    """One batch per codec, a transactional pair with its COMMIT marker, legacy wrappers."""
    from kafkatx.formats.compression import Codec
    from kafkatx.formats.legacy_message import build_legacy_entry
    from kafkatx.formats.record_batch import (
        ControlType,
        Record,
        build_batch,
        build_control_batch,
    )

    records = [Record(offset=i, timestamp=1_700_000_000_000 + i, key=b"k%d" % i,
                      value=b"v" * i, headers=((f"h{i}", b"x"),)) for i in range(4)]
    for codec in (0, 1, 2, 3, 4):
        yield build_batch(records, base_offset=0, compression_id=codec)
    data = build_batch(records, base_offset=10, is_transactional=True, producer_id=7,
                       producer_epoch=1, base_sequence=0)
    yield data + build_control_batch(control_type=ControlType.COMMIT, base_offset=14, producer_id=7,
                                     producer_epoch=1, coordinator_epoch=3,
                                     timestamp=1_700_000_000_100)
    for magic in (0, 1):
        for codec in (Codec.GZIP, Codec.SNAPPY, Codec.LZ4):
            yield build_legacy_entry(offset=2, magic=magic, compression=codec,
                                     inner=[(b"k", b"a", 1), (None, b"b", 2), (b"c", None, 3)])


def _segment_seeds() -> Iterator[bytes]:
    for path in _fixture_files():
        if path.suffix == ".log" or (path.name.endswith(".checkpoint") and "-" in path.stem):
            data = path.read_bytes()[:MAX_SEED]
            if data:
                yield b"\x00" + data
    for data in _built_segments():
        yield b"\x00" + data
        yield b"\x01" + data


def _index_seeds() -> Iterator[bytes]:
    for path in _fixture_files():
        kind = INDEX_KINDS.get(path.suffix, NAME_KINDS.get(path.name))
        if kind is not None:
            yield bytes([kind]) + path.read_bytes()[:MAX_SEED]


def _coordinator_seeds() -> Iterator[bytes]:
    from kafkatx.formats.record_batch import iter_records
    from kafkatx.formats.segment import iter_segment

    kinds = {"__transaction_state": 0, "__consumer_offsets": 1, "__cluster_metadata": 2}
    for path in _fixture_files():
        topic = path.parent.name.rsplit("-", 1)[0]
        if path.suffix != ".log" or topic not in kinds:
            continue
        data = path.read_bytes()
        for entry in iter_segment(data):
            if not hasattr(entry, "header") or entry.header.is_control:
                continue
            for rec in iter_records(data, entry.position, entry.header):
                key, value = rec.key or b"", rec.value or b""
                if len(key) < 256:
                    yield bytes([kinds[topic], len(key)]) + key + value
                    yield bytes([4, len(key)]) + key + value


def _request_seeds() -> Iterator[bytes]:
    """A zero-valued body of every served (api key, version), as ``request_any_api`` takes
    it: two bytes choosing the pair (its index), then the header and body after the 8 bytes
    the target writes itself."""
    from kio.serial import entity_writer

    from kafkatx.broker.wire.codec import make
    from tests.fuzz.targets import _served_requests

    for index, (key, version) in enumerate(_served_requests()):
        from kafkatx.broker.wire.codec import request_type

        cls = request_type(key, version)
        try:
            header = make(cls.__header_schema__, request_api_key=key, request_api_version=version,
                          correlation_id=7, client_id="fuzz")
            body = make(cls)
        except (TypeError, ValueError):
            continue
        out = io.BytesIO()
        entity_writer(cls.__header_schema__)(out, header)
        entity_writer(cls)(out, body)
        yield struct.pack(">H", index) + out.getvalue()[8:]


def _partition_seeds() -> Iterator[bytes]:
    for part in ("logdir/payments-0", "logdir/payments-1", "legacy/legacy-0",
                 "logdir/__transaction_state-15"):
        base = ROOT / "fixtures" / part / "00000000000000000000"
        files = [base.with_suffix(s) for s in (".index", ".timeindex", ".txnindex")]
        extra = [f.read_bytes()[:255] if f.exists() else b"" for f in files]
        log = base.with_suffix(".log").read_bytes()[:MAX_SEED]
        yield bytes(len(e) for e in extra) + log + b"".join(extra)


SEEDS = {
    "segment": _segment_seeds,
    "index_files": _index_seeds,
    "coordinator_records": _coordinator_seeds,
    "request": _request_seeds,
    "partition_dir": _partition_seeds,
}


def write(targets: list[str]) -> None:
    for name in targets:
        out = CORPUS / name
        out.mkdir(parents=True, exist_ok=True)
        for seed in SEEDS[name]():
            (out / hashlib.sha1(seed).hexdigest()).write_bytes(seed)


if __name__ == "__main__":
    write(sys.argv[1:] or list(SEEDS))
