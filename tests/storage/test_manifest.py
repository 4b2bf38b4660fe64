from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kafkatx import __version__
from kafkatx.errors import KafkatxError
from kafkatx.storage import local_read
from kafkatx.storage.discovery import discover, read_root_checkpoints
from kafkatx.storage.files import current_manifest, open_bytes, read_text
from kafkatx.storage.manifest import Manifest, ManifestEntry, recording
from tests.readonly import assert_unchanged, snapshot_tree

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
LOGDIR = FIXTURES / "logdir"
WHEN = datetime(2025, 11, 21, 4, 41, 7, tzinfo=UTC)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_reads_are_recorded_while_recording() -> None:
    before = snapshot_tree(LOGDIR)
    manifest = Manifest(roots=[LOGDIR])
    (log_dir,) = discover([LOGDIR]).log_dirs
    assert len(manifest) == 0  # discovery opens nothing
    with recording(manifest) as m:
        assert m is manifest and current_manifest.get() is manifest
        read_root_checkpoints(log_dir)
        read_text(LOGDIR / "meta.properties")
    assert current_manifest.get() is None
    read_text(LOGDIR / "payments-0" / "partition.metadata")  # not recorded: outside the block
    paths = [Path(e.path) for e in manifest.entries]
    assert paths == [(LOGDIR / n).absolute() for n in sorted(log_dir.checkpoints)] + [
        (LOGDIR / "meta.properties").absolute()]
    for entry in manifest.entries:
        path = Path(entry.path)
        st = os.stat(path)
        assert entry.sha256 == sha256(path)
        assert entry.size == st.st_size
        assert entry.mtime_ns == st.st_mtime_ns
    assert manifest.changed_paths() == ()
    assert_unchanged(LOGDIR, before)


def test_relative_paths_are_made_absolute(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(LOGDIR)
    manifest = Manifest()
    with recording(manifest):
        read_text("meta.properties")
    (entry,) = manifest.entries
    assert entry.path == str(LOGDIR / "meta.properties")


def test_same_read_twice_is_one_entry() -> None:
    manifest = Manifest()
    with recording(manifest), open_bytes(LOGDIR / "meta.properties") as a, \
            open_bytes(LOGDIR / "meta.properties") as b:
        assert a == b
    assert len(manifest) == 1


def test_changed_file_gives_two_entries(tmp_path: Path) -> None:
    f = tmp_path / "x"
    f.write_bytes(b"one")
    manifest = Manifest()
    with recording(manifest):
        read_text(f)
        f.write_bytes(b"two!")
        read_text(f)
    first, second = manifest.entries
    assert (first.size, second.size) == (3, 4)
    assert second.sha256 == hashlib.sha256(b"two!").hexdigest()
    assert manifest.changed_paths() == (str(f),)


def test_mapped_reads_are_hashed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_read, "MMAP_THRESHOLD", 1)
    f = tmp_path / "big.log"
    f.write_bytes(os.urandom(5000))
    manifest = Manifest()
    with recording(manifest), open_bytes(f) as data:
        assert not isinstance(data, bytes)  # an mmap
    (entry,) = manifest.entries
    assert entry == ManifestEntry(path=str(f), size=5000, mtime_ns=f.stat().st_mtime_ns,
                                  sha256=sha256(f))


def test_record_without_stat(tmp_path: Path) -> None:
    f = tmp_path / "x"
    f.write_bytes(b"abc")
    entry = Manifest().record(f, b"abc")
    assert entry.mtime_ns == f.stat().st_mtime_ns
    assert Manifest().record(tmp_path / "gone", b"").mtime_ns is None


def test_failed_read_records_nothing(tmp_path: Path) -> None:
    manifest = Manifest()
    with recording(manifest), pytest.raises(KafkatxError):
        read_text(tmp_path / "missing")
    assert len(manifest) == 0


def _recorded_fixture_manifest() -> Manifest:
    manifest = Manifest(roots=[LOGDIR])
    with recording(manifest):
        for name in ("meta.properties", "payments-0/00000000000000000000.log"):
            with open_bytes(LOGDIR / name):
                pass
    return manifest


