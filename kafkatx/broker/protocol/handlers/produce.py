"""Produce (key 0): validate, append as leader, answer per partition; nothing for acks=0.

Mirrors ``KafkaApis#handleProduceRequest`` (``ProduceRequest#validateRecords``: v3+ needs exactly
one magic-v2 batch per partition, ZStandard needs v7+; v0-v2, which Kafka 3.x still serves, may
carry magic 0/1 message sets, converted to the v2 batch Kafka writes; an acks=0 request that
failed closes the connection instead of answering) and ``ReplicaManager#appendRecords``
(INVALID_REQUIRED_ACKS, UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION for a client append
to an internal topic, the error each append exception maps to, a duplicate answered with the
original batch's offsets and no error, the transaction verification of KIP-890 in
``txn_verification``). A single
replica is always the whole ISR, so acks=1 and acks=-1 are answered as soon as the batch is in
the log. With ``--brokers N`` only a partition's leader appends (NOT_LEADER_OR_FOLLOWER
elsewhere), acks=-1 is refused with NOT_ENOUGH_REPLICAS while the ISR is smaller than
``min.insync.replicas`` (``Partition#appendRecordsToLeader``) and answered once the high
watermark has passed the batch (``DelayedProduce``, bounded by the request's timeout). The
batches split while validating are handed to the append, and the response body is
written by :mod:`kafkatx.broker.protocol.produce_response` (the hot path: one request per batch).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from kafkatx.broker.coordinators import txn_verification
from kafkatx.broker.logs.batch_header import BatchFrameError, BatchHeader, split_batches
from kafkatx.broker.logs.legacy_records import first_magic, up_convert
from kafkatx.broker.logs.log_values import AppendError, AppendResult
from kafkatx.broker.logs.partition_log import PartitionLog
from kafkatx.broker.protocol.handlers.registry import api
from kafkatx.broker.protocol.produce_response import PartitionResult, encode_produce_response
from kafkatx.broker.replication.replica_manager import leader_log
from kafkatx.broker.wire import codec
from kafkatx.formats.internal_topics import INTERNAL_TOPICS
from kafkatx.lazy_dataclass import dataclass

if TYPE_CHECKING:
    from kafkatx.broker.context import BrokerContext, RequestContext

ZSTD = 4
ADMIN_CLIENT_ID = "__admin_client"  # AdminUtils.ADMIN_CLIENT_ID: may append to internal topics


class RecordsRefused(Exception):
    """Records a produce request of this version may not carry, with the error to answer."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def validate_records(version: int, records: bytes | None) -> tuple[list[BatchHeader], int]:
    """``ProduceRequest#validateRecords`` (v3+: exactly one magic-v2 batch, ZStandard from v7)
    with the batches (``split_batches``) of ``records``, or ``RecordsRefused``. Kafka answers
    these refusals without a message; the message is for the broker's log."""
    if records is None:
        raise RecordsRefused(ErrorCode.invalid_record,
                             "Produce request partition has null records")
    try:
        headers, valid = split_batches(records)
    except BatchFrameError as exc:
        if exc.kind == "magic":
            raise RecordsRefused(ErrorCode.invalid_record,
                                 f"Produce requests with version {version} are only allowed to "
                                 "contain record batches with magic version 2") from None
        raise RecordsRefused(ErrorCode.corrupt_message, str(exc)) from None
    if not headers:
        raise RecordsRefused(ErrorCode.invalid_record,
                             f"Produce requests with version {version} must have at least one "
                             "record batch per partition")
    if version < 7 and headers[0].compression_id == ZSTD:
        raise RecordsRefused(ErrorCode.unsupported_compression_type,
                             f"Produce requests with version {version} are not allowed to use "
                             "ZStandard compression")
    if len(headers) > 1:
        raise RecordsRefused(ErrorCode.invalid_record,
                             f"Produce requests with version {version} are only allowed to "
                             "contain exactly one record batch per partition")
    return headers, valid


def old_version_records(records: bytes | None, log: PartitionLog
                        ) -> tuple[bytes, tuple[list[BatchHeader], int] | None]:
    """Produce v0-v2, which Kafka does not hold to v3's rules (``validateRecords`` checks
    nothing before v3): a magic 0/1 message set becomes the v2 batch Kafka writes
    (:func:`kafkatx.broker.logs.legacy_records.up_convert`); magic-2 batches go to the append as
    they are, which takes exactly one."""
    if records is None:
        raise RecordsRefused(ErrorCode.invalid_record,
                             "Produce request partition has null records")
    if first_magic(records) in (0, 1):
        records = up_convert(records, log.name, log.config.max_message_bytes)
    try:
        return records, split_batches(records)
    except BatchFrameError as exc:
        raise AppendError(ErrorCode.corrupt_message, str(exc)) from None


@dataclass(slots=True)
class _Slot:
    """One partition of the request on its way: validated, maybe verified, then appended."""

    topic: int  # index into the response's topics
    index: int
    name: str
    log: PartitionLog | None = None
    replica: Any = None
    records: bytes = b""
    batches: tuple[list[BatchHeader], int] | None = None
    error: ErrorCode = ErrorCode.none
    message: str | None = None
    result: AppendResult | None = None
    record_errors: tuple[tuple[int, str | None], ...] = ()
    log_start: int = -1


