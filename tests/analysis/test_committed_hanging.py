"""Hanging transactions the coordinator COMMITTED: what an abort would throw away, said first.

``TransactionCoordinator#endTransaction`` writes CompleteCommit once every partition's COMMIT
marker was written (``TransactionMarkerChannelManager``); a partition that still has the data
open therefore lost its marker. ``kafka-transactions.sh abort`` (``Admin#abortTransaction``:
WriteTxnMarkers with an ABORT marker) is the only tool Kafka has, so clearing it discards
committed records; the finding says which partitions did get the COMMIT, which records an abort
discards, how to export them (``kafkatx dump``) and to confirm on the live cluster first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafkatx.semantics.coordinator_partition import partition_for
from tests.analysis.logdirs import T0
from tests.analysis.test_partition_count import put_compacted
from tests.analysis.test_timeline import (
    ABORT_CMD,
    FIXTURE,
    S,
    Scenario,
    dropped_marker,
    of_kind,
    rows_of,
    v,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def sc(tmp_path: Path) -> Scenario:
    return Scenario(tmp_path / "broker")


def test_committed_hang_names_the_markers_and_what_an_abort_discards(sc: Scenario) -> None:
    """``TransactionMarkerChannelManager`` wrote COMMIT to p-0 and p-1, not to p-2."""
    dropped_marker(sc)
    result = sc.inspect(now=30 * 60_000)
    (hang,) = of_kind(result.findings, "hanging_transaction")
    assert "it is COMMITTED: its COMMIT marker did reach p-0 (offset 4), p-1 (offset 4)" in (
        hang.message)
    assert "discards records 1..3 of a committed transaction" in hang.message
    assert "none writes the missing COMMIT marker" in hang.message
    r = hang.remediation
    assert r is not None
    assert r.startswith(f"export the records first: kafkatx dump {sc.root / 'p-2'}/*.log "
                        "--producer-id 7101 --from-offset 1 --to-offset 3 --records "
                        "--format jsonl > p-2-txn-7101-1-broker.jsonl")
    assert "lagging replica" in r and "find-hanging --topic p --partition 2" in r
    assert "describe-producers --topic p --partition 2" in r
    assert r.endswith("only then abort it: " + ABORT_CMD.format("p", 2, 1))
    (pinned,) = of_kind(result.findings, "lso_pinned")
    assert pinned.remediation is not None
    assert pinned.remediation.startswith("the coordinator COMMITTED this transaction")
    # The same (told) findings in the partition's report and the timeline row.
    report = next(p for p in result.partitions if (p.topic, p.partition) == ("p", 2))
    assert hang in report.findings and pinned in report.findings
    (row,) = rows_of(result.timeline, "payments-writer")
    assert hang in row.findings


def test_the_export_command_exports_exactly_the_committed_records(sc: Scenario) -> None:
    """The ``kafkatx dump`` line of the remediation, run by a shell as printed (its
    ``PARTITION_DIR/*.log`` glob): the transaction's batches, records decoded (``--records``),
    and nothing else (no index, snapshot or checkpoint entries)."""
    dropped_marker(sc)
    (hang,) = of_kind(sc.inspect().findings, "hanging_transaction")
    assert hang.remediation is not None
    command = hang.remediation.split("export the records first: ", 1)[1].split(" > ", 1)[0]
    assert command.startswith("kafkatx dump ")
    path = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, env=path)
    assert proc.returncode == 0, proc.stderr
    items = [json.loads(line) for line in proc.stdout.splitlines()]
    assert {o["kind"] for o in items} == {"batch"}
    assert [(b["base_offset"], b["last_offset"], b["producer_id"]) for b in items] == [
        (1, 3, 7101)]
    assert [r["offset"] for r in items[0]["records"]] == [1, 2, 3]


def test_an_aborted_hang_keeps_the_plain_abort() -> None:
    """The coordinator aborted ledger-writer's transaction (fixtures/logdir): aborting it again
    in payments-0 loses nothing, so the remediation is ``kafka-transactions.sh abort``."""
    from kafkatx.engines.local import inspect_paths

    (hang,) = of_kind(inspect_paths([FIXTURE]).findings, "hanging_transaction")
    assert hang.remediation == ABORT_CMD.format("payments", 0, 19)
    assert "COMMITTED" not in hang.message


def test_committed_offsets_in_consumer_offsets_roll_back(sc: Scenario) -> None:
    """``TxnOffsetCommit`` offsets become visible with the COMMIT marker
    (``GroupMetadata#completePendingTxnOffsetCommit``); without it, an abort drops them and the
    group's committed offsets go back to its previous commit."""
    pid, tid, group = 7801, "etl", "etl-app"
    co = partition_for(group)
    parts = {"out": [0], "__consumer_offsets": [co]}
    sc.coordinator(tid, [v(S.ONGOING, pid, 0, parts, 1_000, 1_000),
                         v(S.PREPARE_COMMIT, pid, 0, parts, 1_000, 2_000),
                         v(S.COMPLETE_COMMIT, pid, 0, {}, 1_000, 2_100)])
    sc.part("out", 0).data(pid=pid, epoch=0, n=2, txn=True, at=T0 + 1_100)
    sc.part("out", 0).commit(pid=pid, epoch=0, at=T0 + 2_050)
    sc.offsets(co, pid=pid, epoch=0, group=group, commits={("in", 0): 42, ("in", 1): 17},
               at=1_200)
    sc.part("__consumer_offsets", co).data(n=1, at=T0 + 9_000)  # plain data later, no marker
    (hang,) = of_kind(sc.inspect().findings, "hanging_transaction")
    assert (hang.topic, hang.partition) == ("__consumer_offsets", co)
    assert "its COMMIT marker did reach out-0 (offset 2)" in hang.message
    assert "offset commits (etl-app in-0 -> 42, etl-app in-1 -> 17)" in hang.message
    assert "rolls those groups' committed offsets back" in hang.message


def test_compacted_coordinator_and_partitions_not_copied(sc: Scenario) -> None:
    """Aged evidence: ``LogCleaner`` left only CompleteCommit (which lists no partitions,
    ``TransactionMetadata#prepareComplete`` clears them) for one id, so the partition may have
    been in it; for another the set names a partition that was not copied."""
    put_compacted(sc, "cleaned", [(90, v(S.COMPLETE_COMMIT, 7901, 2, {}, 1_000, 2_100))])
    sc.part("c", 0).data(n=1, at=T0 + 500).data(pid=7901, epoch=2, n=2, txn=True, at=T0 + 1_100)
    sc.part("c", 0).data(n=1, at=T0 + 9_000)
    parts = {"d": [0, 5]}
    sc.coordinator("partial", [v(S.ONGOING, 7902, 0, parts, 1_000, 1_000),
                               v(S.PREPARE_COMMIT, 7902, 0, parts, 1_000, 2_000),
                               v(S.COMPLETE_COMMIT, 7902, 0, {}, 1_000, 2_100)])
    sc.part("d", 0).data(pid=7902, epoch=0, n=1, txn=True, at=T0 + 1_100)
    sc.part("d", 0).data(n=1, at=T0 + 9_000)
    found = {f.transactional_id: f for f in of_kind(sc.inspect().findings,
                                                    "hanging_transaction")}
    assert set(found) == {"cleaned", "partial"}
    cleaned = found["cleaned"]
    assert "records listing its partitions were compacted away, so c-0 may have been in it" in (
        cleaned.message)
    assert "discards records 1..2 of a transaction that may be committed" in cleaned.message
    assert cleaned.remediation is not None and cleaned.remediation.startswith(
        "export the records first: kafkatx dump")
    assert "not among the evidence: d-5" in found["partial"].message


@pytest.mark.parametrize("v2", [False, True], ids=["v1", "v2"])
def test_data_the_committed_transaction_never_listed_is_not_committed(sc: Scenario,
                                                                      v2: bool) -> None:
    """A transactional batch of a running transaction's producer and epoch in a partition that
    was never added to it (a late produce request, KIP-890's case; real Kafka with
    ``transaction.partition.verification.enable`` off accepts it, tests/realkafka): the
    coordinator's surviving PrepareCommit lists only a-0, so the COMMIT never concerned b-0 and
    aborting there discards nothing committed: a plain abort, no export (it used to say the
    partition list was compacted away and the records may be committed). Under transactions v2
    the coordinator's Prepare/Complete carry the bumped epoch."""
    bump = 1 if v2 else 0
    listed = {"a": [0]}
    sc.coordinator("late", [v(S.ONGOING, 7301, 0, listed, 1_000, 1_000),
                            v(S.PREPARE_COMMIT, 7301, bump, listed, 1_000, 2_000),
                            v(S.COMPLETE_COMMIT, 7301, bump, {}, 1_000, 2_100)])
    sc.part("a", 0).data(pid=7301, epoch=0, n=1, txn=True, at=T0 + 1_100)
    sc.part("a", 0).commit(pid=7301, epoch=bump, at=T0 + 2_050)
    sc.part("b", 0).data(pid=7301, epoch=0, n=2, txn=True, at=T0 + 1_200)
    sc.part("b", 0).data(n=1, at=T0 + 9_000)
    (hang,) = of_kind(sc.inspect().findings, "hanging_transaction")
    assert (hang.topic, hang.partition, hang.offset) == ("b", 0, 0)
    assert "listed a-0" in hang.message and "never added to a transaction" in hang.message
    assert "COMMITTED" not in hang.message and "may be committed" not in hang.message
    assert hang.remediation == ABORT_CMD.format("b", 0, 0)
