"""A hanging transaction's remediation says what a broker restart on the evidence would do to it
(issue 24: Kafka's load, ``kafkatx.analysis.restart_view``): forgotten with its records served
(``UnifiedLog#rebuildProducerState`` skips the rebuild after a clean shutdown with no snapshot),
or rebuilt open (no help)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkatx.analysis.findings import Finding
from kafkatx.storage.layout import CLEAN_SHUTDOWN_FILE
from tests.analysis.test_timeline import ABORT_CMD, T0, S, Scenario, dropped_marker, v


@pytest.fixture
def sc(tmp_path: Path) -> Scenario:
    return Scenario(tmp_path / "broker")


def _hang(sc: Scenario) -> Finding:
    (hang,) = [f for f in sc.inspect().findings if f.kind == "hanging_transaction"]
    return hang


def _clean_shutdown(sc: Scenario) -> None:
    sc.build()
    (sc.root / CLEAN_SHUTDOWN_FILE).write_text('{"version":0,"brokerEpoch":1}')


def test_a_restart_that_rebuilds_it_open_adds_no_step(sc: Scenario) -> None:
    dropped_marker(sc)  # no clean-shutdown marker: the load rebuilds the state from the log
    result = sc.inspect()
    (hang,) = [f for f in result.findings if f.kind == "hanging_transaction"]
    assert not any("restart" in s.what for s in hang.remediation_steps)
    (kept,) = [f for f in result.findings if f.kind == "restart_keeps_transaction"]
    assert (kept.topic, kept.partition, kept.offset) == ("p", 2, 1)


def test_a_restart_that_forgets_a_committed_one_serves_its_records(sc: Scenario) -> None:
    dropped_marker(sc)
    _clean_shutdown(sc)
    hang = _hang(sc)
    (step,) = [s for s in hang.remediation_steps if "broker restart" in s.what]
    assert step.command is None
    assert "would clear it too" in step.what and "serves its 3 record(s)" in step.what
    assert "COMMIT" in step.what
    # the numbered steps keep the export first and the abort last
    assert hang.remediation_steps[0].what.startswith("export the records first")
    assert hang.remediation_steps[-1].command == ABORT_CMD.format("p", 2, 1)


def test_a_restart_that_forgets_an_aborted_one_is_refused(sc: Scenario) -> None:
    pid, tid, parts = 7202, "refunds", {"r": [0, 1]}
    sc.coordinator(tid, [v(S.ONGOING, pid, 2, parts, 1_000, 1_000),
                         v(S.PREPARE_ABORT, pid, 2, parts, 1_000, 2_000),
                         v(S.COMPLETE_ABORT, pid, 2, {}, 1_000, 2_100)])
    for n in (0, 1):
        sc.part("r", n).data(pid=pid, epoch=2, n=2, txn=True, at=T0 + 1_100)
    sc.part("r", 0).abort(pid=pid, epoch=2, coordinator_epoch=1, at=T0 + 2_050)
    sc.part("r", 1).data(n=1, at=T0 + 9_000)  # no ABORT marker reached r-1
    _clean_shutdown(sc)
    hang = _hang(sc)
    assert (hang.topic, hang.partition, hang.offset) == ("r", 1, 0)
    (step,) = [s for s in hang.remediation_steps if "restart" in s.what]
    assert step.what.startswith("do not restart the broker to clear it")
    assert "its coordinator ABORTED it" in step.what and "serves its 2 record(s)" in step.what
    assert hang.remediation_steps[-1].command == ABORT_CMD.format("r", 1, 0)
