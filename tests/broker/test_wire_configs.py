"""Live configs at the wire level: IncrementalAlterConfigs and AlterConfigs validated as a KRaft
Kafka validates them (exact error codes and messages), DescribeConfigs showing the result with
its sources and synonyms, CreateTopics through the same validation, and the changes taking
effect on the next append (segment size and age, keyless records refused by a compacted
topic)."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from kafkatx.formats.record_batch import Record, build_batch
from tests.broker.logdir_checks import verify_clean
from tests.broker.serve_process import ServeProcess
from tests.broker.test_wire import DESCRIBE_CONFIGS, T0, batch, create_topic, produce, stop_ok
from tests.broker.wire import WireClient, entity, request

Serve = Callable[..., ServeProcess]
E = ErrorCode
ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS, DELETE_RECORDS = 33, 44, 21
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
DYNAMIC_TOPIC, DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC, DEFAULT = 1, 2, 3, 4, 5
Op = tuple[str, int, str | None]


def incremental(c: WireClient, *resources: tuple[int, str, list[Op]],
                validate_only: bool = False) -> list[tuple[ErrorCode, str | None]]:
    wanted = tuple(entity(INCREMENTAL_ALTER_CONFIGS, 1, "AlterConfigsResource",
                          resource_type=kind, resource_name=name, configs=tuple(
                              entity(INCREMENTAL_ALTER_CONFIGS, 1, "AlterableConfig", name=n,
                                     config_operation=op, value=v) for n, op, v in ops))
                   for kind, name, ops in resources)
    r = c.call(request(INCREMENTAL_ALTER_CONFIGS, 1, resources=wanted,
                       validate_only=validate_only))
    assert [(x.resource_type, x.resource_name) for x in r.responses] == [
        (kind, name) for kind, name, _ in resources]
    return [(x.error_code, x.error_message) for x in r.responses]


def one(c: WireClient, kind: int, name: str, *ops: Op,
        validate_only: bool = False) -> tuple[ErrorCode, str | None]:
    return incremental(c, (kind, name, list(ops)), validate_only=validate_only)[0]


def legacy(c: WireClient, kind: int, name: str, configs: dict[str, str | None],
           version: int = 1) -> tuple[ErrorCode, str | None]:
    res = entity(ALTER_CONFIGS, version, "AlterConfigsResource", resource_type=kind,
                 resource_name=name, configs=tuple(
                     entity(ALTER_CONFIGS, version, "AlterableConfig", name=k, value=v)
                     for k, v in configs.items()))
    r = c.call(request(ALTER_CONFIGS, version, resources=(res,), validate_only=False))
    return r.responses[0].error_code, r.responses[0].error_message


def describe(c: WireClient, kind: int, name: str) -> dict[str, Any]:
    res = entity(DESCRIBE_CONFIGS, 4, "DescribeConfigsResource", resource_type=kind,
                 resource_name=name, configuration_keys=None)
    result = c.call(request(DESCRIBE_CONFIGS, 4, resources=(res,), include_synonyms=True,
                            include_documentation=False)).results[0]
    assert result.error_code == E.none, result
    return {e.name: e for e in result.configs}


def dynamic(c: WireClient, topic: str) -> dict[str, str | None]:
    return {n: e.value for n, e in describe(c, TOPIC, topic).items()
            if e.config_source == DYNAMIC_TOPIC}


def synonyms(entry: Any) -> list[tuple[str, str | None, int]]:
    return [(s.name, s.value, s.source) for s in entry.synonyms]


def test_incremental_alter_configs_validates_as_kafka(serve: Serve) -> None:
    """``ConfigAdminManager#preprocess`` + ``ConfigurationControlManager#
    incrementalAlterConfigResource`` + ``ControllerConfigurationValidator`` /
    ``LogConfig#validate``: every refusal with Kafka's code and message; ``validate_only``
    changes nothing; APPEND/SUBTRACT on a LIST start from Kafka's default; DELETE resets."""
    proc = serve()
    with WireClient(proc.port) as c:
        create_topic(c, "orders", 1)
        refusals: list[tuple[Op, ErrorCode, str]] = [
            (("no.such", SET, "1"), E.invalid_config, "Unknown topic config name: no.such"),
            (("retention.ms", SET, "abc"), E.invalid_config,
             "Invalid value abc for configuration retention.ms: Not a number of type LONG"),
            (("retention.ms", SET, "-2"), E.invalid_config,
             "Invalid value -2 for configuration retention.ms: Value must be at least -1"),
            (("segment.bytes", SET, "2147483648"), E.invalid_config,
             "Invalid value 2147483648 for configuration segment.bytes: Not a number of type "
             "INT"),
            (("segment.bytes", SET, "10"), E.invalid_config,
             "Invalid value 10 for configuration segment.bytes: Value must be at least 14"),
            (("min.cleanable.dirty.ratio", SET, "2"), E.invalid_config,
             "Invalid value 2.0 for configuration min.cleanable.dirty.ratio: Value must be no "
             "more than 1"),
            (("cleanup.policy", SET, "compact, shred"), E.invalid_config,
             "Invalid value shred for configuration cleanup.policy: String must be one of: "
             "compact, delete"),
            (("compression.type", SET, "brotli"), E.invalid_config,
             "Invalid value brotli for configuration compression.type: String must be one of: "
             "uncompressed, zstd, lz4, snappy, gzip, producer"),
            (("preallocate", SET, "yes"), E.invalid_config,
             "Invalid value yes for configuration preallocate: Expected value to be either "
             "true or false"),
            (("message.format.version", SET, "2.9"), E.invalid_config,
             "Invalid value 2.9 for configuration message.format.version: Version 2.9 is not a "
             "valid version"),
            (("retention.ms", APPEND, "5"), E.invalid_config,
             "Can't APPEND to key retention.ms because its type is not LIST."),
            (("retention.ms", SET, None), E.invalid_request,
             "Null value not supported for : retention.ms"),
            (("retention.ms", 9, "5"), E.invalid_request, "Unknown operations type 9"),
        ]
        for op, error, message in refusals:
            assert one(c, TOPIC, "orders", op) == (error, message), op
        assert one(c, TOPIC, "orders", ("min.compaction.lag.ms", SET, "10"),
                   ("max.compaction.lag.ms", SET, "5")) == (
            E.invalid_config, "conflict topic config setting min.compaction.lag.ms (10) > "
                              "max.compaction.lag.ms (5)")
        assert one(c, TOPIC, "orders", ("retention.ms", SET, "1"),
                   ("retention.ms", DELETE, None)) == (
            E.invalid_request, "Error due to duplicate config keys")
        assert dynamic(c, "orders") == {}  # nothing refused was kept

        # Resource-level checks: a bad config is reported before an unknown topic.
        assert one(c, TOPIC, "ghost", ("retention.ms", SET, "1000")) == (
            E.unknown_topic_or_partition, "The topic 'ghost' does not exist.")
        assert one(c, TOPIC, "ghost", ("retention.ms", SET, "x"))[0] == E.invalid_config
        assert one(c, TOPIC, "", ("retention.ms", SET, "1")) == (
            E.invalid_request, "Default topic resources are not allowed.")
        assert one(c, TOPIC, "bad name", ("retention.ms", SET, "1"))[0] == \
            E.invalid_topic_exception
        assert one(c, 99, "x", ("a", SET, "1")) == (E.invalid_request, "Unknown resource type 99")
        twice = incremental(c, (TOPIC, "orders", [("retention.ms", SET, "1")]),
                            (BROKER, "1", [("log.retention.ms", SET, "1")]),
                            (TOPIC, "orders", [("retention.ms", SET, "2")]))
        assert twice == [(E.invalid_request, "Each resource must appear at most once."),
                         (E.none, None),
                         (E.invalid_request, "Each resource must appear at most once.")]
        assert one(c, BROKER, "1", ("log.retention.ms", DELETE, None)) == (E.none, None)

        # validate_only runs every check and changes nothing.
        assert one(c, TOPIC, "orders", ("retention.ms", SET, "60000"),
                   validate_only=True) == (E.none, None)
        assert one(c, TOPIC, "orders", ("retention.ms", SET, "x"),
                   validate_only=True)[0] == E.invalid_config
        assert dynamic(c, "orders") == {}

        # SET (values shown as Kafka parses them), APPEND/SUBTRACT, DELETE.
        assert one(c, TOPIC, "orders", ("retention.ms", SET, " 60000 "),
                   ("cleanup.policy", APPEND, "compact"),
                   ("unclean.leader.election.enable", SET, "TRUE")) == (E.none, None)
        assert dynamic(c, "orders") == {"retention.ms": "60000",
                                        "cleanup.policy": "delete,compact",
                                        "unclean.leader.election.enable": "true"}
        entry = describe(c, TOPIC, "orders")["retention.ms"]
        assert synonyms(entry) == [("retention.ms", "60000", DYNAMIC_TOPIC),
                                   ("log.retention.ms", "604800000", DEFAULT)]
        assert one(c, TOPIC, "orders", ("cleanup.policy", SUBTRACT, "delete"),
                   ("retention.ms", DELETE, None)) == (E.none, None)
        assert dynamic(c, "orders") == {"cleanup.policy": "compact",
                                        "unclean.leader.election.enable": "true"}
        entry = describe(c, TOPIC, "orders")["retention.ms"]
        assert (entry.value, entry.config_source) == ("604800000", DEFAULT)
    stop_ok(proc)


