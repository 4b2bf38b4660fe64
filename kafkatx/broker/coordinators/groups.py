"""A classic consumer group's state: members, generation, protocol, committed offsets.

Mirrors Kafka's classic-group model (``GroupMetadata``, ``MemberMetadata``, ``GroupState`` and
its valid previous states, ``CommitRecordMetadataAndOffset``, ``OffsetAndMetadata``). Where Kafka
keeps a callback per member awaiting a JoinGroup or SyncGroup answer, a member here keeps an
``asyncio.Future`` the request handler awaits; timers (``asyncio.TimerHandle``) stand in for the
heartbeat, join and sync purgatories.
"""

from __future__ import annotations

import asyncio
import enum
import uuid
from collections import Counter
from dataclasses import field

from kio.schema.errors import ErrorCode

from kafkatx.errors import FormatError
from kafkatx.formats.consumer_protocol import subscription_topics
from kafkatx.lazy_dataclass import dataclass
from kafkatx.semantics.group_offsets import CommitRecord, OffsetAndMetadata

__all__ = ["CommitRecord", "OffsetAndMetadata"]  # re-exported: the load rules live in semantics

UNKNOWN_MEMBER_ID = ""  # JoinGroupRequest.UNKNOWN_MEMBER_ID
NO_GENERATION = -1
TopicPartition = tuple[str, int]
CONSUMER_PROTOCOL_TYPE = "consumer"  # ConsumerProtocol.PROTOCOL_TYPE
# The group coordinator's settings (KafkaConfig defaults) and offsets.
NUM_PARTITIONS = 50  # offsets.topic.num.partitions
MAX_SESSION_TIMEOUT_MS = 1_800_000  # group.max.session.timeout.ms
MAX_GROUP_SIZE = 2**31 - 1  # group.max.size
DEFAULT_INITIAL_REBALANCE_DELAY_MS = 3_000  # group.initial.rebalance.delay.ms
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000  # GroupCoordinator.NewMemberJoinTimeoutMs
OFFSET_METADATA_MAX_BYTES = 4096  # offset.metadata.max.bytes
INVALID_OFFSET = -1



class GroupState(enum.Enum):
    """``GroupState`` with the names DescribeGroups/ListGroups report."""

    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"
    EMPTY = "Empty"


G = GroupState
VALID_PREVIOUS_STATES: dict[GroupState, frozenset[GroupState]] = {
    G.PREPARING_REBALANCE: frozenset({G.STABLE, G.COMPLETING_REBALANCE, G.EMPTY}),
    G.COMPLETING_REBALANCE: frozenset({G.PREPARING_REBALANCE}),
    G.STABLE: frozenset({G.COMPLETING_REBALANCE}),
    G.DEAD: frozenset({G.STABLE, G.PREPARING_REBALANCE, G.COMPLETING_REBALANCE, G.EMPTY,
                       G.DEAD}),
    G.EMPTY: frozenset({G.PREPARING_REBALANCE}),
}


@dataclass(frozen=True, slots=True)
class JoinResult:
    """``JoinGroupResult``; ``members`` (member id, group instance id, metadata) for the
    leader only."""

    member_id: str
    error: ErrorCode
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    members: tuple[tuple[str, str | None, bytes], ...] = ()
    skip_assignment: bool = False


@dataclass(frozen=True, slots=True)
class SyncResult:
    """``SyncGroupResult``."""

    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(eq=False)
