"""Kafka's config types and validators: parse a config value as Kafka does, with its messages.

Mirrors ``ConfigDef#parseType`` (Java's ``Integer/Long.parseLong`` / ``Double.parseDouble`` /
boolean / list grammar on the trimmed value, "Not a number of type INT"), the validators
``Range.atLeast/between``, ``ValidString.in``, ``ValidList.in``, ``ThrottledReplicaListValidator``
and ``MetadataVersionValidator``, ``ConfigException(name, value, message)``'s shape ("Invalid
value V for configuration N: M") and ``ConfigDef#convertToString`` (what DescribeConfigs shows).
``LogConfig``'s definitions give each topic config its validator (``LogConfig#validate``:
unknown names, null values, then every value parsed in definition order, then
``validateValues``' compaction-lag check); the broker-level synonyms keep KafkaConfig's own,
which are the same but for four without one (``log.roll.ms``, ``log.roll.jitter.ms``,
``log.retention.ms``, ``log.flush.interval.ms``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from kafkatx.broker.config.broker_config import (
    BOOLEAN,
    DOUBLE,
    INT,
    LIST,
    LONG,
    STRING,
    TOPIC_CONFIG_BY_NAME,
    TOPIC_CONFIGS,
)

TYPE_NAMES = {BOOLEAN: "BOOLEAN", STRING: "STRING", INT: "INT", LONG: "LONG", DOUBLE: "DOUBLE",
              LIST: "LIST"}
_INTEGER = re.compile(r"[+-]?[0-9]+")
_JAVA_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                          r"[fFdD]?)")
_COMMA_WITH_WHITESPACE = re.compile(r"\s*,\s*")
_INT_RANGE = (-(2**31), 2**31 - 1)
_LONG_RANGE = (-(2**63), 2**63 - 1)


class ConfigError(Exception):
    """``ConfigException`` / ``InvalidConfigurationException``: ``message`` is Kafka's."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def invalid(name: str, value: object, message: str | None = None) -> ConfigError:
    """``new ConfigException(name, value, message)``."""
    return ConfigError(f"Invalid value {java_str(value)} for configuration {name}"
                       + (f": {message}" if message is not None else ""))


def java_str(value: object) -> str:
    """``String.valueOf`` of a parsed value (lists as ``[a, b]``, doubles as Java prints them)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, list):
        return "[" + ", ".join(java_str(v) for v in value) + "]"
    return str(value)


def java_double(x: float) -> str:
    """``Double.toString``: plain notation in [1e-3, 1e7), else ``d.dddE±n``; always a fraction
    digit."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    if 1e-3 <= abs(x) < 1e7:
        text = repr(x)
        if "e" in text:  # Python switches to exponents earlier than Java (below 1e-4)
            text = format(Decimal(text), "f")
        return text if "." in text else text + ".0"
    sign, digits, exponent = Decimal(repr(x)).as_tuple()
    assert isinstance(exponent, int)
    digits_text = "".join(map(str, digits)).rstrip("0") or "0"
    power = exponent + len(digits) - 1
    mantissa = digits_text[0] + "." + (digits_text[1:] or "0")
    return ("-" if sign else "") + f"{mantissa}E{power}"


def parse_type(name: str, value: str, config_type: int) -> Any:
    """``ConfigDef#parseType`` of a string value."""
    trimmed = value.strip()
    if config_type == BOOLEAN:
        if trimmed.lower() == "true":
            return True
        if trimmed.lower() == "false":
            return False
        raise invalid(name, value, "Expected value to be either true or false")
    if config_type == STRING:
        return trimmed
    if config_type in (INT, LONG):
        low, high = _INT_RANGE if config_type == INT else _LONG_RANGE
        if _INTEGER.fullmatch(trimmed) and low <= int(trimmed) <= high:
            return int(trimmed)
        raise invalid(name, value, f"Not a number of type {TYPE_NAMES[config_type]}")
    if config_type == DOUBLE:
        if not _JAVA_DOUBLE.fullmatch(trimmed):
            raise invalid(name, value, "Not a number of type DOUBLE")
        return float(trimmed.rstrip("fFdD").replace("Infinity", "inf"))
    if config_type == LIST:
        return [] if not trimmed else _COMMA_WITH_WHITESPACE.split(trimmed)
    raise ValueError(f"config type {config_type} is not parsed here")


