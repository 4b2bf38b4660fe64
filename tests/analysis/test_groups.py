"""``kafkatx groups``: committed offsets as the group coordinator loads them, and lag three ways.

Log dirs are built with the project's writers (``LogDirBuilder``); expected answers are counted
from how each log was built, not from kafkatx's replay.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from click.testing import CliRunner

from kafkatx.cli.main import cli
from kafkatx.formats.consumer_offsets import (
    GroupMember,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    build_key,
    build_value,
)
from kafkatx.formats.record_batch import ControlType, Record, build_batch, build_control_batch
from tests.analysis.logdirs import T0, LogDirBuilder, PartitionBuilder
from tests.readonly import assert_unchanged, snapshot_tree

ROOT = Path(__file__).resolve().parents[2]
CO = "__consumer_offsets"


def run(*args: str | Path, expect: int = 0) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == expect, (result.stdout, result.stderr)
    return result.stdout


def groups_json(*paths: Path, extra: tuple[str, ...] = ()) -> dict[str, dict]:
    doc = json.loads(run("groups", *paths, "--format", "json", *extra))
    return {g["group"]: g for g in doc}


def commit(co: PartitionBuilder, group: str, topic: str, partition: int, offset: int, *,
           pid: int = -1, epoch: int = 0, txn: bool = False, at: int | None = None,
           tombstone: bool = False, base: int | None = None) -> PartitionBuilder:
    """One offset commit batch, as ``GroupMetadataManager#storeOffsets`` appends it."""
    ts = T0 if at is None else at
    key = build_key(OffsetCommitKey(group=group, topic=topic, partition=partition))
    value = None if tombstone else build_value(OffsetCommitValue(
        version=3, offset=offset, metadata="", commit_timestamp_ms=ts, leader_epoch=0))
    base = co.log_end_offset if base is None else base
    return co.raw(build_batch([Record(offset=base, timestamp=ts, key=key, value=value)],
                              base_offset=base, producer_id=pid, producer_epoch=epoch,
                              base_sequence=0 if txn else -1, is_transactional=txn))


def group_metadata(co: PartitionBuilder, group: str, members: int) -> PartitionBuilder:
    value = GroupMetadataValue(
        version=3, protocol_type="consumer", generation=2, protocol="range",
        leader="m-0" if members else None,
        members=tuple(GroupMember(member_id=f"m-{i}", client_id="c", client_host="/h",
                                  session_timeout_ms=45_000, rebalance_timeout_ms=300_000,
                                  subscription=b"", assignment=b"") for i in range(members)),
        current_state_timestamp_ms=T0)
    base = co.log_end_offset
    return co.raw(build_batch([Record(offset=base, timestamp=T0,
                                      key=build_key(GroupMetadataKey(group=group)),
                                      value=build_value(value))], base_offset=base))


def data_partition(b: LogDirBuilder) -> PartitionBuilder:
    """t-0: 3 committed transactional records (+COMMIT), 2 aborted (+ABORT), 2 plain records,
    then an open transaction of producer 9 (2 records) and 3 plain records after it.

    offsets: 0-2 committed data, 3 COMMIT, 4-5 aborted, 6 ABORT, 7-8 plain,
    9-10 open transaction (LSO = 9), 11-13 plain; LEO = HW = 14.
    """
    t = b.partition("t", 0)
    t.data(pid=7, epoch=0, n=3, txn=True).commit(pid=7, epoch=0)
    t.data(pid=8, epoch=0, n=2, txn=True).abort(pid=8, epoch=0)
    t.data(n=2)
    t.data(pid=9, epoch=3, n=2, txn=True)
    t.data(n=3)
    return t


