"""Writing a log dir's small files the way Kafka does: ``<name>.tmp``, fsync, atomic rename.

Mirrors ``CheckpointFile#write`` / ``Utils#atomicMoveWithFallback``.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``: write ``path.tmp``, fsync it, rename over ``path``."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    """``Utils#flushDir``: make a rename durable (ignored where directories cannot be opened)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def create_if_missing(path: Path) -> None:
    """``CheckpointFile``'s constructor: an empty file when there is none yet."""
    with contextlib.suppress(FileExistsError), open(path, "xb"):
        pass
