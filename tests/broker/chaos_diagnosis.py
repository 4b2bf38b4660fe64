"""What the chaos run (:mod:`tests.broker.chaos`) prints when a transaction breaks its
contract: for each such transaction, where each broker's copy of each partition holds its
record and which marker of its producer ended it there (or that none did), and what the
serve log says about its transactional id's markers, transitions and fencing. Read from the
brokers' log dirs as they stand (read-only)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kafkatx.formats.record_batch import RecordBatch
from kafkatx.formats.segment import iter_segment

#: serve log lines about a transaction's end worth showing next to the replicas' markers.
COORDINATOR_WORDS = re.compile(r"marker|not replicated|undone|completing|fenced|timeout|"
                               r"could not complete|refused")
LOG_LINES = 25


@dataclass(frozen=True, slots=True)
class Copy:
    """One broker's copy of a partition as far as one record of a transaction goes."""

    node: int
    partition: int
    record: tuple[int, int, int] | None  # (offset, producer id, producer epoch)
    end: str  # the marker that ended it, or why none did


def _batches(partition_dir: Path) -> list[RecordBatch]:
    batches: list[RecordBatch] = []
    for segment in sorted(partition_dir.glob("*.log")):
        batches += [e for e in iter_segment(segment.read_bytes(), decode_records=True)
                    if isinstance(e, RecordBatch)]
    return batches


def _copy(node: int, partition: int, batches: list[RecordBatch], value: bytes) -> Copy:
    found = next(((i, b) for i, b in enumerate(batches) if not b.header.is_control
                  and any(r.value == value for r in b.records or ())), None)
    if found is None:
        return Copy(node, partition, None, "record absent")
    i, batch = found
    h = batch.header
    for later in batches[i + 1:]:
        g = later.header
        if g.producer_id != h.producer_id or not g.is_control or later.control is None:
            continue
        return Copy(node, partition, (h.base_offset, h.producer_id, h.producer_epoch),
                    f"{later.control.type} at {g.base_offset} (producer epoch "
                    f"{g.producer_epoch}, coordinator epoch {later.control.coordinator_epoch})")
    return Copy(node, partition, (h.base_offset, h.producer_id, h.producer_epoch),
                "no marker after it (open)")


def copies(log_dir: Path, topic: str, nodes: tuple[int, ...], values: list[bytes]
           ) -> list[Copy]:
    """Each broker's copy of each partition ``values[p]`` was written to."""
    out = []
    for p, value in enumerate(values):
        for node in nodes:
            partition_dir = log_dir / f"broker-{node}" / f"{topic}-{p}"
            out.append(_copy(node, p, _batches(partition_dir), value)
                       if partition_dir.is_dir() else Copy(node, p, None, "no such replica"))
    return out


def explain(log_dir: Path, topic: str, nodes: tuple[int, ...], serve_log: str,
            transactional_id: str, values: list[bytes]) -> list[str]:
    """Lines for a broken transaction: its copies, then the serve log about its id."""
    lines = [f"  {topic}-{c.partition} on broker {c.node}: "
             + ("" if c.record is None else
                f"record at {c.record[0]} (producer {c.record[1]} epoch {c.record[2]}), ")
             + c.end for c in copies(log_dir, topic, nodes, values)]
    said = [line for line in serve_log.splitlines()
            if transactional_id in line and COORDINATOR_WORDS.search(line)]
    lines.append(f"  serve log on {transactional_id} ({len(said)} lines, the last "
                 f"{min(len(said), LOG_LINES)}):")
    lines += [f"    {line}" for line in said[-LOG_LINES:]]
    return lines
