"""CreateTopics (19), DeleteTopics (20), DescribeConfigs (32), CreatePartitions (37).

Mirrors the single-node outcome of ``ControllerApis#createTopics`` /
``ReplicationControlManager#createTopic`` (name, partition count, replication factor, manual
assignment and config validation, TOPIC_ALREADY_EXISTS, collisions between '.' and '_'),
``ReplicationControlManager#deleteTopic``, ``ConfigHelper#describeConfigs`` (value, source,
synonyms, type, documentation per version; topic values resolved through the dynamic broker
configs by :mod:`kafkatx.broker.config.dynamic`, the cluster-default broker resource listing only
its dynamic configs) and ``ControllerApis#createPartitions`` /
``ReplicationControlManager#createPartitions`` (duplicates, no decrease, manual assignments).
Unlike Kafka, the internal topics cannot grow: the coordinators hash ids onto 50 partitions.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from dataclasses import field
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from kafkatx.broker.config.broker_config import (
    BOOLEAN,
    INT,
    LONG,
    STRING,
    TOPIC_CONFIG_BY_NAME,
    TOPIC_CONFIGS,
)
from kafkatx.broker.config.dynamic import (
    DEFAULT_CONFIG,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    STATIC_BROKER_CONFIG,
    Synonym,
    topic_config_synonyms,
    topic_defaults,
)
from kafkatx.broker.config.validation import (
    BROKER_LOG_CONFIGS,
    ConfigError,
    broker_config_type,
    canonical_topic_value,
    validate_topic_configs,
)
from kafkatx.broker.logdir.log_manager import CREATE_SLICE, Topic, TopicError
from kafkatx.broker.logdir.topic_names import collision_problem, validate_topic_name
from kafkatx.broker.protocol.handlers.registry import api
from kafkatx.broker.wire import codec
from kafkatx.formats.internal_topics import INTERNAL_TOPICS
from kafkatx.lazy_dataclass import dataclass

if TYPE_CHECKING:
    from kafkatx.broker.context import BrokerContext, RequestContext

# ConfigResource.Type ids
TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4
BROKER_LOGGER_RESOURCE = 8


#: ``QuorumController.MAX_RECORDS_PER_USER_OP``: partitions one CreateTopics (or
#: CreatePartitions) request may add, checked before anything is created.
MAX_PARTITIONS_PER_REQUEST = 10_000


def _too_many_partitions(broker: BrokerContext, request: Any) -> bool:
    """``ReplicationControlManager#validateTotalNumberOfPartitions`` of a CreateTopics."""
    total = 0
    for topic in request.topics:
        if topic.assignments:
            total += len(topic.assignments)
        elif topic.num_partitions == -1:
            total += broker.config.num_partitions
        elif topic.num_partitions > 0:
            total += topic.num_partitions
        if total > MAX_PARTITIONS_PER_REQUEST:
            return True
    return False


class _Refused(Exception):
    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


