"""Producer rules a batch broke, as the replay's audit saw them (ProducerAppendInfo's checks):
sequence_gap, invalid_epoch (zombie writes), invalid_txn_state, coordinator_epoch_regression,
duplicate_batch, empty_transaction, unexpected_control_batch.

In the prefix the log cleaner has been over (``PartitionContext.cleaned_end``) a rebuild replays
with REPLICATION origin, which checks no sequences (``ProducerAppendInfo#appendDataBatch``):
the cleaner removes batches whole, so the sequences of those that stay skip. A sequence audited
there, or across its end from a batch inside it, is not reported; nor the first data batch of
a producer whose earlier batches the log no longer has (retention cut the log, or the cleaner
removed them): only its markers were replayed, so its last sequence is unknown."""

from __future__ import annotations

from collections.abc import Iterator

from kafkatx.analysis.checks.context import PartitionContext
from kafkatx.analysis.findings import Finding, location
from kafkatx.semantics.producer_state import SEQUENCE_GAP

SEQUENCE_RULES = (SEQUENCE_GAP, "duplicate_batch")


def check_partition(ctx: PartitionContext) -> Iterator[Finding]:
    for e in ctx.replay.events:
        b = e.batch
        if e.kind in SEQUENCE_RULES and _history_lost(ctx, e.batch.base_offset,
                                                      e.previous_offset):
            continue
        yield Finding(kind=e.kind, message=e.message, topic=ctx.topic, partition=ctx.partition,
                      producer_id=b.producer_id, producer_epoch=b.producer_epoch,
                      offset=b.base_offset, location=location(b.path, b.position))


def _history_lost(ctx: PartitionContext, offset: int, previous_data_offset: int | None) -> bool:
    if offset < ctx.cleaned_end:
        return True
    if previous_data_offset is None:
        history_starts_later = (ctx.replay.first_offset or 0) > 0
        return history_starts_later or ctx.cleaned_end > 0
    return previous_data_offset < ctx.cleaned_end
