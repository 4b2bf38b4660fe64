"""Settings of the cluster the evidence's KRaft metadata log records, for the analysis.

The image is ``MetadataLoader``'s (newest snapshot plus the log tail) of the most complete
metadata log (highest log end offset) among the evidence of the cluster concerned: the one the
given topic's directories belong to (``cluster.id`` of their ``meta.properties``), or, when
they name none, the only cluster the evidence holds. Local copies only.

- a topic's partition count (``PartitionRecord``s; for ``__transaction_state`` and
  ``__consumer_offsets`` without any, ``transaction.state.log.num.partitions`` /
  ``offsets.topic.num.partitions`` from the broker ConfigRecords);
- the partitions whose HW is their leader's log end offset on the broker whose log dir it is
  (the leader, and their only replica: ``kafkatx.semantics.leader_high_watermark``), from the
  metadata log in that log dir when it holds one (what that broker knew), else the cluster's;
- the partitions whose HW is their leader's log end offset on the broker whose log dir it is
  (the leader, and their only replica: ``kafkatx.semantics.leader_high_watermark``), from the
  metadata log in that log dir when it holds one (what that broker knew), else the cluster's;
- ``transaction.max.timeout.ms`` from the broker ConfigRecords (``TransactionStateManager``
  refuses longer timeouts, so no transaction of the cluster runs longer): the default of the
  find-hanging threshold (``--max-transaction-timeout-ms``).

Kafka reads these two broker settings from ``server.properties`` and refuses to change them
dynamically, so a ConfigRecord holds them only when a tool or a migration wrote one; without one
the analysis keeps its defaults.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kafkatx.errors import KafkatxError
from kafkatx.formats.internal_topics import GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC
from kafkatx.storage.discovery import Discovery, LogDir, PartitionDir, cluster_id_of, node_id_of

if TYPE_CHECKING:
    from kafkatx.analysis.cluster_view import ClusterView
    from kafkatx.semantics.cluster_metadata import ClusterImage

DEFAULT_MAX_TRANSACTION_TIMEOUT_MS = 900_000  # kafka-transactions.sh find-hanging's default
MAX_TIMEOUT_CONFIG = "transaction.max.timeout.ms"  # TransactionLogConfig
MIN_ISR_CONFIG = "min.insync.replicas"
PARTITION_COUNT_CONFIGS = {TRANSACTION_STATE_TOPIC: "transaction.state.log.num.partitions",
                           GROUP_METADATA_TOPIC: "offsets.topic.num.partitions"}


def metadata_image(evidence: Discovery, topic: str | None = None,
                   log_dir: LogDir | None = None) -> ClusterImage | None:
    """The image of the most complete metadata log of ``topic``'s cluster (see above); with
    ``log_dir``, of the metadata log in that log dir when it holds one."""
    from kafkatx.formats.internal_topics import METADATA_TOPIC

    partitions = evidence.all_partitions()
    mine = {cluster_id_of(p) for p in partitions if topic is None or p.topic == topic}
    metas = [p for p in partitions if p.topic == METADATA_TOPIC and "://" not in str(p.path)]
    own = [p for p in metas if log_dir is not None and p.log_dir is log_dir]
    named = mine - {None}
    if own:
        metas = own
    elif named and topic is not None:
        metas = [p for p in metas if cluster_id_of(p) in named]
    elif len({cluster_id_of(p) for p in metas} - {None}) > 1:
        return None
    views = [v for v in map(_view_of, metas) if v is not None]
    if not views:
        return None
    return max(views, key=lambda v: v.log_end_offset or 0).image


def _view_of(pdir: PartitionDir) -> ClusterView | None:
    """A metadata log dir's view (None: it does not read; inspect's cluster section reports
    what is wrong with it)."""
    from kafkatx.analysis.cluster_view import build_cluster_view
    from kafkatx.storage.metadata_log import open_metadata_dir

    try:
        return build_cluster_view(open_metadata_dir(Path(str(pdir.path))))
    except (KafkatxError, OSError):
        return None


def leader_log_ends(evidence: Discovery, log_dir: LogDir | None) -> frozenset[tuple[str, int]]:
    """(topic, partition) of every partition whose HW is its log end offset in ``log_dir``'s
    copy: its broker (``meta.properties`` ``node.id``) leads it with an ISR of itself alone and
    a minimum ISR of one in the metadata image (``kafkatx.semantics.leader_high_watermark``).
    Empty without a node id or a metadata log."""
    node_id = node_id_of(log_dir)
    image = None if node_id is None else metadata_image(evidence, log_dir=log_dir)
    if image is None or node_id is None:
        return frozenset()
    # imported only with a metadata image: a log dir without one never builds the image types
    from kafkatx.semantics.leader_high_watermark import high_watermark_is_log_end

    default = _int_config(image, MIN_ISR_CONFIG)
    return frozenset((t.name, pid) for t in image.topics.values()
                     for pid, part in t.partitions.items()
                     if high_watermark_is_log_end(part, node_id,
                                                  _min_isr(image, t.name, default)))


def _min_isr(image: ClusterImage, topic: str, default: tuple[int, str] | None) -> int:
    """The topic's ``min.insync.replicas``: its own config, else the brokers' (the metadata
    log's, else Kafka's default 1; a value in ``server.properties`` alone is not in the
    evidence)."""
    value = image.topic_configs(topic).get(MIN_ISR_CONFIG)
    try:
        return int(value.strip()) if value is not None else (default[0] if default else 1)
    except ValueError:
        return default[0] if default else 1


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
