"""Metadata (key 3): this node, every topic with stable topic ids, auto-creation.

Mirrors ``KafkaApis#handleTopicMetadataRequest`` / ``MetadataCache``: v0 asks for all topics with
an empty list, v1+ with null; v4+ carries ``allow_auto_topic_creation`` (earlier versions always
allow it); an unknown topic is created when the broker and the request allow it
(``auto.create.topics.enable``, ``num.partitions``), else UNKNOWN_TOPIC_OR_PARTITION, and an
illegal name is INVALID_TOPIC_EXCEPTION. Unlike Kafka, which answers LEADER_NOT_AVAILABLE while
an auto-created topic is being set up, the topic is created before answering.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from kafkatx.broker import protocol
from kafkatx.broker.config import LEADER_EPOCH
from kafkatx.broker.handlers import api
from kafkatx.broker.log_manager import INTERNAL_TOPICS, Topic, TopicError, validate_topic_name

if TYPE_CHECKING:
    from kafkatx.broker.server import Broker, RequestContext

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


def broker_entries(broker: Broker, ctx: RequestContext) -> tuple[Any, ...]:
    return (protocol.make(ctx.resp.MetadataResponseBroker, node_id=broker.config.node_id,
                          host=broker.advertised_host, port=broker.port, rack=None),)


def topic_entry(broker: Broker, ctx: RequestContext, topic: Topic) -> Any:
    node = broker.config.node_id
    partitions = tuple(
        protocol.make(ctx.resp.MetadataResponsePartition, error_code=ErrorCode.none,
                      partition_index=p, leader_id=node, leader_epoch=LEADER_EPOCH,
                      replica_nodes=(node,), isr_nodes=(node,), offline_replicas=())
        for p in range(topic.num_partitions))
    return protocol.make(ctx.resp.MetadataResponseTopic, error_code=ErrorCode.none,
                         name=topic.name, topic_id=topic.topic_id,
                         is_internal=topic.is_internal, partitions=partitions,
                         topic_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)


def _error_topic(ctx: RequestContext, name: str | None, error: ErrorCode) -> Any:
    return protocol.make(ctx.resp.MetadataResponseTopic, error_code=error, name=name,
                         is_internal=False, partitions=(),
                         topic_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)


@api(3, 0, 11)
async def handle_metadata(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    logs = broker.logs
    requested = request.topics
    if requested is None or (ctx.api_version == 0 and not requested):
        entries = [topic_entry(broker, ctx, t) for t in logs.topics.values()]
    else:
        allow_create = getattr(request, "allow_auto_topic_creation", True)
        by_id = {t.topic_id: t for t in logs.topics.values()}
        entries = []
        for wanted in requested:
            name = wanted.name
            if name is None and getattr(wanted, "topic_id", None) is not None:
                topic = by_id.get(wanted.topic_id)
                entries.append(topic_entry(broker, ctx, topic) if topic else
                               _error_topic(ctx, None, ErrorCode.unknown_topic_id))
                continue
            topic = logs.topics.get(name)
            if topic is not None:
                entries.append(topic_entry(broker, ctx, topic))
            elif validate_topic_name(name) is not None:
                entries.append(_error_topic(ctx, name, ErrorCode.invalid_topic_exception))
            elif (allow_create and broker.config.auto_create_topics
                  and name not in INTERNAL_TOPICS):
                try:
                    topic = logs.create_topic(name, broker.config.num_partitions)
                except TopicError as exc:
                    broker.warn(f"auto-creating topic {name} failed: {exc.message}")
                    entries.append(_error_topic(ctx, name, ErrorCode.unknown_topic_or_partition))
                    continue
                broker.log(f"auto-created topic {name} with {len(topic.partitions)} partitions")
                entries.append(topic_entry(broker, ctx, topic))
            else:
                entries.append(_error_topic(ctx, name, ErrorCode.unknown_topic_or_partition))
    return protocol.make(
        ctx.response_cls, brokers=broker_entries(broker, ctx), cluster_id=logs.cluster_id,
        controller_id=broker.config.node_id, topics=tuple(entries),
        cluster_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED)
