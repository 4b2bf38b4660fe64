"""``kafkatx serve --brokers 3``: metadata, leaders, replication over the wire, transactions of
real clients across a leader stop, identical replicas after a clean stop.

Each test cites the Kafka class it follows; the cluster runs as a ``kafkatx serve`` subprocess
(:class:`kafkatx.testing.KafkaBroker`) on loopback ports.
"""

from __future__ import annotations

import datetime
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kafkatx.formats.record_batch import Record, build_batch
from kafkatx.semantics.coordinator_partition import partition_for
from kafkatx.testing import KafkaBroker
from tests.broker.wire import WireClient, entity, request

BROKERS = ("--brokers", "3", "--group-initial-rebalance-delay-ms", "0")


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[KafkaBroker]:
    broker = KafkaBroker(tmp_path / "cluster", BROKERS).start()
    try:
        yield broker
    finally:
        broker.kill()


def metadata(port: int, topics: list[str] | None) -> Any:
    with WireClient(port) as client:
        wanted = None if topics is None else tuple(
            entity(3, 9, "MetadataRequestTopic", name=t) for t in topics)
        return client.call(request(3, 9, topics=wanted, allow_auto_topic_creation=True))


def partition_states(port: int, topic: str) -> dict[int, Any]:
    md = metadata(port, [topic])
    (t,) = md.topics
    return {p.partition_index: p for p in t.partitions}


