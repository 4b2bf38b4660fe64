"""kafkatx on a real 3-broker Kafka cluster's log dirs, judged by Kafka's own answers.

One story per Kafka version (``cluster_story.py``): a coordinator's broker SIGKILLed between
PrepareCommit and the markers, a clean shutdown and an unclean shutdown of one broker while the
others go on, an unclean leader election with transactions in flight, follower copies. At each
moment every broker's log dir is copied (live, or as the stop or kill left it) and given to
kafkatx together, as an operator would (``kafkatx inspect broker-1 broker-2 broker-3``), and
each alone; kafkatx's answers are compared with the live cluster's: the LSO (ListOffsets
READ_COMMITTED), open transactions and their start offsets (``describe-producers``, from the
leader and ``--broker-id N`` from each replica), hanging transactions (``find-hanging
--broker-id N``), what Kafka's read_committed Java consumer receives (``kafkatx replay``) and
the coordinator's view (``kafka-transactions.sh describe``) against ``kafkatx timeline``.

Where kafkatx says more or other than Kafka, deliberately, it is asserted exactly here and
said in docs/replicas.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.broker.kafkatx_cli import run_cli

from .cluster_story import DATA_PARTITIONS, Moment, Story, discard, run_story
from .dump_compare import compare_log_dir_dump
from .load_compare import kafka_load_differences
from .storage import KafkaLoad
from .tools import KafkaTools

MOMENTS = ("live", "coordinator-killed", "unclean-election", "stopped")
TopicPartition = tuple[str, int]


@pytest.fixture(scope="module")
def story(kafka_version: str, kafka_tools: KafkaTools,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[Story]:
    """The whole story on a fresh cluster of this version, driven once for the module."""
    told = run_story(kafka_version, tmp_path_factory.mktemp(f"cluster-{kafka_version}"),
                     kafka_tools)
    yield told
    discard(told)


# -- kafkatx, run as a user would (--format json), once per moment and command -----------------

_runs: dict[tuple[str, ...], Any] = {}


def kafkatx(command: str, *paths: Path, fmt: str = "json", status: int = 0,
            extra: tuple[str, ...] = ()) -> Any:
    key = (command, fmt, *extra, *map(str, paths))
    if key not in _runs:
        run = run_cli(command, "--format", fmt, *extra, *map(str, paths))
        assert run.returncode == status, (command, run.returncode, run.stderr.decode()[-2000:])
        out = run.stdout.decode()
        _runs[key] = ([json.loads(line) for line in out.splitlines()] if fmt == "jsonl"
                      else json.loads(out))
    return _runs[key]


def together(m: Moment) -> list[Path]:
    return [m.copies[b] for b in sorted(m.copies)]


def inspected(m: Moment) -> dict[str, Any]:
    doc: dict[str, Any] = kafkatx("inspect", *together(m))
    return doc


def authoritative_rows(m: Moment) -> dict[TopicPartition, dict[str, Any]]:
    """Each data partition's row from its authoritative copy (the replicas section says which;
    a partition in one log dir only is its own)."""
    doc = inspected(m)
    chosen = {(r["topic"], r["partition"]): c["broker"] for r in doc["replicas"]
              for c in r["copies"] if c["role"] == "authoritative"}
    out = {}
    for row in doc["partitions"]:
        tp = (row["topic"], row["partition"])
        if tp in DATA_PARTITIONS and chosen.get(tp, row["broker"]) == row["broker"]:
            out[tp] = row
    return out


def open_in_kafka(rows: list[dict[str, str]]) -> list[tuple[int, int]]:
    """(producer id, start offset) of each open transaction describe-producers lists."""
    return sorted((int(r["ProducerId"]), int(r["CurrentTransactionStartOffset"]))
                  for r in rows if r["CurrentTransactionStartOffset"] not in ("None", "-1"))


def open_in_kafkatx(row: dict[str, Any]) -> list[tuple[int, int]]:
    return sorted((t["producer_id"], t["first_offset"]) for t in row["open_transactions"])


def kinds(doc: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if f["kind"] == kind]


@pytest.fixture(params=MOMENTS)
def moment(request: pytest.FixtureRequest, story: Story) -> Moment:
    return story.moments[str(request.param)]


# -- every moment: the partition's answer is the authoritative copy's -------------------------


def test_lso_and_open_transactions_are_the_leaders(moment: Moment) -> None:
    """ListOffsets READ_COMMITTED and describe-producers, answered by each partition's leader,
    against the authoritative copy among all brokers' log dirs (the leader's own copy, or one
    in sync with it). The leaders' HW checkpoints were current when copied
    (``settle_checkpoints``): a live copy's HW is its last checkpoint, never above the live
    one (docs/replicas.md)."""
    rows = authoritative_rows(moment)
    doc = inspected(moment)
    roles = {(r["topic"], r["partition"]): {c["broker"]: c["role"] for c in r["copies"]}
             for r in doc["replicas"]}
    for tp, lso in moment.kafka.lso.items():
        row = rows[tp]
        assert (row["last_stable_offset"], row["high_watermark"]) == (lso, moment.kafka.hw[tp]), tp
        assert open_in_kafkatx(row) == open_in_kafka(moment.kafka.producers[tp]), tp
        assert row["producers"] == len(moment.kafka.producers[tp]), tp  # the active producers
        if moment.live:  # copied while it led: its copy speaks for the partition
            leader = f"broker-{moment.kafka.leaders[tp]}"
            assert roles[tp][leader] in ("authoritative", "in_sync"), (tp, roles[tp])


def test_each_copy_alone_is_that_brokers_replica(moment: Moment) -> None:
    """``describe-producers --broker-id N`` answers from broker N's replica, a follower's too:
    ``kafkatx lso`` on N's log dir alone lists the same open transactions. Its HW is its own
    checkpoint's, a follower's trailing the leader's: never above what ListOffsets answers, nor
    its LSO (docs/replicas.md)."""
    assert moment.kafka.producers_on
    for (tp, broker), rows in moment.kafka.producers_on.items():
        alone = {(r["topic"], r["partition"]): r
                 for r in kafkatx("lso", moment.copies[broker])}
        assert open_in_kafkatx(alone[tp]) == open_in_kafka(rows), (tp, broker)
        assert alone[tp]["high_watermark"] <= moment.kafka.hw[tp], (tp, broker)
        assert alone[tp]["last_stable_offset"] <= moment.kafka.lso[tp], (tp, broker)


def test_nothing_hangs_where_find_hanging_finds_nothing(moment: Moment) -> None:
    """``find-hanging --broker-id N`` on every running broker, against the findings on all the
    copies and on each running broker's copy alone: no hanging transaction, no abort case."""
    assert moment.kafka.hanging and all(rows == [] for rows in moment.kafka.hanging.values())
    docs = [inspected(moment)] + [kafkatx("inspect", moment.copies[b]) for b in moment.live]
    for doc in docs:
        assert not kinds(doc, "hanging_transaction")
        assert not [f for f in kinds(doc, "lso_pinned") if f["severity"] == "error"]


