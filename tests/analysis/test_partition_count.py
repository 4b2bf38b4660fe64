"""``transaction.state.log.num.partitions`` other than 50: given, or detected from the log dirs.

Kafka's ``TransactionStateManager#partitionFor`` puts a transactional id in
``Utils.abs(id.hashCode) % transactionTopicPartitionCount``; a broker creates the directory of
every ``__transaction_state`` replica it hosts (``LogManager#getOrCreateLog`` on becoming a
replica), with data or not. These tests build log dirs of clusters with 10 and 100 coordinator
partitions (some with the coordinator log compacted, some copied mid-transaction) and check that
the join finds what Kafka's coordinator would, without a ``wrong_coordinator_partition`` per id.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkatx.analysis.coordinator import TOPIC as TXN_TOPIC
from kafkatx.analysis.coordinator import read_coordinator
from kafkatx.analysis.findings import ERROR, WARNING
from kafkatx.analysis.partition_count import (
    DEFAULT,
    DIRECTORIES,
    GIVEN,
    METADATA,
    PLACEMENT,
    detect_partition_count,
)
from kafkatx.formats.record_batch import Record, build_batch
from kafkatx.formats.transaction_log import TransactionLogKey, TransactionLogValue, build_key
from kafkatx.formats.transaction_log import build_value as build_txn_value
from kafkatx.semantics.coordinator_partition import partition_for
from tests.analysis.logdirs import T0
from tests.analysis.test_timeline import S, Scenario, dropped_marker, of_kind, v


@pytest.fixture
def sc(tmp_path: Path) -> Scenario:
    return Scenario(tmp_path / "broker")


def ids_for(count: int, n: int, prefix: str = "app") -> list[tuple[str, int]]:
    return [(f"{prefix}-{i}", partition_for(f"{prefix}-{i}", count)) for i in range(n)]


def test_detect_given_default_directories_and_placement() -> None:
    """``TransactionStateManager#partitionFor`` placements read back into a count."""
    ten = ids_for(10, 40)
    assert detect_partition_count(range(10), ten, given=7).source == GIVEN
    assert detect_partition_count(range(10), ten, given=7).count == 7
    found = detect_partition_count(range(10), ten)
    assert (found.count, found.source, found.fits, found.ids) == (10, DIRECTORIES, 40, 40)
    fifty = ids_for(50, 40)
    sparse = {p for _, p in fifty}
    found = detect_partition_count(sparse, fifty)
    assert (found.count, found.source, found.alternatives) == (50, DEFAULT, ())
    hundred = ids_for(100, 40)
    found = detect_partition_count({p for _, p in hundred}, hundred)
    assert (found.count, found.source, found.fits) == (100, PLACEMENT, 40)
    assert "places 40 of 40 transactional ids" in found.describe
    # Nothing but directories: the complete set 0..N-1 is the count, a partial set keeps 50.
    assert detect_partition_count(range(12), []).count == 12
    assert detect_partition_count({3, 7}, []).source == DEFAULT
    assert detect_partition_count({3, 70}, []).count == 71


def test_one_misplaced_id_does_not_move_the_count() -> None:
    """The count that places the most ids wins; the odd one out stays misplaced."""
    ten = ids_for(10, 30)
    tid, p = ten[0]
    ten[0] = (tid, (p + 1) % 10)
    found = detect_partition_count(range(10), ten)
    assert (found.count, found.fits, found.ids) == (10, 29, 30)


def ten_partition_cluster(sc: Scenario) -> None:
    """A broker of a cluster with transaction.state.log.num.partitions = 10 hosting every
    coordinator replica (a directory for each, most of them empty), with payments-writer's
    COMMIT marker lost in p-2."""
    sc.num_partitions = 10
    for n in range(10):
        sc.part(TXN_TOPIC, n)
    dropped_marker(sc)


def test_ten_coordinator_partitions_are_detected(sc: Scenario) -> None:
    """``TransactionStateManager#partitionFor`` of 10: ids are where Kafka put them."""
    ten_partition_cluster(sc)
    result = sc.inspect()
    assert not of_kind(result.findings, "wrong_coordinator_partition")
    assert result.coordinator is not None and result.coordinator.partition_count is not None
    count = result.coordinator.partition_count
    assert (count.count, count.source) == (10, DIRECTORIES)
    (hang,) = of_kind(result.findings, "hanging_transaction")
    assert (hang.transactional_id, hang.partition, hang.offset) == ("payments-writer", 2, 1)
    assert result.timeline is not None and result.timeline.num_partitions == 10
    assert any("every partition directory 0..9 is present" in n for n in result.timeline.notes)


