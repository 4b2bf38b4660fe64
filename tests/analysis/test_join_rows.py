"""The coordinator join without a timeline judges only some transactions, and finds what the
join of every transaction finds.

``TransactionJoin.join_partition`` with ``named`` (``inspect``, ``lso``, ``verify``) makes
``Transaction`` rows, markers and verdicts only for the open transactions, those of producers
the coordinator's records list for the partition or fenced, and those a finding names; with a
timeline it judges every one. On each bundled log dir (coordinator partitions with hanging,
pending, zombie, timed-out, compacted and prepared transactions, replicas, damage, restarts)
both must end with the same findings.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkatx.engines.local import AnalysisOptions, inspect_paths

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
DIRS = ["logdir", "corrupt", "replicas", "kraft", "realkafka/compacted",
        "realkafka/open-transaction", "restart/crashed", "restart/clean-no-snapshot",
        *(f"served/{p.name}" for p in sorted((FIXTURES / "served").iterdir()) if p.is_dir())]
NOW_MS = 1_800_000_000_000  # after every fixture's newest record


@pytest.mark.parametrize("name", DIRS)
def test_join_of_the_judged_transactions_finds_what_the_whole_join_finds(name: str) -> None:
    options = AnalysisOptions(now_ms=NOW_MS)
    judged = inspect_paths([FIXTURES / name], options=options)
    every = inspect_paths([FIXTURES / name], options=options, keep_timeline=True)
    assert every.timeline is not None and judged.timeline is None
    assert judged.findings == every.findings
    assert [r.findings for r in judged.partitions] == [r.findings for r in every.partitions]
    if name == "served/hanging":  # the join has something to say here
        assert any(f.kind == "hanging_transaction" for f in judged.findings)
