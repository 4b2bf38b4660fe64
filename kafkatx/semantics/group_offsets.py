"""Committed offsets as the group coordinator loads them from ``__consumer_offsets``.

Mirrors ``GroupMetadataManager#doLoadGroupsAndOffsets`` (the classic coordinator; the new
``GroupCoordinatorShard``/``OffsetMetadataManager#replay`` keeps the same rules): the last value
per key wins and a tombstone removes; a transactional offset commit stays *pending* per producer
until that producer's COMMIT marker materialises it (unless a newer commit is already there,
``CommitRecordMetadataAndOffset#olderThan``) or its ABORT marker discards it. The broker's group
coordinator and the forensic ``kafkatx groups`` both load through this one class. KIP-848
consumer groups' records go to :class:`kafkatx.semantics.consumer_groups.ConsumerGroups`.
"""

from __future__ import annotations

from dataclasses import field

from kafkatx.formats.consumer_offsets import (
    GroupMetadataKey,
    GroupMetadataValue,
    GroupRecordKey,
    GroupTypeKey,
    OffsetCommitKey,
    OffsetCommitValue,
    parse_key,
    parse_value,
)
from kafkatx.lazy_dataclass import dataclass
from kafkatx.semantics.consumer_groups import RECORD_TYPES, ConsumerGroups

GroupTopicPartition = tuple[str, str, int]


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """``OffsetAndMetadata``: what a commit stores (-1 for an absent leader epoch/expiry)."""

    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int = -1


@dataclass(frozen=True, slots=True)
class CommitRecord:
    """``CommitRecordMetadataAndOffset``: a commit and the offset of its batch in the log."""

    log_offset: int | None
    value: OffsetAndMetadata

    def older_than(self, other: CommitRecord) -> bool:
        return (self.log_offset or 0) < (other.log_offset or 0)


@dataclass
class GroupOffsetsLoad:
    """The state of one ``__consumer_offsets`` partition being loaded, record by record.

    ``pending`` holds, per producer id, the transactional commits whose marker has not been read
    (at the end of a load: commits of transactions still open, or whose marker is missing).
    """

    offsets: dict[GroupTopicPartition, CommitRecord] = field(default_factory=dict)
    pending: dict[int, dict[GroupTopicPartition, CommitRecord]] = field(default_factory=dict)
    groups: dict[str, GroupMetadataValue] = field(default_factory=dict)
    consumer_groups: ConsumerGroups = field(default_factory=ConsumerGroups)  # KIP-848 groups

    def marker(self, producer_id: int, commit: bool) -> None:
        """A COMMIT (``commit``) or ABORT marker of ``producer_id``."""
        if commit:
            for gtp, record in self.pending.get(producer_id, {}).items():
                current = self.offsets.get(gtp)
                if current is None or current.older_than(record):
                    self.offsets[gtp] = record
        self.pending.pop(producer_id, None)

    def record(self, batch_offset: int, producer_id: int, transactional: bool,
               key_bytes: bytes | None, value_bytes: bytes | None) -> GroupRecordKey:
        """One record of a data batch (base offset ``batch_offset``); raises ``FormatError``.
        Returns the key: one of a type loaded here, or another (skipped, as the loader does)."""
        key = parse_key(key_bytes or b"")
        value = parse_value(key, value_bytes)
        if isinstance(key, OffsetCommitKey):
            gtp = (key.group, key.topic, key.partition)
            target = self.pending.setdefault(producer_id, {}) if transactional else self.offsets
            if isinstance(value, OffsetCommitValue):
                target[gtp] = CommitRecord(batch_offset, OffsetAndMetadata(
                    value.offset, value.leader_epoch, value.metadata, value.commit_timestamp_ms,
                    value.expire_timestamp_ms))
            else:
                target.pop(gtp, None)
        elif isinstance(key, GroupMetadataKey):
            if isinstance(value, GroupMetadataValue):
                self.groups[key.group] = value
            else:
                self.groups.pop(key.group, None)
        elif isinstance(key, GroupTypeKey) and key.record_type in RECORD_TYPES:
            self.consumer_groups.replay(key.record_type, key.group, key.member_id,
                                        None if value is None else value.data)
        return key

    def group_names(self) -> set[str]:
        return set(self.groups) | set(self.consumer_groups.groups) | {
            g for g, _, _ in self.offsets} | {
            g for offsets in self.pending.values() for g, _, _ in offsets}
