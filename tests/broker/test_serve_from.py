"""``kafkatx serve --from CAPTURE``: a captured log dir served live to real clients, the capture
left byte-for-byte and mtime-for-mtime as it was."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import confluent_kafka as ck

from tests.broker.serve_process import ServeProcess
from tests.readonly import assert_unchanged, snapshot_tree

ROOT = Path(__file__).resolve().parents[2]
CAPTURE = ROOT / "fixtures" / "logdir"


def kafkatx(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kafkatx", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


def predicted(log_dir: Path, from_offset: int) -> list[int]:
    """What ``kafkatx replay`` says a read_committed consumer of payments-0 receives."""
    proc = kafkatx("replay", log_dir, "--topic", "payments", "--partition", "0",
                   "--from-offset", str(from_offset), "--format", "jsonl")
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line)["offset"] for line in proc.stdout.splitlines()]


def consume(bootstrap: str, group: str, *, assign_from: int | None = None,
            wait_s: float = 6.0) -> tuple[list[int], int]:
    """Offsets received by a read_committed consumer of payments-0 (assigned: from
    ``assign_from``, else from the group's committed offset), and its position at the end."""
    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                     "isolation.level": "read_committed", "enable.auto.commit": False,
                     "auto.offset.reset": "earliest"})
    tp = ck.TopicPartition("payments", 0)
    c.assign([tp if assign_from is None else ck.TopicPartition("payments", 0, assign_from)])
    got: list[int] = []
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        for m in c.consume(num_messages=100, timeout=0.3):
            assert m.error() is None, m.error()
            if m.partition() == 0:
                got.append(m.offset())
    (pos,) = c.position([tp])
    c.close()
    return got, pos.offset


def test_serve_from_reproduces_the_stuck_consumer(serve: Callable[..., ServeProcess],
                                                  tmp_path: Path) -> None:
    """A read_committed fetch stops at the LSO (``UnifiedLog#fetchLastStableOffsetMetadata``):
    served from the capture, payments-0's consumers stop at 19 as `replay` predicts; the group
    payments-app resumes from its committed offset (``GroupMetadataManager`` load; assigned,
    not subscribed: joining would wait out the captured member's 45 s session, as on Kafka)."""
    before = snapshot_tree(CAPTURE)
    copy = tmp_path / "live"
    server = serve("--from", str(CAPTURE), log_dir=copy)
    fresh, position = consume(server.bootstrap, "fresh", assign_from=0)
    assert fresh == predicted(CAPTURE, 0) and max(fresh) < 19
    assert position == 19  # stuck at the LSO
    resumed, position = consume(server.bootstrap, "payments-app")
    assert resumed == predicted(CAPTURE, 15) == [15, 16, 17, 18]
    assert position == 19
    assert server.stop() == 0
    assert_unchanged(CAPTURE, before)
    assert "copied" in server.stderr() and "never written" in server.stderr()
    lso = json.loads(kafkatx("lso", copy, "--format", "json").stdout)
    assert {(r["topic"], r["partition"]): r["last_stable_offset"] for r in lso}[
        ("payments", 0)] == 19


def test_serve_from_refuses_to_write_over_a_log_dir(tmp_path: Path) -> None:
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine")
    before = snapshot_tree(CAPTURE)
    proc = kafkatx("serve", "--port", "0", "--from", CAPTURE, "--log-dir", busy)
    assert proc.returncode == 2 and "not empty" in proc.stderr
    inside = kafkatx("serve", "--port", "0", "--from", CAPTURE, "--log-dir",
                     CAPTURE / "sub")
    assert inside.returncode == 2 and "inside the capture" in inside.stderr
    notes = tmp_path / "notes"
    notes.mkdir()
    proc = kafkatx("serve", "--port", "0", "--from", notes, "--log-dir", tmp_path / "x")
    assert proc.returncode == 2 and "not a broker log dir" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert_unchanged(CAPTURE, before)
