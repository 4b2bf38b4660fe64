"""Log dirs on a remote store: both engines and the data sources on ``s3://`` (a real S3 server,
moto's, on 127.0.0.1) and ``file://`` URIs give exactly what they give on a local copy; the
paths in the output are the URIs as given (without their query string).

The Spark session of the test run was started before the endpoint existed, so its executors
learn the endpoint from the URIs' query (``?endpoint_override=...``), as they would on a
cluster. A fresh PySpark program (a subprocess) reads with the endpoint and credentials in its
environment instead, and without ``register(spark)``: the kafkatx data sources are found by
Spark's automatic lookup of ``pyspark_*`` modules.
"""

from __future__ import annotations

import importlib.util
import json
import os
import pkgutil
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from kafkatx.cli.main import cli
from kafkatx.engines import side_tables, spark_sources
from tests.engines.fleet import build_fleet
from tests.engines.s3_server import S3Endpoint, s3_endpoint
from tests.readonly import assert_unchanged, snapshot_tree

ROOT = Path(__file__).resolve().parents[2]
NOW = ("--now", "2025-11-21T06:00:00Z")
SOURCES = {spark_sources.SEGMENTS: spark_sources.KafkaSegmentsDataSource,
           spark_sources.TXN_INDEX: spark_sources.KafkaTxnIndexDataSource,
           spark_sources.PRODUCER_SNAPSHOTS: spark_sources.KafkaProducerSnapshotsDataSource,
           spark_sources.TRANSACTION_LOG: spark_sources.KafkaTransactionLogDataSource}


@dataclass(frozen=True)
class Evidence:
    """The same log dirs on the local disk (``root/fleet``, ``root/logdir``) and in S3."""

    root: Path
    s3: S3Endpoint

    @property
    def local(self) -> list[str]:
        return [str(self.root / "fleet"), str(self.root / "logdir")]

    @property
    def uris(self) -> list[str]:
        return [self.s3.uri("fleet"), self.s3.uri("logdir")]

    def localize(self, text: str) -> str:
        """Output about the S3 copy, with its paths turned into the local copy's."""
        return text.replace(f"s3://{self.s3.bucket}", str(self.root))


@pytest.fixture(scope="module")
def evidence(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Evidence]:
    root = tmp_path_factory.mktemp("evidence")
    build_fleet(root / "fleet", seed=13, brokers=2, partitions=4, steps=50)
    shutil.copytree(ROOT / "fixtures" / "logdir", root / "logdir")
    with s3_endpoint() as s3:
        s3.upload(root / "fleet", "fleet")
        s3.upload(root / "logdir", "logdir")
        yield Evidence(root, s3)


def run(*args: str | Path, expect: int = 0) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == expect, (result.stdout, result.stderr)
    return result.stdout


def same_answers(evidence: Evidence, engine: str, *extra: str) -> None:
    """``lso``, ``inspect`` (with ``extra`` options), ``verify``, ``replay`` on S3 with
    ``engine`` = the local engine on the local copy, and the bucket unchanged."""
    objects = evidence.s3.objects()
    before = snapshot_tree(evidence.root)
    for command, expect in ((("lso",), 0), (("inspect", *NOW, *extra), 0), (("verify",), 1)):
        want = run(*command, *evidence.local, "--format", "json", "--engine", "local",
                   expect=expect)
        got = run(*command, *evidence.uris, "--format", "json", "--engine", engine,
                  expect=expect)
        assert json.loads(want) and evidence.localize(got) == want, command
        assert "endpoint_override" not in got
        if command[0] == "inspect":  # paths shown as the URIs given, without the query
            assert f'"s3://{evidence.s3.bucket}/fleet/broker-1/orders-0"' in got
    replay = ("replay", "--topic", "payments", "--partition", "1", "--format", "jsonl",
              "--show-hidden")
    want = run(*replay, evidence.root / "fleet" / "broker-1", "--engine", "local")
    got = run(*replay, evidence.s3.uri("fleet/broker-1"), "--engine", engine)
    assert want.count("\n") > 5 and evidence.localize(got) == want
    assert evidence.s3.objects() == objects
    assert_unchanged(evidence.root, before)


def test_local_engine_reads_s3(evidence: Evidence) -> None:
    same_answers(evidence, "local")
    objects = evidence.s3.objects()
    for target in (evidence.s3.uri("logdir/out"), evidence.s3.uri("logdir", query=False)):
        result = CliRunner().invoke(cli, ["lso", *evidence.uris, "--output", target])
        assert result.exit_code == 2 and "evidence directories are never written" in (
            result.stderr), result.stderr
    assert evidence.s3.objects() == objects


