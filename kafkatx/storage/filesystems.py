"""Where evidence lives: the local disk, or any store ``pyarrow.fs`` (or fsspec) opens by URI.

A path argument that starts with ``scheme://`` (``s3://``, ``gs://``, ``hdfs://``, ``abfs://``,
``file://``...) is a URI: it is opened with ``pyarrow.fs.FileSystem.from_uri``, or with fsspec
when pyarrow does not know the scheme and fsspec is installed. Anything else is a local path and
keeps kafkatx's os-based code (``os.scandir``; ``open``/``mmap`` in
:mod:`kafkatx.storage.local_read`).

Files under a URI are :class:`RemotePath` objects. ``str()`` of one is the URI as given without
its query string (reports show ``s3://bucket/logdir/orders-0/...``); the object keeps the query,
and so does this process (:func:`remember`), so that a path given back as text reads the same
way. Settings in a URI's query (``?endpoint_override=host:port&scheme=http`` for pyarrow's S3)
travel with the paths to Spark's executors; settings in the environment (``AWS_*``,
``GOOGLE_APPLICATION_CREDENTIALS``, ``HADOOP_HOME``/``CLASSPATH``) must be set there too.
Credentials belong in the environment: a URI's user info is shown like the rest of it.

Everything here only reads: nothing is created, written, renamed or deleted.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable
from pathlib import PurePath, PurePosixPath
from typing import Any, NamedTuple, Protocol
from urllib.parse import urlsplit

from kafkatx.errors import KafkatxError, UnreadableFileError
from kafkatx.storage.local_read import open_local

_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]+://")  # two letters at least: not a drive letter


def is_uri(path: object) -> bool:
    """A :class:`RemotePath`, or text starting with ``scheme://``."""
    return isinstance(path, RemotePath) or (isinstance(path, str) and bool(_URI.match(path)))


# --------------------------------------------------------------------------------------------
# The protocol


class Entry(NamedTuple):
    """One directory entry: its name, whether it is a directory, its size in bytes."""

    name: str
    is_dir: bool
    size: int = 0


class FileSystem(Protocol):
    """What kafkatx asks of a filesystem; paths are the filesystem's own (no scheme)."""

    def list_dir(self, path: str) -> list[Entry]: ...

    def list_tree(self, path: str) -> dict[str, list[Entry]]:
        """Every directory under ``path`` (itself included) -> its entries, in one go."""
        ...

    def is_dir(self, path: str) -> bool: ...

    def size(self, path: str) -> int: ...

    def read_bytes(self, path: str) -> bytes: ...

    def read_range(self, path: str, start: int, end: int) -> bytes: ...


class LocalFileSystem:
    """The local disk through ``os`` and :func:`kafkatx.storage.local_read.open_local`."""

    def list_dir(self, path: str) -> list[Entry]:
        out = []
        with os.scandir(path) as it:
            for e in it:
                is_dir = e.is_dir()
                out.append(Entry(e.name, is_dir, 0 if is_dir else e.stat().st_size))
        return out

    def list_tree(self, path: str) -> dict[str, list[Entry]]:
        tree: dict[str, list[Entry]] = {}
        for top, dirs, files in os.walk(path):
            tree[top] = ([Entry(d, True) for d in dirs]
                         + [Entry(f, False, os.stat(os.path.join(top, f)).st_size)
                            for f in files])
        return tree

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def size(self, path: str) -> int:
        return os.stat(path).st_size

    def read_bytes(self, path: str) -> bytes:
        with open_local(path) as (data, _):
            return bytes(data)

    def read_range(self, path: str, start: int, end: int) -> bytes:
        with open_local(path) as (data, _):
            if start == 0 and end >= len(data) and isinstance(data, bytes):
                return data
            return bytes(memoryview(data)[start:end])


class ArrowFileSystem:
    """A ``pyarrow.fs.FileSystem`` (S3, GCS, HDFS, Azure, local, or fsspec wrapped)."""

    def __init__(self, fs: Any) -> None:
        self.fs = fs

    def _entry(self, info: Any) -> Entry:
        from pyarrow.fs import FileType

        is_dir = info.type == FileType.Directory
        return Entry(info.base_name, is_dir, 0 if is_dir else int(info.size or 0))

    def list_dir(self, path: str) -> list[Entry]:
        from pyarrow.fs import FileSelector

        return [self._entry(i) for i in self.fs.get_file_info(FileSelector(path))]

    def list_tree(self, path: str) -> dict[str, list[Entry]]:
        """One recursive listing (on object stores: one paged LIST, not one per directory)."""
        from pyarrow.fs import FileSelector

        root = path.rstrip("/") or "/"
        tree: dict[str, list[Entry]] = {root: []}
        named: dict[str, set[str]] = {root: set()}

        def add(parent: str, entry: Entry) -> None:
            if entry.name not in named.setdefault(parent, set()):
                named[parent].add(entry.name)
                tree.setdefault(parent, []).append(entry)

        for info in self.fs.get_file_info(FileSelector(root, recursive=True)):
            entry = self._entry(info)
            child = info.path.rstrip("/")
            if entry.is_dir:
                tree.setdefault(child, [])
            while True:  # object stores may leave parent "directories" implicit
                parent = child.rpartition("/")[0] or "/"
                add(parent, entry)
                if parent in (root, child) or not parent.startswith(root):
                    break
                child, entry = parent, Entry(parent.rpartition("/")[2], True)
                tree.setdefault(child, [])
        return tree

    def is_dir(self, path: str) -> bool:
        from pyarrow.fs import FileType

        info = self.fs.get_file_info(path)
        if info.type == FileType.NotFound:
            raise FileNotFoundError(path)
        return bool(info.type == FileType.Directory)

    def size(self, path: str) -> int:
        from pyarrow.fs import FileType

        info = self.fs.get_file_info(path)
        if info.type == FileType.NotFound:
            raise FileNotFoundError(path)
        return int(info.size or 0)

    def read_bytes(self, path: str) -> bytes:
        with self.fs.open_input_file(path) as f:
            return bytes(f.read())

    def read_range(self, path: str, start: int, end: int) -> bytes:
        with self.fs.open_input_file(path) as f:
            return bytes(f.read_at(max(end - start, 0), start))


