"""Hostile evidence: every command answers damaged or odd log dirs with a finding or one line.

Never a traceback, never a hang, and the evidence stays as it was (tests/readonly.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.command import kafkatx
from tests.readonly import assert_unchanged, snapshot_tree

ROOT = Path(__file__).resolve().parent.parent
LOGDIR = ROOT / "fixtures" / "logdir"
SEGMENT = "payments-0/00000000000000000000"


def run(*args: str | Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return kafkatx(*args, timeout=timeout)


def copy_logdir(tmp_path: Path) -> Path:
    target = tmp_path / "logdir"
    shutil.copytree(LOGDIR, target)
    return target


def assert_one_line_error(proc: subprocess.CompletedProcess[str], code: int, *parts: str) -> None:
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("kafkatx: error:")]
    assert len(errors) == 1, proc.stderr
    for part in parts:
        assert part in errors[0]


@pytest.mark.parametrize("command", [["inspect"], ["dump"], ["lso", "--format", "csv"]])
def test_a_fifo_named_as_an_index_is_refused_not_waited_on(tmp_path: Path,
                                                           command: list[str]) -> None:
    """LogLoader#loadSegmentFiles reads only regular files (File::isFile): a FIFO named
    ``<offset>.txnindex`` is one line naming it, not an open that waits for a writer forever."""
    logdir = copy_logdir(tmp_path)
    fifo = logdir / f"{SEGMENT}.txnindex"
    fifo.unlink()
    os.mkfifo(fifo)
    mtime = fifo.stat().st_mtime_ns
    proc = run(command[0], logdir, *command[1:], timeout=60)
    assert_one_line_error(proc, 2, str(fifo), "not a regular file (a FIFO)")
    assert fifo.stat().st_mtime_ns == mtime


def test_a_segment_file_linked_to_a_device_is_refused(tmp_path: Path) -> None:
    """LogLoader#loadSegmentFiles reads only regular files (File::isFile): a ``.timeindex``
    linked to /dev/zero is one line naming it instead of a read that never ends."""
    logdir = copy_logdir(tmp_path)
    link = logdir / f"{SEGMENT}.timeindex"
    link.unlink()
    link.symlink_to("/dev/zero")
    before = snapshot_tree(logdir)
    proc = run("inspect", logdir, "--format", "json", timeout=60)
    assert_one_line_error(proc, 2, str(link), "not a regular file (a character device)")
    assert_unchanged(logdir, before)


def test_unicode_topics_and_paths_with_spaces_read_alike_in_every_format(tmp_path: Path) -> None:
    """LocalLog#parseTopicPartitionName checks only the form <topic>-<partition>: a non-ASCII
    topic under a path with spaces is a partition like any other, named the same in json and
    csv; names that are not of that form are one warning each, as a broker refuses them."""
    import csv
    import io
    import json

    logdir = tmp_path / "incident copy" / "broker 1"
    shutil.copytree(LOGDIR, logdir)
    shutil.copytree(logdir / "payments-1", logdir / "zahlungen-ü€-0")
    shutil.copytree(logdir / "payments-1", logdir / "payments-x")
    before = snapshot_tree(logdir)
    as_json = run("lso", logdir, "--format", "json")
    as_csv = run("lso", logdir, "--format", "csv")
    assert_unchanged(logdir, before)
    for proc in (as_json, as_csv):
        assert proc.returncode == 0 and "Traceback" not in proc.stderr
        assert f"kafkatx: warning: {logdir / 'payments-x'}: not a <topic>-<partition>" \
            in proc.stderr
    rows = {(r["topic"], r["partition"]): r for r in json.loads(as_json.stdout)}
    csv_rows = {(r["topic"], int(r["partition"])): r
                for r in csv.DictReader(io.StringIO(as_csv.stdout))}
    assert set(rows) == set(csv_rows) and ("zahlungen-ü€", 0) in rows
    assert rows["zahlungen-ü€", 0]["log_end_offset"] == rows["payments", 1]["log_end_offset"]
    assert csv_rows["zahlungen-ü€", 0]["last_stable_offset"] == "3"


FILE_NAMES = ("00000000000000000000.log", "00000000000000000000.index",
              "00000000000000000000.timeindex", "00000000000000000000.txnindex",
              "00000000000000000010.snapshot", "leader-epoch-checkpoint", "partition.metadata",
              "replication-offset-checkpoint", "meta.properties", "quorum-state",
              "00000000000000000000-0000000000.checkpoint")


@settings(max_examples=120, deadline=None)
@given(name=st.sampled_from(FILE_NAMES),
       topic=st.sampled_from(["payments", "__transaction_state", "__consumer_offsets",
                              "__cluster_metadata"]),
       content=st.one_of(st.binary(max_size=300),
                         st.text(max_size=120).map(lambda t: t.encode("utf-8", "replace"))))
def test_dump_of_any_bytes_yields_items_and_problems_never_an_exception(
        name: str, topic: str, content: bytes) -> None:
    """Whatever a file of a partition dir holds, dump's decoders (one per Kafka file format)
    end in items and problems, each problem with the file and, where a byte is to blame, its
    position; nothing else is raised."""
    import tempfile

    from kafkatx.analysis.dump import DumpFilter, DumpStats, dump

    with tempfile.TemporaryDirectory() as tmp:
        part = Path(tmp) / f"{topic}-0"
        part.mkdir()
        (part / name).write_bytes(content)
        stats = DumpStats()
        items = list(dump([str(part)], DumpFilter(), records=True, stats=stats))
    assert stats.files == 1 and not stats.unreadable
    for item in items:
        assert item["file"] == str(part / name)
        if item["kind"] == "problem":
            assert item["message"] and isinstance(item["position"], int)
            assert 0 <= item["position"] <= len(content)


@pytest.mark.parametrize("command", [["verify"], ["inspect"], ["lso"], ["dump"],
                                     ["replay", "--topic", "t", "--partition", "0"]])
def test_a_legacy_wrapper_whose_offsets_overflow_int32_is_a_located_finding(
        tmp_path: Path, command: list[str]) -> None:
    """A v0 gzip wrapper at offset 2^40 over inner offsets 0 and 1 (more than Kafka's int32
    relative offsets): a corrupt_region at byte 0 of the segment, never an internal error."""
    import struct

    from kafkatx.formats.compression import Codec
    from kafkatx.formats.legacy_message import build_legacy_entry

    entry = build_legacy_entry(offset=1, magic=0, compression=Codec.GZIP,
                               inner=[(None, b"a", 0), (None, b"b", 0)])
    segment = tmp_path / "logdir" / "t-0" / "00000000000000000000.log"
    segment.parent.mkdir(parents=True)
    segment.write_bytes(struct.pack(">q", 2**40) + entry[8:])
    before = snapshot_tree(tmp_path / "logdir")
    proc = run(command[0], tmp_path / "logdir", *command[1:], timeout=60)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1), proc.stderr
    out = proc.stdout + proc.stderr
    if command[0] in ("verify", "inspect", "dump"):
        assert f"{segment}:0" in out or "t-0" in out, out
        assert "int32" in out, out
    assert_unchanged(tmp_path / "logdir", before)
