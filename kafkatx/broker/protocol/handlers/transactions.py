"""InitProducerId (22), AddPartitionsToTxn (24), AddOffsetsToTxn (25), EndTxn (26),
WriteTxnMarkers (27), TxnOffsetCommit (28), DescribeProducers (61), DescribeTransactions (65),
ListTransactions (66).

Mirrors ``KafkaApis#handleInitProducerIdRequest`` (KIP-360's producer id and epoch must be
both set or both -1), ``handleAddPartitionsToTxnRequest`` for versions 0-3 (an unknown partition
fails the whole request: its error, OPERATION_NOT_ATTEMPTED for the others),
``handleAddOffsetsToTxnRequest``, ``handleEndTxnRequest``, ``handleWriteTxnMarkersRequest``,
``handleTxnOffsetCommitRequest``, ``handleDescribeProducersRequest``,
``handleDescribeTransactionsRequest`` and ``handleListTransactionsRequest``, including their
PRODUCER_FENCED -> INVALID_PRODUCER_EPOCH translation for clients older than KIP-588. The
advertised ranges are Kafka 3.0's, and Kafka 4.0's for the transaction APIs when the broker runs
at ``--transaction-version 2``: EndTxn v5 (transactions v2: the answer carries the bumped epoch),
TxnOffsetCommit v5 (adds the group's ``__consumer_offsets`` partition itself), AddPartitionsToTxn
v4-v5 (the broker-to-broker batch of KIP-890, with ``verify_only``), InitProducerId v5 and
AddOffsetsToTxn v4 (TRANSACTION_ABORTABLE).
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from kafkatx.broker.coordinators.groups import UNKNOWN_MEMBER_ID
from kafkatx.broker.coordinators.txn_verification import ask_coordinator
from kafkatx.broker.protocol.handlers.groups import requested_offsets
from kafkatx.broker.protocol.handlers.registry import api
from kafkatx.broker.wire import codec
from kafkatx.formats.transaction_log import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

if TYPE_CHECKING:
    from kafkatx.broker.context import BrokerContext, RequestContext

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


def fenced_error(error: ErrorCode, version: int, first_fenced_version: int) -> ErrorCode:
    """Versions before KIP-588 get INVALID_PRODUCER_EPOCH for PRODUCER_FENCED."""
    if version < first_fenced_version and error == ErrorCode.producer_fenced:
        return ErrorCode.invalid_producer_epoch
    return error


def client_transaction_version(broker: BrokerContext, version: int, first_tv2_version: int) -> int:
    """The transaction version a request runs under: 2 when the cluster finalized
    transactions v2 and the client sent a version that signals it (``KafkaApis``)."""
    return 2 if broker.config.transaction_version >= 2 and version >= first_tv2_version else 0


@api(22, 0, 4, tv2_max_version=5)
async def handle_init_producer_id(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    pid = getattr(request, "producer_id", NO_PRODUCER_ID)
    epoch = getattr(request, "producer_epoch", NO_PRODUCER_EPOCH)
    if (pid == NO_PRODUCER_ID) != (epoch == NO_PRODUCER_EPOCH):
        return codec.make(ctx.response_cls, error_code=ErrorCode.invalid_request,
                             producer_id=NO_PRODUCER_ID, producer_epoch=NO_PRODUCER_EPOCH)
    expected = None if pid == NO_PRODUCER_ID else (pid, epoch)
    result = broker.transactions.handle_init_producer_id(
        request.transactional_id, codec.ms(request.transaction_timeout), expected)
    if request.transactional_id is None:
        broker.log(f"{ctx.peer} idempotent producer: producer id {result.producer_id} epoch 0")
    return codec.make(ctx.response_cls,
                         error_code=fenced_error(result.error, ctx.api_version, 4),
                         producer_id=result.producer_id, producer_epoch=result.producer_epoch)


def _existing(broker: BrokerContext, partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int],
                                                                             ErrorCode]:
    """UNKNOWN_TOPIC_OR_PARTITION for partitions the metadata does not have, OPERATION_NOT_
    ATTEMPTED for the rest when any is unknown; empty when all exist."""
    unknown = {tp for tp in partitions if not broker.logs.contains(*tp)}
    if not unknown:
        return {}
    return {tp: (ErrorCode.unknown_topic_or_partition if tp in unknown
                 else ErrorCode.operation_not_attempted) for tp in partitions}


@api(24, 0, 3, tv2_max_version=5, cluster_max_version=4)
async def handle_add_partitions_to_txn(broker: BrokerContext, ctx: RequestContext,
                                       request: Any) -> Any:
    if ctx.api_version >= 4:
        return _add_partitions_batch(broker, ctx, request)
    wanted = [(t.name, p) for t in request.v3_and_below_topics for p in t.partitions]
    errors = _existing(broker, wanted)
    if not errors:
        error = broker.transactions.handle_add_partitions(
            request.v3_and_below_transactional_id, request.v3_and_below_producer_id,
            request.v3_and_below_producer_epoch, wanted)
        error = fenced_error(error, ctx.api_version, 2)
        errors = dict.fromkeys(wanted, error)
    return codec.make(ctx.response_cls,
                         results_by_topic_v3_and_below=_topic_results(ctx, errors))


def _topic_results(ctx: RequestContext, errors: dict[tuple[str, int], ErrorCode]
                   ) -> tuple[Any, ...]:
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), error in errors.items():
        by_topic.setdefault(topic, []).append(codec.make(
            ctx.resp.AddPartitionsToTxnPartitionResult, partition_index=partition,
            partition_error_code=error))
    return tuple(codec.make(ctx.resp.AddPartitionsToTxnTopicResult, name=topic,
                               results_by_partition=tuple(parts))
                 for topic, parts in by_topic.items())


def _add_partitions_batch(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    """v4+: one result per transaction; ``verify_only`` checks the partitions are in the
    transaction (``handleVerifyPartitionsInTransaction``), otherwise they are added, under
    transactions v2 from v5 on."""
    results = []
    for txn in request.transactions:
        wanted = [(t.name, p) for t in txn.topics for p in t.partitions]
        errors = _existing(broker, wanted)
        if errors:
            pass
        elif not broker.transactions.owns(txn.transactional_id):
            errors = dict.fromkeys(wanted, ErrorCode.not_coordinator)  # getTransactionState
        elif txn.verify_only:
            errors = broker.transactions.verify_partitions(
                txn.transactional_id, txn.producer_id, txn.producer_epoch, wanted)
        else:
            error = broker.transactions.handle_add_partitions(
                txn.transactional_id, txn.producer_id, txn.producer_epoch, wanted,
                client_transaction_version(broker, ctx.api_version, 5))
            errors = dict.fromkeys(wanted, error)
        results.append(codec.make(ctx.resp.AddPartitionsToTxnResult,
                                     transactional_id=txn.transactional_id,
                                     topic_results=_topic_results(ctx, errors)))
    return codec.make(ctx.response_cls, error_code=ErrorCode.none,
                         results_by_transaction=tuple(results))


@api(25, 0, 3, tv2_max_version=4)
async def handle_add_offsets_to_txn(broker: BrokerContext, ctx: RequestContext,
                                    request: Any) -> Any:
    error = broker.transactions.handle_add_offsets(
        request.transactional_id, request.producer_id, request.producer_epoch, request.group_id)
    return codec.make(ctx.response_cls, error_code=fenced_error(error, ctx.api_version, 2))


@api(26, 0, 3, tv2_max_version=5)
async def handle_end_txn(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    tv = client_transaction_version(broker, ctx.api_version, 5)
    error, pid, epoch = broker.transactions.handle_end_transaction(
        request.transactional_id, request.producer_id, request.producer_epoch,
        bool(request.committed), tv)
    if error == ErrorCode.none:
        broker.log(f"{ctx.peer} transactional id {request.transactional_id}: "
                   f"{'committed' if request.committed else 'aborted'}"
                   + (f" (transactions v2: producer id {pid} epoch {epoch} next)" if tv else ""))
    return codec.make(ctx.response_cls, error_code=fenced_error(error, ctx.api_version, 2),
                         producer_id=pid, producer_epoch=epoch)


@api(27, 1, 1)
async def handle_write_txn_markers(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    results = []
    for marker in request.markers:
        partitions = [(t.name, p) for t in marker.topics for p in t.partition_indexes]
        errors = broker.transactions.write_markers(
            marker.producer_id, marker.producer_epoch, marker.coordinator_epoch,
            bool(marker.transaction_result), partitions)
        by_topic: dict[str, list[Any]] = {}
        for (topic, partition), error in errors.items():
            by_topic.setdefault(topic, []).append(codec.make(
                ctx.resp.WritableTxnMarkerPartitionResult, partition_index=partition,
                error_code=error))
        results.append(codec.make(
            ctx.resp.WritableTxnMarkerResult, producer_id=marker.producer_id,
            topics=tuple(codec.make(ctx.resp.WritableTxnMarkerTopicResult, name=topic,
                                       partitions=tuple(parts))
                         for topic, parts in by_topic.items())))
    return codec.make(ctx.response_cls, markers=tuple(results))


@api(28, 0, 3, tv2_max_version=5)
async def handle_txn_offset_commit(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    offsets, errors = requested_offsets(broker, request.topics, broker.now_ms())
    if offsets:
        refused = await _add_or_verify_offsets_partition(broker, ctx, request)
        if refused != ErrorCode.none:
            errors.update(dict.fromkeys(offsets, refused))
        else:
            errors.update(broker.groups.handle_txn_commit_offsets(
                request.group_id, request.producer_id, request.producer_epoch,
                getattr(request, "member_id", UNKNOWN_MEMBER_ID),
                getattr(request, "group_instance_id", None),
                getattr(request, "generation_id", -1), offsets))
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), error in errors.items():
        by_topic.setdefault(topic, []).append(codec.make(
            ctx.resp.TxnOffsetCommitResponsePartition, partition_index=partition,
            error_code=fenced_error(error, ctx.api_version, 2)))
    return codec.make(ctx.response_cls, topics=tuple(
        codec.make(ctx.resp.TxnOffsetCommitResponseTopic, name=topic,
                      partitions=tuple(parts)) for topic, parts in by_topic.items()))


async def _add_or_verify_offsets_partition(broker: BrokerContext, ctx: RequestContext,
                                           request: Any) -> ErrorCode:
    """KIP-890 for offset commits (``CoordinatorPartitionWriter#maybeStartTransaction
    Verification``): v5 under transactions v2 adds the group's ``__consumer_offsets``
    partition to the transaction (what AddOffsetsToTxn did); from transaction.version 1 on,
    older versions must find it already added (KAFKA-15449). The transaction coordinator may
    be on another broker (``AddPartitionsToTxnManager``); v4+ knows TRANSACTION_ABORTABLE
    (``txnOffsetCommitRequestVersionToTransactionSupportedOperation``)."""
    if broker.config.transaction_version < 1 or not request.transactional_id:
        return ErrorCode.none
    tp = broker.transactions.offsets_partition(request.group_id)
    errors = await ask_coordinator(
        broker, request.transactional_id, request.producer_id, request.producer_epoch, [tp],
        add=client_transaction_version(broker, ctx.api_version, 5) >= 2,
        knows_abortable=ctx.api_version >= 4)
    return errors.get(tp, ErrorCode.none)


@api(61, 0, 0)
async def handle_describe_producers(broker: BrokerContext, ctx: RequestContext,
                                    request: Any) -> Any:
    topics = []
    for topic in request.topics:
        partitions = []
        for index in topic.partition_indexes:
            log = broker.logs.get(topic.name, index)
            if log is None:
                partitions.append(codec.make(
                    ctx.resp.PartitionResponse, partition_index=index,
                    error_code=ErrorCode.unknown_topic_or_partition,
                    error_message="This server does not host this topic-partition.",
                    active_producers=()))
                continue
            producers = tuple(
                codec.make(ctx.resp.ProducerState, producer_id=e.producer_id,
                              producer_epoch=e.producer_epoch, last_sequence=e.last_seq,
                              last_timestamp=e.last_timestamp,
                              coordinator_epoch=e.coordinator_epoch,
                              current_txn_start_offset=(-1 if e.current_txn_first_offset is None
                                                        else e.current_txn_first_offset))
                for _, e in sorted(log.producer_state.producers.items()))
            partitions.append(codec.make(ctx.resp.PartitionResponse, partition_index=index,
                                            error_code=ErrorCode.none, error_message=None,
                                            active_producers=producers))
        topics.append(codec.make(ctx.resp.TopicResponse, name=topic.name,
                                    partitions=tuple(partitions)))
    return codec.make(ctx.response_cls, topics=tuple(topics))


@api(65, 0, 0)
async def handle_describe_transactions(broker: BrokerContext, ctx: RequestContext,
                                       request: Any) -> Any:
    states = []
    for txn_id in request.transactional_ids:
        error, md = broker.transactions.describe(txn_id)
        if md is None:
            states.append(codec.make(
                ctx.resp.TransactionState, error_code=error, transactional_id=txn_id,
                transaction_state="", transaction_timeout=datetime.timedelta(0),
                transaction_start_time=_EPOCH - datetime.timedelta(milliseconds=1),
                producer_id=NO_PRODUCER_ID, producer_epoch=NO_PRODUCER_EPOCH, topics=()))
            continue
        by_topic: dict[str, list[int]] = {}
        for topic, partition in sorted(md.topic_partitions):
            by_topic.setdefault(topic, []).append(partition)
        states.append(codec.make(
            ctx.resp.TransactionState, error_code=ErrorCode.none, transactional_id=txn_id,
            transaction_state=md.state.kafka_name,
            transaction_timeout=datetime.timedelta(milliseconds=md.txn_timeout_ms),
            transaction_start_time=_EPOCH + datetime.timedelta(
                milliseconds=md.txn_start_timestamp),
            producer_id=md.producer_id, producer_epoch=md.producer_epoch,
            topics=tuple(codec.make(ctx.resp.TopicData, topic=t, partitions=tuple(ps))
                         for t, ps in by_topic.items())))
    return codec.make(ctx.response_cls, transaction_states=tuple(states))


@api(66, 0, 0)
async def handle_list_transactions(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    found, unknown = broker.transactions.list_transactions(
        set(request.producer_id_filters), set(request.state_filters),
        getattr(request, "duration_filter", -1))
    return codec.make(
        ctx.response_cls, error_code=ErrorCode.none, unknown_state_filters=tuple(unknown),
        transaction_states=tuple(
            codec.make(ctx.resp.TransactionState, transactional_id=md.transactional_id,
                          producer_id=md.producer_id, transaction_state=md.state.kafka_name)
            for md in found))
