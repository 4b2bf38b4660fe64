"""Proof that a command left the evidence alone: snapshot a tree before, compare after.

A snapshot maps each relative path (``.`` for the root) to (sha256, size, mtime_ns); directories
are included with ``"<dir>"`` as digest and 0 as size, so a file created and removed again still
shows up through its directory's mtime. Access times are not compared (reading changes them).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

DIR = "<dir>"
Snapshot = dict[str, tuple[str, int, int]]


def _digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def snapshot_tree(root: str | os.PathLike[str]) -> Snapshot:
    """Every file and directory under ``root`` (symlinks recorded, not followed)."""
    top = os.fspath(root)
    out: Snapshot = {".": (DIR, 0, os.stat(top).st_mtime_ns)}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, top)
            st = os.lstat(full)
            if os.path.islink(full):
                out[rel] = ("-> " + os.readlink(full), 0, st.st_mtime_ns)
            elif name in dirnames:
                out[rel] = (DIR, 0, st.st_mtime_ns)
            else:
                out[rel] = (_digest(full), st.st_size, st.st_mtime_ns)
    return out


def diff_trees(before: Snapshot, after: Snapshot) -> list[str]:
    """Human-readable differences, one per line (empty when identical)."""
    lines = [f"added: {p}" for p in sorted(after.keys() - before.keys())]
    lines += [f"removed: {p}" for p in sorted(before.keys() - after.keys())]
    for p in sorted(before.keys() & after.keys()):
        if before[p] != after[p]:
            lines.append(f"changed: {p}: {before[p]} -> {after[p]}")
    return lines


def assert_unchanged(root: str | os.PathLike[str], before: Snapshot) -> None:
    """Fail with the list of differences if ``root`` no longer matches ``before``."""
    differences = diff_trees(before, snapshot_tree(root))
    assert not differences, f"{Path(root)} was modified:\n" + "\n".join(differences)
