"""Read one local file strictly read-only: ``rb``, and a read-only mmap when it is large.

The one place a local evidence file is opened; :mod:`kafkatx.storage.files` (with the manifest)
and the local file system of :mod:`kafkatx.storage.filesystems` both read through it.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import stat as stat_module
from collections.abc import Iterator
from contextlib import contextmanager

from kafkatx.errors import UnreadableFileError

MMAP_THRESHOLD = 64 * 1024 * 1024


@contextmanager
def open_local(path: str) -> Iterator[tuple[bytes | mmap.mmap, os.stat_result]]:
    """Yield ``path``'s whole content and its stat; errors as ``UnreadableFileError``.

    Only regular files are read: a FIFO would block the open forever and a device (a segment
    linked to ``/dev/zero``) would never end. ``O_NONBLOCK`` keeps the open of a FIFO from
    waiting for a writer, so the check after it is on the very file that was opened.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError:
        raise UnreadableFileError(path, "is a directory") from None
    except OSError as exc:
        raise UnreadableFileError(path, exc.strerror or str(exc)) from None
    f = os.fdopen(fd, "rb")
    mapped: mmap.mmap | None = None
    try:
        try:
            stat = os.fstat(f.fileno())
            if stat_module.S_ISDIR(stat.st_mode):
                raise UnreadableFileError(path, "is a directory")
            if not stat_module.S_ISREG(stat.st_mode):
                raise UnreadableFileError(path, f"not a regular file (a {_file_type(stat)}): "
                                                "not read")
            if stat.st_size >= MMAP_THRESHOLD:
                mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                data: bytes | mmap.mmap = mapped
            else:
                data = f.read()
        except OSError as exc:
            raise UnreadableFileError(path, exc.strerror or str(exc)) from None
        yield data, stat
    finally:
        if mapped is not None:
            with contextlib.suppress(BufferError):  # numpy views still alive: freed with them
                mapped.close()
        f.close()


def _file_type(stat: os.stat_result) -> str:
    mode = stat.st_mode
    for test, name in ((stat_module.S_ISFIFO, "FIFO"), (stat_module.S_ISCHR, "character device"),
                       (stat_module.S_ISBLK, "block device"), (stat_module.S_ISSOCK, "socket")):
        if test(mode):
            return name
    return "special file"
