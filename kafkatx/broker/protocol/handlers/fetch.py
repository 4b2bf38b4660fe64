"""Fetch (key 1): read_uncommitted up to the HW, read_committed up to the LSO, long polling;
v0-v3 records down-converted to magic 0/1 as Kafka 3.x does.

Mirrors ``ReplicaManager#fetchMessages`` / ``readFromLocalLog`` (response ``max_bytes`` shared by
the partitions in request order, the first partition with data may exceed its limit by one batch
— KIP-74 ``minOneMessage``; answer at once when ``max_wait`` is 0, when ``min_bytes`` are
available or on an error, else wait for appends — ``DelayedFetch``) and
``Partition#fetchRecords`` (leader epoch checks, OFFSET_OUT_OF_RANGE with unknown offsets).
``FetchParams#hardMaxBytesLimit`` for v0-v2 (no first batch is let past the limits, so a batch
larger than the partition's max bytes comes back cut, as old clients expect) and, from v3, an
incomplete first batch replaced by nothing (``ReplicaManager#readFromLog``).
``KafkaApis#maybeConvertFetchedData``: a topic with ``compression.type=zstd`` is
UNSUPPORTED_COMPRESSION_TYPE before v10; v0-v1 get magic 0 and v2-v3 magic 1
(:func:`kafkatx.broker.logs.legacy_records.down_convert`), UNSUPPORTED_VERSION when the topic's
``message.downconversion.enable`` is false, UNSUPPORTED_COMPRESSION_TYPE for a ZSTD batch. Kafka
4.0 removed v0-v3 (KIP-896); this serves them as 3.x does.
With ``--brokers N`` only the leader serves a fetch (NOT_LEADER_OR_FOLLOWER elsewhere; no
follower fetching, KIP-392), and a fetch from a follower (``replica_id`` >= 0) reads up to the
log end offset (``FetchIsolation.LOG_END``) and tells the leader the follower's log end offset
(``Partition#updateFollowerFetchState``, which moves the ISR and the high watermark).
Fetch sessions are not kept: session id 0 tells clients every request is a full fetch. Two wire
rules clients depend on: ``records`` is always bytes (librdkafka rejects a null ``records`` in
flexible versions) and ``aborted_transactions`` is null for read_uncommitted (kafkajs applies a
list even then), a list (possibly empty) for read_committed.
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from kafkatx.broker.logs.legacy_records import UnsupportedCompression, down_convert
from kafkatx.broker.logs.log_values import AppendError
from kafkatx.broker.logs.partition_log import PartitionLog
from kafkatx.broker.protocol.handlers.registry import api
from kafkatx.broker.replication.replica_manager import leader_log
from kafkatx.broker.wire import codec
from kafkatx.semantics.read_committed import IsolationLevel

if TYPE_CHECKING:
    from kafkatx.broker.context import BrokerContext, RequestContext

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


def _read_all(broker: BrokerContext, ctx: RequestContext, request: Any,
              isolation: IsolationLevel) -> tuple[tuple[Any, ...], int, bool]:
    """(topic responses, bytes read, whether any partition has an error)."""
    limit = getattr(request, "max_bytes", 2**31 - 1)
    hard_limit = ctx.api_version <= 2  # FetchParams#hardMaxBytesLimit
    min_one_message = not hard_limit
    total = 0
    any_error = False
    committed = isolation == IsolationLevel.READ_COMMITTED
    replica_id = getattr(request, "replica_id", -1)
    from_follower = replica_id >= 0 and broker.cluster is not None
    topics = []
    for topic in request.topics:
        partitions = []
        for part in topic.partitions:
            log, error = leader_log(broker, topic.topic, part.partition)
            if log is not None:
                error = leader_epoch_error(log, getattr(part, "current_leader_epoch", -1)) \
                    or ErrorCode.none
            if error != ErrorCode.none or log is None:
                any_error = True
                partitions.append(_partition(ctx, part.partition, error))
                continue
            try:
                result = log.read(part.fetch_offset, min(part.partition_max_bytes, limit),
                                  isolation, min_one_message=min_one_message,
                                  log_end=from_follower)
            except AppendError as exc:
                any_error = True
                partitions.append(_partition(ctx, part.partition, exc.error))
                continue
            if from_follower:
                leading = broker.replicas.leader_partition(topic.topic, part.partition)
                if leading is not None:
                    broker.replicas.update_follower_fetch(leading, replica_id, part.fetch_offset,
                                                          log.log_end_offset)
                    result = dataclasses.replace(result, high_watermark=log.high_watermark)
            records = result.records
            if result.first_entry_incomplete and not hard_limit:
                records = b""
            size = len(records)
            if size:
                min_one_message = False
                limit = max(0, limit - size)
                total += size
            converted, error = _maybe_convert(broker, ctx, topic.topic, records,
                                              part.fetch_offset)
            if error is not None:
                any_error = True
                partitions.append(_partition(ctx, part.partition, error))
                continue
            aborted = None
            if committed:
                aborted = tuple(
                    codec.make(ctx.resp.AbortedTransaction, producer_id=a.producer_id,
                                  first_offset=a.first_offset)
                    for a in result.aborted_transactions or ())
            partitions.append(codec.make(
                ctx.resp.PartitionData, partition_index=part.partition,
                error_code=ErrorCode.none, high_watermark=result.high_watermark,
                last_stable_offset=result.last_stable_offset,
                log_start_offset=result.log_start_offset, aborted_transactions=aborted,
                preferred_read_replica=-1, records=converted))
        topics.append(codec.make(ctx.resp.FetchableTopicResponse, topic=topic.topic,
                                    partitions=tuple(partitions)))
    return tuple(topics), total, any_error


def _maybe_convert(broker: BrokerContext, ctx: RequestContext, topic: str, records: bytes,
                   fetch_offset: int) -> tuple[bytes, ErrorCode | None]:
    """``KafkaApis#maybeConvertFetchedData``: (the records to send, or the partition's error)."""
    configs = broker.logs.topics[topic].configs
    if ctx.api_version < 10 and broker.logs.topic_config("compression.type", configs) == "zstd":
        return b"", ErrorCode.unsupported_compression_type
    if ctx.api_version > 3:
        return records, None
    if broker.logs.topic_config("message.downconversion.enable", configs) != "true":
        return b"", ErrorCode.unsupported_version
    try:
        return down_convert(records, 0 if ctx.api_version <= 1 else 1, fetch_offset), None
    except UnsupportedCompression:
        return b"", ErrorCode.unsupported_compression_type


def _partition(ctx: RequestContext, index: int, error: ErrorCode) -> Any:
    return codec.make(ctx.resp.PartitionData, partition_index=index, error_code=error,
                         high_watermark=UNKNOWN_OFFSET, last_stable_offset=UNKNOWN_OFFSET,
                         log_start_offset=UNKNOWN_OFFSET, aborted_transactions=None,
                         preferred_read_replica=-1, records=b"")


@api(1, 0, 12)
async def handle_fetch(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    isolation = isolation_of(request)
    max_wait_s = min(max(codec.ms(request.max_wait), 0) / 1000, MAX_WAIT_CAP_S)
    deadline = time.monotonic() + max_wait_s
    while True:
        topics, total, any_error = _read_all(broker, ctx, request, isolation)
        remaining = deadline - time.monotonic()
        if (remaining <= 0 or total >= request.min_bytes or any_error or not request.topics
                or broker.stopping.is_set()):
            break
        await broker.wait_for_append(remaining)
    return codec.make(ctx.response_cls, error_code=ErrorCode.none, session_id=0,
                         responses=topics)