def test_transactional_commits_count_only_after_their_commit_marker(tmp_path: Path) -> None:
    """``GroupMetadataManager#doLoadGroupsAndOffsets``: a transactional offset commit is pending
    per producer until its COMMIT marker (applied) or ABORT marker (discarded); one with no
    marker is not applied and is listed as pending with its producer."""
    b = LogDirBuilder(tmp_path / "d")
    data_partition(b)
    co = b.partition(CO, 7)
    commit(co, "g", "t", 0, 2)
    commit(co, "g", "t", 0, 5, pid=50, epoch=1, txn=True)
    co.commit(pid=50, epoch=1)
    commit(co, "g", "t", 0, 8, pid=51, epoch=0, txn=True)
    co.abort(pid=51, epoch=0)
    commit(co, "g", "t", 0, 9, pid=52, epoch=4, txn=True, at=T0 + 5000)
    b.build()
    g = groups_json(b.root)["g"]
    (row,) = g["partitions"]
    assert row["committed_offset"] == 5
    assert row["consumer_offsets_partition"] == 7
    # OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT while 52's commit pends
    # (``GroupMetadataManager#getOffsets``, ``OffsetMetadataManager#fetchOffsets``)
    assert row["status"] == "unstable_offset_commit" and row["pending_offset"] == 9
    (pending,) = g["pending_transactional_commits"]
    assert (pending["offset"], pending["producer_id"], pending["producer_epoch"]) == (9, 52, 4)
    assert pending["batch_offset"] == 5 and pending["commit_timestamp"] == T0 + 5000
    assert pending["finding"] == "open_transaction"  # the __consumer_offsets-7 transaction
    # only offset commits: an Empty classic group, as Kafka's coordinator loads it
    assert (g["state"], g["group_type"]) == ("Empty", "classic")
    assert g["last_commit_timestamp"] == T0 + 5000


def test_an_older_transactional_commit_does_not_replace_a_newer_one(tmp_path: Path) -> None:
    """``CommitRecordMetadataAndOffset#olderThan``: on COMMIT a pending commit replaces the
    loaded one only when its batch is later in the log; a tombstone removes the commit."""
    b = LogDirBuilder(tmp_path / "d")
    data_partition(b)
    co = b.partition(CO, 0)
    commit(co, "g", "t", 0, 3, pid=60, epoch=0, txn=True)  # log offset 0
    commit(co, "g", "t", 0, 7)  # log offset 1: newer
    co.commit(pid=60, epoch=0)
    commit(co, "gone", "t", 0, 4)
    commit(co, "gone", "t", 0, 0, tombstone=True)
    group_metadata(co, "gone", members=0)
    b.build()
    groups = groups_json(b.root)
    assert [r["committed_offset"] for r in groups["g"]["partitions"]] == [7]
    assert groups["gone"]["partitions"] == [] and groups["gone"]["state"] == "Empty"


def test_lag_three_ways_and_the_transaction_holding_a_stuck_group(tmp_path: Path) -> None:
    """Lag as ``ConsumerGroupCommand`` prints it (HW - committed), the records a read_committed
    consumer receives (``Fetcher``/``CompletedFetch`` drop aborted batches and control records;
    the broker stops at the LSO, ``UnifiedLog#fetchLastStableOffsetMetadata``), and the records
    held behind the LSO; a group at the LSO waits for the open transaction that holds it."""
    b = LogDirBuilder(tmp_path / "d")
    data_partition(b)
    co = b.partition(CO, 3)
    group_metadata(co, "start", members=2)
    commit(co, "start", "t", 0, 0)
    commit(co, "mid", "t", 0, 5)
    commit(co, "stuck", "t", 0, 9)
    commit(co, "ahead", "t", 0, 14)
    commit(co, "beyond", "t", 0, 20)
    b.build()
    groups = groups_json(b.root, extra=("--now", str(T0 + 60_000)))
    rows = {name: g["partitions"][0] for name, g in groups.items()}
    start = rows["start"]
    assert (start["log_start_offset"], start["last_stable_offset"], start["high_watermark"]) \
        == (0, 9, 14)
    # 0-2 committed + 7-8 plain = 5 delivered; 9-10 open + 11-13 plain = 5 held back
    assert (start["lag_offsets"], start["lag_records_read_committed"],
            start["records_behind_lso"]) == (14, 5, 5)
    assert start["status"] == "lagging" and start["holding_producer_id"] == 9
    mid = rows["mid"]  # from offset 5: 5 is aborted, 7-8 delivered
    assert (mid["lag_offsets"], mid["lag_records_read_committed"],
            mid["records_behind_lso"]) == (9, 2, 5)
    stuck = rows["stuck"]
    assert stuck["status"] == "stuck_behind_transaction"
    assert (stuck["lag_offsets"], stuck["lag_records_read_committed"],
            stuck["records_behind_lso"]) == (5, 0, 5)
    assert (stuck["holding_producer_id"], stuck["holding_producer_epoch"],
            stuck["holding_first_offset"]) == (9, 3, 9)
    assert stuck["holding_finding"] in ("open_transaction", "lso_pinned")
    assert stuck["holding_age_ms"] == T0 + 60_000 - stuck["holding_since"]
    assert rows["ahead"]["status"] == "caught_up" and rows["ahead"]["lag_offsets"] == 0
    assert rows["beyond"]["status"] == "offset_out_of_range"
    assert groups["start"]["state"] == "Stable" and groups["start"]["members"] == 2
    assert groups["stuck"]["stuck_partitions"] == 1


