"""``kafkatx serve --transaction-version 0|1|2`` at the wire: what a Kafka 4 client negotiates
and does under transactions v2 (KIP-890: no AddPartitionsToTxn/AddOffsetsToTxn, an epoch bump
per EndTxn, zombies refused at the partition), the verification of transaction.version 1, and
the Kafka 3.0 behaviour of the default; then kafkatx's own commands on the log dir it wrote."""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from typing import Any

from kio.schema.errors import ErrorCode

from tests.broker.kafkatx_cli import run_cli
from tests.broker.serve_process import ServeProcess
from tests.broker.test_wire import batch, create_topic, fetch
from tests.broker.wire import WireClient, entity, request

Serve = Callable[..., ServeProcess]
PRODUCE, API_VERSIONS, INIT_PRODUCER_ID, ADD_PARTITIONS, END_TXN = 0, 18, 22, 24, 26
TXN_OFFSET_COMMIT = 28
TID = "kip890-writer"
SECOND = datetime.timedelta(seconds=1)


def _versions(c: WireClient) -> tuple[dict[int, int], dict[str, int]]:
    r = c.call(request(API_VERSIONS, 3, client_software_name="kafkatx-tests",
                       client_software_version="1"))
    assert r.error_code == ErrorCode.none
    return ({k.api_key: k.max_version for k in r.api_keys},
            {f.name: f.max_version_level for f in r.finalized_features})


def _produce(c: WireClient, topic: str, partition: int, records: bytes, version: int,
             transactional_id: str | None = TID) -> Any:
    part = entity(PRODUCE, version, "PartitionProduceData", index=partition, records=records)
    data = entity(PRODUCE, version, "TopicProduceData", name=topic, partition_data=(part,))
    resp = c.call(request(PRODUCE, version, transactional_id=transactional_id, acks=-1,
                          timeout=5 * SECOND, topic_data=(data,)))
    return resp.responses[0].partition_responses[0]


def _init(c: WireClient, version: int) -> tuple[int, int]:
    r = c.call(request(INIT_PRODUCER_ID, version, transactional_id=TID,
                       transaction_timeout=60 * SECOND, producer_id=-1, producer_epoch=-1))
    assert r.error_code == ErrorCode.none
    return r.producer_id, r.producer_epoch


def _end(c: WireClient, pid: int, epoch: int, commit: bool, version: int) -> Any:
    return c.call(request(END_TXN, version, transactional_id=TID, producer_id=pid,
                          producer_epoch=epoch, committed=commit))


def _txn_offset_commit(c: WireClient, pid: int, epoch: int, offset: int, version: int) -> Any:
    part = entity(TXN_OFFSET_COMMIT, version, "TxnOffsetCommitRequestPartition",
                  partition_index=0, committed_offset=offset, committed_leader_epoch=-1,
                  committed_metadata="")
    topic = entity(TXN_OFFSET_COMMIT, version, "TxnOffsetCommitRequestTopic", name="orders",
                   partitions=(part,))
    r = c.call(request(TXN_OFFSET_COMMIT, version, transactional_id=TID, group_id="billing",
                       producer_id=pid, producer_epoch=epoch, generation_id=-1, member_id="",
                       group_instance_id=None, topics=(topic,)))
    return r.topics[0].partitions[0].error_code


def _cli_json(*args: str) -> Any:
    run = run_cli(*args, "--format", "json")
    assert run.returncode in (0, 1), run.stderr.decode()
    return run.returncode, json.loads(run.stdout)