def test_alter_configs_replaces_the_whole_set_and_broker_configs(serve: Serve) -> None:
    """``ConfigurationControlManager#legacyAlterConfigResource`` (what the request does not name
    is deleted), ``DynamicBrokerConfig#validate`` through ``ConfigAdminManager`` (INVALID_REQUEST
    for what a broker refuses), ``RuntimeLoggerManager``, and ``ConfigHelper#describeConfigs``
    for a topic under dynamic broker configs (sources and synonyms, most specific first) and for
    the two broker resources (this node's, the cluster default "")."""
    proc = serve()
    with WireClient(proc.port) as c:
        create_topic(c, "orders", 1, configs={"retention.ms": "1000", "segment.bytes": "5000"})
        assert dynamic(c, "orders") == {"retention.ms": "1000", "segment.bytes": "5000"}
        assert legacy(c, TOPIC, "orders", {"max.message.bytes": "2000"}) == (E.none, None)
        assert dynamic(c, "orders") == {"max.message.bytes": "2000"}
        assert legacy(c, TOPIC, "orders", {"max.message.bytes": None}) == (
            E.invalid_request, "Null value not supported for : max.message.bytes")
        assert legacy(c, BROKER_LOGGER, "1", {"kafka": "DEBUG"}) == (
            E.invalid_request, "Unknown resource type 8")

        # Broker configs: this node's resource, then the cluster default.
        assert one(c, BROKER, "1", ("log.segment.bytes", SET, "3000")) == (E.none, None)
        assert one(c, BROKER, "", ("log.segment.bytes", SET, "4000"),
                   ("log.retention.bytes", SET, "123456")) == (E.none, None)
        topic = describe(c, TOPIC, "orders")
        assert (topic["segment.bytes"].value, topic["segment.bytes"].config_source) == (
            "3000", DYNAMIC_BROKER)
        assert synonyms(topic["segment.bytes"]) == [
            ("log.segment.bytes", "3000", DYNAMIC_BROKER),
            ("log.segment.bytes", "4000", DYNAMIC_DEFAULT),
            ("log.segment.bytes", "1073741824", DEFAULT)]
        assert (topic["retention.bytes"].value, topic["retention.bytes"].config_source) == (
            "123456", DYNAMIC_DEFAULT)
        node = describe(c, BROKER, "1")
        assert synonyms(node["log.segment.bytes"]) == [
            ("log.segment.bytes", "3000", DYNAMIC_BROKER),
            ("log.segment.bytes", "4000", DYNAMIC_DEFAULT),
            ("log.segment.bytes", "1073741824", STATIC)]
        assert node["log.retention.bytes"].config_source == DYNAMIC_DEFAULT
        cluster = describe(c, BROKER, "")
        assert {n: (e.value, e.config_source, synonyms(e)) for n, e in cluster.items()} == {
            "log.segment.bytes": ("4000", DYNAMIC_DEFAULT,
                                  [("log.segment.bytes", "4000", DYNAMIC_DEFAULT)]),
            "log.retention.bytes": ("123456", DYNAMIC_DEFAULT,
                                    [("log.retention.bytes", "123456", DYNAMIC_DEFAULT)])}
        # AlterConfigs on the cluster default replaces its whole set too.
        assert legacy(c, BROKER, "", {"log.retention.bytes": "99"}) == (E.none, None)
        assert set(describe(c, BROKER, "")) == {"log.retention.bytes"}

        refusals: list[tuple[str, Op, ErrorCode, str | None]] = [
            ("1", ("broker.id", SET, "7"), E.invalid_request,
             "Cannot update these configs dynamically: Set(broker.id)"),
            ("1", ("log.segment.bytes", SET, "abc"), E.invalid_request,
             "Invalid value abc for configuration log.segment.bytes: Not a number of type INT"),
            ("1", ("log.segment.bytes", SET, "13"), E.invalid_request,
             "Invalid value 13 for configuration log.segment.bytes: Value must be at least 14"),
            ("1", ("log.retention.ms", APPEND, "5"), E.invalid_config,
             "Config value append is not allowed for config key: log.retention.ms"),
            ("1", ("no.such.config", APPEND, "5"), E.unknown_server_error, None),
            ("", ("listeners", SET, "PLAINTEXT://:1"), E.invalid_request,
             "Cannot update these configs at default cluster level, broker id must be "
             "specified: Set(listeners)"),
            ("2", ("log.retention.ms", SET, "5"), E.invalid_request,
             "Unexpected broker id, expected 1, but received 2"),
            ("one", ("log.retention.ms", SET, "5"), E.invalid_request,
             "Node id must be an integer, but it is: one"),
        ]
        for name, op, error, message in refusals:
            assert one(c, BROKER, name, op) == (error, message), (name, op)
        # A custom config is kept (DynamicConfig.Broker allows custom props); APPEND builds on
        # the broker default of a LIST config.
        assert one(c, BROKER, "1", ("my.plugin.setting", SET, "on"),
                   ("log.cleanup.policy", APPEND, "compact")) == (E.none, None)
        node = describe(c, BROKER, "1")
        assert (node["my.plugin.setting"].value, node["my.plugin.setting"].config_source) == (
            "on", DYNAMIC_BROKER)
        assert node["log.cleanup.policy"].value == "delete,compact"
        assert describe(c, TOPIC, "orders")["cleanup.policy"].config_source == DYNAMIC_BROKER

        assert one(c, BROKER_LOGGER, "1", ("kafka.server", SET, "DEBUG")) == (
            E.invalid_config, "Logger kafka.server does not exist!")
        assert one(c, BROKER_LOGGER, "1", ("root", APPEND, "DEBUG")) == (
            E.invalid_request, "APPEND operation is not allowed for the BROKER_LOGGER resource")
    stop_ok(proc)


