"""Read one local file strictly read-only: ``rb``, and a read-only mmap when it is large.

The one place a local evidence file is opened; :mod:`kafkatx.storage.files` (with the manifest)
and the local file system of :mod:`kafkatx.storage.filesystems` both read through it.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from collections.abc import Iterator
from contextlib import contextmanager

from kafkatx.errors import UnreadableFileError

MMAP_THRESHOLD = 64 * 1024 * 1024


@contextmanager
def open_local(path: str) -> Iterator[tuple[bytes | mmap.mmap, os.stat_result]]:
    """Yield ``path``'s whole content and its stat; errors as ``UnreadableFileError``."""
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed below, after the mapping
    except IsADirectoryError:
        raise UnreadableFileError(path, "is a directory") from None
    except OSError as exc:
        raise UnreadableFileError(path, exc.strerror or str(exc)) from None
    mapped: mmap.mmap | None = None
    try:
        try:
            stat = os.fstat(f.fileno())
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
