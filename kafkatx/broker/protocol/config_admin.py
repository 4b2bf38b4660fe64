"""AlterConfigs and IncrementalAlterConfigs: validate a change as Kafka does, then apply it live.

Mirrors a KRaft node's two steps: ``ConfigAdminManager#preprocess`` on the broker (each resource
once, no duplicate keys, no null value but for DELETE, BROKER changes validated by
``DynamicBrokerConfig#validate``: INVALID_REQUEST for what it refuses, BROKER_LOGGER handled by
``RuntimeLoggerManager``), then the controller's ``ConfigurationControlManager``
(``incrementalAlterConfigResource``: SET, DELETE back to the default, APPEND/SUBTRACT on LIST
configs only, from the stored value or else the config's default; ``legacyAlterConfigResource``:
the request's configs replace the resource's whole set) with ``validateAlterConfig``
(``ControllerConfigurationValidator``: default topic resources refused, topic names checked,
``LogConfig#validate`` on the topic's resulting set; INVALID_CONFIG; then the existence check:
UNKNOWN_TOPIC_OR_PARTITION). ``validate_only`` runs every check and changes nothing. Applied
changes reach the logs at once (``LogManager#reconfigure``): the next append rolls, sizes and
validates by them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, TypeVar

from kio.schema.errors import ErrorCode

from kafkatx.broker.config.broker_config import LIST, TOPIC_CONFIG_BY_NAME
from kafkatx.broker.config.dynamic import topic_defaults
from kafkatx.broker.config.validation import (
    BROKER_LOG_CONFIGS,
    ConfigError,
    broker_config_type,
    parse_broker_log_config,
    validate_topic_configs,
)
from kafkatx.broker.logdir.topic_names import validate_topic_name
from kafkatx.lazy_dataclass import dataclass

if TYPE_CHECKING:
    from kafkatx.broker.logdir.log_manager import LogManager

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8  # ConfigResource.Type ids
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3  # AlterConfigOp.OpType ids
OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}
# Broker configs Kafka cannot change while running (DynamicConfig.Broker.nonDynamicProps) among
# those this broker has; any other name that is not a dynamic log config is a custom config,
# which Kafka keeps (customPropsAllowed).
NON_DYNAMIC_BROKER_CONFIGS = frozenset({
    "auto.create.topics.enable", "broker.id", "default.replication.factor", "log.dir",
    "log.dirs", "node.id", "num.partitions", "offsets.topic.num.partitions",
    "offsets.topic.replication.factor", "process.roles", "controller.quorum.voters",
    "transaction.max.timeout.ms", "transaction.state.log.num.partitions",
    "transaction.state.log.replication.factor", "transactional.id.expiration.ms",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms",
    "transaction.remove.expired.transaction.cleanup.interval.ms",
    "group.initial.rebalance.delay.ms", "group.min.session.timeout.ms",
    "group.max.session.timeout.ms", "log.message.format.version",
})
PER_BROKER_CONFIGS = frozenset({"listeners", "advertised.listeners"})  # listener configs
IncrementalOp = tuple[str, int, str | None]  # (name, AlterConfigOp.OpType id, value)
LegacyConfig = tuple[str, str | None]  # (name, value)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Result:
    error: ErrorCode
    message: str | None = None


OK = Result(ErrorCode.none)


class Refused(Exception):
    def __init__(self, error: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.result = Result(error, message)


def java_split(value: str) -> list[str]:
    """``String#split(",")``: trailing empty strings dropped (a string without a comma is
    itself, even when empty)."""
    if "," not in value:
        return [value]
    parts = value.split(",")
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _set_text(names: Iterable[str]) -> str:
    """A Scala ``Set``'s ``toString``."""
    names = list(names)
    return ("Set(" if len(names) <= 4 else "HashSet(") + ", ".join(names) + ")"


def _apply_ops(stored: dict[str, str], ops: Sequence[IncrementalOp],
               list_default: Callable[[str, int], str]) -> dict[str, str]:
    """A resource's configs after ``ops``: SET, DELETE (back to the default), APPEND/SUBTRACT
    on the stored value or else the default ``list_default`` gives (it refuses keys that are
    not LIST configs). Values are split as Java's ``String#split(",")`` does, empty parts
    dropped (``ConfigurationControlManager#getParts``)."""
    configs = dict(stored)
    for key, op, value in ops:
        if op not in OP_NAMES:
            raise Refused(ErrorCode.invalid_request, f"Unknown operations type {op}")
        if op == SET:
            configs[key] = value or ""
        elif op == DELETE:
            configs.pop(key, None)
        else:
            default = list_default(key, op)
            parts = [p for p in java_split(configs.get(key, default)) if p]
            for v in java_split(value or ""):
                if op == APPEND and v not in parts:
                    parts.append(v)
                elif op == SUBTRACT and v in parts:
                    parts.remove(v)
            configs[key] = ",".join(parts)
    return configs


