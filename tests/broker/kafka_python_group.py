"""kafka-python consumer-group steps that must survive a slow machine's rebalance."""

from __future__ import annotations

import time
from typing import Any

# How long the join and the commit may take. Each late heartbeat restarts the join; on a 2-core
# machine at load average ~10 (the whole suite beside other work) one join took over 20 s.
JOIN_DEADLINE_S = 60.0


def subscribed_metadata(consumer: Any) -> Any:
    """``consumer`` once it has its subscribed topics' metadata, fetched before its first poll
    so that the first join's assignment already covers them. Joined before the metadata came,
    kafka-python 3.0.12 rejoins once it comes; if a short poll gives up while that rejoin's
    SyncGroup is in flight, the leader's new assignment snapshot makes
    ``ConsumerCoordinator.need_rejoin`` false and ``join_group_async`` never awaits the join
    again: the member stays unassigned and sends no heartbeat (serve answered both syncs; ~1
    run in 20 here, in CI too)."""
    for topic in consumer.subscription() or ():
        consumer.partitions_for_topic(topic)
    return consumer


def commit_when_assigned(consumer: Any, offsets: dict[Any, Any],
                         deadline_s: float = JOIN_DEADLINE_S) -> None:
    """Poll until the consumer is assigned, then commit ``offsets``. A heartbeat a loaded
    machine sends late makes the coordinator rebalance (``GroupCoordinator`` expires the
    member); kafka-python then refuses the commit with RebalanceInProgressError and asks to
    poll and retry (``ConsumerCoordinator#commit_offsets_sync``), which this does."""
    from kafka.errors import RebalanceInProgressError

    subscribed_metadata(consumer)
    deadline = time.monotonic() + deadline_s
    while True:
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(timeout_ms=200)
        assert consumer.assignment(), "the consumer was never assigned a partition"
        try:
            consumer.commit(offsets)
            return
        except RebalanceInProgressError:
            if time.monotonic() > deadline:
                raise
            consumer.poll(timeout_ms=200)
