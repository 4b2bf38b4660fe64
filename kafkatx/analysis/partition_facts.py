"""What the metadata-log joins know of one partition directory: its topic id, its
``leader-epoch-checkpoint`` entries, the runs of batches by partition leader epoch, the first
batch of each producer id and each COMMIT marker with the epoch of the data it closes.

The engine gathers them from the files (:mod:`kafkatx.engines.partition_facts`);
:mod:`kafkatx.analysis.cluster_joins` reasons on them.
"""

from __future__ import annotations

from dataclasses import field

from kafkatx.formats.checkpoints import EpochEntry
from kafkatx.lazy_dataclass import dataclass


@dataclass(frozen=True, slots=True)
class EpochRun:
    """Consecutive batches stamped with the same partition leader epoch."""

    leader_epoch: int
    first_offset: int
    last_offset: int
    path: str
    position: int


@dataclass(frozen=True, slots=True)
class ProducerSeen:
    """The first batch of a producer id in a partition's log."""

    producer_id: int
    first_offset: int
    path: str
    position: int


@dataclass(frozen=True, slots=True)
class CommitSeen:
    """A COMMIT marker and the epoch of its producer's transactional data before it."""

    producer_id: int
    data_epoch: int
    marker_epoch: int
    offset: int
    timestamp: int
    path: str
    position: int


@dataclass(slots=True)
class PartitionFacts:
    """What a partition's files say beside its batches: topic id, epochs, producers."""

    topic: str
    partition: int
    path: str
    topic_id: str | None = None
    topic_id_path: str | None = None
    epoch_checkpoint: tuple[EpochEntry, ...] = ()
    epoch_checkpoint_path: str | None = None
    epoch_runs: list[EpochRun] = field(default_factory=list)
    producers: dict[int, ProducerSeen] = field(default_factory=dict)
    commits: list[CommitSeen] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    data_epochs: dict[int, int] = field(default_factory=dict)  # pid -> last transactional data
