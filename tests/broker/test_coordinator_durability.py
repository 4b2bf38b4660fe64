"""``kafkatx serve --brokers 3``: the transaction coordinator answers only what its ISR has
(``TransactionStateManager#appendTransactionToLog`` appends with acks=-1), so a coordinator
cut off from its followers and then killed never decides a transaction twice (issue 25).

The reproduction of the issue: librdkafka aborts a transaction while the coordinator cannot
replicate; before, the abort was answered OK after 5 s ("answering anyway"), the coordinator
died, the new one still had the transaction Ongoing and the producer's next commit committed
the aborted records. Now the abort is not confirmed while the ISR lacks PrepareAbort, the
producer retries it on the new coordinator, and a read_committed consumer receives the
committed records only, every one of them.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kafkatx.semantics.coordinator_partition import partition_for
from kafkatx.testing import KafkaBroker
from tests.broker.test_cluster import (
    BROKERS,
    consume_committed,
    partition_states,
    running_port,
    wait_for,
)
from tests.broker.wire import WireClient, entity, request

TOPIC = "durable"


def _coordinator(cluster: KafkaBroker, txn_id: str) -> int:
    return partition_states(cluster.ports[0], "__transaction_state")[
        partition_for(txn_id)].leader_id


def _start(tmp_path: Path, ck: Any) -> KafkaBroker:
    from confluent_kafka.admin import AdminClient, NewTopic

    cluster = KafkaBroker(tmp_path / "cluster", BROKERS).start()
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        for future in admin.create_topics([NewTopic(TOPIC, 3, 3)]).values():
            future.result(10)
        with WireClient(cluster.ports[0]) as client:  # creates __transaction_state
            client.call(request(10, 1, key="probe", key_type=1))
    except BaseException:  # the tests' finally is not reached: no serve may outlive the run
        cluster.kill()
        raise
    return cluster


def _open_transaction(cluster: KafkaBroker, ck: Any, txn_id: str, topic: str, partitions: int,
                      prefix: str) -> Any:
    """A librdkafka transactional producer with one record in each of ``partitions``, flushed."""
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers,
                            "transactional.id": txn_id, "acks": "all"})
    producer.init_transactions(15)
    producer.begin_transaction()
    for p in range(partitions):
        producer.produce(topic, value=f"{prefix}-{p}".encode(), partition=p)
    producer.flush(10)
    return producer


@pytest.mark.parametrize("decision", ["abort", "commit"])
def test_an_end_txn_the_isr_lacks_is_not_confirmed_and_is_decided_once(
        tmp_path: Path, decision: str) -> None:
    ck = pytest.importorskip("confluent_kafka")
    cluster = _start(tmp_path, ck)
    try:
        txn_id = f"tx-{decision}"
        producer = _open_transaction(cluster, ck, txn_id, TOPIC, 3, "first")
        coordinator = _coordinator(cluster, txn_id)
        for other in (n for n in (1, 2, 3) if n != coordinator):
            cluster.cut_replication(coordinator, other)
        end = producer.abort_transaction if decision == "abort" else producer.commit_transaction
        with pytest.raises(ck.KafkaException) as refused:
            end(8)  # the coordinator cannot replicate Prepare*: no OK, only retries
        assert refused.value.args[0].retriable() or refused.value.args[0].code() in (
            ck.KafkaError._TIMED_OUT,)
        log = cluster.serve_log()
        assert "not replicated to the ISR" in log and "answering anyway" not in log
        cluster.kill_broker(coordinator)
        cluster.clear_faults()
        survivor = running_port(cluster, {coordinator})
        wait_for(lambda: partition_states(survivor, "__transaction_state")[
            partition_for(txn_id)].leader_id not in (-1, coordinator), 15.0, "a new coordinator")
        end(30)  # retried on the new coordinator: decided there, once
        producer.begin_transaction()
        for p in range(3):
            producer.produce(TOPIC, value=f"second-{p}".encode(), partition=p)
        producer.commit_transaction(30)
        got = consume_committed(ck, cluster.bootstrap_servers, TOPIC, 99, timeout_s=8.0)
        first = [f"first-{p}".encode() for p in range(3)] if decision == "commit" else []
        assert sorted(got) == sorted(first + [f"second-{p}".encode() for p in range(3)])
        del producer
    finally:
        cluster.kill()


def _commit_offset(port: int, group: str, offset: int) -> ErrorCode:
    part = entity(8, 2, "OffsetCommitRequestPartition", partition_index=0,
                  committed_offset=offset, committed_metadata=None)
    topic = entity(8, 2, "OffsetCommitRequestTopic", name=TOPIC, partitions=(part,))
    with WireClient(port, timeout_s=30) as client:
        answer = client.call(request(8, 2, group_id=group, generation_id_or_member_epoch=-1,
                                     member_id="", retention_time=datetime.timedelta(
                                         milliseconds=-1), topics=(topic,)))
    return answer.topics[0].partitions[0].error_code


def _fetch_offset(port: int, group: str) -> int:
    wanted = entity(9, 1, "OffsetFetchRequestTopic", name=TOPIC, partition_indexes=(0,))
    with WireClient(port) as client:
        answer = client.call(request(9, 1, group_id=group, topics=(wanted,)))
    assert answer.topics, answer
    return answer.topics[0].partitions[0].committed_offset


def test_an_offset_commit_the_isr_lacks_is_refused_and_never_served(tmp_path: Path) -> None:
    """``GroupMetadataManager#storeOffsets``: an offset commit is applied only in the callback
    of a write the ISR has; one the ISR does not take is COORDINATOR_NOT_AVAILABLE
    (``maybeConvertOffsetCommitError``) and ``failPendingOffsetWrite`` drops it, so OffsetFetch
    keeps answering the last replicated offset, on this coordinator and, once it is killed,
    on the next."""
    ck = pytest.importorskip("confluent_kafka")
    cluster = _start(tmp_path, ck)
    try:
        group = "durable-group"
        with WireClient(cluster.ports[0]) as client:
            found = client.call(request(10, 1, key=group, key_type=0))
        coordinator = found.node_id
        port = cluster.ports[coordinator - 1]
        assert _commit_offset(port, group, 5) == ErrorCode.none
        for other in (n for n in (1, 2, 3) if n != coordinator):
            cluster.cut_replication(coordinator, other)
        assert _commit_offset(port, group, 9) == ErrorCode.coordinator_not_available
        assert _fetch_offset(port, group) == 5
        cluster.kill_broker(coordinator)
        cluster.clear_faults()
        survivor = running_port(cluster, {coordinator})
        wait_for(lambda: partition_states(survivor, "__consumer_offsets")[
            partition_for(group)].leader_id not in (-1, coordinator), 15.0, "a new coordinator")
        new_port = cluster.ports[partition_states(survivor, "__consumer_offsets")[
            partition_for(group)].leader_id - 1]
        assert _fetch_offset(new_port, group) == 5
    finally:
        cluster.kill()


def _open_transactions(port: int, topic: str, partitions: tuple[int, ...]) -> list[int]:
    """DescribeProducers on one broker: the partitions where a producer's transaction is open
    in that broker's log."""
    wanted = entity(61, 0, "TopicRequest", name=topic, partition_indexes=partitions)
    with WireClient(port) as client:
        answer = client.call(request(61, 0, topics=(wanted,)))
    return [p.partition_index for p in answer.topics[0].partitions
            if any(s.current_txn_start_offset >= 0 for s in p.active_producers)]


