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


def test_kafka_serves_past_the_log_end_where_the_docs_say_kafkatx_does_not() -> None:
    """The one documented difference of the restart view (docs/analysis.md): only that case
    has records Kafka served past its log end, on both versions."""
    past = {name: {v: a.get("delivered_past_log_end") for v, a in ANSWERS[name].items()}
            for name in CASES}
    assert past.pop("partial_last_batch_read_through_a_gap") == {v: [2, 3]
                                                                 for v in KAFKA_VERSIONS}
    assert not any(v for answers in past.values() for v in answers.values())  # None: failed
