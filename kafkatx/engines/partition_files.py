"""What the small files of a log dir and of a partition dir say is wrong with them.

``checkpoint_problem`` for a root checkpoint, ``meta.properties``, ``leader-epoch-checkpoint``
or ``partition.metadata`` that is garbled or cannot be read (what ``CheckpointFile#read``,
``MetaProperties``, ``LeaderEpochCheckpointFile`` and ``PartitionMetadataFile#read`` would
refuse), and ``orphaned_index`` for a segment's index files whose ``.log`` is missing (what
``LogLoader#loadSegmentFiles`` deletes as "an orphaned index file"). Both engines call these
where they read a log dir's checkpoints and analyze a partition.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from kafkatx.analysis.findings import Finding
from kafkatx.errors import FormatError, KafkatxError
from kafkatx.formats.checkpoints import (
    read_leader_epoch_checkpoint,
    read_meta_properties,
    read_partition_metadata,
)
from kafkatx.storage.discovery import LogDir, PartitionDir, read_root_checkpoints
from kafkatx.storage.files import open_bytes


def root_checkpoint_findings(log_dir: LogDir) -> list[Finding]:
    """``checkpoint_problem`` for every root checkpoint and the ``meta.properties`` of
    ``log_dir`` that is garbled or cannot be read."""
    unreadable: list[str] = []
    findings = [_finding(name, p)
                for name, cp in read_root_checkpoints(log_dir, unreadable).items()
                for p in cp.problems]
    findings += [_unreadable(line) for line in unreadable]
    if log_dir.meta_properties is not None:
        findings += _file_findings(log_dir.meta_properties, read_meta_properties)
    return findings


def partition_file_findings(pdir: PartitionDir) -> list[Finding]:
    """``checkpoint_problem`` for the partition's ``leader-epoch-checkpoint`` and
    ``partition.metadata``, ``orphaned_index`` for its segments without a ``.log``."""
    findings: list[Finding] = []
    if pdir.leader_epoch_checkpoint is not None:
        findings += _file_findings(pdir.leader_epoch_checkpoint, read_leader_epoch_checkpoint)
    if pdir.partition_metadata is not None:
        findings += _file_findings(pdir.partition_metadata, read_partition_metadata)
    return findings + _orphaned_indexes(pdir)


def _file_findings(path: Path, read: Callable[..., object]) -> list[Finding]:
    try:
        with open_bytes(path) as data:
            parsed = read(bytes(data), path=str(path))
    except FormatError as exc:
        return [_finding(path.name, exc)]
    except KafkatxError as exc:
        return [_unreadable(str(exc))]
    problems: Iterable[FormatError] = getattr(parsed, "problems", ())
    return [_finding(path.name, p) for p in problems]


def _finding(name: str, problem: FormatError) -> Finding:
    where = None if problem.path is None else (
        problem.path if problem.position is None else f"{problem.path}:{problem.position}")
    return Finding(kind="checkpoint_problem", message=f"{name}: {problem.message}",
                   location=where)


def _unreadable(line: str) -> Finding:
    path = line.split(": ", 1)[0]
    return Finding(kind="checkpoint_problem", message=f"cannot be read: {line}", location=path)


def _orphaned_indexes(pdir: PartitionDir) -> list[Finding]:
    findings = []
    with_log = [s.base_offset for s in pdir.segments if s.log is not None]
    for seg in pdir.segments:
        if seg.log is not None or not seg.files:
            continue
        following = [b for b in with_log if b > seg.base_offset]
        span = (f"offsets {seg.base_offset}..{following[0] - 1}" if following
                else f"offsets from {seg.base_offset}")
        names = ", ".join(p.name for p in seg.files)
        findings.append(Finding(
            kind="orphaned_index", offset=seg.base_offset, location=str(seg.files[0]),
            message=f"{names} without its {seg.base_offset:020d}.log: the segment's data is not "
                    f"in this copy ({span}); a broker deletes such files at load as orphaned "
                    "index files and starts the log at its first segment with a .log"))
    return findings
