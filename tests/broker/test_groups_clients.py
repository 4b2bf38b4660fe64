"""``kafkatx groups`` on a log dir written by ``kafkatx serve`` with real librdkafka clients:
a group stuck behind a hanging transaction and a group committing offsets in transactions; then
real read_committed consumers of those groups receive what ``groups`` predicted."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import confluent_kafka as ck

from tests.broker.serve_process import ServeProcess
from tests.readonly import assert_unchanged, snapshot_tree

TIMEOUT_S = 10.0
ARGS = ("--group-initial-rebalance-delay-ms", "0")


def _plain(bootstrap: str, topic: str, keys: list[str]) -> None:
    p = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for k in keys:
        p.produce(topic, key=k.encode(), value=b"v", partition=0)
    assert p.flush(TIMEOUT_S) == 0


def _consumer(bootstrap: str, group: str) -> ck.Consumer:
    return ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                        "isolation.level": "read_committed", "enable.auto.commit": False,
                        "auto.offset.reset": "earliest"})


def _consume(consumer: ck.Consumer, topic: str, want: int, wait_s: float) -> list[ck.Message]:
    consumer.subscribe([topic])
    got: list[ck.Message] = []
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and len(got) < want:
        for m in consumer.consume(num_messages=want, timeout=0.3):
            assert m.error() is None, m.error()
            got.append(m)
    return got


def _groups(log_dir: Path) -> dict[str, dict]:
    proc = subprocess.run([sys.executable, "-m", "kafkatx", "groups", str(log_dir), "--format",
                           "json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return {g["group"]: g for g in json.loads(proc.stdout)}


def test_groups_predicts_what_real_read_committed_consumers_receive(
        serve: Callable[..., ServeProcess], tmp_path: Path) -> None:
    """``GroupMetadataManager`` loads transactional offset commits only once committed;
    read_committed fetches stop at the LSO (``UnifiedLog#fetchLastStableOffsetMetadata``), so a
    group at the LSO of a partition with a hanging transaction receives nothing."""
    log_dir = tmp_path / "logdir"
    server = serve(*ARGS, "--fault", "drop-marker:payments-0", log_dir=log_dir)
    bootstrap = server.bootstrap
    # payments-0: 3 plain records, a transaction whose COMMIT never reaches it, 2 plain records
    _plain(bootstrap, "payments", ["p-1", "p-2", "p-3"])
    checkout = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": "checkout"})
    checkout.init_transactions(TIMEOUT_S)
    checkout.begin_transaction()
    for k in ("p-4", "p-5"):
        checkout.produce("payments", key=k.encode(), value=b"v", partition=0)
    checkout.commit_transaction(TIMEOUT_S)
    _plain(bootstrap, "payments", ["p-6", "p-7"])
    billing = _consumer(bootstrap, "billing")
    assert len(_consume(billing, "payments", 3, 10)) == 3
    billing.commit(asynchronous=False)
    billing.close()
    audit = _consumer(bootstrap, "audit")
    audit.commit(offsets=[ck.TopicPartition("payments", 0, 1)], asynchronous=False)
    audit.close()

    # orders-0: 6 plain records; fulfilment commits 3 in one transaction, then sends offset 6
    # in a second transaction that is never completed
    _plain(bootstrap, "orders", [f"o-{i}" for i in range(6)])
    fulfilment = _consumer(bootstrap, "fulfilment")
    got = _consume(fulfilment, "orders", 6, 10)
    assert len(got) == 6
    writer = ck.Producer({"bootstrap.servers": bootstrap, "transactional.id": "fulfilment-w"})
    writer.init_transactions(TIMEOUT_S)
    for end, complete in ((3, True), (6, False)):
        writer.begin_transaction()
        writer.produce("shipments", key=b"s", value=b"v", partition=0)
        writer.send_offsets_to_transaction([ck.TopicPartition("orders", 0, end)],
                                           fulfilment.consumer_group_metadata(), TIMEOUT_S)
        if complete:
            writer.commit_transaction(TIMEOUT_S)
        else:
            assert writer.flush(TIMEOUT_S) == 0
    fulfilment.close()
    assert server.stop() == 0
    del writer, checkout

    before = snapshot_tree(log_dir)
    groups = _groups(log_dir)
    assert_unchanged(log_dir, before)
    (stuck,) = groups["billing"]["partitions"]
    assert (stuck["topic"], stuck["committed_offset"], stuck["last_stable_offset"]) == \
        ("payments", 3, 3)
    assert stuck["status"] == "stuck_behind_transaction"
    assert (stuck["lag_offsets"], stuck["lag_records_read_committed"],
            stuck["records_behind_lso"]) == (4, 0, 4)
    assert stuck["holding_transactional_id"] == "checkout"
    assert stuck["holding_first_offset"] == 3
    (lagging,) = groups["audit"]["partitions"]
    assert (lagging["status"], lagging["lag_records_read_committed"]) == ("lagging", 2)
    (orders,) = groups["fulfilment"]["partitions"]
    assert (orders["committed_offset"], orders["lag_records_read_committed"]) == (3, 3)
    assert (orders["status"], orders["pending_offset"]) == ("unstable_offset_commit", 6)
    (pending,) = groups["fulfilment"]["pending_transactional_commits"]
    assert (pending["topic"], pending["offset"], pending["transactional_id"]) == \
        ("orders", 6, "fulfilment-w")

    # the same log dir served again (no fault; fulfilment-w's transaction still open)
    server = serve(*ARGS, log_dir=log_dir)
    reader = _consumer(server.bootstrap, "audit")
    received = _consume(reader, "payments", 10, 5)
    reader.close()
    assert [m.offset() for m in received] == [1, 2]  # then the LSO: as predicted
    assert len(received) == lagging["lag_records_read_committed"]
    for group, topic in (("billing", "payments"), ("fulfilment", "orders")):
        blocked = _consumer(server.bootstrap, group)
        assert _consume(blocked, topic, 1, 3) == [], group  # stuck / unstable, as predicted
        blocked.close()
