"""The classic group coordinator: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, offsets.

Mirrors Kafka's classic ``GroupCoordinator`` (``handleJoinGroup`` with the new/current/static
member paths and KIP-394's MEMBER_ID_REQUIRED, ``prepareRebalance`` with ``InitialDelayedJoin``
and ``DelayedJoin``, ``onCompleteJoin``, ``handleSyncGroup``, pending-sync expiration,
``handleHeartbeat``, heartbeat and pending-member expiration, ``handleLeaveGroup``,
``handleCommitOffsets`` / ``handleTxnCommitOffsets`` / ``validateOffsetCommit``,
``handleFetchOffsets``, ``handleListGroups``, ``handleDescribeGroup``, ``handleDeleteGroups``,
``handleDeleteOffsets``) and ``GroupMetadataManager`` (``storeGroup``: a GroupMetadataValue v3
record, ``storeOffsets``: OffsetCommitValue v3 records in one batch, transactional with the
producer's id and epoch and base sequence 0; ``getOffsets`` with ``requireStable``;
``doLoadGroupsAndOffsets``; ``scheduleHandleTxnCompletion``; ``cleanupGroupMetadata``:
tombstones for deleted offsets and a deleted group's metadata). Records go to
``__consumer_offsets-<partitionFor(group)>``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from kafkatx.broker.coordinators.coordinator_log import (
    CoordinatorAppendError,
    KeyValue,
    append,
    build_batch,
)
from kafkatx.broker.coordinators.group_log import (
    group_metadata_record,
    load_groups,
    offset_commit_records,
)
from kafkatx.broker.coordinators.groups import (
    UNKNOWN_MEMBER_ID,
    CommitRecord,
    GroupMetadata,
    GroupState,
    JoinResult,
    MemberMetadata,
    OffsetAndMetadata,
    SyncResult,
    TopicPartition,
)
from kafkatx.broker.logs.partition_log import PartitionLog
from kafkatx.formats.consumer_offsets import GroupMetadataKey, OffsetCommitKey, build_key
from kafkatx.formats.internal_topics import GROUP_METADATA_TOPIC
from kafkatx.semantics.coordinator_partition import partition_for

if TYPE_CHECKING:
    from kafkatx.broker.context import BrokerContext

G = GroupState
NUM_PARTITIONS = 50  # offsets.topic.num.partitions
MAX_SESSION_TIMEOUT_MS = 1_800_000  # group.max.session.timeout.ms
MAX_GROUP_SIZE = 2**31 - 1  # group.max.size
DEFAULT_INITIAL_REBALANCE_DELAY_MS = 3_000  # group.initial.rebalance.delay.ms
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000  # GroupCoordinator.NewMemberJoinTimeoutMs
OFFSET_METADATA_MAX_BYTES = 4096  # offset.metadata.max.bytes
INVALID_OFFSET = -1


def _append_error(error: ErrorCode) -> ErrorCode:
    """``GroupMetadataManager#maybeConvertOffsetCommitError``."""
    if error in (ErrorCode.unknown_topic_or_partition, ErrorCode.not_enough_replicas,
                 ErrorCode.not_enough_replicas_after_append):
        return ErrorCode.coordinator_not_available
    if error in (ErrorCode.not_leader_or_follower, ErrorCode.kafka_storage_error):
        return ErrorCode.not_coordinator
    if error in (ErrorCode.message_too_large, ErrorCode.record_list_too_large,
                 ErrorCode.invalid_fetch_size):
        return ErrorCode.invalid_commit_offset_size
    return error