class ConfigAdmin:
    """The dynamic configs of this node's topics and broker, changed by the two APIs."""

    def __init__(self, logs: LogManager, node_id: int) -> None:
        self.logs = logs
        self.node_id = node_id

    # -- the APIs -----------------------------------------------------------------------------

    def incremental_alter(self, resources: Sequence[tuple[int, str, Sequence[IncrementalOp]]],
                          validate_only: bool) -> list[Result]:
        """One result per resource, in request order; each op is (name, op type, value)."""
        def alter(kind: int, name: str, ops: Sequence[IncrementalOp]) -> None:
            self._preprocess([op[0] for op in ops],
                             [op[0] for op in ops if op[1] != DELETE and op[2] is None])
            if kind == BROKER_LOGGER:
                self._broker_logger(name, ops)
            elif kind == BROKER:
                self._alter_broker(name, self._apply_broker_ops(name, ops), validate_only,
                                   [op[0] for op in ops])
            elif kind == TOPIC:
                self._alter_topic(name, self._apply_topic_ops(name, ops), validate_only,
                                  [op[0] for op in ops])
            else:
                raise Refused(ErrorCode.invalid_request, f"Unknown resource type {kind}")
        return self._each(resources, alter)

    def legacy_alter(self, resources: Sequence[tuple[int, str, Sequence[LegacyConfig]]],
                     validate_only: bool) -> list[Result]:
        """AlterConfigs: each resource's configs become its whole set of dynamic configs."""
        def alter(kind: int, name: str, configs: Sequence[LegacyConfig]) -> None:
            self._preprocess([c[0] for c in configs], [c[0] for c in configs if c[1] is None])
            wanted = {key: value for key, value in configs if value is not None}
            if kind == BROKER:
                self._alter_broker(name, wanted, validate_only, list(wanted))
            elif kind == TOPIC:
                self._alter_topic(name, wanted, validate_only, list(wanted))
            else:  # AlterConfigs does not do BROKER_LOGGER either
                raise Refused(ErrorCode.invalid_request, f"Unknown resource type {kind}")
        return self._each(resources, alter)

    @staticmethod
    def _each(resources: Sequence[tuple[int, str, T]],
              alter: Callable[[int, str, T], None]) -> list[Result]:
        """Each resource altered in turn (a resource named twice is refused both times)."""
        seen: set[tuple[int, str]] = set()
        twice: set[tuple[int, str]] = set()
        for kind, name, _ in resources:
            (twice if (kind, name) in seen else seen).add((kind, name))
        out = []
        for kind, name, changes in resources:
            if (kind, name) in twice:
                out.append(Result(ErrorCode.invalid_request,
                                  "Each resource must appear at most once."))
                continue
            try:
                alter(kind, name, changes)
                out.append(OK)
            except Refused as exc:
                out.append(exc.result)
        return out

    # -- ConfigAdminManager#preprocess ---------------------------------------------------------

    @staticmethod
    def _preprocess(names: list[str], nulls: list[str]) -> None:
        if len(set(names)) != len(names):
            raise Refused(ErrorCode.invalid_request, "Error due to duplicate config keys")
        if nulls:
            raise Refused(ErrorCode.invalid_request,
                          "Null value not supported for : " + ", ".join(nulls))

    def _broker_id_check(self, name: str) -> None:
        """``validateResourceNameIsCurrentNodeId``."""
        try:
            node = int(name)
        except ValueError:
            raise Refused(ErrorCode.invalid_request,
                          f"Node id must be an integer, but it is: {name}") from None
        if node != self.node_id:
            raise Refused(ErrorCode.invalid_request,
                          f"Unexpected broker id, expected {self.node_id}, but received {name}")

    def _broker_logger(self, name: str, ops: Sequence[IncrementalOp]) -> None:
        """``RuntimeLoggerManager#applyChangesForResource``: this broker has no log4j loggers
        (DescribeConfigs lists none), so every logger named is unknown."""
        try:
            node = int(name)
        except ValueError:
            raise Refused(ErrorCode.invalid_request,
                          f"Node id must be an integer, but it is: {name}") from None
        if node != self.node_id:  # sic: Kafka prints its own id twice
            raise Refused(ErrorCode.invalid_request, f"Unexpected node id. Expected "
                                                     f"{self.node_id}, but received {self.node_id}")
        for logger, op, _ in ops:
            if op in (SET, DELETE):
                raise Refused(ErrorCode.invalid_config, f"Logger {logger} does not exist!")
            if op in (APPEND, SUBTRACT):
                raise Refused(ErrorCode.invalid_request, f"{OP_NAMES[op]} operation is not "
                                                         "allowed for the BROKER_LOGGER resource")
            raise Refused(ErrorCode.invalid_request, f"Unknown operation type {op} is not "
                                                     "allowed for the BROKER_LOGGER resource")

    # -- BROKER ---------------------------------------------------------------------------------

    def _apply_broker_ops(self, name: str, ops: Sequence[IncrementalOp]) -> dict[str, str]:
        """``ConfigAdminManager.prepareIncrementalConfigs`` on the resource's stored configs."""
        def list_default(key: str, op: int) -> str:
            if key not in BROKER_LOG_CONFIGS and key not in NON_DYNAMIC_BROKER_CONFIGS \
                    and key not in PER_BROKER_CONFIGS:
                # KafkaConfig.configKeys(name) on a name it does not know: a Scala
                # NoSuchElementException, answered as UNKNOWN_SERVER_ERROR without message.
                raise Refused(ErrorCode.unknown_server_error, None)
            if broker_config_type(key) != LIST:
                raise Refused(ErrorCode.invalid_config, f"Config value {OP_NAMES[op].lower()} "
                                                        f"is not allowed for config key: {key}")
            return TOPIC_CONFIG_BY_NAME[BROKER_LOG_CONFIGS[key]].default or ""

        if name:
            self._broker_id_check(name)
        return _apply_ops(self.logs.dynamic_configs.of(per_broker=bool(name)), ops, list_default)

    def _validate_broker(self, props: dict[str, str], per_broker: bool) -> None:
        """``DynamicBrokerConfig#validate``: refused changes are INVALID_REQUEST
        (``ConfigAdminManager#validateBrokerConfigChange``, KAFKA-13609)."""
        fixed = [n for n in props if n in NON_DYNAMIC_BROKER_CONFIGS]
        if fixed:
            raise Refused(ErrorCode.invalid_request,
                          f"Cannot update these configs dynamically: {_set_text(fixed)}")
        for key, value in props.items():
            if key in BROKER_LOG_CONFIGS:
                try:
                    parse_broker_log_config(key, value)
                except ConfigError as exc:
                    raise Refused(ErrorCode.invalid_request, exc.message) from None
        listeners = [n for n in props if n in PER_BROKER_CONFIGS]
        if listeners and not per_broker:
            raise Refused(ErrorCode.invalid_request,
                          "Cannot update these configs at default cluster level, broker id must "
                          f"be specified: {_set_text(listeners)}")
        if listeners:
            raise Refused(ErrorCode.invalid_request, "kafkatx serve cannot change its listeners "
                                                     f"while it runs: {_set_text(listeners)}")

    def _alter_broker(self, name: str, props: dict[str, str], validate_only: bool,
                      named: Sequence[str]) -> None:
        if name:
            self._broker_id_check(name)
        per_broker = bool(name)
        self._validate_broker(props, per_broker)
        if validate_only:
            return
        stored = self.logs.dynamic_configs.of(per_broker)
        self._record(BROKER, name, stored, props, named)
        stored.clear()
        stored.update(props)
        self.logs.reconfigure()

    # -- TOPIC ----------------------------------------------------------------------------------

    def _topic_check(self, name: str) -> None:
        """``ControllerConfigurationValidator#validateTopicName``."""
        if not name:
            raise Refused(ErrorCode.invalid_request, "Default topic resources are not allowed.")
        problem = validate_topic_name(name)
        if problem is not None:
            raise Refused(ErrorCode.invalid_topic_exception, problem)

    def _apply_topic_ops(self, name: str, ops: Sequence[IncrementalOp]) -> dict[str, str]:
        """``ConfigurationControlManager#incrementalAlterConfigResource``."""
        def list_default(key: str, op: int) -> str:
            definition = TOPIC_CONFIG_BY_NAME.get(key)
            if definition is None or definition.config_type != LIST:
                raise Refused(ErrorCode.invalid_config, f"Can't {OP_NAMES[op]} to key {key} "
                                                        "because its type is not LIST.")
            return definition.default or ""

        topic = self.logs.topics.get(name)
        return _apply_ops(topic.configs if topic is not None else {}, ops, list_default)

    def _alter_topic(self, name: str, configs: dict[str, str], validate_only: bool,
                     named: Sequence[str]) -> None:
        """``validateAlterConfig`` then, unless validating only, the change."""
        self._topic_check(name)
        try:
            validate_topic_configs(dict(configs), topic_defaults(self.logs.dynamic_configs,
                                                                 self.logs.config))
        except ConfigError as exc:
            raise Refused(ErrorCode.invalid_config, exc.message) from None
        topic = self.logs.topics.get(name)
        if topic is None:
            raise Refused(ErrorCode.unknown_topic_or_partition,
                          f"The topic '{name}' does not exist.")
        if validate_only:
            return
        self._record(TOPIC, name, topic.configs, configs, named)
        topic.configs = configs
        self.logs.reconfigure(topic)

    def _record(self, kind: int, name: str, before: dict[str, str], after: dict[str, str],
                named: Sequence[str]) -> None:
        """The change as the controller's ConfigRecords in the metadata log."""
        if self.logs.controller is not None:
            self.logs.controller.alter_configs(kind, name, before, after, named)
