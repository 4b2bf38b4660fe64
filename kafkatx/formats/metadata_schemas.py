"""The KRaft metadata record schemas and KRaft control record schemas, as a table.

Written from Kafka's JSON message schemas: ``metadata/src/main/resources/common/metadata/*.json``
(the ``type: metadata`` records, keyed by ``apiKey``: ``MetadataRecordType``) and the control
records of ``clients/src/main/resources/common/message/`` (``LeaderChangeMessage``,
``SnapshotHeaderRecord``, ``SnapshotFooterRecord``, ``KRaftVersionRecord``, ``VotersRecord``),
Kafka 3.x-4.4: field names, types, versions, nullable and tagged versions, tags and defaults.
``ClearElrRecord`` (28) and ``UnregisterControllerRecord`` (29) are from Kafka 4.x trunk;
``CordonedLogDirs`` (``RegisterBrokerRecord`` v4, ``BrokerRegistrationChangeRecord`` v3) from 4.4.
"""

from __future__ import annotations

from typing import Any

from kafkatx.formats.kafka_messages import Field, MessageSchema


def F(name: str, type_: str, versions: str = "0+", *, nullable: str | None = None,
      tagged: str | None = None, tag: int | None = None, default: Any = ...,
      fields: tuple[Field, ...] = ()) -> Field:
    return Field(name, type_, versions, nullable, tagged, tag, default, fields)


def M(api_key: int | None, name: str, valid: str, fields: list[Field],
      flexible: str = "0+") -> MessageSchema:
    return MessageSchema(name, valid, flexible, tuple(fields), api_key)


_ENDPOINT = (F("Name", "string"), F("Host", "string"), F("Port", "uint16"),
             F("SecurityProtocol", "int16"))
_FEATURE = (F("Name", "string"), F("MinSupportedVersion", "int16"),
            F("MaxSupportedVersion", "int16"))

METADATA_RECORDS: tuple[MessageSchema, ...] = (
    M(0, "RegisterBrokerRecord", "0-4", [
        F("BrokerId", "int32"),
        F("IsMigratingZkBroker", "bool", "2+", default=False),
        F("IncarnationId", "uuid"),
        F("BrokerEpoch", "int64"),
        F("EndPoints", "[]BrokerEndpoint", fields=_ENDPOINT),
        F("Features", "[]BrokerFeature", fields=_FEATURE),
        F("Rack", "string", nullable="0+"),
        F("Fenced", "bool", default=True),
        F("InControlledShutdown", "bool", "1+", default=False),
        F("LogDirs", "[]uuid", "3+", tagged="3+", tag=0),
        F("CordonedLogDirs", "[]uuid", "4+", nullable="4+", tagged="4+", tag=1, default=None),
    ]),
    M(1, "UnregisterBrokerRecord", "0", [F("BrokerId", "int32"), F("BrokerEpoch", "int64")]),
    M(2, "TopicRecord", "0", [F("Name", "string"), F("TopicId", "uuid")]),
    M(3, "PartitionRecord", "0-2", [
        F("PartitionId", "int32", default=-1),
        F("TopicId", "uuid"),
        F("Replicas", "[]int32"),
        F("Isr", "[]int32"),
        F("RemovingReplicas", "[]int32"),
        F("AddingReplicas", "[]int32"),
        F("Leader", "int32", default=-1),
        F("LeaderRecoveryState", "int8", tagged="0+", tag=0, default=0),
        F("LeaderEpoch", "int32", default=-1),
        F("PartitionEpoch", "int32", default=-1),
        F("Directories", "[]uuid", "1+"),
        F("EligibleLeaderReplicas", "[]int32", "2+", nullable="2+", tagged="2+", tag=1,
          default=None),
        F("LastKnownElr", "[]int32", "2+", nullable="2+", tagged="2+", tag=2, default=None),
    ]),
    M(4, "ConfigRecord", "0", [
        F("ResourceType", "int8"), F("ResourceName", "string"), F("Name", "string"),
        F("Value", "string", nullable="0+"),
    ]),
    M(5, "PartitionChangeRecord", "0-2", [
        F("PartitionId", "int32", default=-1),
        F("TopicId", "uuid"),
        F("Isr", "[]int32", nullable="0+", tagged="0+", tag=0, default=None),
        F("Leader", "int32", tagged="0+", tag=1, default=-2),
        F("Replicas", "[]int32", nullable="0+", tagged="0+", tag=2, default=None),
        F("RemovingReplicas", "[]int32", nullable="0+", tagged="0+", tag=3, default=None),
        F("AddingReplicas", "[]int32", nullable="0+", tagged="0+", tag=4, default=None),
        F("LeaderRecoveryState", "int8", tagged="0+", tag=5, default=-1),
        F("Directories", "[]uuid", "1+", nullable="1+", tagged="1+", tag=8, default=None),
        F("EligibleLeaderReplicas", "[]int32", "2+", nullable="2+", tagged="2+", tag=6,
          default=None),
        F("LastKnownElr", "[]int32", "2+", nullable="2+", tagged="2+", tag=7, default=None),
    ]),
    M(7, "FenceBrokerRecord", "0", [F("Id", "int32"), F("Epoch", "int64")]),
    M(8, "UnfenceBrokerRecord", "0", [F("Id", "int32"), F("Epoch", "int64")]),
    M(9, "RemoveTopicRecord", "0", [F("TopicId", "uuid")]),
    M(10, "DelegationTokenRecord", "0", [
        F("Owner", "string"), F("Requester", "string"), F("Renewers", "[]string"),
        F("IssueTimestamp", "int64"), F("MaxTimestamp", "int64"),
        F("ExpirationTimestamp", "int64"), F("TokenId", "string"),
    ]),
    M(11, "UserScramCredentialRecord", "0", [
        F("Name", "string"), F("Mechanism", "int8"), F("Salt", "bytes"),
        F("StoredKey", "bytes"), F("ServerKey", "bytes"), F("Iterations", "int32"),
    ]),
    M(12, "FeatureLevelRecord", "0", [F("Name", "string"), F("FeatureLevel", "int16")]),
    M(14, "ClientQuotaRecord", "0", [
        F("Entity", "[]EntityData", fields=(F("EntityType", "string"),
                                            F("EntityName", "string", nullable="0+"))),
        F("Key", "string"), F("Value", "float64"), F("Remove", "bool"),
    ]),
    M(15, "ProducerIdsRecord", "0", [
        F("BrokerId", "int32"), F("BrokerEpoch", "int64", default=-1),
        F("NextProducerId", "int64"),
    ]),
    M(17, "BrokerRegistrationChangeRecord", "0-3", [
        F("BrokerId", "int32"),
        F("BrokerEpoch", "int64"),
        F("Fenced", "int8", tagged="0+", tag=0),
        F("InControlledShutdown", "int8", "1+", tagged="1+", tag=1),
        F("LogDirs", "[]uuid", "2+", tagged="2+", tag=2),
        F("CordonedLogDirs", "[]uuid", "3+", nullable="3+", tagged="3+", tag=3, default=None),
    ]),
    M(18, "AccessControlEntryRecord", "0", [
        F("Id", "uuid"), F("ResourceType", "int8"), F("ResourceName", "string"),
        F("PatternType", "int8"), F("Principal", "string"), F("Host", "string"),
        F("Operation", "int8"), F("PermissionType", "int8"),
    ]),
    M(19, "RemoveAccessControlEntryRecord", "0", [F("Id", "uuid")]),
    M(20, "NoOpRecord", "0", []),
    M(21, "ZkMigrationStateRecord", "0", [F("ZkMigrationState", "int8")]),
    M(22, "RemoveUserScramCredentialRecord", "0", [F("Name", "string"),
                                                   F("Mechanism", "int8")]),
    M(23, "BeginTransactionRecord", "0", [
        F("Name", "string", nullable="0+", tagged="0+", tag=0, default=None)]),
    M(24, "EndTransactionRecord", "0", []),
    M(25, "AbortTransactionRecord", "0", [
        F("Reason", "string", nullable="0+", tagged="0+", tag=0, default=None)]),
    M(26, "RemoveDelegationTokenRecord", "0", [F("TokenId", "string")]),
    M(27, "RegisterControllerRecord", "0", [
        F("ControllerId", "int32"), F("IncarnationId", "uuid"), F("ZkMigrationReady", "bool"),
        F("EndPoints", "[]ControllerEndpoint", fields=_ENDPOINT),
        F("Features", "[]ControllerFeature", fields=_FEATURE),
    ]),
    M(28, "ClearElrRecord", "0", [F("TopicName", "string")]),
    M(29, "UnregisterControllerRecord", "0", [F("ControllerId", "int32")]),
)

