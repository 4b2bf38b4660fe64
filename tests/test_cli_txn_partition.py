"""`kafkatx txn-partition` as a user runs it: a real process, output parsed back."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from kafkatx.semantics.coordinator_partition import partition_for
from tests.command import kafkatx

ROOT = Path(__file__).resolve().parent.parent
LOGDIR = ROOT / "fixtures" / "logdir"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return kafkatx("txn-partition", *args, columns=200, env={"PYTHONIOENCODING": "utf-8"},
                   timeout=60)


def as_json(*args: str) -> dict:
    proc = run("--format", "json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_transactional_id_table() -> None:
    proc = run("TesttranId")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["transactional", "id", "TesttranId"]
    assert "__transaction_state" in lines[1]
    assert lines[2].split()[1:] == ["48", "of", "50"]
    assert lines[3].split()[2] == "368658648"


def test_json_contract() -> None:
    assert as_json("TesttranId") == {"id": "TesttranId", "hash_code": 368658648,
                                     "partition": 48, "num_partitions": 50,
                                     "topic": "__transaction_state"}
    assert as_json("TesttranId", "--partitions", "7")["partition"] == 368658648 % 7


def test_fixture_ids_land_where_their_partitions_are() -> None:
    for tid in ("payments-writer", "refunds-writer", "ledger-writer"):
        p = as_json(tid)["partition"]
        assert (LOGDIR / f"__transaction_state-{p}").is_dir()


def test_group_uses_consumer_offsets() -> None:
    info = as_json("--group", "payments-app")
    assert info["topic"] == "__consumer_offsets" and info["partition"] == 41
    assert (LOGDIR / "__consumer_offsets-41").is_dir()  # where the fixture's group lives
    proc = run("--group", "payments-app")
    assert proc.returncode == 0 and proc.stdout.startswith("group id")


def test_java_hash_edge_cases() -> None:
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE: Utils.abs maps it to 0.
    info = as_json("polygenelubricants")
    assert info["hash_code"] == -(2**31) and info["partition"] == 0
    # Outside the BMP Java hashes the surrogate pair: U+1D11E is D834 DD1E.
    info = as_json("\U0001d11e")
    assert info["hash_code"] == 0xD834 * 31 + 0xDD1E
    assert info["partition"] == partition_for("\U0001d11e")
    assert as_json("") == {"id": "", "hash_code": 0, "partition": 0, "num_partitions": 50,
                           "topic": "__transaction_state"}


def test_usage_errors_exit_2() -> None:
    for bad in ("0", "-3", "many"):
        proc = run("TesttranId", "--partitions", bad)
        assert proc.returncode == 2, (bad, proc.stdout)
        assert "--partitions" in proc.stderr
    assert run().returncode == 2
