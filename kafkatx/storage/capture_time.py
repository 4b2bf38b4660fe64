"""When the evidence was captured, as its files say: the newest modification time of the live
segments and checkpoint files (a copy made with ``cp -p``, ``rsync -a`` or ``tar`` keeps them:
the broker's last write before the copy). Read with ``stat`` only: nothing is opened."""

from __future__ import annotations

import os
from pathlib import Path

from kafkatx.storage.discovery import Discovery
from kafkatx.storage.filesystems import is_uri


def _files(disc: Discovery) -> list[Path]:
    files: list[Path] = []
    for pdir in disc.all_partitions():
        files += [s.log for s in pdir.segments if s.log is not None]
        files += [path for _, path in pdir.snapshots]
    for log_dir in disc.log_dirs:
        files += [p for p in Path(log_dir.path).glob("*checkpoint") if p.is_file()]
    return files


def newest_mtime_ms(disc: Discovery, paths: list[str]) -> int | None:
    """The newest mtime (epoch ms) among the evidence's files; None for remote paths or when
    no file can be stat'ed."""
    if any(is_uri(p) for p in paths):
        return None
    newest = None
    for path in _files(disc):
        try:
            ms = os.stat(path).st_mtime_ns // 1_000_000
        except OSError:
            continue
        newest = ms if newest is None else max(newest, ms)
    return newest