def test_aged_log_dirs_give_the_same_positions(tmp_path: Path) -> None:
    """Aged: ``LogCleaner`` keeps only the last commit per key of ``__consumer_offsets`` and
    the markers (an emptied transaction's marker outlives its data), so the load gives the same
    committed offsets; retention (``UnifiedLog#deleteOldSegments``) moved t-0's log start past
    a group's commit, which is then out of range (the consumer resets, OFFSET_OUT_OF_RANGE)."""
    young = LogDirBuilder(tmp_path / "young")
    data_partition(young)
    co = young.partition(CO, 1)
    commit(co, "g", "t", 0, 1)
    commit(co, "g", "t", 0, 4, pid=70, epoch=0, txn=True)
    co.commit(pid=70, epoch=0)
    commit(co, "g", "t", 0, 7, pid=71, epoch=0, txn=True)
    co.commit(pid=71, epoch=0)
    young.build()

    aged = LogDirBuilder(tmp_path / "aged")
    data_partition(aged)
    co = aged.partition(CO, 1)
    # cleaned: the commits at 0 and 1 are superseded by the one at 3 and removed; the markers
    # stay until delete.retention.ms has passed (70's now closes nothing)
    co.raw(build_control_batch(base_offset=2, producer_id=70, producer_epoch=0,
                               control_type=ControlType.COMMIT, timestamp=T0))
    commit(co, "g", "t", 0, 7, pid=71, epoch=0, txn=True, base=3)
    co.commit(pid=71, epoch=0)
    aged.build()
    assert [r["committed_offset"] for r in groups_json(young.root)["g"]["partitions"]] == [7]
    assert [r["committed_offset"] for r in groups_json(aged.root)["g"]["partitions"]] == [7]

    retained = LogDirBuilder(tmp_path / "retained")
    t = data_partition(retained)
    t.roll()
    t.data(n=1)
    t.delete_segments_before(14)
    co = retained.partition(CO, 2)
    commit(co, "late", "t", 0, 9)
    retained.build()
    (row,) = groups_json(retained.root)["late"]["partitions"]
    assert row["log_start_offset"] == 14 and row["status"] == "offset_out_of_range"


def test_cli_table_csv_filter_and_evidence_untouched(tmp_path: Path) -> None:
    """The bundled fixture: payments-app is lagging on payments-0 behind ledger-writer's
    hanging transaction (fixtures/README.md) and caught up on payments-1."""
    logdir = ROOT / "fixtures" / "logdir"
    before = snapshot_tree(logdir)
    table = run("groups", logdir)
    assert "group payments-app (Stable, consumer/range generation 4, 1 member(s))" in table
    assert "ledger-writer 4003/7@19" in table and "hanging_transaction" in table
    rows = list(csv.DictReader(io.StringIO(run("groups", logdir, "--format", "csv"))))
    assert [(r["topic"], r["partition"], r["committed_offset"], r["status"]) for r in rows] == [
        ("payments", "0", "15", "lagging"), ("payments", "1", "3", "caught_up")]
    assert rows[0]["holding_transactional_id"] == "ledger-writer"
    out = CliRunner().invoke(cli, ["groups", str(logdir), "--group", "nobody", "--format",
                                   "json"])
    assert out.exit_code == 0 and json.loads(out.stdout) == []
    assert "no group 'nobody'" in out.stderr
    assert_unchanged(logdir, before)
    # served/clean: fulfilment's last transaction's COMMIT marker is the one offset "lagging"
    (orders,) = groups_json(ROOT / "fixtures" / "served" / "clean")["fulfilment"]["partitions"]
    assert (orders["lag_offsets"], orders["lag_records_read_committed"]) == (1, 0)
    assert orders["status"] == "caught_up"


