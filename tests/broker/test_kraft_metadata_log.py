"""``kafkatx serve`` writes a KRaft metadata log (``__cluster_metadata-0``) like a Kafka 4
combined node, and loads its topics and configs from it at restart."""

from __future__ import annotations

import csv
import json
import logging
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kafkatx.broker.protocol.server import Broker
from kafkatx.formats.checkpoints import (
    read_leader_epoch_checkpoint,
    read_meta_properties,
    read_partition_metadata,
    uuid_to_bytes,
)
from kafkatx.formats.metadata_records import parse_snapshot_name
from kafkatx.formats.quorum_state import read_quorum_state
from kafkatx.formats.record_batch import ControlType
from kafkatx.storage.metadata_log import read_entries
from tests.broker.inprocess import run_broker
from tests.broker.kafkatx_cli import run_cli
from tests.broker.serve_process import ServeProcess

Serve = Callable[..., ServeProcess]
TIMEOUT_S = 10.0
SCHEMA_TABLE = Path(__file__).parent.parent / "formats" / "data" / "kraft_schema_fields.tsv"
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"  # Uuid.METADATA_TOPIC_ID


@pytest.fixture(autouse=True)
def _quiet_client_loggers() -> Iterator[None]:
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    yield


def _cluster(log_dir: Path) -> dict:
    out = run_cli("cluster", "--format", "json", str(log_dir))
    assert out.returncode == 0, out.stderr.decode()
    [view] = json.loads(out.stdout)
    return view


def _topic(view: dict, name: str) -> dict:
    return next(t for t in view["topics"] if t["topic"] == name)


def _schema_fields() -> dict[tuple[str, int], set[str]]:
    rows = [line for line in SCHEMA_TABLE.read_text().splitlines() if not line.startswith("#")]
    out: dict[tuple[str, int], set[str]] = {}
    for r in csv.DictReader(rows, delimiter="\t"):
        fields = out.setdefault((r["record"], int(r["version"])), set())
        if r["field"] != "-" and "." not in r["field"]:
            fields.add(r["field"])
    return out


def _camel(key: str) -> str:
    return "".join(p.capitalize() for p in key.split("_")).replace("Kraft", "KRaft")


def _kafka_uuid(client_uuid: object) -> str:
    """librdkafka prints a Uuid in standard base64; Kafka's ``Uuid#toString`` is URL-safe."""
    return str(client_uuid).replace("/", "_").replace("+", "-")


def _transactions(bootstrap: str, transactional_id: str, topic: str) -> None:
    import confluent_kafka as ck

    producer = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                            "linger.ms": 5})
    producer.init_transactions(TIMEOUT_S)
    producer.begin_transaction()
    producer.produce(topic, key=b"k", value=b"v", partition=0)
    producer.commit_transaction(TIMEOUT_S)


