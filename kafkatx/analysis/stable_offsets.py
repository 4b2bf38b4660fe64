"""A partition's last stable offset from its replayed producer state and high watermark
(``UnifiedLog#lastStableOffset``, ``UnifiedLog#updateHighWatermark``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from kafkatx.semantics.producer_state import ProducerStateManager, last_stable_offset


class StableOffsets(NamedTuple):
    """The partition's LSO and what decides it (``UnifiedLog#lastStableOffset``)."""

    high_watermark: int | None  # the broker's: the checkpoint's, clamped to [log start, LEO]
    last_stable_offset: int
    lso_source: str  # open_transaction | unreplicated_transaction | high_watermark | log_end_offset
    checkpoint_high_watermark: int | None = None  # as replication-offset-checkpoint says it
    # The first offset of the transaction holding the LSO (below the LSO when it began under
    # the log start offset); None when the HW decides the LSO.
    holder_first_offset: int | None = None

    def held_by(self, first_offset: int) -> bool:
        """Whether the transaction starting at ``first_offset`` holds the LSO."""
        return self.holder_first_offset is not None and first_offset == self.holder_first_offset


def clamp_high_watermark(high_watermark: int, log_start_offset: int, log_end_offset: int) -> int:
    """``UnifiedLog#updateHighWatermark``: raised to the log start, lowered to the log end."""
    if high_watermark < log_start_offset:
        return log_start_offset
    if high_watermark >= log_end_offset:
        return log_end_offset
    return high_watermark


def stable_offsets(state: ProducerStateManager, log_end_offset: int,
                   high_watermark: int | None, log_start_offset: int = 0,
                   offset_metadata: Callable[[int], int] | None = None) -> StableOffsets:
    """LSO = min(first unstable offset, HW); the HW is the checkpointed one (clamped as the
    broker clamps it when it loads the partition), else the LEO.

    ``state`` is advanced to the HW (``onHighWatermarkUpdated``): completed transactions whose
    marker is at or above it stay unstable, as in Kafka. A first unstable offset below the log
    start offset counts as the log start (``UnifiedLog#maybeIncrementFirstUnstableOffset``);
    ``offset_metadata`` (the restart view) is that method's ``maybeConvertToOffsetMetadata``:
    the offset becomes the base offset of the batch holding it.
    """
    hw = (log_end_offset if high_watermark is None
          else clamp_high_watermark(high_watermark, log_start_offset, log_end_offset))
    state.on_high_watermark_updated(hw)
    holder = state.first_unstable_offset()
    first_unstable = None if holder is None else max(holder, log_start_offset)
    if first_unstable is not None and offset_metadata is not None:
        first_unstable = offset_metadata(first_unstable)
    lso = last_stable_offset(first_unstable, hw)
    if first_unstable is not None and first_unstable < hw:
        source = ("open_transaction" if state.first_undecided_offset() == holder
                  else "unreplicated_transaction")
    else:
        source = "high_watermark" if high_watermark is not None else "log_end_offset"
        holder = None
    return StableOffsets(high_watermark=None if high_watermark is None else hw,
                         last_stable_offset=lso, lso_source=source,
                         checkpoint_high_watermark=high_watermark, holder_first_offset=holder)