def wait_for(condition: Any, timeout_s: float = 10.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def produce(port: int, topic: str, partition: int, value: bytes, *, acks: int = -1,
            timeout_ms: int = 5000) -> Any:
    batch = build_batch([Record(offset=0, timestamp=1_760_000_000_000, key=None, value=value)],
                        base_offset=0)
    data = entity(0, 9, "TopicProduceData", name=topic, partition_data=(
        entity(0, 9, "PartitionProduceData", index=partition, records=batch),))
    with WireClient(port) as client:
        response = client.call(request(0, 9, acks=acks,
                                       timeout=datetime.timedelta(milliseconds=timeout_ms),
                                       topic_data=(data,)))
    return response.responses[0].partition_responses[0]


def port_of(cluster: KafkaBroker, node_id: int) -> int:
    return cluster.ports[node_id - 1]


def segment_bytes(log_dir: Path, broker: int, partition_dir: str) -> bytes:
    """The partition's records as that broker stores them: its .log files in offset order."""
    files = sorted((log_dir / f"broker-{broker}" / partition_dir).glob("*.log"))
    return b"".join(f.read_bytes() for f in files)


def assert_replicas_identical(log_dir: Path) -> None:
    """Every partition's .log bytes (and ``.txnindex`` entries) are the same on every broker
    holding it, and ``kafkatx inspect``'s replica comparison finds nothing above info. The
    compacted internal topics are compared by the replica comparison only: each broker's own
    log cleaner compacts its copy (``LogCleaner`` runs per broker), so their bytes may differ
    as they do in Kafka (a restarted serve rolls a new segment, which makes the old one
    cleanable)."""
    by_partition: dict[str, list[int]] = {}
    for broker_dir in sorted(log_dir.glob("broker-*")):
        node = int(broker_dir.name.split("-")[1])
        for pdir in broker_dir.iterdir():
            if pdir.is_dir() and not pdir.name.startswith("__"):
                by_partition.setdefault(pdir.name, []).append(node)
    assert by_partition
    for name, nodes in by_partition.items():
        copies = {n: segment_bytes(log_dir, n, name) for n in nodes}
        assert len(set(copies.values())) == 1, f"{name}: replicas differ"
        txn = {n: b"".join(f.read_bytes() for f in sorted(
            (log_dir / f"broker-{n}" / name).glob("*.txnindex"))) for n in nodes}
        assert len(set(txn.values())) == 1, f"{name}: .txnindex differs"
    from kafkatx.engines.local import AnalysisOptions, inspect_paths

    report = inspect_paths([log_dir], options=AnalysisOptions())
    serious = [f for f in report.findings
               if f.kind.startswith("replica_") and f.severity != "info"]
    assert not serious, [f.message for f in serious]


def test_metadata_leaders_and_not_leader_or_follower(cluster: KafkaBroker) -> None:
    """``MetadataCache`` answers every broker with each partition's leader, epoch, replicas and
    ISR; ``ReplicaManager#getPartitionOrError``: a produce to a follower is
    NOT_LEADER_OR_FOLLOWER, to the leader it is appended and (acks=-1, ``DelayedProduce``)
    answered once every ISR member has it; FindCoordinator answers the leader of the key's
    ``__transaction_state`` partition (``TransactionCoordinator#partitionFor``)."""
    first = cluster.ports[0]
    md = metadata(first, ["payments"])
    assert sorted(b.node_id for b in md.brokers) == [1, 2, 3]
    assert sorted(b.port for b in md.brokers) == sorted(cluster.ports)
    (topic,) = md.topics
    assert topic.error_code == ErrorCode.none
    (p0,) = topic.partitions
    assert len(p0.replica_nodes) == 3 and sorted(p0.isr_nodes) == [1, 2, 3]
    leader, followers = p0.leader_id, [n for n in (1, 2, 3) if n != p0.leader_id]
    refused = produce(port_of(cluster, followers[0]), "payments", 0, b"x")
    assert refused.error_code == ErrorCode.not_leader_or_follower
    ok = produce(port_of(cluster, leader), "payments", 0, b"y")
    assert ok.error_code == ErrorCode.none and ok.base_offset == 0
    with WireClient(first) as client:
        found = client.call(request(10, 1, key="tx-a", key_type=1))
    assert found.error_code == ErrorCode.none
    states = partition_states(first, "__transaction_state")
    assert found.node_id == states[partition_for("tx-a")].leader_id
    with WireClient(port_of(cluster, leader)) as client:
        answer = client.call(request(23, 4, replica_id=-1, topics=(
            entity(23, 4, "OffsetForLeaderTopic", topic="payments", partitions=(
                entity(23, 4, "OffsetForLeaderPartition", partition=0,
                       current_leader_epoch=-1, leader_epoch=0),)),)))
    epoch_end = answer.topics[0].partitions[0]
    assert (epoch_end.error_code, epoch_end.leader_epoch, epoch_end.end_offset) == \
        (ErrorCode.none, 0, 1)
    cluster.stop()
    copies = {n: segment_bytes(cluster.log_dir, n, "payments-0") for n in (1, 2, 3)}
    assert len(set(copies.values())) == 1 and copies[1]


def test_confluent_transactions_replicated_byte_for_byte(cluster: KafkaBroker) -> None:
    """``ReplicaFetcherThread`` / ``UnifiedLog#appendAsFollower``: with RF=3 a transactional
    producer's batches and markers (and the coordinators' ``__transaction_state`` and
    ``__consumer_offsets`` records) reach every replica as the leader wrote them; after a clean
    stop every copy is identical, byte for byte and by ``kafkatx inspect``'s replica
    comparison; a read_committed consumer sees the committed records only."""
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    bootstrap = cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic("orders", 3, 3)]).values():
        future.result(10)
    producer = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": "tx-1"})
    producer.init_transactions(15)
    for i in range(3):
        producer.begin_transaction()
        for j in range(6):
            producer.produce("orders", key=str(j).encode(), value=f"c{i}-{j}".encode())
        producer.commit_transaction(15)
    producer.begin_transaction()
    producer.produce("orders", key=b"0", value=b"aborted")
    producer.flush(10)
    producer.abort_transaction(15)
    values = consume_committed(ck, bootstrap, "orders", 18)
    assert sorted(values) == sorted(f"c{i}-{j}".encode() for i in range(3) for j in range(6))
    assert cluster.stop() == 0
    assert_replicas_identical(cluster.log_dir)
    aborts = [f for n in (1, 2, 3) for f in
              (cluster.log_dir / f"broker-{n}").glob("orders-*/*.txnindex") if f.stat().st_size]
    assert len(aborts) == 3  # the aborted transaction's partition, on each of its replicas


def consume_committed(ck: Any, bootstrap: str, topic: str, expected: int,
                      group: str = "readers", timeout_s: float = 20.0) -> list[bytes]:
    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                            "isolation.level": "read_committed",
                            "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline and len(values) < expected:
            message = consumer.poll(0.2)
            if message is not None and not message.error():
                values.append(message.value())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return values


def leader_of(cluster: KafkaBroker, topic: str, partition: int) -> int:
    port = cluster.ports[0]
    for attempt_port in cluster.ports:
        try:
            return partition_states(attempt_port, topic)[partition].leader_id
        except OSError:
            continue
    return partition_states(port, topic)[partition].leader_id


def running_port(cluster: KafkaBroker, stopped: set[int]) -> int:
    return next(p for n, p in enumerate(cluster.ports, 1) if n not in stopped)