def test_configs_topic_ids_and_producer_ids_survive_a_restart(serve: Serve, tmp_path: Path
                                                              ) -> None:
    """librdkafka creates a topic with configs, alters them and runs a transaction; after a
    restart DescribeConfigs, the topic ids and the next producer-id block come from the
    metadata log (``ReplicationControlManager#createTopic``, ``ConfigurationControlManager``
    ``#incrementalAlterConfigResource``, ``ProducerIdControlManager#generateNextProducerId``; a
    restarted KRaft broker's ``BrokerMetadataPublisher`` hands ``LogManager`` the image)."""
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ConfigSource,
        NewTopic,
        ResourceType,
    )

    log_dir = tmp_path / "logdir"
    proc = serve(log_dir=log_dir)
    admin = AdminClient({"bootstrap.servers": proc.bootstrap})
    admin.create_topics([NewTopic("inventory", 2, config={
        "cleanup.policy": "compact", "retention.ms": "3600000"})])["inventory"].result(TIMEOUT_S)
    admin.create_topics([NewTopic("scratch", 1)])["scratch"].result(TIMEOUT_S)
    resource = ConfigResource(ResourceType.TOPIC, "inventory", incremental_configs=[
        ConfigEntry("min.cleanable.dirty.ratio", "0.1",
                    incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE)])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(TIMEOUT_S)
    admin.delete_topics(["scratch"])["scratch"].result(TIMEOUT_S)
    _transactions(proc.bootstrap, "stocker", "inventory")
    ids = {n: _kafka_uuid(d.topic_id) for n, d in ((n, f.result(TIMEOUT_S)) for n, f in
           admin.describe_topics(ck.TopicCollection(["inventory"])).items())}
    assert proc.stop() == 0

    view = _cluster(log_dir)
    inventory = _topic(view, "inventory")
    assert inventory["topic_id"] == ids["inventory"]
    assert inventory["configs"] == {"cleanup.policy": "compact",
                                    "min.cleanable.dirty.ratio": "0.1"}
    assert inventory["partition_count"] == 2
    assert "scratch" not in {t["topic"] for t in view["topics"]}
    assert [e["event"] for e in view["topic_history"] if e["topic"] == "scratch"] == [
        "created", "deleted"]
    assert _topic(view, "__transaction_state")["partition_count"] == 50
    assert [(b["first_producer_id"], b["last_producer_id"], b["broker_id"])
            for b in view["producer_id_blocks"]] == [(0, 999, 1)]
    assert view["metadata_version"] == {"level": 25, "release": "4.0-IV3"}
    assert [b["broker_id"] for b in view["brokers"]] == [1]
    for name, part in ((name, p) for name in ("inventory",) for p in range(2)):
        meta = read_partition_metadata((log_dir / f"{name}-{part}" / "partition.metadata")
                                       .read_bytes())
        assert meta.topic_id == ids[name]

    proc = serve(log_dir=log_dir)
    admin = AdminClient({"bootstrap.servers": proc.bootstrap})
    [configs] = [f.result(TIMEOUT_S) for f in admin.describe_configs(
        [ConfigResource(ResourceType.TOPIC, "inventory")]).values()]
    assert configs["cleanup.policy"].value == "compact"
    assert configs["cleanup.policy"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["min.cleanable.dirty.ratio"].value == "0.1"
    assert configs["retention.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    after = admin.describe_topics(ck.TopicCollection(["inventory"]))["inventory"].result(
        TIMEOUT_S)
    assert _kafka_uuid(after.topic_id) == ids["inventory"]
    assert "scratch" not in admin.list_topics(timeout=TIMEOUT_S).topics
    _transactions(proc.bootstrap, "restocker", "inventory")
    assert proc.stop() == 0
    view = _cluster(log_dir)
    assert [(b["first_producer_id"], b["last_producer_id"]) for b in
            view["producer_id_blocks"]] == [(0, 999), (1000, 1999)]
    assert view["next_producer_id"] == 2000


def test_written_files_are_kafka_shaped(serve: Serve, tmp_path: Path) -> None:
    """Every file of ``__cluster_metadata-0`` read back with kafkatx's parsers as Kafka lays
    them out (``KafkaMetadataLog#apply``: partition.metadata with ``Uuid.METADATA_TOPIC_ID``;
    ``FileQuorumStateStore``; ``LeaderEpochFileCache``; ``Snapshots``/``RecordsSnapshotWriter``:
    header first, footer last; ``MetaProperties`` v1), and every metadata record's fields are
    those of its version in the table written from Kafka's JSON schemas."""
    pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    log_dir = tmp_path / "logdir"
    for round_ in range(2):
        proc = serve("--transaction-version", str(round_ + 1), log_dir=log_dir)
        admin = AdminClient({"bootstrap.servers": proc.bootstrap})
        admin.create_topics([NewTopic(f"t{round_}", 1, config={"retention.ms": "1000000"})])[
            f"t{round_}"].result(TIMEOUT_S)
        _transactions(proc.bootstrap, f"writer-{round_}", f"t{round_}")
        assert proc.stop() == 0

    mdir = log_dir / "__cluster_metadata-0"
    assert read_partition_metadata((mdir / "partition.metadata").read_bytes()).topic_id == \
        METADATA_TOPIC_ID
    meta = read_meta_properties((log_dir / "meta.properties").read_bytes())
    assert meta.version == 1 and meta.node_id == 1 and meta.cluster_id and meta.directory_id
    state = read_quorum_state((mdir / "quorum-state").read_bytes())
    assert (state.leader_id, state.leader_epoch, state.voted_id) == (1, 2, 1)
    epochs = read_leader_epoch_checkpoint((mdir / "leader-epoch-checkpoint").read_bytes())
    assert [e.epoch for e in epochs.entries] == [1, 2] and epochs.entries[0].start_offset == 0

    table = _schema_fields()
    problems: list[str] = []
    log = [e for seg in sorted(mdir.glob("*.log")) for e in read_entries(seg, problems)]
    assert [e.offset for e in log] == list(range(len(log)))
    leader_changes = [e for e in log if e.control_type == ControlType.LEADER_CHANGE]
    assert [(e.leader_epoch, e.control["leader_id"]) for e in leader_changes] == [(1, 1), (2, 1)]
    snapshots = sorted(p for p in mdir.iterdir() if parse_snapshot_name(p.name))
    assert snapshots[0].name == "00000000000000000000-0000000000.checkpoint"
    assert parse_snapshot_name(snapshots[-1].name)[0].end_offset == len(log)
    records = [e.record for e in log if e.record is not None]
    for snap in snapshots:
        entries = list(read_entries(snap, problems))
        assert entries[0].control_type == ControlType.SNAPSHOT_HEADER
        assert entries[-1].control_type == ControlType.SNAPSHOT_FOOTER
        records += [e.record for e in entries if e.record is not None]
    assert not problems
    for record in records:
        assert record.data is not None
        # read exactly (every byte consumed) at a (record, version) Kafka has, each of its
        # fields there (the decoded dict also holds the defaults of later versions' fields)
        assert table[(record.type, record.version)] <= {_camel(k) for k in record.data}, \
            record.type
    types = {r.type for r in records}
    assert {"FeatureLevelRecord", "RegisterBrokerRecord", "BrokerRegistrationChangeRecord",
            "TopicRecord", "PartitionRecord", "ConfigRecord", "ProducerIdsRecord",
            "BeginTransactionRecord", "EndTransactionRecord"} <= types
    view = _cluster(log_dir)
    assert not view["problems"] and not view["replay_problems"]
    assert [(c["feature"], c["level"]) for c in view["feature_history"]
            if c["feature"] == "transaction.version" and c["metadata_offset"] is not None] == [
        ("transaction.version", 1), ("transaction.version", 2)]
    for name in ("t0", "t1"):
        dir_id = read_partition_metadata((log_dir / f"{name}-0" / "partition.metadata")
                                         .read_bytes()).topic_id
        assert dir_id == _topic(view, name)["topic_id"]
    # transaction.version 1 -> 2 in the middle of the log: the commits of both runs (librdkafka
    # keeps the producer's epoch) are judged by the level of their time, and fit it
    out = run_cli("inspect", "--format", "json", str(log_dir))
    assert out.returncode == 0, out.stderr.decode()
    assert "transaction_version_mismatch" not in {f["kind"] for f in
                                                   json.loads(out.stdout)["findings"]}


def test_inspect_shows_the_cluster_section_of_a_served_log_dir(serve: Serve,
                                                               tmp_path: Path) -> None:
    """``kafkatx inspect`` on a serve-written log dir joins its partitions with the metadata
    log (``TopicsImage`` topic ids against ``partition.metadata``, ``ProducerIdsImage``): the
    cluster section is there and the joins find nothing wrong."""
    pytest.importorskip("confluent_kafka")
    log_dir = tmp_path / "logdir"
    proc = serve(log_dir=log_dir)
    _transactions(proc.bootstrap, "writer", "orders")
    assert proc.stop() == 0
    out = run_cli("inspect", "--format", "json", str(log_dir))
    assert out.returncode == 0, out.stderr.decode()
    result = json.loads(out.stdout)
    [cluster] = result["cluster"]
    assert {t["topic"] for t in cluster["topics"]} == {"orders", "__transaction_state"}
    kinds = {f["kind"] for f in result["findings"]}
    assert not kinds & {"topic_id_mismatch", "topic_not_in_metadata", "leader_epoch_mismatch",
                        "producer_id_unallocated", "transaction_version_mismatch"}
    text = run_cli("inspect", str(log_dir))
    assert "__cluster_metadata-0" in text.stdout.decode() + text.stderr.decode()


def _in_process_topics(log_dir: Path, **config: object) -> dict[str, tuple[str, dict, int]]:
    async def body(broker: Broker) -> dict[str, tuple[str, dict, int]]:
        return {n: (str(t.topic_id), dict(t.configs), t.num_partitions)
                for n, t in broker.logs.topics.items()}
    return run_broker(log_dir, body, **config)


def test_snapshots_every_n_bytes_and_a_restart_from_snapshot_plus_tail(tmp_path: Path) -> None:
    """``SnapshotGenerator`` writes a snapshot once ``metadata.log.max.record.bytes.between
    .snapshots`` bytes were appended; at a restart ``MetadataLoader`` loads the newest snapshot
    and the records after it, so removing the newest snapshot (one not written yet) gives the
    same topics from an older snapshot plus a longer tail."""
    log_dir = tmp_path / "logdir"

    async def create(broker: Broker) -> None:
        for n in range(12):
            broker.logs.create_topic(f"topic-{n}", 2, {"retention.ms": str(1000 * (n + 1))})
        broker.logs.delete_topic("topic-3")

    run_broker(log_dir, create, metadata_snapshot_bytes=600)
    mdir = log_dir / "__cluster_metadata-0"
    snapshots = sorted(p for p in mdir.iterdir() if parse_snapshot_name(p.name))
    assert len(snapshots) >= 4  # the bootstrap one, several by size, one at the shutdown
    topics = _in_process_topics(log_dir)
    assert len(topics) == 11 and "topic-3" not in topics
    assert topics["topic-7"][1:] == ({"retention.ms": "8000"}, 2)
    newest = max(snapshots, key=lambda p: parse_snapshot_name(p.name)[0].end_offset)
    newest.unlink()
    assert _in_process_topics(log_dir) == topics


def test_producer_id_blocks_continue_after_the_last_allocated_block(tmp_path: Path) -> None:
    """``ProducerIdControlManager``: a restarted broker gets the block after the last one the
    metadata log allocated (``ProducerIdsRecord.NextProducerId``), even when no partition holds
    an id of the earlier block (the producer never wrote)."""
    log_dir = tmp_path / "logdir"

    async def allocate(broker: Broker) -> list[int]:
        return [broker.producer_ids.generate() for _ in range(3)]

    assert run_broker(log_dir, allocate) == [0, 1, 2]
    assert run_broker(log_dir, allocate) == [1000, 1001, 1002]
    view = _cluster(log_dir)
    assert [(b["first_producer_id"], b["last_producer_id"]) for b in
            view["producer_id_blocks"]] == [(0, 999), (1000, 1999)]


def test_a_log_dir_from_before_the_metadata_log_is_adopted(tmp_path: Path) -> None:
    """A log dir serve wrote before it kept a metadata log (here a served fixture without its
    ``__cluster_metadata-0``): the topics its directories hold are written to a new metadata log
    with the ids of their ``partition.metadata`` (``Partition#checkOrSetTopicId`` keeps a log's
    id), once; a second start loads them from the log."""
    log_dir = tmp_path / "logdir"
    shutil.copytree(Path(__file__).parents[2] / "fixtures" / "served" / "hanging", log_dir)
    shutil.rmtree(log_dir / "__cluster_metadata-0")
    dirs = {p.name.rsplit("-", 1)[0]: read_partition_metadata(
        (p / "partition.metadata").read_bytes()).topic_id
        for p in log_dir.iterdir() if p.is_dir()}
    first = _in_process_topics(log_dir)
    assert {n: first[n][0] for n in dirs} == {
        n: str(uuid.UUID(bytes=uuid_to_bytes(i))) for n, i in dirs.items()}
    assert first["__transaction_state"][1]["cleanup.policy"] == "compact"
    assert _in_process_topics(log_dir) == first
    view = _cluster(log_dir)
    assert {t["topic"]: t["topic_id"] for t in view["topics"]} == dirs
    assert sorted(e["topic"] for e in view["topic_history"]) == sorted(dirs)


def test_a_deleted_topics_directory_is_a_stray_log(tmp_path: Path) -> None:
    """Serving a copy of the Kafka 4 fixture: orders-0 holds the data of the orders that was
    deleted and re-created (another topic id than the image's): ``LogManager
    #isStrayKraftReplica`` makes it a stray log, renamed ``orders-0.<uuid>-stray`` and kept
    (``UnifiedLog#logStrayDirName``); the current orders gets a new, empty orders-0
    (``Partition#createLogIfNotExists``) with its own id."""
    log_dir = tmp_path / "node1"
    shutil.copytree(Path(__file__).parents[2] / "fixtures" / "kraft", log_dir)
    old_id = read_partition_metadata((log_dir / "orders-0" / "partition.metadata")
                                     .read_bytes()).topic_id
    topics = _in_process_topics(log_dir)
    [stray] = [p for p in log_dir.iterdir() if p.name.endswith("-stray")]
    assert stray.name.startswith("orders-0.")
    assert read_partition_metadata((stray / "partition.metadata").read_bytes()).topic_id == \
        old_id
    new_id = read_partition_metadata((log_dir / "orders-0" / "partition.metadata")
                                     .read_bytes()).topic_id
    assert new_id != old_id and new_id == _topic(_cluster(log_dir), "orders")["topic_id"]
    assert str(uuid.UUID(bytes=uuid_to_bytes(new_id))) == topics["orders"][0]
    assert (log_dir / "orders-0" / "00000000000000000000.log").stat().st_size == 0


def _tv_records(log_dir: Path) -> list[int]:
    """The transaction.version levels the metadata log's records finalized, in order."""
    return [c["level"] for c in _cluster(log_dir)["feature_history"]
            if c["feature"] == "transaction.version" and c["metadata_offset"] is not None]


def test_the_finalized_transaction_version_is_kept_across_restarts_and_from_a_capture(
        serve: Serve, tmp_path: Path) -> None:
    """Finalized features live in the metadata log (``FeatureControlManager``): a restart
    without ``--transaction-version`` keeps the level, only an explicit one changes it (as
    ``kafka-features.sh downgrade`` would), and ``serve --from`` a Kafka 4 capture finalized at
    transaction.version 2 runs at 2 without writing a change into the copy."""
    log_dir = tmp_path / "logdir"
    assert serve("--transaction-version", "2", log_dir=log_dir).stop() == 0
    assert serve(log_dir=log_dir).stop() == 0
    assert _tv_records(log_dir) == [2]
    assert _cluster(log_dir)["features"]["transaction.version"] == 2
    assert serve("--transaction-version", "0", log_dir=log_dir).stop() == 0
    assert _tv_records(log_dir) == [2, 0]

    capture = Path(__file__).parents[2] / "fixtures" / "kraft"
    copy = tmp_path / "live"
    before = _tv_records(capture)
    assert serve("--from", str(capture), log_dir=copy).stop() == 0
    assert _tv_records(copy) == before and before[-1] == 2