def convert_to_string(parsed: Any, config_type: int) -> str:
    """``ConfigDef#convertToString``."""
    if config_type == LIST:
        return ",".join(str(v) for v in parsed)
    return java_str(parsed)


# -- validators ---------------------------------------------------------------------------------

Validator = Callable[[str, Any], None]


def _number(n: float) -> str:
    return str(int(n)) if float(n).is_integer() else java_double(n)


def at_least(minimum: float) -> Validator:
    """``Range.atLeast``."""
    def check(name: str, value: Any) -> None:
        if value < minimum:
            raise invalid(name, value, f"Value must be at least {_number(minimum)}")
    return check


def between(minimum: float, maximum: float) -> Validator:
    """``Range.between``."""
    def check(name: str, value: Any) -> None:
        if value < minimum:
            raise invalid(name, value, f"Value must be at least {_number(minimum)}")
        if value > maximum:
            raise invalid(name, value, f"Value must be no more than {_number(maximum)}")
    return check


def one_of(*valid: str) -> Validator:
    """``ValidString.in``."""
    def check(name: str, value: Any) -> None:
        if value not in valid:
            raise invalid(name, value, "String must be one of: " + ", ".join(valid))
    return check


def each_one_of(*valid: str) -> Validator:
    """``ValidList.in``: every element must be one of ``valid``."""
    element = one_of(*valid)

    def check(name: str, value: Any) -> None:
        for item in value:
            element(name, item)
    return check


def throttled_replicas(name: str, value: Any) -> None:
    """``ThrottledReplicaListValidator``: ``*`` or ``partition:broker`` pairs."""
    proposed = [str(v).strip() for v in value]
    if not (all(re.fullmatch(r"([0-9]+:[0-9]+)?", p) for p in proposed)
            or "".join(proposed) == "*"):
        raise invalid(name, value, f"{name} must be the literal '*' or a list of replicas in the "
                                   "following format: [partitionId]:[brokerId],"
                                   "[partitionId]:[brokerId],...")


def _metadata_versions() -> frozenset[str]:
    """``MetadataVersion``'s version strings up to Kafka 3.9 and each release's short form."""
    releases = {
        "0.8.0": (), "0.8.1": (), "0.8.2": (), "0.9.0": (), "0.10.0": (0, 1),
        "0.10.1": (0, 1, 2), "0.10.2": (0,), "0.11.0": (0, 1, 2), "1.0": (0,), "1.1": (0,),
        "2.0": (0, 1), "2.1": (0, 1, 2), "2.2": (0, 1), "2.3": (0, 1), "2.4": (0, 1),
        "2.5": (0,), "2.6": (0,), "2.7": (0, 1, 2), "2.8": (0, 1), "3.0": (0, 1), "3.1": (0,),
        "3.2": (0,), "3.3": (0, 1, 2, 3), "3.4": (0,), "3.5": (0, 1, 2), "3.6": (0, 1, 2),
        "3.7": (0, 1, 2, 3, 4), "3.8": (0,), "3.9": (0,),
    }
    out = set(releases)
    for release, ivs in releases.items():
        out.update(f"{release}-IV{iv}" for iv in ivs)
    return frozenset(out)


_METADATA_VERSIONS = _metadata_versions()


def metadata_version(name: str, value: Any) -> None:
    """``MetadataVersionValidator`` (``MetadataVersion#fromVersionString``)."""
    segments = str(value).split(".")
    keep = 3 if str(value).startswith("0.") else 2
    key = str(value) if keep >= len(segments) else ".".join(segments[:keep])
    if key not in _METADATA_VERSIONS:
        raise invalid(name, value, f"Version {value} is not a valid version")


COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
CLEANUP_POLICIES = ("compact", "delete")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")

