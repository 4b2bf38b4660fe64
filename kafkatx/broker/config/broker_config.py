"""The broker's settings (what ``kafkatx serve`` options set) and Kafka's topic-config defaults."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from kafkatx.lazy_dataclass import dataclass

DEFAULT_SEGMENT_BYTES = 1 << 30  # log.segment.bytes
DEFAULT_SEGMENT_MS = 604_800_000  # log.roll.ms
DEFAULT_MAX_MESSAGE_BYTES = 1_048_588  # message.max.bytes
DEFAULT_TRANSACTION_MAX_TIMEOUT_MS = 900_000  # transaction.max.timeout.ms
# transaction.abort.timed.out.transaction.cleanup.interval.ms
DEFAULT_TRANSACTION_ABORT_INTERVAL_MS = 10_000
DEFAULT_TRANSACTIONAL_ID_EXPIRATION_MS = 604_800_000  # transactional.id.expiration.ms
# transaction.remove.expired.transaction.cleanup.interval.ms
DEFAULT_REMOVE_EXPIRED_INTERVAL_MS = 3_600_000
DEFAULT_GROUP_INITIAL_REBALANCE_DELAY_MS = 3_000  # group.initial.rebalance.delay.ms
DEFAULT_GROUP_MIN_SESSION_TIMEOUT_MS = 6_000  # group.min.session.timeout.ms
DEFAULT_RETENTION_CHECK_INTERVAL_MS = 300_000  # log.retention.check.interval.ms
DEFAULT_CLEANER_BACKOFF_MS = 15_000  # log.cleaner.backoff.ms
# offsets.topic.segment.bytes, transaction.state.log.segment.bytes
DEFAULT_INTERNAL_SEGMENT_BYTES = 104_857_600
LEADER_EPOCH = 0  # a single node that never loses leadership


@dataclass(frozen=True, slots=True, kw_only=True)
class BrokerConfig:
    host: str = "127.0.0.1"
    port: int = 9092
    log_dir: Path = Path("kafkatx-data")
    num_partitions: int = 1
    auto_create_topics: bool = True
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    segment_ms: int = DEFAULT_SEGMENT_MS
    node_id: int = 1
    verbose: bool = False
    transaction_max_timeout_ms: int = DEFAULT_TRANSACTION_MAX_TIMEOUT_MS
    transaction_abort_interval_ms: int = DEFAULT_TRANSACTION_ABORT_INTERVAL_MS
    transactional_id_expiration_ms: int = DEFAULT_TRANSACTIONAL_ID_EXPIRATION_MS
    remove_expired_interval_ms: int = DEFAULT_REMOVE_EXPIRED_INTERVAL_MS
    group_initial_rebalance_delay_ms: int = DEFAULT_GROUP_INITIAL_REBALANCE_DELAY_MS
    group_min_session_timeout_ms: int = DEFAULT_GROUP_MIN_SESSION_TIMEOUT_MS
    hw_checkpoint_interval_s: float = 5.0  # replica.high.watermark.checkpoint.interval.ms
    offset_checkpoint_interval_s: float = 60.0  # log.flush.offset.checkpoint.interval.ms
    retention_check_interval_ms: int = DEFAULT_RETENTION_CHECK_INTERVAL_MS
    cleaner_backoff_ms: int = DEFAULT_CLEANER_BACKOFF_MS
    offsets_topic_segment_bytes: int = DEFAULT_INTERNAL_SEGMENT_BYTES
    transaction_state_segment_bytes: int = DEFAULT_INTERNAL_SEGMENT_BYTES
    faults: tuple[Any, ...] = ()  # kafkatx.broker.faults.FaultRule (``--fault``)
    # The finalized ``transaction.version`` feature (``--transaction-version``): 0 as Kafka 3.0,
    # 1 adds flexible coordinator values and KIP-890 part 1 verification, 2 transactions v2.
    transaction_version: int = 0
    # metadata.log.max.record.bytes.between.snapshots: a KRaft snapshot of the metadata log
    # once this many bytes of records were appended since the last (and at a clean shutdown).
    metadata_snapshot_bytes: int = 20 * 1024 * 1024  # kraft_log.DEFAULT_SNAPSHOT_BYTES
    replica_lag_time_max_ms: int = 30_000  # replica.lag.time.max.ms (--brokers N)
    # connections.max.idle.ms: a connection sending nothing (or stalled inside a request) this
    # long is closed, as Kafka's Selector closes idle connections.
    connections_max_idle_ms: int = 600_000
    # queued.max.request.bytes: request bytes being read or handled at once, all connections
    # together (Kafka's MemoryPool; Kafka's default is unbounded, serve's the largest frame).
    queued_max_request_bytes: int = 104_857_600


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfigDef:
    """One topic config as ``DescribeConfigs`` shows it (``LogConfig``'s definition)."""

    name: str
    default: str | None
    config_type: int  # DescribeConfigs ConfigType: 1 BOOLEAN 2 STRING 3 INT 5 LONG 6 DOUBLE 7 LIST
    broker_synonym: str | None = None
    documentation: str = ""


BOOLEAN, STRING, INT, LONG, DOUBLE, LIST = 1, 2, 3, 5, 6, 7

# Kafka 3.0's topic configs with their defaults (LogConfig / ServerLogConfigs); what the broker
# acts on is listed in docs/serve.md, the rest is validated (config_validation), kept and reported.
TOPIC_CONFIGS: tuple[ConfigDef, ...] = (
    ConfigDef(name="cleanup.policy", default="delete", config_type=LIST,
              broker_synonym="log.cleanup.policy"),
    ConfigDef(name="compression.type", default="producer", config_type=STRING,
              broker_synonym="compression.type"),
    ConfigDef(name="delete.retention.ms", default="86400000", config_type=LONG,
              broker_synonym="log.cleaner.delete.retention.ms"),
    ConfigDef(name="file.delete.delay.ms", default="60000", config_type=LONG,
              broker_synonym="log.segment.delete.delay.ms"),
    ConfigDef(name="flush.messages", default="9223372036854775807", config_type=LONG,
              broker_synonym="log.flush.interval.messages"),
    ConfigDef(name="flush.ms", default="9223372036854775807", config_type=LONG,
              broker_synonym="log.flush.interval.ms"),
    ConfigDef(name="index.interval.bytes", default="4096", config_type=INT,
              broker_synonym="log.index.interval.bytes"),
    ConfigDef(name="max.compaction.lag.ms", default="9223372036854775807", config_type=LONG,
              broker_synonym="log.cleaner.max.compaction.lag.ms"),
    ConfigDef(name="max.message.bytes", default=str(DEFAULT_MAX_MESSAGE_BYTES), config_type=INT,
              broker_synonym="message.max.bytes"),
    ConfigDef(name="message.downconversion.enable", default="true", config_type=BOOLEAN,
              broker_synonym="log.message.downconversion.enable"),
    ConfigDef(name="message.format.version", default="3.0-IV1", config_type=STRING,
              broker_synonym="log.message.format.version"),
    ConfigDef(name="message.timestamp.difference.max.ms", default="9223372036854775807",
              config_type=LONG, broker_synonym="log.message.timestamp.difference.max.ms"),
    ConfigDef(name="message.timestamp.type", default="CreateTime", config_type=STRING,
              broker_synonym="log.message.timestamp.type"),
    ConfigDef(name="min.cleanable.dirty.ratio", default="0.5", config_type=DOUBLE,
              broker_synonym="log.cleaner.min.cleanable.ratio"),
    ConfigDef(name="min.compaction.lag.ms", default="0", config_type=LONG,
              broker_synonym="log.cleaner.min.compaction.lag.ms"),
    ConfigDef(name="min.insync.replicas", default="1", config_type=INT,
              broker_synonym="min.insync.replicas"),
    ConfigDef(name="preallocate", default="false", config_type=BOOLEAN,
              broker_synonym="log.preallocate"),
    ConfigDef(name="retention.bytes", default="-1", config_type=LONG,
              broker_synonym="log.retention.bytes"),
    ConfigDef(name="retention.ms", default="604800000", config_type=LONG,
              broker_synonym="log.retention.ms"),
    ConfigDef(name="segment.bytes", default=str(DEFAULT_SEGMENT_BYTES), config_type=INT,
              broker_synonym="log.segment.bytes"),
    ConfigDef(name="segment.index.bytes", default="10485760", config_type=INT,
              broker_synonym="log.index.size.max.bytes"),
    ConfigDef(name="segment.jitter.ms", default="0", config_type=LONG,
              broker_synonym="log.roll.jitter.ms"),
    ConfigDef(name="segment.ms", default=str(DEFAULT_SEGMENT_MS), config_type=LONG,
              broker_synonym="log.roll.ms"),
    ConfigDef(name="unclean.leader.election.enable", default="false", config_type=BOOLEAN,
              broker_synonym="unclean.leader.election.enable"),
    # Replication throttles (LIST, no broker synonym); validated, kept, not acted on.
    ConfigDef(name="leader.replication.throttled.replicas", default="", config_type=LIST),
    ConfigDef(name="follower.replication.throttled.replicas", default="", config_type=LIST),
)
TOPIC_CONFIG_BY_NAME: Mapping[str, ConfigDef] = {c.name: c for c in TOPIC_CONFIGS}


# Topic configs whose broker-wide value a ``kafkatx serve`` option sets (a static broker config).
SERVE_OPTION_TOPIC_DEFAULTS: Mapping[str, Callable[[BrokerConfig], int]] = {
    "segment.bytes": lambda c: c.segment_bytes,
    "segment.ms": lambda c: c.segment_ms,
}
