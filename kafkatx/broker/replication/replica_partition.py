"""One hosted replica of a partition and, on its leader, the followers' states.

Mirrors Kafka's ``Partition`` fields (leader, leader epoch, replicas, ISR, the
``ReplicaState`` of each follower); the roles and ISR rules that use them are in
:mod:`kafkatx.broker.replication.replica_manager`, the follower's fetching in
:mod:`kafkatx.broker.replication.replica_fetcher`.
"""

from __future__ import annotations

from dataclasses import field

from kafkatx.broker.logs.partition_log import PartitionLog
from kafkatx.lazy_dataclass import dataclass

TopicPartition = tuple[str, int]


@dataclass(slots=True)
class FollowerState:
    """``Replica``'s view, on the leader, of one follower (``ReplicaState``)."""

    log_end_offset: int = -1  # unknown until it fetches
    last_caught_up_ms: int = 0
    last_fetch_leader_log_end_offset: int = -1
    last_fetch_ms: int = 0


@dataclass(slots=True)
class Partition:
    """One hosted replica of a partition and, while this broker leads it, its followers."""

    tp: TopicPartition
    log: PartitionLog
    leader: int = -1
    leader_epoch: int = -1
    replicas: list[int] = field(default_factory=list)
    isr: list[int] = field(default_factory=list)
    followers: dict[int, FollowerState] = field(default_factory=dict)
    leader_epoch_start_offset: int = 0

    def __post_init__(self) -> None:
        if self.log.epochs is None:
            self.log.load_epoch_cache()
