"""The cleaner's crash-safe segment swap and its recovery when a partition is loaded.

Mirrors ``LocalLog#replaceSegments`` (new segment files ``.cleaned`` -> ``.swap``, the old
segments' files renamed ``.deleted`` and removed, then ``.swap`` -> the plain names) and the
first passes of ``LogLoader#load`` (``removeTempFilesAndCollectSwapFiles``: ``.deleted`` and
``.cleaned`` files removed, ``.swap`` files at or above the lowest ``.cleaned`` offset removed;
then every file whose offset lies in the ``.swap`` segments' range is removed and the ``.swap``
files renamed). A crash before every new file is ``.swap`` so leaves the old segments; a crash
after it completes the swap.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from kafkatx.broker.batch_header import BatchFrameError, split_batches

CLEANED_SUFFIX = ".cleaned"  # LogFileUtils.CLEANED_FILE_SUFFIX
SWAP_SUFFIX = ".swap"  # LogFileUtils.SWAP_FILE_SUFFIX
DELETED_SUFFIX = ".deleted"  # LogFileUtils.DELETED_FILE_SUFFIX
SEGMENT_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex")


def offset_from_file(name: str) -> int | None:
    """``LogFileUtils.offsetFromFile``: the number before the first '.' (None if there is none)."""
    head = name.split(".", 1)[0]
    return int(head) if head.isdigit() else None


def _next_offset(log_file: Path, base_offset: int) -> int:
    """``LogSegment#readNextOffset`` of a segment file: its last batch's last offset + 1."""
    try:
        headers, _ = split_batches(log_file.read_bytes())
    except (BatchFrameError, OSError):
        return base_offset
    return headers[-1].last_offset + 1 if headers else base_offset


def recover_interrupted_swaps(directory: Path) -> list[str]:
    """Finish or undo an interrupted clean-and-swap in a partition directory; returns what was
    done, one line each."""
    done: list[str] = []
    files = sorted(p for p in directory.iterdir() if p.is_file())
    cleaned = [p for p in files if p.name.endswith(CLEANED_SUFFIX)]
    swaps = [p for p in files if p.name.endswith(SWAP_SUFFIX)]
    for p in files:
        if p.name.endswith(DELETED_SUFFIX):
            p.unlink(missing_ok=True)
            done.append(f"{p}: removed (left by an interrupted segment deletion)")
    min_cleaned = min((offset_from_file(p.name) or 0 for p in cleaned), default=None)
    valid = []
    for p in swaps:
        if min_cleaned is not None and (offset_from_file(p.name) or 0) >= min_cleaned:
            p.unlink(missing_ok=True)
            done.append(f"{p}: removed (an incomplete swap)")
        else:
            valid.append(p)
    for p in cleaned:
        p.unlink(missing_ok=True)
        done.append(f"{p}: removed (an interrupted clean)")
    ranges = []
    for p in valid:
        plain = p.name[:-len(SWAP_SUFFIX)]
        base = offset_from_file(plain)
        if plain.endswith(".log") and base is not None:
            ranges.append((base, _next_offset(p, base)))
    if ranges:
        low, high = min(r[0] for r in ranges), max(r[1] for r in ranges)
        for p in sorted(directory.iterdir()):
            offset = offset_from_file(p.name)
            if (p.is_file() and not p.name.endswith(SWAP_SUFFIX) and offset is not None
                    and low <= offset < high):
                p.unlink(missing_ok=True)
                done.append(f"{p}: removed (replaced by a cleaned segment)")
    for p in valid:
        os.replace(p, p.with_name(p.name[:-len(SWAP_SUFFIX)]))
        done.append(f"{p}: swapped in (a clean interrupted after its swap files were complete)")
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
