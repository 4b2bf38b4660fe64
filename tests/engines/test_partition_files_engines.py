"""A partition's and a log dir's small files, checked alike by the local and Spark engines.

Index files without their ``.log`` follow ``LogLoader#loadSegmentFiles`` (deleted at load as
"an orphaned index file"); garbled checkpoints follow ``CheckpointFile#read``,
``LeaderEpochCheckpointFile`` and ``PartitionMetadataFile#read``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.engines.test_spark_engine import both, run
from tests.readonly import assert_unchanged, snapshot_tree

LOGDIR = Path(__file__).resolve().parents[2] / "fixtures" / "logdir"


def _damaged_copy(tmp_path: Path) -> Path:
    """fixtures/logdir with payments-0's first .log gone (its index files stay) and garbled
    leader-epoch-checkpoint, partition.metadata and recovery-point-offset-checkpoint."""
    copy = tmp_path / "logdir"
    shutil.copytree(LOGDIR, copy)
    (copy / "payments-0" / "00000000000000000000.log").unlink()
    (copy / "payments-0" / "leader-epoch-checkpoint").write_bytes(b"0\n1\n1 x\n")
    (copy / "payments-1" / "partition.metadata").write_bytes(b"version: 0\n")
    (copy / "recovery-point-offset-checkpoint").write_bytes(b"0\nfour\n")
    return copy


@pytest.mark.usefixtures("spark_session")
def test_orphaned_index_and_garbled_partition_files_on_both_engines(tmp_path: Path) -> None:
    """LogLoader#loadSegmentFiles: the segment 0..14 of payments-0 has only index files, so
    the log starts at 15; each garbled checkpoint file is one checkpoint_problem."""
    logdir = _damaged_copy(tmp_path)
    before = snapshot_tree(logdir)
    local, spark = both("verify", logdir, "--format", "json", expect=1)
    assert_unchanged(logdir, before)
    assert spark == local
    report = json.loads(local)
    orphaned = [f for f in report["findings"] if f["kind"] == "orphaned_index"]
    assert len(orphaned) == 1 and orphaned[0]["severity"] == "warning"
    assert orphaned[0]["offset"] == 0 and orphaned[0]["partition"] == 0
    assert "(offsets 0..14)" in orphaned[0]["message"]
    assert "00000000000000000000.txnindex" in orphaned[0]["message"]
    problems = sorted(f["location"].rsplit("/", 1)[1] for f in report["findings"]
                      if f["kind"] == "checkpoint_problem")
    assert problems == ["leader-epoch-checkpoint:4", "partition.metadata:11",
                        "recovery-point-offset-checkpoint:2"]
    rows = json.loads(run("lso", logdir, "--format", "json", "--engine", "local"))
    payments0 = next(p for p in rows if (p["topic"], p["partition"]) == ("payments", 0))
    assert (payments0["log_start_offset"], payments0["log_end_offset"]) == (15, 32)


def test_an_intact_log_dir_has_no_checkpoint_or_orphan_findings() -> None:
    """The same checks on the untouched fixture (every file as Kafka writes it) stay silent."""
    out = run("verify", LOGDIR, "--format", "json", "--engine", "local", expect=1)
    kinds = {f["kind"] for f in json.loads(out)["findings"]}
    assert not kinds & {"orphaned_index", "checkpoint_problem"}
