"""Offsets that go back are reported, never a crash of the replay.

Kafka refuses such an append (``UnifiedLog#analyzeAndValidateRecords`` checks offsets are
monotonic; ``ProducerStateManager#completeTxn`` throws for a transaction it never started), so a
log holding it is damaged or was spliced: kafkatx reports ``offset_regression`` and goes on.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kafkatx.formats.record_batch import ControlType, Record, build_batch, build_control_batch
from kafkatx.storage.segment_writer import segment_name
from tests.analysis.logdirs import T0


def test_two_transactions_starting_at_one_offset(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    d.mkdir()
    data = b"".join([
        build_batch([Record(offset=0, timestamp=T0, key=b"a", value=b"1")], base_offset=0,
                    producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True),
        build_batch([Record(offset=0, timestamp=T0, key=b"b", value=b"2")], base_offset=0,
                    producer_id=8, producer_epoch=0, base_sequence=0, is_transactional=True),
        build_control_batch(base_offset=1, producer_id=7, producer_epoch=0,
                            control_type=ControlType.COMMIT, timestamp=T0 + 1),
        build_control_batch(base_offset=2, producer_id=8, producer_epoch=0,
                            control_type=ControlType.COMMIT, timestamp=T0 + 2),
    ])
    (d / segment_name(0, ".log")).write_bytes(data)
    proc = subprocess.run([sys.executable, "-m", "kafkatx", "inspect", str(d), "--format",
                           "json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    kinds = {f["kind"] for f in json.loads(proc.stdout)["findings"]}
    assert "offset_regression" in kinds
