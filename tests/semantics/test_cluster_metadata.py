"""The metadata image replay against Kafka's image deltas, record by record."""

from __future__ import annotations

from typing import Any

from kafkatx.formats.checkpoints import uuid_from_bytes
from kafkatx.formats.kafka_messages import default_message
from kafkatx.formats.metadata_records import MetadataRecord
from kafkatx.formats.metadata_schemas import BY_NAME
from kafkatx.semantics.cluster_metadata import ClusterImage, Where

TOPIC_ID = uuid_from_bytes(b"\x01" * 16)
OTHER_ID = uuid_from_bytes(b"\x02" * 16)


def rec(type_name: str, /, **fields: Any) -> MetadataRecord:
    schema = BY_NAME[type_name]
    data = default_message(schema)
    data.update(fields)
    assert schema.api_key is not None
    return MetadataRecord(type_id=schema.api_key, version=max(schema.versions), data=data)


def replay(*records: MetadataRecord, start: int = 0) -> ClusterImage:
    image = ClusterImage()
    for i, r in enumerate(records):
        image.replay(r, Where(start + i, 1_000 + i, 1))
    return image


def topic(name: str = "t", topic_id: str = TOPIC_ID) -> list[MetadataRecord]:
    return [rec("TopicRecord", name=name, topic_id=topic_id),
            rec("PartitionRecord", partition_id=0, topic_id=topic_id, replicas=[1, 2],
                isr=[1, 2], leader=1, leader_epoch=0, partition_epoch=0)]


def test_partition_change_merge_follows_partition_registration() -> None:
    """PartitionRegistration#merge: a Leader field bumps the leader epoch (even to the same
    broker), -2 keeps it; a null ISR keeps the ISR; every change bumps the partition epoch."""
    image = replay(*topic(),
                   rec("PartitionChangeRecord", partition_id=0, topic_id=TOPIC_ID, isr=[1]),
                   rec("PartitionChangeRecord", partition_id=0, topic_id=TOPIC_ID, leader=1),
                   rec("PartitionChangeRecord", partition_id=0, topic_id=TOPIC_ID, leader=2,
                       isr=[2]))
    part = image.topics[TOPIC_ID].partitions[0]
    assert (part.leader, part.leader_epoch, part.partition_epoch, part.isr) == (2, 2, 3, (2,))
    history = image.topics[TOPIC_ID].leader_epochs[0]
    assert [(e.leader_epoch, e.leader, e.where.offset) for e in history] == [
        (0, 1, 1), (1, 1, 3), (2, 2, 4)]


def test_remove_topic_removes_its_configs_and_a_recreated_topic_has_a_new_id() -> None:
    """TopicsDelta#replay(RemoveTopicRecord) and ConfigurationsDelta#replay(RemoveTopicRecord):
    the topic and its configs go; the same name can come back with another id."""
    image = replay(*topic(), rec("ConfigRecord", resource_type=2, resource_name="t",
                                 name="cleanup.policy", value="compact"),
                   rec("RemoveTopicRecord", topic_id=TOPIC_ID), *topic(topic_id=OTHER_ID))
    assert list(image.topics) == [OTHER_ID]
    assert image.topic_configs("t") == {}
    assert [(e.event, e.topic_id) for e in image.topic_events] == [
        ("created", TOPIC_ID), ("deleted", TOPIC_ID), ("created", OTHER_ID)]


def test_config_null_value_deletes_the_key() -> None:
    """ConfigurationDelta#replay: a null value deletes the config (back to its default)."""
    image = replay(rec("ConfigRecord", resource_type=4, resource_name="", name="a", value="1"),
                   rec("ConfigRecord", resource_type=4, resource_name="", name="b", value="2"),
                   rec("ConfigRecord", resource_type=4, resource_name="", name="a", value=None))
    assert image.configs == {(4, ""): {"b": "2"}}
    assert [c.value for c in image.config_changes] == ["1", "2", None]


def test_feature_level_zero_removes_a_feature_but_not_metadata_version() -> None:
    """FeaturesDelta#replay(FeatureLevelRecord): level 0 removes a feature; metadata.version is
    set however; feature_level_at answers by metadata offset."""
    image = replay(rec("FeatureLevelRecord", name="metadata.version", feature_level=25),
                   rec("FeatureLevelRecord", name="transaction.version", feature_level=1),
                   rec("FeatureLevelRecord", name="transaction.version", feature_level=2),
                   rec("FeatureLevelRecord", name="transaction.version", feature_level=0))
    assert image.features == {"metadata.version": 25}
    assert [image.feature_level_at("transaction.version", o) for o in range(4)] == [
        None, 1, 2, None]


def test_producer_id_blocks_are_the_thousand_ids_before_next_producer_id() -> None:
    """ProducerIdControlManager#replay: NextProducerId is the first id of the next block; the
    block handed to the broker is the PRODUCER_ID_BLOCK_SIZE (1000) ids before it."""
    image = replay(rec("ProducerIdsRecord", broker_id=1, broker_epoch=5, next_producer_id=1000),
                   rec("ProducerIdsRecord", broker_id=2, broker_epoch=9, next_producer_id=2000))
    assert [(b.broker_id, b.first_producer_id, b.last_producer_id)
            for b in image.producer_id_blocks] == [(1, 0, 999), (2, 1000, 1999)]
    assert image.next_producer_id == 2000
    block = image.block_for(1500)
    assert block is not None and block.broker_id == 2
    assert image.block_for(2000) is None


