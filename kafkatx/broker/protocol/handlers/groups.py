"""Classic consumer groups: JoinGroup (11), Heartbeat (12), LeaveGroup (13), SyncGroup (14),
DescribeGroups (15), ListGroups (16), OffsetCommit (8), OffsetFetch (9), DeleteGroups (42),
OffsetDelete (47).

Mirrors ``KafkaApis#handleJoinGroupRequest`` (v0's rebalance timeout is its session timeout,
v4+ requires a known member id, the client host as ``/address``),
``handleSyncGroupRequest``, ``handleHeartbeatRequest``, ``handleLeaveGroupRequest`` (v0-v2
carry one member, whose error becomes the top-level one), ``handleOffsetCommitRequest``
(unknown partitions get UNKNOWN_TOPIC_OR_PARTITION; v2-v4's retention time gives an expire
timestamp), ``handleOffsetFetchRequest`` (v0-v7 one group, v8 a batch; a null topic list means
every partition with an offset; ``require_stable`` from v7), ``handleDescribeGroupsRequest``,
``handleListGroupsRequest``, ``handleDeleteGroupsRequest`` and ``handleOffsetDeleteRequest``.
Advertised ranges are Kafka 3.0's (within what kio models).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from kafkatx.broker.coordinators.groups import GroupState, OffsetAndMetadata
from kafkatx.broker.protocol.acl_operations import (
    AUTHORIZED_OPERATIONS_OMITTED,
    GROUP_AUTHORIZED_OPERATIONS,
)
from kafkatx.broker.protocol.handlers.registry import api
from kafkatx.broker.wire import codec

if TYPE_CHECKING:
    from kafkatx.broker.context import BrokerContext, RequestContext

DEFAULT_RETENTION_MS = -1  # OffsetCommitRequest.DEFAULT_RETENTION_TIME


def _client_host(ctx: RequestContext) -> str:
    return "/" + ctx.peer.rsplit(":", 1)[0]


@api(11, 0, 7)
async def handle_join_group(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    session_ms = codec.ms(request.session_timeout)
    rebalance_ms = codec.ms(getattr(request, "rebalance_timeout", session_ms))
    result = await broker.groups.handle_join_group(
        request.group_id, request.member_id, getattr(request, "group_instance_id", None),
        require_known_member_id=ctx.api_version >= 4, client_id=ctx.client_id or "",
        client_host=_client_host(ctx), rebalance_timeout_ms=rebalance_ms,
        session_timeout_ms=session_ms, protocol_type=request.protocol_type,
        protocols=[(p.name, bytes(p.metadata)) for p in request.protocols])
    members = tuple(codec.make(ctx.resp.JoinGroupResponseMember, member_id=m,
                                  group_instance_id=i, metadata=meta)
                    for m, i, meta in result.members)
    return codec.make(ctx.response_cls, error_code=result.error,
                         generation_id=result.generation_id,
                         protocol_type=result.protocol_type,
                         protocol_name=(result.protocol_name or "") if ctx.api_version < 7
                         else result.protocol_name,
                         leader=result.leader_id, member_id=result.member_id, members=members,
                         skip_assignment=result.skip_assignment)


@api(14, 0, 5)
async def handle_sync_group(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    result = await broker.groups.handle_sync_group(
        request.group_id, request.generation_id, request.member_id,
        getattr(request, "protocol_type", None), getattr(request, "protocol_name", None),
        getattr(request, "group_instance_id", None),
        {a.member_id: bytes(a.assignment) for a in request.assignments})
    return codec.make(ctx.response_cls, error_code=result.error,
                         protocol_type=result.protocol_type, protocol_name=result.protocol_name,
                         assignment=result.assignment)


@api(12, 0, 4)
async def handle_heartbeat(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    error = broker.groups.handle_heartbeat(request.group_id, request.member_id,
                                           getattr(request, "group_instance_id", None),
                                           request.generation_id)
    return codec.make(ctx.response_cls, error_code=error)


@api(13, 0, 4)
async def handle_leave_group(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    if hasattr(request, "members"):
        leaving = [(m.member_id, m.group_instance_id) for m in request.members]
    else:
        leaving = [(request.member_id, None)]
    error, results = broker.groups.handle_leave_group(request.group_id, leaving)
    if not hasattr(ctx.resp, "MemberResponse"):  # v0-v2: the member's error is the answer
        if error == ErrorCode.none and results:
            error = results[0][2]
        return codec.make(ctx.response_cls, error_code=error)
    members = tuple(codec.make(ctx.resp.MemberResponse, member_id=m, group_instance_id=i,
                                  error_code=e) for m, i, e in results)
    return codec.make(ctx.response_cls, error_code=error, members=members)


def requested_offsets(
    broker: BrokerContext, topics: Any, now: int, expire: int = -1
) -> tuple[dict[tuple[str, int], OffsetAndMetadata], dict[tuple[str, int], ErrorCode]]:
    """The offsets an OffsetCommit/TxnOffsetCommit asks to store, and unknown partitions."""
    offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
    errors: dict[tuple[str, int], ErrorCode] = {}
    for topic in topics:
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            if not broker.logs.contains(*tp):  # hosted here or not (metadataCache.contains)
                errors[tp] = ErrorCode.unknown_topic_or_partition
                continue
            offsets[tp] = OffsetAndMetadata(p.committed_offset,
                                            getattr(p, "committed_leader_epoch", -1),
                                            p.committed_metadata or "", now, expire)
    return offsets, errors


@api(8, 2, 8)
async def handle_offset_commit(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    now = broker.now_ms()
    retention = getattr(request, "retention_time", None)
    retention_ms = DEFAULT_RETENTION_MS if retention is None else codec.ms(retention)
    expire = -1 if retention_ms == DEFAULT_RETENTION_MS else now + retention_ms
    offsets, errors = requested_offsets(broker, request.topics, now, expire)
    if offsets:
        errors.update(broker.groups.handle_commit_offsets(
            request.group_id, request.member_id, getattr(request, "group_instance_id", None),
            request.generation_id_or_member_epoch, offsets))
    by_topic: dict[str, list[Any]] = {}
    for (topic, partition), error in errors.items():
        by_topic.setdefault(topic, []).append(codec.make(
            ctx.resp.OffsetCommitResponsePartition, partition_index=partition, error_code=error))
    return codec.make(ctx.response_cls, topics=tuple(
        codec.make(ctx.resp.OffsetCommitResponseTopic, name=topic, partitions=tuple(parts))
        for topic, parts in by_topic.items()))


def _fetch_group(broker: BrokerContext, group_id: str, topics: Any, require_stable: bool
                 ) -> tuple[ErrorCode, dict[str, list[tuple[int, tuple[int, int, str,
                                                                         ErrorCode]]]]]:
    wanted = None
    if topics is not None:
        wanted = [(t.name, p) for t in topics for p in t.partition_indexes]
    error, found = broker.groups.handle_fetch_offsets(group_id, require_stable, wanted)
    by_topic: dict[str, list[tuple[int, tuple[int, int, str, ErrorCode]]]] = {}
    for (topic, partition), data in found.items():
        by_topic.setdefault(topic, []).append((partition, data))
    return error, by_topic


@api(9, 1, 8)
async def handle_offset_fetch(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    require_stable = bool(getattr(request, "require_stable", False))
    if hasattr(request, "groups"):  # v8
        groups = []
        for g in request.groups:
            error, by_topic = _fetch_group(broker, g.group_id, g.topics, require_stable)
            groups.append(codec.make(
                ctx.resp.OffsetFetchResponseGroup, group_id=g.group_id, error_code=error,
                topics=tuple(codec.make(
                    ctx.resp.OffsetFetchResponseTopics, name=topic, partitions=tuple(
                        codec.make(ctx.resp.OffsetFetchResponsePartitions,
                                      partition_index=p, committed_offset=o,
                                      committed_leader_epoch=e, metadata=m, error_code=pe)
                        for p, (o, e, m, pe) in parts))
                    for topic, parts in by_topic.items())))
        return codec.make(ctx.response_cls, groups=tuple(groups))
    error, by_topic = _fetch_group(broker, request.group_id, request.topics, require_stable)
    if ctx.api_version < 2 and error != ErrorCode.none:
        # No top-level error before v2: every requested partition carries it.
        by_topic = {t.name: [(p, (-1, -1, "", error)) for p in t.partition_indexes]
                    for t in request.topics or ()}
    topics = tuple(codec.make(
        ctx.resp.OffsetFetchResponseTopic, name=topic, partitions=tuple(
            codec.make(ctx.resp.OffsetFetchResponsePartition, partition_index=p,
                          committed_offset=o, committed_leader_epoch=e, metadata=m,
                          error_code=pe)
            for p, (o, e, m, pe) in parts))
        for topic, parts in by_topic.items())
    return codec.make(ctx.response_cls, topics=topics, error_code=error)


@api(16, 0, 4)
async def handle_list_groups(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    groups = broker.groups.list_groups(set(getattr(request, "states_filter", ()) or ()))
    return codec.make(ctx.response_cls, error_code=ErrorCode.none, groups=tuple(
        codec.make(ctx.resp.ListedGroup, group_id=g.group_id,
                      protocol_type=g.protocol_type or "", group_state=g.state.value)
        for g in sorted(groups, key=lambda g: g.group_id)))


@api(15, 0, 5)
async def handle_describe_groups(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    """``KafkaApis#handleDescribeGroupsRequest``: from v3, a group described without error
    carries its authorized operations when asked (every one: no authorizer)."""
    ops = (GROUP_AUTHORIZED_OPERATIONS if getattr(request, "include_authorized_operations", False)
           else AUTHORIZED_OPERATIONS_OMITTED)
    described = []
    for group_id in request.groups:
        error, group = broker.groups.describe_group(group_id)
        state, protocol_type, protocol_name, members = "", "", "", []
        if error == ErrorCode.none:
            if group is None:
                state = GroupState.DEAD.value
            else:
                state, protocol_type = group.state.value, group.protocol_type or ""
                stable = group.state is GroupState.STABLE
                protocol_name = (group.protocol_name or "") if stable else ""
                for m in group.members.values():
                    members.append(codec.make(
                        ctx.resp.DescribedGroupMember, member_id=m.member_id,
                        group_instance_id=m.group_instance_id, client_id=m.client_id,
                        client_host=m.client_host,
                        member_metadata=m.metadata(protocol_name) if stable else b"",
                        member_assignment=m.assignment if stable else b""))
        described.append(codec.make(
            ctx.resp.DescribedGroup, error_code=error, group_id=group_id, group_state=state,
            protocol_type=protocol_type, protocol_data=protocol_name, members=tuple(members),
            authorized_operations=ops if error == ErrorCode.none
            else AUTHORIZED_OPERATIONS_OMITTED))
    return codec.make(ctx.response_cls, groups=tuple(described))


@api(42, 0, 2)
async def handle_delete_groups(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    """``handleDeleteGroupsRequest``: each distinct group once, in the request's order."""
    group_ids = list(dict.fromkeys(request.groups_names))
    errors = broker.groups.handle_delete_groups(group_ids)
    return codec.make(ctx.response_cls, results=tuple(
        codec.make(ctx.resp.DeletableGroupResult, group_id=g, error_code=errors[g])
        for g in group_ids))


