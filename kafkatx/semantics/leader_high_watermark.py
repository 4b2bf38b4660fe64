"""When a partition's high watermark is its leader's log end offset, whatever a copy's
checkpoint says.

Mirrors ``Partition#maybeIncrementLeaderHW`` (run after every append to the leader, and by
``Partition#makeLeader``): the new HW is the leader's log end offset, lowered to the log end of
every remote replica that is in the maximal ISR or caught up and eligible to join it, and not
moved at all while the ISR is smaller than min(replication factor, ``min.insync.replicas``)
(``#isUnderMinIsr``). A partition whose only replica is its leader has no remote replica and a
minimum ISR of one, so its HW is the leader's log end offset after every append: on the running
broker, and again as soon as a restarted broker leads it. So has a leader whose ISR is itself
alone while its minimum ISR is one (``min.insync.replicas`` 1): its followers are out of the ISR
(stopped, or behind by more than ``replica.lag.time.max.ms``), so their fetch positions do not
hold the HW (a real 3-broker cluster's leader after its follower's controlled shutdown, then
killed: ``tests/realkafka/test_cluster_faults.py``). ``replication-offset-checkpoint`` only
catches up every ``replica.high.watermark.checkpoint.interval.ms`` (and at a clean shutdown), so
a copy of such a partition taken from a running (or killed) broker has its HW in the log, not in
that file. With followers in the ISR, or an ISR below its minimum (the HW then stays where it
was), the HW depends on what no file records: the checkpoint is all a copy knows.
"""

from __future__ import annotations

from kafkatx.semantics.cluster_metadata import Partition


def high_watermark_is_log_end(registration: Partition, node_id: int,
                              min_insync_replicas: int = 1) -> bool:
    """Whether ``node_id`` leads the partition (``PartitionRegistration``) with an ISR of
    itself alone and a minimum ISR of one (``Partition#effectiveMinIsr``: the topic's
    ``min.insync.replicas``, at most its replica count): then its HW is its log end offset."""
    return (registration.leader == node_id and registration.isr == (node_id,)
            and min(min_insync_replicas, len(registration.replicas)) <= 1)