def test_inspect_lists_the_groups_needing_attention(tmp_path: Path) -> None:
    """``inspect`` names the stuck (``UnifiedLog#fetchLastStableOffsetMetadata``), unstable
    (``GroupMetadataManager#getOffsets`` with require_stable) and out-of-range positions only."""
    b = LogDirBuilder(tmp_path / "d")
    data_partition(b)
    co = b.partition(CO, 3)
    commit(co, "reader", "t", 0, 0)
    commit(co, "stuck", "t", 0, 9)
    commit(co, "beyond", "t", 0, 20)
    commit(co, "txn", "t", 0, 11, pid=80, epoch=0, txn=True)
    b.build()
    doc = json.loads(run("inspect", b.root, "--format", "json"))
    assert sorted((g["group"], g["status"]) for g in doc["groups"]) == [
        ("beyond", "offset_out_of_range"), ("stuck", "stuck_behind_transaction"),
        ("txn", "unstable_offset_commit")]
    table = run("inspect", b.root)
    assert "consumer groups needing attention (3;" in table
    assert "stuck on t-0: stuck_behind_transaction at 9 (LSO 9, HW 14), 5 record(s) behind " \
           "the LSO, held by producer 9/3 from offset 9" in table


def test_the_row_contract_is_the_rows_keys() -> None:
    """The documented fields (CSV columns, Parquet schema) are exactly ``to_dict``'s keys."""
    from kafkatx.analysis.groups import GROUP_PARTITION_FIELDS, GroupPartition

    row = GroupPartition(group="g", topic="t", partition=0, committed_offset=1,
                         committed_leader_epoch=0, commit_timestamp=0, metadata="",
                         consumer_offsets_partition=0, status="lagging")
    assert [name for name, _ in GROUP_PARTITION_FIELDS] == list(row.to_dict())


def test_records_of_an_unknown_key_type_are_ignored_and_said(tmp_path: Path) -> None:
    """``CoordinatorLoaderImpl`` (and ``GroupMetadataManager#doLoadGroupsAndOffsets``): a key of
    an unknown record type is ignored with a warning ("a left over from an aborted upgrade");
    the commits around it still load."""
    b = LogDirBuilder(tmp_path / "d")
    data_partition(b)
    co = b.partition(CO, 7)
    commit(co, "g", "t", 0, 2)
    for _ in range(2):
        base = co.log_end_offset
        co.raw(build_batch([Record(offset=base, timestamp=T0, key=b"\x00\x63junk",
                                   value=b"\x00\x00")], base_offset=base))
    commit(co, "g", "t", 0, 8)
    b.build()
    before = snapshot_tree(b.root)
    result = CliRunner().invoke(cli, ["groups", str(b.root), "--format", "json"])
    assert_unchanged(b.root, before)
    assert result.exit_code == 0, result.stderr
    (row,) = {g["group"]: g for g in json.loads(result.stdout)}["g"]["partitions"]
    assert row["committed_offset"] == 8
    (warning,) = [line for line in result.stderr.splitlines() if "key type 99" in line]
    assert warning.startswith("kafkatx: warning: ") and "__consumer_offsets-7/" in warning
    assert "offset 1: 2 record(s) with key type 99" in warning


def test_several_brokers_copies_give_the_leaders_positions(tmp_path: Path) -> None:
    """The log dirs of two brokers: broker-1's copy of t-0 lags (it stopped at offset 3),
    broker-2's is the leader's (the newest leader epoch): a group's lag is against the
    leader's log, as ``kafka-consumer-groups.sh --describe`` asks the leader
    (``replica_authority``), not against the copy met first."""
    for name, full in (("broker-1", False), ("broker-2", True)):
        b = LogDirBuilder(tmp_path / name)
        t = b.partition("t", 0)
        t.data(pid=7, epoch=0, n=3, txn=True)
        if full:
            t.commit(pid=7, epoch=0).data(n=6)
        co = b.partition(CO, 3)
        commit(co, "g", "t", 0, 2)
        b.build()
        if full:
            (t.dir / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n1 3\n")
    (row,) = groups_json(tmp_path)["g"]["partitions"]
    assert (row["high_watermark"], row["last_stable_offset"], row["lag_offsets"]) == (10, 10, 8)