@pytest.mark.usefixtures("spark_session")
def test_spark_engine_reads_s3(evidence: Evidence) -> None:
    same_answers(evidence, "spark", "--split-size", "4k")


@pytest.mark.usefixtures("spark_session")
def test_spark_engine_reads_file_uris(evidence: Evidence) -> None:
    args = ("inspect", "--format", "json", *NOW)
    want = run(*args, *evidence.local, "--engine", "local")
    got = run(*args, *(f"file://{p}" for p in evidence.local), "--engine", "spark")
    assert json.loads(want) and got.replace(f"file://{evidence.root}", str(evidence.root)) == want


def _rows(df: Any, evidence: Evidence) -> list[tuple[Any, ...]]:
    return sorted(tuple(evidence.localize(v) if isinstance(v, str) else v for v in r)
                  for r in df.collect())


def test_data_sources_read_s3(spark_session: Any, evidence: Evidence) -> None:
    for source, key in ((spark_sources.SEGMENTS, "fleet"), (spark_sources.TXN_INDEX, "fleet"),
                        (spark_sources.PRODUCER_SNAPSHOTS, "fleet"),
                        (spark_sources.TRANSACTION_LOG, "logdir")):
        reader = spark_session.read.format(source).option("splitSize", "2k")
        want = _rows(reader.load(str(evidence.root / key)), evidence)
        got = _rows(reader.load(evidence.s3.uri(key)), evidence)
        assert want and got == want, source


# --------------------------------------------------------------------------------------------
# Automatic registration


def test_the_autoload_modules_are_packaged() -> None:
    """pyproject installs one top-level ``pyspark_<source>`` module per data source, each with
    the ``DefaultSource`` Spark's lookup registers (one source per module)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = sorted(m.name for m in pkgutil.iter_modules([str(ROOT)])
                   if m.name.startswith("pyspark_"))
    assert found == sorted(config["py-modules"]) == sorted(f"pyspark_{n}" for n in SOURCES)
    for name in found:
        spec = importlib.util.spec_from_file_location(name, ROOT / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        source = module.DefaultSource
        assert source is SOURCES[source.name()] and name == f"pyspark_{source.name()}"


FRESH_PROGRAM = """
import json, sys
from pyspark.sql import SparkSession

spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
         .config("spark.sql.session.timeZone", "UTC").getOrCreate())
out = {}
for source, path in json.loads(sys.argv[1]):
    rows = spark.read.format(source).load(path).collect()
    out[source] = sorted(json.dumps(r.asDict(), sort_keys=True, default=str) for r in rows)
spark.stop()
print(json.dumps(out))
"""


@pytest.mark.usefixtures("spark_session")
def test_a_fresh_session_finds_the_sources_and_reads_s3_with_env_settings(
        evidence: Evidence, tmp_path: Path) -> None:
    """What a user's own PySpark program sees with kafkatx installed (the ``pyspark_*``
    modules on ``sys.path``, as site-packages has them) and S3 settings in the environment
    (inherited by local executors; ``spark.executorEnv.*`` on a cluster): no ``register``, no
    endpoint in the URI."""
    env = {**os.environ, **evidence.s3.env(), "PYTHONPATH": str(ROOT),
           "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    reads = [(s, evidence.s3.uri("logdir" if s == spark_sources.TRANSACTION_LOG else "fleet",
                                 query=False)) for s in SOURCES]
    result = subprocess.run([sys.executable, "-c", FRESH_PROGRAM, json.dumps(reads)],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    got = json.loads(result.stdout.strip().splitlines()[-1])
    for source, uri in reads:
        local = uri.replace(f"s3://{evidence.s3.bucket}", str(evidence.root))
        want = sorted(json.dumps(r, sort_keys=True, default=str) for r in local_rows(source, local))
        assert want and [evidence.localize(r) for r in got[source]] == want, source


def local_rows(source: str, path: str) -> list[dict[str, Any]]:
    """The rows of ``source`` under ``path``, read in this process."""
    from kafkatx.engines import segment_table

    if source == spark_sources.SEGMENTS:
        refs = side_tables.list_segments([path])
        return [row for group in segment_table.plan_splits(refs)
                for split in group for row in segment_table.read_split(split).to_pylist()]
    kind = {spark_sources.TXN_INDEX: side_tables.TXN_INDEX,
            spark_sources.PRODUCER_SNAPSHOTS: side_tables.SNAPSHOT,
            spark_sources.TRANSACTION_LOG: side_tables.TRANSACTION_LOG}[source]
    names = side_tables.arrow_schema(kind).names
    return [{k: r.get(k) for k in names} for r in side_tables.iter_local_rows([path], kind)]
