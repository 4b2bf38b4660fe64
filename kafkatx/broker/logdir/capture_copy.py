"""``serve --from``: put a copy of a captured broker log dir where serve will write, leaving the
capture's bytes and mtimes as they are.

Files are copied (reflinked where the file system can share extents: ``FICLONE``, else
``copy_file_range``/``sendfile`` through ``shutil.copyfile``); the capture is only ever opened
for reading. Serve then loads the copy as Kafka loads a log dir it finds on disk
(``LogManager#loadLogs``): without a ``.kafka_cleanshutdown`` marker it recovers the copy,
never the capture.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
from pathlib import Path

from kafkatx.errors import FormatError, KafkatxError
from kafkatx.formats.checkpoints import read_meta_properties
from kafkatx.lazy_dataclass import dataclass

FICLONE = 0x40049409  # linux/fs.h: _IOW(0x94, 9, int)
SKIPPED = frozenset({".lock"})  # the capture's broker held it; serve takes its own


@dataclass(frozen=True, slots=True)
class CaptureCopy:
    files: int
    bytes: int
    reflinked: int
    node_id: int | None  # the capture's node.id/broker.id (meta.properties), if it has one


def check_capture(source: Path) -> None:
    """A one-line error unless ``source`` looks like one broker's log dir."""
    if not source.is_dir():
        raise KafkatxError(f"{source}: not a directory (give one broker's log dir)")
    names = {p.name for p in source.iterdir()}
    markers = {"meta.properties", "replication-offset-checkpoint",
               "recovery-point-offset-checkpoint", "log-start-offset-checkpoint"}
    if not names & markers:
        nested = sorted(p.name for p in source.iterdir()
                        if p.is_dir() and (p / "meta.properties").exists())
        hint = f" (it holds the log dirs {', '.join(nested)}: give one)" if nested else ""
        raise KafkatxError(f"{source}: not a broker log dir: no meta.properties or "
                           f"*-offset-checkpoint file{hint}")


def copy_capture(source: Path, target: Path) -> CaptureCopy:
    """Copy the log dir ``source`` into ``target`` (missing or empty)."""
    check_capture(source)
    if target.exists() and any(target.iterdir()):
        raise KafkatxError(f"{target}: not empty; --from copies the capture into a new or "
                           "empty --log-dir and never writes over one")
    if target.resolve() == source.resolve() or target.resolve().is_relative_to(source.resolve()):
        raise KafkatxError(f"{target}: inside the capture {source}; choose a --log-dir outside "
                           "it (the capture is never written)")
    files = size = reflinked = 0
    for root, dirs, names in os.walk(source):
        dirs.sort()
        rel = Path(root).relative_to(source)
        (target / rel).mkdir(parents=True, exist_ok=True)
        for name in sorted(names):
            if name in SKIPPED:
                continue
            src = Path(root) / name
            if not src.is_file():
                continue
            reflinked += _copy_file(src, target / rel / name)
            files += 1
            size += src.stat().st_size
    return CaptureCopy(files=files, bytes=size, reflinked=reflinked,
                       node_id=_node_id(source / "meta.properties"))


def _copy_file(src: Path, dst: Path) -> int:
    """1 when the copy shares the source's extents (a reflink), else 0 (bytes copied)."""
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        try:
            fcntl.ioctl(fout.fileno(), FICLONE, fin.fileno())
            return 1
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EXDEV, errno.EINVAL, errno.ENOTTY,
                                 errno.EBADF, errno.ENOSYS, errno.EPERM):
                raise
        shutil.copyfileobj(fin, fout, length=1 << 20)
    return 0


def _node_id(path: Path) -> int | None:
    if not path.is_file():
        return None
    try:
        return read_meta_properties(path.read_bytes(), path=str(path)).node_id
    except FormatError:
        return None
