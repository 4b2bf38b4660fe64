"""Real clients against ``kafkatx serve``: kafka-python, confluent-kafka (librdkafka), aiokafka.

Each test produces, reads everything back with a consumer assigned to the partitions (consumer
groups come later), stops the server with SIGTERM (exit status 0) and checks the log dir it
wrote with kafkatx's own readers.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable

import pytest

from tests.broker.logdir_checks import check_log_dir, verify_clean
from tests.broker.serve_process import ServeProcess

Serve = Callable[..., ServeProcess]
DEADLINE_S = 15.0


def sequences_by_partition(view_batches: list[dict]) -> dict[int, int]:
    """producer id -> last sequence of its last batch in this partition."""
    out: dict[int, int] = {}
    for b in view_batches:
        if b["producer_id"] >= 0:
            out[b["producer_id"]] = b["last_sequence"]
    return out


@pytest.fixture(autouse=True)
def _quiet_client_loggers() -> None:
    for name in ("kafka", "aiokafka"):
        logging.getLogger(name).setLevel(logging.CRITICAL)


def test_kafka_python_producers_and_consumer(serve: Serve) -> None:
    kafka = pytest.importorskip("kafka")
    proc = serve("--partitions", "2")
    settings = {
        "plain-acks1": dict(acks=1),
        "idem-gzip": dict(acks="all", enable_idempotence=True, compression_type="gzip"),
        "idem-lz4": dict(acks="all", enable_idempotence=True, compression_type="lz4"),
        "idem-zstd": dict(acks="all", enable_idempotence=True, compression_type="zstd"),
    }
    sent: dict[str, list[bytes]] = {}
    for topic, options in settings.items():
        producer = kafka.KafkaProducer(bootstrap_servers=proc.bootstrap, linger_ms=2,
                                       request_timeout_ms=5000, max_block_ms=5000, **options)
        values = [b"%s-%d" % (topic.encode(), i) for i in range(60)]
        futures = [producer.send(topic, key=b"k%d" % i, value=v, partition=i % 2)
                   for i, v in enumerate(values)]
        producer.flush(10)
        offsets = Counter(f.get(5).partition for f in futures)
        assert offsets == {0: 30, 1: 30}
        producer.close(5)
        sent[topic] = values
    consumer = kafka.KafkaConsumer(bootstrap_servers=proc.bootstrap, group_id=None,
                                   enable_auto_commit=False, request_timeout_ms=5000)
    parts = [kafka.TopicPartition(t, p) for t in settings for p in (0, 1)]
    consumer.assign(parts)
    consumer.seek_to_beginning(*parts)
    got: dict[str, list[tuple[int, int, bytes]]] = {t: [] for t in settings}
    deadline = time.monotonic() + DEADLINE_S
    while sum(map(len, got.values())) < 240 and time.monotonic() < deadline:
        for tp, messages in consumer.poll(timeout_ms=500).items():
            got[tp.topic].extend((tp.partition, m.offset, m.value) for m in messages)
    ends = consumer.end_offsets(parts)
    consumer.close()
    for topic, values in sent.items():
        assert sorted(v for _, _, v in got[topic]) == sorted(values), topic
        for p in (0, 1):
            offsets = [o for part, o, _ in got[topic] if part == p]
            assert offsets == list(range(30)), (topic, p)
    assert set(ends.values()) == {30}
    assert proc.stop() == 0, proc.stderr()
    view = check_log_dir(proc.log_dir)
    for topic in settings:
        for p in (0, 1):
            batches = view.batches[f"{topic}-{p}"]
            assert batches[-1]["last_offset"] == 29
            assert view.high_watermarks[(topic, p)] == 30
            if topic.startswith("idem"):
                codec = topic.split("-")[1]
                assert {b["compression"] for b in batches} == {codec}
                (pid,) = {b["producer_id"] for b in batches}
                entries = view.snapshots[f"{topic}-{p}"].entries
                assert [(e.producer_id, e.last_sequence, e.last_offset) for e in entries] == [
                    (pid, 29, 29)]
            else:
                assert {b["producer_id"] for b in batches} == {-1}
    verify_clean(proc.log_dir)


def test_confluent_kafka_idempotent_producer_and_consumer(serve: Serve) -> None:
    ck = pytest.importorskip("confluent_kafka")
    proc = serve("--partitions", "3")
    producer = ck.Producer({"bootstrap.servers": proc.bootstrap, "enable.idempotence": True,
                            "compression.type": "zstd", "linger.ms": 5})
    reports: list[tuple[object, int, int]] = []
    values = [b"ck-%d" % i for i in range(300)]
    for i, value in enumerate(values):
        producer.produce("ck", key=b"%d" % i, value=value, partition=i % 3,
                         on_delivery=lambda err, msg: reports.append(
                             (err, msg.partition(), msg.offset())))
        producer.poll(0)
    assert producer.flush(DEADLINE_S) == 0
    assert [r for r in reports if r[0] is not None] == []
    assert Counter(p for _, p, _ in reports) == {0: 100, 1: 100, 2: 100}
    results = {}
    for isolation in ("read_committed", "read_uncommitted"):
        consumer = ck.Consumer({"bootstrap.servers": proc.bootstrap, "group.id": "ck-test",
                                "enable.auto.commit": False, "isolation.level": isolation})
        consumer.assign([ck.TopicPartition("ck", p, ck.OFFSET_BEGINNING) for p in range(3)])
        got: list[tuple[int, int, bytes]] = []
        deadline = time.monotonic() + DEADLINE_S
        while len(got) < 300 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            got.append((msg.partition(), msg.offset(), msg.value()))
        marks = [consumer.get_watermark_offsets(ck.TopicPartition("ck", p), timeout=5)
                 for p in range(3)]
        consumer.close()
        assert marks == [(0, 100)] * 3
        results[isolation] = got
    for got in results.values():
        assert sorted(v for _, _, v in got) == sorted(values)
        for p in range(3):
            assert [o for part, o, _ in got if part == p] == list(range(100))
    assert proc.stop() == 0, proc.stderr()
    view = check_log_dir(proc.log_dir)
    for p in range(3):
        batches = view.batches[f"ck-{p}"]
        (pid,) = {b["producer_id"] for b in batches}
        assert {b["compression"] for b in batches} == {"zstd"}
        assert sequences_by_partition(batches) == {pid: 99}
        (entry,) = view.snapshots[f"ck-{p}"].entries
        assert (entry.producer_id, entry.producer_epoch, entry.last_sequence,
                entry.last_offset) == (pid, 0, 99, 99)
    verify_clean(proc.log_dir)


def test_aiokafka_producer_and_consumer_then_restart(serve: Serve) -> None:
    aiokafka = pytest.importorskip("aiokafka")
    proc = serve()

    async def produce(count: int, start: int) -> list[int]:
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=proc.bootstrap,
                                             enable_idempotence=True, compression_type="lz4")
        await producer.start()
        try:
            offsets = []
            for i in range(start, start + count):
                md = await producer.send_and_wait("ak", value=b"ak-%d" % i, partition=0)
                offsets.append(md.offset)
            return offsets
        finally:
            await producer.stop()

    async def consume(count: int) -> list[bytes]:
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=proc.bootstrap,
                                             enable_auto_commit=False,
                                             isolation_level="read_committed")
        await consumer.start()
        try:
            tp = aiokafka.TopicPartition("ak", 0)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            got: list[bytes] = []
            deadline = time.monotonic() + DEADLINE_S
            while len(got) < count and time.monotonic() < deadline:
                for messages in (await consumer.getmany(timeout_ms=500)).values():
                    got.extend(m.value for m in messages)
            return got
        finally:
            await consumer.stop()

    assert asyncio.run(produce(40, 0)) == list(range(40))
    assert asyncio.run(consume(40)) == [b"ak-%d" % i for i in range(40)]
    assert proc.stop() == 0, proc.stderr()
    first_pid = check_log_dir(proc.log_dir).snapshots["ak-0"].entries[0].producer_id
    # Restart on the same log dir: offsets go on, a new producer id block is used.
    proc = serve(log_dir=proc.log_dir)
    assert asyncio.run(produce(10, 40)) == list(range(40, 50))
    assert asyncio.run(consume(50)) == [b"ak-%d" % i for i in range(50)]
    assert proc.stop() == 0, proc.stderr()
    view = check_log_dir(proc.log_dir)
    assert [e.producer_id for e in view.snapshots["ak-0"].entries] == [first_pid, 1000]
    assert view.high_watermarks[("ak", 0)] == 50
    verify_clean(proc.log_dir)