class GroupCoordinator:
    """Every classic group of this node (it leads all 50 ``__consumer_offsets`` partitions)."""

    def __init__(self, broker: BrokerContext, *,
                 initial_rebalance_delay_ms: int = DEFAULT_INITIAL_REBALANCE_DELAY_MS) -> None:
        self.broker = broker
        self.groups: dict[str, GroupMetadata] = {}
        self.owned: set[int] = set()  # --brokers N: the __consumer_offsets partitions led here
        self.initial_rebalance_delay_ms = initial_rebalance_delay_ms
        self._closed = False

    @staticmethod
    def partition_for(group_id: str) -> int:
        return partition_for(group_id, NUM_PARTITIONS)

    def _later(self, delay_ms: int, callback: Callable[[], None]) -> asyncio.TimerHandle:
        def run() -> None:
            if self._closed:
                return
            try:
                callback()
            except Exception as exc:  # a timer must never take the loop down
                self.broker.warn(f"group coordinator timer failed: {type(exc).__name__}: {exc}")
        return asyncio.get_running_loop().call_later(max(delay_ms, 0) / 1000, run)

    def shutdown(self) -> None:
        self._closed = True
        for group in self.groups.values():
            for timer in (group.join_timer, group.sync_timer,
                          *(m.heartbeat_timer for m in group.members.values())):
                if timer is not None:
                    timer.cancel()

    # -- validation -------------------------------------------------------------------------

    @staticmethod
    def _invalid_group_id(group_id: str | None, *, empty_ok: bool) -> ErrorCode | None:
        """``validateGroupStatus``/``isValidGroupId``: offsets and describe accept ""."""
        if group_id is None or (not group_id and not empty_ok):
            return ErrorCode.invalid_group_id
        return None

    def _get_or_create(self, group_id: str, create: bool) -> GroupMetadata | None:
        group = self.groups.get(group_id)
        if group is None and create:
            group = GroupMetadata(group_id, G.EMPTY, self.broker.now_ms())
            self.groups[group_id] = group
        return group

    @staticmethod
    def _validate_current_member(group: GroupMetadata, member_id: str,
                                 instance_id: str | None) -> ErrorCode | None:
        """``validateCurrentMember``."""
        if instance_id is not None:
            current = group.static_members.get(instance_id)
            if current is None:
                return ErrorCode.unknown_member_id
            if current != member_id:
                return ErrorCode.fenced_instance_id
            return None
        if not group.has(member_id):
            return ErrorCode.unknown_member_id
        return None

    # -- JoinGroup --------------------------------------------------------------------------------

    async def handle_join_group(self, group_id: str, member_id: str, instance_id: str | None,
                                *, require_known_member_id: bool, client_id: str,
                                client_host: str, rebalance_timeout_ms: int,
                                session_timeout_ms: int, protocol_type: str,
                                protocols: list[tuple[str, bytes]]) -> JoinResult:
        """``handleJoinGroup``: the answer comes when the rebalance completes."""
        error = self._invalid_group_id(group_id, empty_ok=False)
        if error is not None:
            return JoinResult(member_id, error)
        min_session_ms = self.broker.config.group_min_session_timeout_ms
        if not min_session_ms <= session_timeout_ms <= MAX_SESSION_TIMEOUT_MS:
            return JoinResult(member_id, ErrorCode.invalid_session_timeout)
        is_unknown = member_id == UNKNOWN_MEMBER_ID
        group = self._get_or_create(group_id, is_unknown)
        if group is None:
            return JoinResult(member_id, ErrorCode.unknown_member_id)
        future: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        respond = future.set_result
        if not self._accept_joining_member(group, member_id):
            group.remove(member_id)
            return JoinResult(UNKNOWN_MEMBER_ID, ErrorCode.group_max_size_reached)
        names = {name for name, _ in protocols}
        if group.is_state(G.DEAD):
            respond(JoinResult(UNKNOWN_MEMBER_ID if is_unknown else member_id,
                               ErrorCode.coordinator_not_available))
        elif not group.supports_protocols(protocol_type, names):
            respond(JoinResult(UNKNOWN_MEMBER_ID if is_unknown else member_id,
                               ErrorCode.inconsistent_group_protocol))
        elif is_unknown:
            new_id = group.generate_member_id(client_id, instance_id)
            member = MemberMetadata(new_id, instance_id, client_id, client_host,
                                    rebalance_timeout_ms, session_timeout_ms, protocol_type,
                                    list(protocols))
            if instance_id is not None:
                self._static_new_member_join(group, member, future)
            elif require_known_member_id:
                group.pending_members.add(new_id)
                self._schedule_pending_member_expiration(group, new_id, session_timeout_ms)
                respond(JoinResult(new_id, ErrorCode.member_id_required))
            else:
                self._add_member_and_rebalance(group, member, future)
        else:
            self._current_member_join(group, member_id, instance_id, client_id, client_host,
                                      rebalance_timeout_ms, session_timeout_ms, protocol_type,
                                      protocols, future)
        if group.is_state(G.PREPARING_REBALANCE):
            self._check_join(group)
        return await future

    @staticmethod
    def _accept_joining_member(group: GroupMetadata, member_id: str) -> bool:
        if group.state in (G.EMPTY, G.DEAD):
            return True
        if group.is_state(G.PREPARING_REBALANCE):
            return ((group.has(member_id) and group.members[member_id].is_awaiting_join)
                    or group.num_awaiting_join < MAX_GROUP_SIZE)
        return group.has(member_id) or group.size < MAX_GROUP_SIZE

    def _static_new_member_join(self, group: GroupMetadata, member: MemberMetadata,
                                future: asyncio.Future[JoinResult]) -> None:
        """``doStaticNewMemberJoinGroup`` / ``updateStaticMemberAndRebalance``."""
        assert member.group_instance_id is not None
        old_id = group.static_members.get(member.group_instance_id)
        if old_id is None:
            self._add_member_and_rebalance(group, member, future)
            return
        old_leader = group.leader_id
        known = group.replace_static_member(member.group_instance_id, old_id, member.member_id)
        self._schedule_heartbeat(group, known, known.session_timeout_ms)
        group.update_member(known, member.protocols, member.rebalance_timeout_ms,
                            member.session_timeout_ms, future)
        if group.is_state(G.STABLE):
            if group.protocol_name == group.select_protocol():
                error = self._store_group(group, {m.member_id: m.assignment
                                                  for m in group.members.values()})
                group.maybe_invoke_join(known, JoinResult(
                    known.member_id if error == ErrorCode.none else UNKNOWN_MEMBER_ID, error,
                    group.generation_id, group.protocol_type, group.protocol_name,
                    old_leader or ""))
            else:
                self._maybe_prepare_rebalance(group)
        elif group.is_state(G.COMPLETING_REBALANCE):
            self._prepare_rebalance(group)

    def _current_member_join(self, group: GroupMetadata, member_id: str,
                             instance_id: str | None, client_id: str, client_host: str,
                             rebalance_timeout_ms: int, session_timeout_ms: int,
                             protocol_type: str, protocols: list[tuple[str, bytes]],
                             future: asyncio.Future[JoinResult]) -> None:
        """``doCurrentMemberJoinGroup``."""
        respond = future.set_result
        if member_id in group.pending_members:
            member = MemberMetadata(member_id, None, client_id, client_host,
                                    rebalance_timeout_ms, session_timeout_ms, protocol_type,
                                    list(protocols))
            self._add_member_and_rebalance(group, member, future)
            return
        error = self._validate_current_member(group, member_id, instance_id)
        if error is not None:
            respond(JoinResult(member_id, error))
            return
        member = group.members[member_id]
        state = group.state
        if state is G.PREPARING_REBALANCE:
            self._update_member_and_rebalance(group, member, protocols, rebalance_timeout_ms,
                                              session_timeout_ms, future)
        elif state is G.COMPLETING_REBALANCE:
            if member.matches(protocols):
                respond(self._join_result(group, member_id))
            else:
                self._update_member_and_rebalance(group, member, protocols,
                                                  rebalance_timeout_ms, session_timeout_ms,
                                                  future)
        elif state is G.STABLE:
            if group.is_leader(member_id) or not member.matches(protocols):
                self._update_member_and_rebalance(group, member, protocols,
                                                  rebalance_timeout_ms, session_timeout_ms,
                                                  future)
            else:
                respond(JoinResult(member_id, ErrorCode.none, group.generation_id,
                                   group.protocol_type, group.protocol_name,
                                   group.leader_id or ""))
        else:
            respond(JoinResult(member_id, ErrorCode.unknown_member_id))

    @staticmethod
    def _join_result(group: GroupMetadata, member_id: str) -> JoinResult:
        members = group.current_member_metadata() if group.is_leader(member_id) else ()
        return JoinResult(member_id, ErrorCode.none, group.generation_id, group.protocol_type,
                          group.protocol_name, group.leader_id or "", members)

    def _add_member_and_rebalance(self, group: GroupMetadata, member: MemberMetadata,
                                  future: asyncio.Future[JoinResult]) -> None:
        """``addMemberAndRebalance``."""
        member.is_new = True
        if group.is_state(G.PREPARING_REBALANCE) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member, future)
        self._schedule_heartbeat(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(group)

    def _update_member_and_rebalance(self, group: GroupMetadata, member: MemberMetadata,
                                     protocols: list[tuple[str, bytes]],
                                     rebalance_timeout_ms: int, session_timeout_ms: int,
                                     future: asyncio.Future[JoinResult]) -> None:
        group.update_member(member, list(protocols), rebalance_timeout_ms, session_timeout_ms,
                            future)
        self._maybe_prepare_rebalance(group)

    def _maybe_prepare_rebalance(self, group: GroupMetadata) -> None:
        if group.can_rebalance:
            self._prepare_rebalance(group)

    def _prepare_rebalance(self, group: GroupMetadata) -> None:
        """``prepareRebalance``: an empty group waits ``group.initial.rebalance.delay.ms`` for
        more members (``InitialDelayedJoin``), else up to the rebalance timeout."""
        if group.is_state(G.COMPLETING_REBALANCE):
            self._reset_and_propagate_assignment_error(group, ErrorCode.rebalance_in_progress)
        self._remove_sync_expiration(group)
        if group.join_timer is not None:
            group.join_timer.cancel()
        if group.is_state(G.EMPTY):
            delay = self.initial_rebalance_delay_ms
            self._schedule_initial_join(group, delay, delay,
                                        max(group.rebalance_timeout_ms - delay, 0))
        else:
            self._schedule_join(group, group.rebalance_timeout_ms)
        group.transition_to(G.PREPARING_REBALANCE, self.broker.now_ms())
        self.broker.log(f"group {group.group_id}: preparing to rebalance (generation "
                        f"{group.generation_id}, {group.size} members)")
        self._check_join(group)  # ``tryCompleteElseWatch``: e.g. the last member just left

    def _schedule_join(self, group: GroupMetadata, timeout_ms: int) -> None:
        """``DelayedJoin``: completes when every member has joined, or at the timeout."""
        group.join_is_initial = False
        group.join_timer = self._later(timeout_ms, lambda: self._complete_join(group))

    def _schedule_initial_join(self, group: GroupMetadata, configured: int, delay: int,
                               remaining: int) -> None:
        """``InitialDelayedJoin``: never completes early; extends while new members arrive."""
        group.join_is_initial = True

        def expire() -> None:
            if group.new_member_added and remaining != 0:
                group.new_member_added = False
                next_delay = min(configured, remaining)
                self._schedule_initial_join(group, configured, next_delay,
                                            max(remaining - delay, 0))
            else:
                self._complete_join(group)
        group.join_timer = self._later(delay, expire)

    def _check_join(self, group: GroupMetadata) -> None:
        """``checkAndComplete`` of the group's join operation (``tryCompleteJoin``)."""
        if (group.join_timer is not None and not group.join_is_initial
                and group.is_state(G.PREPARING_REBALANCE) and group.has_all_members_joined):
            self._complete_join(group)

    def _complete_join(self, group: GroupMetadata) -> None:
        """``onCompleteJoin``."""
        if group.join_timer is not None:
            group.join_timer.cancel()
            group.join_timer = None
        if not group.is_state(G.PREPARING_REBALANCE):
            return
        for member in [m for m in group.members.values()
                       if not m.is_awaiting_join and not m.is_static]:
            group.remove(member.member_id)
        if group.is_state(G.DEAD):
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            self.broker.warn(f"group {group.group_id} could not complete rebalance because no "
                             "members rejoined")
            self._schedule_join(group, group.rebalance_timeout_ms)
            return
        group.init_next_generation(self.broker.now_ms())
        if group.is_state(G.EMPTY):
            error = self._store_group(group, {})
            if error != ErrorCode.none:
                self.broker.warn(f"group {group.group_id}: failed to write empty metadata: "
                                 f"{error.name}")
            self.broker.log(f"group {group.group_id} generation {group.generation_id} is empty")
            return
        self.broker.log(f"group {group.group_id}: generation {group.generation_id} with "
                        f"{group.size} members, protocol {group.protocol_name}")
        for member in list(group.members.values()):
            group.maybe_invoke_join(member, self._join_result(group, member.member_id))
            self._schedule_heartbeat(group, member, member.session_timeout_ms)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        self._schedule_pending_sync(group)

    # -- SyncGroup --------------------------------------------------------------------------------

    async def handle_sync_group(self, group_id: str, generation_id: int, member_id: str,
                                protocol_type: str | None, protocol_name: str | None,
                                instance_id: str | None,
                                assignments: Mapping[str, bytes]) -> SyncResult:
        """``handleSyncGroup``/``doSyncGroup``: followers wait for the leader's assignment."""
        error = self._invalid_group_id(group_id, empty_ok=False)
        if error is not None:
            return SyncResult(error)
        group = self.groups.get(group_id)
        if group is None:
            return SyncResult(ErrorCode.unknown_member_id)
        if group.is_state(G.DEAD):
            return SyncResult(ErrorCode.coordinator_not_available)
        error = self._validate_current_member(group, member_id, instance_id)
        if error is None:
            if generation_id != group.generation_id:
                error = ErrorCode.illegal_generation
            elif ((protocol_type is not None and protocol_type != group.protocol_type)
                  or (protocol_name is not None and protocol_name != group.protocol_name)):
                error = ErrorCode.inconsistent_group_protocol
        if error is not None:
            return SyncResult(error)
        if group.is_state(G.EMPTY):
            return SyncResult(ErrorCode.unknown_member_id)
        if group.is_state(G.PREPARING_REBALANCE):
            return SyncResult(ErrorCode.rebalance_in_progress)
        member = group.members[member_id]
        if group.is_state(G.STABLE):
            self._remove_pending_sync_member(group, member_id)
            self._schedule_heartbeat(group, member, member.session_timeout_ms)
            return SyncResult(ErrorCode.none, group.protocol_type, group.protocol_name,
                              member.assignment)
        future: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
        member.awaiting_sync = future
        self._remove_pending_sync_member(group, member_id)
        if group.is_leader(member_id):
            assignment = {m: assignments.get(m, b"") for m in group.members}
            generation = group.generation_id
            error = self._store_group(group, assignment)
            if group.is_state(G.COMPLETING_REBALANCE) and generation == group.generation_id:
                if error != ErrorCode.none:
                    self._reset_and_propagate_assignment_error(group, error)
                    self._maybe_prepare_rebalance(group)
                else:
                    for m in group.members.values():
                        m.assignment = assignment[m.member_id]
                    self._propagate_assignment(group, ErrorCode.none)
                    group.transition_to(G.STABLE, self.broker.now_ms())
        return await future

    def _reset_and_propagate_assignment_error(self, group: GroupMetadata,
                                              error: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: GroupMetadata, error: ErrorCode) -> None:
        ok = error == ErrorCode.none
        for member in list(group.members.values()):
            result = SyncResult(error, group.protocol_type if ok else None,
                                group.protocol_name if ok else None, member.assignment)
            if group.maybe_invoke_sync(member, result):
                self._schedule_heartbeat(group, member, member.session_timeout_ms)

    def _schedule_pending_sync(self, group: GroupMetadata) -> None:
        """``DelayedSync``: members that never send SyncGroup are removed."""
        generation = group.generation_id

        def expire() -> None:
            group.sync_timer = None
            if (generation != group.generation_id
                    or group.state not in (G.COMPLETING_REBALANCE, G.STABLE)
                    or not group.pending_sync_members):
                return
            for member_id in list(group.pending_sync_members):
                group.remove(member_id)
            self._prepare_rebalance(group)
        group.sync_timer = self._later(group.rebalance_timeout_ms, expire)

    def _remove_pending_sync_member(self, group: GroupMetadata, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members and group.sync_timer is not None:
            group.sync_timer.cancel()
            group.sync_timer = None

    def _remove_sync_expiration(self, group: GroupMetadata) -> None:
        group.pending_sync_members.clear()
        if group.sync_timer is not None:
            group.sync_timer.cancel()
            group.sync_timer = None

    # -- heartbeats and leaving -------------------------------------------------------------

    def _schedule_heartbeat(self, group: GroupMetadata, member: MemberMetadata,
                            timeout_ms: int) -> None:
        """``completeAndScheduleNextExpiration``."""
        if member.heartbeat_timer is not None:
            member.heartbeat_timer.cancel()
        member.heartbeat_satisfied = False
        member_id = member.member_id

        def expire() -> None:
            current = group.members.get(member_id)
            if current is not member or group.is_state(G.DEAD):
                return
            member.heartbeat_timer = None
            if not member.has_satisfied_heartbeat:
                self.broker.log(f"group {group.group_id}: member {member_id} failed to "
                                "heartbeat in time; removed")
                self._remove_member_and_update_group(group, member)
        member.heartbeat_timer = self._later(timeout_ms, expire)

    def _schedule_pending_member_expiration(self, group: GroupMetadata, member_id: str,
                                            timeout_ms: int) -> None:
        def expire() -> None:
            if member_id in group.pending_members and not group.has(member_id):
                self._remove_pending_member(group, member_id)
        self._later(timeout_ms, expire)

    def _remove_member_and_update_group(self, group: GroupMetadata,
                                        member: MemberMetadata) -> None:
        """``removeMemberAndUpdateGroup``."""
        group.maybe_invoke_join(member, JoinResult(UNKNOWN_MEMBER_ID,
                                                   ErrorCode.unknown_member_id))
        group.remove(member.member_id)
        if group.state in (G.STABLE, G.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(group)
        elif group.is_state(G.PREPARING_REBALANCE):
            self._check_join(group)

    def _remove_pending_member(self, group: GroupMetadata, member_id: str) -> None:
        group.remove(member_id)
        if group.is_state(G.PREPARING_REBALANCE):
            self._check_join(group)

    def handle_heartbeat(self, group_id: str, member_id: str, instance_id: str | None,
                         generation_id: int) -> ErrorCode:
        """``handleHeartbeat``."""
        error = self._invalid_group_id(group_id, empty_ok=False)
        if error is not None:
            return error
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.unknown_member_id
        if group.is_state(G.DEAD):
            return ErrorCode.coordinator_not_available
        error = self._validate_current_member(group, member_id, instance_id)
        if error is not None:
            return error
        if generation_id != group.generation_id:
            return ErrorCode.illegal_generation
        if group.is_state(G.EMPTY):
            return ErrorCode.unknown_member_id
        member = group.members[member_id]
        self._schedule_heartbeat(group, member, member.session_timeout_ms)
        if group.is_state(G.PREPARING_REBALANCE):
            return ErrorCode.rebalance_in_progress
        return ErrorCode.none

    def handle_leave_group(self, group_id: str, leaving: list[tuple[str, str | None]]
                           ) -> tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]]:
        """``handleLeaveGroup``: (top-level error, per member errors)."""
        error = self._invalid_group_id(group_id, empty_ok=False)
        if error is not None:
            return error, []
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.none, [(m, i, ErrorCode.unknown_member_id) for m, i in leaving]
        if group.is_state(G.DEAD):
            return ErrorCode.coordinator_not_available, []
        out = []
        for member_id, instance_id in leaving:
            if member_id == UNKNOWN_MEMBER_ID:
                current = (group.static_members.get(instance_id)
                           if instance_id is not None else None)
                if current is None:
                    out.append((member_id, instance_id, ErrorCode.unknown_member_id))
                    continue
                member_id = current
            elif member_id in group.pending_members:
                self._remove_pending_member(group, member_id)
                out.append((member_id, instance_id, ErrorCode.none))
                continue
            else:
                error = self._validate_current_member(group, member_id, instance_id)
                if error is not None:
                    out.append((member_id, instance_id, error))
                    continue
            self.broker.log(f"group {group_id}: member {member_id} left")
            self._remove_member_and_update_group(group, group.members[member_id])
            out.append((member_id, instance_id, ErrorCode.none))
        return ErrorCode.none, out

    # -- storage --------------------------------------------------------------------------------

    def _store_group(self, group: GroupMetadata, assignment: Mapping[str, bytes]) -> ErrorCode:
        """``storeGroup``: the group's GroupMetadataValue in its partition."""
        now = self.broker.now_ms()
        try:
            append(self.broker.logs, GROUP_METADATA_TOPIC, self.partition_for(group.group_id),
                   build_batch([group_metadata_record(group, assignment)], now), now)
        except CoordinatorAppendError as exc:
            self.broker.warn(f"group {group.group_id}: storing metadata failed: {exc}")
            if exc.error == ErrorCode.request_timed_out:
                return ErrorCode.rebalance_in_progress
            converted = _append_error(exc.error)
            return (ErrorCode.unknown_server_error
                    if converted == ErrorCode.invalid_commit_offset_size else converted)
        return ErrorCode.none

    def _store_offsets(self, group: GroupMetadata, offsets: Mapping[TopicPartition,
                                                                    OffsetAndMetadata],
                       producer_id: int = -1, producer_epoch: int = -1
                       ) -> dict[TopicPartition, ErrorCode]:
        """``storeOffsets``: one batch of offset commits; transactional ones (with the
        producer's id and epoch, base sequence 0) stay pending until their marker."""
        too_large = {tp for tp, o in offsets.items()
                     if len(o.metadata.encode()) > OFFSET_METADATA_MAX_BYTES}
        valid = {tp: o for tp, o in offsets.items() if tp not in too_large}
        result = {tp: ErrorCode.offset_metadata_too_large for tp in too_large}
        if not valid:
            return result
        transactional = producer_id >= 0
        now = self.broker.now_ms()
        batch = build_batch(offset_commit_records(group.group_id, valid), now,
                            producer_id=producer_id, producer_epoch=producer_epoch,
                            base_sequence=0, transactional=transactional)
        try:
            appended = append(self.broker.logs, GROUP_METADATA_TOPIC,
                              self.partition_for(group.group_id), batch, now)
        except CoordinatorAppendError as exc:
            self.broker.warn(f"group {group.group_id}: offset commit failed: {exc}")
            result.update({tp: _append_error(exc.error) for tp in valid})
            return result
        committed = {tp: CommitRecord(appended.first_offset, o) for tp, o in valid.items()}
        if transactional:
            group.prepare_txn_offset_commit(producer_id, committed)
        else:
            group.offsets.update(committed)
        result.update({tp: ErrorCode.none for tp in valid})
        return result

    # -- offsets --------------------------------------------------------------------------------

    @staticmethod
    def _validate_offset_commit(group: GroupMetadata, generation_id: int, member_id: str,
                                instance_id: str | None, *,
                                transactional: bool) -> ErrorCode | None:
        """``validateOffsetCommit``."""
        if group.is_state(G.DEAD):
            return ErrorCode.coordinator_not_available
        if generation_id < 0 and group.is_state(G.EMPTY):
            return None
        if generation_id >= 0 or member_id != UNKNOWN_MEMBER_ID or instance_id is not None:
            error = GroupCoordinator._validate_current_member(group, member_id, instance_id)
            if error is not None:
                return error
            return (ErrorCode.illegal_generation if generation_id != group.generation_id
                    else None)
        if not transactional and not group.is_state(G.EMPTY):
            return ErrorCode.unknown_member_id
        return None

    def handle_commit_offsets(self, group_id: str, member_id: str, instance_id: str | None,
                              generation_id: int,
                              offsets: Mapping[TopicPartition, OffsetAndMetadata]
                              ) -> dict[TopicPartition, ErrorCode]:
        """``handleCommitOffsets`` / ``doCommitOffsets``."""
        error = self._invalid_group_id(group_id, empty_ok=True)
        group = self.groups.get(group_id) if error is None else None
        if error is None and group is None:
            if generation_id < 0:  # a group that does not use Kafka's group management
                group = self._get_or_create(group_id, True)
            else:
                error = ErrorCode.illegal_generation
        if error is None and group is not None:
            error = self._validate_offset_commit(group, generation_id, member_id, instance_id,
                                                 transactional=False)
            if error is None and group.is_state(G.COMPLETING_REBALANCE):
                error = ErrorCode.rebalance_in_progress
        if error is not None or group is None:
            return {tp: error or ErrorCode.unknown_server_error for tp in offsets}
        if group.state in (G.STABLE, G.PREPARING_REBALANCE):
            member = group.members[member_id]
            self._schedule_heartbeat(group, member, member.session_timeout_ms)
        return self._store_offsets(group, offsets)

    def handle_txn_commit_offsets(self, group_id: str, producer_id: int, producer_epoch: int,
                                  member_id: str, instance_id: str | None, generation_id: int,
                                  offsets: Mapping[TopicPartition, OffsetAndMetadata]
                                  ) -> dict[TopicPartition, ErrorCode]:
        """``handleTxnCommitOffsets`` / ``doTxnCommitOffsets``."""
        error = self._invalid_group_id(group_id, empty_ok=False)
        if error is not None:
            return dict.fromkeys(offsets, error)
        group = self._get_or_create(group_id, True)
        assert group is not None
        error = self._validate_offset_commit(group, generation_id, member_id, instance_id,
                                             transactional=True)
        if error is not None:
            return dict.fromkeys(offsets, error)
        return self._store_offsets(group, offsets, producer_id, producer_epoch)

    def on_transaction_completed(self, producer_id: int, partition: int, commit: bool) -> None:
        """``scheduleHandleTxnCompletion``: the marker is in ``__consumer_offsets-partition``."""
        for group in self.groups.values():
            if (producer_id in group.pending_txn_offsets
                    and self.partition_for(group.group_id) == partition):
                group.complete_pending_txn_offset_commit(producer_id, commit)

    def handle_fetch_offsets(self, group_id: str, require_stable: bool,
                             partitions: list[TopicPartition] | None
                             ) -> tuple[ErrorCode, dict[TopicPartition, tuple[int, int, str,
                                                                              ErrorCode]]]:
        """``handleFetchOffsets`` / ``getOffsets``: (offset, leader epoch, metadata, error)."""
        error = self._invalid_group_id(group_id, empty_ok=True)
        if error is not None:
            return error, {}
        missing = (INVALID_OFFSET, -1, "", ErrorCode.none)
        group = self.groups.get(group_id)
        if group is None or group.is_state(G.DEAD):
            return ErrorCode.none, dict.fromkeys(partitions or (), missing)
        out = {}
        for tp in partitions if partitions is not None else sorted(group.offsets):
            if require_stable and group.has_pending_offset_commits(tp):
                out[tp] = (INVALID_OFFSET, -1, "", ErrorCode.unstable_offset_commit)
                continue
            record = group.offsets.get(tp)
            out[tp] = missing if record is None else (
                record.value.offset, record.value.leader_epoch, record.value.metadata,
                ErrorCode.none)
        return ErrorCode.none, out

    # -- admin ----------------------------------------------------------------------------------

    def list_groups(self, states: set[str]) -> list[GroupMetadata]:
        wanted = {s.lower() for s in states}
        return [g for g in self.groups.values()
                if not wanted or g.state.value.lower() in wanted]

    def describe_group(self, group_id: str) -> tuple[ErrorCode, GroupMetadata | None]:
        error = self._invalid_group_id(group_id, empty_ok=True)
        if error is not None:
            return error, None
        return ErrorCode.none, self.groups.get(group_id)

    def handle_delete_groups(self, group_ids: list[str]) -> dict[str, ErrorCode]:
        """``handleDeleteGroups``: only an Empty group goes (Dead, its offsets and metadata
        tombstoned by ``cleanupGroupMetadata``); a group with members is NON_EMPTY_GROUP, an
        unknown or Dead one GROUP_ID_NOT_FOUND (this node coordinates every group)."""
        out: dict[str, ErrorCode] = {}
        for group_id in group_ids:
            error = self._invalid_group_id(group_id, empty_ok=True)
            group = self.groups.get(group_id) if error is None else None
            if error is not None:
                out[group_id] = error
            elif group is None or group.is_state(G.DEAD):
                out[group_id] = ErrorCode.group_id_not_found
            elif not group.is_state(G.EMPTY):
                out[group_id] = ErrorCode.non_empty_group
            else:
                group.transition_to(G.DEAD, self.broker.now_ms())
                self._cleanup_group_metadata(group)
                out[group_id] = ErrorCode.none
        return out

    def handle_delete_offsets(self, group_id: str, partitions: list[TopicPartition]
                              ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        """``handleDeleteOffsets``: (group error, partition errors; empty with a group error).
        An Empty group loses the offsets of every partition asked for; a "consumer" group with
        members keeps those of topics it is subscribed to (GROUP_SUBSCRIBED_TO_TOPIC) and loses
        the others; any other group with members is NON_EMPTY_GROUP; an unknown or Dead group
        GROUP_ID_NOT_FOUND. The removed offsets get tombstones (``cleanupGroupMetadata``)."""
        error = self._invalid_group_id(group_id, empty_ok=False)
        if error is not None:
            return error, {}
        group = self.groups.get(group_id)
        if group is None or group.is_state(G.DEAD):
            return ErrorCode.group_id_not_found, {}
        errors: dict[TopicPartition, ErrorCode] = {}
        if group.is_state(G.EMPTY):
            eligible = list(partitions)
        elif group.is_consumer_group:
            eligible = [tp for tp in partitions if not group.is_subscribed_to_topic(tp[0])]
            errors = {tp: ErrorCode.group_subscribed_to_topic for tp in partitions
                      if group.is_subscribed_to_topic(tp[0])}
        else:
            return ErrorCode.non_empty_group, {}
        if eligible:
            removed = self._cleanup_group_metadata(group, eligible)
            errors.update(dict.fromkeys(eligible, ErrorCode.none))
            self.broker.log(f"group {group_id}: offsets of {len(eligible)} partitions deleted "
                            f"({removed} offsets removed)")
        return ErrorCode.none, errors

    def _cleanup_group_metadata(self, group: GroupMetadata,
                                partitions: list[TopicPartition] | None = None) -> int:
        """``cleanupGroupMetadata`` with ``removeOffsets(partitions)`` (``removeAllOffsets`` for
        None): an Empty group left without offsets becomes Dead and leaves the cache; one batch of
        tombstones, the removed offsets' and, for a Dead group (unless it only stored offsets,
        generation 0), the group's; a failed append is only logged, as in Kafka. Returns how
        many offsets were removed."""
        removed = sorted(group.remove_offsets(partitions))
        if group.is_state(G.EMPTY) and not group.has_offsets:
            group.transition_to(G.DEAD, self.broker.now_ms())
        dead = group.is_state(G.DEAD)
        tombstones: list[KeyValue] = [
            (build_key(OffsetCommitKey(group=group.group_id, topic=t, partition=p)), None)
            for t, p in removed]
        if dead and self.groups.get(group.group_id) is group:
            del self.groups[group.group_id]
            if group.generation_id > 0:
                tombstones.append((build_key(GroupMetadataKey(group=group.group_id)), None))
        if not tombstones:
            return len(removed)
        now = self.broker.now_ms()
        try:
            append(self.broker.logs, GROUP_METADATA_TOPIC, self.partition_for(group.group_id),
                   build_batch(tombstones, now), now)
        except CoordinatorAppendError as exc:
            self.broker.warn(f"group {group.group_id}: writing tombstones failed: {exc}")
            return len(removed)
        if dead:
            self.broker.log(f"group {group.group_id} deleted ({len(removed)} offsets removed)")
        return len(removed)

    # -- loading --------------------------------------------------------------------------------

    def load(self, step: Callable[[], None] = lambda: None) -> None:
        """``doLoadGroupsAndOffsets`` for every ``__consumer_offsets`` partition on disk;
        members of a loaded group must heartbeat within their session timeout
        (``onGroupLoaded``). ``step`` runs before each partition (it may stop the load)."""
        topic = self.broker.logs.topics.get(GROUP_METADATA_TOPIC)
        if topic is None:
            return
        for _, log in sorted(topic.logs.items()):
            step()
            self._load_log(log)

    def _load_log(self, log: PartitionLog) -> None:
        def warn(message: str, where: str = log.name) -> None:
            self.broker.warn(f"{where}: {message}")
        for group in load_groups(log.iter_key_values(self.broker.warn), self.broker.now_ms(),
                                 warn):
            self.groups[group.group_id] = group
            for member in group.members.values():
                self._schedule_heartbeat(group, member, member.session_timeout_ms)

    def load_partition(self, partition: int) -> None:
        """``GroupCoordinator#onElection`` (``--brokers N``): the groups of a
        ``__consumer_offsets`` partition this broker now leads."""
        log = self.broker.logs.get(GROUP_METADATA_TOPIC, partition)
        self.owned.add(partition)
        if log is not None:
            self._load_log(log)

    def unload_partition(self, partition: int) -> None:
        """``GroupCoordinator#onResignation``: its groups leave this broker (their members
        find the new coordinator on their next request, NOT_COORDINATOR here)."""
        self.owned.discard(partition)
        for group_id in [g for g in self.groups if self.partition_for(g) == partition]:
            group = self.groups.pop(group_id)
            for timer in (group.join_timer, group.sync_timer,
                          *(m.heartbeat_timer for m in group.members.values())):
                if timer is not None:
                    timer.cancel()

    def owns(self, group_id: str) -> bool:
        return self.broker.cluster is None or self.partition_for(group_id) in self.owned
