"""The log cleaner under real clients: a compacted transactional topic (``LogCleaner``), checked
against a model of the produced history that shares no code with the cleaner, and against
``kafkatx replay``."""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kafkatx.formats.checkpoints import read_offset_checkpoint
from tests.broker.kafkatx_cli import run_cli, verify
from tests.broker.serve_process import ServeProcess

Serve = Callable[..., ServeProcess]
Row = tuple[int, bytes | None, bytes | None]  # offset, key, value
COMPACTED = {"cleanup.policy": "compact", "segment.bytes": "1024",
             "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "3600000"}


def replay_rows(log_dir: Path, topic: str, partition: int) -> list[Row]:
    """(offset, key, value) of what ``kafkatx replay`` says a read_committed consumer gets."""
    run = run_cli("replay", str(log_dir), "--topic", topic, "--partition", str(partition),
                  "--format", "jsonl")
    assert run.returncode == 0, run.stderr.decode()
    rows = []
    for line in run.stdout.decode().splitlines():
        item = json.loads(line)
        rows.append((item["offset"], None if item["key"] is None else item["key"].encode(),
                     None if item["value"] is None else item["value"].encode()))
    return rows


def consume_rows(bootstrap: str, topic: str, until: int) -> list[Row]:
    """(offset, key, value) a read_committed confluent-kafka consumer of ``topic``-0 gets from
    the log start, up to offset ``until``."""
    import confluent_kafka as ck

    consumer = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader",
                            "isolation.level": "read_committed", "enable.auto.commit": False})
    consumer.assign([ck.TopicPartition(topic, 0, ck.OFFSET_BEGINNING)])
    got: list[Row] = []
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and (not got or got[-1][0] < until):
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() is None:
            got.append((msg.offset(), msg.key(), msg.value()))
    consumer.close()
    return got


def _predicted_recovery(log_dir: Path, step: str) -> tuple[set[str], set[str]]:
    """``kafkatx verify`` on the crashed log dir (left unchanged): its interrupted_log_clean
    finding, and the files the analysis says the next ``LogLoader#load`` removes and renames."""
    from kafkatx.engines.local import swap_recovery_of
    from kafkatx.storage.discovery import discover
    from tests.readonly import snapshot_tree

    before = snapshot_tree(log_dir)
    doc = verify(log_dir)
    assert snapshot_tree(log_dir) == before
    found = [f for f in doc["findings"] if f["kind"] == "interrupted_log_clean"]
    assert [(f["topic"], f["severity"]) for f in found] == [("crash", "info")], doc["findings"]
    assert ("after its .swap files" in found[0]["message"]) == (step == "swap")
    [pdir] = discover([log_dir]).partitions_of("crash")
    plan = swap_recovery_of(pdir)
    assert plan is not None
    if step == "swap":
        assert plan.swaps and plan.replaced and not plan.cleaned
    else:
        assert plan.cleaned and not plan.swaps and not plan.replaced
    return ({*plan.deleted_leftovers, *plan.incomplete_swaps, *plan.cleaned, *plan.replaced},
            set(plan.swaps))


def cleaner_checkpoint(log_dir: Path) -> dict[tuple[str, int], int]:
    path = log_dir / "cleaner-offset-checkpoint"
    return read_offset_checkpoint(path.read_bytes(), path=str(path)).as_map()


def active_base(log_dir: Path, topic: str, partition: int) -> int:
    return max(int(p.name[:20]) for p in (log_dir / f"{topic}-{partition}").glob("*.log"))


def compaction_model(history: list[tuple[int, bytes, bytes | None, bool]],
                     cleaned_below: int) -> list[Row]:
    """What a compacted partition holds by Kafka's rules, from the produced history
    (offset, key, value, committed): below the cleaner's checkpoint the last committed record of
    each key (a tombstone too, inside delete.retention.ms), at and above it every committed
    record; aborted records nowhere."""
    latest: dict[bytes, tuple[int, bytes | None]] = {}
    tail: list[Row] = []
    for offset, key, value, committed in sorted(history):
        if not committed:
            continue
        if offset < cleaned_below:
            latest[key] = (offset, value)
        else:
            tail.append((offset, key, value))
    return sorted([(o, k, v) for k, (o, v) in latest.items()] + tail)


