"""Check a log dir written by ``kafkatx serve`` with kafkatx's own readers."""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from kafkatx.formats import offset_index, time_index
from kafkatx.formats.checkpoints import (
    OffsetCheckpoint,
    read_leader_epoch_checkpoint,
    read_offset_checkpoint,
    read_partition_metadata,
)
from kafkatx.formats.producer_snapshot import ProducerSnapshot, read_producer_snapshot
from tests.broker.kafkatx_cli import run_cli


@dataclass
class LogDirView:
    batches: dict[str, list[dict]] = field(default_factory=lambda: defaultdict(list))
    high_watermarks: dict[tuple[str, int], int] = field(default_factory=dict)
    recovery_points: dict[tuple[str, int], int] = field(default_factory=dict)
    snapshots: dict[str, ProducerSnapshot] = field(default_factory=dict)  # partition -> latest
    items: list[dict] = field(default_factory=list)


def _checkpoint(path: Path) -> OffsetCheckpoint:
    cp = read_offset_checkpoint(path.read_bytes(), path=str(path))
    assert not cp.problems, cp.problems
    assert cp.version == 0
    return cp


def check_log_dir(root: Path) -> LogDirView:
    """Dump everything (no problem items allowed), sanity-check indexes against the batches,
    read checkpoints and the latest producer snapshot of each partition."""
    out = run_cli("dump", "--format", "jsonl", str(root))
    assert out.returncode == 0, out.stderr.decode()
    view = LogDirView()
    index_entries: dict[str, list[dict]] = defaultdict(list)
    for line in out.stdout.decode().splitlines():
        item = json.loads(line)
        view.items.append(item)
        assert item["kind"] != "problem", item
        if item["kind"] == "batch":
            assert item["crc_valid"], item
            assert item["magic"] == 2
            # a KRaft snapshot (.checkpoint) numbers its records from 0: its own sequence
            file = Path(item["file"])
            view.batches[file.parent.name if file.suffix == ".log" else str(file)].append(item)
        elif item["kind"] == "index_entry":
            index_entries[item["file"]].append(item)
    for partition, batches in view.batches.items():
        offsets = [(b["base_offset"], b["last_offset"]) for b in batches]
        for (_, last), (base, _) in itertools.pairwise(offsets):
            assert base == last + 1, f"{partition}: offsets not contiguous: {offsets}"
    for path in root.glob("*/*.index"):
        base = int(path.name.split(".")[0])
        data = path.read_bytes()
        assert offset_index.sanity_check(data, base_offset=base, path=str(path)) == []
        by_position = {b["position"]: b for b in view.batches.get(path.parent.name, [])
                       if Path(b["file"]).name == path.with_suffix(".log").name}
        for entry in index_entries.get(str(path), []):
            batch = by_position.get(entry["position"])
            assert batch is not None and batch["last_offset"] == entry["offset"], entry
    for path in root.glob("*/*.timeindex"):
        base = int(path.name.split(".")[0])
        assert time_index.sanity_check(path.read_bytes(), base_offset=base, path=str(path)) == []
    view.high_watermarks = _checkpoint(root / "replication-offset-checkpoint").as_map()
    view.recovery_points = _checkpoint(root / "recovery-point-offset-checkpoint").as_map()
    _checkpoint(root / "log-start-offset-checkpoint")
    assert (root / ".kafka_cleanshutdown").exists()
    for part in root.iterdir():
        if not part.is_dir():
            continue
        meta = read_partition_metadata((part / "partition.metadata").read_bytes())
        assert not meta.problems and meta.topic_id
        epochs = read_leader_epoch_checkpoint((part / "leader-epoch-checkpoint").read_bytes())
        assert not epochs.problems and epochs.entries
        snaps = sorted(part.glob("*.snapshot"))
        if snaps:
            snap = read_producer_snapshot(snaps[-1].read_bytes(), path=str(snaps[-1]))
            assert snap.crc_valid and not snap.problems, snap
            view.snapshots[part.name] = snap
    return view


def verify_clean(root: Path) -> None:
    """``kafkatx verify`` finds no error in the log dir."""
    run = run_cli("verify", "--format", "json", str(root))
    doc = json.loads(run.stdout)
    assert run.returncode == 0 and doc["ok"], doc
