"""kafkatx's answers on a log dir against Kafka's (``KafkaAnswers``), one line per difference.

Standard library and kafkatx's command line only: the tests of the committed real-Kafka
fixtures run this without Java.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from .workloads import KafkaAnswers


def kafkatx(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "kafkatx", *args], capture_output=True,
                          text=True, check=False)
    if done.returncode not in (0, 1):  # verify exits 1 when it finds an error
        raise AssertionError(f"kafkatx {' '.join(args)} exited {done.returncode}: "
                             f"{done.stderr}")
    return done.stdout


def compare_answers(log_dir: Path, answers: KafkaAnswers) -> list[str]:
    """Every answer of ``answers`` that kafkatx gives otherwise on ``log_dir``."""
    out: list[str] = []
    d = str(log_dir)
    lso = {f"{p['topic']}-{p['partition']}": p for p in json.loads(kafkatx("lso", d, "--format",
                                                                          "json"))}
    for name, expected in answers.lso.items():
        mine = lso.get(name, {}).get("last_stable_offset")
        if mine != expected:
            out.append(f"{name}: LSO {mine} in kafkatx, {expected} in Kafka (ListOffsets "
                       f"READ_COMMITTED)")
    for name, rows in answers.describe_producers.items():
        theirs = sorted((int(r["ProducerId"]), int(r["ProducerEpoch"]),
                         int(r["CurrentTransactionStartOffset"])) for r in rows
                        if r["CurrentTransactionStartOffset"] != "None")
        mine = sorted((t["producer_id"], t["producer_epoch"], t["first_offset"])
                      for t in lso.get(name, {}).get("open_transactions", []))
        if mine != theirs:
            out.append(f"{name}: open transactions (pid, epoch, start) {mine} in kafkatx, "
                       f"{theirs} in describe-producers")
    for name, expected in answers.read_committed.items():
        topic, _, partition = name.rpartition("-")
        got = [[r["offset"], r.get("key"), r.get("value")] for r in map(json.loads, kafkatx(
            "replay", d, "--topic", topic, "--partition", partition, "--format",
            "jsonl").splitlines())]
        if got != expected:
            out.append(f"{name}: a read_committed consumer gets {got} by kafkatx's replay, "
                       f"{expected} from Kafka")
    out += _hanging(d, answers)
    out += _transactions(d, answers)
    out += _groups(d, answers)
    return out


def _hanging(d: str, answers: KafkaAnswers) -> list[str]:
    verify = json.loads(kafkatx("verify", d, "--format", "json"))
    findings = verify["findings"] if isinstance(verify, dict) else verify
    mine = sorted((f["topic"], f["partition"], f["producer_id"], f["offset"])
                  for f in findings if f["kind"] == "hanging_transaction")
    theirs = sorted((r["Topic"], int(r["Partition"]), int(r["ProducerId"]),
                     int(r["StartOffset"])) for r in answers.find_hanging)
    return [] if mine == theirs else [f"hanging transactions {mine} in kafkatx, {theirs} in "
                                      f"find-hanging"]


def _transactions(d: str, answers: KafkaAnswers) -> list[str]:
    out = []
    for tid, row in answers.transactions.items():
        last: dict[str, Any] | None = None
        for line in kafkatx("dump", d, "--transactional-id", tid, "--format",
                            "jsonl").splitlines():
            item = json.loads(line)
            for rec in item.get("records", []) if item["kind"] == "batch" else []:
                key = rec.get("key")
                if isinstance(key, dict) and key.get("transactional_id") == tid:
                    last = rec.get("value")
        if last is None:
            out.append(f"{tid}: kafkatx finds no __transaction_state record, Kafka describes "
                       f"{row}")
            continue
        mine = (last["producer_id"], last["producer_epoch"], last["state"],
                last["transaction_timeout_ms"])
        theirs = (int(row["ProducerId"]), int(row["ProducerEpoch"]), row["TransactionState"],
                  int(row["TransactionTimeoutMs"]))
        if mine != theirs:
            out.append(f"{tid}: (pid, epoch, state, timeout) {mine} in kafkatx's last "
                       f"__transaction_state record, {theirs} in kafka-transactions describe")
    return out


def _groups(d: str, answers: KafkaAnswers) -> list[str]:
    out = []
    groups = {g["group"]: g for g in json.loads(kafkatx("groups", d, "--format", "json"))}
    for name, theirs in answers.groups.items():
        mine = groups.get(name)
        if mine is None:
            out.append(f"group {name}: not shown by kafkatx groups")
            continue
        state = theirs["state"]
        if state and (mine["state"], str(mine["members"])) != (state["STATE"],
                                                                 state["#MEMBERS"]):
            out.append(f"group {name}: state/members {mine['state']}/{mine['members']} in "
                       f"kafkatx, {state['STATE']}/{state['#MEMBERS']} in kafka-consumer-groups")
        rows = {(p["topic"], p["partition"]): p for p in mine["partitions"]}
        for row in theirs["offsets"]:
            if row["CURRENT-OFFSET"] == "-":
                continue
            p = rows.get((row["TOPIC"], int(row["PARTITION"])), {})
            got = (p.get("committed_offset"), p.get("high_watermark"), p.get("lag_offsets"))
            want = (int(row["CURRENT-OFFSET"]), int(row["LOG-END-OFFSET"]), int(row["LAG"]))
            if got != want:
                out.append(f"group {name} {row['TOPIC']}-{row['PARTITION']}: (committed, log "
                           f"end, lag) {got} in kafkatx, {want} in kafka-consumer-groups")
    return out
