"""The metadata records a KRaft controller writes for what ``kafkatx serve`` creates and changes.

Mirrors, for a combined node (``process.roles=broker,controller``) that is the cluster's only
broker and voter: ``ActivationRecordsGenerator#recordsForEmptyLog`` (the bootstrap records in a
metadata transaction), ``ClusterControlManager#registerBroker`` (a RegisterBrokerRecord at every
start, the broker epoch being its offset, fenced until ``BrokerHeartbeatManager`` unfences it:
BrokerRegistrationChangeRecord UNFENCE; at a controlled shutdown the change record sets
InControlledShutdown and FENCE), ``ReplicationControlManager#createTopic`` (TopicRecord, the
ConfigRecords of the request, one PartitionRecord per partition, in one batch),
``#createPartitions``, ``#deleteTopic`` (RemoveTopicRecord), ``ConfigurationControlManager``
(``incrementalAlterConfigResource`` / ``legacyAlterConfigResource``: a ConfigRecord per changed
key, a null value for a deleted one, every named key for a BROKER resource, KAFKA-14136),
``FeatureControlManager`` (FeatureLevelRecord) and ``ProducerIdControlManager``
(ProducerIdsRecord with the first id of the next block).

The partitions' leadership never changes: the node leads every partition at leader epoch 0
(``config.LEADER_EPOCH``), as the data's batches and ``leader-epoch-checkpoint`` files say.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from kafkatx.broker.kraft.metadata_log import KRaftMetadataLog, Rec
from kafkatx.semantics.cluster_metadata import (
    METADATA_VERSION_FEATURE,
    PRODUCER_ID_BLOCK_SIZE,
    TRANSACTION_VERSION_FEATURE,
    ClusterImage,
    Partition,
)
from kafkatx.semantics.metadata_image_records import partition_record

METADATA_VERSION = 25  # 4.0-IV3, Kafka 4.0's latest production metadata.version
MAX_TRANSACTION_VERSION = 2
TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4  # ConfigResource.Type ids
FENCE, UNFENCE = 1, -1  # BrokerRegistrationFencingChange
PLAINTEXT = 0  # SecurityProtocol.PLAINTEXT id


class Controller:
    """Writes the records; ``metadata`` is the node's metadata log (and image)."""

    def __init__(self, metadata: KRaftMetadataLog, *, node_id: int, directory_id: str,
                 now_ms: Callable[[], int]) -> None:
        self.metadata = metadata
        self.node_id = node_id
        self.directory_id = directory_id
        self.now_ms = now_ms
        self.broker_epoch = -1

    @property
    def image(self) -> ClusterImage:
        return self.metadata.image

    def _write(self, records: list[Rec]) -> int:
        return self.metadata.append(records, self.now_ms()) if records else -1

    # -- activation, features ------------------------------------------------------------------

    def bootstrap_records(self, transaction_version: int) -> list[Rec]:
        """``BootstrapMetadata``: the finalized features a fresh cluster starts with (a
        feature at level 0 is not finalized: no record)."""
        records: list[Rec] = [("FeatureLevelRecord", 0, {"name": METADATA_VERSION_FEATURE,
                                                         "feature_level": METADATA_VERSION})]
        if transaction_version:
            records.append(("FeatureLevelRecord", 0, {"name": TRANSACTION_VERSION_FEATURE,
                                                      "feature_level": transaction_version}))
        return records

    def activate(self, transaction_version: int) -> None:
        """On an empty log the bootstrap snapshot (``kafka-storage format``) and the bootstrap
        records in a metadata transaction; on a log whose finalized ``transaction.version``
        differs from the one serve runs, the FeatureLevelRecord that changes it (what
        ``kafka-features.sh upgrade``/``downgrade`` would have the controller write)."""
        bootstrap = self.bootstrap_records(transaction_version)
        if self.metadata.was_empty:
            now = self.now_ms()
            self.metadata.write_bootstrap_snapshot(bootstrap, now)
            self._write([("BeginTransactionRecord", 0, {"name": "Bootstrap records"}),
                         *bootstrap, ("EndTransactionRecord", 0, {})])
            return
        if self.image.features.get(TRANSACTION_VERSION_FEATURE, 0) != transaction_version:
            self._write([("FeatureLevelRecord", 0, {"name": TRANSACTION_VERSION_FEATURE,
                                                    "feature_level": transaction_version})])

    def register_broker(self, incarnation_id: str, host: str, port: int) -> int:
        """``ClusterControlManager#registerBroker`` then the unfencing heartbeat; returns the
        broker epoch (the RegisterBrokerRecord's offset)."""
        offset = self.metadata.end_offset
        self._write([("RegisterBrokerRecord", 3, {
            "broker_id": self.node_id, "incarnation_id": incarnation_id, "broker_epoch": offset,
            "end_points": [{"name": "PLAINTEXT", "host": host, "port": port,
                            "security_protocol": PLAINTEXT}],
            "features": [{"name": METADATA_VERSION_FEATURE, "min_supported_version": 1,
                          "max_supported_version": METADATA_VERSION},
                         {"name": TRANSACTION_VERSION_FEATURE, "min_supported_version": 0,
                          "max_supported_version": MAX_TRANSACTION_VERSION}],
            "rack": None, "fenced": True, "in_controlled_shutdown": False,
            "log_dirs": [self.directory_id]})])
        self._write([("BrokerRegistrationChangeRecord", 2, {
            "broker_id": self.node_id, "broker_epoch": offset, "fenced": UNFENCE})])
        self.broker_epoch = offset
        return offset

    def controlled_shutdown(self) -> None:
        """``BrokerHeartbeatManager``: in controlled shutdown, then fenced."""
        if self.broker_epoch < 0:
            return
        self._write([("BrokerRegistrationChangeRecord", 2, {
            "broker_id": self.node_id, "broker_epoch": self.broker_epoch,
            "in_controlled_shutdown": 1}),
            ("BrokerRegistrationChangeRecord", 2, {
                "broker_id": self.node_id, "broker_epoch": self.broker_epoch,
                "fenced": FENCE})])

    # -- topics ----------------------------------------------------------------------------------

    def _partition(self, topic_id: str, partition: int, leader_epoch: int) -> Rec:
        node = [self.node_id]
        return partition_record(topic_id, partition, Partition(
            replicas=tuple(node), isr=tuple(node), removing_replicas=(), adding_replicas=(),
            leader=self.node_id, leader_recovery_state=0, leader_epoch=leader_epoch,
            partition_epoch=0, directories=(self.directory_id,), elr=(), last_known_elr=()))

    def create_topic(self, name: str, topic_id: str, num_partitions: int,
                     configs: Mapping[str, str], *, leader_epoch: int = 0) -> int:
        """``ReplicationControlManager#createTopic``: one batch (atomic)."""
        records: list[Rec] = [("TopicRecord", 0, {"name": name, "topic_id": topic_id})]
        records += [("ConfigRecord", 0, {"resource_type": TOPIC_RESOURCE, "resource_name": name,
                                         "name": key, "value": value})
                    for key, value in configs.items()]
        records += [self._partition(topic_id, p, leader_epoch) for p in range(num_partitions)]
        return self._write(records)

    def create_replicated_topic(self, name: str, topic_id: str,
                                partitions: list[tuple[list[int], int, list[int]]],
                                configs: Mapping[str, str],
                                directories: Mapping[int, str]) -> int:
        """``ReplicationControlManager#createTopic`` for ``kafkatx serve --brokers N``: one
        PartitionRecord per (replicas, leader, ISR), each replica's log dir id in
        ``directories``; one batch (atomic)."""
        records: list[Rec] = [("TopicRecord", 0, {"name": name, "topic_id": topic_id})]
        records += [("ConfigRecord", 0, {"resource_type": TOPIC_RESOURCE, "resource_name": name,
                                         "name": key, "value": value})
                    for key, value in configs.items()]
        return self._write(records + self._replicated(topic_id, 0, partitions, directories))

    def create_replicated_partitions(self, topic_id: str, first: int,
                                     partitions: list[tuple[list[int], int, list[int]]],
                                     directories: Mapping[int, str]) -> int:
        """``ReplicationControlManager#createPartitions`` for ``--brokers N``: partitions
        ``first``.. as (replicas, leader, ISR), one batch."""
        return self._write(self._replicated(topic_id, first, partitions, directories))

    @staticmethod
    def _replicated(topic_id: str, first: int, partitions: list[tuple[list[int], int, list[int]]],
                    directories: Mapping[int, str]) -> list[Rec]:
        return [partition_record(topic_id, first + i, Partition(
            replicas=tuple(replicas), isr=tuple(isr), removing_replicas=(), adding_replicas=(),
            leader=leader, leader_recovery_state=0, leader_epoch=0, partition_epoch=0,
            directories=tuple(directories.get(r, "") for r in replicas), elr=(),
            last_known_elr=())) for i, (replicas, leader, isr) in enumerate(partitions)]

    def change_partition(self, topic_id: str, partition: int, *, leader: int | None = None,
                         isr: list[int] | None = None) -> int:
        """``PartitionChangeBuilder#build``: a PartitionChangeRecord with the new leader (which
        bumps the leader epoch) and/or ISR; fields left out are unchanged."""
        data: dict[str, object] = {"partition_id": partition, "topic_id": topic_id}
        if leader is not None:
            data["leader"] = leader
        if isr is not None:
            data["isr"] = list(isr)
        return self._write([("PartitionChangeRecord", 0, data)])

    def create_partitions(self, topic_id: str, first: int, count: int, *,
                          leader_epoch: int = 0) -> int:
        return self._write([self._partition(topic_id, p, leader_epoch)
                            for p in range(first, count)])

    def delete_topic(self, topic_id: str) -> int:
        return self._write([("RemoveTopicRecord", 0, {"topic_id": topic_id})])

    # -- configs --------------------------------------------------------------------------------

    def alter_configs(self, resource_type: int, resource_name: str, before: Mapping[str, str],
                      after: Mapping[str, str], named: Iterable[str]) -> int:
        """The ConfigRecords of a change from ``before`` to ``after``: each key the request
        ``named`` (in its order) whose value changed (or any, for a BROKER resource), then a
        null value for each other key ``after`` lacks (AlterConfigs' implicit deletions)."""
        records: list[Rec] = []
        named = list(dict.fromkeys(named))

        def record(key: str, value: str | None) -> Rec:
            return ("ConfigRecord", 0, {"resource_type": resource_type,
                                        "resource_name": resource_name, "name": key,
                                        "value": value})

        for key in named:
            if before.get(key) != after.get(key) or resource_type == BROKER_RESOURCE:
                records.append(record(key, after.get(key)))
        records += [record(key, None) for key in before if key not in after and key not in named]
        return self._write(records)

    # -- producer ids -----------------------------------------------------------------------------

    def allocate_producer_ids(self, first_producer_id: int) -> int:
        """``ProducerIdControlManager#generateNextProducerId`` for the block starting at
        ``first_producer_id``."""
        return self._write([("ProducerIdsRecord", 0, {
            "broker_id": self.node_id, "broker_epoch": self.broker_epoch,
            "next_producer_id": first_producer_id + PRODUCER_ID_BLOCK_SIZE})])

