"""Leftovers of interrupted segment operations: interrupted_log_clean, segment_deletion_pending.

A partition dir copied from a broker that crashed (or was copied) in the middle of a log clean,
a segment split or an asynchronous segment delete holds ``.cleaned``, ``.swap`` or ``.deleted``
files. They are not the log; what the next load does with them
(``LogLoader#removeTempFilesAndCollectSwapFiles`` and the swap passes of ``LogLoader#load``) is
planned by :func:`kafkatx.semantics.swap_recovery.plan_swap_recovery`, the plan the broker
executes. The analysis reads the live segments, the log as it stands.
"""

from __future__ import annotations

from collections.abc import Iterator

from kafkatx.analysis.checks.context import PartitionContext
from kafkatx.analysis.findings import Finding
from kafkatx.semantics.swap_recovery import offset_from_file

MAX_NAMED = 6  # base offsets quoted in a message; the rest are counted


def check_partition(ctx: PartitionContext) -> Iterator[Finding]:
    plan = ctx.swap_recovery
    if plan is None or plan.empty:
        return
    if plan.cleaned or plan.incomplete_swaps:
        first = min(offset_from_file(n) or 0 for n in (*plan.cleaned, *plan.incomplete_swaps))
        extra = (f" and the .swap files of an incomplete split ({_bases(plan.incomplete_swaps)})"
                 if plan.incomplete_swaps else "")
        yield Finding(
            kind="interrupted_log_clean", offset=first,
            location=_path(ctx, (*plan.cleaned, *plan.incomplete_swaps)),
            message=f"a log clean or segment split stopped before its swap: .cleaned files "
                    f"({_bases(plan.cleaned)}){extra}; the next load deletes them and the live "
                    "segments, analyzed here, stay the log")
    if plan.swaps:
        low, high = plan.swap_range or (offset_from_file(plan.swaps[0]) or 0, 0)
        replaced = (f"deletes the live files with offsets in [{low}, {high}) "
                    f"({_bases(plan.replaced)})" if plan.replaced
                    else f"finds no live file in [{low}, {high}) to delete")
        yield Finding(
            kind="interrupted_log_clean", offset=low, location=_path(ctx, plan.swaps),
            message=f"a log clean or segment split stopped after its .swap files were complete "
                    f"({_bases(plan.swaps)}): the next load {replaced} and renames the .swap "
                    "files in; analyzed here is the log before that clean, and what the clean "
                    "removed (superseded keys, aborted data, expired markers and tombstones) "
                    "is gone after the restart")
    if plan.deleted_leftovers:
        yield Finding(
            kind="segment_deletion_pending",
            offset=min(offset_from_file(n) or 0 for n in plan.deleted_leftovers),
            location=_path(ctx, plan.deleted_leftovers),
            message=f"files renamed .deleted ({_bases(plan.deleted_leftovers)}): removed from "
                    "the log by retention, the cleaner or a truncation and waiting out "
                    "file.delete.delay.ms; not read here, and the next load deletes them")


def _bases(names: tuple[str, ...]) -> str:
    """``base offset(s) 0, 100`` for a segment's files (``+ N snapshot(s)`` for the rest)."""
    bases = sorted({offset_from_file(n) or 0 for n in names if ".snapshot" not in n})
    snaps = sum(".snapshot" in n for n in names)
    shown = ", ".join(str(b) for b in bases[:MAX_NAMED])
    more = f" and {len(bases) - MAX_NAMED} more" if len(bases) > MAX_NAMED else ""
    text = f"segment base offset{'s' if len(bases) != 1 else ''} {shown}{more}" if bases else ""
    if snaps:
        text += f"{' + ' if text else ''}{snaps} producer snapshot{'s' if snaps != 1 else ''}"
    return text


def _path(ctx: PartitionContext, names: tuple[str, ...]) -> str:
    """Where to look: the first ``.log`` file among ``names`` (else the first name)."""
    logs = [n for n in names if ".log" in n]
    return f"{ctx.path.rstrip('/')}/{(logs or list(names))[0]}"
