"""Produce (key 0): validate, append as leader, answer per partition; nothing for acks=0.

Mirrors ``KafkaApis#handleProduceRequest`` (``ProduceRequest#validateRecords``: v3+ needs exactly
one magic-v2 batch per partition, ZStandard needs v7+; an acks=0 request that failed closes the
connection instead of answering) and ``ReplicaManager#appendRecords`` (INVALID_REQUIRED_ACKS,
UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION for a client append to an internal topic,
the error each append exception maps to, a duplicate answered with the original batch's offsets
and no error, the transaction verification of KIP-890 in ``txn_verification``). A single
replica is always the whole ISR, so acks=1 and acks=-1 are answered as soon as the batch is in
the log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from kafkatx.broker import protocol
from kafkatx.broker.batch_header import BatchFrameError, split_batches
from kafkatx.broker.handlers import api
from kafkatx.broker.log_manager import INTERNAL_TOPICS
from kafkatx.broker.partition_log import AppendError, AppendResult
from kafkatx.broker.txn_verification import verify_transactional_produce

if TYPE_CHECKING:
    from kafkatx.broker.server import Broker, RequestContext

ZSTD = 4
ADMIN_CLIENT_ID = "__admin_client"  # AdminUtils.ADMIN_CLIENT_ID: may append to internal topics


def validate_records(version: int, records: bytes | None) -> tuple[ErrorCode, str] | None:
    """``ProduceRequest#validateRecords``: the error for records this version may not carry."""
    if records is None:
        return ErrorCode.invalid_record, "Produce request partition has null records"
    try:
        headers, _ = split_batches(records)
    except BatchFrameError as exc:
        if exc.kind == "magic":
            return (ErrorCode.invalid_record,
                    f"Produce requests with version {version} must use message format v2: "
                    f"{exc}")
        return ErrorCode.corrupt_message, str(exc)
    if not headers:
        return (ErrorCode.invalid_record,
                f"Produce requests with version {version} must have at least one record batch "
                "per partition")
    if len(headers) > 1:
        return (ErrorCode.invalid_record,
                f"Produce requests with version {version} are only allowed to contain exactly "
                "one record batch per partition")
    if version < 7 and headers[0].compression_id == ZSTD:
        return (ErrorCode.unsupported_compression_type,
                f"Produce requests with version {version} cannot use ZStandard compression")
    return None


@api(0, 3, 9, tv2_max_version=12)
async def handle_produce(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    acks = request.acks
    now = broker.now_ms()
    responses = []
    failures: list[str] = []
    appended = False
    for topic in request.topic_data:
        partitions = []
        for part in topic.partition_data:
            error, message, result = ErrorCode.none, None, None
            log = broker.logs.get(topic.name, part.index)
            if acks not in (-1, 0, 1):
                error, message = ErrorCode.invalid_required_acks, None
            elif log is None:
                error = ErrorCode.unknown_topic_or_partition
                message = "This server does not host this topic-partition."
            elif topic.name in INTERNAL_TOPICS and ctx.client_id != ADMIN_CLIENT_ID:
                error = ErrorCode.invalid_topic_exception
                message = f"Cannot append to internal topic {topic.name}"
            else:
                refused = validate_records(ctx.api_version, part.records) \
                    or verify_transactional_produce(broker, request.transactional_id,
                                                    topic.name, part.index, log,
                                                    part.records, ctx.api_version)
                if refused is not None:
                    error, message = refused
                else:
                    try:
                        result = log.append_as_leader(bytes(part.records), now)
                        appended = appended or not result.duplicate
                    except AppendError as exc:
                        error, message = exc.error, exc.message
            if error != ErrorCode.none:
                failures.append(f"{topic.name}-{part.index}: {error.name}: {message}")
            partitions.append(_partition_response(ctx, part.index, error, message, result))
        responses.append(protocol.make(ctx.resp.TopicProduceResponse, name=topic.name,
                                       partition_responses=tuple(partitions)))
    if appended:
        broker.notify_append()
    for failure in failures:
        broker.warn(f"{ctx.peer} produce refused: {failure}")
    if acks == 0:
        if failures:
            raise protocol.CloseConnection("acks=0 produce request failed")
        return None
    return protocol.make(ctx.response_cls, responses=tuple(responses))


def _partition_response(ctx: RequestContext, index: int, error: ErrorCode, message: str | None,
                        result: AppendResult | None) -> Any:
    if result is None:
        return protocol.make(ctx.resp.PartitionProduceResponse, index=index, error_code=error,
                             base_offset=-1, log_append_time=None, log_start_offset=-1,
                             record_errors=(), error_message=message)
    return protocol.make(ctx.resp.PartitionProduceResponse, index=index, error_code=error,
                         base_offset=result.first_offset,
                         log_append_time=protocol.ms_to_datetime(result.log_append_time),
                         log_start_offset=result.log_start_offset, record_errors=(),
                         error_message=None)
