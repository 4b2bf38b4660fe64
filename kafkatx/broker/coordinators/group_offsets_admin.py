"""A consumer group's offsets and the admin APIs: OffsetCommit, TxnOffsetCommit, OffsetFetch,
ListGroups, DescribeGroups, DeleteGroups, OffsetDelete (Kafka's
``GroupCoordinator#handleCommitOffsets``, ``handleTxnCommitOffsets``, ``handleFetchOffsets``,
``handleDeleteGroups``, ``handleDeleteOffsets``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from kio.schema.errors import ErrorCode

from kafkatx.broker.coordinators.coordinator_log import (
    CoordinatorAppendError,
    KeyValue,
    append,
    build_batch,
)
from kafkatx.broker.coordinators.group_membership import GroupMembership
from kafkatx.broker.coordinators.groups import (
    INVALID_OFFSET,
    UNKNOWN_MEMBER_ID,
    GroupMetadata,
    GroupState,
    OffsetAndMetadata,
    TopicPartition,
)
from kafkatx.formats.consumer_offsets import GroupMetadataKey, OffsetCommitKey, build_key
from kafkatx.formats.internal_topics import GROUP_METADATA_TOPIC

if TYPE_CHECKING:
    pass

G = GroupState


class GroupOffsetsAndAdmin:
    """A part of :class:`~kafkatx.broker.coordinators.group_coordinator.GroupCoordinator`."""

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
            error = GroupMembership._validate_current_member(group, member_id, instance_id)
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
