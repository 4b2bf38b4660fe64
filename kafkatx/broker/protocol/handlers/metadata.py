"""Metadata (key 3) and DescribeCluster (key 60): this node, every topic with stable topic ids,
auto-creation, authorized operations.

Mirrors ``KafkaApis#handleTopicMetadataRequest`` / ``MetadataCache``: v0 asks for all topics with
an empty list, v1+ with null; v4+ carries ``allow_auto_topic_creation`` (earlier versions always
allow it); an unknown topic is created when the broker and the request allow it
(``auto.create.topics.enable``, ``num.partitions``), else UNKNOWN_TOPIC_OR_PARTITION, and an
illegal name is INVALID_TOPIC_EXCEPTION. Unlike Kafka, which answers LEADER_NOT_AVAILABLE while
an auto-created topic is being set up, the topic is created before answering. Authorized
operations (``AuthHelper#authorizedOperations`` without an authorizer: every supported operation)
are filled in when asked: a topic's from v8 (``include_topic_authorized_operations``, every topic
looked up by name), the cluster's only in v8-v10 (``include_cluster_authorized_operations``;
v11 dropped the field, clients ask DescribeCluster instead); otherwise the schema default
``Integer.MIN_VALUE``. With ``--brokers N`` every running broker is listed, each partition with
its real leader, leader epoch, replicas and ISR (offline replicas: the stopped ones; a partition
without a leader is LEADER_NOT_AVAILABLE with leader -1, as ``MetadataCache`` answers), the
controller is the lowest running node id, and auto-created topics get
``--default-replication-factor`` replicas. DescribeCluster follows
``AuthHelper#computeDescribeClusterResponse``: this node (every running broker) as the
broker and the controller, the endpoint type checked (v1, KIP-919).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from kafkatx.broker.config.broker_config import LEADER_EPOCH
from kafkatx.broker.context import ClusterError
from kafkatx.broker.logdir.log_manager import Topic, TopicError
from kafkatx.broker.logdir.topic_names import validate_topic_name
from kafkatx.broker.protocol.acl_operations import (
    AUTHORIZED_OPERATIONS_OMITTED,
    CLUSTER_AUTHORIZED_OPERATIONS,
    TOPIC_AUTHORIZED_OPERATIONS,
)
from kafkatx.broker.protocol.handlers.registry import api
from kafkatx.broker.wire import codec
from kafkatx.formats.internal_topics import INTERNAL_TOPICS

if TYPE_CHECKING:
    from kafkatx.broker.context import BrokerContext, RequestContext

BROKER_ENDPOINT, CONTROLLER_ENDPOINT = 1, 2  # EndpointType ids


def live_brokers(broker: BrokerContext) -> list[tuple[int, str, int]]:
    """(node id, host, port) of every running broker: this one alone outside a cluster."""
    if broker.cluster is None:
        return [(broker.config.node_id, broker.advertised_host, broker.port)]
    return [(b.config.node_id, b.advertised_host, b.port)
            for _, b in sorted(broker.cluster.brokers.items())]


def controller_id(broker: BrokerContext) -> int:
    if broker.cluster is None or not broker.cluster.brokers:
        return broker.config.node_id
    return min(broker.cluster.brokers)


def broker_entries(broker: BrokerContext, ctx: RequestContext) -> tuple[Any, ...]:
    return tuple(codec.make(ctx.resp.MetadataResponseBroker, node_id=node, host=host,
                               port=port, rack=None) for node, host, port in live_brokers(broker))


def _partition_entry(broker: BrokerContext, ctx: RequestContext, topic: Topic, p: int) -> Any:
    node = broker.config.node_id
    state = broker.cluster.state(topic.name, p) if broker.cluster is not None else None
    if broker.cluster is None or state is None:
        return codec.make(ctx.resp.MetadataResponsePartition, error_code=ErrorCode.none,
                             partition_index=p, leader_id=node, leader_epoch=LEADER_EPOCH,
                             replica_nodes=(node,), isr_nodes=(node,), offline_replicas=())
    alive = broker.cluster.brokers
    return codec.make(
        ctx.resp.MetadataResponsePartition,
        error_code=ErrorCode.none if state.leader >= 0 else ErrorCode.leader_not_available,
        partition_index=p, leader_id=state.leader, leader_epoch=state.leader_epoch,
        replica_nodes=tuple(state.replicas), isr_nodes=tuple(state.isr),
        offline_replicas=tuple(r for r in state.replicas if r not in alive))


def topic_entry(broker: BrokerContext, ctx: RequestContext, topic: Topic,
                authorized_operations: int = AUTHORIZED_OPERATIONS_OMITTED) -> Any:
    partitions = tuple(_partition_entry(broker, ctx, topic, p)
                       for p in range(topic.num_partitions))
    return codec.make(ctx.resp.MetadataResponseTopic, error_code=ErrorCode.none,
                         name=topic.name, topic_id=topic.topic_id,
                         is_internal=topic.is_internal, partitions=partitions,
                         topic_authorized_operations=authorized_operations)


def _error_topic(ctx: RequestContext, name: str | None, error: ErrorCode,
                 authorized_operations: int = AUTHORIZED_OPERATIONS_OMITTED) -> Any:
    return codec.make(ctx.resp.MetadataResponseTopic, error_code=error, name=name,
                         is_internal=False, partitions=(),
                         topic_authorized_operations=authorized_operations)


@api(3, 0, 11)
async def handle_metadata(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    logs = broker.logs
    requested = request.topics
    topic_ops = (TOPIC_AUTHORIZED_OPERATIONS
                 if getattr(request, "include_topic_authorized_operations", False)
                 else AUTHORIZED_OPERATIONS_OMITTED)
    cluster_ops = (CLUSTER_AUTHORIZED_OPERATIONS
                   if getattr(request, "include_cluster_authorized_operations", False)
                   else AUTHORIZED_OPERATIONS_OMITTED)
    if requested is None or (ctx.api_version == 0 and not requested):
        entries = [topic_entry(broker, ctx, t, topic_ops) for t in logs.topics.values()]
    else:
        allow_create = getattr(request, "allow_auto_topic_creation", True)
        by_id = {t.topic_id: t for t in logs.topics.values()}
        entries = []
        for wanted in requested:
            name = wanted.name
            if name is None and getattr(wanted, "topic_id", None) is not None:
                topic = by_id.get(wanted.topic_id)
                entries.append(topic_entry(broker, ctx, topic, topic_ops) if topic else
                               _error_topic(ctx, None, ErrorCode.unknown_topic_id))
                continue
            topic = logs.topics.get(name)
            if topic is not None:
                entries.append(topic_entry(broker, ctx, topic, topic_ops))
            elif validate_topic_name(name) is not None:
                entries.append(_error_topic(ctx, name, ErrorCode.invalid_topic_exception,
                                            topic_ops))
            elif (allow_create and broker.config.auto_create_topics
                  and name not in INTERNAL_TOPICS):
                try:
                    topic = (logs.create_topic(name, broker.config.num_partitions)
                             if broker.cluster is None else
                             broker.cluster.create_topic(name, broker.config.num_partitions,
                                                         None))
                except (TopicError, ClusterError) as exc:
                    broker.warn(f"auto-creating topic {name} failed: {exc.message}")
                    entries.append(_error_topic(ctx, name, ErrorCode.unknown_topic_or_partition,
                                                topic_ops))
                    continue
                broker.log(f"auto-created topic {name} with {len(topic.partitions)} partitions")
                entries.append(topic_entry(broker, ctx, topic, topic_ops))
            else:
                entries.append(_error_topic(ctx, name, ErrorCode.unknown_topic_or_partition,
                                            topic_ops))
    return codec.make(
        ctx.response_cls, brokers=broker_entries(broker, ctx), cluster_id=logs.cluster_id,
        controller_id=controller_id(broker), topics=tuple(entries),
        cluster_authorized_operations=cluster_ops)


@api(60, 0, 1)
async def handle_describe_cluster(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    endpoint = getattr(request, "endpoint_type", BROKER_ENDPOINT)
    if endpoint not in (BROKER_ENDPOINT, CONTROLLER_ENDPOINT):
        return codec.make(
            ctx.response_cls, error_code=ErrorCode.invalid_request if ctx.api_version == 0
            else ErrorCode.unsupported_endpoint_type,
            error_message=f"Unsupported endpoint type {endpoint}", cluster_id="", brokers=())
    if endpoint != BROKER_ENDPOINT:
        return codec.make(
            ctx.response_cls, error_code=ErrorCode.invalid_request if ctx.api_version == 0
            else ErrorCode.mismatched_endpoint_type,
            error_message="The request was sent to an endpoint of type BROKER, but we wanted an "
                          "endpoint of type CONTROLLER", cluster_id="", brokers=())
    brokers = tuple(codec.make(ctx.resp.DescribeClusterBroker, broker_id=node, host=host,
                                  port=port, rack=None)
                    for node, host, port in live_brokers(broker))
    return codec.make(
        ctx.response_cls, error_code=ErrorCode.none, error_message=None,
        endpoint_type=BROKER_ENDPOINT, cluster_id=broker.logs.cluster_id,
        controller_id=controller_id(broker), brokers=brokers,
        cluster_authorized_operations=CLUSTER_AUTHORIZED_OPERATIONS
        if request.include_cluster_authorized_operations else AUTHORIZED_OPERATIONS_OMITTED)
