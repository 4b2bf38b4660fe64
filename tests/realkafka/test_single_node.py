"""kafkatx against Kafka on one combined KRaft node, scenario by scenario (issue 22).

Two nodes per Kafka version run side by side for the whole module: one formatted with the
version's default features (transactions v2 on 4.x) and one with ``transaction.version=1``.
Every scenario drives real clients on both, injects its fault, takes copies of the log dirs and
compares kafkatx's answers on each copy with Kafka's own from the live node (``scenario.py``).
The nodes never write their high-watermark checkpoint while running
(``replica.high.watermark.checkpoint.interval.ms`` of an hour), so every live copy has the
stale ``replication-offset-checkpoint`` a copy can have.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .dump_compare import compare_log_dir_dump
from .load_compare import kafka_load_differences
from .node import KafkaCluster, KafkaNode
from .scenario import (
    JavaProducer,
    OpenTransaction,
    PythonProducer,
    assert_same,
    consume_read_committed,
    create_topic,
    kafka_answers,
    kafkatx_answers,
    list_offsets,
    open_together,
    produce_plain,
    remedy_commands,
    run_remedy,
    set_broker_config,
    snapshot,
    stray_transactional_batch,
    tp,
    wait_until,
)
from .storage import KafkaLoad
from .tools import JavaClient, JavaClientError, KafkaTools

SETTINGS = {"replica.high.watermark.checkpoint.interval.ms": "3600000"}
TIMEOUT_MS = 25_000  # transaction.timeout.ms of the scenarios' producers
# a topic whose first segment retention deletes as soon as the next append rolls it, when its
# records are old (segment.ms and retention.ms measure from the records' CreateTime)
FEATURE_COMMAND = "org.apache.kafka.tools.FeatureCommand"
VERIFICATION = "transaction.partition.verification.enable"  # KIP-890 part 1, dynamic
RETAINED = {"segment.ms": "60000", "retention.ms": "600000"}


@dataclass
class Bench:
    """One node and what the scenarios need beside it."""

    label: str  # "tv2" (the version's default features) or "tv1"
    node: KafkaNode
    consumer: JavaClient  # read_committed
    tools: KafkaTools
    home: Path

    @property
    def bootstrap(self) -> str:
        return self.node.bootstrap


@pytest.fixture(scope="module")
def benches(module_kafka_cluster: Callable[..., KafkaCluster], kafka_tools: KafkaTools,
            kafka_version: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Bench]]:
    clusters = {"tv2": module_kafka_cluster(settings=SETTINGS, name="tv2", start=False),
                "tv1": module_kafka_cluster(settings=SETTINGS, name="tv1", start=False,
                                            features={"transaction.version": 1})}
    starts = [(c.nodes[0], c.nodes[0].launch()) for c in clusters.values()]
    for node, offset in starts:
        node.wait_ready(offset)
    home = tmp_path_factory.mktemp("benches")
    out = []
    for label, cluster in clusters.items():
        consumer = JavaClient(kafka_version, home / f"consumer-{label}.log")
        consumer.consumer(bootstrap_servers=cluster.bootstrap, isolation_level="read_committed",
                          enable_auto_commit="false", auto_offset_reset="earliest",
                          group_id=f"kafkatx-check-{label}")
        out.append(Bench(label, cluster.nodes[0], consumer, kafka_tools, home / label))
    yield out
    for bench in out:
        bench.consumer.kill()


CLIENTS = ("java", "confluent-kafka", "kafka-python", "idle-java")


def committer(bench: Bench, client: str, java_client: Callable[[], JavaClient],
              topic: str, timeout_ms: int = TIMEOUT_MS) -> OpenTransaction:
    """``client`` commits one record to ``topic``-0, then leaves two open."""
    name = tp(topic, 0)
    txid = f"{bench.label}-{topic}"
    values = [f"{client}-committed", f"{client}-open-1", f"{client}-open-2"]
    if client.endswith("java"):
        return JavaProducer(java_client(), bench.bootstrap, txid, name, values, timeout_ms,
                            commit_first=1)
    return PythonProducer(client, bench.bootstrap, txid, name, values, timeout_ms,
                          commit_first=1)


def test_open_transactions_then_the_coordinators_timeout_abort(
        benches: list[Bench], java_client: Callable[[], JavaClient], tmp_path: Path) -> None:
    """Transactions left open, compared while open, then after the coordinator aborted them
    on their timeout:

    - Kafka's Java client, confluent-kafka and kafka-python each commit a transaction, open
      another and are SIGKILLed;
    - a Java producer stays alive but idle past its timeout (its commit then fails);
    - retention deletes the start of an open transaction: its records carry an hour-old
      CreateTime, so the next append rolls the segment (``segment.ms``) and retention
      (``retention.ms``) deletes it; the transaction then starts below the log start offset.
    """
    old = int(time.time() * 1000) - 3_600_000
    producers: dict[tuple[str, str], OpenTransaction] = {}
    parts = {b.label: [tp(f"killed-{c}", 0) for c in CLIENTS] + ["retained-0"]
             for b in benches}
    tids = {b.label: [f"{b.label}-killed-{c}" for c in CLIENTS] + [f"{b.label}-retained"]
            for b in benches}
    snaps = []
    for bench in benches:  # one node at a time: each snapshot must beat its timeouts
        create_topic(bench.bootstrap, "retained", config=RETAINED)
        for client in CLIENTS:
            producers[bench.label, client] = committer(bench, client, java_client,
                                                       f"killed-{client}")
        producers[bench.label, "retained"] = JavaProducer(
            java_client(), bench.bootstrap, f"{bench.label}-retained", tp("retained", 0),
            ["retained-open-1", "retained-open-2"], TIMEOUT_MS, timestamp_ms=old)
        open_together(p for (label, _), p in producers.items() if label == bench.label)
        for client in ("java", "confluent-kafka", "kafka-python"):
            producers[bench.label, client].kill()
        assert produce_plain(bench.bootstrap, "retained-0", ["after-0", "after-1"]) == [2, 3]
        wait_until(lambda b=bench: list_offsets(b.bootstrap, ["retained-0"], earliest=True)
                   == {"retained-0": 2}, 30, "retention to delete the first segment")
        snaps.append(snapshot(bench.node, bench.tools, bench.consumer, parts[bench.label],
                              tmp_path / f"{bench.label}-open", tids[bench.label]))
    for bench, snap in zip(benches, snaps, strict=True):
        assert all(len(snap.kafka.open[name]) == 1 for name in parts[bench.label]), snap.kafka
        assert snap.kafka.lso["retained-0"] == 2  # the log start: the transaction began at 0
        assert {t[0] for t in snap.kafka.transactions.values()} == {"Ongoing"}
        view = kafkatx_answers(snap.copy, parts[bench.label],
                               transactional_ids=tids[bench.label])
        assert_same(snap.kafka, view.answers, f"{bench.label}: transactions open, live copy")
        # their coordinator still runs them: no abort to run behind its back
        assert not [f for f in view.inspect["findings"] if f["remediation"] and any(
            command[0] == "abort" for command in remedy_commands(f["remediation"]))]

    for bench in benches:
        # each partition: 2 records open from offset 2 (retained: 0), its ABORT marker at 4
        wait_until(lambda b=bench: set(list_offsets(b.bootstrap, parts[b.label]).values())
                   == {5}, TIMEOUT_MS / 1000 + 30, "the coordinator's timeout aborts")
        idle = producers[bench.label, "idle-java"]
        assert isinstance(idle, JavaProducer)
        with pytest.raises(JavaClientError):
            idle.client.commit()
    snaps = [snapshot(b.node, b.tools, b.consumer, parts[b.label],
                      tmp_path / f"{b.label}-aborted", tids[b.label]) for b in benches]
    for bench, snap in zip(benches, snaps, strict=True):
        # the coordinator's timeout abort: a new epoch (TV1 and TV2 both bump it)
        assert {t[0] for t in snap.kafka.transactions.values()} == {"CompleteAbort"}
        view = kafkatx_answers(snap.copy, parts[bench.label],
                               transactional_ids=tids[bench.label])
        assert_same(snap.kafka, view.answers, f"{bench.label}: timed out and aborted")
        timed_out = {f["transactional_id"] for f in view.findings("transaction_timeout_exceeded")}
        assert timed_out == {f"{bench.label}-{topic}" for topic in
                             [*(f"killed-{c}" for c in CLIENTS), "retained"]}


def finalized_level(bench: Bench, feature: str) -> int:
    """``kafka-features.sh describe``'s FinalizedVersionLevel of ``feature``."""
    out = bench.tools.run(FEATURE_COMMAND, "--bootstrap-server", bench.bootstrap,
                          "describe").check().stdout
    line = next(x for x in out.splitlines() if x.split()[1:2] == [feature])
    return int(line.split("FinalizedVersionLevel:")[1].split()[0])


