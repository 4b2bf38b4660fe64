"""Old clients against ``kafkatx serve``: kafka-python told to speak to a 0.8.2, 0.9, 0.10.0 or
0.10.1 broker (no ApiVersions for the first two) produces magic 0/1 message sets with Produce
v0-v2 and consumes with Fetch v0-v3 and ListOffsets v0, as they did against Kafka 3.x."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable

import pytest

from tests.broker.kafkatx_cli import replay_visible
from tests.broker.logdir_checks import check_log_dir, verify_clean
from tests.broker.serve_process import ServeProcess

Serve = Callable[..., ServeProcess]
DEADLINE_S = 20.0
# api_version -> (compression, magic written, the versions it sends)
CLIENTS = {
    (0, 8, 2): ("lz4", 0, {"ProduceRequest v0", "FetchRequest v0", "ListOffsetsRequest v0"}),
    (0, 9): ("gzip", 0, {"ProduceRequest v1", "FetchRequest v1", "ListOffsetsRequest v0"}),
    (0, 10, 0): (None, 1, {"ProduceRequest v2", "FetchRequest v2", "ListOffsetsRequest v0"}),
    (0, 10, 1): ("gzip", 1, {"ProduceRequest v2", "FetchRequest v3", "ListOffsetsRequest v1"}),
}


@pytest.fixture(autouse=True)
def _quiet_client_loggers() -> None:
    logging.getLogger("kafka").setLevel(logging.CRITICAL)


def _consumer(kafka: object, bootstrap: str, api_version: tuple[int, ...],
              topic: str) -> object:
    consumer = kafka.KafkaConsumer(  # type: ignore[attr-defined]
        bootstrap_servers=bootstrap, api_version=api_version, group_id=None,
        enable_auto_commit=False, request_timeout_ms=10_000)
    tp = kafka.TopicPartition(topic, 0)  # type: ignore[attr-defined]
    consumer.assign([tp])  # type: ignore[attr-defined]
    consumer.seek_to_beginning(tp)  # type: ignore[attr-defined]
    return consumer


def _poll(consumer: object, count: int) -> list[object]:
    got: list[object] = []
    deadline = time.monotonic() + DEADLINE_S
    while len(got) < count and time.monotonic() < deadline:
        for messages in consumer.poll(300).values():  # type: ignore[attr-defined]
            got.extend(messages)
    return got


def _consume(kafka: object, bootstrap: str, api_version: tuple[int, ...], topic: str,
             count: int) -> list[object]:
    consumer = _consumer(kafka, bootstrap, api_version, topic)
    got = _poll(consumer, count)
    tp = kafka.TopicPartition(topic, 0)  # type: ignore[attr-defined]
    end = consumer.end_offsets([tp])[tp]  # type: ignore[attr-defined]
    consumer.close()  # type: ignore[attr-defined]
    assert end == count, (api_version, end)
    return got


def test_kafka_python_as_an_old_client(serve: Serve) -> None:
    """Produce v0-v2 (``LogValidator`` up-conversion), Fetch v0-v3 (``RecordsUtil#downConvert``)
    and ListOffsets v0 (``UnifiedLog#legacyFetchOffsetsBefore``) with each old protocol level:
    every record comes back with its key, value and offset, a timestamp from magic 1 on; the
    log dir holds v2 batches only and passes ``kafkatx verify``."""
    kafka = pytest.importorskip("kafka")
    proc = serve("--verbose")
    for api_version, (codec, magic, _) in CLIENTS.items():
        topic = "old-" + "-".join(map(str, api_version))
        producer = kafka.KafkaProducer(bootstrap_servers=proc.bootstrap, api_version=api_version,
                                       compression_type=codec, linger_ms=20,
                                       request_timeout_ms=10_000)
        before = int(time.time() * 1000)
        futures = [producer.send(topic, key=b"k%d" % i, value=b"%s-%d" % (topic.encode(), i),
                                 partition=0) for i in range(30)]
        producer.flush(10)
        assert sorted(f.get(5).offset for f in futures) == list(range(30))
        producer.close(5)
        got = _consume(kafka, proc.bootstrap, api_version, topic, 30)
        assert [(m.offset, m.key, m.value) for m in got] == [
            (i, b"k%d" % i, b"%s-%d" % (topic.encode(), i)) for i in range(30)]
        if magic == 0:
            assert {m.timestamp for m in got} in ({None}, {-1})
        else:
            assert all(before - 1000 <= m.timestamp <= time.time() * 1000 + 1000 for m in got)
    assert proc.stop() == 0, proc.stderr()
    sent = set(re.findall(r"\b(\w+Request v\d+) corr=", proc.stderr()))
    for api_version, (_, _, versions) in CLIENTS.items():
        assert versions <= sent, (api_version, versions - sent)
    view = check_log_dir(proc.log_dir)  # every stored batch is magic 2 with a valid CRC
    assert {b["producer_id"] for p, bs in view.batches.items() if p.startswith("old-")
            for b in bs} == {-1}
    verify_clean(proc.log_dir)


def test_old_consumers_read_a_transactional_topic(serve: Serve) -> None:
    """A topic written by librdkafka's transactional producer (one transaction committed, one
    aborted) read with Fetch v0 and v3: old clients know nothing of transactions, so they get
    every data record and no marker (``RecordsUtil#downConvert`` drops control batches), the
    read_uncommitted view ``kafkatx replay`` predicts from the log dir."""
    ck = pytest.importorskip("confluent_kafka")
    kafka = pytest.importorskip("kafka")
    from kafka.consumer.fetcher import RecordTooLargeError

    proc = serve()
    producer = ck.Producer({"bootstrap.servers": proc.bootstrap, "transactional.id": "tx-old",
                            "linger.ms": 5})
    producer.init_transactions(10)
    for commit, values in ((True, [b"c0", b"c1", b"c2"]), (False, [b"a0", b"a1"]),
                           (True, [b"c3"])):
        producer.begin_transaction()
        for v in values:
            producer.produce("ledger", key=v, value=v, partition=0)
        producer.flush(10)
        if commit:
            producer.commit_transaction(10)
        else:
            producer.abort_transaction(10)
    del producer  # librdkafka's client goes before the broker does
    values = [b"c0", b"c1", b"c2", b"a0", b"a1", b"c3"]
    expected = list(zip([0, 1, 2, 4, 5, 7], values, strict=True))  # markers at 3, 6 and 8
    for api_version in ((0, 8, 2), (0, 10, 1)):
        consumer = _consumer(kafka, proc.bootstrap, api_version, "ledger")
        got = _poll(consumer, len(expected))
        assert [(m.offset, m.value) for m in got] == expected
        # At the last marker nothing converts, and Kafka 3.x answers with an overflow entry
        # (LazyDownConversionRecords): Fetch v0-v2 clients report it as a record too large
        # for their fetch size (pre-KIP-74), v3 ones as no progress (as the Java client does).
        error, says = (RecordTooLargeError, "larger than the fetch size") \
            if api_version < (0, 10, 1) else (kafka.errors.KafkaError, "Failed to make progress")
        with pytest.raises(error, match=says):
            _poll(consumer, 1)
        consumer.close()  # type: ignore[attr-defined]
    assert proc.stop() == 0, proc.stderr()
    assert replay_visible(proc.log_dir, "ledger", 0, "read_uncommitted") == expected
    verify_clean(proc.log_dir)
