"""Open transactions and what they do to the LSO: open_transaction, lso_pinned, and a
checkpointed high watermark above the log end (high_watermark_beyond_log_end).

``lso_pinned``: an open transaction older than the transaction timeout, measured against
``--now`` or else the newest timestamp in the partition's log; the remediation is Kafka's own
``kafka-transactions.sh abort`` for that partition and start offset.
"""

from __future__ import annotations

from collections.abc import Iterator

from kafkatx.analysis.checks import PartitionContext
from kafkatx.analysis.findings import Finding
from kafkatx.analysis.timefmt import duration as _duration


def abort_command(topic: str, partition: int, start_offset: int) -> str:
    return ("kafka-transactions.sh --bootstrap-server <broker:9092> abort "
            f"--topic {topic} --partition {partition} --start-offset {start_offset}")


def check_partition(ctx: PartitionContext) -> Iterator[Finding]:
    hw = ctx.stable.high_watermark
    if hw is not None and hw > ctx.log_end_offset:
        yield Finding(kind="high_watermark_beyond_log_end", topic=ctx.topic,
                      partition=ctx.partition, offset=hw, location=ctx.path,
                      message=f"replication-offset-checkpoint says HW {hw}, but the log ends at "
                              f"{ctx.log_end_offset}: this copy is older than the checkpoint or "
                              "truncated")
    for t in ctx.replay.open_transactions:
        age = ctx.now_ms - t.first_timestamp if ctx.now_ms >= 0 else None
        pins = t.first_offset == ctx.stable.last_stable_offset
        what = (f"producer {t.producer_id} epoch {t.producer_epoch} has an open transaction "
                f"from offset {t.first_offset} (last data at {t.last_data_offset}), no marker")
        if age is not None:
            what += f", open for {_duration(age)}"
        if pins:
            what += f"; it holds the LSO at {t.first_offset}"
        if age is not None and age > ctx.transaction_timeout_ms and pins:
            yield Finding(
                kind="lso_pinned", topic=ctx.topic, partition=ctx.partition,
                producer_id=t.producer_id, producer_epoch=t.producer_epoch,
                offset=t.first_offset, location=ctx.path,
                message=what + f", longer than the {_duration(ctx.transaction_timeout_ms)} "
                               "transaction timeout: read_committed consumers are stuck there",
                remediation=abort_command(ctx.topic, ctx.partition, t.first_offset))
        else:
            yield Finding(kind="open_transaction", topic=ctx.topic, partition=ctx.partition,
                          producer_id=t.producer_id, producer_epoch=t.producer_epoch,
                          offset=t.first_offset, location=ctx.path, message=what)
