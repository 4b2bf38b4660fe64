"""Kafka's config parsing and validation (``ConfigDef#parseType``, the validators,
``ConfigDef#convertToString``, ``LogConfig#validate``) against values and messages from Kafka's
own ``ConfigDefTest`` / ``LogConfigTest`` cases."""

from __future__ import annotations

import math

import pytest

from kafkatx.broker.config.broker_config import BOOLEAN, DOUBLE, INT, LIST, LONG, STRING
from kafkatx.broker.config.validation import (
    ConfigError,
    canonical_topic_value,
    convert_to_string,
    java_double,
    parse_broker_log_config,
    parse_type,
    validate_topic_configs,
)
from kafkatx.broker.protocol.config_admin import java_split


@pytest.mark.parametrize(("value", "kind", "parsed"), [
    (" 5 ", INT, 5), ("+5", INT, 5), ("-2147483648", INT, -2**31), ("9223372036854775807", LONG,
                                                                      2**63 - 1),
    (" TRUE ", BOOLEAN, True), ("false", BOOLEAN, False), (" a b ", STRING, "a b"),
    ("a, b ,c", LIST, ["a", "b", "c"]), ("  ", LIST, []), ("a,,b", LIST, ["a", "", "b"]),
    ("0.5", DOUBLE, 0.5), ("1e3", DOUBLE, 1000.0), (".5", DOUBLE, 0.5), ("1f", DOUBLE, 1.0),
    ("-Infinity", DOUBLE, -math.inf),
])
def test_parse_type(value: str, kind: int, parsed: object) -> None:
    assert parse_type("x", value, kind) == parsed


@pytest.mark.parametrize(("value", "kind", "message"), [
    ("5.0", INT, "Invalid value 5.0 for configuration x: Not a number of type INT"),
    ("2147483648", INT, "Invalid value 2147483648 for configuration x: Not a number of type INT"),
    ("", LONG, "Invalid value  for configuration x: Not a number of type LONG"),
    ("1_000", LONG, "Invalid value 1_000 for configuration x: Not a number of type LONG"),
    ("inf", DOUBLE, "Invalid value inf for configuration x: Not a number of type DOUBLE"),
    ("yes", BOOLEAN, "Invalid value yes for configuration x: Expected value to be either true "
                     "or false"),
])
def test_parse_type_refusals(value: str, kind: int, message: str) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_type("x", value, kind)
    assert exc.value.message == message


@pytest.mark.parametrize(("x", "text"), [
    (0.5, "0.5"), (2.0, "2.0"), (100.0, "100.0"), (0.001, "0.001"), (1e-4, "1.0E-4"),
    (1e7, "1.0E7"), (12345678.9, "1.23456789E7"), (-0.0, "-0.0"), (math.nan, "NaN"),
    (0.00012, "1.2E-4"),
])
def test_java_double(x: float, text: str) -> None:
    assert java_double(x) == text


def test_convert_to_string_and_canonical_values() -> None:
    assert convert_to_string(["compact", "delete"], LIST) == "compact,delete"
    assert canonical_topic_value("cleanup.policy", " compact , delete ") == "compact,delete"
    assert canonical_topic_value("min.cleanable.dirty.ratio", "1") == "1.0"
    assert canonical_topic_value("preallocate", "TRUE") == "true"
    assert canonical_topic_value("retention.ms", "x") == "x"  # kept as stored when unparsable


def _refusal(configs: dict[str, str | None], defaults: dict[str, str | None] | None = None
             ) -> str:
    with pytest.raises(ConfigError) as exc:
        validate_topic_configs(configs, defaults or {})
    return exc.value.message


def test_log_config_validate() -> None:
    """``LogConfig#validate``: names, nulls, values in definition order, the compaction lags
    against the broker's value of the one not set."""
    assert _refusal({"retention.ms": "x", "nope": "1"}) == "Unknown topic config name: nope"
    assert _refusal({"retention.ms": None, "segment.ms": None}) == (
        "Null value not supported for topic configs: retention.ms,segment.ms")
    # segment.bytes is defined before retention.ms: its problem is the one reported.
    assert _refusal({"retention.ms": "x", "segment.bytes": "1"}) == (
        "Invalid value 1 for configuration segment.bytes: Value must be at least 14")
    assert _refusal({"min.compaction.lag.ms": "20"}, {"max.compaction.lag.ms": "10"}) == (
        "conflict topic config setting min.compaction.lag.ms (20) > max.compaction.lag.ms (10)")
    assert _refusal({"leader.replication.throttled.replicas": "0:1,x"}) == (
        "Invalid value [0:1, x] for configuration leader.replication.throttled.replicas: "
        "leader.replication.throttled.replicas must be the literal '*' or a list of replicas "
        "in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")
    validate_topic_configs({"leader.replication.throttled.replicas": "*",
                            "message.format.version": "3.0-IV1", "cleanup.policy": "",
                            "min.cleanable.dirty.ratio": "0"}, {})
    validate_topic_configs({"message.format.version": "0.10.2.1"}, {})


def test_broker_log_configs_keep_kafka_configs_validators() -> None:
    """KafkaConfig defines log.retention.ms and log.roll.ms without a validator, unlike their
    topic synonyms."""
    assert parse_broker_log_config("log.retention.ms", "-5") == -5
    with pytest.raises(ConfigError):
        parse_broker_log_config("log.segment.bytes", "13")


@pytest.mark.parametrize(("value", "parts"), [
    ("a,b", ["a", "b"]), ("a,,b,,", ["a", "", "b"]), ("", [""]), (",", []), ("a", ["a"]),
])
def test_java_split(value: str, parts: list[str]) -> None:
    assert java_split(value) == parts
