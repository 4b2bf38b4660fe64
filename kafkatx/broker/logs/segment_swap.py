"""The cleaner's crash-safe segment swap and its recovery when a partition is loaded.

Mirrors ``LocalLog#replaceSegments`` (new segment files ``.cleaned`` -> ``.swap``, the old
segments' files renamed ``.deleted`` and removed, then ``.swap`` -> the plain names) and executes
the first passes of ``LogLoader#load`` as :mod:`kafkatx.semantics.swap_recovery` plans them.
A crash before every new file is ``.swap`` so leaves the old segments; a crash after it
completes the swap.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from kafkatx.broker.logs.batch_header import BatchFrameError, split_batches
from kafkatx.semantics.swap_recovery import SWAP_SUFFIX, offset_from_file, plan_swap_recovery

SEGMENT_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex")


def _next_offset(log_file: Path, base_offset: int) -> int:
    """``LogSegment#readNextOffset`` of a segment file: its last batch's last offset + 1."""
    try:
        headers, _ = split_batches(log_file.read_bytes())
    except (BatchFrameError, OSError):
        return base_offset
    return headers[-1].last_offset + 1 if headers else base_offset


def recover_interrupted_swaps(directory: Path) -> list[str]:
    """Finish or undo an interrupted clean-and-swap in a partition directory
    (:func:`~kafkatx.semantics.swap_recovery.plan_swap_recovery`, executed); returns what was
    done, one line each."""
    names = [p.name for p in directory.iterdir() if p.is_file()]
    plan = plan_swap_recovery(
        names, lambda n: _next_offset(directory / n, offset_from_file(n) or 0))
    done: list[str] = []
    for names_of, why in ((plan.deleted_leftovers, "left by an interrupted segment deletion"),
                          (plan.incomplete_swaps, "an incomplete swap"),
                          (plan.cleaned, "an interrupted clean"),
                          (plan.replaced, "replaced by a cleaned segment")):
        for n in names_of:
            (directory / n).unlink(missing_ok=True)
            done.append(f"{directory / n}: removed ({why})")
    for n in plan.swaps:
        os.replace(directory / n, directory / n[:-len(SWAP_SUFFIX)])
        done.append(f"{directory / n}: swapped in (a clean interrupted after its swap files "
                    "were complete)")
    return done


def segment_files(directory: Path, base_offset: int, suffix: str = "") -> list[Path]:
    """The files of one segment that exist, with ``suffix`` appended to their names."""
    name = f"{base_offset:020d}"
    return [directory / f"{name}{kind}{suffix}" for kind in SEGMENT_SUFFIXES
            if (directory / f"{name}{kind}{suffix}").exists()]


def change_suffix(paths: Sequence[Path], old: str, new: str) -> list[Path]:
    """``LogSegment#changeFileSuffixes`` for a segment's files."""
    out = []
    for p in paths:
        target = p.with_name(p.name[:len(p.name) - len(old)] + new)
        os.replace(p, target)
        out.append(target)
    return out
