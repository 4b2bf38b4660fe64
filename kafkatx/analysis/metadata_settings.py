"""Settings of the cluster the evidence's KRaft metadata log records, for the analysis.

The image is ``MetadataLoader``'s (newest snapshot plus the log tail) of the most complete
metadata log (highest log end offset) among the evidence of the cluster concerned: the one the
given topic's directories belong to (``cluster.id`` of their ``meta.properties``), or, when
they name none, the only cluster the evidence holds. Local copies only.

- a topic's partition count (``PartitionRecord``s; for ``__transaction_state`` and
  ``__consumer_offsets`` without any, ``transaction.state.log.num.partitions`` /
  ``offsets.topic.num.partitions`` from the broker ConfigRecords);
- ``transaction.max.timeout.ms`` from the broker ConfigRecords (``TransactionStateManager``
  refuses longer timeouts, so no transaction of the cluster runs longer): the default of the
  find-hanging threshold (``--max-transaction-timeout-ms``).

Kafka reads these two broker settings from ``server.properties`` and refuses to change them
dynamically, so a ConfigRecord holds them only when a tool or a migration wrote one; without one
the analysis keeps its defaults.
"""

from __future__ import annotations

from pathlib import Path

from kafkatx.errors import KafkatxError
from kafkatx.formats.internal_topics import GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC
from kafkatx.semantics.cluster_metadata import ClusterImage
from kafkatx.storage.discovery import Discovery, cluster_id_of

DEFAULT_MAX_TRANSACTION_TIMEOUT_MS = 900_000  # kafka-transactions.sh find-hanging's default
MAX_TIMEOUT_CONFIG = "transaction.max.timeout.ms"  # TransactionLogConfig
PARTITION_COUNT_CONFIGS = {TRANSACTION_STATE_TOPIC: "transaction.state.log.num.partitions",
                           GROUP_METADATA_TOPIC: "offsets.topic.num.partitions"}


def metadata_image(evidence: Discovery, topic: str | None = None) -> ClusterImage | None:
    """The image of the most complete metadata log of ``topic``'s cluster (see above)."""
    from kafkatx.analysis.cluster_view import build_cluster_view
    from kafkatx.formats.internal_topics import METADATA_TOPIC
    from kafkatx.storage.metadata_log import open_metadata_dir

    partitions = evidence.all_partitions()
    mine = {cluster_id_of(p) for p in partitions if topic is None or p.topic == topic}
    metas = [p for p in partitions if p.topic == METADATA_TOPIC and "://" not in str(p.path)]
    named = mine - {None}
    if named and topic is not None:
        metas = [p for p in metas if cluster_id_of(p) in named]
    elif len({cluster_id_of(p) for p in metas} - {None}) > 1:
        return None
    views = []
    for p in metas:
        try:
            views.append(build_cluster_view(open_metadata_dir(Path(str(p.path)))))
        except (KafkatxError, OSError):
            continue  # inspect's cluster section reports what is wrong with it
    if not views:
        return None
    return max(views, key=lambda v: v.log_end_offset or 0).image


def _int_config(image: ClusterImage, name: str) -> tuple[int, str] | None:
    found = image.broker_config(name)
    if found is None:
        return None
    try:
        return int(found[0].strip()), found[1]
    except ValueError:
        return None


def metadata_partition_count(evidence: Discovery, topic: str) -> int | None:
    """The partitions of ``topic`` in the metadata image, else its broker config (internal
    topics); None without a metadata log that says."""
    image = metadata_image(evidence, topic)
    if image is None:
        return None
    count = next((len(t.partitions) for t in image.topics.values()
                  if t.name == topic and t.partitions), None)
    if count is None and topic in PARTITION_COUNT_CONFIGS:
        found = _int_config(image, PARTITION_COUNT_CONFIGS[topic])
        count = found[0] if found is not None and found[0] > 0 else None
    return count


def max_transaction_timeout(evidence: Discovery) -> tuple[int, str]:
    """The find-hanging threshold's default: ``transaction.max.timeout.ms`` from the metadata
    log when it has one, else find-hanging's 15 minutes; and where it came from."""
    image = metadata_image(evidence)
    found = _int_config(image, MAX_TIMEOUT_CONFIG) if image is not None else None
    if found is not None and found[0] > 0:
        return found[0], f"transaction.max.timeout.ms ({found[1]} config in the metadata log)"
    return DEFAULT_MAX_TRANSACTION_TIMEOUT_MS, "--max-transaction-timeout-ms"