class MemberMetadata:
    """``MemberMetadata``."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    awaiting_join: asyncio.Future[JoinResult] | None = None
    awaiting_sync: asyncio.Future[SyncResult] | None = None
    is_new: bool = False
    heartbeat_satisfied: bool = False
    heartbeat_timer: asyncio.TimerHandle | None = None

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_awaiting_join(self) -> bool:
        return self.awaiting_join is not None

    @property
    def is_awaiting_sync(self) -> bool:
        return self.awaiting_sync is not None

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        raise ValueError("Member does not support protocol")

    @property
    def has_satisfied_heartbeat(self) -> bool:
        """``hasSatisfiedHeartbeat``: members awaiting a rebalance answer need no heartbeat."""
        if self.is_new:
            return self.heartbeat_satisfied
        if self.is_awaiting_join or self.is_awaiting_sync:
            return True
        return self.heartbeat_satisfied

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return protocols == self.protocols

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError("Member does not support any of the candidate protocols")


@dataclass(eq=False)
class GroupMetadata:
    """``GroupMetadata``: one classic group and its offsets."""

    group_id: str
    state: GroupState
    state_timestamp_ms: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation_id: int = 0
    leader_id: str | None = None
    members: dict[str, MemberMetadata] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    pending_members: set[str] = field(default_factory=set)
    pending_sync_members: set[str] = field(default_factory=set)
    num_awaiting_join: int = 0
    supported_protocols: Counter[str] = field(default_factory=Counter)
    offsets: dict[TopicPartition, CommitRecord] = field(default_factory=dict)
    pending_txn_offsets: dict[int, dict[TopicPartition, CommitRecord]] = field(
        default_factory=dict)
    # GroupMetadata#subscribedTopics: set at each generation (None: not known, or not "consumer")
    subscribed_topics: frozenset[str] | None = None
    new_member_added: bool = False
    join_timer: asyncio.TimerHandle | None = None
    join_is_initial: bool = False
    sync_timer: asyncio.TimerHandle | None = None

    # -- membership -------------------------------------------------------------------------

    def is_state(self, state: GroupState) -> bool:
        return self.state is state

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    @property
    def size(self) -> int:
        return len(self.members)

    def add(self, member: MemberMetadata,
            callback: asyncio.Future[JoinResult] | None = None) -> None:
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.supported_protocols.update(name for name, _ in member.protocols)
        member.awaiting_join = callback
        if member.is_awaiting_join:
            self.num_awaiting_join += 1
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self.supported_protocols.subtract(name for name, _ in member.protocols)
            if member.is_awaiting_join:
                self.num_awaiting_join -= 1
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
            if member.heartbeat_timer is not None:
                member.heartbeat_timer.cancel()
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        self.pending_members.discard(member_id)
        self.pending_sync_members.discard(member_id)

    def update_member(self, member: MemberMetadata, protocols: list[tuple[str, bytes]],
                      rebalance_timeout_ms: int, session_timeout_ms: int,
                      callback: asyncio.Future[JoinResult] | None) -> None:
        self.supported_protocols.subtract(name for name, _ in member.protocols)
        member.protocols = protocols
        self.supported_protocols.update(name for name, _ in protocols)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if callback is not None and not member.is_awaiting_join:
            self.num_awaiting_join += 1
        elif callback is None and member.is_awaiting_join:
            self.num_awaiting_join -= 1
        member.awaiting_join = callback

    def replace_static_member(self, group_instance_id: str, old_member_id: str,
                              new_member_id: str) -> MemberMetadata:
        member = self.members.pop(old_member_id)
        self.maybe_invoke_join(member, JoinResult(old_member_id, ErrorCode.fenced_instance_id))
        self.maybe_invoke_sync(member, SyncResult(ErrorCode.fenced_instance_id))
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if self.is_leader(old_member_id):
            self.leader_id = new_member_id
        self.static_members[group_instance_id] = new_member_id
        return member

    def maybe_elect_new_joined_leader(self) -> bool:
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].is_awaiting_join:
            return True
        for member_id, member in self.members.items():
            if member.is_awaiting_join:
                self.leader_id = member_id
                return True
        return False

    @property
    def has_all_members_joined(self) -> bool:
        return len(self.members) == self.num_awaiting_join and not self.pending_members

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def generate_member_id(self, client_id: str, group_instance_id: str | None) -> str:
        return f"{group_instance_id if group_instance_id is not None else client_id}-" \
               f"{uuid.uuid4()}"

    @property
    def can_rebalance(self) -> bool:
        return self.state in VALID_PREVIOUS_STATES[G.PREPARING_REBALANCE]

    def transition_to(self, state: GroupState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS_STATES[state]:
            raise RuntimeError(f"Group {self.group_id} should be in the "
                               f"{sorted(s.value for s in VALID_PREVIOUS_STATES[state])} states "
                               f"before moving to {state.value} state. Instead it is in "
                               f"{self.state.value} state")
        self.state = state
        self.state_timestamp_ms = now_ms

    def candidate_protocols(self) -> set[str]:
        n = len(self.members)
        return {name for name, count in self.supported_protocols.items() if count == n}

    def select_protocol(self) -> str:
        """``selectProtocol``: every member votes for its first candidate; most votes win."""
        candidates = self.candidate_protocols()
        votes = Counter(m.vote(candidates) for m in self.members.values())
        return max(votes.items(), key=lambda kv: kv[1])[0]

    def supports_protocols(self, protocol_type: str, protocols: set[str]) -> bool:
        if self.is_state(G.EMPTY):
            return bool(protocol_type) and bool(protocols)
        return (self.protocol_type == protocol_type
                and any(self.supported_protocols[p] == len(self.members) for p in protocols))

    def maybe_invoke_join(self, member: MemberMetadata, result: JoinResult) -> None:
        if member.awaiting_join is not None:
            if not member.awaiting_join.done():
                member.awaiting_join.set_result(result)
            member.awaiting_join = None
            self.num_awaiting_join -= 1

    def maybe_invoke_sync(self, member: MemberMetadata, result: SyncResult) -> bool:
        if member.awaiting_sync is None:
            return False
        if not member.awaiting_sync.done():
            member.awaiting_sync.set_result(result)
        member.awaiting_sync = None
        return True

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(G.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics()
            self.transition_to(G.EMPTY, now_ms)
        self.pending_sync_members.clear()

    @property
    def is_consumer_group(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL_TYPE

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        """``computeSubscribedTopics``: the union of the members' subscriptions (read with the
        v0 prefix every version shares) for a "consumer" group with a protocol, the empty set
        for one without members, None when it is not known (another protocol type, metadata
        that does not parse)."""
        if not self.is_consumer_group:
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        try:
            return frozenset(topic for m in self.members.values()
                             for topic in subscription_topics(m.metadata(self.protocol_name)))
        except FormatError:
            return None

    def is_subscribed_to_topic(self, topic: str) -> bool:
        """``isSubscribedToTopic``: when the subscriptions are not known, assume it is."""
        return self.subscribed_topics is None or topic in self.subscribed_topics

    def current_member_metadata(self) -> tuple[tuple[str, str | None, bytes], ...]:
        assert self.protocol_name is not None
        return tuple((m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
                     for m in self.members.values())

    # -- offsets --------------------------------------------------------------------------------

    @property
    def has_offsets(self) -> bool:
        """``hasOffsets``: committed or pending (only transactional commits are ever pending)."""
        return bool(self.offsets) or any(self.pending_txn_offsets.values())

    def remove_offsets(self, partitions: list[TopicPartition] | None = None
                       ) -> list[TopicPartition]:
        """``removeOffsets`` (``removeAllOffsets`` for None): pending transactional commits of
        those partitions are dropped too; returns the partitions that had a committed offset."""
        wanted = list(self.offsets) if partitions is None else partitions
        removed = []
        for tp in wanted:
            for pending in self.pending_txn_offsets.values():
                pending.pop(tp, None)
            if self.offsets.pop(tp, None) is not None:
                removed.append(tp)
        return removed

    def has_pending_offset_commits(self, tp: TopicPartition) -> bool:
        """``hasPendingOffsetCommitsForTopicPartition`` (commits are written synchronously, so
        only transactional ones are ever pending)."""
        return any(tp in pending for pending in self.pending_txn_offsets.values())

    def prepare_txn_offset_commit(self, producer_id: int,
                                  offsets: dict[TopicPartition, CommitRecord]) -> None:
        self.pending_txn_offsets.setdefault(producer_id, {}).update(offsets)

    def complete_pending_txn_offset_commit(self, producer_id: int, is_commit: bool) -> None:
        """``completePendingTxnOffsetCommit``: the marker was written."""
        pending = self.pending_txn_offsets.pop(producer_id, None)
        if not is_commit or pending is None:
            return
        for tp, record in pending.items():
            current = self.offsets.get(tp)
            if current is None or current.older_than(record):
                self.offsets[tp] = record