def wait_until_cleaned(proc: ServeProcess, topic: str, deadline_s: float = 20.0) -> int:
    """The cleaner's checkpoint once it reached the active segment of ``topic``-0."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        checkpoint = cleaner_checkpoint(proc.log_dir).get((topic, 0), 0)
        if checkpoint and checkpoint == active_base(proc.log_dir, topic, 0):
            return checkpoint
        time.sleep(0.1)
    raise AssertionError(f"the cleaner did not reach the active segment:\n{proc.stderr()}")


def test_confluent_kafka_compacted_transactions_match_the_model_and_replay(
        serve: Serve) -> None:
    """Transactions of keyed records and tombstones, a quarter aborted, into a compacted topic
    (``LogCleaner``, ``Cleaner#cleanInto``): after cleaning, a read_committed consumer from the
    log start gets exactly the model's records and exactly what ``kafkatx replay`` predicts, and
    ``kafkatx verify`` finds nothing above info."""
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    proc = serve("--log-cleaner-backoff-ms", "100", "--transaction-abort-interval-ms", "200")
    admin = AdminClient({"bootstrap.servers": proc.bootstrap})
    admin.create_topics([NewTopic("cmp", 1, 1, config=COMPACTED)])["cmp"].result(10)
    producer = ck.Producer({"bootstrap.servers": proc.bootstrap, "transactional.id": "cmp-tx",
                            "linger.ms": 5})
    producer.init_transactions(10)
    rng = random.Random(12)
    history: list[tuple[int, bytes, bytes | None, bool]] = []
    for n in range(40):
        commit = n % 4 != 3
        sent: list[Any] = []
        producer.begin_transaction()
        for i in range(5):
            key = b"k%d" % rng.randrange(8)
            value = None if rng.random() < 0.15 else b"%d-%d" % (n, i) * 4
            producer.produce("cmp", key=key, value=value, partition=0,
                             on_delivery=lambda err, msg, out=sent: out.append(msg))
        producer.flush(10)
        (producer.commit_transaction if commit else producer.abort_transaction)(10)
        history += [(m.offset(), m.key(), m.value(), commit) for m in sent]
    cleaned_below = wait_until_cleaned(proc, "cmp")
    got = consume_rows(proc.bootstrap, "cmp", max(o for o, _, _, c in history if c))
    assert proc.stop() == 0
    assert cleaner_checkpoint(proc.log_dir)[("cmp", 0)] == cleaned_below
    expected = compaction_model(history, cleaned_below)
    committed = [h for h in history if h[3]]
    assert cleaned_below > len(history) // 2 and len(expected) < len(committed) // 2
    assert got == expected
    assert replay_rows(proc.log_dir, "cmp", 0) == got
    assert len(list((proc.log_dir / "cmp-0").glob("*.log"))) < 12  # segments were merged
    doc = verify(proc.log_dir)
    assert doc["ok"] and not [f for f in doc["findings"] if f["severity"] != "info"]


def _alter(admin: Any, topic: str, configs: dict[str, str]) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry(n, v, incremental_operation=AlterConfigOpType.SET)
        for n, v in configs.items()])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(10)


@pytest.mark.parametrize("step", ["cleaned", "swap"])
def test_a_crash_in_the_middle_of_a_clean_recovers_as_kafka(serve: Serve, step: str) -> None:
    """``--fault crash-after:cleaned|swap`` stops the process inside ``Cleaner#cleanSegments``
    (the ``.cleaned`` files complete) or ``LocalLog#replaceSegments`` (all renamed ``.swap``,
    the old segments still there); the restart recovers as ``LogLoader`` does (the clean undone,
    or the swap completed) and a read_committed consumer then gets what ``kafkatx replay``
    predicts, every key's last committed value still there and no aborted record."""
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    proc = serve("--log-cleaner-backoff-ms", "50", "--fault", f"crash-after:{step}")
    admin = AdminClient({"bootstrap.servers": proc.bootstrap})
    quiet = {**COMPACTED, "min.cleanable.dirty.ratio": "1"}  # never above it
    admin.create_topics([NewTopic("crash", 1, 1, config=quiet)])["crash"].result(10)
    producer = ck.Producer({"bootstrap.servers": proc.bootstrap, "transactional.id": "crash-tx",
                            "linger.ms": 5})
    producer.init_transactions(10)
    history: list[tuple[int, bytes, bytes | None, bool]] = []
    for n in range(16):
        sent: list[Any] = []
        producer.begin_transaction()
        for i in range(4):
            producer.produce("crash", key=b"k%d" % ((n + i) % 5), value=b"%d-%d" % (n, i) * 8,
                             partition=0, on_delivery=lambda e, m, out=sent: out.append(m))
        producer.flush(10)
        commit = n % 3 != 2
        (producer.commit_transaction if commit else producer.abort_transaction)(10)
        history += [(m.offset(), m.key(), m.value(), commit) for m in sent]
    del producer
    _alter(admin, "crash", {"min.cleanable.dirty.ratio": "0.01"})
    assert proc.proc is not None
    assert proc.proc.wait(20) == 3, proc.stderr()
    left = {p.name.rsplit(".", 1)[-1] for p in (proc.log_dir / "crash-0").iterdir()}
    assert step in left
    predicted = _predicted_recovery(proc.log_dir, step)
    again = serve()
    # The restarted cleaner cleans the partition again (its checkpoint never moved): consumed
    # during that clean, records it then removes would be read but not replayed from the log.
    deadline = time.monotonic() + 60
    while "cleaned crash-0 offsets [" not in again.stderr():
        assert time.monotonic() < deadline, again.stderr()
        time.sleep(0.05)
    got = consume_rows(again.bootstrap, "crash", max(o for o, _, _, c in history if c))
    assert again.stop() == 0
    assert "interrupted clean" in again.stderr() or "swapped in" in again.stderr()
    names = [p.name for p in (again.log_dir / "crash-0").iterdir()]
    assert not [n for n in names if n.endswith((".cleaned", ".swap", ".deleted"))], names
    removed, swapped_in = predicted
    done = re.findall(r"crash-0/([^:/\s]+): (removed|swapped in) \(", again.stderr())
    assert ({n for n, how in done if how == "removed"}, {n for n, how in done if how != "removed"}
            ) == (removed, swapped_in)
    assert replay_rows(again.log_dir, "crash", 0) == got
    committed = sorted((o, k, v) for o, k, v, c in history if c)
    assert set(got) <= set(committed)
    latest = {k: (o, k, v) for o, k, v in committed}
    assert set(latest.values()) <= set(got)
    if step == "cleaned":
        # The clean was undone at load; the topic's configs (compact, min.cleanable.dirty.ratio
        # 0.01) come back from the metadata log, so the restarted cleaner cleans it again.
        err = again.stderr()
        assert err.index("interrupted clean") < err.index("cleaned crash-0 offsets [")
    else:
        assert len(got) < len(committed)