def _check_create(broker: BrokerContext, topic: Any) -> tuple[int, dict[str, str]]:
    name = topic.name
    problem = validate_topic_name(name)
    if problem is not None:
        raise _Refused(ErrorCode.invalid_topic_exception, problem)
    if name in INTERNAL_TOPICS:
        raise _Refused(ErrorCode.invalid_request,
                       f"Creation of internal topic {name} is prohibited.")
    if name in broker.logs.topics or name in broker.logs.creating:
        raise _Refused(ErrorCode.topic_already_exists, f"Topic '{name}' already exists.")
    problem = collision_problem(name, [*broker.logs.topics, *broker.logs.creating])
    if problem is not None:
        raise _Refused(ErrorCode.invalid_topic_exception, problem)
    assignments = tuple(topic.assignments or ())
    num_partitions, rf = topic.num_partitions, topic.replication_factor
    if assignments:
        if num_partitions != -1 or rf != -1:
            raise _Refused(ErrorCode.invalid_request,
                           "Both numPartitions or replicationFactor and replicasAssignments "
                           "were set. Both cannot be used at the same time.")
        for a in assignments:
            if broker.cluster is not None:
                problem = manual_assignment_problem(broker, a.broker_ids, None)
                if problem is not None:
                    raise _Refused(ErrorCode.invalid_replica_assignment, problem)
            elif tuple(a.broker_ids) != (broker.config.node_id,):
                raise _Refused(ErrorCode.invalid_replica_assignment,
                               f"The manual partition assignment includes a broker other than "
                               f"{broker.config.node_id}: {list(a.broker_ids)}")
        indexes = sorted(a.partition_index for a in assignments)
        if indexes != list(range(len(indexes))):
            raise _Refused(ErrorCode.invalid_replica_assignment,
                           "Partitions in the manual assignment must be 0..n-1.")
        num_partitions = len(assignments)
    else:
        if num_partitions == -1:
            num_partitions = broker.config.num_partitions
        if num_partitions <= 0:
            raise _Refused(ErrorCode.invalid_partitions,
                           "Number of partitions was set to an invalid non-positive value.")
        if rf == 0 or rf < -1:
            raise _Refused(ErrorCode.invalid_replication_factor,
                           "Replication factor must be larger than 0, or -1 to use the default "
                           "value.")
        brokers = len(broker.cluster.node_ids) if broker.cluster is not None else 1
        if rf > brokers:
            raise _Refused(ErrorCode.invalid_replication_factor,
                           f"Unable to replicate the partition {rf} time(s): The target "
                           f"replication factor of {rf} cannot be reached because only "
                           f"{brokers} broker(s) are registered.")
    # ReplicationControlManager#createTopic: the configs go through the same validation as an
    # IncrementalAlterConfigs SET on the new topic (the last of a name repeated wins).
    configs: dict[str, str | None] = {c.name: c.value for c in topic.configs or ()}
    try:
        validate_topic_configs(configs, topic_defaults(broker.logs.dynamic_configs,
                                                       broker.config))
    except ConfigError as exc:
        raise _Refused(ErrorCode.invalid_config, exc.message) from None
    return num_partitions, {k: v for k, v in configs.items() if v is not None}


def _replication(broker: BrokerContext, topic: Any, num_partitions: int) -> list[list[int]]:
    """The replicas of each partition: the manual assignment, else the controller's."""
    assignments = tuple(topic.assignments or ())
    if assignments:
        by_index = {a.partition_index: list(a.broker_ids) for a in assignments}
        return [by_index[p] for p in range(num_partitions)]
    if broker.cluster is None:
        return [[broker.config.node_id]] * num_partitions
    rf = topic.replication_factor if topic.replication_factor > 0 \
        else broker.cluster.default_replication_factor
    return broker.cluster.assignment(num_partitions, rf)


# Creations going on past their answer, by (log manager, topic name).
_CREATIONS: dict[tuple[int, str], asyncio.Future[Topic]] = {}


async def _create_within(broker: BrokerContext, name: str, num_partitions: int,
                         configs: dict[str, str]) -> Topic:
    """The topic recorded, then its logs created in slices off the event loop (other
    connections are served meanwhile): as Kafka answers CreateTopics once the controller
    committed the records (its brokers create the logs after), a topic of more than
    ``CREATE_SLICE`` partitions is answered at once and known to Metadata once its last log
    exists; a smaller one is answered when it is complete."""
    topic = broker.logs.begin_create(name, num_partitions, configs)
    task = asyncio.ensure_future(broker.logs.create_logs_in_slices(topic))
    key = (id(broker.logs), name)
    _CREATIONS[key] = task
    task.add_done_callback(lambda _: _CREATIONS.pop(key, None))
    if num_partitions <= CREATE_SLICE:
        await task
    return topic


