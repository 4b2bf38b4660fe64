"""The records a metadata image writes itself as: the body of a KRaft snapshot.

Mirrors ``MetadataImage#write`` and the image parts it calls in order: ``FeaturesImage``
(``metadata.version`` first, then the other finalized features), ``ClusterImage``
(``BrokerRegistration#toRecord``), ``TopicsImage`` (``TopicImage#write``: the TopicRecord, then
``PartitionRegistration#toRecord`` per partition), ``ConfigurationsImage``, ``ClientQuotasImage``,
``ProducerIdsImage`` (broker id and epoch -1), ``AclsImage``, ``ScramImage`` (not kept: only who
and how) and ``DelegationTokensImage``. Record versions are those of a Kafka 4.0 node
(metadata.version 4.0-IV3): PartitionRecord v1 (v2 when a partition has ELRs),
RegisterBrokerRecord v3. Replaying the records gives the same image back.
"""

from __future__ import annotations

from typing import Any

from kafkatx.semantics.cluster_metadata import (
    METADATA_VERSION_FEATURE,
    ClusterImage,
    Partition,
)

Rec = tuple[str, int, dict[str, Any]]


def partition_record(topic_id: str, partition_id: int, p: Partition) -> Rec:
    """``PartitionRegistration#toRecord``."""
    data: dict[str, Any] = {
        "partition_id": partition_id, "topic_id": topic_id, "replicas": list(p.replicas),
        "isr": list(p.isr), "removing_replicas": list(p.removing_replicas),
        "adding_replicas": list(p.adding_replicas), "leader": p.leader,
        "leader_recovery_state": p.leader_recovery_state, "leader_epoch": p.leader_epoch,
        "partition_epoch": p.partition_epoch, "directories": list(p.directories)}
    if p.elr or p.last_known_elr:
        data["eligible_leader_replicas"] = list(p.elr)
        data["last_known_elr"] = list(p.last_known_elr)
        return ("PartitionRecord", 2, data)
    return ("PartitionRecord", 1, data)


def image_records(image: ClusterImage) -> list[Rec]:
    """``MetadataImage#write`` of ``image``."""
    out: list[Rec] = []
    features = image.features
    if METADATA_VERSION_FEATURE in features:
        out.append(("FeatureLevelRecord", 0, {"name": METADATA_VERSION_FEATURE,
                                              "feature_level": features[METADATA_VERSION_FEATURE]}))
    out += [("FeatureLevelRecord", 0, {"name": name, "feature_level": level})
            for name, level in sorted(features.items()) if name != METADATA_VERSION_FEATURE]
    for broker_id, b in sorted(image.brokers.items()):
        out.append(("RegisterBrokerRecord", 3, {
            "broker_id": broker_id, "incarnation_id": b.incarnation_id, "broker_epoch": b.epoch,
            "end_points": [dict(e) for e in b.endpoints],
            "features": [{"name": n, "min_supported_version": lo, "max_supported_version": hi}
                         for n, (lo, hi) in sorted(b.features.items())],
            "rack": b.rack, "fenced": b.fenced, "in_controlled_shutdown": b.in_controlled_shutdown,
            "log_dirs": list(b.log_dirs)}))
    for topic in sorted(image.topics.values(), key=lambda t: t.name):
        out.append(("TopicRecord", 0, {"name": topic.name, "topic_id": topic.topic_id}))
        out += [partition_record(topic.topic_id, pid, part)
                for pid, part in sorted(topic.partitions.items())]
    for (resource_type, resource_name), values in sorted(image.configs.items()):
        out += [("ConfigRecord", 0, {"resource_type": resource_type,
                                     "resource_name": resource_name, "name": key,
                                     "value": value})
                for key, value in sorted(values.items())]
    for entity, quotas in sorted(image.client_quotas.items(), key=lambda e: str(e[0])):
        out += [("ClientQuotaRecord", 0, {
            "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
            "key": key, "value": value, "remove": False}) for key, value in sorted(quotas.items())]
    if image.next_producer_id > 0:
        out.append(("ProducerIdsRecord", 0, {"broker_id": -1, "broker_epoch": -1,
                                             "next_producer_id": image.next_producer_id}))
    out += [("AccessControlEntryRecord", 0, dict(acl)) for _, acl in sorted(image.acls.items())]
    out += [("DelegationTokenRecord", 0, {k: v for k, v in token.items()})
            for _, token in sorted(image.delegation_tokens.items())]
    return out
