"""``kafkatx groups`` gives the same answer on the local and the Spark engine, and writes the
same Parquet tables."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.engines.test_spark_engine import FIXTURES, both, run


@pytest.mark.usefixtures("spark_session")
def test_groups_identical_on_both_engines(tmp_path: Path) -> None:
    paths = [FIXTURES / "logdir", FIXTURES / "served" / "clean"]
    local, spark = both("groups", *paths, "--format", "json")
    groups = json.loads(local)
    assert {g["group"] for g in groups} == {"payments-app", "fulfilment"}
    assert spark == local
    tables = {}
    for engine in ("local", "spark"):
        out = tmp_path / engine
        run("groups", *paths, "--engine", engine, "--output", out, "--format", "csv")
        tables[engine] = {name: pq.read_table(out / f"{name}.parquet").to_pylist()
                          for name in ("group_offsets", "pending_transactional_commits")}
    assert tables["spark"] == tables["local"]
    rows = tables["local"]["group_offsets"]
    assert len(rows) == sum(len(g["partitions"]) for g in groups)
    assert {r["group"] for r in rows} == {"payments-app", "fulfilment"}
