"""Which of several brokers' copies of a partition speaks for it.

Kafka answers for a partition from its leader: ListOffsets (the LSO), DescribeProducers
without a broker id, the fetches of read_committed consumers, the coordinator loading
``__transaction_state``. Offline, the copy that stands for the leader is the one every other
replica would truncate against when it follows (``AbstractFetcherThread#truncateToEpochEndOffsets``
over the leader's ``LeaderEpochFileCache``): the copy with the newest leader epoch (a new
leader records its epoch before it appends anything: ``Partition#makeLeader`` ->
``UnifiedLog#maybeAssignEpochStartOffset``), the longest when epochs tie (the clean election's
choice among in-sync replicas), then the highest checkpointed high watermark (a follower's HW
trails its leader's: it takes the leader's from each fetch response, ``UnifiedLog#
maybeUpdateHighWatermark``; so of equal logs the leader's copy, whose HW decides the LSO), then
the first in log-dir order. The other copies are
followers: what they hold below their truncation point is the leader's log again, and what lies
above it is truncated when they follow. Their transactions are therefore told once, from the
authoritative copy (the coordinator's view, the join with it, the timeline, the
producer-state findings); what differs between copies is the replica comparison's to say
(:mod:`kafkatx.analysis.replicas`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from kafkatx.errors import UnreadableFileError
from kafkatx.semantics.leader_epochs import EpochCache
from kafkatx.storage.discovery import PartitionDir, high_watermarks
from kafkatx.storage.readers import read_leader_epoch_checkpoint_file, scan_segment_file

TopicPartition = tuple[str, int]

#: Findings the producer-state rules derive from a partition's batches. Replication copies
#: batches byte for byte, so an in-sync follower's copy yields the leader's findings again,
#: and a diverged one's are of records its broker truncates: both are the replica
#: comparison's, not the partition's.
REPLICATED_KINDS = frozenset({
    "open_transaction", "lso_pinned", "sequence_gap", "duplicate_batch", "invalid_epoch",
    "invalid_txn_state", "coordinator_epoch_regression", "empty_transaction",
    "unexpected_control_batch",
})


class CopyPosition(NamedTuple):
    """Where one copy stands: its leader epochs (``LeaderEpochFileCache``) and log end."""

    pdir: PartitionDir
    cache: EpochCache
    log_end_offset: int
    high_watermark: int | None = None  # replication-offset-checkpoint's

    @property
    def latest_leader_epoch(self) -> int:
        return self.cache.latest_epoch


def _headers(pdir: PartitionDir, problems: list[str], *, last_only: bool
             ) -> list[tuple[list[int], list[int], list[int]]]:
    """(base offsets, last offsets, partition leader epochs) per segment with a ``.log``,
    newest first; with ``last_only`` up to the first segment that holds a batch."""
    out = []
    for seg in reversed(pdir.segments):
        if seg.log is None:
            continue
        try:
            h = scan_segment_file(seg.log).headers
        except UnreadableFileError as exc:
            problems.append(str(exc))
            continue
        out.append((h.base_offset.tolist(), h.last_offset.tolist(),
                    h.partition_leader_epoch.tolist()))
        if last_only and len(h):
            break
    return out


def log_end_offset(pdir: PartitionDir, problems: list[str]) -> int:
    """The copy's log end offset as the analysis computes it: past its last batch, or its
    newest segment's base offset when that is later (an empty active segment)."""
    bases = [s.base_offset for s in pdir.segments if s.log is not None]
    newest_base = bases[-1] if bases else 0
    for _, last, _ in _headers(pdir, problems, last_only=True):
        if last:
            return max(last[-1] + 1, newest_base)
    return newest_base


def epoch_cache(pdir: PartitionDir, leo: int, problems: list[str]) -> EpochCache:
    """The broker's ``LeaderEpochFileCache``: its ``leader-epoch-checkpoint`` (which also holds
    epochs a new leader assigned before appending, ``Partition#makeLeader``), the epochs past
    the log end dropped; rebuilt from the batches when the file is missing or unreadable."""
    path = pdir.leader_epoch_checkpoint
    if path is not None:
        try:
            cp = read_leader_epoch_checkpoint_file(path)
        except UnreadableFileError as exc:
            problems.append(str(exc))
        else:
            if not cp.problems and cp.entries:
                cache = EpochCache()
                for e in cp.entries:
                    cache.assign(e.epoch, e.start_offset)
                cache.entries = [(e, s) for e, s in cache.entries if s <= leo]
                return cache
    segments = reversed(_headers(pdir, problems, last_only=False))
    return EpochCache.from_batches((epoch, base) for bases, _, epochs in segments
                                   for epoch, base in zip(epochs, bases, strict=True))


def position(pdir: PartitionDir, problems: list[str], leo: int | None = None,
             high_watermark: int | None = None) -> CopyPosition:
    end = log_end_offset(pdir, problems) if leo is None else leo
    return CopyPosition(pdir=pdir, cache=epoch_cache(pdir, end, problems), log_end_offset=end,
                        high_watermark=high_watermark)


def leader_of(copies: Sequence[CopyPosition]) -> CopyPosition:
    """The authoritative copy: newest leader epoch, then longest, then the highest HW, then
    the first given."""
    return max(copies, key=lambda c: (c.latest_leader_epoch, c.log_end_offset,
                                      -1 if c.high_watermark is None else c.high_watermark))


HighWatermarks = dict[int, dict[TopicPartition, int]]  # id(log dir) -> its checkpoint


def checkpointed_hw(pdir: PartitionDir, cache: HighWatermarks | None = None) -> int | None:
    """The copy's ``replication-offset-checkpoint`` entry (None: no log dir, file or entry)."""
    if pdir.log_dir is None:
        return None
    key = id(pdir.log_dir)
    if cache is None or key not in cache:
        found = high_watermarks(pdir.log_dir)
        if cache is None:
            return found.get((pdir.topic, pdir.partition))
        cache[key] = found
    return cache[key].get((pdir.topic, pdir.partition))


def authoritative_copy(dirs: Sequence[PartitionDir], problems: list[str],
                       hws: HighWatermarks | None = None) -> PartitionDir:
    """The copy among ``dirs`` (one partition's) that speaks for the partition."""
    if len(dirs) == 1:
        return dirs[0]
    return leader_of([position(d, problems, high_watermark=checkpointed_hw(d, hws))
                      for d in dirs]).pdir


class ReplicaSet(NamedTuple):
    """One partition's live copies in log-dir order, and which of them is authoritative."""

    copies: tuple[PartitionDir, ...]
    leader: PartitionDir

    @property
    def followers(self) -> tuple[PartitionDir, ...]:
        return tuple(d for d in self.copies if d is not self.leader)


def replica_sets(pdirs: Iterable[PartitionDir], problems: list[str]
                 ) -> dict[TopicPartition, ReplicaSet]:
    """Each partition with copies in several log dirs."""
    groups: dict[TopicPartition, list[PartitionDir]] = {}
    for p in pdirs:
        if p.is_live and p.log_dir is not None:
            groups.setdefault((p.topic, p.partition), []).append(p)
    hws: HighWatermarks = {}
    return {tp: ReplicaSet(copies=tuple(dirs), leader=authoritative_copy(dirs, problems, hws))
            for tp, dirs in groups.items() if len(dirs) > 1}


def follower_paths(sets: dict[TopicPartition, ReplicaSet]) -> frozenset[str]:
    """The paths of the copies that are not authoritative."""
    return frozenset(str(d.path) for rs in sets.values() for d in rs.followers)