@api(19, 2, 7)
async def handle_create_topics(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    names = [t.name for t in request.topics]
    results = []
    if _too_many_partitions(broker, request):
        # A PolicyViolationException for the whole request: every topic gets it.
        return codec.make(ctx.response_cls, topics=tuple(
            codec.make(ctx.resp.CreatableTopicResult, name=t.name,
                       error_code=ErrorCode.policy_violation,
                       error_message="Excessively large number of partitions per request.",
                       num_partitions=-1, replication_factor=-1) for t in request.topics))
    for topic in request.topics:
        extra: dict[str, Any] = {}
        try:
            if names.count(topic.name) > 1:
                raise _Refused(ErrorCode.invalid_request,
                               "Duplicate topic name in the request.")
            num_partitions, configs = _check_create(broker, topic)
            replication = _replication(broker, topic, num_partitions)
            if request.validate_only:
                topic_id = None
            elif broker.cluster is None:
                created = await _create_within(broker, topic.name, num_partitions, configs)
                topic_id = created.topic_id
                broker.log(f"created topic {topic.name} with {num_partitions} partitions")
            else:
                created = broker.cluster.create_topic(topic.name, num_partitions, None, configs,
                                                      assignment=replication)
                topic_id = created.topic_id
                broker.log(f"created topic {topic.name} with {num_partitions} partitions, "
                           f"replication factor {len(replication[0])}")
            extra = dict(topic_id=topic_id, num_partitions=num_partitions,
                         replication_factor=len(replication[0]))
            if hasattr(ctx.resp, "CreatableTopicConfigs"):  # v5+
                extra["configs"] = tuple(
                    codec.make(ctx.resp.CreatableTopicConfigs, name=e.name, value=e.value,
                                  read_only=False, config_source=e.source, is_sensitive=False)
                    for e in _topic_config_values(broker, configs))
            error, message = ErrorCode.none, None
        except (_Refused, TopicError) as exc:
            error = exc.error if isinstance(exc, _Refused) else ErrorCode.invalid_topic_exception
            message = exc.message
        results.append(codec.make(ctx.resp.CreatableTopicResult, name=topic.name,
                                     error_code=error, error_message=message,
                                     num_partitions=extra.get("num_partitions", -1),
                                     replication_factor=extra.get("replication_factor", -1),
                                     **{k: v for k, v in extra.items()
                                        if k not in ("num_partitions", "replication_factor")}))
    return codec.make(ctx.response_cls, topics=tuple(results))


async def _creations_done(broker: BrokerContext) -> None:
    """Kafka's controller finds a topic from the moment CreateTopics answered (its records are
    committed; the brokers' logs follow): a DeleteTopics arriving while serve still creates a
    big topic's logs waits for them, then deletes the topic, rather than not knowing it."""
    mine = [task for (logs, _), task in _CREATIONS.items() if logs == id(broker.logs)]
    for task in mine:
        with contextlib.suppress(Exception):
            await asyncio.shield(task)


@api(20, 1, 6)
async def handle_delete_topics(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    if hasattr(request, "topics"):
        wanted = [(t.name, t.topic_id) for t in request.topics]
    else:
        wanted = [(name, None) for name in request.topic_names]
    await _creations_done(broker)
    by_id = {t.topic_id: t for t in broker.logs.topics.values()}
    results = []
    for name, topic_id in wanted:
        error, message = ErrorCode.none, None
        topic: Topic | None
        if name is None and topic_id is not None and topic_id.int != 0:
            topic = by_id.get(topic_id)
            if topic is None:
                error, message = ErrorCode.unknown_topic_id, "This server does not host this "\
                                                            "topic ID."
        else:
            topic = broker.logs.topics.get(name or "")
            if topic is None:
                error = ErrorCode.unknown_topic_or_partition
                message = "This server does not host this topic-partition."
        if topic is not None:
            if broker.cluster is None:
                broker.logs.delete_topic(topic.name)
            else:
                broker.cluster.delete_topic(topic.name)
            broker.log(f"deleted topic {topic.name}")
            name, topic_id = topic.name, topic.topic_id
        results.append(codec.make(ctx.resp.DeletableTopicResult, name=name,
                                     topic_id=topic_id, error_code=error, error_message=message))
    return codec.make(ctx.response_cls, responses=tuple(results))


@dataclass(slots=True)
class _ConfigValue:
    name: str
    value: str | None
    source: int
    config_type: int
    synonyms: list[Synonym]
    documentation: str = ""
    read_only: bool = field(default=False, kw_only=True)


def _topic_config_values(broker: BrokerContext, overrides: dict[str, str]) -> list[_ConfigValue]:
    """``ConfigHelper#createTopicConfigEntry`` for every topic config."""
    out = []
    for d in TOPIC_CONFIGS:
        synonyms = topic_config_synonyms(d, overrides, broker.logs.dynamic_configs,
                                         broker.config)
        value, source = (synonyms[0][1], synonyms[0][2]) if synonyms else (d.default,
                                                                            DEFAULT_CONFIG)
        out.append(_ConfigValue(d.name, value, source, d.config_type, synonyms,
                                d.documentation))
    return out


# The broker configs below that ``DynamicBrokerConfig.AllDynamicConfigs`` holds (the listener
# configs and the log configs with a topic synonym): DescribeConfigs shows them as not read-only.
_DYNAMIC_BROKER_CONFIGS = frozenset({"advertised.listeners", "listeners", *BROKER_LOG_CONFIGS})


def _broker_config_values(broker: BrokerContext, per_broker: bool) -> list[_ConfigValue]:
    """``ConfigHelper#createBrokerConfigEntry``: for this node's resource, what ``kafkatx
    serve`` sets is a static broker config, under what AlterConfigs set for this node
    (DYNAMIC_BROKER_CONFIG) or the cluster (DYNAMIC_DEFAULT_BROKER_CONFIG); a config only set
    dynamically is listed too. ``advertised.listeners``, which it never sets, keeps Kafka's null
    default (DEFAULT_CONFIG, no synonym) and clients use ``listeners``. The cluster-default
    resource ("") lists only the cluster's dynamic configs (``currentDynamicDefaultConfigs``),
    each with that one synonym."""
    dynamic = broker.logs.dynamic_configs
    if not per_broker:
        return [_ConfigValue(name, value, DYNAMIC_DEFAULT_BROKER_CONFIG,
                             broker_config_type(name) or STRING,
                             [(name, value, DYNAMIC_DEFAULT_BROKER_CONFIG)],
                             read_only=name not in _DYNAMIC_BROKER_CONFIGS)
                for name, value in _canonical_broker(dynamic.cluster).items()]
    c = broker.config
    static_list = [
        ("auto.create.topics.enable", str(c.auto_create_topics).lower(), BOOLEAN),
        ("broker.id", str(c.node_id), INT),
        ("default.replication.factor", "1", INT),
        ("listeners", f"PLAINTEXT://{c.host}:{broker.port}", STRING),
        ("log.dirs", str(broker.logs.root), STRING),
        ("log.segment.bytes", str(c.segment_bytes), INT),
        ("message.max.bytes", TOPIC_CONFIG_BY_NAME["max.message.bytes"].default or "", INT),
        ("min.insync.replicas", "1", INT),
        ("node.id", str(c.node_id), INT),
        ("num.partitions", str(c.num_partitions), INT),
        ("offsets.topic.num.partitions", "50", INT),
        ("offsets.topic.replication.factor", "1", INT),
        ("transaction.max.timeout.ms", str(c.transaction_max_timeout_ms), INT),
        ("transaction.state.log.num.partitions", "50", INT),
        ("transaction.state.log.replication.factor", "1", INT),
        ("transactional.id.expiration.ms", str(c.transactional_id_expiration_ms), INT),
        ("transaction.abort.timed.out.transaction.cleanup.interval.ms",
         str(c.transaction_abort_interval_ms), INT),
        ("group.initial.rebalance.delay.ms", str(c.group_initial_rebalance_delay_ms), INT),
        ("group.min.session.timeout.ms", str(c.group_min_session_timeout_ms), INT),
        ("log.message.timestamp.type", "CreateTime", STRING),
        ("log.retention.ms", None, LONG),
    ]
    static = {name: value for name, value, _ in static_list}
    types = {name: kind for name, _, kind in static_list}
    node, cluster = _canonical_broker(dynamic.node), _canonical_broker(dynamic.cluster)
    names = ["advertised.listeners", *static]
    names += [n for n in (*node, *cluster) if n not in names]
    values = []
    for name in names:
        synonyms: list[Synonym] = []
        if name in node:
            synonyms.append((name, node[name], DYNAMIC_BROKER_CONFIG))
        if name in cluster:
            synonyms.append((name, cluster[name], DYNAMIC_DEFAULT_BROKER_CONFIG))
        if name in static:
            synonyms.append((name, static[name], STATIC_BROKER_CONFIG))
        value, source = (synonyms[0][1], synonyms[0][2]) if synonyms else (None,
                                                                            DEFAULT_CONFIG)
        values.append(_ConfigValue(name, value, source,
                                   types.get(name) or broker_config_type(name) or STRING,
                                   synonyms, read_only=name not in _DYNAMIC_BROKER_CONFIGS))
    return values


def _canonical_broker(values: dict[str, str]) -> dict[str, str]:
    """Dynamic broker values as DescribeConfigs shows them (a log config in the canonical form
    of its topic synonym's type; a custom config as it was set)."""
    return {name: (canonical_topic_value(BROKER_LOG_CONFIGS[name], value) or value)
            if name in BROKER_LOG_CONFIGS else value for name, value in values.items()}


def _entries(ctx: RequestContext, request: Any, values: Iterable[_ConfigValue],
             keys: Iterable[str] | None) -> tuple[Any, ...]:
    wanted = set(keys) if keys is not None else None
    include_synonyms = bool(getattr(request, "include_synonyms", False))
    include_docs = bool(getattr(request, "include_documentation", False))
    out = []
    for v in values:
        if wanted is not None and v.name not in wanted:
            continue
        synonyms = tuple(codec.make(ctx.resp.DescribeConfigsSynonym, name=n, value=val,
                                       source=src)
                         for n, val, src in v.synonyms) if include_synonyms else ()
        out.append(codec.make(
            ctx.resp.DescribeConfigsResourceResult, name=v.name, value=v.value,
            read_only=v.read_only, config_source=v.source, is_sensitive=False,
            synonyms=synonyms, config_type=v.config_type,
            documentation=(v.documentation or None) if include_docs else None))
    return tuple(out)


@api(32, 1, 4)
async def handle_describe_configs(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    results = []
    for res in request.resources:
        error, message, configs = ErrorCode.none, None, ()
        if res.resource_type == TOPIC_RESOURCE:
            topic = broker.logs.topics.get(res.resource_name)
            if topic is None:  # ConfigHelper sets no message
                error = ErrorCode.unknown_topic_or_partition
            else:
                configs = _entries(ctx, request, _topic_config_values(broker, topic.configs),
                                   res.configuration_keys)
        elif res.resource_type == BROKER_RESOURCE:
            if res.resource_name not in ("", str(broker.config.node_id)):
                error = ErrorCode.invalid_request
                message = f"Unexpected broker id, expected {broker.config.node_id} or empty " \
                          f"string, but received {res.resource_name}"
            else:
                configs = _entries(ctx, request, _broker_config_values(
                    broker, per_broker=res.resource_name != ""), res.configuration_keys)
        elif res.resource_type == BROKER_LOGGER_RESOURCE:
            configs = ()
        else:
            error = ErrorCode.invalid_request
            message = f"Unsupported resource type {res.resource_type}"
        results.append(codec.make(ctx.resp.DescribeConfigsResult, error_code=error,
                                     error_message=message, resource_type=res.resource_type,
                                     resource_name=res.resource_name, configs=configs))
    return codec.make(ctx.response_cls, results=tuple(results))


def manual_assignment_problem(broker: BrokerContext, broker_ids: Iterable[int],
                              replication_factor: int | None) -> str | None:
    """``ReplicationControlManager#validateManualPartitionAssignment`` (the registered brokers:
    this node, or the brokers of a ``--brokers N`` serve)."""
    ids = sorted(broker_ids)
    registered = (set(broker.cluster.node_ids) if broker.cluster is not None
                  else {broker.config.node_id})
    if not ids:
        return "The manual partition assignment includes an empty replica list."
    for i, broker_id in enumerate(ids):
        if broker_id not in registered:
            return (f"The manual partition assignment includes broker {broker_id}, but no such "
                    "broker is registered.")
        if i and ids[i - 1] == broker_id:
            return (f"The manual partition assignment includes the broker {broker_id} more "
                    "than once.")
    if replication_factor is not None and len(ids) != replication_factor:
        return (f"The manual partition assignment includes a partition with {len(ids)} "
                "replica(s), but this is not consistent with previous partitions, which have "
                f"{replication_factor} replica(s).")
    return None


def _check_create_partitions(broker: BrokerContext, request: Any) -> int:
    """The new partition count of one ``CreatePartitionsTopic``, or ``_Refused``."""
    topic = broker.logs.topics.get(request.name)
    if topic is None:
        raise _Refused(ErrorCode.unknown_topic_or_partition,
                       "This server does not host this topic-partition.")
    if topic.is_internal:
        raise _Refused(ErrorCode.invalid_request,
                       f"kafkatx serve keeps the internal topic {topic.name} at "
                       f"{topic.num_partitions} partitions.")
    current = topic.num_partitions
    if request.count == current:
        raise _Refused(ErrorCode.invalid_partitions,
                       f"Topic already has {current} partition(s).")
    if request.count < current:
        raise _Refused(ErrorCode.invalid_partitions,
                       f"The topic {topic.name} currently has {current} partition(s); "
                       f"{request.count} would not be an increase.")
    additional = request.count - current
    if request.assignments is not None:
        if len(request.assignments) != additional:
            raise _Refused(ErrorCode.invalid_replica_assignment,
                           f"Attempted to add {additional} additional partition(s), but only "
                           f"{len(request.assignments)} assignment(s) were specified.")
        state = broker.cluster.state(topic.name, 0) if broker.cluster is not None else None
        replication_factor = len(state.replicas) if state is not None else 1
        for i, a in enumerate(request.assignments):
            problem = manual_assignment_problem(broker, a.broker_ids, replication_factor)
            if problem is None and broker.cluster is not None and \
                    not set(a.broker_ids) & set(broker.cluster.brokers):
                problem = (f"All brokers specified in the manual partition assignment for "
                           f"partition {current + i} are fenced or in controlled shutdown.")
            if problem is not None:
                raise _Refused(ErrorCode.invalid_replica_assignment, problem)
    return request.count


@api(37, 0, 3)
async def handle_create_partitions(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    names = [t.name for t in request.topics]
    additional = 0
    for wanted in request.topics:
        topic = broker.logs.topics.get(wanted.name)
        if topic is not None and wanted.count > topic.num_partitions:
            additional += wanted.count - topic.num_partitions
    if additional > MAX_PARTITIONS_PER_REQUEST:
        # ReplicationControlManager#validateTotalNumberOfPartitions (Kafka 4.4's message).
        return codec.make(ctx.response_cls, results=tuple(
            codec.make(ctx.resp.CreatePartitionsTopicResult, name=t.name,
                       error_code=ErrorCode.policy_violation,
                       error_message="Excessively large number of additional partitions per "
                                     "request.") for t in request.topics))
    duplicates = [n for n in dict.fromkeys(names) if names.count(n) > 1]
    results = [codec.make(ctx.resp.CreatePartitionsTopicResult, name=n,
                             error_code=ErrorCode.invalid_request,
                             error_message="Duplicate topic name.") for n in duplicates]
    for wanted in request.topics:
        if wanted.name in duplicates:
            continue
        error, message = ErrorCode.none, None
        try:
            count = _check_create_partitions(broker, wanted)
            if request.validate_only:
                pass
            elif broker.cluster is not None:
                broker.cluster.create_partitions(
                    wanted.name, count, None if wanted.assignments is None else
                    [list(a.broker_ids) for a in wanted.assignments])
            else:
                broker.logs.create_partitions(broker.logs.topics[wanted.name], count)
                broker.log(f"topic {wanted.name} now has {count} partitions")
        except _Refused as exc:
            error, message = exc.error, exc.message
        results.append(codec.make(ctx.resp.CreatePartitionsTopicResult, name=wanted.name,
                                     error_code=error, error_message=message))
    return codec.make(ctx.response_cls, results=tuple(results))
