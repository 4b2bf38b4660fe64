"""``kafkatx serve --brokers 3`` under chaos (issue 25): two librdkafka producers commit and
abort transactions over three partitions and a read_committed consumer group commits its
position, while the brokers leading the data partitions and the coordinators are killed (some
after being cut off from their followers) and started again (:mod:`tests.broker.chaos`).

No aborted record is ever visible, no transaction is partly visible, every confirmed commit is
visible whole, no confirmed offset commit is lost (Kafka's contracts:
``TransactionStateManager#appendTransactionToLog`` and
``GroupMetadataManager#storeOffsets`` answer only what the ISR has); after a clean stop every
replica of the data partitions is identical (and, in the soak, ``kafkatx inspect``'s replica
comparison finds nothing).

CI runs ``CHAOS_KILLS`` kills; ``KAFKATX_CHAOS_KILLS=300`` (and ``KAFKATX_CHAOS_SEED``) make it
the soak recorded in docs/serve.md.
"""

from __future__ import annotations

import os
import random
import threading
import time
from pathlib import Path

import pytest

from kafkatx.testing import KafkaBroker
from tests.broker import chaos
from tests.broker.test_cluster import assert_replicas_identical, segment_bytes

pytest.importorskip("confluent_kafka")

CI_KILLS = 6
CHAOS_KILLS = int(os.environ.get("KAFKATX_CHAOS_KILLS", str(CI_KILLS)))
SEED = int(os.environ.get("KAFKATX_CHAOS_SEED", "2025"))
WRITERS = ["chaos-w1", "chaos-w2"]


def test_no_aborted_record_and_no_partial_transaction_under_kills(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    clients_before = chaos.live_clients()
    cluster = KafkaBroker(tmp_path / "cluster", (
        "--brokers", "3", "--transaction-abort-interval-ms", "1000",
        "--replica-lag-time-max-ms", "3000")).start()
    stop = threading.Event()
    threads: list[threading.Thread] = []
    try:
        chaos.create_topic(cluster.bootstrap_servers)
        ledger = chaos.Ledger()
        threads = [chaos.Writer(cluster.bootstrap_servers, name, ledger,
                                random.Random(rng.random()), stop) for name in WRITERS]
        threads.append(chaos.Reader(cluster.bootstrap_servers, ledger, stop))
        for thread in threads:
            thread.start()
        faults = chaos.Chaos(cluster, rng, WRITERS)
        stalls = 0
        while faults.kills < CHAOS_KILLS:
            ended = ledger.ended
            deadline = time.monotonic() + 30
            while ledger.ended == ended and time.monotonic() < deadline:
                time.sleep(0.02)  # each kill lands after some progress, at a random moment
            stalls += ledger.ended == ended
            time.sleep(rng.uniform(0.0, 0.3))
            faults.round()
        time.sleep(1.0)
        stop.set()
        for thread in threads:
            thread.join(180)
        failures = [f"{t.name}: " + ("still running 180 s after the stop" if t.is_alive()
                                     else str(getattr(t, "failure", None)))
                    for t in threads if t.is_alive() or getattr(t, "failure", None)]
        final = chaos.read_all_committed(cluster.bootstrap_servers)
        offsets = chaos.committed_offsets(cluster.bootstrap_servers)
        problems = chaos.check(ledger, final, offsets)
        counts = {o: len(ledger.by_outcome(o)) for o in ("committed", "aborted", "unknown")}
        summary = (f"seed {SEED}: {faults.kills} kills ({faults.cut_offs} after a cut-off), "
                   f"{counts}, {len(ledger.received)} records read live, {stalls} stalls; "
                   + "; ".join(faults.log))
        print(summary)
        assert not failures and not problems, "\n".join(
            [summary, *failures, *problems, *chaos.diagnose(cluster, ledger, problems)])
        assert counts["committed"] > 0 and counts["aborted"] > 0, summary
        assert cluster.stop() == 0
        if CHAOS_KILLS > CI_KILLS:  # the soak: kafkatx inspect's replica comparison too
            assert_replicas_identical(cluster.log_dir)
        else:
            for p in range(chaos.PARTITIONS):
                copies = {segment_bytes(cluster.log_dir, n, f"{chaos.TOPIC}-{p}")
                          for n in chaos.NODES}
                assert len(copies) == 1, f"{chaos.TOPIC}-{p}: replicas differ"
    finally:
        stop.set()  # on any failure too: no client of this test outlives it
        for thread in threads:
            thread.join(180)
        cluster.kill()
    assert chaos.live_clients() <= clients_before, "a librdkafka client outlived the test"
