"""Read-only access to evidence files.

Nothing here opens a file for writing, creates, renames or touches anything: files are opened
``rb`` and large ones mapped with ``ACCESS_READ``, which changes neither bytes nor mtimes. A URI
(``s3://...``, a :class:`kafkatx.storage.filesystems.RemotePath`) is read whole through its
filesystem (:mod:`kafkatx.storage.filesystems`).
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol

from kafkatx.errors import UnreadableFileError
from kafkatx.storage import filesystems
from kafkatx.storage.local_read import MMAP_THRESHOLD, open_local

__all__ = ["MMAP_THRESHOLD", "current_manifest", "open_bytes", "read_text"]


class ReadRecorder(Protocol):
    """Told about every file read here (``kafkatx.storage.manifest.Manifest``)."""

    def record(self, path: str, data: bytes | mmap.mmap, stat: os.stat_result | None = None
               ) -> None: ...


# Set (e.g. with ``kafkatx.storage.manifest.recording``) to log each read into a manifest.
current_manifest: ContextVar[ReadRecorder | None] = ContextVar("kafkatx_current_manifest",
                                                               default=None)


@contextmanager
def open_bytes(path: str | os.PathLike[str]) -> Iterator[bytes | mmap.mmap]:
    """Yield the whole content of ``path`` as a buffer (bytes, or a read-only mmap when large)."""
    if filesystems.is_uri(path):
        remote = filesystems.read_bytes(path)
        recorder = current_manifest.get()
        if recorder is not None:
            recorder.record(str(path), remote)
        yield remote
        return
    p = os.fspath(path)
    with open_local(p) as (data, stat):
        recorder = current_manifest.get()
        if recorder is not None:
            recorder.record(p, data, stat)
        yield data


def read_text(path: str | os.PathLike[str]) -> str:
    """Read a small text file (checkpoints, properties) strictly read-only."""
    with open_bytes(path) as data:
        try:
            return bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UnreadableFileError(os.fspath(path),
                                      f"not UTF-8 text (byte {exc.start})") from None
