"""The names of Kafka's internal topics, defined once (``org.apache.kafka.common.internals.Topic``).

Every room that names them (the formats of their records, the log-dir layout, the analysis, the
broker, the CLI) imports them from here.
"""

from __future__ import annotations

GROUP_METADATA_TOPIC = "__consumer_offsets"  # Topic.GROUP_METADATA_TOPIC_NAME
TRANSACTION_STATE_TOPIC = "__transaction_state"  # Topic.TRANSACTION_STATE_TOPIC_NAME
METADATA_TOPIC = "__cluster_metadata"  # Topic.CLUSTER_METADATA_TOPIC_NAME
# The internal topics clients see in Metadata (``Topic.INTERNAL_TOPICS`` less the share-group
# state topic, which kafkatx serve does not create).
INTERNAL_TOPICS = frozenset({GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC})