def test_a_hanging_transaction_and_its_remedy(benches: list[Bench],
                                              java_client: Callable[[], JavaClient],
                                              tmp_path: Path) -> None:
    """A real hanging transaction: with ``transaction.partition.verification.enable`` off (a
    dynamic broker config), a transactional batch of a running transaction's producer id and
    epoch reaches ``hang-b``, a partition the transaction never added (a late produce request,
    KIP-890's case), with an hour-old CreateTime (so find-hanging's 15 minutes are past); the
    transaction commits and its COMMIT marker goes to ``hang-a`` only. Kafka and kafkatx must
    agree it hangs; then the remediation kafkatx prints is run with Kafka's TransactionsCommand:
    the read_committed consumer of ``hang-b`` moves on and ``hang-a``'s committed records stay;
    no transaction committed the stray records, so the remedy is a plain abort (the export step
    of a committed one is proven in the lost-marker scenario below)."""
    old = int(time.time() * 1000) - 3_600_000
    parts = ["hang-a-0", "hang-b-0"]
    stray = ["stray-1", "stray-2"]
    for bench in benches:
        for topic in ("hang-a", "hang-b"):
            create_topic(bench.bootstrap, topic)
        set_broker_config(bench.bootstrap, bench.node.node_id, VERIFICATION, "false")
        producer = java_client()
        producer.producer(bootstrap_servers=bench.bootstrap, transactional_id=f"{bench.label}-hang")
        producer.init()
        producer.begin()
        producer.send("hang-a", 0, None, "paid-1")
        producer.send("hang-a", 0, None, "paid-2")
        assert producer.flush() == [0, 1]
        [row] = bench.tools.describe_producers(bench.bootstrap, "hang-a", 0)
        base = stray_transactional_batch(bench.bootstrap, "hang-b-0", f"{bench.label}-hang",
                                         int(row["ProducerId"]), int(row["ProducerEpoch"]),
                                         stray, old)
        assert base == 0
        producer.commit()
        set_broker_config(bench.bootstrap, bench.node.node_id, VERIFICATION, "true")
        assert produce_plain(bench.bootstrap, "hang-b-0", ["after-stray"]) == [2]

    for bench in benches:
        tids = [f"{bench.label}-hang"]
        snap = snapshot(bench.node, bench.tools, bench.consumer, parts,
                        tmp_path / f"{bench.label}-hanging", tids)
        assert snap.kafka.lso["hang-b-0"] == 0 and len(snap.kafka.hanging) == 1, snap.kafka
        view = kafkatx_answers(snap.copy, parts, transactional_ids=tids)
        assert_same(snap.kafka, view.answers, f"{bench.label}: a hanging transaction")
        # the transaction version kafkatx reads in the metadata log is the one Kafka finalized
        [cluster] = view.inspect["cluster"]
        assert cluster["features"].get("transaction.version", 0) == finalized_level(
            bench, "transaction.version") == (1 if bench.label == "tv1" else 2)
        [finding] = view.findings("hanging_transaction", "hang-b-0")
        remedy = run_remedy(finding["remediation"], bench.bootstrap, bench.tools,
                            tmp_path / bench.label)
        # no transaction ever committed these records: a plain abort, nothing to export first
        [(_, _, start)] = snap.kafka.hanging
        assert [args[0] for args, _ in remedy.tool_runs] == ["abort"] and not remedy.exported
        assert remedy.tool_runs[0][0][-2:] == ["--start-offset", str(start)]
        wait_until(lambda b=bench: list_offsets(b.bootstrap, ["hang-b-0"])["hang-b-0"] == 4,
                   30, "the abort marker to unblock hang-b")
        after = snapshot(bench.node, bench.tools, bench.consumer, parts,
                         tmp_path / f"{bench.label}-remedied", tids)
        assert after.kafka.records == {"hang-a-0": [(0, "paid-1"), (1, "paid-2")],
                                       "hang-b-0": [(2, "after-stray")]}
        assert not after.kafka.hanging and not any(after.kafka.open.values())
        view = kafkatx_answers(after.copy, parts, transactional_ids=tids)
        assert_same(after.kafka, view.answers, f"{bench.label}: after the remedy")
        assert not view.findings("hanging_transaction")


