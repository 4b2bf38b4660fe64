"""The ``__consumer_offsets`` record types after the classic three, as a schema table.

Written from Kafka's coordinator record schemas (``group-coordinator/src/main/resources/common/
message/*Key.json`` and ``*Value.json``, Kafka 4.0 to 4.4): the KIP-848 consumer groups (types
3-8, 16), KIP-932 share groups (10-15; 9, ``ShareGroupPartitionMetadata``, is Kafka 4.0's, removed
in 4.1) and KIP-1071 streams groups (17, 19-23). Every key is the int16 record type followed by
its fields in the classic (non-flexible) encoding: the group id, then the member id or regular
expression for the per-member types. Every value is an int16 version (only 0 exists) followed by
a flexible message. Kafka 4.0 named the key versions after the record type (``validVersions:
"3"``) and 4.1 gave them api keys with version 0; the bytes are the same.

Share groups were early access in 4.0: its ``ShareGroupMetadataValue`` had no ``MetadataHash``,
which 4.1 added as a plain field, so a 4.0 share group's metadata does not decode here (nor in
Kafka 4.1+, which reads it with the newer layout).
"""

from __future__ import annotations

from typing import Any

from kafkatx.formats.kafka_messages import Field, MessageSchema


def F(name: str, type_: str, versions: str = "0+", *, nullable: str | None = None,
      tagged: str | None = None, tag: int | None = None, default: Any = ...,
      fields: tuple[Field, ...] = ()) -> Field:
    return Field(name, type_, versions, nullable, tagged, tag, default, fields)


def V(record_type: int, name: str, fields: list[Field]) -> MessageSchema:
    return MessageSchema(name, "0", "0+", tuple(fields), record_type)


_GROUP = (F("GroupId", "string", "0"),)
_MEMBER = (*_GROUP, F("MemberId", "string", "0"))
_REGEX = (*_GROUP, F("RegularExpression", "string", "0"))
_KEY_FIELDS: dict[int, tuple[Field, ...]] = {
    3: _GROUP, 4: _GROUP, 5: _MEMBER, 6: _GROUP, 7: _MEMBER, 8: _MEMBER,
    9: _GROUP, 10: _MEMBER, 11: _GROUP, 12: _GROUP, 13: _MEMBER, 14: _MEMBER, 15: _GROUP,
    16: _REGEX,
    17: _GROUP, 19: _MEMBER, 20: _GROUP, 21: _MEMBER, 22: _MEMBER, 23: _GROUP,
}

_TOPIC_PARTITIONS = (F("TopicId", "uuid"), F("Partitions", "[]int32"))
_EPOCHS = F("AssignmentEpochs", "[]int32", nullable="0+", tagged="0+", tag=0, default=None)
_TASK_IDS = (F("SubtopologyId", "string"), F("Partitions", "[]int32"))
_TASK_IDS_WITH_EPOCHS = (*_TASK_IDS, _EPOCHS)
_KEY_VALUE = (F("Key", "string"), F("Value", "string"))
_STREAMS_TOPIC_INFO = (F("Name", "string"), F("Partitions", "int32"),
                       F("ReplicationFactor", "int16"),
                       F("TopicConfigs", "[]TopicConfig",
                         fields=(F("key", "string"), F("value", "string"))))
_PARTITION_METADATA = (F("Topics", "[]TopicMetadata", fields=(
    F("TopicId", "uuid"), F("TopicName", "string"), F("NumPartitions", "int32"),
    F("PartitionMetadata", "[]PartitionMetadata",
      fields=(F("Partition", "int32"), F("Racks", "[]string"))))),)
_ASSIGNMENT_METADATA = (F("AssignmentEpoch", "int32"),
                        F("AssignmentTimestamp", "int64", tagged="0+", tag=0, default=0))
_MEMBER_EPOCHS = (F("MemberEpoch", "int32"), F("PreviousMemberEpoch", "int32"),
                  F("State", "int8"))
_CLIENT = (F("ClientId", "string"), F("ClientHost", "string"))
_INSTANCE_RACK = (F("InstanceId", "string", nullable="0+"),
                  F("RackId", "string", nullable="0+"))


def _tasks(*names: str, fields: tuple[Field, ...]) -> list[Field]:
    return [F(name, "[]TaskIds", fields=fields) for name in names]


_TASK_KINDS = ("ActiveTasks", "StandbyTasks", "WarmupTasks")

