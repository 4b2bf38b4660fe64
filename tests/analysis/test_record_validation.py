"""``verify`` decodes every record of every batch: a batch whose CRC is right but whose records
no consumer can read is an ``invalid_batch`` error naming the batch and the byte (issue 25).

Each bad batch is built as a broken producer would send it (the records section edited, the
CRC made right again), between two good batches, so the finding must name the middle one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kafkatx.formats.compression import Codec
from kafkatx.formats.record_batch import HEADER_SIZE, Record, build_batch
from kafkatx.formats.record_validation import record_problems
from kafkatx.formats.segment_scan import scan_segment
from tests.formats.batch_edits import with_records_section
from tests.readonly import assert_unchanged, snapshot_tree

ROOT = Path(__file__).resolve().parents[2]
RECORDS = [Record(offset=i, timestamp=1_700_000_000_000 + i, key=b"k", value=b"value-%d" % i)
           for i in range(3)]


def _good(base: int, codec: int = 0) -> bytes:
    return build_batch([Record(offset=base + r.offset, timestamp=r.timestamp, key=r.key,
                               value=r.value) for r in RECORDS],
                       base_offset=base, compression_id=codec)


def _bad_batches() -> dict[str, tuple[bytes, str]]:
    """name -> (a CRC-valid batch at offset 3 whose records do not decode, a phrase of why)."""
    good = _good(3)
    section = good[HEADER_SIZE:]
    overrun = bytearray(section)
    overrun[0] = 0x7E  # the first record's length (zigzag 63) runs past the batch
    out = {
        "record_length_overruns_the_batch": (with_records_section(good, bytes(overrun)),
                                             "does not fit in the batch"),
        "count_above_the_records": (with_records_section(good, section, count=4),
                                    "record 3"),
        "count_below_the_records": (with_records_section(good, section, count=2),
                                    "bytes left after the 2 declared records"),
        "trailing_bytes": (with_records_section(good, section + b"\x00\x01\x02"),
                           "3 bytes left after the 3 declared records"),
    }
    for codec in (Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD):
        out[f"{codec.name.lower()}_flag_over_raw_bytes"] = (
            with_records_section(good, section, attributes=int(codec)), "")
    return out


BAD = _bad_batches()


def _segment(bad: bytes) -> tuple[bytes, int]:
    first = _good(0, Codec.GZIP)
    return first + bad + _good(6, Codec.ZSTD), len(first)


@pytest.mark.parametrize("name", sorted(BAD))
def test_each_undecodable_batch_is_one_problem_at_its_position(name: str) -> None:
    bad, phrase = BAD[name]
    data, position = _segment(bad)
    scan = scan_segment(data, path="t-0/0.log")
    assert not scan.problems and all(scan.headers.crc_valid)  # the header scan sees nothing
    problems = record_problems(data, scan)
    assert [(p.kind, p.position, p.length) for p in problems] == [
        ("invalid_batch", position, len(bad))]
    assert "batch 3..5" in problems[0].message and phrase in problems[0].message
    at = int(problems[0].message.split("(at byte ")[1].split(")")[0])
    assert position + HEADER_SIZE <= at <= position + len(bad)


def test_good_batches_of_every_codec_and_markers_are_no_problem() -> None:
    from kafkatx.formats.record_batch import ControlType, build_control_batch

    data = b"".join(_good(3 * i, codec) for i, codec in enumerate(Codec))
    data += build_control_batch(control_type=ControlType.COMMIT, base_offset=15, producer_id=1,
                                producer_epoch=0, timestamp=1_700_000_000_000)
    assert record_problems(data, scan_segment(data)) == []


def test_verify_reports_them_and_inspect_stays_on_headers(tmp_path: Path) -> None:
    logdir = tmp_path / "logdir"
    for i, name in enumerate(sorted(BAD)):
        part = logdir / f"bad-{i}"
        part.mkdir(parents=True)
        (part / "00000000000000000000.log").write_bytes(_segment(BAD[name][0])[0])
    before = snapshot_tree(logdir)
    run = [sys.executable, "-m", "kafkatx"]
    verify = subprocess.run([*run, "verify", str(logdir), "--format", "json"],
                            capture_output=True, text=True, timeout=120, check=False)
    assert verify.returncode == 1, verify.stderr
    found = [f for f in json.loads(verify.stdout)["findings"] if f["kind"] == "invalid_batch"]
    position = len(_good(0, Codec.GZIP))
    assert sorted(f["partition"] for f in found) == list(range(len(BAD)))
    for f in found:
        assert f["severity"] == "error"
        assert f["location"].endswith(f"00000000000000000000.log:{position}"), f
    inspect = subprocess.run([*run, "inspect", str(logdir), "--format", "json"],
                             capture_output=True, text=True, timeout=120, check=False)
    assert "invalid_batch" not in inspect.stdout
    assert_unchanged(logdir, before)
