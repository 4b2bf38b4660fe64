"""The checkpointed high watermark against the log's offsets: high_watermark_beyond_log_end,
high_watermark_below_log_start.

A broker loading a partition takes the HW from ``replication-offset-checkpoint`` and clamps it
to [log start offset, log end offset] (``Partition#createLog`` -> ``UnifiedLog
#updateHighWatermark``); kafkatx computes the LSO with that clamped value, and reports a
checkpoint outside the range, which the broker would silently correct.
"""

from __future__ import annotations

from collections.abc import Iterator

from kafkatx.analysis.checks.context import PartitionContext
from kafkatx.analysis.findings import Finding


def check_partition(ctx: PartitionContext) -> Iterator[Finding]:
    hw = ctx.stable.checkpoint_high_watermark
    if hw is None:
        return
    if hw < ctx.log_start_offset:
        yield Finding(kind="high_watermark_below_log_start", topic=ctx.topic,
                      partition=ctx.partition, offset=hw, location=ctx.path,
                      message=f"replication-offset-checkpoint says HW {hw}, below the log start "
                              f"offset {ctx.log_start_offset}: a loading broker raises it to "
                              f"{ctx.log_start_offset} (UnifiedLog#updateHighWatermark); the "
                              "checkpoint is older than the log start (retention or "
                              "DeleteRecords after it was written)")
    elif hw > ctx.log_end_offset:
        yield Finding(kind="high_watermark_beyond_log_end", topic=ctx.topic,
                      partition=ctx.partition, offset=hw, location=ctx.path,
                      message=f"replication-offset-checkpoint says HW {hw}, but the log ends at "
                              f"{ctx.log_end_offset}: this copy is older than the checkpoint or "
                              f"truncated; a loading broker lowers the HW to {ctx.log_end_offset} "
                              "(UnifiedLog#updateHighWatermark)")