VALUES: tuple[MessageSchema, ...] = (
    # KIP-848 consumer groups
    V(3, "ConsumerGroupMetadataValue", [
        F("Epoch", "int32"),
        F("MetadataHash", "int64", tagged="0+", tag=0, default=0),  # 4.1+ (KIP-1101)
    ]),
    V(4, "ConsumerGroupPartitionMetadataValue", list(_PARTITION_METADATA)),  # until 4.0
    V(5, "ConsumerGroupMemberMetadataValue", [
        *_INSTANCE_RACK, *_CLIENT,
        F("SubscribedTopicNames", "[]string"),
        F("SubscribedTopicRegex", "string", nullable="0+"),
        F("RebalanceTimeoutMs", "int32", default=-1),
        F("ServerAssignor", "string", nullable="0+"),
        # no default: as in Kafka's generated class, an absent tag reads as an empty struct
        F("ClassicMemberMetadata", "ClassicMemberMetadata", nullable="0+", tagged="0+", tag=0,
          fields=(
              F("SessionTimeoutMs", "int32"),
              F("SupportedProtocols", "[]ClassicProtocol",
                fields=(F("Name", "string"), F("Metadata", "bytes"))))),
    ]),
    V(6, "ConsumerGroupTargetAssignmentMetadataValue", list(_ASSIGNMENT_METADATA)),
    V(7, "ConsumerGroupTargetAssignmentMemberValue", [
        F("TopicPartitions", "[]TopicPartition", fields=_TOPIC_PARTITIONS),
    ]),
    V(8, "ConsumerGroupCurrentMemberAssignmentValue", [
        *_MEMBER_EPOCHS,
        F("AssignedPartitions", "[]TopicPartitions", fields=(*_TOPIC_PARTITIONS, _EPOCHS)),
        F("PartitionsPendingRevocation", "[]TopicPartitions",
          fields=(*_TOPIC_PARTITIONS, _EPOCHS)),
    ]),
    V(16, "ConsumerGroupRegularExpressionValue", [
        F("Topics", "[]string"), F("Version", "int64"), F("Timestamp", "int64"),
    ]),
    # KIP-932 share groups
    V(9, "ShareGroupPartitionMetadataValue", list(_PARTITION_METADATA)),  # 4.0 only
    V(10, "ShareGroupMemberMetadataValue", [
        F("RackId", "string", nullable="0+"), *_CLIENT, F("SubscribedTopicNames", "[]string"),
    ]),
    V(11, "ShareGroupMetadataValue", [F("Epoch", "int32"), F("MetadataHash", "int64")]),
    V(12, "ShareGroupTargetAssignmentMetadataValue", list(_ASSIGNMENT_METADATA)),
    V(13, "ShareGroupTargetAssignmentMemberValue", [
        F("TopicPartitions", "[]TopicPartition", fields=_TOPIC_PARTITIONS),
    ]),
    V(14, "ShareGroupCurrentMemberAssignmentValue", [
        *_MEMBER_EPOCHS, F("AssignedPartitions", "[]TopicPartitions", fields=_TOPIC_PARTITIONS),
    ]),
    V(15, "ShareGroupStatePartitionMetadataValue", [
        F("InitializingTopics", "[]TopicPartitionsInfo", fields=(
            F("TopicId", "uuid"), F("TopicName", "string"), F("Partitions", "[]int32"))),
        F("InitializedTopics", "[]TopicPartitionsInfo", fields=(
            F("TopicId", "uuid"), F("TopicName", "string"), F("Partitions", "[]int32"))),
        F("DeletingTopics", "[]TopicInfo",
          fields=(F("TopicId", "uuid"), F("TopicName", "string"))),
    ]),
    # KIP-1071 streams groups
    V(17, "StreamsGroupMetadataValue", [
        F("Epoch", "int32"),
        F("MetadataHash", "int64"),
        F("ValidatedTopologyEpoch", "int32", tagged="0+", tag=0, default=-1),
        F("LastAssignmentConfigs", "[]LastAssignmentConfig", nullable="0+", tagged="0+", tag=1,
          default=None, fields=_KEY_VALUE),
        F("StoredDescriptionTopologyEpoch", "int32", tagged="0+", tag=2, default=-1),
        F("FailedDescriptionTopologyEpoch", "int32", tagged="0+", tag=3, default=-1),
    ]),
    V(19, "StreamsGroupMemberMetadataValue", [
        *_INSTANCE_RACK, *_CLIENT,
        F("RebalanceTimeoutMs", "int32", default=-1),
        F("TopologyEpoch", "int32"),
        F("ProcessId", "string"),
        F("UserEndpoint", "Endpoint", nullable="0+", default=None,
          fields=(F("Host", "string"), F("Port", "uint16"))),
        F("ClientTags", "[]KeyValue", fields=_KEY_VALUE),
    ]),
    V(20, "StreamsGroupTargetAssignmentMetadataValue", list(_ASSIGNMENT_METADATA)),
    V(21, "StreamsGroupTargetAssignmentMemberValue", _tasks(*_TASK_KINDS, fields=_TASK_IDS)),
    V(22, "StreamsGroupCurrentMemberAssignmentValue", [
        *_MEMBER_EPOCHS,
        *_tasks(*_TASK_KINDS, *(kind + "PendingRevocation" for kind in _TASK_KINDS),
                fields=_TASK_IDS_WITH_EPOCHS),
    ]),
    V(23, "StreamsGroupTopologyValue", [
        F("Epoch", "int32"),
        F("Subtopologies", "[]Subtopology", fields=(
            F("SubtopologyId", "string"),
            F("SourceTopics", "[]string"),
            F("SourceTopicRegex", "[]string"),
            F("StateChangelogTopics", "[]TopicInfo", fields=_STREAMS_TOPIC_INFO),
            F("RepartitionSinkTopics", "[]string"),
            F("RepartitionSourceTopics", "[]TopicInfo", fields=_STREAMS_TOPIC_INFO),
            F("CopartitionGroups", "[]CopartitionGroup", fields=(
                F("SourceTopics", "[]int16"), F("SourceTopicRegex", "[]int16"),
                F("RepartitionSourceTopics", "[]int16"))))),
    ]),
)

#: Each record type's value schema, by record type.
VALUE_SCHEMAS: dict[int, MessageSchema] = {m.api_key: m for m in VALUES
                                           if m.api_key is not None}
#: Each record type's key fields after its int16 type (one version, classic encoding).
KEY_SCHEMAS: dict[int, MessageSchema] = {
    t: MessageSchema(VALUE_SCHEMAS[t].name.removesuffix("Value") + "Key", "0", "none", fields, t)
    for t, fields in _KEY_FIELDS.items()}
