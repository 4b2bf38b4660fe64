"""What `kafkatx dump` keeps: its producer, epoch, offset and transactional-id filters."""

from __future__ import annotations

from kafkatx.lazy_dataclass import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class DumpFilter:
    """Which batches ``dump`` shows: producers, epoch, offsets, transactional id."""

    producer_ids: frozenset[int] | None = None
    producer_epoch: int | None = None
    from_offset: int | None = None
    to_offset: int | None = None
    transactional_id: str | None = None

    def offsets_overlap(self, first: int, last: int) -> bool:
        if self.from_offset is not None and last < self.from_offset:
            return False
        return not (self.to_offset is not None and first > self.to_offset)

    def producer_matches(self, producer_id: int, producer_epoch: int | None = None) -> bool:
        if self.producer_ids is not None and producer_id not in self.producer_ids:
            return False
        return not (self.producer_epoch is not None and producer_epoch is not None
                    and producer_epoch != self.producer_epoch)

    @property
    def filters_producers(self) -> bool:
        return self.producer_ids is not None or self.producer_epoch is not None

    @property
    def selects(self) -> bool:
        """Any filter given: only items that carry what it selects on are written."""
        return (self.filters_producers or self.transactional_id is not None
                or self.from_offset is not None or self.to_offset is not None)
