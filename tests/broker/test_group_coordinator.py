"""The classic group coordinator in process: rebalances, heartbeats, offsets (plain and
transactional) and what it writes to ``__consumer_offsets``, as Kafka's
``GroupCoordinatorTest`` / ``GroupMetadataManagerTest`` check them."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kafkatx.broker.coordinators.groups import GroupState, JoinResult, OffsetAndMetadata
from kafkatx.broker.protocol.server import Broker
from kafkatx.formats.consumer_offsets import GroupMetadataValue, OffsetCommitValue
from tests.broker.inprocess import create_topic, group_records, markers, run_broker

GID = "billing"
NONE = ErrorCode.none
PROTOCOLS = [("range", b"\x00\x01sub-a"), ("roundrobin", b"\x00\x01sub-b")]


async def _join(b: Broker, member_id: str = "", *, client: str = "c1", session_ms: int = 10_000,
                protocols: list[tuple[str, bytes]] | None = None,
                require_known: bool = False) -> JoinResult:
    return await b.groups.handle_join_group(
        GID, member_id, None, require_known_member_id=require_known, client_id=client,
        client_host="/127.0.0.1", rebalance_timeout_ms=1_000, session_timeout_ms=session_ms,
        protocol_type="consumer", protocols=protocols or PROTOCOLS)


def _metadata_values(b: Broker) -> list[GroupMetadataValue]:
    return [v for _, v, _ in group_records(b, GID) if isinstance(v, GroupMetadataValue)]


def _offset(b: Broker, tp: tuple[str, int], *, stable: bool = False) -> tuple[int, ErrorCode]:
    error, found = b.groups.handle_fetch_offsets(GID, stable, [tp])
    assert error == NONE
    offset, _, _, part_error = found[tp]
    return offset, part_error


def _om(offset: int, metadata: str = "") -> OffsetAndMetadata:
    return OffsetAndMetadata(offset, 0, metadata, 1_760_000_000_000)


def test_member_id_required_then_join_sync_and_store(tmp_path: Path) -> None:
    async def body(b: Broker) -> None:
        first = await _join(b, require_known=True, client="app")
        assert first.error == ErrorCode.member_id_required
        assert first.member_id.startswith("app-")
        joined = await _join(b, first.member_id, require_known=True, client="app")
        assert (joined.error, joined.generation_id, joined.leader_id) == (
            NONE, 1, first.member_id)
        assert joined.protocol_name == "range"
        assert joined.members == ((first.member_id, None, PROTOCOLS[0][1]),)
        sync = await b.groups.handle_sync_group(GID, 1, first.member_id, "consumer", "range",
                                                None, {first.member_id: b"assigned"})
        assert (sync.error, sync.assignment) == (NONE, b"assigned")
        group = b.groups.groups[GID]
        assert group.state is GroupState.STABLE
        (value,) = _metadata_values(b)
        assert (value.version, value.generation, value.protocol, value.leader) == (
            3, 1, "range", first.member_id)
        (member,) = value.members
        assert (member.client_id, member.client_host, member.subscription, member.assignment,
                member.session_timeout_ms, member.rebalance_timeout_ms) == (
            "app", "/127.0.0.1", PROTOCOLS[0][1], b"assigned", 10_000, 1_000)
    run_broker(tmp_path / "ld", body, group_initial_rebalance_delay_ms=0)


def test_two_members_rebalance_and_follower_waits_for_leader(tmp_path: Path) -> None:
    async def body(b: Broker) -> None:
        a, c = await asyncio.gather(_join(b, client="a"), _join(b, client="b"))
        assert a.generation_id == c.generation_id == 1
        assert a.leader_id == c.leader_id == a.member_id
        assert {m for m, _, _ in a.members} == {a.member_id, c.member_id} and c.members == ()
        follower = asyncio.ensure_future(b.groups.handle_sync_group(
            GID, 1, c.member_id, None, None, None, {}))
        await asyncio.sleep(0.01)
        assert not follower.done()  # waits for the leader's assignment
        leader = await b.groups.handle_sync_group(
            GID, 1, a.member_id, None, None, None, {a.member_id: b"A", c.member_id: b"B"})
        assert (leader.assignment, (await follower).assignment) == (b"A", b"B")
        assert b.groups.handle_heartbeat(GID, c.member_id, None, 1) == NONE
        assert b.groups.handle_heartbeat(GID, c.member_id, None, 0) == \
            ErrorCode.illegal_generation
        assert b.groups.handle_heartbeat(GID, "nobody", None, 1) == ErrorCode.unknown_member_id
        # A third member: the others learn about the rebalance through their heartbeats.
        third = asyncio.ensure_future(_join(b, client="c"))
        await asyncio.sleep(0.01)
        assert b.groups.handle_heartbeat(GID, a.member_id, None, 1) == \
            ErrorCode.rebalance_in_progress
        rejoined = await asyncio.gather(_join(b, a.member_id), _join(b, c.member_id), third)
        assert {r.generation_id for r in rejoined} == {2}
        # Everyone leaves: the group is empty at generation 3, and that is written too.
        for r in rejoined:
            error, results = b.groups.handle_leave_group(GID, [(r.member_id, None)])
            assert error == NONE and results[0][2] == NONE
        assert b.groups.groups[GID].state is GroupState.EMPTY
        assert [(v.generation, len(v.members)) for v in _metadata_values(b)] == [(1, 2), (3, 0)]
    run_broker(tmp_path / "ld", body, group_initial_rebalance_delay_ms=30)


def test_member_without_heartbeats_is_removed(tmp_path: Path) -> None:
    async def body(b: Broker) -> None:
        joined = await _join(b, session_ms=80)
        await b.groups.handle_sync_group(GID, 1, joined.member_id, None, None, None, {})
        await asyncio.sleep(0.25)
        group = b.groups.groups[GID]
        assert group.members == {} and group.state is GroupState.EMPTY
        assert group.generation_id == 2
        assert b.groups.handle_heartbeat(GID, joined.member_id, None, 1) == \
            ErrorCode.unknown_member_id
    run_broker(tmp_path / "ld", body, group_initial_rebalance_delay_ms=0,
               group_min_session_timeout_ms=10)


def test_session_timeout_bounds(tmp_path: Path) -> None:
    async def body(b: Broker) -> None:
        assert (await _join(b, session_ms=5_999)).error == ErrorCode.invalid_session_timeout
        assert (await b.groups.handle_join_group(
            "", "", None, require_known_member_id=False, client_id="c", client_host="/h",
            rebalance_timeout_ms=1, session_timeout_ms=10_000, protocol_type="consumer",
            protocols=PROTOCOLS)).error == ErrorCode.invalid_group_id
        assert (await _join(b, "unknown-member")).error == ErrorCode.unknown_member_id
    run_broker(tmp_path / "ld", body)


def test_min_session_timeout_is_the_brokers_setting(tmp_path: Path) -> None:
    """``group.min.session.timeout.ms`` (``--group-min-session-timeout-ms``) bounds JoinGroup."""
    async def body(b: Broker) -> None:
        assert (await _join(b, session_ms=999)).error == ErrorCode.invalid_session_timeout
        assert (await _join(b, session_ms=1_000)).error == NONE
    run_broker(tmp_path / "ld", body, group_initial_rebalance_delay_ms=0,
               group_min_session_timeout_ms=1_000)


def test_delete_groups(tmp_path: Path) -> None:
    """``handleDeleteGroups``: an Empty group goes with tombstones for its offsets and metadata;
    a group with members is NON_EMPTY_GROUP, an unknown one GROUP_ID_NOT_FOUND; an offsets-only
    group (generation 0) gets no metadata tombstone; nothing comes back after a restart."""
    async def first(b: Broker) -> None:
        create_topic(b, "pay", 2)
        joined = await _join(b)
        await b.groups.handle_sync_group(GID, 1, joined.member_id, None, None, None, {})
        b.groups.handle_commit_offsets(GID, joined.member_id, None, 1,
                                       {("pay", 0): _om(3), ("pay", 1): _om(4)})
        b.groups.handle_commit_offsets("offsets-only", "", None, -1, {("pay", 0): _om(5)})
        assert b.groups.handle_delete_groups([GID, "nobody", ""]) == {
            GID: ErrorCode.non_empty_group, "nobody": ErrorCode.group_id_not_found,
            "": ErrorCode.group_id_not_found}
        b.groups.handle_leave_group(GID, [(joined.member_id, None)])
        # The last member left: the rebalance completes at once (``tryCompleteElseWatch``).
        assert b.groups.groups[GID].state is GroupState.EMPTY
        assert b.groups.handle_delete_groups([GID, "offsets-only"]) == {
            GID: NONE, "offsets-only": NONE}
        assert b.groups.list_groups(set()) == []
        assert b.groups.handle_delete_groups([GID]) == {GID: ErrorCode.group_id_not_found}
        assert _offset(b, ("pay", 0)) == (-1, NONE)
        *_, (k1, v1, batch), (k2, v2, _), (k3, v3, _) = group_records(b, GID)
        assert [(type(k).__name__, v) for k, v in ((k1, v1), (k2, v2), (k3, v3))] == [
            ("OffsetCommitKey", None), ("OffsetCommitKey", None), ("GroupMetadataKey", None)]
        assert not batch.header.is_transactional
        tail = [(type(k).__name__, v) for k, v, _ in group_records(b, "offsets-only")][-1]
        assert tail == ("OffsetCommitKey", None)
    run_broker(tmp_path / "ld", first, group_initial_rebalance_delay_ms=0)

    async def second(b: Broker) -> None:
        assert b.groups.groups == {}
        assert _offset(b, ("pay", 1)) == (-1, NONE)
    run_broker(tmp_path / "ld", second)


def test_offset_commits_and_fetch(tmp_path: Path) -> None:
    async def body(b: Broker) -> None:
        tp = ("pay", 0)
        assert _offset(b, tp) == (-1, NONE)
        assert b.groups.handle_commit_offsets(GID, "", None, -1, {tp: _om(5, "m")}) == {tp: NONE}
        assert b.groups.handle_commit_offsets(GID, "", None, -1,
                                              {tp: _om(6, "x" * 4097)}) == {
            tp: ErrorCode.offset_metadata_too_large}
        assert _offset(b, tp) == (5, NONE)
        assert b.groups.handle_commit_offsets("other", "m", None, 3, {tp: _om(1)}) == {
            tp: ErrorCode.illegal_generation}
        error, everything = b.groups.handle_fetch_offsets(GID, False, None)
        assert error == NONE and everything == {tp: (5, 0, "m", NONE)}
        ((key, value, batch),) = group_records(b, GID)
        assert (key.topic, key.partition) == tp
        assert isinstance(value, OffsetCommitValue)
        assert (value.version, value.offset, value.metadata, value.leader_epoch) == (3, 5, "m", 0)
        assert (batch.header.producer_id, batch.header.is_transactional) == (-1, False)
    run_broker(tmp_path / "ld", body)


def _txn_offsets(b: Broker, tid: str, offset: int) -> tuple[int, int]:
    pid, epoch = _pid_epoch(b, tid)
    assert b.transactions.handle_add_offsets(tid, pid, epoch, GID) == NONE
    result = b.groups.handle_txn_commit_offsets(GID, pid, epoch, "", None, -1,
                                                {("pay", 0): _om(offset)})
    assert result == {("pay", 0): NONE}
    return pid, epoch


def _pid_epoch(b: Broker, tid: str) -> tuple[int, int]:
    r = b.transactions.handle_init_producer_id(tid, 60_000, None)
    assert r.error == NONE
    return r.producer_id, r.producer_epoch


@pytest.mark.parametrize("commit", [True, False])
def test_transactional_offsets_pending_until_marker(tmp_path: Path, commit: bool) -> None:
    async def body(b: Broker) -> None:
        create_topic(b, "pay")
        tp = ("pay", 0)
        b.groups.handle_commit_offsets(GID, "", None, -1, {tp: _om(3)})
        pid, epoch = _txn_offsets(b, "ctp", 10)
        assert _offset(b, tp) == (3, NONE)
        assert _offset(b, tp, stable=True) == (-1, ErrorCode.unstable_offset_commit)
        assert b.transactions.handle_end_transaction("ctp", pid, epoch, commit)[0] == NONE
        assert _offset(b, tp, stable=True) == ((10 if commit else 3), NONE)
        offsets_log = b.logs.get("__consumer_offsets", b.groups.partition_for(GID))
        assert offsets_log is not None
        assert markers(offsets_log) == [("COMMIT" if commit else "ABORT", pid, epoch)]
        txn_batch = group_records(b, GID)[-1][2].header
        assert (txn_batch.producer_id, txn_batch.producer_epoch, txn_batch.base_sequence,
                txn_batch.is_transactional) == (pid, epoch, 0, True)
    run_broker(tmp_path / "ld", body)


def test_restart_reloads_groups_offsets_and_pending_commits(tmp_path: Path) -> None:
    async def first(b: Broker) -> Any:
        create_topic(b, "pay")
        joined = await _join(b)
        await b.groups.handle_sync_group(GID, 1, joined.member_id, None, None, None,
                                         {joined.member_id: b"mine"})
        b.groups.handle_commit_offsets(GID, joined.member_id, None, 1, {("pay", 0): _om(7)})
        _txn_offsets(b, "open-txn", 9)  # no EndTxn: still pending at the restart
        return joined.member_id
    member_id = run_broker(tmp_path / "ld", first, group_initial_rebalance_delay_ms=0)

    async def second(b: Broker) -> None:
        group = b.groups.groups[GID]
        assert (group.state, group.generation_id, group.leader_id) == (
            GroupState.STABLE, 1, member_id)
        assert group.members[member_id].assignment == b"mine"
        assert _offset(b, ("pay", 0)) == (7, NONE)
        assert _offset(b, ("pay", 0), stable=True)[1] == ErrorCode.unstable_offset_commit
        # The member may go on in its generation after the restart.
        assert b.groups.handle_heartbeat(GID, member_id, None, 1) == NONE
        sync = await b.groups.handle_sync_group(GID, 1, member_id, None, None, None, {})
        assert sync.assignment == b"mine"
        md = b.transactions.cache["open-txn"]
        assert b.transactions.handle_end_transaction("open-txn", md.producer_id,
                                                     md.producer_epoch, True)[0] == NONE
        assert _offset(b, ("pay", 0), stable=True) == (9, NONE)
    run_broker(tmp_path / "ld", second)


def test_list_and_describe_groups(tmp_path: Path) -> None:
    async def body(b: Broker) -> None:
        joined = await _join(b)
        await b.groups.handle_sync_group(GID, 1, joined.member_id, None, None, None,
                                         {joined.member_id: b"x"})
        assert [g.group_id for g in b.groups.list_groups(set())] == [GID]
        assert b.groups.list_groups({"empty"}) == []
        assert [g.group_id for g in b.groups.list_groups({"STABLE"})] == [GID]
        assert b.groups.describe_group("nothing") == (NONE, None)
    run_broker(tmp_path / "ld", body, group_initial_rebalance_delay_ms=0)


def test_static_member_rejoining_replaces_its_old_member_id(tmp_path: Path) -> None:
    async def join_static(b: Broker) -> JoinResult:
        return await b.groups.handle_join_group(
            GID, "", "instance-1", require_known_member_id=True, client_id="s",
            client_host="/127.0.0.1", rebalance_timeout_ms=1_000, session_timeout_ms=10_000,
            protocol_type="consumer", protocols=PROTOCOLS)

    async def body(b: Broker) -> None:
        first = await join_static(b)  # static members need no member-id round trip
        assert (first.error, first.generation_id) == (NONE, 1)
        await b.groups.handle_sync_group(GID, 1, first.member_id, None, None, "instance-1",
                                         {first.member_id: b"a"})
        second = await join_static(b)  # the same instance restarted: no rebalance
        assert (second.error, second.generation_id) == (NONE, 1)
        assert second.member_id != first.member_id
        assert b.groups.handle_heartbeat(GID, first.member_id, "instance-1", 1) == \
            ErrorCode.fenced_instance_id
        assert b.groups.handle_heartbeat(GID, second.member_id, "instance-1", 1) == NONE
        (value,) = _metadata_values(b)[-1:]
        assert [(m.member_id, m.group_instance_id) for m in value.members] == [
            (second.member_id, "instance-1")]
    run_broker(tmp_path / "ld", body, group_initial_rebalance_delay_ms=0)