def test_cleaned_consumer_offsets_keep_the_last_transactional_commits(serve: Serve) -> None:
    """``__consumer_offsets`` is compacted too (``GroupCoordinator#offsetsTopicConfigs``):
    transactional offset commits, committed and aborted, in small segments
    (``offsets.topic.segment.bytes``) are cleaned; after a restart the group's offsets are those
    of the last committed transaction, read back through the cleaned partition."""
    ck = pytest.importorskip("confluent_kafka")
    from confluent_kafka.admin import AdminClient, NewTopic

    from kafkatx.semantics.coordinator_partition import partition_for

    proc = serve("--log-cleaner-backoff-ms", "50", "--offsets-topic-segment-bytes", "700",
                 "--transaction-abort-interval-ms", "200")
    admin = AdminClient({"bootstrap.servers": proc.bootstrap})
    admin.create_topics([NewTopic("src", 2, 1)])["src"].result(10)
    group = ck.Consumer({"bootstrap.servers": proc.bootstrap, "group.id": "cleaned-group"})
    metadata = group.consumer_group_metadata()
    producer = ck.Producer({"bootstrap.servers": proc.bootstrap, "transactional.id": "off-tx"})
    producer.init_transactions(10)
    committed: dict[int, int] = {}
    for n in range(30):
        offsets = {0: 10 * n + 1, 1: 10 * n + 2}
        producer.begin_transaction()
        producer.send_offsets_to_transaction(
            [ck.TopicPartition("src", p, o) for p, o in offsets.items()], metadata, 10)
        if n % 4 == 3:
            producer.abort_transaction(10)
        else:
            producer.commit_transaction(10)
            committed = offsets
    offsets_partition = f"__consumer_offsets-{partition_for('cleaned-group')}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and ("__consumer_offsets",
                                           partition_for("cleaned-group")) not in \
            cleaner_checkpoint(proc.log_dir):
        time.sleep(0.1)
    group.close()
    assert proc.stop() == 0
    assert ("__consumer_offsets", partition_for("cleaned-group")) in \
        cleaner_checkpoint(proc.log_dir), proc.stderr()
    assert len(list((proc.log_dir / offsets_partition).glob("*.log"))) < 30
    again = serve()
    reader = ck.Consumer({"bootstrap.servers": again.bootstrap, "group.id": "cleaned-group"})
    got = reader.committed([ck.TopicPartition("src", p) for p in (0, 1)], timeout=10)
    reader.close()
    assert again.stop() == 0
    assert {tp.partition: tp.offset for tp in got} == committed
    doc = verify(again.log_dir)
    assert doc["ok"] and not [f for f in doc["findings"] if f["severity"] != "info"]