# --------------------------------------------------------------------------------------------
# Stores and remote paths


class Store(NamedTuple):
    """One filesystem reached by URI. ``uri`` is the URI it was opened with (query kept: how to
    open it again in any process), ``root`` that URI as displayed (no query, no trailing '/'),
    and ``prefix`` what a displayed path starts with before the filesystem's own name for it
    (``s3://`` + ``bucket/key``, ``hdfs://nn:8020`` + ``/dir``, ``file://`` + ``/dir``)."""

    uri: str
    root: str
    prefix: str


def display(uri: str) -> str:
    """``uri`` without its query string or fragment, nor a trailing '/'."""
    text = uri.split("?", 1)[0].split("#", 1)[0]
    head, sep, body = text.partition("://")
    return head.lower() + sep + (body.rstrip("/") or body[:1])


def is_inside(path: str, root: str) -> bool:
    """``path`` is ``root`` or below it (texts as :func:`canonical` or :func:`display` give)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


class RemotePath:
    """A file or directory in a :class:`Store`. ``str()`` is its URI without the query string.
    Supports what discovery and the analysis use of ``pathlib`` paths: ``/``, ``name``,
    ``parent``, ordering, hashing; equal to a ``pathlib`` path of the same text (what
    ``Path(str(p))`` gives), as ``Path`` itself would be."""

    __slots__ = ("_text", "store")

    def __init__(self, text: str, store: Store) -> None:
        self._text = display(text)
        self.store = store

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"RemotePath({self._text!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return RemotePath, (self._text, self.store)

    @property
    def inner(self) -> str:
        """The path as the store's filesystem names it."""
        if not self._text.startswith(self.store.prefix):
            raise ValueError(f"{self._text} is outside {self.store.root}")
        return self._text[len(self.store.prefix):] or "/"

    @property
    def uri(self) -> str:
        """The URI to open this path anywhere: its text plus the store's query string."""
        query = urlsplit(self.store.uri).query
        return self._text + (f"?{query}" if query else "")

    @property
    def name(self) -> str:
        body = self._text.partition("://")[2]
        return body.rpartition("/")[2] if "/" in body else body

    @property
    def parent(self) -> RemotePath:
        head, sep, body = self._text.partition("://")
        up, slash, _ = body.rpartition("/")
        if not slash:
            return self
        return RemotePath(f"{head}{sep}{up or '/'}", self.store)

    def __truediv__(self, name: str) -> RemotePath:
        return RemotePath(f"{self._text.rstrip('/')}/{name}", self.store)

    def _pure(self) -> PurePosixPath:
        return PurePosixPath(self._text)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RemotePath):
            return self._text == other._text
        if isinstance(other, PurePath):
            return self._pure() == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._pure())

    def __lt__(self, other: RemotePath) -> bool:
        return self._text < str(other)


_lock = threading.Lock()
_stores: dict[str, Store] = {}  # root -> store, to read paths given back as text
_opened: dict[str, tuple[FileSystem, str]] = {}  # scheme://netloc?query -> filesystem, prefix


def _fs_key(uri: str) -> str:
    """What a filesystem depends on: scheme, user info and host, query (not the path)."""
    parts = urlsplit(uri)
    return f"{parts.scheme.lower()}://{parts.netloc}?{parts.query}"


def _open(uri: str) -> tuple[FileSystem, str]:
    """The filesystem of ``uri`` and its own path for it."""
    from pyarrow import fs as pafs

    try:
        arrow_fs, inner = pafs.FileSystem.from_uri(uri)
    except Exception as first:  # an unknown scheme, a missing native library...
        try:
            import fsspec
            from pyarrow.fs import FSSpecHandler, PyFileSystem
        except ImportError:
            raise UnreadableFileError(display(uri), _one_line(first)) from None
        try:
            spec_fs, inner = fsspec.core.url_to_fs(uri)
        except Exception as exc:
            # pyarrow's reason first: fsspec's ("Install s3fs") would hide an unreachable
            # bucket or a bad option of a scheme pyarrow knows.
            raise UnreadableFileError(
                display(uri), f"{_one_line(first)} (fsspec: {_one_line(exc)})") from None
        arrow_fs = PyFileSystem(FSSpecHandler(spec_fs))
    return ArrowFileSystem(arrow_fs), str(inner)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