def wait_isr(cluster: KafkaBroker, topic: str, partition: int, size: int,
             stopped: set[int] = frozenset()) -> Any:  # type: ignore[assignment]
    port = running_port(cluster, set(stopped))
    return wait_for(lambda: (s := partition_states(port, topic)[partition])
                    and len(s.isr_nodes) == size and s, 15.0,
                    f"{topic}-{partition} with {size} replicas in the ISR")


def test_confluent_transactions_across_a_leader_stop(cluster: KafkaBroker) -> None:
    """A clean stop of the broker leading the data partition and the transaction coordinator's
    partition (``KafkaController``'s controlled shutdown, ``PartitionChangeBuilder#electLeader``
    from the ISR): librdkafka follows the new leaders (NOT_LEADER_OR_FOLLOWER,
    NOT_COORDINATOR, Metadata), its transactions keep committing, a read_committed consumer
    gets every committed record once; the stopped broker restarts, truncates and catches up
    (``ReplicaFetcherThread``) and rejoins the ISR (``Partition#maybeExpandIsr``); after a
    clean stop every replica is identical."""
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    bootstrap = cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic("ledger", 1, 3)]).values():
        future.result(10)
    leader = leader_of(cluster, "ledger", 0)
    with WireClient(cluster.ports[0]) as client:  # creates __transaction_state
        client.call(request(10, 1, key="probe", key_type=1))
    coordinators = partition_states(cluster.ports[0], "__transaction_state")
    txn_id = next(f"tx-stop-{i}" for i in range(1000)
                  if coordinators[partition_for(f"tx-stop-{i}")].leader_id == leader)
    producer = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id,
                            "acks": "all"})
    producer.init_transactions(15)
    expected: list[bytes] = []

    def commit(round_: int) -> None:
        producer.begin_transaction()
        for j in range(4):
            value = f"r{round_}-{j}".encode()
            producer.produce("ledger", value=value)
            expected.append(value)
        producer.commit_transaction(30)

    commit(0)
    commit(1)
    cluster.stop_broker(leader)  # the data partition's leader and the coordinator
    others = partition_states(running_port(cluster, {leader}), "ledger")[0]
    assert others.leader_id != leader and leader not in others.isr_nodes
    commit(2)
    commit(3)
    cluster.start_broker(leader)
    wait_isr(cluster, "ledger", 0, 3)
    commit(4)
    values = consume_committed(ck, bootstrap, "ledger", len(expected))
    assert values == expected
    assert cluster.stop() == 0
    assert_replicas_identical(cluster.log_dir)


# kafka-python runs in a child process: it leaves the sockets of refused connections (to the
# stopped broker) to the garbage collector, whose warnings would land in later tests here.
KAFKA_PYTHON_CLIENT = textwrap.dedent("""
    import sys, time
    import kafka
    from kafka.admin import KafkaAdminClient, NewTopic

    bootstrap = sys.argv[1].split(",")
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    admin.create_topics([NewTopic("kp-ledger", 1, 3)])
    admin.close()
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, transactional_id="kp-stop",
                                   request_timeout_ms=5000, max_block_ms=20_000, acks="all")
    producer.init_transactions()
    expected = []

    def commit(round_):
        producer.begin_transaction()
        for j in range(3):
            value = b"k%d-%d" % (round_, j)
            producer.send("kp-ledger", value=value, partition=0)
            expected.append(value)
        producer.commit_transaction()

    commit(0)
    print("committed", flush=True)
    sys.stdin.readline()  # the test stops the partition's leader meanwhile
    commit(1)
    commit(2)
    producer.close(5)
    consumer = kafka.KafkaConsumer(
        "kp-ledger", bootstrap_servers=bootstrap, group_id="kp-readers",
        isolation_level="read_committed", auto_offset_reset="earliest",
        enable_auto_commit=False, request_timeout_ms=10_000)
    got = []
    deadline = time.monotonic() + 20
    while len(got) < len(expected) and time.monotonic() < deadline:
        for messages in consumer.poll(timeout_ms=300).values():
            got += [m.value for m in messages]
    consumer.close()
    print("ok" if got == expected else f"consumed {got!r}, expected {expected!r}", flush=True)
""")


