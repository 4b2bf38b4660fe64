"""URIs as paths: discovery and reads through pyarrow.fs (``file://``) and fsspec (``memory://``)
give what the os-based code gives for the same tree; ``RemotePath`` behaves as discovery and
the analysis need. The S3 side, with a real S3 server, is in tests/engines/test_remote_paths.py.
"""

from __future__ import annotations

import json
import pickle
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafkatx.cli.main import cli
from kafkatx.errors import UnreadableFileError
from kafkatx.storage import filesystems
from kafkatx.storage.discovery import Discovery, discover, high_watermarks, read_root_checkpoints
from kafkatx.storage.files import open_bytes
from kafkatx.storage.filesystems import RemotePath, Store
from tests.readonly import assert_unchanged, snapshot_tree

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
UUID_HEX = "0123456789abcdef0123456789abcdef"
SEGMENT = "00000000000000000000.log"


def _touch(path: Path, content: bytes = b"") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)


def _partition(directory: Path, *files: str) -> None:
    for name in files or (SEGMENT, "00000000000000000000.index"):
        _touch(directory / name, b"x" * len(name))


def build_zoo(root: Path) -> Path:
    """Every kind of tree discovery sorts out: brokers' log dirs (one a real fixture copy),
    suffixed and duplicate partition dirs, transient files, foreign and badly named dirs,
    directories at and beyond the search depth."""
    shutil.copytree(FIXTURES / "logdir", root / "incident" / "broker-1" / "data")
    b2 = root / "incident" / "broker-2" / "data"
    _touch(b2 / "meta.properties", b"version=1\nnode.id=2\ncluster.id=abc\n")
    _touch(b2 / ".kafka_cleanshutdown")
    _touch(b2 / ".lock")
    _partition(b2 / "payments-0")
    _partition(b2 / f"payments-1.{UUID_HEX}-future")
    _partition(b2 / f"old-3.{UUID_HEX}-stray")
    _touch(b2 / "remote-log-index-cache" / "x.index")
    _touch(b2 / "lost+found" / "junk")
    _partition(root / "dups" / "t-1")
    _partition(root / "dups" / "t-01")
    _partition(root / "transient" / "t-0", SEGMENT, f"{SEGMENT}.deleted",
               "00000000000000000010.log.swap", "00000000000000000010.index.cleaned",
               "00000000000000000005.snapshot", "00000000000000000003.snapshot.deleted",
               "leader-epoch-checkpoint", "partition.metadata", "quorum-state")
    _partition(root / "a" / "b" / "c" / "d" / "deep-0")
    _partition(root / "x" / "a" / "b" / "c" / "d" / "too-deep-1")
    _partition(root / "not a partition")
    _touch(root / "notes.txt", b"collected 2025-11-21\n")
    return root


def as_local(disc: Discovery, uri_root: str, local_root: Path) -> str:
    return json.dumps(disc.to_dict(), sort_keys=True).replace(uri_root, str(local_root))


@pytest.fixture(scope="module")
def zoo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_zoo(tmp_path_factory.mktemp("zoo"))


def test_file_uri_discovery_equals_local(zoo: Path) -> None:
    before = snapshot_tree(zoo)
    uri = f"file://{zoo}"
    cases = [
        [zoo],
        [zoo / "incident" / "broker-2" / "data", zoo / "incident" / "broker-1" / "data"],
        [zoo / "incident", zoo / "incident" / "broker-1" / "data" / "payments-0"],  # twice
        [zoo / "transient" / "t-0", zoo / "dups"],
        [zoo / "not a partition", zoo / "a"],
    ]
    for paths in cases:
        local = discover(paths)
        remote = discover([f"file://{p}" for p in paths])
        assert local.problems or local.all_partitions(), paths
        assert as_local(remote, uri, zoo) == json.dumps(local.to_dict(), sort_keys=True), paths
        assert all(isinstance(p.path, RemotePath) for p in remote.all_partitions())
    assert_unchanged(zoo, before)