def _opened_for(uri: str) -> tuple[FileSystem, str]:
    """The filesystem and path prefix of ``uri``'s scheme, host and query, opened once."""
    key = _fs_key(uri)
    with _lock:
        opened = _opened.get(key)
    if opened is None:
        fs, inner = _open(uri)
        root = display(uri)
        inner = inner.rstrip("/") or inner
        if not root.endswith(inner):
            raise UnreadableFileError(root, f"its filesystem names it {inner!r}, which kafkatx "
                                            "cannot map back to the URI")
        opened = (fs, root[: len(root) - len(inner)])
        with _lock:
            opened = _opened.setdefault(key, opened)
    return opened


def remember(uri: str) -> RemotePath:
    """Open the store of ``uri`` in this process and return its path; text of paths below it
    is then read through it (with its query's settings). Stores of one scheme, host and query
    share one filesystem."""
    root = display(uri)
    with _lock:
        store = _stores.get(root)
    if store is None or store.uri != uri:
        _, prefix = _opened_for(uri)
        store = Store(uri=uri, root=root, prefix=prefix)
        with _lock:
            _stores[root] = store
    return RemotePath(root, store)


def remember_all(uris: Iterable[str]) -> None:
    """:func:`remember` each URI among ``uris`` (local paths are skipped)."""
    for uri in uris:
        if is_uri(uri):
            remember(uri)


def remote_path(path: str | RemotePath) -> RemotePath:
    """``path`` as a :class:`RemotePath`: text below a store opened before (the deepest one)
    is read through it, with its settings; other text opens a store of its own."""
    if isinstance(path, RemotePath):
        return path
    if "?" in path:
        return remember(path)
    text = display(path)
    head, sep, body = text.partition("://")
    with _lock:
        while True:
            store = _stores.get(head + sep + body)
            if store is not None:
                return RemotePath(text, store)
            up = body.rpartition("/")[0]
            if up == body or not up:
                break
            body = up
    return remember(path)


def filesystem(path: RemotePath) -> FileSystem:
    """The filesystem of ``path``'s store (opened in this process when it came pickled)."""
    return _opened_for(path.store.uri)[0]


def resolve(path: str | os.PathLike[str] | RemotePath) -> tuple[FileSystem, str]:
    """The filesystem holding ``path`` and its name there (local paths: the local disk)."""
    if is_uri(path):
        remote = remote_path(path)  # type: ignore[arg-type]
        return filesystem(remote), remote.inner
    return LocalFileSystem(), os.fspath(path)  # type: ignore[arg-type]


def location(path: str | os.PathLike[str] | RemotePath) -> Any:
    """A path argument as discovery holds it: a :class:`RemotePath` for a URI, else a
    ``pathlib.Path``."""
    from pathlib import Path

    if is_uri(path):
        return remote_path(path)  # type: ignore[arg-type]
    return Path(path)  # type: ignore[arg-type]


def canonical(path: str | os.PathLike[str] | RemotePath) -> str:
    """Text to compare paths by: the real path of a local path or ``file://`` URI, else the URI
    as :func:`display` gives it."""
    if isinstance(path, RemotePath) or is_uri(path):
        text = display(str(path))
        if text.startswith("file://"):
            return os.path.realpath(urlsplit(text).path or "/")
        return text
    return os.path.realpath(path)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# Reading


def read_bytes(path: str | os.PathLike[str] | RemotePath) -> bytes:
    """The whole file, from wherever it is; ``UnreadableFileError`` when it cannot be read."""
    fs, inner = resolve(path)
    try:
        return fs.read_bytes(inner)
    except KafkatxError:
        raise
    except (OSError, ValueError) as exc:
        raise UnreadableFileError(str(path), _reason(exc)) from None


def read_range(path: str | os.PathLike[str] | RemotePath, start: int, end: int) -> bytes:
    """Bytes ``[start, end)`` of the file."""
    fs, inner = resolve(path)
    try:
        return fs.read_range(inner, start, end)
    except KafkatxError:
        raise
    except (OSError, ValueError) as exc:
        raise UnreadableFileError(str(path), _reason(exc)) from None


def size(path: str | os.PathLike[str] | RemotePath) -> int:
    fs, inner = resolve(path)
    try:
        return fs.size(inner)
    except (OSError, ValueError) as exc:
        raise UnreadableFileError(str(path), _reason(exc)) from None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, FileNotFoundError):
        return "no such file or directory"
    if isinstance(exc, IsADirectoryError):
        return "is a directory"
    if isinstance(exc, OSError) and exc.strerror and not exc.filename:
        return exc.strerror
    return _one_line(exc)