def test_transactions_v2_at_the_wire(serve: Serve) -> None:
    proc = serve("--transaction-version", "2")
    with WireClient(proc.port) as c:
        ranges, finalized = _versions(c)
        assert finalized == {"transaction.version": 2}
        assert (ranges[PRODUCE], ranges[END_TXN], ranges[TXN_OFFSET_COMMIT]) == (12, 5, 5)
        create_topic(c, "orders", 2)
        pid, epoch = _init(c, 5)
        assert epoch == 0
        # No AddPartitionsToTxn: Produce v12 adds each partition to the transaction.
        for partition in (0, 1):
            resp = _produce(c, "orders", partition, batch(2, pid=pid, epoch=0, seq=0, txn=True),
                            12)
            assert resp.error_code == ErrorCode.none
        assert fetch(c, "orders", 0, isolation=1).last_stable_offset == 0
        # No AddOffsetsToTxn: TxnOffsetCommit v5 adds the group's offsets partition.
        assert _txn_offset_commit(c, pid, 0, 2, 5) == ErrorCode.none
        end = _end(c, pid, 0, True, 5)
        assert (end.error_code, end.producer_id, end.producer_epoch) == (ErrorCode.none, pid, 1)
        assert fetch(c, "orders", 0, isolation=1).last_stable_offset == 3
        # The next transaction at the bumped epoch, aborted: the next bump.
        resp = _produce(c, "orders", 0, batch(1, pid=pid, epoch=1, seq=0, txn=True), 12)
        assert (resp.error_code, resp.base_offset) == (ErrorCode.none, 3)
        end = _end(c, pid, 1, False, 5)
        assert (end.error_code, end.producer_epoch) == (ErrorCode.none, 2)
        # A zombie still at epoch 1 cannot open a transaction nobody would end.
        zombie = _produce(c, "orders", 1, batch(1, pid=pid, epoch=1, seq=1, txn=True), 12)
        assert zombie.error_code == ErrorCode.invalid_producer_epoch
        # Its EndTxn looks like a retry of the abort (the epoch just below the current one):
        # a commit of it is INVALID_TXN_STATE; an older epoch is fenced.
        assert _end(c, pid, 1, True, 5).error_code == ErrorCode.invalid_txn_state
        assert _end(c, pid, 0, True, 5).error_code == ErrorCode.producer_fenced
        live = fetch(c, "orders", 3, isolation=1)  # the markers' segment (rolled by time)
        assert live.last_stable_offset == live.high_watermark == 5
        assert [(a.producer_id, a.first_offset) for a in live.aborted_transactions] == [(pid, 3)]
    assert proc.stop() == 0, proc.stderr()
    log_dir = str(proc.log_dir)
    status, report = _cli_json("verify", log_dir)
    assert status == 0, report
    _, lso = _cli_json("lso", log_dir)
    rows = {(r["topic"], r["partition"]): r["last_stable_offset"] for r in lso}
    assert (rows[("orders", 0)], rows[("orders", 1)]) == (5, 3)
    run = run_cli("dump", str(proc.log_dir / "orders-0"), "--format", "jsonl")
    markers = [json.loads(line) for line in run.stdout.decode().splitlines()]
    assert [(m["control"]["type"], m["producer_epoch"]) for m in markers
            if m.get("is_control")] == [("COMMIT", 1), ("ABORT", 2)]


def test_transaction_version_1_refuses_a_partition_never_added(serve: Serve) -> None:
    proc = serve("--transaction-version", "1")
    with WireClient(proc.port) as c:
        ranges, finalized = _versions(c)
        assert finalized == {"transaction.version": 1}
        assert (ranges[PRODUCE], ranges[END_TXN]) == (9, 3)  # no transactions v2 offered
        create_topic(c, "orders", 2)
        pid, epoch = _init(c, 4)
        add = c.call(request(ADD_PARTITIONS, 3, v3_and_below_transactional_id=TID,
                             v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
                             v3_and_below_topics=(entity(ADD_PARTITIONS, 3,
                                                         "AddPartitionsToTxnTopic",
                                                         name="orders", partitions=(0,)),)))
        assert add.results_by_topic_v3_and_below[0].results_by_partition[0] \
            .partition_error_code == ErrorCode.none
        ok = _produce(c, "orders", 0, batch(1, pid=pid, epoch=epoch, seq=0, txn=True), 9)
        assert ok.error_code == ErrorCode.none
        late = _produce(c, "orders", 1, batch(1, pid=pid, epoch=epoch, seq=0, txn=True), 9)
        assert late.error_code == ErrorCode.invalid_txn_state
        assert late.error_message == "Partition was not added to the transaction"
        assert _end(c, pid, epoch, True, 3).error_code == ErrorCode.none
        assert fetch(c, "orders", 0, isolation=1, partition=1).high_watermark == 0
    assert proc.stop() == 0, proc.stderr()
    status, _ = _cli_json("verify", str(proc.log_dir))
    assert status == 0


def test_default_is_kafka_3_0_without_verification(serve: Serve) -> None:
    """The default advertises no finalized feature and does not verify: a write to a partition
    never added is appended and hangs that partition, as on a Kafka 3.0 cluster."""
    proc = serve()
    with WireClient(proc.port) as c:
        ranges, finalized = _versions(c)
        assert finalized == {} and ranges[END_TXN] == 3
        create_topic(c, "orders")
        pid, epoch = _init(c, 4)
        stray = _produce(c, "orders", 0, batch(1, pid=pid, epoch=epoch, seq=0, txn=True), 9)
        assert stray.error_code == ErrorCode.none
        assert fetch(c, "orders", 0, isolation=1).last_stable_offset == 0
    assert proc.stop() == 0, proc.stderr()
