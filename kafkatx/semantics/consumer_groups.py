"""KIP-848 consumer groups (``group.protocol=consumer``) as the group coordinator loads them from
``__consumer_offsets``.

Mirrors ``GroupMetadataManager#replay`` for the ``ConsumerGroup*`` records (Kafka 4.0 to 4.4)
and ``ConsumerGroup#maybeUpdateGroupState``: ``ConsumerGroupMetadata`` sets the group epoch (its
tombstone deletes the group), ``ConsumerGroupMemberMetadata`` adds or updates a member (its
tombstone removes it), ``ConsumerGroupTargetAssignmentMetadata`` sets the assignment epoch,
``ConsumerGroupCurrentMemberAssignment`` a member's epoch, state and partitions (its tombstone
resets them). The state is ``Empty`` without members, ``Assigning`` while the group epoch is
ahead of the assignment epoch, ``Reconciling`` while a member is not ``STABLE`` at the
assignment epoch, else ``Stable``. The preferred server assignor is the one most members name
(``ConsumerGroup#preferredServerAssignor``); none named: the broker's default, unknown here.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import field
from typing import Any

from kafkatx.lazy_dataclass import dataclass

CONSUMER_GROUP_METADATA = 3
MEMBER_METADATA = 5
TARGET_ASSIGNMENT_METADATA = 6
CURRENT_MEMBER_ASSIGNMENT = 8
RECORD_TYPES = (3, 4, 5, 6, 7, 8, 16)  # every ConsumerGroup* record type
MEMBER_STABLE = 0  # MemberState.STABLE
INITIAL_ASSIGNMENT_EPOCH = 1  # TargetAssignmentMetadata.INITIAL (Kafka 4.4)


@dataclass
class ConsumerGroupMember:
    """A member of a consumer (KIP-848) group."""

    member_id: str
    client_id: str = ""
    client_host: str = ""
    instance_id: str | None = None
    subscribed_topic_names: list[str] = field(default_factory=list)
    server_assignor: str | None = None
    member_epoch: int = 0
    state: int = MEMBER_STABLE
    assigned_partitions: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class ConsumerGroup:
    """A consumer (KIP-848) group: its epochs and members."""

    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = INITIAL_ASSIGNMENT_EPOCH
    members: dict[str, ConsumerGroupMember] = field(default_factory=dict)

    @property
    def state(self) -> str:
        """``ConsumerGroup#maybeUpdateGroupState``, in Kafka's names."""
        if not self.members:
            return "Empty"
        if self.group_epoch > self.assignment_epoch:
            return "Assigning"
        if any(m.state != MEMBER_STABLE or m.member_epoch != self.assignment_epoch
               for m in self.members.values()):
            return "Reconciling"
        return "Stable"

    @property
    def preferred_server_assignor(self) -> str | None:
        named = Counter(m.server_assignor for m in self.members.values() if m.server_assignor)
        return named.most_common(1)[0][0] if named else None


@dataclass
class ConsumerGroups:
    """Every consumer group of one ``__consumer_offsets`` partition, replayed record by record."""

    groups: dict[str, ConsumerGroup] = field(default_factory=dict)

    def replay(self, record_type: int, group_id: str, member_id: str | None,
               value: dict[str, Any] | None) -> None:
        """One ``ConsumerGroup*`` record (``value`` None: a tombstone)."""
        group = self.groups.get(group_id)
        if value is None:
            if group is not None:
                self._tombstone(group, record_type, member_id)
            return
        group = self.groups.setdefault(group_id, ConsumerGroup(group_id))
        if record_type == CONSUMER_GROUP_METADATA:
            group.group_epoch = value["epoch"]
        elif record_type == TARGET_ASSIGNMENT_METADATA:
            group.assignment_epoch = value["assignment_epoch"]
        elif record_type == MEMBER_METADATA and member_id is not None:
            member = group.members.setdefault(member_id, ConsumerGroupMember(member_id))
            member.client_id = value["client_id"]
            member.client_host = value["client_host"]
            member.instance_id = value["instance_id"]
            member.subscribed_topic_names = list(value["subscribed_topic_names"])
            member.server_assignor = value["server_assignor"]
        elif record_type == CURRENT_MEMBER_ASSIGNMENT and member_id is not None:
            member = group.members.setdefault(member_id, ConsumerGroupMember(member_id))
            member.member_epoch = value["member_epoch"]
            member.state = value["state"]
            member.assigned_partitions = list(value["assigned_partitions"])

    def _tombstone(self, group: ConsumerGroup, record_type: int, member_id: str | None) -> None:
        if record_type == CONSUMER_GROUP_METADATA:
            del self.groups[group.group_id]
        elif record_type == TARGET_ASSIGNMENT_METADATA:
            group.assignment_epoch = -1
        elif record_type == MEMBER_METADATA and member_id is not None:
            group.members.pop(member_id, None)
        elif record_type == CURRENT_MEMBER_ASSIGNMENT and member_id in group.members:
            member = group.members[member_id]
            member.member_epoch, member.assigned_partitions = -1, []
