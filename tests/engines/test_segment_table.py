"""The Spark data source's pure core, without Spark: splits, the Arrow reader, rows -> scans."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from kafkatx.engines import segment_table
from kafkatx.engines.base import AUTO, LOCAL, SPARK, EngineConfig
from kafkatx.engines.factory import AUTO_SPARK_BYTES, resolve_engine_name
from kafkatx.engines.local import analyze_partition
from kafkatx.engines.side_tables import list_segments
from kafkatx.formats.batchscan import HeaderColumns
from kafkatx.formats.segment_scan import scan_segment
from kafkatx.storage.discovery import discover
from tests.analysis.logdirs import LogDirBuilder
from tests.engines.fleet import build_fleet
from tests.readonly import assert_unchanged, snapshot_tree

pa = pytest.importorskip("pyarrow")


def _big_partition(root: Path) -> Path:
    b = LogDirBuilder(root)
    p = b.partition("t", 0)
    for i in range(60):
        p.data(pid=5, n=3, txn=True, size=40)
        if i % 4 == 3:
            p.commit(pid=5, epoch=0)
    b.build()
    return root / "t-0"


def _table(root: Path, split_size: int) -> pa.Table:
    refs = list_segments([str(root)])
    groups = segment_table.plan_splits(refs, split_size)
    batches = [segment_table.read_split(s) for g in groups for s in g]
    return pa.Table.from_batches(batches, schema=segment_table.arrow_schema())


def test_big_segments_are_cut_at_batch_starts_from_the_index(tmp_path: Path) -> None:
    pdir = _big_partition(tmp_path)
    [ref] = list_segments([str(tmp_path)])
    assert ref.size > 4 * 1024
    cuts = segment_table.cut_points(ref, 1024)
    starts = set(scan_segment(ref_bytes := Path(ref.log).read_bytes()).headers.position.tolist())
    assert cuts and all(c in starts for c in cuts), (cuts, sorted(starts)[:10])
    assert all(b - a >= 1024 for a, b in itertools.pairwise([0, *cuts]))
    groups = segment_table.plan_splits([ref], 1024)
    splits = [s for g in groups for s in g]
    assert splits[0].start == 0 and splits[-1].end == len(ref_bytes)
    assert all(a.end == b.start for a, b in itertools.pairwise(splits))
    assert pdir.is_dir()


def test_small_segments_share_a_task() -> None:
    refs = [segment_table.SegmentRef(partition_dir="/d", topic="t", partition=0,
                                     log=f"/d/{i:020d}.log", base_offset=i, size=100)
            for i in range(10)]
    groups = segment_table.plan_splits(refs, 450)
    assert [len(g) for g in groups] == [4, 4, 2]


def test_rows_equal_the_whole_file_scan(tmp_path: Path) -> None:
    _big_partition(tmp_path)
    table = _table(tmp_path, 700)
    assert table.schema == segment_table.arrow_schema()
    assert len(set(table.column("split_start").to_pylist())) > 3
    assert all(table.column("split_clean").to_pylist())
    [log] = sorted(tmp_path.glob("t-0/*.log"))
    whole = scan_segment(log.read_bytes(), path=str(log))
    order = np.argsort(table.column("position").to_numpy())
    for name in HeaderColumns.COLUMNS:
        got = table.column(name).to_numpy(zero_copy_only=False)[order]
        want = getattr(whole.headers, name).astype(got.dtype)
        assert np.array_equal(got, want), name
    got_ctl = table.column("control_type").to_numpy()[order]
    assert np.array_equal(got_ctl, whole.control_type)
    assert table.column("last_offset").to_pylist()[order[-1]] == int(whole.headers.last_offset[-1])


def test_scans_from_rows_are_the_local_scans_and_damage_is_rescanned(tmp_path: Path) -> None:
    fleet = build_fleet(tmp_path, seed=3, brokers=1, partitions=5, steps=50)
    before = snapshot_tree(fleet.root)
    table = _table(fleet.root, 1024)
    assert not all(table.column("split_clean").to_pylist())  # the flipped byte, the torn tail
    rescanned: list[str] = []
    for pdir in discover([fleet.root]).all_partitions():
        key = str(pdir.path)
        mine = table.filter(pa.compute.equal(table.column("partition_dir"), key))

        def rescan(path: Path) -> object:
            rescanned.append(str(path))
            return segment_table._whole_file_scan(path)

        scan_of = segment_table.scans_from_rows(pdir, mine, rescan=rescan)  # type: ignore[arg-type]
        for seg in pdir.segments:
            assert seg.log is not None
            got = scan_of(seg.log)
            want = scan_segment(seg.log.read_bytes(), path=str(seg.log))
            assert got.headers.to_dict() == want.headers.to_dict()
            assert got.control_type.tolist() == want.control_type.tolist()
            assert got.coordinator_epoch.tolist() == want.coordinator_epoch.tolist()
            assert got.problems == want.problems and got.size == want.size
        local = analyze_partition(pdir)
        spark_like = analyze_partition(pdir, scan=segment_table.scans_from_rows(pdir, mine))
        assert spark_like.to_dict() == local.to_dict()
        assert [f.to_dict() for f in spark_like.findings] == [f.to_dict() for f in local.findings]
    assert 1 <= len(set(rescanned)) <= 3  # only the damaged segments were read again
    assert_unchanged(fleet.root, before)


def test_auto_picks_spark_only_for_a_master_or_a_big_input_on_many_cores() -> None:
    auto = EngineConfig(name=AUTO)
    assert resolve_engine_name(auto, 10, cores=64) == LOCAL
    assert resolve_engine_name(auto, AUTO_SPARK_BYTES, cores=2) == LOCAL
    assert resolve_engine_name(EngineConfig(name=LOCAL, master="yarn"), 0) == LOCAL
    has_spark = resolve_engine_name(EngineConfig(name=AUTO, master="local[2]"), 0)
    assert has_spark in (SPARK, LOCAL)  # LOCAL only where pyspark is not installed
    assert resolve_engine_name(auto, AUTO_SPARK_BYTES, cores=64) == has_spark


def test_sizes() -> None:
    assert segment_table.parse_size("128m") == 128 * 1024**2
    assert segment_table.parse_size("4096") == 4096
    assert segment_table.parse_size("1.5k") == 1536
    with pytest.raises(ValueError):
        segment_table.parse_size("lots")


def test_uri_listing_finds_what_discovery_finds(tmp_path: Path) -> None:
    """A URI (s3://, hdfs://...; here file://, through pyarrow.fs) lists the same segments."""
    from kafkatx.engines import side_tables

    fleet = build_fleet(tmp_path, seed=5, brokers=1, partitions=3, steps=30)
    (fleet.root / "broker-1" / "orders-0.abc-delete").mkdir()  # not live: left out
    uri = f"file://{fleet.root}"
    local = list_segments([str(fleet.root)])
    remote = list_segments([uri])
    assert local and [
        (r.topic, r.partition, r.log.replace(uri, str(fleet.root)), r.base_offset, r.size,
         r.index and r.index.replace(uri, str(fleet.root))) for r in remote
    ] == [(r.topic, r.partition, r.log, r.base_offset, r.size, r.index) for r in local]
    for ref in remote:
        assert ref.log.startswith(uri)
        assert segment_table.read_range(ref.log, 0, ref.size) == Path(
            ref.log.removeprefix("file://")).read_bytes()
    for kind in (side_tables.TXN_INDEX, side_tables.SNAPSHOT):
        files = side_tables.list_side_files([uri], kind)
        assert [f.path.replace(uri, str(fleet.root)) for f in files] == [
            f.path for f in side_tables.list_side_files([str(fleet.root)], kind)]