def test_create_topics_validates_configs_as_alter_configs(serve: Serve) -> None:
    """``ReplicationControlManager#createTopic``: the configs of a new topic go through
    ``ConfigurationControlManager#incrementalAlterConfig`` (SET), with the same messages."""
    proc = serve()
    with WireClient(proc.port) as c:
        bad = create_topic(c, "t1", configs={"retention.ms": "soon"})
        assert (bad.error_code, bad.error_message) == (
            E.invalid_config,
            "Invalid value soon for configuration retention.ms: Not a number of type LONG")
        bad = create_topic(c, "t1", configs={"min.compaction.lag.ms": "100",
                                             "max.compaction.lag.ms": "10"})
        assert bad.error_code == E.invalid_config
        bad = create_topic(c, "t1", configs={"max.message.bytes": None})  # type: ignore[dict-item]
        assert (bad.error_code, bad.error_message) == (
            E.invalid_config, "Null value not supported for topic configs: max.message.bytes")
        ok = create_topic(c, "t1", configs={"cleanup.policy": "compact, delete"})
        assert ok.error_code == E.none
        shown = {x.name: x.value for x in ok.configs}
        assert shown["cleanup.policy"] == "compact,delete"
    stop_ok(proc)


def _keyed(keys: list[bytes | None], *, compression: int = 0) -> bytes:
    records = [Record(offset=i, timestamp=T0 + i, key=k, value=b"v%d" % i)
               for i, k in enumerate(keys)]
    return build_batch(records, base_offset=0, compression_id=compression)


