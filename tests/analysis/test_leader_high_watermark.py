"""A copy's HW when its broker leads the partition as its only replica: the log end offset,
whatever ``replication-offset-checkpoint`` says (``Partition#maybeIncrementLeaderHW``; the file
lags by up to ``replica.high.watermark.checkpoint.interval.ms``). Real Kafka 4.4 and 4.0 answer
ListOffsets READ_COMMITTED so on a live copy whose checkpoint is stale
(tests/realkafka/test_single_node.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from kafkatx.formats.checkpoints import CheckpointEntry, build_offset_checkpoint
from kafkatx.semantics.cluster_metadata import Partition
from kafkatx.semantics.leader_high_watermark import high_watermark_is_log_end

ROOT = Path(__file__).resolve().parents[2]
KRAFT = ROOT / "fixtures" / "kraft"  # node 1 leads every topic partition as its only replica


def _registration(replicas: tuple[int, ...], isr: tuple[int, ...], leader: int) -> Partition:
    return Partition(replicas=replicas, isr=isr, removing_replicas=(), adding_replicas=(),
                     leader=leader, leader_recovery_state=0, leader_epoch=3, partition_epoch=5,
                     directories=(), elr=(), last_known_elr=())


def test_only_a_leader_alone_in_its_isr_has_its_log_end_as_hw() -> None:
    assert high_watermark_is_log_end(_registration((1,), (1,), 1), 1)
    assert not high_watermark_is_log_end(_registration((1,), (1,), -1), 1)  # offline, fenced
    assert not high_watermark_is_log_end(_registration((1,), (1,), 1), 2)  # another broker's
    # followers in the ISR: their fetch positions hold the HW, unknown
    assert not high_watermark_is_log_end(_registration((1, 2), (1, 2), 1), 1)
    # followers out of the ISR do not (Partition#maybeIncrementLeaderHW), unless the ISR is
    # below its minimum: KIP-966 then holds the HW where it was, unknown
    assert high_watermark_is_log_end(_registration((1, 2), (1,), 1), 1)
    assert high_watermark_is_log_end(_registration((1, 2), (1,), 1), 1, min_insync_replicas=1)
    assert not high_watermark_is_log_end(_registration((1, 2), (1,), 1), 1,
                                         min_insync_replicas=2)
    # a sole replica: min.insync.replicas above the replica count is the replica count
    assert high_watermark_is_log_end(_registration((1,), (1,), 1), 1, min_insync_replicas=2)


def _lso(path: Path) -> dict[str, tuple[int | None, str, int]]:
    out = subprocess.run([sys.executable, "-m", "kafkatx", "lso", "--format", "json", str(path)],
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    return {f"{r['topic']}-{r['partition']}": (r["high_watermark"], r["high_watermark_source"],
                                              r["last_stable_offset"]) for r in json.loads(out)}


def test_a_stale_checkpoint_of_a_sole_replica_leader_is_not_its_hw(tmp_path: Path) -> None:
    copy = tmp_path / "node-1"
    shutil.copytree(KRAFT, copy)
    stale = [CheckpointEntry(topic="events", partition=0, offset=3),
             CheckpointEntry(topic="payments", partition=0, offset=2)]
    (copy / "replication-offset-checkpoint").write_bytes(build_offset_checkpoint(stale))
    got = _lso(copy)
    assert got["events-0"] == (7, "leader_log_end", 7)
    assert got["payments-0"] == (7, "leader_log_end", 7)
    replay = subprocess.run([sys.executable, "-m", "kafkatx", "replay", str(copy), "--topic",
                             "events", "--partition", "0", "--format", "jsonl"],
                            capture_output=True, text=True, check=True, cwd=ROOT)
    assert "high watermark 7 (leader_log_end)" in replay.stderr
    assert max(json.loads(line)["offset"] for line in replay.stdout.splitlines()) >= 3

    # another broker's log dir: that broker does not lead these partitions; its file is all
    meta = copy / "meta.properties"
    meta.write_text(meta.read_text().replace("node.id=1", "node.id=2"))
    got = _lso(copy)
    assert got["events-0"] == (3, "checkpoint", 3)
    assert got["orders-0"] == (None, "log_end_offset", 1)
