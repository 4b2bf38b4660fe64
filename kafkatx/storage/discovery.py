"""Find the partitions of one or many Kafka log dirs, strictly read-only.

A path may be a broker's ``log.dirs`` root, one partition directory, or a folder of copies from
several brokers (searched ``MAX_SEARCH_DEPTH`` levels deep). Only directory listings
(``os.scandir``) and ``stat`` calls are made here: nothing is opened, created or renamed. One
listing and one ``stat`` per directory, one ``stat`` per ``.log`` file: 10,000 partitions take
well under a second.

A URI (``s3://bucket/logdir``, ``hdfs://nn:8020/kafka``, ``file:///...``; see
:mod:`kafkatx.storage.filesystems`) is listed through its filesystem instead: once, recursively
(one paged listing on an object store), with the given URIs listed in parallel; the same rules
then sort the listing out, and its paths are :class:`~kafkatx.storage.filesystems.RemotePath`
objects. A directory is told apart from another by its URI (object stores have no links).

What counts as what mirrors the broker: a log dir's children are loaded like
``LogManager#loadLogsInDir`` does (every child directory except ``remote-log-index-cache`` must
be named as ``LocalLog#parseTopicPartitionName`` accepts), and a partition's files are sorted out
like ``LogLoader#load`` / ``LogFileUtils`` (``<offset>.log|index|timeindex|txnindex|snapshot``,
with ``.deleted``/``.cleaned``/``.swap`` leftovers kept apart).
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import field
from pathlib import Path
from typing import NamedTuple

from kafkatx.errors import MissingPathError, UnreadableFileError
from kafkatx.formats.checkpoints import (
    CHECKPOINT_FILE_NAMES,
    LEADER_EPOCH_CHECKPOINT_FILE,
    META_PROPERTIES_FILE,
    PARTITION_METADATA_FILE,
    MetaProperties,
    OffsetCheckpoint,
    read_meta_properties,
    read_offset_checkpoint,
)
from kafkatx.lazy_dataclass import dataclass
from kafkatx.storage.files import open_bytes
from kafkatx.storage.filesystems import Entry, RemotePath, filesystem, location
from kafkatx.storage.layout import (
    CLEAN_SHUTDOWN_FILE,
    LOCK_FILE,
    REMOTE_LOG_INDEX_CACHE_DIR,
    SEGMENT_FILE_KINDS,
    SNAPSHOT_FILE_SUFFIX,
    PartitionDirName,
    parse_offset_file_name,
    parse_topic_partition_name,
)

MAX_SEARCH_DEPTH = 4  # how far below a given path a log dir may sit (incident/broker-1/var/kafka)
HIGH_WATERMARK_CHECKPOINT = "replication-offset-checkpoint"  # ReplicaManager.HighWatermarkFilename
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"  # LogManager.LogStartOffsetCheckpointFile
_ROOT_MARKERS = frozenset({META_PROPERTIES_FILE, CLEAN_SHUTDOWN_FILE, *CHECKPOINT_FILE_NAMES})
_ROOT_KNOWN_FILES = _ROOT_MARKERS | {LOCK_FILE}
_STATE_ORDER = {"live": 0, "future": 1, "stray": 2, "delete": 3}
LISTING_THREADS = 16  # URIs listed at once (each listing waits on the network)


def _path_str(path: Path | None) -> str | None:
    return None if path is None else str(path)


class SegmentFiles(NamedTuple):
    """The files of one segment (one base offset, one transient suffix or none).

    ``log_size`` is the ``.log`` file's size from ``stat`` (0 without a ``.log``). ``suffix`` is
    ``.deleted``, ``.cleaned`` or ``.swap`` for leftovers of deletion, cleaning or a swap
    (``LocalLog#replaceSegments``), else ``None``.
    """

    base_offset: int
    log: Path | None = None
    index: Path | None = None
    timeindex: Path | None = None
    txnindex: Path | None = None
    log_size: int = 0
    suffix: str | None = None

    @property
    def files(self) -> tuple[Path, ...]:
        return tuple(p for p in (self.log, self.index, self.timeindex, self.txnindex) if p)

    def to_dict(self) -> dict[str, object]:
        return {"base_offset": self.base_offset, "log": _path_str(self.log),
                "index": _path_str(self.index), "timeindex": _path_str(self.timeindex),
                "txnindex": _path_str(self.txnindex), "log_size": self.log_size,
                "suffix": self.suffix}


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionDir:
    """One partition directory. ``state`` is ``live`` for ``<topic>-<partition>``, else
    ``delete``/``future``/``stray`` from the ``.<uuid>-<state>`` suffix.

    ``segments`` holds the live segments sorted by base offset; ``other_segments`` the ones with
    a transient suffix (sorted by base offset, then suffix); ``snapshots`` the producer
    snapshots as (offset, path) sorted, ``other_snapshots`` those renamed ``.deleted``.
    ``unknown_files`` lists every other entry (including subdirectories, never entered).
    ``log_dir`` is the log dir holding it (``None`` for a partition dir given on its own); it is
    left out of comparisons and ``repr`` (it points back here).
    """

    path: Path
    topic: str
    partition: int
    state: str
    segments: tuple[SegmentFiles, ...] = ()
    other_segments: tuple[SegmentFiles, ...] = ()
    snapshots: tuple[tuple[int, Path], ...] = ()
    other_snapshots: tuple[tuple[int, Path], ...] = ()
    leader_epoch_checkpoint: Path | None = None
    partition_metadata: Path | None = None
    unknown_files: tuple[Path, ...] = ()
    log_dir: LogDir | None = field(default=None, compare=False, repr=False)

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def is_live(self) -> bool:
        return self.state == "live"

    def to_dict(self) -> dict[str, object]:
        return {
            "path": str(self.path), "topic": self.topic, "partition": self.partition,
            "state": self.state,
            "log_dir": None if self.log_dir is None else str(self.log_dir.path),
            "broker": None if self.log_dir is None else self.log_dir.label,
            "segments": [s.to_dict() for s in self.segments],
            "other_segments": [s.to_dict() for s in self.other_segments],
            "snapshots": [{"offset": o, "path": str(p)} for o, p in self.snapshots],
            "other_snapshots": [{"offset": o, "path": str(p)} for o, p in self.other_snapshots],
            "leader_epoch_checkpoint": _path_str(self.leader_epoch_checkpoint),
            "partition_metadata": _path_str(self.partition_metadata),
            "unknown_files": [str(p) for p in self.unknown_files],
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class LogDir:
    """One broker log dir (an entry of ``log.dirs``), or a folder of partition dirs copied
    without their root files (then ``meta_properties`` is ``None`` and ``checkpoints`` empty).

    ``checkpoints`` maps the root checkpoint file names present to their paths.
    ``clean_shutdown`` is whether ``.kafka_cleanshutdown`` is present (no recovery was needed).
    ``partitions`` holds every partition dir, live or not, sorted by topic, partition, state.
    ``label`` tells log dirs apart: the path below the deepest directory common to every log
    dir found (the dir's own name when there is only one).
    """

    path: Path
    label: str
    meta_properties: Path | None = None
    checkpoints: dict[str, Path] = field(default_factory=dict)
    partitions: tuple[PartitionDir, ...] = ()
    clean_shutdown: bool = False
    unknown_files: tuple[Path, ...] = ()

    @property
    def live_partitions(self) -> tuple[PartitionDir, ...]:
        return tuple(p for p in self.partitions if p.is_live)

    def to_dict(self) -> dict[str, object]:
        return {
            "path": str(self.path), "label": self.label,
            "meta_properties": _path_str(self.meta_properties),
            "checkpoints": {k: str(v) for k, v in sorted(self.checkpoints.items())},
            "clean_shutdown": self.clean_shutdown,
            "partitions": [p.to_dict() for p in self.partitions],
            "unknown_files": [str(p) for p in self.unknown_files],
        }


class Discovery(NamedTuple):
    """Everything found under the given paths. ``problems`` are one-line, human-readable notes
    (unlistable dirs, names Kafka would refuse, paths holding no Kafka data)."""

    log_dirs: tuple[LogDir, ...] = ()
    bare_partitions: tuple[PartitionDir, ...] = ()
    problems: tuple[str, ...] = ()

    def _every_partition(self) -> Iterator[PartitionDir]:
        for log_dir in self.log_dirs:
            yield from log_dir.partitions
        yield from self.bare_partitions

    @staticmethod
    def _order(p: PartitionDir) -> tuple[str, int, str]:
        return p.topic, p.partition, p.log_dir.label if p.log_dir else str(p.path)

    def all_partitions(self) -> tuple[PartitionDir, ...]:
        """Live partitions, sorted by topic, partition, then log dir."""
        return tuple(sorted((p for p in self._every_partition() if p.is_live), key=self._order))

    def inactive_partitions(self) -> tuple[PartitionDir, ...]:
        """``-delete``/``-future``/``-stray`` partition dirs, in the same order."""
        return tuple(sorted((p for p in self._every_partition() if not p.is_live),
                            key=self._order))

    def partitions_of(self, topic: str) -> tuple[PartitionDir, ...]:
        return tuple(p for p in self.all_partitions() if p.topic == topic)

    @property
    def is_empty(self) -> bool:
        return not self.log_dirs and not self.bare_partitions

    def to_dict(self) -> dict[str, object]:
        return {"log_dirs": [d.to_dict() for d in self.log_dirs],
                "bare_partitions": [p.to_dict() for p in self.bare_partitions],
                "problems": list(self.problems)}


# --------------------------------------------------------------------------------------------
# Listing


class _Listing(NamedTuple):
    path: Path
    files: dict[str, os.DirEntry[str] | Entry]
    dirs: dict[str, os.DirEntry[str] | Entry]


def _list(path: Path, problems: list[str]) -> _Listing | None:
    files: dict[str, os.DirEntry[str]] = {}
    dirs: dict[str, os.DirEntry[str]] = {}
    try:
        with os.scandir(path) as it:
            for entry in it:
                try:
                    is_dir = entry.is_dir()
                except OSError:
                    is_dir = False
                (dirs if is_dir else files)[entry.name] = entry
    except OSError as exc:
        problems.append(f"{path}: cannot list directory: {exc.strerror or exc}")
        return None
    return _Listing(path, files, dirs)


def _is_partition_file(name: str) -> bool:
    return (name in (LEADER_EPOCH_CHECKPOINT_FILE, PARTITION_METADATA_FILE)
            or parse_offset_file_name(name) is not None)


def _looks_like_partition(listing: _Listing) -> bool:
    return any(_is_partition_file(name) for name in listing.files)


def _has_root_markers(listing: _Listing) -> bool:
    return not _ROOT_MARKERS.isdisjoint(listing.files)


def _dir_key(path: Path, entry: os.DirEntry[str] | Entry | None = None) -> Hashable | None:
    """What tells directories apart: device and inode (a dir reached through two links is one),
    or the URI of a remote one."""
    if isinstance(path, RemotePath):
        return str(path)
    try:
        st = entry.stat() if isinstance(entry, os.DirEntry) else os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _remote_tree(path: RemotePath) -> dict[str, _Listing]:
    """Every directory under ``path`` from one recursive listing, by URI."""
    fs = filesystem(path)
    prefix = path.store.prefix
    out: dict[str, _Listing] = {}
    for inner, entries in fs.list_tree(path.inner).items():
        where = RemotePath(prefix + inner, path.store)
        files = {e.name: e for e in entries if not e.is_dir}
        dirs = {e.name: e for e in entries if e.is_dir}
        out[str(where)] = _Listing(where, files, dirs)  # type: ignore[arg-type]
    return out


# --------------------------------------------------------------------------------------------
# Partition directories


def _log_size(entry: os.DirEntry[str] | Entry, problems: list[str]) -> int:
    if isinstance(entry, Entry):
        return entry.size
    try:
        return entry.stat().st_size
    except OSError as exc:
        problems.append(f"{entry.path}: cannot stat: {exc.strerror or exc}")
        return 0


def _build_partition(name: PartitionDirName, listing: _Listing,
                     problems: list[str]) -> PartitionDir:
    """Sort a partition dir's entries into segments, snapshots and the rest
    (``LogLoader#load``: file kinds from ``LogFileUtils`` suffixes)."""
    groups: dict[tuple[int, str | None], dict[str, object]] = {}
    snapshots: list[tuple[int, Path]] = []
    other_snapshots: list[tuple[int, Path]] = []
    unknown: list[Path] = [listing.path / d for d in listing.dirs]
    leader_epoch = partition_metadata = None
    for file_name, entry in listing.files.items():
        path = listing.path / file_name
        if file_name == LEADER_EPOCH_CHECKPOINT_FILE:
            leader_epoch = path
            continue
        if file_name == PARTITION_METADATA_FILE:
            partition_metadata = path
            continue
        parsed = parse_offset_file_name(file_name)
        if parsed is None:
            unknown.append(path)
            continue
        offset, kind, transient = parsed
        if kind == SNAPSHOT_FILE_SUFFIX:
            (snapshots if transient is None else other_snapshots).append((offset, path))
            continue
        group = groups.setdefault((offset, transient), {})
        group[SEGMENT_FILE_KINDS[kind]] = path
        if kind == ".log":
            group["log_size"] = _log_size(entry, problems)
    live: list[SegmentFiles] = []
    other: list[SegmentFiles] = []
    for (offset, transient), group in groups.items():
        seg = SegmentFiles(base_offset=offset, suffix=transient, **group)  # type: ignore[arg-type]
        (live if transient is None else other).append(seg)
    live.sort(key=lambda s: s.base_offset)
    other.sort(key=lambda s: (s.base_offset, s.suffix or ""))
    return PartitionDir(
        path=listing.path, topic=name.topic, partition=name.partition, state=name.state,
        segments=tuple(live), other_segments=tuple(other), snapshots=tuple(sorted(snapshots)),
        other_snapshots=tuple(sorted(other_snapshots)), leader_epoch_checkpoint=leader_epoch,
        partition_metadata=partition_metadata, unknown_files=tuple(sorted(unknown)))


# --------------------------------------------------------------------------------------------
# The search


class _FoundLogDir(NamedTuple):
    listing: _Listing
    partitions: list[PartitionDir]


class _Search:
    __slots__ = ("bare", "log_dirs", "problems", "remote", "seen")

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.log_dirs: list[_FoundLogDir] = []
        self.bare: list[PartitionDir] = []
        self.seen: dict[Hashable, Path] = {}
        self.remote: dict[str, _Listing] = {}  # listed URIs, by URI

    def list(self, path: Path) -> _Listing | None:
        if not isinstance(path, RemotePath):
            return _list(path, self.problems)
        listing = self.remote.get(str(path))
        if listing is None:
            self.problems.append(f"{path}: cannot list directory: not found in the listing")
        return listing

    def claim(self, path: Path, key: Hashable | None) -> bool:
        """False (and a note) when this directory was already taken in through another path."""
        if key is None:
            return True
        if key in self.seen:
            self.problems.append(f"{path}: already included as {self.seen[key]}; skipped")
            return False
        self.seen[key] = path
        return True

    def found_anything(self) -> int:
        return len(self.log_dirs) + len(self.bare)

    def given(self, path: Path) -> None:
        listing = self.list(path)
        if listing is None:
            return
        name = parse_topic_partition_name(path.name)
        if not _has_root_markers(listing) and _looks_like_partition(listing):
            if name is None:
                self.problems.append(
                    f"{path}: holds partition files, but its name is not <topic>-<partition> "
                    "(as Kafka's LocalLog#parseTopicPartitionName requires); skipped")
            elif self.claim(path, _dir_key(path)):
                self.bare.append(_build_partition(name, listing, self.problems))
            return
        key = _dir_key(path)
        if key is not None and key in self.seen:
            self.problems.append(f"{path}: already included as {self.seen[key]}; skipped")
            return
        before = self.found_anything()
        self.visit(listing, 0)
        if self.found_anything() == before:
            self.problems.append(f"{path}: no Kafka log dir or partition directory found "
                                 f"(searched {MAX_SEARCH_DEPTH} levels deep)")

    def visit(self, listing: _Listing, depth: int) -> None:
        """Take ``listing`` as a log dir if it is one, else search its subdirectories."""
        if not self.claim(listing.path, _dir_key(listing.path)):
            return
        marked = _has_root_markers(listing)
        partitions: list[PartitionDir] = []
        elsewhere: list[_Listing] = []
        for dir_name, entry in sorted(listing.dirs.items()):
            path = listing.path / dir_name
            if marked and dir_name == REMOTE_LOG_INDEX_CACHE_DIR:
                continue
            name = parse_topic_partition_name(dir_name)
            if marked and name is None and depth >= MAX_SEARCH_DEPTH:
                self.problems.append(_not_a_partition(path))
                continue
            child = self.list(path)
            if child is None:
                continue
            if name is not None and (marked or _looks_like_partition(child)):
                if self.claim(path, _dir_key(path, entry)):
                    partitions.append(_build_partition(name, child, self.problems))
            else:
                elsewhere.append(child)
        if marked or partitions:
            self.log_dirs.append(_FoundLogDir(listing, partitions))
        for child in elsewhere:
            before = self.found_anything()
            if depth < MAX_SEARCH_DEPTH:
                self.visit(child, depth + 1)
            if marked and self.found_anything() == before:
                self.problems.append(_not_a_partition(child.path))


def _not_a_partition(path: Path) -> str:
    return (f"{path}: not a <topic>-<partition> directory; a broker would refuse to load "
            "this log dir (LocalLog#parseTopicPartitionName)")


def _labels(paths: list[Path]) -> list[str]:
    """Each path below the deepest directory common to all (its own name when alone); URIs
    are compared as text."""
    absolute = [str(p) if isinstance(p, RemotePath) else os.path.abspath(p) for p in paths]
    names = [p.name if isinstance(p, RemotePath) else Path(a).name
             for p, a in zip(paths, absolute, strict=True)]
    if len(absolute) <= 1:
        return [n or a for n, a in zip(names, absolute, strict=True)]
    try:
        common = os.path.commonpath(absolute)
    except ValueError:  # local paths and URIs mixed
        common = ""
    if not common:  # nothing in common (several stores): the whole paths
        return absolute
    labels = []
    for a, n in zip(absolute, names, strict=True):
        rel = os.path.relpath(a, common)
        labels.append(n or a if rel == "." else rel)
    return labels


def _partition_order(p: PartitionDir) -> tuple[str, int, int, str]:
    return p.topic, p.partition, _STATE_ORDER.get(p.state, 9), p.path.name


def _duplicate_problems(partitions: Iterable[PartitionDir], where: Path) -> list[str]:
    """Two live dirs naming the same partition (``t-1`` and ``t-01``): Kafka would refuse."""
    seen: dict[tuple[str, int], Path] = {}
    out = []
    for p in partitions:
        if not p.is_live:
            continue
        key = (p.topic, p.partition)
        if key in seen:
            out.append(f"{where}: {seen[key].name} and {p.path.name} are both "
                       f"{p.topic}-{p.partition}")
        else:
            seen[key] = p.path
    return out


def _make_log_dir(found: _FoundLogDir, label: str, problems: list[str]) -> LogDir:
    files = found.listing.files
    root = found.listing.path
    partitions = sorted(found.partitions, key=_partition_order)
    problems.extend(_duplicate_problems(partitions, root))
    log_dir = LogDir(
        path=root, label=label,
        meta_properties=root / META_PROPERTIES_FILE if META_PROPERTIES_FILE in files else None,
        checkpoints={n: root / n for n in CHECKPOINT_FILE_NAMES if n in files},
        partitions=tuple(partitions),
        clean_shutdown=CLEAN_SHUTDOWN_FILE in files,
        unknown_files=tuple(sorted(root / n for n in files if n not in _ROOT_KNOWN_FILES)),
    )
    for p in partitions:  # the back reference; frozen, so set once here
        object.__setattr__(p, "log_dir", log_dir)
    return log_dir


def discover(paths: Iterable[str | os.PathLike[str]]) -> Discovery:
    """Find every log dir and partition dir under ``paths``, read-only.

    Raises ``UnreadableFileError`` for a path that does not exist or is not a directory. A path
    holding no Kafka data adds a problem (and nothing else) to the result.
    """
    search = _Search()
    given = [location(p) for p in paths]
    if not given:
        return Discovery(problems=("no path given",))
    search.remote = _list_remote([p for p in given if isinstance(p, RemotePath)])
    for path in given:
        if not isinstance(path, RemotePath):
            _check_local(path)
        search.given(path)
    labels = _labels([f.listing.path for f in search.log_dirs])
    problems = search.problems
    log_dirs = tuple(_make_log_dir(f, label, problems)
                     for f, label in zip(search.log_dirs, labels, strict=True))
    return Discovery(log_dirs=log_dirs, bare_partitions=tuple(search.bare),
                     problems=tuple(problems))


def _not_a_directory(path: Path, size: int) -> UnreadableFileError:
    return UnreadableFileError(str(path), "not a directory (give a log dir or a partition "
                                          f"directory; size {size})")


def _check_local(path: Path) -> None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise MissingPathError(str(path)) from None
    except OSError as exc:
        raise UnreadableFileError(str(path), exc.strerror or str(exc)) from None
    if not os.path.isdir(path):
        raise _not_a_directory(path, st.st_size)


def _list_one_remote(path: RemotePath) -> dict[str, _Listing]:
    """``path``'s tree; ``UnreadableFileError`` when it is missing or not a directory."""
    fs = filesystem(path)
    try:
        tree = _remote_tree(path)
    except (FileNotFoundError, NotADirectoryError):
        tree = {}
    except OSError as exc:
        raise UnreadableFileError(str(path), _first_line(exc)) from None
    listing = tree.get(str(path))
    if listing is None or not (listing.files or listing.dirs):
        # Object stores list a missing prefix, or a file, as an empty directory (or fail).
        try:
            if not fs.is_dir(path.inner):
                raise _not_a_directory(path, fs.size(path.inner))
        except FileNotFoundError:
            raise MissingPathError(str(path)) from None
        except OSError as exc:
            raise UnreadableFileError(str(path), _first_line(exc)) from None
        tree[str(path)] = _Listing(path, {}, {})
    return tree


def _first_line(exc: OSError) -> str:
    lines = str(exc).strip().splitlines()
    return exc.strerror or (lines[0] if lines else type(exc).__name__)


def _list_remote(paths: list[RemotePath]) -> dict[str, _Listing]:
    """The trees of every given URI, listed in parallel."""
    out: dict[str, _Listing] = {}
    if len(paths) <= 1:
        for p in paths:
            out.update(_list_one_remote(p))
        return out
    from concurrent.futures import ThreadPoolExecutor  # imports logging: only for URIs

    with ThreadPoolExecutor(max_workers=min(LISTING_THREADS, len(paths))) as pool:
        for tree in pool.map(_list_one_remote, paths):
            out.update(tree)
    return out


# --------------------------------------------------------------------------------------------
# Root checkpoints


def read_root_checkpoints(
    log_dir: LogDir, problems: list[str] | None = None
) -> dict[str, OffsetCheckpoint]:
    """The root offset checkpoints of ``log_dir`` by file name (``OffsetCheckpointFile#read``).

    A missing file is an absent key; a garbled one is an ``OffsetCheckpoint`` carrying its
    problems; an unreadable one is left out and described in ``problems`` when given. Bytes are
    read (not text) so that a non-UTF-8 line is one problem, not a lost file.
    """
    out: dict[str, OffsetCheckpoint] = {}
    for file_name, path in sorted(log_dir.checkpoints.items()):
        checkpoint = _read_checkpoint(path, problems)
        if checkpoint is not None:
            out[file_name] = checkpoint
    return out


def _read_checkpoint(path: Path, problems: list[str] | None) -> OffsetCheckpoint | None:
    try:
        with open_bytes(path) as data:
            return read_offset_checkpoint(bytes(data), path=str(path))
    except UnreadableFileError as exc:
        if problems is not None:
            problems.append(str(exc))
        return None


def high_watermarks(
    log_dir: LogDir, problems: list[str] | None = None
) -> dict[tuple[str, int], int]:
    """(topic, partition) -> high watermark from ``replication-offset-checkpoint``
    (``ReplicaManager`` HighWatermarkFilename); empty when that file is missing or unreadable.
    Malformed lines are skipped (see ``read_root_checkpoints`` for their problems)."""
    return _checkpoint_map(log_dir, HIGH_WATERMARK_CHECKPOINT, problems)


def log_start_offsets(
    log_dir: LogDir, problems: list[str] | None = None
) -> dict[tuple[str, int], int]:
    """(topic, partition) -> log start offset from ``log-start-offset-checkpoint``, as
    ``high_watermarks`` reads its file."""
    return _checkpoint_map(log_dir, LOG_START_CHECKPOINT, problems)


def _checkpoint_map(log_dir: LogDir, name: str, problems: list[str] | None
                    ) -> dict[tuple[str, int], int]:
    path = log_dir.checkpoints.get(name)
    checkpoint = None if path is None else _read_checkpoint(path, problems)
    return {} if checkpoint is None else checkpoint.as_map()


_META_PROPERTIES: dict[str, MetaProperties | None] = {}  # by path; None: it does not read


def _meta_properties_of(log_dir: LogDir | None) -> MetaProperties | None:
    """The log dir's ``meta.properties`` as read (None: no log dir, no such file, or one that
    does not read); read once per path."""
    from kafkatx.errors import KafkatxError
    from kafkatx.storage.files import read_text

    if log_dir is None or log_dir.meta_properties is None:
        return None
    key = str(log_dir.meta_properties)
    if key not in _META_PROPERTIES:
        try:
            _META_PROPERTIES[key] = read_meta_properties(read_text(log_dir.meta_properties),
                                                         path=key)
        except KafkatxError:
            _META_PROPERTIES[key] = None
    return _META_PROPERTIES[key]


def cluster_id_of(pdir: PartitionDir) -> str | None:
    """``cluster.id`` of the ``meta.properties`` of the log dir holding ``pdir`` (None: no log
    dir, no such file, or one that does not read)."""
    meta = _meta_properties_of(pdir.log_dir)
    return None if meta is None else meta.cluster_id


def node_id_of(log_dir: LogDir | None) -> int | None:
    """``node.id`` (``broker.id`` in version 0) of the log dir's ``meta.properties``: the broker
    whose log dir it is (None: unknown)."""
    meta = _meta_properties_of(log_dir)
    return None if meta is None else meta.node_id