def test_metadata_transactions_apply_atomically() -> None:
    """MetadataBatchLoader: records between Begin and EndTransactionRecord are applied together,
    an AbortTransactionRecord drops them, an unfinished transaction is not applied."""
    committed = replay(rec("BeginTransactionRecord", name="x"), *topic(),
                       rec("EndTransactionRecord"))
    assert TOPIC_ID in committed.topics and committed.open_transaction is None
    aborted = replay(rec("BeginTransactionRecord"), *topic(), rec("AbortTransactionRecord"))
    assert aborted.topics == {} and aborted.problems == []
    unfinished = replay(rec("BeginTransactionRecord"), *topic())
    assert unfinished.topics == {}
    assert unfinished.open_transaction is not None and unfinished.open_transaction.offset == 0
    stray = replay(rec("EndTransactionRecord"))
    assert [p.message for p in stray.problems] == [
        "EndTransactionRecord without a BeginTransactionRecord"]


def test_broker_registration_and_fencing() -> None:
    """ClusterDelta: RegisterBrokerRecord registers (fenced), BrokerRegistrationChangeRecord
    fenced=-1 unfences and 1 fences (BrokerRegistrationFencingChange), 0 leaves it."""
    image = replay(rec("RegisterBrokerRecord", broker_id=3, broker_epoch=7),
                   rec("BrokerRegistrationChangeRecord", broker_id=3, broker_epoch=7, fenced=-1))
    assert image.brokers[3].fenced is False
    image.replay(rec("BrokerRegistrationChangeRecord", broker_id=3, broker_epoch=7, fenced=0),
                 Where(2, 0, 1))
    assert image.brokers[3].fenced is False
    image.replay(rec("FenceBrokerRecord", id=3, epoch=7), Where(3, 0, 1))
    assert image.brokers[3].fenced is True
    image.replay(rec("UnregisterBrokerRecord", broker_id=3, broker_epoch=7), Where(4, 0, 1))
    assert image.brokers == {}


def test_records_kafka_would_refuse_are_problems_not_crashes() -> None:
    """Kafka's replay throws for a change to an unknown topic; the forensic replay keeps going
    and says where."""
    image = replay(rec("PartitionChangeRecord", partition_id=0, topic_id=TOPIC_ID, leader=1),
                   rec("RemoveTopicRecord", topic_id=TOPIC_ID),
                   MetadataRecord(type_id=99, version=0, data=None, raw=b""), *topic())
    assert [p.where.offset for p in image.problems] == [0, 1, 2]
    assert TOPIC_ID in image.topics


def test_clear_elr_record_clears_eligible_leader_replicas() -> None:
    """TopicsDelta#replay(ClearElrRecord) / TopicDelta#maybeClearElr: an empty topic name
    clears every topic's ELRs with a merge (the partition epoch moves)."""
    image = replay(rec("TopicRecord", name="t", topic_id=TOPIC_ID),
                   rec("PartitionRecord", partition_id=0, topic_id=TOPIC_ID, replicas=[1],
                       isr=[1], leader=1, eligible_leader_replicas=[2], last_known_elr=[3]),
                   rec("ClearElrRecord", topic_name=""))
    part = image.topics[TOPIC_ID].partitions[0]
    assert part.elr == () and part.last_known_elr == () and part.partition_epoch == 0
    assert part.leader_epoch == -1  # no leader change


def test_acls_scram_delegation_tokens_and_quotas() -> None:
    """AclsDelta, ScramDelta, DelegationTokenDelta and ClientQuotasDelta: records add, their
    Remove records take away; SCRAM salts and keys are never kept."""
    acl = uuid_from_bytes(b"\x05" * 16)
    image = replay(
        rec("AccessControlEntryRecord", id=acl, resource_type=2, resource_name="payments",
            pattern_type=3, principal="User:app", host="*", operation=3, permission_type=3),
        rec("UserScramCredentialRecord", name="app", mechanism=1, salt=b"s", stored_key=b"k",
            server_key=b"k", iterations=8192),
        rec("DelegationTokenRecord", owner="User:a", requester="User:a", renewers=[],
            issue_timestamp=1, max_timestamp=3, expiration_timestamp=2, token_id="t1"),
        rec("ClientQuotaRecord", entity=[{"entity_type": "user", "entity_name": "app"}],
            key="producer_byte_rate", value=1024.0, remove=False))
    assert image.acls[acl]["principal"] == "User:app"
    assert image.scram_users == {("app", 1): {"user": "app", "mechanism": 1,
                                              "iterations": 8192}}
    assert list(image.delegation_tokens) == ["t1"]
    assert image.client_quotas == {(("user", "app"),): {"producer_byte_rate": 1024.0}}
    for i, r in enumerate([
            rec("RemoveAccessControlEntryRecord", id=acl),
            rec("RemoveUserScramCredentialRecord", name="app", mechanism=1),
            rec("RemoveDelegationTokenRecord", token_id="t1"),
            rec("ClientQuotaRecord", entity=[{"entity_type": "user", "entity_name": "app"}],
                key="producer_byte_rate", remove=True)]):
        image.replay(r, Where(10 + i, 0, 1))
    assert (image.acls, image.scram_users, image.delegation_tokens, image.client_quotas) == (
        {}, {}, {}, {})
