"""Producer rules a batch broke, as the replay's audit saw them (ProducerAppendInfo's checks):
sequence_gap, invalid_epoch (zombie writes), invalid_txn_state, coordinator_epoch_regression,
duplicate_batch, empty_transaction, unexpected_control_batch."""

from __future__ import annotations

from collections.abc import Iterator

from kafkatx.analysis.checks import PartitionContext
from kafkatx.analysis.findings import Finding, location


def check_partition(ctx: PartitionContext) -> Iterator[Finding]:
    for e in ctx.replay.events:
        b = e.batch
        yield Finding(kind=e.kind, message=e.message, topic=ctx.topic, partition=ctx.partition,
                      producer_id=b.producer_id, producer_epoch=b.producer_epoch,
                      offset=b.base_offset, location=location(b.path, b.position))
