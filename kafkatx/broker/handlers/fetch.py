"""Fetch (key 1): read_uncommitted up to the HW, read_committed up to the LSO, long polling.

Mirrors ``ReplicaManager#fetchMessages`` / ``readFromLocalLog`` (response ``max_bytes`` shared by
the partitions in request order, the first partition with data may exceed its limit by one batch
— KIP-74 ``minOneMessage``; answer at once when ``max_wait`` is 0, when ``min_bytes`` are
available or on an error, else wait for appends — ``DelayedFetch``) and
``Partition#fetchRecords`` (leader epoch checks, OFFSET_OUT_OF_RANGE with unknown offsets).
Fetch sessions are not kept: session id 0 tells clients every request is a full fetch. Two wire
rules clients depend on: ``records`` is always bytes (librdkafka rejects a null ``records`` in
flexible versions) and ``aborted_transactions`` is null for read_uncommitted (kafkajs applies a
list even then), a list (possibly empty) for read_committed.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from kafkatx.broker import protocol
from kafkatx.broker.handlers import api
from kafkatx.broker.partition_log import AppendError, PartitionLog
from kafkatx.semantics.read_committed import IsolationLevel

if TYPE_CHECKING:
    from kafkatx.broker.server import Broker, RequestContext

UNKNOWN_OFFSET = -1
MAX_WAIT_CAP_S = 30.0  # never hold a connection longer, whatever the client asks


def isolation_of(request: Any) -> IsolationLevel:
    return (IsolationLevel.READ_COMMITTED if getattr(request, "isolation_level", 0) == 1
            else IsolationLevel.READ_UNCOMMITTED)


def leader_epoch_error(log: PartitionLog, current_leader_epoch: int) -> ErrorCode | None:
    """``Partition#localLogWithEpochOrThrow``: a client epoch newer than ours is unknown, an
    older one fenced; -1 skips the check."""
    if current_leader_epoch < 0 or current_leader_epoch == log.leader_epoch:
        return None
    if current_leader_epoch > log.leader_epoch:
        return ErrorCode.unknown_leader_epoch
    return ErrorCode.fenced_leader_epoch


def _read_all(broker: Broker, ctx: RequestContext, request: Any,
              isolation: IsolationLevel) -> tuple[tuple[Any, ...], int, bool]:
    """(topic responses, bytes read, whether any partition has an error)."""
    limit = getattr(request, "max_bytes", 2**31 - 1)
    min_one_message = True
    total = 0
    any_error = False
    committed = isolation == IsolationLevel.READ_COMMITTED
    topics = []
    for topic in request.topics:
        partitions = []
        for part in topic.partitions:
            log = broker.logs.get(topic.topic, part.partition)
            error = ErrorCode.none
            if log is None:
                error = ErrorCode.unknown_topic_or_partition
            else:
                error = leader_epoch_error(log, getattr(part, "current_leader_epoch", -1)) \
                    or ErrorCode.none
            if error != ErrorCode.none or log is None:
                any_error = True
                partitions.append(_partition(ctx, part.partition, error))
                continue
            try:
                result = log.read(part.fetch_offset, min(part.partition_max_bytes, limit),
                                  isolation, min_one_message=min_one_message)
            except AppendError as exc:
                any_error = True
                partitions.append(_partition(ctx, part.partition, exc.error))
                continue
            size = len(result.records)
            if size:
                min_one_message = False
                limit = max(0, limit - size)
                total += size
            aborted = None
            if committed:
                aborted = tuple(
                    protocol.make(ctx.resp.AbortedTransaction, producer_id=a.producer_id,
                                  first_offset=a.first_offset)
                    for a in result.aborted_transactions or ())
            partitions.append(protocol.make(
                ctx.resp.PartitionData, partition_index=part.partition,
                error_code=ErrorCode.none, high_watermark=result.high_watermark,
                last_stable_offset=result.last_stable_offset,
                log_start_offset=result.log_start_offset, aborted_transactions=aborted,
                preferred_read_replica=-1, records=result.records))
        topics.append(protocol.make(ctx.resp.FetchableTopicResponse, topic=topic.topic,
                                    partitions=tuple(partitions)))
    return tuple(topics), total, any_error


def _partition(ctx: RequestContext, index: int, error: ErrorCode) -> Any:
    return protocol.make(ctx.resp.PartitionData, partition_index=index, error_code=error,
                         high_watermark=UNKNOWN_OFFSET, last_stable_offset=UNKNOWN_OFFSET,
                         log_start_offset=UNKNOWN_OFFSET, aborted_transactions=None,
                         preferred_read_replica=-1, records=b"")


@api(1, 4, 12)
async def handle_fetch(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    isolation = isolation_of(request)
    max_wait_s = min(max(protocol.ms(request.max_wait), 0) / 1000, MAX_WAIT_CAP_S)
    deadline = time.monotonic() + max_wait_s
    while True:
        topics, total, any_error = _read_all(broker, ctx, request, isolation)
        remaining = deadline - time.monotonic()
        if (remaining <= 0 or total >= request.min_bytes or any_error or not request.topics
                or broker.stopping.is_set()):
            break
        await broker.wait_for_append(remaining)
    return protocol.make(ctx.response_cls, error_code=ErrorCode.none, session_id=0,
                         responses=topics)