def test_a_marker_is_awaited_on_the_leader_it_was_written_to(tmp_path: Path) -> None:
    """``TransactionMarkerChannelManager``: the markers of a WriteTxnMarkers are answered by
    the broker they were appended to, once its ISR has them (acks=-1), so a marker its leader
    never replicated before it died is written again to the new leader.

    Issue 25's partly visible transaction under load: a broker leading two partitions of a
    transaction had both markers and died before replicating them; the coordinator awaited
    the first one's replication there, then looked up the second partition's leader again,
    found the new one (elected without the marker) caught up, and completed the transaction:
    the second partition kept it open until the producer's next transaction ended it, with
    that transaction's outcome. Here the marker is written again and both records are
    visible."""
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    cluster = _start(tmp_path, ck)
    producer = None
    try:
        txn_id, topic = "tx-marker-leader", "marked"
        coordinator = _coordinator(cluster, txn_id)
        victim, heir = (n for n in (1, 2, 3) if n != coordinator)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        for future in admin.create_topics([NewTopic(topic, num_partitions=2, replica_assignment=[
                [victim, heir, coordinator]] * 2)]).values():
            future.result(10)
        del admin
        producer = _open_transaction(cluster, ck, txn_id, topic, 2, "record")
        # The heir (next in line to lead both partitions) no longer fetches from the victim;
        # both still fetch from the coordinator, so PrepareCommit becomes durable.
        cluster.cut_replication(victim, heir)
        producer.commit_transaction(10)
        victim_port = cluster.ports[victim - 1]
        wait_for(lambda: not _open_transactions(victim_port, topic, (0, 1)), 15.0,
                 "both markers in the victim's log")
        cluster.kill_broker(victim)  # the heir leads both partitions, without the markers
        cluster.clear_faults()
        got = consume_committed(ck, cluster.bootstrap_servers, topic, 2, timeout_s=15.0)
        log = cluster.serve_log()
        assert sorted(got) == [b"record-0", b"record-1"], log[-3000:]
        # the case itself: the second partition's marker was never replicated by the victim
        assert f"marker in {topic}-1 is not replicated by broker {victim}" in log
        assert _open_transactions(cluster.ports[heir - 1], topic, (0, 1)) == []
    finally:
        producer = None  # destroyed (close() would try to abort, with brokers gone)
        cluster.kill()