_VOTER_V = (F("VoterId", "int32"), F("VoterDirectoryId", "uuid", "1+"))

# KRaft control records (ControlRecordType 2..6); the value is the message alone, read at
# ControlRecordUtils.*_CURRENT_VERSION (0), its own Version field first.
CONTROL_RECORDS: dict[int, MessageSchema] = {
    2: M(None, "LeaderChangeMessage", "0-1", [
        F("Version", "int16"), F("LeaderId", "int32"),
        F("Voters", "[]Voter", fields=_VOTER_V), F("GrantingVoters", "[]Voter", fields=_VOTER_V),
    ]),
    3: M(None, "SnapshotHeaderRecord", "0", [F("Version", "int16"),
                                              F("LastContainedLogTimestamp", "int64")]),
    4: M(None, "SnapshotFooterRecord", "0", [F("Version", "int16")]),
    5: M(None, "KRaftVersionRecord", "0", [F("Version", "int16"), F("KRaftVersion", "int16")]),
    6: M(None, "VotersRecord", "0", [
        F("Version", "int16"),
        F("Voters", "[]Voter", fields=(
            F("VoterId", "int32"), F("VoterDirectoryId", "uuid"),
            F("Endpoints", "[]Endpoint", fields=(F("Name", "string"), F("Host", "string"),
                                                  F("Port", "uint16"))),
            F("KRaftVersionFeature", "KRaftVersionFeature", fields=(
                F("MinSupportedVersion", "int16"), F("MaxSupportedVersion", "int16"))),
        )),
    ]),
}

# raft/src/main/resources/common/message/QuorumStateData.json (the quorum-state file, as JSON).
QUORUM_STATE = M(None, "QuorumStateData", "0-1", [
    F("ClusterId", "string", "0"),
    F("LeaderId", "int32", default=-1),
    F("LeaderEpoch", "int32", default=-1),
    F("VotedId", "int32", default=-1),
    F("VotedDirectoryId", "uuid", "1+"),
    F("AppliedOffset", "int64", "0"),
    F("CurrentVoters", "[]Voter", "0", nullable="0", fields=(F("VoterId", "int32", "0"),)),
])

BY_API_KEY: dict[int, MessageSchema] = {m.api_key: m for m in METADATA_RECORDS
                                        if m.api_key is not None}
BY_NAME: dict[str, MessageSchema] = {m.name: m for m in METADATA_RECORDS}