def test_write_sha256sum_format(tmp_path: Path) -> None:
    manifest = _recorded_fixture_manifest()
    out = manifest.write(tmp_path / "manifest.sha256", written_at=WHEN)
    lines = out.read_text().splitlines()
    assert lines[0] == (f"# kafkatx {__version__} manifest of files read, written "
                        "2025-11-21T04:41:07Z (UTC)")
    assert lines[1:] == [
        f"{sha256(LOGDIR / 'meta.properties')}  {LOGDIR / 'meta.properties'}",
        f"{sha256(LOGDIR / 'payments-0/00000000000000000000.log')}  "
        f"{LOGDIR / 'payments-0/00000000000000000000.log'}"]


@pytest.mark.skipif(shutil.which("sha256sum") is None, reason="needs GNU sha256sum")
def test_sha256sum_verifies_the_manifest(tmp_path: Path) -> None:
    odd = tmp_path / "evidence" / "odd\\name\nwith newline"
    odd.parent.mkdir()
    odd.write_bytes(b"payload")
    manifest = Manifest(roots=[odd.parent])
    with recording(manifest):
        read_text(odd)
        read_text(LOGDIR / "meta.properties")
    out = manifest.write(tmp_path / "m.sha256")
    assert out.read_bytes().split(b"\n")[1].startswith(b"\\")  # GNU escaping of the odd name
    done = subprocess.run(["sha256sum", "--check", "--strict", str(out)],
                          capture_output=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count(b": OK") == 2
    odd.write_bytes(b"tampered")
    done = subprocess.run(["sha256sum", "--check", "--strict", str(out)],
                          capture_output=True, check=False)
    assert done.returncode == 1 and b"FAILED" in done.stdout


def test_to_json() -> None:
    manifest = _recorded_fixture_manifest()
    data = json.loads(manifest.to_json(written_at=WHEN))
    assert data["kafkatx_version"] == __version__
    assert data["written_at"] == "2025-11-21T04:41:07Z"
    assert data["roots"] == [str(LOGDIR)]
    assert [f["path"] for f in data["files"]] == [e.path for e in manifest.entries]
    assert data["files"][0] == manifest.entries[0].to_dict()
    assert set(data["files"][0]) == {"path", "size", "mtime_ns", "sha256"}
    assert data["changed_paths"] == []


@pytest.mark.parametrize("target", ["manifest.sha256", "payments-0/m.sha256", "sub/dir/m",
                                    "."])
def test_never_writes_inside_an_inspected_root(tmp_path: Path, target: str) -> None:
    evidence = tmp_path / "evidence"
    shutil.copytree(LOGDIR, evidence)
    before = snapshot_tree(evidence)
    manifest = Manifest(roots=[tmp_path / "elsewhere", evidence])
    with pytest.raises(KafkatxError, match="inside the inspected path"):
        manifest.write(evidence / target)
    assert_unchanged(evidence, before)


def test_never_writes_inside_a_root_through_a_symlink(tmp_path: Path) -> None:
    evidence = tmp_path / "evidence"
    evidence.mkdir()
    (tmp_path / "alias").symlink_to(evidence)
    manifest = Manifest(roots=[evidence])
    with pytest.raises(KafkatxError, match="inside the inspected path"):
        manifest.write(tmp_path / "alias" / "m.sha256")
    assert list(evidence.iterdir()) == []
    # ... and a root given through the alias protects the real directory too.
    with pytest.raises(KafkatxError):
        Manifest(roots=[tmp_path / "alias"]).write(evidence / "m.sha256")


def test_writes_next_to_a_root(tmp_path: Path) -> None:
    evidence = tmp_path / "evidence"
    evidence.mkdir()
    manifest = Manifest(roots=[evidence])
    out = manifest.write(tmp_path / "evidence.sha256")  # a sibling whose name starts alike
    assert out.read_text().startswith("# kafkatx ")


def test_write_error_is_a_kafkatx_error(tmp_path: Path) -> None:
    with pytest.raises(KafkatxError, match="cannot write the manifest"):
        Manifest().write(tmp_path / "no" / "such" / "dir" / "m.sha256")
