"""Producer ids for InitProducerId: Kafka's blocks of 1000 handed out in order.

Mirrors ``RPCProducerIdManager`` / ``ProducerIdControlManager``: ids come from blocks of
``ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE`` (1000) starting at 0, and a restarted broker gets a
fresh block, so its first id is the next multiple of 1000 above every id already used.
"""

from __future__ import annotations

BLOCK_SIZE = 1000  # ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE


class ProducerIdManager:
    def __init__(self, highest_used: int = -1) -> None:
        self.next_id = 0 if highest_used < 0 else (highest_used // BLOCK_SIZE + 1) * BLOCK_SIZE

    def generate(self) -> int:
        pid = self.next_id
        self.next_id += 1
        return pid

    def observe(self, producer_id: int) -> None:
        """Never hand out an id at or below one seen elsewhere (e.g. in a loaded log)."""
        if producer_id >= self.next_id:
            self.next_id = (producer_id // BLOCK_SIZE + 1) * BLOCK_SIZE
