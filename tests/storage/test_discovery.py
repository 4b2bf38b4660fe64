from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkatx.errors import UnreadableFileError
from kafkatx.storage.discovery import (
    MAX_SEARCH_DEPTH,
    Discovery,
    PartitionDir,
    discover,
    high_watermarks,
    read_root_checkpoints,
)
from kafkatx.storage.layout import (
    PartitionDirName,
    parse_offset_file_name,
    parse_partition_dir,
    parse_topic_partition_name,
)
from tests.readonly import assert_unchanged, diff_trees, snapshot_tree

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
LOGDIR = FIXTURES / "logdir"
EXPECTED = [("__consumer_offsets", 41), ("__transaction_state", 9), ("__transaction_state", 15),
            ("__transaction_state", 39), ("payments", 0), ("payments", 1)]
UUID_HEX = "0123456789abcdef0123456789abcdef"


def keys(partitions: tuple[PartitionDir, ...]) -> list[tuple[str, int]]:
    return [(p.topic, p.partition) for p in partitions]


def touch(path: Path, content: bytes = b"") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def make_partition(directory: Path, *files: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in files or ("00000000000000000000.log", "00000000000000000000.index"):
        touch(directory / name)
    return directory


def discover_unchanged(root: Path, *paths: Path) -> Discovery:
    before = snapshot_tree(root)
    found = discover(paths or [root])
    assert_unchanged(root, before)
    return found


# --------------------------------------------------------------------------------------------
# Names (LocalLog#parseTopicPartitionName)


@pytest.mark.parametrize(("name", "expected"), [
    ("payments-0", ("payments", 0, "live")),
    ("my-topic-12", ("my-topic", 12, "live")),
    ("my.topic-3", ("my.topic", 3, "live")),
    ("t-01", ("t", 1, "live")),
    ("t-+1", ("t", 1, "live")),  # Integer.parseInt accepts a '+'
    ("t--1", ("t-", 1, "live")),
    ("t-2147483647", ("t", 2**31 - 1, "live")),
    (f"payments-0.{UUID_HEX}-delete", ("payments", 0, "delete")),
    (f"payments-0.{UUID_HEX}-future", ("payments", 0, "future")),
    (f"payments-0.{UUID_HEX}-stray", ("payments", 0, "stray")),
    (f"my.topic-a-7.{UUID_HEX}-future", ("my.topic-a", 7, "future")),
])
def test_parse_topic_partition_name_accepts(name: str, expected: tuple[str, int, str]) -> None:
    assert parse_topic_partition_name(name) == PartitionDirName(*expected)


@pytest.mark.parametrize("name", [
    "payments", "payments-", "-0", "t-x", "t-1x", "t-2147483648", "t- 1", "broker", "data",
    "foo-delete",  # ends with -delete but does not match DELETE_DIR_PATTERN
    "t-1.ab cd-delete",  # Java's \S excludes the space
    "t-1.abc.def-delete",  # the part before the last '.' is t-1.abc: "1.abc" is no int
    "lost+found", "remote-log-index-cache", "",
])
def test_parse_topic_partition_name_rejects(name: str) -> None:
    assert parse_topic_partition_name(name) is None


# from_regex draws slowly on a loaded machine: not a failure of what is tested
@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(topic=st.from_regex(r"[a-zA-Z0-9._-]{1,60}", fullmatch=True),
       partition=st.integers(0, 2**31 - 1),
       state=st.sampled_from(["live", "delete", "future", "stray"]),
       unique=st.from_regex(r"[0-9a-f]{32}", fullmatch=True))
def test_parse_topic_partition_name_inverts_kafka_names(
    topic: str, partition: int, state: str, unique: str
) -> None:
    # LocalLog#logDirName / logDirNameWithSuffix
    name = f"{topic}-{partition}" + ("" if state == "live" else f".{unique}-{state}")
    assert parse_topic_partition_name(name) == PartitionDirName(topic, partition, state)
    assert parse_partition_dir(name) == PartitionDirName(topic, partition, state)


@pytest.mark.parametrize(("name", "expected"), [
    ("00000000000000000000.log", (0, ".log", None)),
    ("00000000000000000015.timeindex", (15, ".timeindex", None)),
    ("00000000000000000032.snapshot", (32, ".snapshot", None)),
    ("00000000000000000100.txnindex.deleted", (100, ".txnindex", ".deleted")),
    ("00000000000000000100.log.swap", (100, ".log", ".swap")),
    ("00000000000000000100.index.cleaned", (100, ".index", ".cleaned")),
    ("7.log", (7, ".log", None)),
    ("00000000000000000000.log.tmp", None),
    ("leader-epoch-checkpoint", None),
    ("abc.log", None),
    ("0.foo.log", None),
    ("99999999999999999999.log", None),  # beyond int64: Long.parseLong would throw
])
def test_parse_offset_file_name(name: str, expected: tuple[int, str, str | None] | None) -> None:
    assert parse_offset_file_name(name) == expected


# --------------------------------------------------------------------------------------------
# The fixture log dir


def test_fixture_logdir() -> None:
    found = discover_unchanged(LOGDIR)
    assert found.problems == ()
    assert found.bare_partitions == ()
    (log_dir,) = found.log_dirs
    assert log_dir.path == LOGDIR
    assert log_dir.label == "logdir"
    assert log_dir.meta_properties == LOGDIR / "meta.properties"
    assert set(log_dir.checkpoints) == {
        "replication-offset-checkpoint", "recovery-point-offset-checkpoint",
        "log-start-offset-checkpoint", "cleaner-offset-checkpoint"}
    assert log_dir.checkpoints["cleaner-offset-checkpoint"] == LOGDIR / "cleaner-offset-checkpoint"
    assert log_dir.clean_shutdown is False
    assert log_dir.unknown_files == ()
    assert keys(log_dir.partitions) == EXPECTED
    assert keys(found.all_partitions()) == EXPECTED
    assert found.inactive_partitions() == ()
    for p in found.all_partitions():
        assert p.log_dir is log_dir
        assert p.state == "live"
        assert p.leader_epoch_checkpoint == p.path / "leader-epoch-checkpoint"
        assert p.partition_metadata == p.path / "partition.metadata"
        assert p.unknown_files == ()
        assert p.other_segments == ()


def test_fixture_payments_0() -> None:
    (p0, p1) = discover([LOGDIR]).partitions_of("payments")
    assert (p0.topic, p0.partition, p1.partition) == ("payments", 0, 1)
    directory = LOGDIR / "payments-0"
    assert p0.path == directory
    assert [s.base_offset for s in p0.segments] == [0, 15]
    seg0, seg15 = p0.segments
    assert seg0.log == directory / "00000000000000000000.log"
    assert seg0.index == directory / "00000000000000000000.index"
    assert seg0.timeindex == directory / "00000000000000000000.timeindex"
    assert seg0.txnindex == directory / "00000000000000000000.txnindex"
    assert seg15.txnindex is None
    assert seg0.suffix is None and seg15.suffix is None
    assert seg0.log_size == os.path.getsize(seg0.log) > 0
    assert seg15.log_size == os.path.getsize(directory / "00000000000000000015.log")
    assert p0.snapshots == ((15, directory / "00000000000000000015.snapshot"),
                            (32, directory / "00000000000000000032.snapshot"))
    assert p1.snapshots == ((3, LOGDIR / "payments-1" / "00000000000000000003.snapshot"),)


def test_fixture_checkpoints() -> None:
    (log_dir,) = discover([LOGDIR]).log_dirs
    checkpoints = read_root_checkpoints(log_dir)
    assert set(checkpoints) == set(log_dir.checkpoints)
    assert all(c.problems == () for c in checkpoints.values())
    hw = high_watermarks(log_dir)
    assert hw == checkpoints["replication-offset-checkpoint"].as_map()
    assert hw[("payments", 0)] == 32
    assert hw[("payments", 1)] == 3
    assert len(hw) == 6


def test_to_dict_is_json() -> None:
    found = discover([LOGDIR])
    data = json.loads(json.dumps(found.to_dict()))
    (log_dir,) = data["log_dirs"]
    assert log_dir["label"] == "logdir"
    payments0 = next(p for p in log_dir["partitions"] if p["topic"] == "payments"
                     and p["partition"] == 0)
    assert payments0["broker"] == "logdir"
    assert [s["base_offset"] for s in payments0["segments"]] == [0, 15]
    assert payments0["snapshots"][1]["offset"] == 32


def test_fixtures_folder_holds_the_generated_and_the_served_log_dirs() -> None:
    found = discover_unchanged(FIXTURES)
    assert [d.label for d in found.log_dirs] == [
        "corrupt", "kraft", "legacy", "logdir", "realkafka/compacted",
        "realkafka/open-transaction", "replicas/broker-1", "replicas/broker-2",
        "restart/clean-no-snapshot", "restart/crashed",
        "served/clean", "served/cleaned-offsets",
        "served/compacted", "served/crash-cleaning", "served/hanging", "served/retention-hanging",
        "served/stuck-prepare", "served/timeout-abort", "served/zombie",
        *(f"served-replicas/{case}/broker-{n}" for case in (
            "follower-truncated", "leader-change-commit", "unclean-lost-marker")
          for n in (1, 2, 3))]
    assert keys(found.log_dirs[0].partitions) == [("damaged", 0)]
    assert [s.base_offset for s in found.log_dirs[0].partitions[0].segments] == [0, 100, 200]
    assert found.log_dirs[0].meta_properties is None
    assert found.log_dirs[0].checkpoints == {}


# --------------------------------------------------------------------------------------------
# Bare partitions, several brokers


def test_bare_partition_dir() -> None:
    found = discover_unchanged(LOGDIR / "payments-0")
    assert found.log_dirs == ()
    (p,) = found.bare_partitions
    assert (p.topic, p.partition, p.state, p.log_dir) == ("payments", 0, "live", None)
    assert [s.base_offset for s in p.segments] == [0, 15]
    assert found.all_partitions() == (p,)
    assert found.problems == ()


def test_several_bare_partitions_sorted() -> None:
    found = discover([LOGDIR / "payments-1", LOGDIR / "__transaction_state-9",
                      LOGDIR / "payments-0"])
    assert keys(found.all_partitions()) == [("__transaction_state", 9), ("payments", 0),
                                            ("payments", 1)]


@pytest.fixture
def incident(tmp_path: Path) -> Path:
    """incident/broker-1/data = the fixture; broker-2 has payments-0 and a future replica."""
    root = tmp_path / "incident"
    shutil.copytree(LOGDIR, root / "broker-1" / "data")
    b2 = root / "broker-2" / "data"
    touch(b2 / "meta.properties", b"version=1\nnode.id=2\ncluster.id=abc\n")
    touch(b2 / ".kafka_cleanshutdown", b'{"version":0,"brokerEpoch":9}')
    touch(b2 / ".lock")
    shutil.copytree(LOGDIR / "payments-0", b2 / "payments-0")
    make_partition(b2 / f"payments-1.{UUID_HEX}-future")
    touch(root / "notes.txt", b"collected 2025-11-21\n")
    return root


def test_several_brokers_in_one_folder(incident: Path) -> None:
    found = discover_unchanged(incident)
    assert found.problems == ()
    b1, b2 = found.log_dirs
    assert (b1.label, b2.label) == ("broker-1/data", "broker-2/data")
    assert keys(b1.partitions) == EXPECTED
    assert b1.clean_shutdown is False and b2.clean_shutdown is True
    assert b2.unknown_files == ()  # .lock is a known root file
    assert [(p.partition, p.state) for p in b2.partitions] == [(0, "live"), (1, "future")]
    payments = found.partitions_of("payments")
    assert [(p.partition, p.log_dir.label) for p in payments if p.log_dir] == [
        (0, "broker-1/data"), (0, "broker-2/data"), (1, "broker-1/data")]
    (future,) = found.inactive_partitions()
    assert future.log_dir is b2
    assert future.path.name == f"payments-1.{UUID_HEX}-future"


def test_several_log_dirs_given(incident: Path) -> None:
    found = discover([incident / "broker-2" / "data", incident / "broker-1" / "data"])
    assert [d.label for d in found.log_dirs] == ["broker-2/data", "broker-1/data"]
    assert [p.log_dir.label for p in found.partitions_of("payments")
            if p.partition == 0 and p.log_dir] == ["broker-1/data", "broker-2/data"]


def test_broker_copies_without_root_files(tmp_path: Path) -> None:
    """Partition dirs copied without the log dir's root files still form one log dir each."""
    for broker in ("broker-1", "broker-2"):
        shutil.copytree(LOGDIR / "payments-0", tmp_path / broker / "payments-0")
    found = discover_unchanged(tmp_path)
    assert [d.label for d in found.log_dirs] == ["broker-1", "broker-2"]
    assert all(d.meta_properties is None for d in found.log_dirs)
    assert len(found.all_partitions()) == 2


def test_same_dir_given_twice_is_counted_once(incident: Path) -> None:
    b1 = incident / "broker-1" / "data"
    found = discover([incident, b1, b1 / "payments-0"])
    assert len(found.log_dirs) == 2
    assert len(found.all_partitions()) == 6 + 1
    assert len(found.problems) == 2
    assert all("already included" in p for p in found.problems)


def test_search_depth(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "c" / "d"
    assert len(deep.relative_to(tmp_path).parts) == MAX_SEARCH_DEPTH
    make_partition(deep / "t-0")
    make_partition(tmp_path / "x" / "a" / "b" / "c" / "d" / "t-1")  # one level too deep
    found = discover([tmp_path])
    assert [(p.topic, p.partition) for p in found.all_partitions()] == [("t", 0)]
    assert found.log_dirs[0].path == deep


def test_symlink_loop_terminates(tmp_path: Path) -> None:
    make_partition(tmp_path / "data" / "t-0")
    (tmp_path / "data" / "loop").symlink_to(tmp_path)
    found = discover([tmp_path])
    assert keys(found.all_partitions()) == [("t", 0)]


# --------------------------------------------------------------------------------------------
# Suffixed dirs and files


def test_delete_future_stray_dirs(tmp_path: Path) -> None:
    root = tmp_path / "kafka-logs"
    touch(root / "meta.properties", b"version=1\nnode.id=1\ncluster.id=abc\n")
    make_partition(root / "payments-0")
    make_partition(root / f"payments-0.{UUID_HEX}-future")
    make_partition(root / f"payments-1.{UUID_HEX}-delete")
    make_partition(root / f"old-topic-3.{UUID_HEX}-stray")
    (root / f"empty-2.{UUID_HEX}-delete").mkdir()  # empty: still a partition dir in a log dir
    found = discover_unchanged(root)
    assert found.problems == ()
    (log_dir,) = found.log_dirs
    assert [(p.topic, p.partition, p.state) for p in log_dir.partitions] == [
        ("empty", 2, "delete"), ("old-topic", 3, "stray"), ("payments", 0, "live"),
        ("payments", 0, "future"), ("payments", 1, "delete")]
    assert keys(found.all_partitions()) == [("payments", 0)]
    assert [(p.topic, p.state) for p in found.inactive_partitions()] == [
        ("empty", "delete"), ("old-topic", "stray"), ("payments", "future"),
        ("payments", "delete")]
    assert [p.state for p in log_dir.live_partitions] == ["live"]
    empty = log_dir.partitions[0]
    assert empty.segments == () and empty.snapshots == ()


def test_transient_suffixes_kept_apart(tmp_path: Path) -> None:
    d = make_partition(
        tmp_path / "t-0",
        "00000000000000000000.log", "00000000000000000000.index",
        "00000000000000000000.log.deleted", "00000000000000000000.index.deleted",
        "00000000000000000000.timeindex.deleted",
        "00000000000000000010.log.cleaned", "00000000000000000010.log.swap",
        "00000000000000000010.index.swap", "00000000000000000020.log",
        "00000000000000000005.snapshot", "00000000000000000003.snapshot.deleted",
        "leader-epoch-checkpoint.tmp", "quorum-state", "00000000000000000020.log.tmp")
    touch(d / "00000000000000000020.log", b"x" * 77)
    (d / "stray-subdir").mkdir()
    found = discover_unchanged(d)
    (p,) = found.bare_partitions
    assert [(s.base_offset, s.suffix) for s in p.segments] == [(0, None), (20, None)]
    assert p.segments[0].index == d / "00000000000000000000.index"
    assert p.segments[0].timeindex is None
    assert p.segments[1].log_size == 77
    assert p.segments[1].index is None
    assert [(s.base_offset, s.suffix) for s in p.other_segments] == [
        (0, ".deleted"), (10, ".cleaned"), (10, ".swap")]
    deleted, cleaned, swap = p.other_segments
    assert deleted.log == d / "00000000000000000000.log.deleted"
    assert deleted.index == d / "00000000000000000000.index.deleted"
    assert deleted.timeindex == d / "00000000000000000000.timeindex.deleted"
    assert cleaned.index is None and cleaned.log == d / "00000000000000000010.log.cleaned"
    assert swap.index == d / "00000000000000000010.index.swap"
    assert p.snapshots == ((5, d / "00000000000000000005.snapshot"),)
    assert p.other_snapshots == ((3, d / "00000000000000000003.snapshot.deleted"),)
    assert p.leader_epoch_checkpoint is None
    assert p.unknown_files == tuple(sorted([
        d / "leader-epoch-checkpoint.tmp", d / "quorum-state",
        d / "00000000000000000020.log.tmp", d / "stray-subdir"]))


def test_files_in_subdirs_of_partition_dirs_are_not_entered(tmp_path: Path) -> None:
    make_partition(tmp_path / "t-0")
    make_partition(tmp_path / "t-0" / "u-1")
    found = discover([tmp_path / "t-0"])
    assert keys(found.all_partitions()) == [("t", 0)]
    assert found.bare_partitions[0].unknown_files == (tmp_path / "t-0" / "u-1",)


# --------------------------------------------------------------------------------------------
# Things that are not Kafka data


def test_empty_dir(tmp_path: Path) -> None:
    found = discover_unchanged(tmp_path)
    assert found.is_empty
    assert found.all_partitions() == ()
    (problem,) = found.problems
    assert str(tmp_path) in problem and "no Kafka" in problem


def test_non_kafka_dir(tmp_path: Path) -> None:
    touch(tmp_path / "README.md", b"hello")
    touch(tmp_path / "broker-1" / "data" / "notes.txt", b"x")  # broker-1 parses as a name
    touch(tmp_path / "src" / "main-1" / "x.py", b"")
    (tmp_path / "topic-0").mkdir()  # named like a partition, but empty
    found = discover_unchanged(tmp_path)
    assert found.is_empty
    assert len(found.problems) == 1 and "no Kafka" in found.problems[0]


def test_missing_path_raises(tmp_path: Path) -> None:
    with pytest.raises(UnreadableFileError, match="no such file"):
        discover([LOGDIR, tmp_path / "nope"])


def test_file_path_raises() -> None:
    with pytest.raises(UnreadableFileError, match="not a directory"):
        discover([LOGDIR / "meta.properties"])


def test_no_paths() -> None:
    found = discover([])
    assert found.is_empty and found.problems


def test_partition_files_under_a_bad_name(tmp_path: Path) -> None:
    d = make_partition(tmp_path / "copy-of-p0")
    found = discover([d])
    assert found.is_empty
    (problem,) = found.problems
    assert "copy-of-p0" in problem and "<topic>-<partition>" in problem


def test_foreign_dirs_in_a_log_dir(tmp_path: Path) -> None:
    root = tmp_path / "data"
    touch(root / "replication-offset-checkpoint", b"0\n0\n")
    make_partition(root / "t-0")
    (root / "lost+found").mkdir()
    make_partition(root / "remote-log-index-cache" / "x-0")  # tiered-storage cache: ignored
    touch(root / "stray.txt")
    found = discover_unchanged(root)
    (log_dir,) = found.log_dirs
    assert keys(log_dir.partitions) == [("t", 0)]
    assert log_dir.meta_properties is None
    assert set(log_dir.checkpoints) == {"replication-offset-checkpoint"}
    assert log_dir.unknown_files == (root / "stray.txt",)
    (problem,) = found.problems
    assert "lost+found" in problem and "parseTopicPartitionName" in problem


def test_duplicate_partition_names(tmp_path: Path) -> None:
    make_partition(tmp_path / "t-1")
    make_partition(tmp_path / "t-01")
    found = discover([tmp_path])
    assert len(found.all_partitions()) == 2
    (problem,) = found.problems
    assert "t-1" in problem and "t-01" in problem


# --------------------------------------------------------------------------------------------
# Root checkpoints, tolerant


def test_root_checkpoints_garbled_and_unreadable(tmp_path: Path) -> None:
    root = tmp_path / "data"
    make_partition(root / "t-0")
    touch(root / "replication-offset-checkpoint", b"0\n2\nt 0 15\nt x \xff\n")
    touch(root / "log-start-offset-checkpoint", b"")
    (root / "recovery-point-offset-checkpoint").symlink_to(tmp_path / "gone")  # unreadable
    (log_dir,) = discover([root]).log_dirs
    assert set(log_dir.checkpoints) == {"replication-offset-checkpoint",
                                        "log-start-offset-checkpoint",
                                        "recovery-point-offset-checkpoint"}
    problems: list[str] = []
    checkpoints = read_root_checkpoints(log_dir, problems)
    assert set(checkpoints) == {"replication-offset-checkpoint", "log-start-offset-checkpoint"}
    hw = checkpoints["replication-offset-checkpoint"]
    assert hw.as_map() == {("t", 0): 15}
    assert len(hw.problems) == 1 and "line 4" in str(hw.problems[0])
    assert hw.problems[0].position == len(b"0\n2\nt 0 15\nt x ")  # the bad byte
    assert checkpoints["log-start-offset-checkpoint"].entries == ()
    (problem,) = problems
    assert "recovery-point-offset-checkpoint" in problem
    assert high_watermarks(log_dir) == {("t", 0): 15}


def test_high_watermarks_without_checkpoint(tmp_path: Path) -> None:
    make_partition(tmp_path / "t-0")
    (log_dir,) = discover([tmp_path]).log_dirs
    assert high_watermarks(log_dir) == {}


# --------------------------------------------------------------------------------------------
# Scale


def test_many_partitions(tmp_path: Path) -> None:
    """2,000 partitions found whole (speed is benchmarks/' business, not a timed test)."""
    root = tmp_path / "data"
    root.mkdir()
    (root / "meta.properties").write_bytes(b"version=1\nnode.id=1\ncluster.id=abc\n")
    template = touch(tmp_path / "template")
    names = ("00000000000000000000.log", "00000000000000000000.index", "leader-epoch-checkpoint")
    for i in range(2000):
        d = os.path.join(root, f"topic-{i % 7}-{i}")
        os.mkdir(d)
        for name in names:  # hard links: much cheaper to make than new files
            os.link(template, os.path.join(d, name))
    found = discover([root])
    assert len(found.all_partitions()) == 2000
    assert found.problems == ()
    assert all(len(p.segments) == 1 for p in found.all_partitions())
    assert found.all_partitions()[0].topic == "topic-0"
    assert [p.partition for p in found.partitions_of("topic-0")][:3] == [0, 7, 14]


# --------------------------------------------------------------------------------------------
# The read-only helper itself


def test_readonly_helper_sees_changes(tmp_path: Path) -> None:
    make_partition(tmp_path / "t-0")
    before = snapshot_tree(tmp_path)
    assert diff_trees(before, snapshot_tree(tmp_path)) == []
    log = tmp_path / "t-0" / "00000000000000000000.log"
    log.write_bytes(b"x")
    (tmp_path / "t-0" / "new").write_bytes(b"")
    diff = diff_trees(before, snapshot_tree(tmp_path))
    assert any(line.startswith("changed: t-0/00000000000000000000.log") for line in diff)
    assert "added: t-0/new" in diff
    with pytest.raises(AssertionError, match="was modified"):
        assert_unchanged(tmp_path, before)
    # A file created and removed again still changes its directory's mtime.
    before = snapshot_tree(tmp_path)
    os.utime(tmp_path / "t-0", ns=(0, 1_000_000_000))
    assert any(line.startswith("changed: t-0:") for line in diff_trees(before,
                                                                        snapshot_tree(tmp_path)))
    # Same content, new mtime: a touch is a change too.
    before = snapshot_tree(tmp_path)
    os.utime(log, ns=(0, 2_000_000_000))
    assert diff_trees(before, snapshot_tree(tmp_path)) == [
        f"changed: t-0/00000000000000000000.log: {before['t-0/00000000000000000000.log']} -> "
        f"{snapshot_tree(tmp_path)['t-0/00000000000000000000.log']}"]


def test_suffixed_partition_dir_given_alone(tmp_path: Path) -> None:
    d = make_partition(tmp_path / f"payments-3.{UUID_HEX}-delete")
    found = discover([d])
    (p,) = found.bare_partitions
    assert (p.topic, p.partition, p.state) == ("payments", 3, "delete")
    assert found.all_partitions() == ()
    assert found.inactive_partitions() == (p,)
    assert found.partitions_of("payments") == ()
    assert p.to_dict()["log_dir"] is None and p.to_dict()["broker"] is None
