"""Broker settings from the KRaft metadata log's ConfigRecords feeding the analysis:
``transaction.max.timeout.ms`` (the find-hanging threshold's default) and
``transaction.state.log.num.partitions`` (the coordinator's partition count)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.generate_kraft import MetadataLog, config
from kafkatx.analysis.coordinator import TOPIC as TXN_TOPIC
from kafkatx.analysis.partition_count import METADATA
from tests.analysis.logdirs import T0
from tests.analysis.test_timeline import S, Scenario, of_kind, v

BROKER = 4  # ConfigResource.Type.BROKER
MINUTE = 60_000


@pytest.fixture
def sc(tmp_path: Path) -> Scenario:
    return Scenario(tmp_path / "broker")


def _metadata(sc: Scenario, *records: tuple) -> None:
    log = MetadataLog(sc.root / "__cluster_metadata-0")
    log.leader_change(T0, 1)
    log.records(T0 + 1_000, *records)
    log.writer.close()


def _idle_open_transaction(sc: Scenario) -> None:
    """One open transaction in p-0 whose last write is 20 minutes before the log's newest
    timestamp (a later non-transactional write), with nothing in __transaction_state."""
    sc.part("p", 0).data(pid=4001, epoch=0, n=2, txn=True, at=T0 + 1_000)
    sc.part("p", 0).data(n=1, at=T0 + 1_000 + 20 * MINUTE)


def test_transaction_max_timeout_from_the_metadata_log_is_the_default_threshold(
        sc: Scenario) -> None:
    """``TransactionsCommand`` find-hanging judges a transaction once ``now - lastTimestamp >
    maxTransactionTimeoutMs``; the cluster's ``transaction.max.timeout.ms``
    (``TransactionStateManager#validateTransactionTimeoutMs`` refuses longer timeouts), from a
    BROKER ConfigRecord of the metadata log, is that threshold when none is given: 20 minutes
    idle is pinned under find-hanging's 15-minute default, not under a 1-hour broker maximum,
    and pinned again when --max-transaction-timeout-ms is given."""
    _idle_open_transaction(sc)
    pinned = sc.inspect()
    (f,) = of_kind(pinned.findings, "lso_pinned")
    assert "--max-transaction-timeout-ms" in f.message

    _metadata(sc, config(BROKER, "", "transaction.max.timeout.ms", "3600000"))
    relaxed = sc.inspect()
    assert of_kind(relaxed.findings, "lso_pinned") == []
    assert len(of_kind(relaxed.findings, "open_transaction")) == 1

    given = sc.inspect(max_transaction_timeout_ms=15 * MINUTE)
    assert len(of_kind(given.findings, "lso_pinned")) == 1


def test_a_shorter_broker_maximum_pins_sooner_and_says_where_it_came_from(sc: Scenario) -> None:
    """A node's own ConfigRecord (resource "1") wins over the cluster default ("") as
    ``DynamicBrokerConfig`` layers them: 5 minutes pins a transaction idle for 20 (and the
    finding names the metadata log as the threshold's source)."""
    _idle_open_transaction(sc)
    _metadata(sc, config(BROKER, "", "transaction.max.timeout.ms", "3600000"),
              config(BROKER, "1", "transaction.max.timeout.ms", "300000"))
    (f,) = of_kind(sc.inspect().findings, "lso_pinned")
    assert "transaction.max.timeout.ms (broker 1 config in the metadata log)" in f.message


def test_transaction_state_partitions_from_a_broker_config(sc: Scenario) -> None:
    """Without the topic's PartitionRecords in the metadata log (a copy of a node whose log
    lost them to an older snapshot than the evidence holds), a
    ``transaction.state.log.num.partitions`` ConfigRecord gives the count
    ``TransactionStateManager#partitionFor`` hashes onto."""
    sc.num_partitions = 20
    sc.coordinator("one-id", [v(S.EMPTY, 7000, 0)])
    sc.part(TXN_TOPIC, 17)
    _metadata(sc, config(BROKER, "", "transaction.state.log.num.partitions", "20"))
    result = sc.inspect()
    assert result.coordinator is not None
    count = result.coordinator.partition_count
    assert count is not None and (count.count, count.source) == (20, METADATA)
    assert not of_kind(result.findings, "wrong_coordinator_partition")


def test_the_broker_maximum_read_from_a_snapshot_of_an_aged_metadata_log(sc: Scenario) -> None:
    """An aged metadata log: its segments deleted below a snapshot
    (``KafkaMetadataLog#deleteBeforeSnapshot``), the ConfigRecord only in the
    ``.checkpoint`` (``ConfigurationImage#write``): ``MetadataLoader`` reads it from there."""
    from kafkatx.formats.metadata_records import SnapshotId, build_snapshot, snapshot_file_name

    _idle_open_transaction(sc)
    mdir = sc.root / "__cluster_metadata-0"
    mdir.mkdir(parents=True)
    (mdir / snapshot_file_name(SnapshotId(40, 3))).write_bytes(build_snapshot(
        [[config(BROKER, "", "transaction.max.timeout.ms", "3600000")]], epoch=3,
        last_contained_log_timestamp=T0, timestamp=T0))
    result = sc.inspect()
    assert of_kind(result.findings, "lso_pinned") == []
    assert len(of_kind(result.findings, "open_transaction")) == 1
