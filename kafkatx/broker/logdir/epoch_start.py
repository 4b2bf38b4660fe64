"""The leader epoch cache after the log start offset moved (retention, DeleteRecords)."""

from __future__ import annotations

from kafkatx.broker.logs.files import atomic_write
from kafkatx.broker.logs.partition_log import PartitionLog
from kafkatx.formats.checkpoints import (
    LEADER_EPOCH_CHECKPOINT_FILE,
    EpochEntry,
    build_leader_epoch_checkpoint,
)


def truncate_epoch_cache_from_start(log: PartitionLog, before: int) -> None:
    """``LeaderEpochFileCache#truncateFromStart`` once the log start offset moved past
    ``before``: the one epoch now starts there."""
    if log.log_start_offset > before and log.epochs is not None:
        log.truncate_epochs_from_start()  # a replica of a --brokers N serve
    elif log.log_start_offset > before:
        atomic_write(log.dir / LEADER_EPOCH_CHECKPOINT_FILE, build_leader_epoch_checkpoint(
            [EpochEntry(epoch=log.leader_epoch, start_offset=log.log_start_offset)]))