def test_root_checkpoints_read_through_the_uri(zoo: Path) -> None:
    local = discover([zoo / "incident"]).log_dirs
    remote = discover([f"file://{zoo}/incident"]).log_dirs
    for a, b in zip(local, remote, strict=True):
        assert high_watermarks(a) == high_watermarks(b)
        assert {k: v.entries for k, v in read_root_checkpoints(a).items()} == {
            k: v.entries for k, v in read_root_checkpoints(b).items()}
    assert any(high_watermarks(d) for d in local)


def test_fsspec_memory_store(zoo: Path) -> None:
    """A scheme pyarrow does not know goes through fsspec (here its in-process memory store)."""
    import fsspec

    memory = fsspec.filesystem("memory")
    base = f"/kafkatx-{uuid.uuid4().hex[:8]}/data"
    source = zoo / "incident" / "broker-1" / "data"
    for f in source.rglob("*"):
        if f.is_file():
            memory.pipe(f"{base}/{f.relative_to(source)}", f.read_bytes())
    uri = f"memory:/{base}"
    remote = discover([uri])
    assert as_local(remote, uri, source) == json.dumps(discover([source]).to_dict(),
                                                        sort_keys=True)
    runner = CliRunner()
    local_out = runner.invoke(cli, ["lso", str(source), "--format", "json", "--engine", "local"])
    remote_out = runner.invoke(cli, ["lso", uri, "--format", "json", "--engine", "local"])
    assert local_out.exit_code == remote_out.exit_code == 0, remote_out.stderr
    assert json.loads(local_out.stdout)
    assert remote_out.stdout.replace(uri, str(source)) == local_out.stdout


def test_reads_are_the_same_through_both_filesystems(zoo: Path) -> None:
    segment = zoo / "incident" / "broker-1" / "data" / "payments-0" / SEGMENT
    uri = f"file://{segment}"
    data = segment.read_bytes()
    assert filesystems.read_bytes(uri) == data == filesystems.read_bytes(segment)
    assert filesystems.read_range(uri, 61, 200) == data[61:200]
    assert filesystems.read_range(segment, 61, 200) == data[61:200]
    assert filesystems.size(uri) == filesystems.size(segment) == len(data)
    with open_bytes(filesystems.remote_path(uri)) as got:
        assert got == data
    local_fs, inner = filesystems.resolve(zoo)
    arrow_fs, arrow_inner = filesystems.resolve(f"file://{zoo}")
    assert isinstance(local_fs, filesystems.LocalFileSystem)
    assert isinstance(arrow_fs, filesystems.ArrowFileSystem)

    def tree(fs: filesystems.FileSystem, top: str) -> dict[str, set[filesystems.Entry]]:
        return {d.removeprefix(top): set(e) for d, e in fs.list_tree(top).items()}

    assert tree(local_fs, inner) == tree(arrow_fs, arrow_inner)
    assert set(local_fs.list_dir(inner)) == set(arrow_fs.list_dir(arrow_inner))
    assert arrow_fs.is_dir(arrow_inner) and not arrow_fs.is_dir(f"{arrow_inner}/notes.txt")