def test_read_committed_consumer_gets_what_replay_says(moment: Moment) -> None:
    """Kafka's Java consumer (isolation.level=read_committed) from the start of each partition
    to its LSO, against ``kafkatx replay`` of the copies given together (the authoritative
    copy: what a consumer of the leader reads)."""
    for tp, consumed in moment.kafka.consumed.items():
        replayed = kafkatx("replay", *together(moment), fmt="jsonl",
                           extra=("--topic", tp[0], "--partition", str(tp[1])))
        assert [(r["offset"], r["value"].encode()) for r in replayed] == consumed, tp


def test_coordinator_describe_matches_the_timeline(moment: Moment) -> None:
    """``kafka-transactions.sh describe --transactional-id``: the coordinator's state, producer
    id and epoch are the last coordinator state of the id's newest ``timeline`` row; an Ongoing
    transaction's partitions are the row's. A prepared transaction's TopicPartitions are the
    markers the coordinator still has to send: after a coordinator moved, every partition of
    the PrepareCommit (it resends them all, not knowing which markers the dead coordinator
    wrote), so they are among the row's partitions, not necessarily those without a marker."""
    rows = kafkatx("timeline", *together(moment), fmt="jsonl")
    for tid, described in moment.kafka.transactions.items():
        assert described, tid
        mine = [r for r in rows if r["transactional_id"] == tid]
        last = max(mine, key=lambda r: r["coordinator_states"][-1]["offset"])
        state = last["coordinator_states"][-1]
        assert (state["state"], state["producer_id"], state["producer_epoch"]) == (
            described["TransactionState"], int(described["ProducerId"]),
            int(described["ProducerEpoch"])), tid
        theirs = {p for p in described["TopicPartitions"].split(",") if p}
        ours = {f"{p['topic']}-{p['partition']}" for p in last["partitions"]}
        if state["state"] == "Ongoing":
            assert theirs == ours, tid
        else:
            assert theirs <= ours, tid