def test_kafka_python_transactions_across_a_leader_stop(cluster: KafkaBroker) -> None:
    """kafka-python's transactional producer and read_committed consumer across the clean stop
    of the data partition's leader (``PartitionChangeBuilder#electLeader``; the client follows
    NOT_LEADER_OR_FOLLOWER to the new leader): the producer that committed before the stop
    commits two more transactions after it, the consumer reads the nine records once; every
    replica identical after a clean stop."""
    pytest.importorskip("kafka")
    client = subprocess.Popen([sys.executable, "-c", KAFKA_PYTHON_CLIENT,
                               cluster.bootstrap_servers], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert client.stdout is not None and client.stdin is not None
        assert client.stdout.readline().strip() == "committed"
        leader = leader_of(cluster, "kp-ledger", 0)
        cluster.stop_broker(leader)
        client.stdin.write("go\n")
        client.stdin.flush()
        out, err = client.communicate(timeout=60)
    finally:
        if client.poll() is None:
            client.kill()
    assert out.strip() == "ok", err[-3000:]
    cluster.start_broker(leader)
    wait_isr(cluster, "kp-ledger", 0, 3)
    assert cluster.stop() == 0
    assert_replicas_identical(cluster.log_dir)


def test_min_insync_replicas_refuses_acks_all(tmp_path: Path) -> None:
    """``Partition#appendRecordsToLeader``: with ``min.insync.replicas`` 3 and a follower cut off
    (``cut-replication``) past ``replica.lag.time.max.ms`` (``Partition#maybeShrinkIsr``), an
    acks=all produce is NOT_ENOUGH_REPLICAS while acks=1 is appended; once replication is back
    the follower rejoins the ISR (``maybeExpandIsr``) and acks=all succeeds again."""
    cluster = KafkaBroker(tmp_path / "cluster", (*BROKERS, "--replica-lag-time-max-ms", "400"))
    cluster.start()
    try:
        with WireClient(cluster.ports[0]) as client:
            created = client.call(request(19, 5, timeout=datetime.timedelta(seconds=5),
                                          validate_only=False, topics=(
                entity(19, 5, "CreatableTopic", name="strict", num_partitions=1,
                       replication_factor=3, assignments=(), configs=(
                           entity(19, 5, "CreatableTopicConfig", name="min.insync.replicas",
                                  value="3"),)),)))
        assert created.topics[0].error_code == ErrorCode.none
        leader = leader_of(cluster, "strict", 0)
        port = port_of(cluster, leader)
        assert produce(port, "strict", 0, b"a").error_code == ErrorCode.none
        follower = next(n for n in (1, 2, 3) if n != leader)
        cluster.cut_replication(leader, follower)
        state = wait_isr(cluster, "strict", 0, 2)
        assert follower not in state.isr_nodes
        assert produce(port, "strict", 0, b"b").error_code == ErrorCode.not_enough_replicas
        assert produce(port, "strict", 0, b"c", acks=1).error_code == ErrorCode.none
        cluster.clear_faults()
        wait_isr(cluster, "strict", 0, 3)
        assert produce(port, "strict", 0, b"d").error_code == ErrorCode.none
        assert cluster.stop() == 0
        copies = {n: segment_bytes(cluster.log_dir, n, "strict-0") for n in (1, 2, 3)}
        assert len(set(copies.values())) == 1
    finally:
        cluster.kill()


def test_unclean_election_then_the_old_leader_truncates(tmp_path: Path) -> None:
    """``unclean.leader.election.enable``: the leader alone in the ISR (its followers cut off)
    acknowledges records with acks=1, then is killed; with the topic config the controller
    elects a live out-of-sync replica (``PartitionChangeBuilder#electLeader``, unclean), which
    takes new records at the next leader epoch. The old leader restarts, recovers its log,
    becomes follower and truncates its divergent records (``AbstractFetcherThread#maybeTruncate``
    with OffsetsForLeaderEpoch, ``UnifiedLog#truncateTo``): every copy ends identical to the new
    leader's, and the lost records are gone from all of them."""
    cluster = KafkaBroker(tmp_path / "cluster", (*BROKERS, "--replica-lag-time-max-ms", "400"))
    cluster.start()
    try:
        with WireClient(cluster.ports[0]) as client:
            created = client.call(request(19, 5, timeout=datetime.timedelta(seconds=5),
                                          validate_only=False, topics=(
                entity(19, 5, "CreatableTopic", name="risky", num_partitions=1,
                       replication_factor=3, assignments=(), configs=(
                           entity(19, 5, "CreatableTopicConfig",
                                  name="unclean.leader.election.enable", value="true"),)),)))
        assert created.topics[0].error_code == ErrorCode.none
        leader = leader_of(cluster, "risky", 0)
        port = port_of(cluster, leader)
        for value in (b"kept-0", b"kept-1"):
            assert produce(port, "risky", 0, value).error_code == ErrorCode.none
        others = [n for n in (1, 2, 3) if n != leader]
        for n in others:
            cluster.cut_replication(leader, n)
        wait_isr(cluster, "risky", 0, 1)
        for value in (b"lost-0", b"lost-1", b"lost-2"):
            assert produce(port, "risky", 0, value, acks=1).error_code == ErrorCode.none
        cluster.kill_broker(leader)
        cluster.clear_faults()
        state = wait_for(lambda: (s := partition_states(port_of(cluster, others[0]),
                                                        "risky")[0]).leader_id in others and s,
                         10.0, "an unclean election")
        assert state.leader_epoch == 1
        new_port = port_of(cluster, state.leader_id)
        assert produce(new_port, "risky", 0, b"after", acks=1).error_code == ErrorCode.none
        cluster.start_broker(leader)
        wait_isr(cluster, "risky", 0, 3)
        assert cluster.stop() == 0
        copies = {n: segment_bytes(cluster.log_dir, n, "risky-0") for n in (1, 2, 3)}
        assert len(set(copies.values())) == 1
        assert b"lost-" not in copies[leader] and b"after" in copies[leader]
        assert "truncating from 5 to 2" in cluster.serve_log()
    finally:
        cluster.kill()


def test_slow_follower_leaves_the_isr_and_catches_up(tmp_path: Path) -> None:
    """``Partition#maybeShrinkIsr``: a follower whose fetches each wait longer than
    ``replica.lag.time.max.ms`` (``slow-replication``) is not caught up in time and leaves the
    ISR, so acks=all no longer waits for it (``Partition#maybeIncrementLeaderHW`` over the ISR);
    at normal speed it reaches the high watermark and rejoins (``maybeExpandIsr``) with the
    leader's records."""
    cluster = KafkaBroker(tmp_path / "cluster", (*BROKERS, "--replica-lag-time-max-ms", "400"))
    cluster.start()
    try:
        leader = leader_of(cluster, "steady", 0)
        port = port_of(cluster, leader)
        slow = next(n for n in (1, 2, 3) if n != leader)
        cluster.slow_replication(slow, 1500)
        state = wait_isr(cluster, "steady", 0, 2)
        assert slow not in state.isr_nodes
        started = time.monotonic()
        assert produce(port, "steady", 0, b"fast").error_code == ErrorCode.none
        assert time.monotonic() - started < 1.5  # answered without the slow follower
        cluster.clear_faults()
        wait_isr(cluster, "steady", 0, 3)
        assert cluster.stop() == 0
        assert b"fast" in segment_bytes(cluster.log_dir, slow, "steady-0")
    finally:
        cluster.kill()


def test_end_txn_answered_once_the_isr_has_the_coordinator_records(cluster: KafkaBroker) -> None:
    """``TransactionStateManager#appendTransactionToLog`` appends with acks=-1 and
    ``TransactionCoordinator#endTransaction`` answers once PrepareCommit is durable (the
    markers follow): the coordinator killed right after the answer (its followers' fetches
    slowed by ``slow-replication``) leaves a new coordinator, elected from the ISR, that has
    the transaction at least prepared, never Ongoing, and completes it: the record is
    committed."""
    ck = pytest.importorskip("confluent_kafka")
    with WireClient(cluster.ports[0]) as client:
        client.call(request(10, 1, key="probe", key_type=1))
    producer = ck.Producer({"bootstrap.servers": cluster.bootstrap_servers,
                            "transactional.id": "tx-durable"})
    producer.init_transactions(15)
    coordinator = partition_states(cluster.ports[0], "__transaction_state")[
        partition_for("tx-durable")].leader_id
    for follower in (n for n in (1, 2, 3) if n != coordinator):
        cluster.slow_replication(follower, 300)  # the answer must wait for these fetches
    producer.begin_transaction()
    producer.produce("durable", value=b"v")
    producer.commit_transaction(15)
    cluster.kill_broker(coordinator)
    cluster.clear_faults()
    survivor = running_port(cluster, {coordinator})
    state = wait_for(lambda: (s := partition_states(survivor, "__transaction_state")[
        partition_for("tx-durable")]).leader_id not in (-1, coordinator) and s, 10.0,
                     "a new coordinator")

    def described() -> str:
        with WireClient(port_of(cluster, state.leader_id)) as client:
            return str(client.call(request(65, 0, transactional_ids=("tx-durable",)))
                       .transaction_states[0].transaction_state)

    assert described() in ("PrepareCommit", "CompleteCommit")
    wait_for(lambda: described() == "CompleteCommit", 10.0, "the commit completed")
    assert consume_committed(ck, cluster.bootstrap_servers, "durable", 1) == [b"v"]
    del producer