def _log_files(proc: ServeProcess, partition: str) -> list[str]:
    return sorted(p.name for p in (proc.log_dir / partition).glob("*.log"))


def test_changes_take_effect_on_the_next_append(serve: Serve) -> None:
    """``UnifiedLog#updateConfig`` / ``LogManager#reconfigureDefaultLogConfig``: a new
    segment.bytes or segment.ms (per topic or broker-wide) rolls the next append
    (``LogSegment#shouldRoll``); a compacted topic refuses a batch with keyless records
    (``LogValidator#validateKey``: INVALID_RECORD, one RecordError per keyless record, Produce
    v8+), and DeleteRecords there is POLICY_VIOLATION; back to delete, both are accepted."""
    proc = serve()
    with WireClient(proc.port) as c:
        create_topic(c, "live", 1)
        create_topic(c, "wide", 1)
        for _ in range(3):
            assert produce(c, "live", batch(5)).error_code == E.none
        assert _log_files(proc, "live-0") == ["00000000000000000000.log"]
        size = len(batch(5))
        assert one(c, TOPIC, "live", ("segment.bytes", SET, str(size + 1))) == (E.none, None)
        for _ in range(2):
            assert produce(c, "live", batch(5)).error_code == E.none
        assert _log_files(proc, "live-0") == ["00000000000000000000.log",
                                              "00000000000000000015.log",
                                              "00000000000000000020.log"]
        assert produce(c, "live", batch(6)).error_code == E.record_list_too_large
        # segment.ms: a batch whose timestamp is past the segment's first by more rolls it.
        assert one(c, TOPIC, "live", ("segment.bytes", DELETE, None),
                   ("segment.ms", SET, "1000")) == (E.none, None)
        assert produce(c, "live", batch(1, ts=T0 + 500)).error_code == E.none
        assert produce(c, "live", batch(1, ts=T0 + 5000)).error_code == E.none
        assert _log_files(proc, "live-0")[-1] == "00000000000000000026.log"
        # A broker-wide change reaches a topic without its own override.
        assert produce(c, "wide", batch(5)).error_code == E.none
        assert one(c, BROKER, "", ("log.segment.bytes", SET, str(size + 1))) == (E.none, None)
        assert produce(c, "wide", batch(5)).error_code == E.none
        assert _log_files(proc, "wide-0") == ["00000000000000000000.log",
                                              "00000000000000000005.log"]

        # Compaction: keyless records refused, keyed ones accepted.
        assert one(c, TOPIC, "live", ("cleanup.policy", SET, "compact")) == (E.none, None)
        end = produce(c, "live", _keyed([b"k"])).base_offset + 1
        refused = produce(c, "live", _keyed([b"a", None, b"c", None], compression=1))
        message = "Compacted topic cannot accept message without key in topic partition live-0"
        assert (refused.error_code, refused.base_offset, refused.log_start_offset) == (
            E.invalid_record, -1, 0)
        assert [(e.batch_index, e.batch_index_error_message)
                for e in refused.record_errors] == [(1, message), (3, message)]
        assert refused.error_message == (
            "One or more records have been rejected due to 2 record errors in total, and only "
            f"showing the first three errors at most: [RecordError(batchIndex=1, "
            f"message='{message}'), RecordError(batchIndex=3, message='{message}')]")
        old = produce(c, "live", _keyed([None]), version=7)
        assert old.error_code == E.invalid_record
        records = entity(DELETE_RECORDS, 2, "DeleteRecordsPartition", partition_index=0,
                         offset=1)
        topic = entity(DELETE_RECORDS, 2, "DeleteRecordsTopic", name="live",
                       partitions=(records,))
        deleted = c.call(request(DELETE_RECORDS, 2, topics=(topic,),
                                 timeout=datetime.timedelta(seconds=5)))
        assert deleted.topics[0].partitions[0].error_code == E.policy_violation
        assert one(c, TOPIC, "live", ("cleanup.policy", DELETE, None)) == (E.none, None)
        accepted = produce(c, "live", _keyed([None]))
        assert (accepted.error_code, accepted.base_offset) == (E.none, end)
        deleted = c.call(request(DELETE_RECORDS, 2, topics=(topic,),
                                 timeout=datetime.timedelta(seconds=5)))
        assert deleted.topics[0].partitions[0].error_code == E.none
    stop_ok(proc)
    verify_clean(proc.log_dir)
