"""The replica comparison gives the same answer on the local and the Spark engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.analysis.test_replicas import unclean_election
from tests.engines.test_spark_engine import both


@pytest.mark.usefixtures("spark_session")
def test_replicas_identical_on_both_engines(tmp_path: Path) -> None:
    unclean_election(tmp_path)
    local, spark = both("inspect", tmp_path, "--format", "json", "--now",
                        "2025-11-21T06:00:00Z")
    doc = json.loads(local)
    assert [c["role"] for c in doc["replicas"][0]["copies"]] == ["diverged", "authoritative"]
    assert spark == local
