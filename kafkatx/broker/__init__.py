"""``kafkatx serve``: an embedded single-node Kafka-protocol broker writing real Kafka log dirs.

Layers: ``server`` (asyncio connections, framing, dispatch) -> ``protocol`` (kio plumbing) ->
``handlers`` (one module per API group) -> the coordinators (``txn_coordinator`` with
``txn_metadata``; ``group_coordinator`` with ``groups`` and ``group_log``; both append through
``coordinator_log``) and ``log_manager`` / ``partition_log`` (the log dir, through
``kafkatx.storage``, ``kafkatx.formats`` and ``kafkatx.semantics``).
"""