@api(47, 0, 0)
async def handle_offset_delete(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    """``KafkaApis#handleOffsetDeleteRequest``: partitions of topics or partitions the metadata
    does not have are UNKNOWN_TOPIC_OR_PARTITION (listed first, as Kafka's response builder adds
    them before merging the coordinator's answer); a group error is the top-level error with no
    topics (``OffsetDeleteRequest#getErrorResponse``)."""
    answers: dict[str, dict[int, ErrorCode]] = {}
    valid: list[tuple[str, int]] = []
    for topic in request.topics:
        for p in topic.partitions:
            if not broker.logs.contains(topic.name, p.partition_index):
                answers.setdefault(topic.name, {})[p.partition_index] = \
                    ErrorCode.unknown_topic_or_partition
            else:
                valid.append((topic.name, p.partition_index))
    error, errors = broker.groups.handle_delete_offsets(request.group_id, valid)
    if error != ErrorCode.none:
        return codec.make(ctx.response_cls, error_code=error, topics=())
    for (topic, partition), partition_error in errors.items():
        answers.setdefault(topic, {})[partition] = partition_error
    return codec.make(ctx.response_cls, error_code=ErrorCode.none, topics=tuple(
        codec.make(ctx.resp.OffsetDeleteResponseTopic, name=name, partitions=tuple(
            codec.make(ctx.resp.OffsetDeleteResponsePartition, partition_index=index,
                          error_code=code) for index, code in parts.items()))
        for name, parts in answers.items()))
