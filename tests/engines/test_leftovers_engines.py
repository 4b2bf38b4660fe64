"""Leftovers of an interrupted clean and delete, reported alike by the local and Spark engines.

The files follow ``LocalLog#replaceSegments`` (``.cleaned`` -> ``.swap``) and
``LocalLog#deleteSegmentFiles`` (``.deleted``); what the next load does with them is
``LogLoader#removeTempFilesAndCollectSwapFiles`` and the swap passes of ``LogLoader#load``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.engines.test_spark_engine import both
from tests.readonly import assert_unchanged, snapshot_tree

COMPACTED = Path(__file__).resolve().parents[2] / "fixtures" / "served" / "compacted"


def _with_leftovers(tmp_path: Path) -> Path:
    """The compacted fixture copied, with inventory-0 as a crash left it: segment 30 also as a
    complete ``.swap``, segment 54 also as ``.cleaned``, segment 0 also as ``.deleted``."""
    copy = tmp_path / "logdir"
    shutil.copytree(COMPACTED, copy)
    part = copy / "inventory-0"
    for base, suffix in ((30, ".swap"), (54, ".cleaned"), (0, ".deleted")):
        for kind in (".log", ".index", ".timeindex"):
            src = part / f"{base:020d}{kind}"
            shutil.copyfile(src, part / f"{src.name}{suffix}")
    return copy


@pytest.mark.usefixtures("spark_session")
def test_leftovers_reported_alike_on_both_engines(tmp_path: Path) -> None:
    logdir = _with_leftovers(tmp_path)
    before = snapshot_tree(logdir)
    local, spark = both("verify", logdir, "--format", "json")
    assert_unchanged(logdir, before)
    assert spark == local
    found = {(f["kind"], f["offset"]): f for f in json.loads(local)["findings"]
             if f["kind"] in ("interrupted_log_clean", "segment_deletion_pending")}
    assert set(found) == {("interrupted_log_clean", 30), ("interrupted_log_clean", 54),
                          ("segment_deletion_pending", 0)}
    swap = found["interrupted_log_clean", 30]
    assert swap["severity"] == "info"
    assert swap["location"].endswith("inventory-0/00000000000000000030.log.swap")
    assert "offsets in [30, " in swap["message"] and "base offset 30)" in swap["message"]
    assert "before its swap" in found["interrupted_log_clean", 54]["message"]