def test_clean_and_unclean_shutdowns_and_a_lost_commit_marker(
        benches: list[Bench], java_client: Callable[[], JavaClient], kafka_load: KafkaLoad,
        tmp_path: Path) -> None:
    """Copies taken live, after a clean stop (SIGTERM) and after a SIGKILL, each compared with
    Kafka's answers of the moment it was taken; between the two stops, a COMMIT marker lost:

    - a live Java producer keeps a transaction open across everything (its timeout is long);
    - a transaction to ``lost-a`` and ``lost-b`` (hour-old CreateTime) is committed, but
      ``lost-b-0``'s files are put back, while the node is down, as they were before its COMMIT
      marker (as a restored backup or a lost disk write leaves them), and the node restarts
      without its clean-shutdown marker, so it rebuilds ``lost-b-0``'s producer state from the
      log. The coordinator completed the commit and will not send the marker again: a hanging
      transaction the coordinator COMMITTED. kafkatx's remedy exports the records first; they
      must be the ones the read_committed consumer received before the loss;
    - after the restart the high-watermark checkpoint (written at the stop) is stale for every
      partition written since: the live copy's HW must still be Kafka's.

    Every file of every copy (TV1 and TV2 markers, the hanging and remedied partitions of the
    module's other scenarios, both transaction-log versions) is also dumped by
    ``kafka-dump-log.sh`` with its decoders: ``kafkatx dump`` must print the same; and every
    copy is loaded by Kafka's own ``LogLoader``: ``--after-restart`` must say what it loads
    (issue 24: after a clean shutdown, a crash, a lost marker).
    """
    old = int(time.time() * 1000) - 3_600_000
    parts = ["shut-open-0", "lost-a-0", "lost-b-0"]
    openers = [JavaProducer(java_client(), b.bootstrap, f"{b.label}-shut", "shut-open-0",
                            ["shut-committed", "shut-open-1"], 300_000, commit_first=1)
               for b in benches]
    open_together(openers)
    saved: dict[str, Path] = {}
    received: dict[str, list[tuple[int, str | None]]] = {}
    for bench in benches:
        lost = java_client()
        lost.producer(bootstrap_servers=bench.bootstrap, transactional_id=f"{bench.label}-lost")
        lost.init()
        lost.begin()
        for topic in ("lost-a", "lost-b"):
            for i in (1, 2):
                lost.send(topic, 0, None, f"{topic}-{i}", old)
        assert lost.flush() == [0, 1, 0, 1]
        saved[bench.label] = shutil.copytree(bench.node.log_dir / "lost-b-0",
                                             tmp_path / f"{bench.label}-lost-b-0-before")
        lost.commit()
        lost.close()
        wait_until(lambda b=bench: list_offsets(b.bootstrap, ["lost-b-0"])["lost-b-0"] == 3,
                   30, "the COMMIT marker in lost-b-0")
        received[bench.label] = consume_read_committed(bench.consumer, "lost-b-0", 3)
        assert received[bench.label] == [(0, "lost-b-1"), (1, "lost-b-2")]

    def ids(b: Bench) -> list[str]:
        return [f"{b.label}-shut", f"{b.label}-lost"]

    live = [snapshot(b.node, b.tools, b.consumer, parts, tmp_path / f"{b.label}-live", ids(b))
            for b in benches]
    for bench, snap in zip(benches, live, strict=True):
        assert_same(snap.kafka, kafkatx_answers(snap.copy, parts,
                                                transactional_ids=ids(bench)).answers,
                    f"{bench.label}: live copy")
    for bench in benches:
        bench.node.stop()
    copies = [(b, s.copy) for b, s in zip(benches, live, strict=True)]
    for bench, snap in zip(benches, live, strict=True):
        stopped = bench.node.copy_log_dir(tmp_path / f"{bench.label}-stopped")
        copies.append((bench, stopped))
        assert (stopped / ".kafka_cleanshutdown").exists()
        assert_same(snap.kafka, kafkatx_answers(stopped, parts,
                                                transactional_ids=ids(bench)).answers,
                    f"{bench.label}: copy after a clean shutdown")

    for bench in benches:
        shutil.rmtree(bench.node.log_dir / "lost-b-0")
        shutil.copytree(saved[bench.label], bench.node.log_dir / "lost-b-0")
        (bench.node.log_dir / ".kafka_cleanshutdown").unlink()
    starts = [(b.node, b.node.launch()) for b in benches]
    for node, offset in starts:
        node.wait_ready(offset)
    for bench in benches:
        assert produce_plain(bench.bootstrap, "lost-a-0", ["after-restart"]) == [3]
    restarted = [snapshot(b.node, b.tools, b.consumer, parts, tmp_path / f"{b.label}-restarted",
                          ids(b)) for b in benches]
    copies += [(b, s.copy) for b, s in zip(benches, restarted, strict=True)]
    for bench, snap in zip(benches, restarted, strict=True):
        assert snap.kafka.hanging == {("lost-b-0", next(iter(snap.kafka.open["lost-b-0"])), 0)}
        # the coordinator completed the commit: it has nothing more to send
        assert snap.kafka.transactions[f"{bench.label}-lost"][0] == "CompleteCommit"
        view = kafkatx_answers(snap.copy, parts, transactional_ids=ids(bench))
        assert_same(snap.kafka, view.answers, f"{bench.label}: restarted, a marker lost")
        [finding] = view.findings("hanging_transaction", "lost-b-0")
        assert "COMMITTED" in finding["message"]
        remedy = run_remedy(finding["remediation"], bench.bootstrap, bench.tools,
                            tmp_path / bench.label)
        [exported] = remedy.exported.values()
        assert [(r["offset"], r["value"]) for line in exported if line["kind"] == "batch"
                for r in line["records"]] == received[bench.label]
        wait_until(lambda b=bench: list_offsets(b.bootstrap, ["lost-b-0"])["lost-b-0"] == 3,
                   30, "the abort marker to unblock lost-b-0")

    for bench in benches:
        before_kill = kafka_answers(bench.node, bench.tools, bench.consumer, parts,
                                    transactional_ids=ids(bench))
        assert before_kill.records["lost-a-0"] == [(0, "lost-a-1"), (1, "lost-a-2"),
                                                   (3, "after-restart")]
        assert before_kill.records["lost-b-0"] == [] and not before_kill.hanging
        bench.node.kill()
        killed = bench.node.copy_log_dir(tmp_path / f"{bench.label}-killed")
        copies.append((bench, killed))
        assert_same(before_kill, kafkatx_answers(killed, parts,
                                                 transactional_ids=ids(bench)).answers,
                    f"{bench.label}: copy after SIGKILL")
    for bench, copy in copies:
        assert compare_log_dir_dump(bench.tools, copy) == [], copy.name
        assert kafka_load_differences(kafka_load, copy) == [], copy.name
    for opener in openers:
        opener.kill()
