"""Producer ids for InitProducerId: Kafka's blocks of 1000 handed out in order.

Mirrors ``RPCProducerIdManager`` / ``ProducerIdControlManager``: ids come from blocks of
``ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE`` (1000) starting at 0; the controller hands out each
block once (a ProducerIdsRecord in the metadata log: ``on_block`` is told its first id), so a
restarted broker gets a fresh block: its first id is the first of the block after the last one
allocated and above every id already used.
"""

from __future__ import annotations

from collections.abc import Callable

BLOCK_SIZE = 1000  # ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE


class ProducerIdManager:
    def __init__(self, highest_used: int = -1, *, next_block: int = 0,
                 on_block: Callable[[int], object] | None = None) -> None:
        """``next_block``: the first id no block allocated so far covers (the metadata log's
        next producer id)."""
        used = 0 if highest_used < 0 else (highest_used // BLOCK_SIZE + 1) * BLOCK_SIZE
        self.next_id = max(used, next_block)
        self.block_end = self.next_id  # no block of this broker yet
        self.on_block = on_block

    def generate(self) -> int:
        pid = self.next_id
        if pid >= self.block_end:
            first = pid // BLOCK_SIZE * BLOCK_SIZE
            self.block_end = first + BLOCK_SIZE
            if self.on_block is not None:
                self.on_block(first)
        self.next_id += 1
        return pid

    def observe(self, producer_id: int) -> None:
        """Never hand out an id at or below one seen elsewhere (e.g. in a loaded log)."""
        if producer_id >= self.next_id:
            self.next_id = (producer_id // BLOCK_SIZE + 1) * BLOCK_SIZE