def test_a_wrong_count_given_is_said_per_id(sc: Scenario) -> None:
    """An explicit count wins over detection; ids partitionFor would not look for are said."""
    ten_partition_cluster(sc)
    assert partition_for("payments-writer", 10) != partition_for("payments-writer", 50)
    result = sc.inspect(transaction_state_partitions=50)
    (wrong,) = of_kind(result.findings, "wrong_coordinator_partition")
    assert wrong.transactional_id == "payments-writer"
    assert "--transaction-state-partitions" in wrong.message
    assert result.coordinator is not None and result.coordinator.partition_count is not None
    assert result.coordinator.partition_count.source == GIVEN


def test_complete_coverage_makes_an_orphan_certain(sc: Scenario) -> None:
    """KIP-664 ``find-hanging``: a producer id no transactional id owns is hanging; with all 10
    coordinator partitions present that is certain (an error), under a presumed 50 it is not."""
    ten_partition_cluster(sc)
    sc.part("lost", 0).data(pid=9999, epoch=0, n=2, txn=True, at=T0 + 100).data(
        n=1, at=T0 + 3_600_000)
    (orphan,) = of_kind(sc.inspect().findings, "orphan_transaction")
    assert orphan.level == ERROR and "all 10 __transaction_state partitions present" in (
        orphan.message)
    (unsure,) = of_kind(sc.inspect(transaction_state_partitions=50).findings,
                        "orphan_transaction")
    assert unsure.level == WARNING and "10 of 50" in unsure.message


def put_compacted(sc: Scenario, tid: str, survivors: list[tuple[int, TransactionLogValue]]
                  ) -> None:
    """``__transaction_state`` as the log cleaner leaves it: only the newest value of each id,
    at its original offset (``LogCleaner`` keeps the last record per key; offsets keep gaps)."""
    p = sc.part(TXN_TOPIC, partition_for(tid, sc.num_partitions))
    for offset, value in survivors:
        assert offset >= p.log_end_offset
        p.raw(build_batch([Record(offset=offset, timestamp=value.last_update_timestamp_ms,
                                  key=build_key(TransactionLogKey(transactional_id=tid)),
                                  value=build_txn_value(value))],
                          base_offset=offset, partition_leader_epoch=0))


def test_hundred_partitions_on_a_broker_hosting_some_of_them_compacted(sc: Scenario) -> None:
    """``partitionFor`` of 100 read from one broker's replicas (partitions up to 97, not all),
    each id's coordinator log compacted to its last record (``LogCleaner``): the count is the
    one that places the ids, and a hanging transaction of one of them is found."""
    sc.num_partitions = 100
    for n in (5, 40, 63, 97):
        sc.part(TXN_TOPIC, n)
    for i in range(24):
        tid = f"svc-{i}"
        put_compacted(sc, tid, [(10 * i + 7, v(S.COMPLETE_COMMIT, 8000 + i, 3, {}, 100, 200))])
    put_compacted(sc, "payments-writer", [
        (50, v(S.COMPLETE_COMMIT, 7101, 4, {}, 1_000, 2_100))])
    p = sc.part("p", 0)
    p.data(n=1, at=T0 + 500).data(pid=7101, epoch=4, n=3, txn=True, at=T0 + 1_100)
    p.data(n=1, at=T0 + 9_000)
    result = sc.inspect()
    assert not of_kind(result.findings, "wrong_coordinator_partition")
    assert result.coordinator is not None and result.coordinator.partition_count is not None
    count = result.coordinator.partition_count
    assert (count.count, count.source, count.fits) == (100, PLACEMENT, 25)
    (hang,) = of_kind(result.findings, "hanging_transaction")
    assert (hang.transactional_id, hang.offset) == ("payments-writer", 1)
    assert "the coordinator has no transaction open for it" in hang.message


