"""Retention in ``kafkatx serve``'s partition logs (``UnifiedLog#deleteOldSegments``) and with real
clients: what a read_committed consumer gets from the log start after retention is what
``kafkatx replay`` predicts from the log dir."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from kafkatx.broker.logs.log_values import LogConfig
from kafkatx.broker.logs.partition_log import PartitionLog
from kafkatx.formats.producer_snapshot import snapshot_file_name
from kafkatx.semantics.read_committed import IsolationLevel
from tests.broker.kafkatx_cli import replay_visible, verify
from tests.broker.serve_process import ServeProcess
from tests.broker.test_partition_log import T0, batch

Serve = Callable[..., ServeProcess]
RC = IsolationLevel.READ_COMMITTED


def log_with(path: Path, **config: int | bool) -> PartitionLog:
    log = PartitionLog("t", 0, path, replace(LogConfig(segment_bytes=400,
                                                       max_message_bytes=1_048_588), **config))
    log.open()
    return log


def test_retention_ms_deletes_the_start_of_an_open_transaction(tmp_path: Path) -> None:
    """``UnifiedLog#deleteRetentionMsBreachedSegments`` + ``ProducerStateManager#
    onLogStartOffsetIncremented``: old segments go (the HW bounds them, not the LSO), the log
    start offset moves to the first kept segment, the open transaction whose first batch was
    deleted stays ongoing (the LSO sits at the log start offset) and survives a restart through
    the snapshot at the new first segment; snapshots of deleted segments are gone."""
    d = tmp_path / "t-0"
    log = log_with(d, retention_ms=60_000)
    log.append_as_leader(batch(1, pid=5, epoch=0, seq=0, txn=True, ts=T0), T0)
    for i in range(6):
        log.append_as_leader(batch(2, ts=T0 + i), T0)
    log.append_as_leader(batch(1, ts=T0 + 10**9), T0)  # a young batch in the active segment
    bases = [s.base_offset for s in log.segments]
    assert len(bases) >= 3 and log.last_stable_offset == 0
    snapshots_before = {p.name for p in d.glob("*.snapshot")}
    deleted = log.delete_old_segments(T0 + 120_000)
    assert deleted == len(bases) - 1  # all but the active segment (it holds the young batch)
    assert log.log_start_offset == bases[-1] == log.segments[0].base_offset
    assert not (d / f"{bases[0]:020d}.log").exists()
    assert log.producer_state.has_ongoing_transaction(5, 0)
    assert log.last_stable_offset == log.log_start_offset
    gone = {snapshot_file_name(b) for b in bases[:-1]}
    assert gone & snapshots_before and not gone & {p.name for p in d.glob("*.snapshot")}
    log.close()
    again = PartitionLog("t", 0, d, log.config)
    again.open()
    assert again.log_start_offset == bases[-1]
    assert again.producer_state.has_ongoing_transaction(5, 0)
    assert again.read(again.log_start_offset, 1 << 20, RC, min_one_message=True).records == b""
    # The loaded segment's largest timestamp is its batches' (not the file's time): past
    # retention.ms from that one, it goes.
    assert again.delete_old_segments(T0 + 10**9 + 120_000) == 1
    assert again.log_start_offset == again.log_end_offset
    again.close()


def test_retention_bytes_and_an_all_old_log_roll_first(tmp_path: Path) -> None:
    """``UnifiedLog#deleteSegments``: when every segment is deletable a new active segment is
    rolled at the log end first; ``retention.bytes`` leaves the log at least that large."""
    log = log_with(tmp_path / "t-0", retention_bytes=10**9)
    for i in range(8):
        log.append_as_leader(batch(2, ts=T0 + i), T0)
    sizes = [s.size for s in log.segments]
    total = sum(sizes)
    log.update_config(replace(log.config, retention_bytes=total - sizes[0]))
    assert log.delete_old_segments(T0) == 1
    assert sum(s.size for s in log.segments) == total - sizes[0]
    log.update_config(replace(log.config, retention_ms=1))
    end = log.log_end_offset
    assert log.delete_old_segments(T0 + 10**6) == len(sizes) - 1
    assert [s.base_offset for s in log.segments] == [end] and log.log_start_offset == end
    assert log.delete_old_segments(T0 + 10**6) == 0  # an empty last segment never goes
    log.close()


def test_compact_only_logs_keep_old_segments(tmp_path: Path) -> None:
    """``UnifiedLog#deleteOldSegments`` without delete in cleanup.policy: only the
    log-start-offset breach applies."""
    log = log_with(tmp_path / "t-0", retention_ms=1, retention_bytes=0, delete=False,
                   compact=True)
    for i in range(4):
        log.append_as_leader(batch(2, ts=T0 + i), T0)
    assert log.delete_old_segments(T0 + 10**6) == 0 and log.log_start_offset == 0
    log.close()


def test_retention_with_confluent_kafka_matches_replay(serve: Serve) -> None:
    """Real client (librdkafka): committed and aborted transactions and an open one, retention
    deletes old segments, then a read_committed consumer from the log start gets exactly what
    ``kafkatx replay`` predicts, and ``kafkatx verify`` is clean after the clean shutdown
    (``LogManager#cleanupLogs`` every ``log.retention.check.interval.ms``)."""
    import confluent_kafka
    from confluent_kafka.admin import AdminClient, NewTopic

    proc = serve("--log-retention-check-interval-ms", "100", "--segment-bytes", "600")
    admin = AdminClient({"bootstrap.servers": proc.bootstrap})
    admin.create_topics([NewTopic("ret", 1, 1, config={"retention.ms": "1500"})])[
        "ret"].result(10)
    producer = confluent_kafka.Producer({"bootstrap.servers": proc.bootstrap,
                                         "transactional.id": "ret-tx", "linger.ms": 0})
    producer.init_transactions(10)
    for n in range(12):
        producer.begin_transaction()
        for i in range(3):
            producer.produce("ret", value=b"%d-%d" % (n, i), partition=0)
        producer.flush(10)
        if n % 3 == 2:
            producer.abort_transaction(10)
        else:
            producer.commit_transaction(10)
    time.sleep(2.0)  # every segment but the active one is past retention.ms
    producer.begin_transaction()
    producer.produce("ret", value=b"late", partition=0)
    producer.commit_transaction(10)
    deadline = time.monotonic() + 10
    start = 0
    while time.monotonic() < deadline and start == 0:
        low, _high = confluent_kafka.Consumer({
            "bootstrap.servers": proc.bootstrap, "group.id": "probe"}).get_watermark_offsets(
            confluent_kafka.TopicPartition("ret", 0), timeout=5)
        start = low
        time.sleep(0.1)
    assert start > 0, proc.stderr()
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": proc.bootstrap, "group.id": "ret-reader",
        "isolation.level": "read_committed", "auto.offset.reset": "earliest",
        "enable.auto.commit": False})
    consumer.assign([confluent_kafka.TopicPartition("ret", 0, confluent_kafka.OFFSET_BEGINNING)])
    got: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and (not got or got[-1][1] != b"late"):
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() is None:
            got.append((msg.offset(), msg.value()))
    consumer.close()
    producer.flush(5)
    assert proc.stop() == 0
    assert got and got[0][0] >= start and got[-1][1] == b"late"
    assert replay_visible(proc.log_dir, "ret", 0) == got
    assert not (proc.log_dir / "ret-0" / "00000000000000000000.log").exists()
    doc = verify(proc.log_dir)
    assert doc["ok"], doc["findings"]


def test_serve_holds_the_lso_of_the_retention_hanging_fixture(serve: Serve,
                                                              tmp_path: Path) -> None:
    """fixtures/served/retention-hanging loaded by serve (``LogLoader`` + the producer snapshot
    at the log end): the transaction whose first batch retention deleted is still open, so the
    LSO is the log start offset 7 (``UnifiedLog#maybeIncrementFirstUnstableOffset``) while the
    high watermark is 23."""
    import shutil

    from tests.broker.test_wire import list_offset
    from tests.broker.wire import WireClient

    fixture = Path(__file__).resolve().parents[2] / "fixtures" / "served" / "retention-hanging"
    log_dir = tmp_path / "copy"
    shutil.copytree(fixture, log_dir)
    proc = serve(log_dir=log_dir)
    with WireClient(proc.port) as c:
        assert list_offset(c, "payments", -2).offset == 7
        assert list_offset(c, "payments", -1).offset == 23
        assert list_offset(c, "payments", -1, isolation=1).offset == 7
    assert proc.stop() == 0
