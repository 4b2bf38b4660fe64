"""The Spark engine against the local engine: identical JSON, on generated fleets and fixtures.

The commands run in-process through the real CLI (click's runner), once per engine; the Spark
runs reuse the test session (``local[2]``) with tiny splits, so big segments are cut at index
entries and damaged ones are rescanned. Also: the data sources as a Spark user reads them, and
the CLI's behaviour without pyspark.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kafkatx.cli.main import cli
from kafkatx.engines import side_tables
from kafkatx.formats.segment_scan import scan_segment
from kafkatx.storage.discovery import discover
from tests.engines.fleet import build_fleet
from tests.readonly import assert_unchanged, snapshot_tree

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
SPARK_ARGS = ("--engine", "spark")
SMALL_SPLITS = ("--split-size", "4k")  # segments cut at index entries; damaged ones rescanned


def run(*args: str | Path, expect: int = 0) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == expect, (result.stdout, result.stderr)
    return result.stdout


def both(*args: str | Path, expect: int = 0, spark: tuple[str, ...] = ()) -> tuple[str, str]:
    """The command's stdout with the local engine and with Spark (``spark``: more options)."""
    return (run(*args, "--engine", "local", expect=expect),
            run(*args, *SPARK_ARGS, *spark, expect=expect))


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fleet")
    build_fleet(root, seed=11, brokers=2, partitions=6, steps=70)
    return root


@pytest.mark.usefixtures("spark_session")
def test_lso_inspect_verify_identical_json(fleet: Path) -> None:
    paths = [fleet, FIXTURES / "logdir", FIXTURES / "corrupt", FIXTURES / "legacy"]
    before = {p: snapshot_tree(p) for p in paths}
    local, spark = both("lso", *paths, "--format", "json")
    assert json.loads(local) and spark == local
    local, spark = both("inspect", *paths, "--format", "json", "--now", "2025-11-21T06:00:00Z",
                        spark=SMALL_SPLITS)
    doc = json.loads(local)
    assert len(doc["partitions"]) == 20 and spark == local
    kinds = {f["kind"] for f in doc["findings"]}
    assert {"crc_mismatch", "truncated_batch", "txnindex_mismatch", "open_transaction"} <= kinds
    local, spark = both("verify", *paths, "--format", "json", expect=1)
    assert spark == local
    for p in paths:
        assert_unchanged(p, before[p])


@pytest.mark.usefixtures("spark_session")
def test_replay_identical_jsonl(fleet: Path) -> None:
    before = snapshot_tree(fleet)
    cases = [
        ("orders", 0, ("--show-hidden",)),
        ("payments", 1, ("--isolation", "read_uncommitted")),
        ("orders", 2, ("--index-source", "rebuild", "--show-hidden")),
        ("payments", 3, ("--show-hidden", "--from-offset", "5", "--to-offset", "60")),
        ("orders", 4, ("--as-of-offset", "40", "--show-hidden")),
    ]
    for topic, partition, extra in cases:
        local, spark = both("replay", fleet / "broker-1", "--topic", topic, "--partition",
                            str(partition), "--format", "jsonl", *extra)
        assert local.count("\n") > 5, (topic, partition, extra)
        assert spark == local, (topic, partition, extra)
    local, spark = both("replay", FIXTURES / "logdir", "--topic", "payments", "--partition", "0",
                        "--diff", "--format", "jsonl")
    assert local and spark == local
    assert_unchanged(fleet, before)


