"""What a partition load does with leftovers, by file name: ``LogLoader#load``'s first passes.

The cases follow ``LogLoaderTest#testRecoveryAfterCrashDuringSplitPhase1..4`` (a segment
0..199 split into new segments at 0 and 100) and ``LocalLog#replaceSegments`` for a clean.
"""

from __future__ import annotations

import pytest

from kafkatx.semantics.swap_recovery import plan_swap_recovery

SEGMENT = (".log", ".index", ".timeindex", ".txnindex")


def files(base: int, suffix: str = "") -> list[str]:
    return [f"{base:020d}{kind}{suffix}" for kind in SEGMENT]


def next_offsets(ends: dict[int, int]):  # type: ignore[no-untyped-def]
    def next_offset(name: str) -> int:
        return ends[int(name.split(".", 1)[0])]
    return next_offset


def test_split_phase_1_every_new_segment_cleaned_is_undone() -> None:
    """``testRecoveryAfterCrashDuringSplitPhase1``: only ``.cleaned`` files; they are deleted,
    the live segments stay."""
    names = files(0) + files(200) + files(0, ".cleaned") + files(100, ".cleaned")
    plan = plan_swap_recovery(names, next_offsets({}))
    assert set(plan.cleaned) == set(files(0, ".cleaned") + files(100, ".cleaned"))
    assert plan.swaps == plan.replaced == plan.incomplete_swaps == ()
    assert plan.swap_range is None


def test_split_phase_2_a_swap_above_a_cleaned_file_is_an_incomplete_split() -> None:
    """``testRecoveryAfterCrashDuringSplitPhase2`` (KAFKA-6264): the last new segment is
    ``.swap``, an earlier one still ``.cleaned``: the swap is deleted, nothing is replaced."""
    names = files(0) + files(0, ".cleaned") + files(100, ".swap")
    plan = plan_swap_recovery(names, next_offsets({100: 200}))
    assert set(plan.incomplete_swaps) == set(files(100, ".swap"))
    assert plan.swaps == plan.replaced == ()


def test_split_phase_3_every_new_segment_swapped_replaces_the_old_one() -> None:
    """``testRecoveryAfterCrashDuringSplitPhase3``: all new segments ``.swap`` and the old one
    still live: files in [0, 200) are deleted (its producer snapshot too), the swaps renamed;
    the next segment (base 200) is kept."""
    names = [*files(0), "00000000000000000150.snapshot", *files(200), *files(0, ".swap"),
             *files(100, ".swap")]
    plan = plan_swap_recovery(names, next_offsets({0: 100, 100: 200}))
    assert plan.swap_range == (0, 200)
    assert set(plan.replaced) == set([*files(0), "00000000000000000150.snapshot"])
    assert set(plan.swaps) == set(files(0, ".swap") + files(100, ".swap"))


def test_split_phase_4_old_segment_already_deleted() -> None:
    """``testRecoveryAfterCrashDuringSplitPhase4``: the old segment was renamed ``.deleted``:
    it is removed as a stray deletion, the swaps renamed, nothing else replaced."""
    names = files(0, ".deleted") + files(0, ".swap") + files(100, ".swap")
    plan = plan_swap_recovery(names, next_offsets({0: 100, 100: 200}))
    assert set(plan.deleted_leftovers) == set(files(0, ".deleted"))
    assert plan.replaced == ()
    assert len(plan.swaps) == 8


def test_kraft_snapshots_marked_for_deletion_are_left_to_the_metadata_log() -> None:
    """``LogLoader#removeTempFilesAndCollectSwapFiles`` skips ``.checkpoint.deleted``
    (``KafkaMetadataLog`` handles them)."""
    names = ["00000000000000000100-0000000001.checkpoint.deleted", *files(5, ".deleted")]
    plan = plan_swap_recovery(names, next_offsets({}))
    assert set(plan.deleted_leftovers) == set(files(5, ".deleted"))


@pytest.mark.parametrize("names", [files(0), [*files(0), "leader-epoch-checkpoint"], []])
def test_a_dir_without_leftovers_needs_nothing(names: list[str]) -> None:
    """No transient suffix: ``LogLoader#load`` renames and deletes nothing."""
    assert plan_swap_recovery(names, next_offsets({})).empty