def test_copy_taken_mid_transaction_with_ten_partitions(sc: Scenario) -> None:
    """Copied while a transaction runs (``TransactionMetadata`` Ongoing with p-0): with the
    right count the transaction's id is found and it is pending, not hanging or misplaced."""
    sc.num_partitions = 10
    for n in range(10):
        sc.part(TXN_TOPIC, n)
    sc.coordinator("live", [v(S.ONGOING, 7300, 2, {"p": [0]}, 1_000, 1_000)])
    sc.part("p", 0).data(n=1, at=T0 + 500).data(pid=7300, epoch=2, n=2, txn=True, at=T0 + 1_100)
    result = sc.inspect(now=5_000)
    assert not of_kind(result.findings, "wrong_coordinator_partition")
    assert not of_kind(result.findings, "hanging_transaction")
    (opened,) = of_kind(result.findings, "open_transaction")
    assert opened.transactional_id == "live"


def test_read_coordinator_detects_unless_given(tmp_path: Path) -> None:
    """The library default detects; ``num_partitions`` is Kafka's setting when known."""
    sc = Scenario(tmp_path / "broker", num_partitions=10)
    for i in range(12):
        sc.coordinator(f"id-{i}", [v(S.EMPTY, 100 + i, 0)])
    sc.build()
    assert read_coordinator([sc.root]).num_partitions_assumed == 10
    assert of_kind_view(read_coordinator([sc.root]), "wrong_coordinator_partition") == []
    assert of_kind_view(read_coordinator([sc.root], num_partitions=50),
                        "wrong_coordinator_partition") != []
    with pytest.raises(ValueError):
        detect_partition_count([], [], given=0)


def of_kind_view(view: object, kind: str) -> list[object]:
    return [f for f in view.findings if f.kind == kind]  # type: ignore[attr-defined]


def test_the_kraft_metadata_log_gives_the_count(sc: Scenario) -> None:
    """KRaft: the controller records the topic's ``PartitionRecord``s in ``__cluster_metadata``
    (``ReplicationControlManager#createTopic``); the image ``MetadataLoader`` builds (here
    ``kafkatx.analysis.cluster_view``) gives 20 partitions, which wins over what two sparse
    directories and one id would suggest."""
    from fixtures.generate_kraft import TOPIC, MetadataLog, partition_record, topic_record

    sc.num_partitions = 20
    sc.coordinator("one-id", [v(S.EMPTY, 7000, 0)])
    sc.part(TXN_TOPIC, 17)  # a replica this broker hosts, empty
    log = MetadataLog(sc.root / "__cluster_metadata-0")
    log.leader_change(T0, 1)
    log.records(T0 + 1_000, topic_record("__transaction_state"),
                *(partition_record("__transaction_state", p) for p in range(20)))
    log.writer.close()
    assert TOPIC["__transaction_state"]
    result = sc.inspect()
    assert result.coordinator is not None and result.coordinator.partition_count is not None
    count = result.coordinator.partition_count
    assert (count.count, count.source, count.fits) == (20, METADATA, 1)
    assert not of_kind(result.findings, "wrong_coordinator_partition")
    assert read_coordinator([sc.root]).num_partitions_assumed == 20
    assert read_coordinator([sc.root], num_partitions=30).partition_count.source == GIVEN


def test_another_clusters_metadata_log_is_not_used(sc: Scenario, tmp_path: Path) -> None:
    """A metadata log describes its own cluster only (``cluster.id`` in ``meta.properties``,
    ``MetaPropertiesEnsemble``): evidence holding a second cluster's metadata log with 20
    ``__transaction_state`` partitions does not set this cluster's count."""
    from fixtures.generate_kraft import MetadataLog, partition_record, topic_record
    from kafkatx.engines.local import inspect_paths
    from kafkatx.formats.checkpoints import build_meta_properties

    sc.num_partitions = 10
    sc.coordinator("one-id", [v(S.EMPTY, 7000, 0)])
    other = tmp_path / "other-cluster"
    log = MetadataLog(other / "__cluster_metadata-0")
    log.leader_change(T0, 1)
    log.records(T0 + 1_000, topic_record("__transaction_state"),
                *(partition_record("__transaction_state", p) for p in range(20)))
    log.writer.close()
    sc.inspect()  # writes the broker's log dir
    for root, cid in ((sc.root, "AAAAAAAAAAAAAAAAAAAAAA"), (other, "BBBBBBBBBBBBBBBBBBBBBA")):
        (root / "meta.properties").write_bytes(build_meta_properties(
            {"version": "1", "node.id": "1", "cluster.id": cid}))
    result = inspect_paths([sc.root, other])
    count = result.coordinator.partition_count
    assert count is not None and count.source != METADATA and count.count != 20