# LogConfig's definitions, in its order (the order ConfigDef#parse reports the first problem).
TOPIC_VALIDATORS: Mapping[str, Validator | None] = {
    "segment.bytes": at_least(14),  # LegacyRecord.RECORD_OVERHEAD_V0
    "segment.ms": at_least(1),
    "segment.jitter.ms": at_least(0),
    "segment.index.bytes": at_least(4),
    "flush.messages": at_least(1),
    "flush.ms": at_least(0),
    "retention.bytes": None,
    "retention.ms": at_least(-1),
    "max.message.bytes": at_least(0),
    "index.interval.bytes": at_least(0),
    "delete.retention.ms": at_least(0),
    "min.compaction.lag.ms": at_least(0),
    "max.compaction.lag.ms": at_least(1),
    "file.delete.delay.ms": at_least(0),
    "min.cleanable.dirty.ratio": between(0, 1),
    "cleanup.policy": each_one_of(*CLEANUP_POLICIES),
    "unclean.leader.election.enable": None,
    "min.insync.replicas": at_least(1),
    "compression.type": one_of(*COMPRESSION_TYPES),
    "preallocate": None,
    "message.format.version": metadata_version,
    "message.timestamp.type": one_of(*TIMESTAMP_TYPES),
    "message.timestamp.difference.max.ms": at_least(0),
    "leader.replication.throttled.replicas": throttled_replicas,
    "follower.replication.throttled.replicas": throttled_replicas,
    "message.downconversion.enable": None,
}
# KafkaConfig defines these broker synonyms without a validator.
_BROKER_UNVALIDATED = frozenset({"log.roll.ms", "log.roll.jitter.ms", "log.retention.ms",
                                 "log.flush.interval.ms"})


def _topic_order() -> list[str]:
    known = [name for name in TOPIC_VALIDATORS if name in TOPIC_CONFIG_BY_NAME]
    return known + [d.name for d in TOPIC_CONFIGS if d.name not in TOPIC_VALIDATORS]


def parse_topic_config(name: str, value: str) -> Any:
    """A topic config's value parsed and validated as ``LogConfig`` defines it."""
    definition = TOPIC_CONFIG_BY_NAME[name]
    parsed = parse_type(name, value, definition.config_type)
    check = TOPIC_VALIDATORS.get(name)
    if check is not None:
        check(name, parsed)
    return parsed


def canonical_topic_value(name: str, value: str | None) -> str | None:
    """What DescribeConfigs shows for a stored value (``convertToString`` of the parsed one);
    a value that does not parse (never stored by this broker) is shown as stored."""
    definition = TOPIC_CONFIG_BY_NAME.get(name)
    if value is None or definition is None:
        return value
    try:
        return convert_to_string(parse_type(name, value, definition.config_type),
                                 definition.config_type)
    except ConfigError:
        return value


def validate_topic_configs(configs: Mapping[str, str | None],
                           defaults: Mapping[str, str | None]) -> None:
    """``ControllerConfigurationValidator#validate`` for a TOPIC + ``LogConfig#validate``:
    ``configs`` is the topic's whole set of overrides after the change, ``defaults`` the values
    it falls back to (the broker's); raises ``ConfigError`` with Kafka's message."""
    for name in configs:
        if name not in TOPIC_CONFIG_BY_NAME:
            raise ConfigError(f"Unknown topic config name: {name}")
    nulls = [name for name, value in configs.items() if value is None]
    if nulls:
        raise ConfigError("Null value not supported for topic configs: " + ",".join(nulls))
    parsed: dict[str, Any] = {}
    for name in _topic_order():
        value = configs.get(name, defaults.get(name))
        if value is not None:
            parsed[name] = parse_topic_config(name, value)
    lag_min, lag_max = parsed.get("min.compaction.lag.ms"), parsed.get("max.compaction.lag.ms")
    if lag_min is not None and lag_max is not None and lag_min > lag_max:
        raise ConfigError(f"conflict topic config setting min.compaction.lag.ms ({lag_min}) > "
                          f"max.compaction.lag.ms ({lag_max})")


# -- broker configs -------------------------------------------------------------------------------

# The broker configs with a topic synonym (DynamicLogConfig.ReconfigurableConfigs): broker
# config name -> topic config name.
BROKER_LOG_CONFIGS: Mapping[str, str] = {
    d.broker_synonym: d.name for d in TOPIC_CONFIGS if d.broker_synonym is not None}


def broker_config_type(name: str) -> int | None:
    topic = BROKER_LOG_CONFIGS.get(name)
    return TOPIC_CONFIG_BY_NAME[topic].config_type if topic is not None else None


def parse_broker_log_config(name: str, value: str) -> Any:
    """A broker-level log config parsed and validated as ``KafkaConfig`` defines it."""
    topic = BROKER_LOG_CONFIGS[name]
    parsed = parse_type(name, value, TOPIC_CONFIG_BY_NAME[topic].config_type)
    check = None if name in _BROKER_UNVALIDATED else TOPIC_VALIDATORS.get(topic)
    if check is not None:
        check(name, parsed)
    return parsed