def test_unreadable_uris_are_one_line_errors(zoo: Path) -> None:
    missing = f"file://{zoo}/nothing-here"
    for call in (lambda: discover([missing]), lambda: filesystems.read_bytes(missing)):
        with pytest.raises(UnreadableFileError) as err:
            call()
        assert str(err.value) == f"{missing}: no such file or directory"
    with pytest.raises(UnreadableFileError, match=r"not a directory .*size 21"):
        discover([f"file://{zoo}/notes.txt"])
    with pytest.raises(UnreadableFileError) as err:
        discover(["nosuchscheme://host/logdir"])
    assert str(err.value).startswith("nosuchscheme://host/logdir: ") and "\n" not in str(err.value)
    result = subprocess.run([sys.executable, "-m", "kafkatx", "inspect", missing, "--engine",
                             "local"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr == f"kafkatx: error: {missing}: no such file or directory\n"


def test_manifest_needs_local_paths(zoo: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["lso", f"file://{zoo}/incident", "--engine", "local",
                                      "--manifest", str(tmp_path / "m.sha256")])
    assert result.exit_code == 2 and "--manifest" in result.stderr


# --------------------------------------------------------------------------------------------
# RemotePath


S3_STORE = Store(uri="s3://bucket/logdir/?endpoint_override=127.0.0.1:9&scheme=http",
                 root="s3://bucket/logdir", prefix="s3://")


def test_remote_path_is_shown_without_its_query() -> None:
    root = RemotePath("s3://bucket/logdir/", S3_STORE)
    seg = root / "orders-0" / SEGMENT
    assert str(root) == "s3://bucket/logdir" and str(seg) == f"s3://bucket/logdir/orders-0/{SEGMENT}"
    assert seg.inner == f"bucket/logdir/orders-0/{SEGMENT}"
    assert seg.uri == f"{seg}?endpoint_override=127.0.0.1:9&scheme=http"
    assert seg.name == SEGMENT and seg.parent.name == "orders-0"
    assert seg.parent.parent == root and root.parent.parent == RemotePath("s3://bucket", S3_STORE)
    assert RemotePath("s3://bucket", S3_STORE).parent.name == "bucket"
    assert filesystems.display("S3://bucket/logdir/?region=x#frag") == "s3://bucket/logdir"


def test_remote_path_compares_like_a_path() -> None:
    a = RemotePath("s3://bucket/logdir/orders-0", S3_STORE)
    b = RemotePath("s3://bucket/logdir/orders-1", S3_STORE)
    assert a == Path(str(a)) and Path(str(a)) == a and a != Path(str(b))
    assert hash(a) == hash(Path(str(a)))
    assert a.parent == Path(str(a)).parent
    assert sorted([b, a]) == [a, b] and len({a, RemotePath(str(a), S3_STORE)}) == 1
    copy = pickle.loads(pickle.dumps(a))
    assert copy == a and copy.store == S3_STORE and copy.uri == a.uri


def test_text_paths_find_their_store_again(tmp_path: Path) -> None:
    _partition(tmp_path / "a" / "t-0")
    _partition(tmp_path / "b" / "t-0")
    root = filesystems.remember(f"file://{tmp_path}/a")
    again = filesystems.remote_path(f"file://{tmp_path}/a/t-0/{SEGMENT}")
    assert again.store is root.store and again.inner == str(tmp_path / "a" / "t-0" / SEGMENT)
    elsewhere = filesystems.remote_path(f"file://{tmp_path}/b")
    assert elsewhere.store.root == f"file://{tmp_path}/b"


def test_uri_and_path_helpers(zoo: Path) -> None:
    assert filesystems.is_uri("s3://b/k") and filesystems.is_uri("hdfs://nn:8020/x")
    assert not filesystems.is_uri("/tmp/x") and not filesystems.is_uri("C://x")
    assert not filesystems.is_uri(Path("/tmp")) and not filesystems.is_uri("rel/a://b")
    assert filesystems.canonical(f"file://{zoo}/") == str(zoo.resolve())
    assert filesystems.canonical("s3://b/k/?x=1") == "s3://b/k"
    assert filesystems.is_inside("s3://b/k/t-0", "s3://b/k")
    assert not filesystems.is_inside("s3://b/k2", "s3://b/k")


def test_a_uri_neither_pyarrow_nor_fsspec_opens_says_pyarrows_reason_first() -> None:
    """pyarrow's S3FileSystem refuses an unknown URI option; the one-line error leads with that
    (the fsspec fallback's "Install s3fs" alone would point the wrong way)."""
    uri = "s3://bucket/logdir?endpoint_override=127.0.0.1:9&bogus=1"
    with pytest.raises(UnreadableFileError) as err:
        discover([uri])
    message = str(err.value)
    assert "\n" not in message
    assert message.split(": ", 1)[1].startswith("Unexpected query parameter in S3 URI: 'bogus'")