@api(0, 0, 9, tv2_max_version=12)
async def handle_produce(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    acks = request.acks
    names = [topic.name for topic in request.topic_data]
    slots = [_check(broker, ctx, acks, t, topic.name, part)
             for t, topic in enumerate(request.topic_data) for part in topic.partition_data]
    pending = {(s.name, s.index): txn_verification.start(s.log, s.batches[0][0])
               for s in slots if s.error == ErrorCode.none and s.log is not None
               and s.batches is not None and s.batches[0]
               and txn_verification.needs_verification(broker, s.log, s.batches[0][0])}
    refused = await txn_verification.verify(
        broker, getattr(request, "transactional_id", None), pending, ctx.api_version)
    now = broker.now_ms()
    appended = False
    failures: list[str] = []
    waits: list[tuple[int, int, int]] = []  # (topic index, partition index, required offset)
    positions: dict[int, int] = {}
    for s in slots:
        position = positions[s.topic] = positions.get(s.topic, -1) + 1
        if (s.name, s.index) in refused:
            s.error, s.message = refused[(s.name, s.index)]
        if s.error == ErrorCode.none and s.log is not None and s.batches is not None:
            try:
                s.result = s.log.append_as_leader(s.records, now, batches=s.batches)
                appended = appended or not s.result.duplicate
                if s.replica is not None:
                    broker.replicas.after_leader_append(s.replica)
                    if acks == -1:
                        waits.append((s.topic, position, s.result.last_offset + 1))
            except AppendError as exc:
                s.error, s.message = exc.error, exc.message
                s.record_errors, s.log_start = exc.record_errors, exc.log_start_offset
        if s.error != ErrorCode.none:
            failures.append(f"{s.name}-{s.index}: {s.error.name}: {s.message}")
    responses: list[tuple[str, list[PartitionResult]]] = [(name, []) for name in names]
    for s in slots:
        responses[s.topic][1].append(_partition_result(s.index, s.error, s.message, s.result,
                                                       s.record_errors, s.log_start))
    if appended:
        broker.notify_append()
    if waits:
        await _wait_for_replication(broker, request, responses, waits, failures)
    for failure in failures:
        broker.warn(f"{ctx.peer} produce refused: {failure}")
    if acks == 0:
        if failures:
            raise codec.CloseConnection("acks=0 produce request failed")
        return None
    return codec.EncodedResponse(ctx.response_cls,
                                    encode_produce_response(ctx.api_version, responses))


def _check(broker: BrokerContext, ctx: RequestContext, acks: int, topic_index: int,
           topic: str, part: Any) -> _Slot:
    """Everything ``appendRecords`` checks before the append, in its order."""
    slot = _Slot(topic_index, part.index, topic)
    log, missing = leader_log(broker, topic, part.index)
    replica = (broker.replicas.leader_partition(topic, part.index)
               if broker.cluster is not None else None)
    if acks not in (-1, 0, 1):
        slot.error = ErrorCode.invalid_required_acks
    elif log is None:
        slot.error = missing
        slot.message = ("This server does not host this topic-partition."
                        if missing == ErrorCode.unknown_topic_or_partition else
                        f"This server is not the leader for partition {topic}-{part.index}")
    elif (replica is not None and acks == -1
          and broker.replicas.min_insync_error(replica) is not None):
        slot.error = ErrorCode.not_enough_replicas
        slot.message = (f"The size of the current ISR {replica.isr} is insufficient to "
                        f"satisfy the min.isr requirement of "
                        f"{broker.replicas.min_insync_replicas(replica)} for partition "
                        f"{topic}-{part.index}")
    elif topic in INTERNAL_TOPICS and ctx.client_id != ADMIN_CLIENT_ID:
        slot.error = ErrorCode.invalid_topic_exception
        slot.message = f"Cannot append to internal topic {topic}"
    else:
        slot.log, slot.replica = log, replica
        try:
            if ctx.api_version >= 3:
                records = part.records
                slot.batches = validate_records(ctx.api_version, records)
            else:
                records, slot.batches = old_version_records(part.records, log)
            slot.records = bytes(records)
        except (RecordsRefused, AppendError) as exc:
            slot.error, slot.message = exc.error, exc.message
            if isinstance(exc, AppendError):
                slot.record_errors, slot.log_start = exc.record_errors, exc.log_start_offset
    return slot


async def _wait_for_replication(broker: BrokerContext, request: Any,
                                responses: list[tuple[str, list[PartitionResult]]],
                                waits: list[tuple[int, int, int]], failures: list[str]) -> None:
    """``DelayedProduce``: each acks=-1 partition's answer waits until its high watermark
    passes the batch; an error there replaces the partition's result (the offsets stay, as
    in Kafka's response)."""
    timeout_s = max(codec.ms(request.timeout), 0) / 1000
    for t, p, required in waits:
        name, results = responses[t]
        result = results[p]
        part = broker.replicas.leader_partition(name, result.index)
        if part is None:
            error = ErrorCode.not_leader_or_follower
        else:
            error = await broker.replicas.wait_for_replication(part, required, timeout_s)
        if error != ErrorCode.none:
            failures.append(f"{name}-{result.index}: {error.name}")
            results[p] = dataclasses.replace(result, error_code=error.value)


def _partition_result(index: int, error: ErrorCode, message: str | None,
                      result: AppendResult | None,
                      record_errors: tuple[tuple[int, str | None], ...] = (),
                      log_start_offset: int = -1) -> PartitionResult:
    if result is None:
        return PartitionResult(index, error.value, -1, -1, log_start_offset, message,
                               record_errors)
    return PartitionResult(index, error.value, result.first_offset,
                           max(result.log_append_time, -1),  # kio writes -1 for any negative
                           result.log_start_offset, None)