def test_dump_equals_kafka_dump_log_on_every_copy(moment: Moment, story: Story) -> None:
    """Every file of every broker's copy (live, killed, stopped; leaders' and followers'
    segments, indexes, snapshots, ``__transaction_state`` of the moved coordinator, the
    metadata log): ``kafkatx dump`` prints what ``kafka-dump-log.sh`` prints with its
    decoders."""
    for broker, copy in sorted(moment.copies.items()):
        assert compare_log_dir_dump(story.tools, copy) == [], broker


def test_after_restart_is_kafkas_load_of_every_copy(moment: Moment, kafka_load: KafkaLoad
                                                    ) -> None:
    """``--after-restart`` (the load model ``serve`` loads with too) against Kafka's own
    ``LogLoader`` on a copy of every broker's log dir: leaders' and followers' segments,
    ``.txnindex`` files and snapshots as real replication wrote them, a SIGKILLed broker's
    (recovery) and cleanly stopped ones; every partition, field by field (issue 24)."""
    for broker, copy in sorted(moment.copies.items()):
        assert kafka_load_differences(kafka_load, copy) == [], broker


# -- the faults ---------------------------------------------------------------------------


def test_coordinator_killed_between_prepare_commit_and_the_markers(story: Story) -> None:
    """The new coordinator loads PrepareCommit and sends the markers again
    (``TransactionStateManager#loadTransactionsForTxnTopicPartition``); kafkatx, reading the
    new leader's copy of ``__transaction_state``, says the same: the commit is decided, its
    marker reached coord-data-1 and not yet coord-data-0, nothing to abort."""
    killed = story.moments["coordinator-killed"]
    assert killed.kafka.transactions["coord-a"]["TransactionState"] == "PrepareCommit"
    assert killed.kafka.transactions["coord-a"]["CoordinatorId"] == str(story.leader)
    doc = inspected(killed)
    (stuck,) = kinds(doc, "stuck_prepare")
    assert stuck["transactional_id"] == "coord-a"
    assert "markers written to coord-data-1 (offset 2); missing from coord-data-0" in \
        stuck["message"]
    # coord-data-0's leader alone in its ISR, below min.insync.replicas 2: its HW stays where
    # it was (KIP-966), the checkpoint's
    assert authoritative_rows(killed)[("coord-data", 0)]["high_watermark_source"] == "checkpoint"
    (pending,) = [f for f in kinds(doc, "open_transaction") if f["topic"] == "coord-data"]
    assert pending["severity"] == "warning" and "sent again by any coordinator" in \
        pending["message"]
    # the next moment: the new coordinator's marker is in coord-data-0; coord-data-1's
    # second one waits for its min.insync.replicas, so Kafka still says PrepareCommit
    after = story.moments["unclean-election"]
    assert after.kafka.transactions["coord-a"]["TransactionState"] == "PrepareCommit"
    assert after.kafka.transactions["coord-a"]["TopicPartitions"] == "coord-data-1"
    (stuck,) = kinds(inspected(after), "stuck_prepare")
    assert "markers written to coord-data-0 (offset 3), coord-data-1 (offset 2)" in \
        stuck["message"]
    # in the end the coordinator completed it, and coord-data-1 holds a second COMMIT marker
    stopped = story.moments["stopped"]
    assert stopped.kafka.transactions["coord-a"]["TransactionState"] == "CompleteCommit"
    doc = inspected(stopped)
    assert not kinds(doc, "stuck_prepare")
    (again,) = [f for f in kinds(doc, "empty_transaction") if f["topic"] == "coord-data"]
    assert (again["partition"], again["offset"]) == (1, 3)
    assert "repeats the COMMIT marker at offset 2" in again["message"]


