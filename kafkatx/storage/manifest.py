"""A manifest of every evidence file kafkatx read: path, size, mtime and SHA-256.

Readers never call this directly: ``kafkatx.storage.files.open_bytes`` reports each read to the
manifest set in ``files.current_manifest`` (use ``recording``), hashing the bytes it already
read. ``Manifest.write`` produces a ``sha256sum``-compatible file (GNU ``sha256sum -c --strict``
verifies it and skips the ``#`` header line), and refuses to write inside any inspected path.

``current_manifest`` is a ``ContextVar``: threads started from a pool do not inherit it, so run
their work with ``contextvars.copy_context().run`` when reads happen there.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from kafkatx import __version__
from kafkatx.errors import KafkatxError
from kafkatx.lazy_dataclass import dataclass
from kafkatx.storage.files import current_manifest


@dataclass(frozen=True, slots=True, kw_only=True)
class ManifestEntry:
    """One read: the absolute path, the byte count and SHA-256 of what was read, and the file's
    mtime in ns (``None`` when it could not be had)."""

    path: str
    size: int
    mtime_ns: int | None
    sha256: str

    def to_dict(self) -> dict[str, object]:
        return {"path": self.path, "size": self.size, "mtime_ns": self.mtime_ns,
                "sha256": self.sha256}


def _utc_text(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _sha256sum_line(entry: ManifestEntry) -> bytes:
    """``<hex>  <path>`` as GNU ``sha256sum`` prints it: a name holding ``\\``, LF or CR is
    escaped and the line starts with ``\\``."""
    name = entry.path
    prefix = ""
    if any(c in name for c in "\\\n\r"):
        prefix = "\\"
        name = name.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    return prefix.encode() + entry.sha256.encode() + b"  " + os.fsencode(name) + b"\n"


class Manifest:
    """Collects ``ManifestEntry``s; ``roots`` are the inspected paths (never written into).

    Reading the same file again with the same content adds nothing; a different size, mtime or
    digest adds a second entry (see ``changed_paths``): evidence that changed while it was read.
    """

    def __init__(self, roots: Iterable[str | os.PathLike[str]] = ()) -> None:
        self.roots: tuple[Path, ...] = tuple(Path(r) for r in roots)
        self._entries: list[ManifestEntry] = []
        self._seen: set[ManifestEntry] = set()
        self._lock = threading.Lock()

    def record(self, path: str | os.PathLike[str], data: bytes | bytearray | memoryview | mmap.mmap,
               stat: os.stat_result | None = None) -> ManifestEntry:
        """Register one read of ``path`` whose content was ``data`` (``stat`` from the open file
        when the caller has it, else ``path`` is stat'ed)."""
        absolute = os.path.abspath(os.fspath(path))
        if stat is None:
            try:
                stat = os.stat(absolute)
            except OSError:
                stat = None
        entry = ManifestEntry(path=absolute, size=len(data),
                              mtime_ns=None if stat is None else stat.st_mtime_ns,
                              sha256=hashlib.sha256(data).hexdigest())
        with self._lock:
            if entry not in self._seen:
                self._seen.add(entry)
                self._entries.append(entry)
        return entry

    @property
    def entries(self) -> tuple[ManifestEntry, ...]:
        """In the order first read."""
        with self._lock:
            return tuple(self._entries)

    def changed_paths(self) -> tuple[str, ...]:
        """Paths read more than once with different size, mtime or content."""
        counts: dict[str, int] = {}
        for e in self.entries:
            counts[e.path] = counts.get(e.path, 0) + 1
        return tuple(sorted(p for p, n in counts.items() if n > 1))

    def __len__(self) -> int:
        return len(self.entries)

    def to_dict(self, *, written_at: datetime | None = None) -> dict[str, object]:
        return {"kafkatx_version": __version__,
                "written_at": _utc_text(written_at or datetime.now(UTC)),
                "roots": [os.path.abspath(r) for r in self.roots],
                "files": [e.to_dict() for e in self.entries],
                "changed_paths": list(self.changed_paths())}

    def to_json(self, *, written_at: datetime | None = None, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(written_at=written_at), indent=indent)

    def render(self, *, written_at: datetime | None = None) -> bytes:
        """The ``sha256sum``-format text: a ``#`` header line, then one line per entry."""
        when = _utc_text(written_at or datetime.now(UTC))
        header = f"# kafkatx {__version__} manifest of files read, written {when} (UTC)\n"
        return header.encode() + b"".join(_sha256sum_line(e) for e in self.entries)

    def check_target(self, target: str | os.PathLike[str]) -> None:
        """Raise ``KafkatxError`` when ``target`` lies in (or is) an inspected root."""
        real_target = os.path.realpath(target)
        for root in self.roots:
            real_root = os.path.realpath(root)
            try:
                inside = os.path.commonpath([real_root, real_target]) == real_root
            except ValueError:  # different drives
                inside = False
            if inside:
                raise KafkatxError(
                    f"refusing to write the manifest {os.fspath(target)!s} inside the inspected "
                    f"path {os.fspath(root)!s}: evidence directories are never written to; "
                    "choose a location outside it")

    def write(self, target: str | os.PathLike[str], *,
              written_at: datetime | None = None) -> Path:
        """Write ``render()`` to ``target`` (outside every root; see ``check_target``)."""
        self.check_target(target)
        data = self.render(written_at=written_at)
        try:
            with open(target, "wb") as f:
                f.write(data)
        except OSError as exc:
            raise KafkatxError(f"{os.fspath(target)}: cannot write the manifest: "
                               f"{exc.strerror or exc}") from None
        return Path(target)


@contextmanager
def recording(manifest: Manifest) -> Iterator[Manifest]:
    """Within the block, every ``open_bytes``/``read_text`` is recorded into ``manifest``."""
    token = current_manifest.set(manifest)
    try:
        yield manifest
    finally:
        current_manifest.reset(token)
