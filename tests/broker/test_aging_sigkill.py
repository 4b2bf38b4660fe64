"""SIGKILL at random moments while the log cleaner and retention run, then restart.

Each round (the seed is in the test id, so a failure replays) restarts ``kafkatx serve`` on the
same log dir (the topics' configs come back from the metadata log), commits and aborts
transactions of keyed records into a compacted topic and a topic with a short
``retention.ms``, and SIGKILLs the server at a random moment while its cleaner
(``LogCleaner``, backoff 20 ms) and retention (every 50 ms) work. At the end the log dir loads,
no committed record is lost (compacted: the last committed value of every key; retention: every
committed record at or above the log start offset), no aborted record is visible, and what a
read_committed consumer gets is what ``kafkatx replay`` predicts (read from a last restart
whose retention check does not run meanwhile, once its cleaner's first round is done).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import confluent_kafka as ck
import pytest
from confluent_kafka.admin import AdminClient

from tests.broker.serve_process import ServeProcess
from tests.broker.test_compaction_clients import Row, consume_rows, replay_rows

Serve = Callable[..., ServeProcess]
ROUNDS = 4
OPTIONS = ("--log-cleaner-backoff-ms", "20", "--log-retention-check-interval-ms", "50",
           "--transaction-abort-interval-ms", "200")
CONFIGS = {
    "aged-c": {"cleanup.policy": "compact", "segment.bytes": "600",
               "min.cleanable.dirty.ratio": "0.01"},
    "aged-r": {"segment.bytes": "600", "retention.ms": "400"},
}


@pytest.mark.parametrize("seed", [7])
def test_sigkill_while_cleaning_and_deleting_loses_nothing_committed(serve: Serve,
                                                                      seed: int) -> None:
    """``LogCleaner`` / ``UnifiedLog#deleteOldSegments`` with ``LogLoader``'s recovery of
    ``.cleaned``/``.swap``/``.deleted`` files after a kill."""
    rng = random.Random(seed)
    history: dict[str, list[tuple[int, bytes, bytes, bool]]] = {t: [] for t in CONFIGS}
    proc = None
    for round_no in range(ROUNDS):
        proc = serve(*OPTIONS)
        if round_no == 0:
            admin = AdminClient({"bootstrap.servers": proc.bootstrap})
            from confluent_kafka.admin import NewTopic
            for future in admin.create_topics(
                    [NewTopic(t, 1, 1, config=c) for t, c in CONFIGS.items()]).values():
                future.result(10)
        producer = ck.Producer({"bootstrap.servers": proc.bootstrap, "linger.ms": 2,
                                "transactional.id": "aged-tx"})
        producer.init_transactions(10)
        for n in range(12):
            commit = rng.random() < 0.7
            sent: list[tuple[str, ck.Message]] = []
            producer.begin_transaction()
            for topic in CONFIGS:
                for i in range(3):
                    producer.produce(topic, key=b"k%d" % rng.randrange(6),
                                     value=b"r%d-%d-%d" % (round_no, n, i) * 5, partition=0,
                                     on_delivery=lambda e, m, t=topic, s=sent: s.append((t, m)))
            producer.flush(10)
            (producer.commit_transaction if commit else producer.abort_transaction)(10)
            for topic, msg in sent:
                history[topic].append((msg.offset(), msg.key(), msg.value(), commit))
        time.sleep(rng.uniform(0.0, 0.6))  # the cleaner and retention are at work
        assert proc.proc is not None
        proc.proc.kill()
        proc.proc.wait(10)
    # The cleaner's rounds run at start, beside the requests (in slices): the consumer reads
    # once the cleaner has nothing more to clean, and its next round is ten minutes away.
    proc = serve("--transaction-abort-interval-ms", "200", "--log-cleaner-backoff-ms", "600000",
                 "--verbose")
    deadline = time.monotonic() + 60
    while "log cleaner: nothing to clean" not in proc.stderr():
        assert time.monotonic() < deadline, proc.stderr()[-3000:]
        time.sleep(0.05)
    aborted = {v for rows in history.values() for _, _, v, c in rows if not c}
    last = {t: max(o for o, _, _, c in rows if c) for t, rows in history.items()}
    got = {t: consume_rows(proc.bootstrap, t, last[t]) for t in CONFIGS}
    assert proc.stop() == 0, proc.stderr()
    for topic, rows in got.items():
        assert replay_rows(proc.log_dir, topic, 0) == rows
        assert not {v for _, _, v in rows} & aborted
        assert rows and rows[-1][0] == last[topic]
    committed_c = sorted((o, k, v) for o, k, v, c in history["aged-c"] if c)
    latest: dict[bytes, Row] = {}
    for row in committed_c:
        latest[row[1]] = row
    assert set(latest.values()) <= set(got["aged-c"])  # no key lost its last value
    assert set(got["aged-c"]) <= set(committed_c)
    start = got["aged-r"][0][0]
    assert [r for r in got["aged-r"]] == [
        (o, k, v) for o, k, v, c in sorted(history["aged-r"]) if c and o >= start]
