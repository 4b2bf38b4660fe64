"""What the group coordinator writes to ``__consumer_offsets`` and reads back when it loads.

Mirrors ``GroupMetadataManager``: ``groupMetadataValue`` (GroupMetadataValue v3, the highest
non-flexible version), ``offsetCommitValue`` (OffsetCommitValue v3, or v1 when the commit has an
expire timestamp), ``generateOffsetRecords`` (one batch; transactional commits carry the
producer's id and epoch and base sequence 0), ``doLoadGroupsAndOffsets`` (its rules live in
:class:`kafkatx.semantics.group_offsets.GroupOffsetsLoad`, shared with ``kafkatx groups``) and
``readGroupMessageValue`` / ``loadGroup`` (members present: Stable, else Empty).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from kio.schema.errors import ErrorCode

from kafkatx.broker.coordinators.coordinator_log import KeyValue
from kafkatx.broker.coordinators.groups import (
    GroupMetadata,
    GroupState,
    MemberMetadata,
    OffsetAndMetadata,
    TopicPartition,
)
from kafkatx.broker.logs.log_values import StoredBatch
from kafkatx.errors import FormatError
from kafkatx.formats.consumer_offsets import (
    GroupMember,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    build_key,
    build_value,
)
from kafkatx.formats.record_batch import ControlType
from kafkatx.semantics.group_offsets import GroupOffsetsLoad

OFFSET_VALUE_VERSION = 3
GROUP_VALUE_VERSION = 3


def group_metadata_record(group: GroupMetadata, assignment: Mapping[str, bytes]) -> KeyValue:
    """``groupMetadataKey`` + ``groupMetadataValue`` of the group as it is now."""
    protocol = group.protocol_name
    members = tuple(
        GroupMember(member_id=m.member_id, group_instance_id=m.group_instance_id,
                    client_id=m.client_id, client_host=m.client_host,
                    rebalance_timeout_ms=m.rebalance_timeout_ms,
                    session_timeout_ms=m.session_timeout_ms,
                    subscription=m.metadata(protocol) if protocol else b"",
                    assignment=assignment.get(m.member_id, b""))
        for m in group.members.values())
    value = GroupMetadataValue(version=GROUP_VALUE_VERSION,
                               protocol_type=group.protocol_type or "",
                               generation=group.generation_id, protocol=protocol,
                               leader=group.leader_id, members=members,
                               current_state_timestamp_ms=group.state_timestamp_ms)
    return build_key(GroupMetadataKey(group=group.group_id)), build_value(value)


def offset_commit_records(group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata]
                          ) -> list[KeyValue]:
    """``offsetCommitKey`` + ``offsetCommitValue`` of each committed partition."""
    records = []
    for (topic, partition), o in offsets.items():
        version = 1 if o.expire_timestamp_ms >= 0 else OFFSET_VALUE_VERSION
        value = OffsetCommitValue(version=version, offset=o.offset, metadata=o.metadata,
                                  commit_timestamp_ms=o.commit_timestamp_ms,
                                  leader_epoch=o.leader_epoch if version >= 3 else -1,
                                  expire_timestamp_ms=o.expire_timestamp_ms)
        records.append((build_key(OffsetCommitKey(group=group_id, topic=topic,
                                                  partition=partition)), build_value(value)))
    return records


LoadedBatch = tuple[StoredBatch, list[tuple[int, bytes | None, bytes | None]]]


def load_groups(batches: Iterable[LoadedBatch], now_ms: int,
                warn: Callable[[str], None]) -> list[GroupMetadata]:
    """The groups of one ``__consumer_offsets`` partition with their offsets and the pending
    transactional commits of producers whose marker is not there yet. ``batches``: each stored
    batch with its records' (offset, key, value) (``PartitionLog#iter_key_values``)."""
    loaded = GroupOffsetsLoad()
    for batch, records in batches:
        h = batch.header
        if h.is_control:
            key = records[0][1] if records else None
            if key is not None and len(key) >= 4:  # ControlRecordType key: version, type
                loaded.marker(h.producer_id,
                              int.from_bytes(key[2:4], "big", signed=True) == ControlType.COMMIT)
            continue
        for offset, key, value in records:
            try:
                loaded.record(h.base_offset, h.producer_id, h.is_transactional, key, value)
            except FormatError as exc:
                warn(f"offset {offset}: {exc}; ignored")
    out = []
    for name in sorted(loaded.group_names()):
        group = _group(name, loaded.groups.get(name), now_ms)
        group.offsets = {(t, p): r for (g, t, p), r in loaded.offsets.items() if g == name}
        for pid, offsets in loaded.pending.items():
            mine = {(t, p): r for (g, t, p), r in offsets.items() if g == name}
            if mine:
                group.pending_txn_offsets[pid] = mine
        out.append(group)
    return out


def _group(name: str, value: GroupMetadataValue | None, now_ms: int) -> GroupMetadata:
    if value is None:
        return GroupMetadata(name, GroupState.EMPTY, now_ms)
    state = GroupState.STABLE if value.members else GroupState.EMPTY
    group = GroupMetadata(name, state, value.current_state_timestamp_ms
                          if value.current_state_timestamp_ms >= 0 else now_ms,
                          protocol_type=value.protocol_type or None,
                          protocol_name=value.protocol, generation_id=value.generation)
    for m in value.members:
        group.add(MemberMetadata(
            m.member_id, m.group_instance_id, m.client_id, m.client_host,
            value.effective_rebalance_timeout_ms(m), m.session_timeout_ms, value.protocol_type,
            [(value.protocol or "", m.subscription)], m.assignment))
    group.leader_id = value.leader
    group.subscribed_topics = group.compute_subscribed_topics()
    return group


def offset_commit_error(error: ErrorCode) -> ErrorCode:
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
