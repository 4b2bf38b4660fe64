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
    append,
    build_batch,
)
from kafkatx.broker.coordinators.group_log import (
    group_metadata_record,
    load_groups,
    offset_commit_error,
    offset_commit_records,
)
from kafkatx.broker.coordinators.group_membership import GroupMembership
from kafkatx.broker.coordinators.group_offsets_admin import GroupOffsetsAndAdmin
from kafkatx.broker.coordinators.groups import (
    DEFAULT_INITIAL_REBALANCE_DELAY_MS,
    NUM_PARTITIONS,
    OFFSET_METADATA_MAX_BYTES,
    CommitRecord,
    GroupMetadata,
    GroupState,
    OffsetAndMetadata,
    TopicPartition,
)
from kafkatx.broker.logs.partition_log import PartitionLog
from kafkatx.formats.internal_topics import GROUP_METADATA_TOPIC
from kafkatx.semantics.coordinator_partition import partition_for

if TYPE_CHECKING:
    from kafkatx.broker.context import BrokerContext

G = GroupState


class GroupCoordinator(GroupMembership, GroupOffsetsAndAdmin):
    """Every classic group of this node (it leads all 50 ``__consumer_offsets`` partitions)."""

    def __init__(self, broker: BrokerContext, *,
                 initial_rebalance_delay_ms: int = DEFAULT_INITIAL_REBALANCE_DELAY_MS) -> None:
        self.broker = broker
        self.groups: dict[str, GroupMetadata] = {}
        self.owned: set[int] = set()  # --brokers N: the __consumer_offsets partitions led here
        self.initial_rebalance_delay_ms = initial_rebalance_delay_ms
        self._closed = False
        # --brokers N: the offset commits each request task made, undone if the ISR does not
        # take them (GroupMetadataManager#storeOffsets applies a commit only once replicated).
        self._unreplicated: dict[asyncio.Task[object], list[Callable[[], None]]] = {}

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
            converted = offset_commit_error(exc.error)
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
            result.update({tp: offset_commit_error(exc.error) for tp in valid})
            return result
        committed = {tp: CommitRecord(appended.first_offset, o) for tp, o in valid.items()}
        target = (group.pending_txn_offsets.setdefault(producer_id, {}) if transactional
                  else group.offsets)
        self._until_replicated(target, committed)
        if transactional:
            group.prepare_txn_offset_commit(producer_id, committed)
        else:
            group.offsets.update(committed)
        result.update({tp: ErrorCode.none for tp in valid})
        return result

    def _until_replicated(self, target: dict[TopicPartition, CommitRecord],
                          committed: Mapping[TopicPartition, CommitRecord]) -> None:
        """With ``--brokers N``, remember how to take ``committed`` back out of ``target``
        (the group's offsets or a producer's pending ones) should the ISR not take the write:
        ``storeOffsets``' callback then ``failPendingOffsetWrite`` /
        ``failPendingTxnOffsetCommit``, so an offset the ISR lacks is never served."""
        if self.broker.cluster is None:
            return
        try:
            task = asyncio.current_task()
        except RuntimeError:
            return
        if task is None:
            return
        before = {tp: target.get(tp) for tp in committed}

        def undo() -> None:
            for tp, record in committed.items():
                if target.get(tp) is record:
                    previous = before[tp]
                    if previous is None:
                        del target[tp]
                    else:
                        target[tp] = previous

        self._unreplicated.setdefault(task, []).append(undo)

    def settle_writes(self, replicated: bool) -> None:
        """The current request's writes are in the ISR, or not (then undone)."""
        task = asyncio.current_task()
        undos = self._unreplicated.pop(task, []) if task is not None else []
        if not replicated:
            for undo in reversed(undos):
                undo()

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
