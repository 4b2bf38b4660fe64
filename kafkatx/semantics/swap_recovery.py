"""What a partition load does with the leftovers of an interrupted segment deletion, clean or split.

Mirrors the first passes of ``LogLoader#load``: ``removeTempFilesAndCollectSwapFiles`` removes
``.deleted`` files (not KRaft's ``.checkpoint.deleted``) and ``.cleaned`` files, and the
``.swap`` files at or above the lowest ``.cleaned`` offset (KAFKA-6264: an incomplete split);
then every other file whose offset lies in the remaining ``.swap`` segments' range
[lowest base offset, highest ``LogSegment#readNextOffset``) is removed and the ``.swap`` files are
renamed to their plain names. The broker executes the plan
(:mod:`kafkatx.broker.logs.segment_swap`);
the analysis reports it on evidence it never changes (:mod:`kafkatx.analysis.checks.leftovers`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

CLEANED_SUFFIX = ".cleaned"  # LogFileUtils.CLEANED_FILE_SUFFIX
SWAP_SUFFIX = ".swap"  # LogFileUtils.SWAP_FILE_SUFFIX
DELETED_SUFFIX = ".deleted"  # LogFileUtils.DELETED_FILE_SUFFIX
SNAPSHOT_DELETE_SUFFIX = ".checkpoint.deleted"  # Snapshots.DELETE_SUFFIX (KRaft snapshots)


def offset_from_file(name: str) -> int | None:
    """``LogFileUtils.offsetFromFile``: the number before the first '.' (None if there is none)."""
    head = name.split(".", 1)[0]
    return int(head) if head.isdigit() else None


class SwapRecoveryPlan(NamedTuple):
    """File names a load removes or renames, by reason, in the order ``LogLoader`` acts."""

    deleted_leftovers: tuple[str, ...] = ()  # ``.deleted``: an interrupted asynchronous delete
    incomplete_swaps: tuple[str, ...] = ()  # ``.swap`` at/above the lowest ``.cleaned`` offset
    cleaned: tuple[str, ...] = ()  # ``.cleaned``: a clean or split that never reached its swap
    replaced: tuple[str, ...] = ()  # live files inside the swap range
    swaps: tuple[str, ...] = ()  # ``.swap`` files renamed to their plain names
    swap_range: tuple[int, int] | None = None  # [first offset, next offset) the swaps cover

    @property
    def empty(self) -> bool:
        return not (self.deleted_leftovers or self.incomplete_swaps or self.cleaned
                    or self.replaced or self.swaps)


def plan_swap_recovery(names: Iterable[str], next_offset: Callable[[str], int]
                       ) -> SwapRecoveryPlan:
    """``LogLoader#removeTempFilesAndCollectSwapFiles`` and the swap passes of ``#load`` over
    the regular file names of one partition dir; ``next_offset(name)`` is
    ``LogSegment#readNextOffset`` of the ``.log.swap`` file ``name``."""
    files = sorted(names)
    deleted = [n for n in files if n.endswith(DELETED_SUFFIX)
               and not n.endswith(SNAPSHOT_DELETE_SUFFIX)]
    cleaned = [n for n in files if n.endswith(CLEANED_SUFFIX)]
    swaps = [n for n in files if n.endswith(SWAP_SUFFIX)]
    min_cleaned = min((offset_from_file(n) or 0 for n in cleaned), default=None)
    incomplete = [n for n in swaps
                  if min_cleaned is not None and (offset_from_file(n) or 0) >= min_cleaned]
    valid = [n for n in swaps if n not in incomplete]
    ranges = []
    for n in valid:
        plain = n[:-len(SWAP_SUFFIX)]
        base = offset_from_file(plain)
        if plain.endswith(".log") and base is not None:
            ranges.append((base, next_offset(n)))
    replaced: list[str] = []
    swap_range = None
    if ranges:
        swap_range = (min(r[0] for r in ranges), max(r[1] for r in ranges))
        gone = set(deleted) | set(cleaned) | set(incomplete)
        for n in files:
            offset = offset_from_file(n)
            if (n not in gone and not n.endswith(SWAP_SUFFIX) and offset is not None
                    and swap_range[0] <= offset < swap_range[1]):
                replaced.append(n)
    return SwapRecoveryPlan(deleted_leftovers=tuple(deleted), incomplete_swaps=tuple(incomplete),
                            cleaned=tuple(cleaned), replaced=tuple(replaced), swaps=tuple(valid),
                            swap_range=swap_range)
