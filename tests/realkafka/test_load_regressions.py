"""kafkatx's restart view against Kafka's recorded load of named log dirs (no Java needed).

Each case of :mod:`.load_regressions` is a mismatch the oracle (``test_load_oracle.py``) or the
issue that started it found once, shrunk to a small log dir built deterministically; Kafka's
answer for both pinned versions is recorded in ``load_regressions.json``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .dist import KAFKA_VERSIONS
from .load_compare import differences, kafkatx_view
from .load_regressions import CASES, PARTITION_DIR, build_case, recorded, spec_of

ANSWERS = recorded()


def test_every_case_has_kafkas_answer_for_every_version() -> None:
    assert sorted(ANSWERS) == sorted(CASES)
    assert all(sorted(ANSWERS[name]) == sorted(KAFKA_VERSIONS) for name in CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_after_restart_equals_kafkas_recorded_load(name: str, tmp_path: Path) -> None:
    log_dir = build_case(name, tmp_path)
    hw = int((log_dir / "replication-offset-checkpoint").read_text().split()[-1])
    ours = kafkatx_view(log_dir, PARTITION_DIR, spec_of(name).now_ms, hw)
    for version in KAFKA_VERSIONS:
        diffs = differences(ANSWERS[name][version], ours)
        assert not diffs, f"{name} (Kafka {version}): {CASES[name][0]}\n" + "\n".join(diffs)
