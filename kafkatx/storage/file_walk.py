"""Which files and partition directories lie under the paths a command is given, for the
commands that take files one by one (``dump``) rather than a discovered log dir.

Only lists directories and tests paths (read-only); what each file holds is the analysis's
business (:mod:`kafkatx.analysis.dump`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from kafkatx.storage.layout import parse_partition_dir


def walk_files(paths: Iterable[str], keep: Callable[[Path], bool]) -> list[Path]:
    """Files given, plus every file under directories given that ``keep`` accepts (sorted,
    recursive)."""
    out: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            for root, dirs, files in os.walk(p):
                dirs.sort()
                for name in sorted(files):
                    child = Path(root) / name
                    if keep(child):
                        out.append(child)
        else:
            out.append(p)
    return out


def present(path: Path) -> bool:
    """Something (a file, a dir) is at ``path``."""
    return path.exists()


def topic_partition_dirs(paths: Iterable[str], topic: str) -> list[Path]:
    """``<topic>-N`` partition dirs among, inside, or beside the given paths."""
    found: set[Path] = set()
    for raw in paths:
        p = Path(raw)
        candidates = [p, p.parent, p.parent.parent] if p.exists() else []
        for base in candidates:
            if not base.is_dir():
                continue
            for child in [base, *sorted(base.iterdir())]:
                parsed = parse_partition_dir(child.name)
                if child.is_dir() and parsed and parsed.topic == topic:
                    found.add(child.resolve())
    return sorted(found)


def segment_files(partition_dir: Path) -> list[Path]:
    """The ``.log`` segments of a partition dir, in offset order."""
    return sorted(partition_dir.glob("*.log"))