@pytest.mark.usefixtures("spark_session")
def test_output_parquet_is_the_same_from_both_engines(fleet: Path, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    before = snapshot_tree(fleet)
    run("inspect", fleet, "--engine", "local", "--output", tmp_path / "local", "--format", "json")
    run("inspect", fleet, *SPARK_ARGS, "--output", tmp_path / "spark", "--format", "json")
    for name in ("partitions", "findings"):
        a = pq.read_table(tmp_path / "local" / f"{name}.parquet")
        b = pq.read_table(tmp_path / "spark" / f"{name}.parquet")
        assert a.num_rows > 0 and a.schema.equals(b.schema)
        assert a.to_pylist() == b.to_pylist()
    run("replay", fleet / "broker-1", "--topic", "orders", "--partition", "0", "--format",
        "jsonl", *SPARK_ARGS, "--output", tmp_path / "replay")
    records = pq.read_table(tmp_path / "replay" / "records.parquet")
    assert records.num_rows > 0 and "visible" in records.schema.names
    result = CliRunner().invoke(cli, ["lso", str(fleet), "--output", str(fleet / "out")])
    assert result.exit_code == 2 and "evidence" in result.stderr
    assert_unchanged(fleet, before)


def test_kafka_segments_data_source(spark_session: Any, fleet: Path) -> None:
    df = (spark_session.read.format("kafka_segments").option("splitSize", "2k")
          .load(str(fleet / "broker-2")))
    assert df.schema.simpleString().startswith("struct<partition_dir:string,topic:string,")
    rows = df.select("segment", "position", "base_offset", "last_offset", "producer_id",
                     "control_type", "split_clean").collect()
    assert all(r["split_clean"] for r in rows)  # broker-2 is undamaged
    got = sorted((r["segment"], r["position"], r["base_offset"], r["last_offset"],
                  r["producer_id"], r["control_type"]) for r in rows)
    want = []
    for pdir in discover([fleet / "broker-2"]).all_partitions():
        for seg in pdir.segments:
            assert seg.log is not None
            s = scan_segment(seg.log.read_bytes())
            h = s.headers
            want += [(os.path.abspath(seg.log), *v) for v in zip(
                h.position.tolist(), h.base_offset.tolist(), h.last_offset.tolist(),
                h.producer_id.tolist(), s.control_type.tolist(), strict=True)]
    assert got == sorted(want)
    assert spark_session.read.format("kafka_segments").load(str(fleet)).rdd.getNumPartitions() == 1


def test_side_data_sources(spark_session: Any, fleet: Path) -> None:
    for source, kind, path in (("kafka_txn_index", side_tables.TXN_INDEX, fleet),
                               ("kafka_producer_snapshots", side_tables.SNAPSHOT, fleet),
                               ("kafka_transaction_log", side_tables.TRANSACTION_LOG,
                                FIXTURES / "logdir")):
        got = [r.asDict() for r in spark_session.read.format(source).load(str(path)).collect()]
        want = side_tables.iter_local_rows([path], kind)
        assert got and len(got) == len(want), source
        key = sorted(want[0])
        assert sorted(tuple(r[k] for k in key) for r in got) == sorted(
            tuple(r[k] for k in key) for r in want), source


def test_without_pyspark_spark_is_one_line_and_local_still_works(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from kafkatx.engines import base, factory

    monkeypatch.setattr(factory, "spark_available", lambda: False)
    result = CliRunner().invoke(cli, ["lso", str(FIXTURES / "logdir"), "--engine", "spark"])
    assert result.exit_code == 1
    assert isinstance(result.exception, base.EngineUnavailableError)
    assert "pip install 'kafkatx[spark]'" in str(result.exception)
    assert "\n" not in str(result.exception)
    result = CliRunner().invoke(cli, ["lso", str(FIXTURES / "logdir"), "--master", "local[2]",
                                      "--format", "json"])
    assert result.exit_code == 0 and json.loads(result.stdout)  # auto falls back to local


def test_local_commands_never_import_pyspark() -> None:
    code = ("import sys\nfrom kafkatx.cli.main import main\n"
            "try:\n    main(['lso', 'fixtures/logdir', '--format', 'json'])\n"
            "except SystemExit:\n    pass\n"
            "assert 'pyspark' not in sys.modules and 'pyarrow' not in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    proc = subprocess.run([sys.executable, "-m", "kafkatx", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "inspect" in proc.stdout


@pytest.mark.usefixtures("spark_session")
def test_the_spark_cli_end_to_end_is_quiet_and_equal(tmp_path: Path) -> None:
    """A real ``kafkatx --engine spark`` process: its own JVM, only kafkatx's output."""
    env = {**os.environ, "COLUMNS": "200"}
    cmd = [sys.executable, "-m", "kafkatx", "lso", "fixtures/logdir", "fixtures/corrupt",
           "--format", "json"]
    before = snapshot_tree(FIXTURES)
    spark = subprocess.run([*cmd, "--engine", "spark", "--master", "local[1]"], cwd=ROOT,
                           capture_output=True, text=True, timeout=300, env=env)
    local = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert spark.returncode == 0, spark.stderr
    assert spark.stdout == local.stdout and spark.stderr == local.stderr
    assert_unchanged(FIXTURES, before)


@pytest.mark.usefixtures("spark_session")
def test_timeline_identical_jsonl(fleet: Path) -> None:
    """``kafkatx timeline``: the coordinator join of both engines, row for row."""
    paths = [FIXTURES / "logdir", fleet / "broker-2"]
    before = snapshot_tree(fleet)
    local, spark = both("timeline", *paths, "--format", "jsonl", "--now",
                        "2025-11-21T06:00:00Z")
    rows = [json.loads(line) for line in local.splitlines()]
    assert any(r.get("outcome") == "hanging" for r in rows), rows[:3]
    assert spark == local
    local, spark = both("timeline", *paths, "--format", "jsonl", "--transactional-id",
                        "ledger-writer")
    assert local and spark == local
    assert_unchanged(fleet, before)


def test_partitions_with_nothing_to_scan(spark_engine: Any, tmp_path: Path) -> None:
    """Empty segments only: no input split at all, still one report per partition."""
    for name in ("idle-0", "idle-1"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "00000000000000000000.log").write_bytes(b"")
        (tmp_path / name / "00000000000000000000.index").write_bytes(b"")
    local = run("lso", tmp_path, "--engine", "local", "--format", "json")
    spark = run("lso", tmp_path, *SPARK_ARGS, "--format", "json")
    assert len(json.loads(local)) == 2 and spark == local
    assert spark_engine.segments([str(tmp_path)]).count() == 0


def test_stage_progress_counts_finished_tasks(spark_session: Any) -> None:
    from kafkatx.engines.spark_session import StageProgress

    progress = StageProgress(spark_session, "test", enabled=False)
    assert progress.poll() == (0, 0)  # nothing running
    seen: list[tuple[int, int]] = []

    def slow(it: Any) -> Any:
        import time

        for x in it:
            time.sleep(0.3)
            yield x

    import threading

    job = threading.Thread(target=lambda: spark_session.sparkContext.parallelize(
        range(8), 4).mapPartitions(slow).count())
    job.start()
    while job.is_alive():
        seen.append(progress.poll())
        job.join(timeout=0.1)
    assert any(total == 4 for _, total in seen), seen
    assert all(done <= total for done, total in seen)