def test_unclean_election_loses_the_old_leaders_tail(story: Story) -> None:
    """F, out of the ISR, became leader of unclean-0; kafkatx predicts where C truncates when
    it follows (``AbstractFetcherThread``'s OffsetsForLeaderEpoch rounds), which the restarted
    C then did: its copy at the end is the new leader's log byte for byte, and its records of
    the two transactions after F left the ISR (one committed, one committed later with its
    marker on F's log) are gone."""
    elected = story.moments["unclean-election"]
    c, f = f"broker-{story.coordinator}", f"broker-{story.follower}"
    (comp,) = [r for r in inspected(elected)["replicas"] if r["topic"] == "unclean"]
    roles = {x["broker"]: x for x in comp["copies"]}
    assert roles[f]["role"] == "authoritative" and roles[c]["role"] == "diverged"
    cut = roles[c]["truncation_offset"]
    assert cut == 3  # u1's records and its marker: what F had when it stopped
    # the new leader alone in unclean-0's ISR (min.insync.replicas 1): its HW is its log end
    # (Partition#maybeIncrementLeaderHW), whatever its checkpoint; so was the killed old
    # leader's, alone in the ISR too
    assert authoritative_rows(elected)[("unclean", 0)]["high_watermark_source"] == \
        "leader_log_end"
    killed = story.moments["coordinator-killed"]
    alone = {(r["topic"], r["partition"]): r for r in kafkatx("lso", killed.copies[
        story.coordinator])}
    assert (alone[("unclean", 0)]["high_watermark"], alone[("unclean", 0)][
        "high_watermark_source"]) == (8, "leader_log_end")
    doc = inspected(elected)
    lost = [x for x in kinds(doc, "replica_lost_committed_records") if x["topic"] == "unclean"]
    assert [x["offset"] for x in lost] == [cut]
    # below C's checkpointed HW (8, checkpointed before the kill): u2's records and marker,
    # u3's records, all acknowledged with acks=all while C alone was in the ISR
    assert (roles[c]["divergent_records"], roles[c]["acknowledged_divergent_records"]) == (5, 5)
    # what C's broker did when it came back: truncated to `cut`, fetched F's log
    end = story.moments["stopped"]
    logs = {b: b"".join(p.read_bytes() for p in sorted((end.copies[b] / "unclean-0").glob(
        "*.log"))) for b in (story.coordinator, story.follower)}
    assert logs[story.coordinator] == logs[story.follower]
    before = b"".join(p.read_bytes() for p in sorted(
        (elected.copies[story.coordinator] / "unclean-0").glob("*.log")))
    assert _batches_below(before, cut) == _batches_below(logs[story.coordinator], cut)
    doc = inspected(end)
    assert not [x for x in doc["findings"] if x["topic"] == "unclean"
                and x["kind"].startswith("replica_")]
    # the committed transaction the election lost is only a missing marker now (Kafka's
    # tools have no trace of it): said once, from the authoritative copy
    (missing,) = [x for x in kinds(doc, "missing_marker") if x["topic"] == "unclean"]
    assert missing["transactional_id"] == story.tids["confluent"]


def test_clean_and_unclean_shutdown_copies(story: Story) -> None:
    """While the others went on, F was stopped (controlled shutdown) and C killed: F's log dir
    says clean shutdown and, alone, has the open transaction the leader still reports for
    coord-data-0; C's does not say it."""
    killed = story.moments["coordinator-killed"]
    header = {b: run_cli("inspect", str(killed.copies[b])).stdout.decode().splitlines()[1]
              for b in (story.coordinator, story.follower)}
    assert header[story.follower].endswith("clean shutdown)")
    assert "clean shutdown" not in header[story.coordinator]
    alone = {(r["topic"], r["partition"]): r for r in kafkatx("lso",
                                                              killed.copies[story.follower])}
    assert open_in_kafkatx(alone[("coord-data", 0)]) == open_in_kafka(
        killed.kafka.producers[("coord-data", 0)])


def test_verify_exit_status_on_all_copies(story: Story) -> None:
    """verify: the unclean election's lost records are an error; once every broker followed
    the new leader and stopped, only warnings remain."""
    elected = kafkatx("verify", *together(story.moments["unclean-election"]), status=1)
    assert {f["kind"] for f in elected["findings"] if f["severity"] == "error"} == {
        "replica_lost_committed_records"}
    assert kafkatx("verify", *together(story.moments["stopped"]))["ok"] is True


def _batches_below(log: bytes, offset: int) -> bytes:
    """The bytes of the batches that start below ``offset``."""
    from kafkatx.formats.segment_scan import scan_segment

    h = scan_segment(log).headers
    keep = [i for i in range(len(h)) if int(h.base_offset[i]) < offset]
    if not keep:
        return b""
    end = int(h.position[keep[-1]]) + int(h.batch_length[keep[-1]]) + 12  # offset, length
    return log[:end]


def test_cluster_features_are_the_controllers(story: Story) -> None:
    """``kafka-features.sh describe`` against ``kafkatx cluster`` on each broker's copy of the
    metadata log: the finalized metadata.version (as its release name) and feature levels."""
    moment = story.moments["live"]
    finalized = moment.kafka.features
    for broker in moment.live:
        (view,) = kafkatx("cluster", moment.copies[broker])
        assert view["metadata_version"]["release"] == finalized["metadata.version"], broker
        levels = {k: v for k, v in finalized.items() if k != "metadata.version" and v != "0"}
        assert {k: str(view["features"].get(k)) for k in levels} == levels, broker

