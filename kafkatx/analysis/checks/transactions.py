"""Open transactions and what they do to the LSO: open_transaction, lso_pinned.

``lso_pinned``: an open transaction holding the LSO whose last write is older than
max(the transaction timeout, ``--max-transaction-timeout-ms``), measured against ``--now`` or
else the newest timestamp in the partition's log: the candidates of ``TransactionsCommand``
``find-hanging`` (``now - lastTimestamp > maxTransactionTimeoutMs``). The remediation is Kafka's
own ``kafka-transactions.sh abort`` for that partition and start offset; the coordinator join
(:mod:`kafkatx.analysis.coordinator_checks`) then takes the transaction's recorded timeout into
account and turns it into a warning without abort when the coordinator still runs it.
"""

from __future__ import annotations

from collections.abc import Iterator

from kafkatx.analysis.checks.context import PartitionContext
from kafkatx.analysis.findings import Finding
from kafkatx.analysis.replay_result import Transaction
from kafkatx.analysis.timefmt import duration as _duration

BOOTSTRAP = "<broker:9092>"  # where the operator's cluster answers: theirs to fill in


def abort_command(topic: str, partition: int, start_offset: int) -> str:
    return (f"kafka-transactions.sh --bootstrap-server {BOOTSTRAP} abort "
            f"--topic {topic} --partition {partition} --start-offset {start_offset}")


def check_partition(ctx: PartitionContext) -> Iterator[Finding]:
    threshold = max(ctx.transaction_timeout_ms, ctx.max_transaction_timeout_ms)
    for t in ctx.replay.open_transactions:
        yield open_finding(ctx, t, threshold_ms=threshold)


def open_finding(ctx: PartitionContext, t: Transaction, *, threshold_ms: int,
                 timeout_said: str = "its transaction timeout") -> Finding:
    """``lso_pinned`` when ``t`` holds the LSO and its last write is more than ``threshold_ms``
    before ``ctx.now_ms``, else ``open_transaction``; ``timeout_said`` names the timeout in the
    threshold (the coordinator join passes the one ``__transaction_state`` recorded)."""
    age = ctx.now_ms - t.first_timestamp if ctx.now_ms >= 0 else None
    idle = ctx.now_ms - t.last_timestamp if ctx.now_ms >= 0 else None
    pins = ctx.stable.held_by(t.first_offset)
    what = (f"producer {t.producer_id} epoch {t.producer_epoch} has an open transaction "
            f"from offset {t.first_offset} (last data at {t.last_data_offset}), no marker")
    if t.first_offset < ctx.log_start_offset:
        what += (f"; it began below the log start offset {ctx.log_start_offset} (retention "
                 "deleted its first records; the producer snapshot keeps it open)")
    if age is not None and idle is not None:
        what += f", open for {_duration(age)}, last write {_duration(idle)} ago"
    if pins:
        what += f"; it holds the LSO at {ctx.stable.last_stable_offset}"
    if idle is not None and idle > threshold_ms and pins:
        return Finding(
            kind="lso_pinned", topic=ctx.topic, partition=ctx.partition,
            producer_id=t.producer_id, producer_epoch=t.producer_epoch,
            offset=t.first_offset, location=ctx.path,
            message=what + f", no write for longer than {_duration(threshold_ms)} (the larger "
                           f"of {timeout_said} and {ctx.max_timeout_said}): "
                           "read_committed consumers are stuck there",
            remediation=abort_command(ctx.topic, ctx.partition, t.first_offset))
    return Finding(kind="open_transaction", topic=ctx.topic, partition=ctx.partition,
                   producer_id=t.producer_id, producer_epoch=t.producer_epoch,
                   offset=t.first_offset, location=ctx.path, message=what)
