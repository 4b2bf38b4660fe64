"""Where a topic's config value comes from: its override, the broker's dynamic configs, the
static value a ``kafkatx serve`` option set, Kafka's default.

Mirrors ``ConfigHelper#createTopicConfigEntry`` / ``#configSynonyms`` (the synonyms of a topic
config, most specific first: DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG (this node's
resource), DYNAMIC_DEFAULT_BROKER_CONFIG (the cluster default, resource ""),
STATIC_BROKER_CONFIG, DEFAULT_CONFIG; the value and source are the first one's) and what
``LogConfig.fromProps(config.extractLogConfigMap, topicProps)`` resolves for a log, so the value
DescribeConfigs reports is the value the log acts on.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field

from kafkatx.broker.config.broker_config import (
    SERVE_OPTION_TOPIC_DEFAULTS,
    TOPIC_CONFIG_BY_NAME,
    BrokerConfig,
    ConfigDef,
)
from kafkatx.broker.config.validation import canonical_topic_value
from kafkatx.lazy_dataclass import dataclass

# DescribeConfigsResponse ConfigSource ids
DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5

Synonym = tuple[str, str | None, int]  # (name, value, source)


@dataclass(slots=True)
class DynamicBrokerConfigs:
    """The broker configs set with (Incremental)AlterConfigs: ``node`` for this node's resource
    (its id), ``cluster`` for the cluster default (resource name "")."""

    node: dict[str, str] = field(default_factory=dict)
    cluster: dict[str, str] = field(default_factory=dict)

    def of(self, per_broker: bool) -> dict[str, str]:
        return self.node if per_broker else self.cluster


def static_broker_value(definition: ConfigDef, config: BrokerConfig) -> str | None:
    """The broker-level value a serve option set, when it is not Kafka's default."""
    setting = SERVE_OPTION_TOPIC_DEFAULTS.get(definition.name)
    if setting is None or str(setting(config)) == definition.default:
        return None
    return str(setting(config))


def topic_config_synonyms(definition: ConfigDef, overrides: Mapping[str, str],
                          dynamic: DynamicBrokerConfigs, config: BrokerConfig) -> list[Synonym]:
    """Every place the value of this topic config is set, most specific first."""
    out: list[Synonym] = []
    if definition.name in overrides:
        out.append((definition.name, canonical_topic_value(
            definition.name, overrides[definition.name]), DYNAMIC_TOPIC_CONFIG))
    broker = definition.broker_synonym
    if broker is None:
        return out
    for values, source in ((dynamic.node, DYNAMIC_BROKER_CONFIG),
                           (dynamic.cluster, DYNAMIC_DEFAULT_BROKER_CONFIG)):
        if broker in values:
            out.append((broker, canonical_topic_value(definition.name, values[broker]),
                        source))
    static = static_broker_value(definition, config)
    if static is not None:
        out.append((broker, static, STATIC_BROKER_CONFIG))
    out.append((broker, definition.default, DEFAULT_CONFIG))
    return out


def topic_config_value(name: str, overrides: Mapping[str, str],
                       dynamic: DynamicBrokerConfigs, config: BrokerConfig) -> str | None:
    """The value a topic's log acts on (canonical form): the first synonym's, else the
    default (``LogConfig.fromProps``)."""
    definition = TOPIC_CONFIG_BY_NAME[name]
    synonyms = topic_config_synonyms(definition, overrides, dynamic, config)
    return synonyms[0][1] if synonyms else definition.default


def topic_defaults(dynamic: DynamicBrokerConfigs, config: BrokerConfig) -> dict[str, str | None]:
    """What a topic without overrides resolves to, per topic config (``extractLogConfigMap``)."""
    return {name: topic_config_value(name, {}, dynamic, config) for name in TOPIC_CONFIG_BY_NAME}
