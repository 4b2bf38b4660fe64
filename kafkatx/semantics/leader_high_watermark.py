"""When a partition's high watermark is its leader's log end offset, whatever a copy's
checkpoint says.

Mirrors ``Partition#maybeIncrementLeaderHW`` (run after every append to the leader, and by
``Partition#makeLeader``): the new HW is the leader's log end offset, lowered to the log end of
every remote replica that is in the maximal ISR or caught up and eligible to join it, and not
moved at all while the ISR is smaller than min(replication factor, ``min.insync.replicas``)
(``#isUnderMinIsr``). A partition whose only replica is its leader has no remote replica and a
minimum ISR of one, so its HW is the leader's log end offset after every append: on the running
broker, and again as soon as a restarted broker leads it. ``replication-offset-checkpoint`` only
catches up every ``replica.high.watermark.checkpoint.interval.ms`` (and at a clean shutdown), so
a copy of such a partition taken from a running (or killed) broker has its HW in the log, not in
that file. With other replicas the HW depends on their fetch positions, which no file records:
the checkpoint is all a copy knows.
"""

from __future__ import annotations

from kafkatx.semantics.cluster_metadata import Partition


def high_watermark_is_log_end(registration: Partition, node_id: int) -> bool:
    """Whether ``node_id`` leads the partition as its only replica (``PartitionRegistration``):
    then its HW is its log end offset."""
    return registration.leader == node_id and registration.replicas == (node_id,)
