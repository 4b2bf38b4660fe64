"""A consumer group's members: JoinGroup, SyncGroup, heartbeats and leaving, the rebalance and
its timers (Kafka's ``GroupCoordinator#handleJoinGroup``, ``handleSyncGroup``,
``handleHeartbeat``, ``handleLeaveGroup``, ``DelayedJoin``, ``DelayedHeartbeat``)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from kafkatx.broker.coordinators.groups import (
    MAX_GROUP_SIZE,
    MAX_SESSION_TIMEOUT_MS,
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    UNKNOWN_MEMBER_ID,
    GroupMetadata,
    GroupState,
    JoinResult,
    MemberMetadata,
    SyncResult,
)

if TYPE_CHECKING:
    pass

G = GroupState


class GroupMembership:
    """A part of :class:`~kafkatx.broker.coordinators.group_coordinator.GroupCoordinator`."""

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
