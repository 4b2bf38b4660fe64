"""Leader epochs of a replica and where a follower truncates to, as Kafka decides it.

``EpochCache`` mirrors ``LeaderEpochFileCache`` (``assign``, ``endOffsetFor``,
``truncateFromEnd``) built the way ``UnifiedLog#append`` feeds it (``maybeAssignEpochStartOffset``
with each v2 batch's partition leader epoch and base offset). ``truncation_offset`` replays the
follower's side of KIP-101/KIP-279 (``AbstractFetcherThread#getOffsetTruncationState``): the
follower sends its latest epoch in OffsetsForLeaderEpoch, the leader answers with its
``endOffsetFor`` that epoch, and the follower truncates, asking again while the leader answers
an epoch the follower does not know.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import field
from typing import NamedTuple

from kafkatx.lazy_dataclass import dataclass

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


@dataclass(slots=True)
class EpochCache:
    """``(epoch, start offset)`` entries, epochs and start offsets increasing."""

    entries: list[tuple[int, int]] = field(default_factory=list)

    @classmethod
    def from_batches(cls, batches: Iterable[tuple[int, int]]) -> EpochCache:
        """From (partition leader epoch, base offset) of each batch in offset order."""
        cache = cls()
        for epoch, base in batches:
            cache.assign(epoch, base)
        return cache

    @property
    def latest_epoch(self) -> int:
        return self.entries[-1][0] if self.entries else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> None:
        """``LeaderEpochFileCache#assign``: a new epoch replaces entries it conflicts with."""
        if epoch < 0:
            return  # legacy batches (magic < 2) carry no leader epoch
        if self.entries:
            latest_epoch, latest_start = self.entries[-1]
            if latest_epoch == epoch and latest_start <= start_offset:
                return  # isUpdateNeeded: same epoch, not an earlier start
        self.entries = [(e, s) for e, s in self.entries if e < epoch and s < start_offset]
        self.entries.append((epoch, start_offset))

    def end_offset_for(self, requested: int, log_end_offset: int) -> tuple[int, int]:
        """``LeaderEpochFileCache#endOffsetFor``: (the largest epoch <= ``requested``, the
        start offset of the next epoch or the log end offset)."""
        if requested == UNDEFINED_EPOCH or not self.entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if self.latest_epoch == requested:
            return requested, log_end_offset
        epochs = [e for e, _ in self.entries]
        higher = bisect.bisect_right(epochs, requested)
        if higher == len(epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            return requested, self.entries[0][1]
        return self.entries[higher - 1][0], self.entries[higher][1]

    def truncate_from_end(self, end_offset: int) -> None:
        """``truncateFromEnd``: drop the epochs that start at or after ``end_offset``."""
        self.entries = [(e, s) for e, s in self.entries if s < end_offset]


class Truncation(NamedTuple):
    offset: int  # the follower's log end offset after truncation
    rounds: int  # OffsetsForLeaderEpoch requests it took
    leader_epoch: int  # the epoch of the leader's last answer


def truncation_step(leader_epoch: int, leader_end: int, follower: EpochCache,
                    follower_leo: int, follower_hw: int) -> tuple[int, bool]:
    """``AbstractFetcherThread#getOffsetTruncationState`` for one OffsetsForLeaderEpoch answer
    (the leader's epoch and its end offset): where the follower truncates to, and whether that
    is final (False: the leader answered an epoch the follower does not have; ask again)."""
    if leader_end == UNDEFINED_EPOCH_OFFSET:
        # the leader knows no such epoch: truncate to the follower's high watermark
        return min(follower_hw, follower_leo), True
    if leader_epoch == UNDEFINED_EPOCH:
        return min(leader_end, follower_leo), True
    mine_epoch, mine_end = follower.end_offset_for(leader_epoch, follower_leo)
    if mine_epoch == UNDEFINED_EPOCH:
        return min(leader_end, follower_leo), True
    if mine_epoch != leader_epoch:
        return min(mine_end, follower_leo), False
    return min(mine_end, leader_end, follower_leo), True


def truncation_offset(leader: EpochCache, leader_leo: int, follower: EpochCache,
                      follower_leo: int, follower_hw: int) -> Truncation:
    """Where the follower's log ends once it has truncated against the leader's."""
    cache = EpochCache(list(follower.entries))
    leo = follower_leo
    rounds = 0
    while True:
        rounds += 1
        epoch, end = leader.end_offset_for(cache.latest_epoch, leader_leo)
        target, final = truncation_step(epoch, end, cache, leo, follower_hw)
        if final:
            return Truncation(target, rounds, epoch)
        leo = target
        cache.truncate_from_end(leo)
