"""``kafkatx dump --format jsonl`` against Kafka's ``kafka-dump-log.sh``, field by field.

For every file both read: segments and KRaft snapshots (batch headers; each record's offset,
timestamp, key and value sizes, sequence, header keys; control markers and their coordinator
epochs; keys and values as Kafka's decoder prints them: ``--transaction-log-decoder`` for
``__transaction_state``, ``--offsets-decoder`` for ``__consumer_offsets``,
``--cluster-metadata-decoder`` for ``__cluster_metadata``, the default string decoder
elsewhere), ``.index``, ``.timeindex``, ``.txnindex`` and producer ``.snapshot`` entries.
``compare_dump`` returns one line per difference; a test asserts there are none.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .dump_log import DumpedBatch, DumpedFile, DumpedRecord, decoded_json, optional_long, parse_dump
from .tools import KafkaTools

DECODERS = {
    "__transaction_state": "--transaction-log-decoder",
    "__consumer_offsets": "--offsets-decoder",
    "__cluster_metadata": "--cluster-metadata-decoder",
}
SUFFIXES = (".log", ".checkpoint", ".index", ".timeindex", ".txnindex", ".snapshot")

# Kafka's JSON names of the records kafkatx names otherwise (its documented contract).
_TXN_VALUE_NAMES = {
    "transactionStatus": "state", "transactionPartitions": "partitions",
    "transactionLastUpdateTimestampMs": "last_update_timestamp_ms",
    "transactionStartTimestampMs": "start_timestamp_ms",
}
_GROUP_NAMES = {
    "commitTimestamp": "commit_timestamp_ms", "expireTimestamp": "expire_timestamp_ms",
    "currentStateTimestamp": "current_state_timestamp_ms",
    "rebalanceTimeout": "rebalance_timeout_ms", "sessionTimeout": "session_timeout_ms",
    "groupId": "group",
}


_KRAFT_CONTROL_TYPES = {
    "LeaderChange": "LEADER_CHANGE", "SnapshotHeader": "SNAPSHOT_HEADER",
    "SnapshotFooter": "SNAPSHOT_FOOTER", "KRaftVersion": "KRAFT_VERSION",
    "KRaftVoters": "KRAFT_VOTERS",
}


def snake(name: str) -> str:
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name.replace("KRaft", "Kraft"))
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


def dumpable_files(log_dir: Path) -> list[Path]:
    """Every file of ``log_dir`` both tools read (Kafka's transient suffixes left out)."""
    return sorted(p for p in log_dir.rglob("*") if p.is_file() and p.suffix in SUFFIXES
                  and (p.suffix != ".checkpoint" or "-" in p.stem))


def kafka_can_dump(path: Path) -> bool:
    """Kafka's tool fails on the index of an empty segment it preallocated (a live or killed
    copy's active segment without records: it reads the zero entry and finds no batch at
    position 0), and its whole run with it; kafkatx reads it (tests/formats), Kafka's tool
    cannot judge it."""
    if path.suffix not in (".index", ".timeindex"):
        return True
    log = path.with_suffix(".log")
    return log.exists() and log.stat().st_size > 0


def compare_log_dir_dump(tools: KafkaTools, log_dir: Path) -> list[str]:
    """``compare_dump`` of every file of ``log_dir`` Kafka's tool can read."""
    return compare_dump(tools, [p for p in dumpable_files(log_dir) if kafka_can_dump(p)])


def kafka_dump(tools: KafkaTools, files: list[Path], *flags: str) -> dict[str, DumpedFile]:
    """Kafka's dump of ``files``, with the decoder each file's topic needs."""
    by_decoder: dict[str, list[Path]] = {}
    for path in files:
        topic = path.parent.name.rpartition("-")[0]
        by_decoder.setdefault(DECODERS.get(topic, ""), []).append(path)
    out: dict[str, DumpedFile] = {}
    for decoder, group in by_decoder.items():
        args = ["--deep-iteration", "--print-data-log", *flags, *([decoder] if decoder else [])]
        result = tools.dump_log(group, *args).check()
        out.update(parse_dump(result.stdout))
    return out


def kafkatx_dump(files: list[Path]) -> dict[str, list[dict]]:
    """``kafkatx dump --format jsonl --records`` of ``files``, by file."""
    done = subprocess.run([sys.executable, "-m", "kafkatx", "dump", "--format", "jsonl",
                           "--records", *map(str, files)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise AssertionError(f"kafkatx dump exited {done.returncode}: {done.stderr}")
    out: dict[str, list[dict]] = {str(f): [] for f in files}
    for line in done.stdout.splitlines():
        item = json.loads(line)
        out.setdefault(item["file"], []).append(item)
    return out


def compare_dump(tools: KafkaTools, files: Iterable[Path]) -> list[str]:
    """Every difference between Kafka's and kafkatx's dump of ``files``."""
    files = list(files)
    kafka = kafka_dump(tools, files)
    ours = kafkatx_dump(files)
    problems: list[str] = []
    for path in files:
        theirs = kafka.get(str(path))
        if theirs is None:
            problems.append(f"{path}: Kafka printed no section")
            continue
        items = ours.get(str(path), [])
        bad = [i for i in items if i["kind"] == "problem"]
        if bad and not theirs.trailing_invalid_bytes:
            problems.append(f"{path}: kafkatx reports problems Kafka does not: {bad}")
        compare = _COMPARERS[path.suffix]
        problems += [f"{path}: {p}" for p in compare(theirs, items, path)]
    return problems


# ---------------------------------------------------------------------------------------------
# Segments


def _compare_segment(theirs: DumpedFile, items: list[dict], path: Path) -> list[str]:
    batches = [i for i in items if i["kind"] == "batch"]
    out = []
    if len(batches) != len(theirs.batches):
        return [f"{len(theirs.batches)} batches in Kafka's dump, {len(batches)} in kafkatx's"]
    topic = path.parent.name.rpartition("-")[0]
    for kb, ours in zip(theirs.batches, batches, strict=True):
        out += _compare_batch(kb, ours)
        records = ours.get("records", [])
        if len(records) != len(kb.records):
            out.append(f"batch {ours['base_offset']}: {len(kb.records)} records in Kafka's "
                       f"dump, {len(records)} in kafkatx's")
            continue
        for kr, rec in zip(kb.records, records, strict=True):
            out += [f"offset {kr.offset}: {p}" for p in _compare_record(kr, rec, ours, topic)]
    return out


def _compare_batch(kb: DumpedBatch, ours: dict) -> list[str]:
    f = kb.fields
    expected: dict[str, Any] = {
        "base_offset": int(f["baseOffset"]), "last_offset": int(f["lastOffset"]),
        "count": int(f["count"]), "base_sequence": int(f["baseSequence"]),
        "last_sequence": int(f["lastSequence"]), "producer_id": int(f["producerId"]),
        "producer_epoch": int(f["producerEpoch"]),
        "partition_leader_epoch": int(f["partitionLeaderEpoch"]),
        "is_transactional": f["isTransactional"] == "true",
        "is_control": f["isControl"] == "true",
        "delete_horizon_ms": optional_long(f["deleteHorizonMs"]),
        "position": int(f["position"]), "size": int(f["size"]), "magic": int(f["magic"]),
        "compression": f["compresscodec"], "crc": int(f["crc"]),
        "crc_valid": f["isvalid"] == "true",
    }
    ts_type = next(k for k in ("CreateTime", "LogAppendTime", "NoTimestampType") if k in f)
    expected["timestamp_type"] = ts_type
    expected["max_timestamp"] = int(f[ts_type])
    return [f"batch {expected['base_offset']}: {name} is {ours.get(name)!r} in kafkatx, "
            f"{value!r} in Kafka" for name, value in expected.items() if ours.get(name) != value]


def _raw(rec: dict, name: str) -> bytes | None:
    value = rec.get(name)
    if value is None:
        return None
    if rec.get(f"{name}_encoding") == "base64":
        return base64.b64decode(value)
    return value.encode() if isinstance(value, str) else None


def _compare_record(kr: DumpedRecord, rec: dict, batch: dict, topic: str) -> list[str]:
    out = []

    def check(name: str, ours: Any, theirs: Any) -> None:
        if ours != theirs:
            out.append(f"{name} is {ours!r} in kafkatx, {theirs!r} in Kafka")

    check("offset", rec["offset"], kr.offset)
    check("timestamp", rec["timestamp"], kr.timestamp)
    check("timestamp type", batch["timestamp_type"], kr.timestamp_type)
    base_seq = batch["base_sequence"]
    sequence = -1 if base_seq < 0 else (base_seq + rec["offset"] - batch["base_offset"]) % 2**31
    check("sequence", sequence, kr.sequence)
    check("header keys", [h["key"] for h in rec.get("headers", [])], kr.header_keys)
    control = batch.get("control")
    if kr.marker is not None:
        check("marker", (control or {}).get("type"), kr.marker)
        check("coordinator epoch", (control or {}).get("coordinator_epoch"),
              kr.coordinator_epoch)
        return out
    if kr.kraft_control is not None:
        name, data = kr.kraft_control
        if data is None:
            check("control type", rec.get("control_type"), name)
            return out
        check("control type", rec.get("control_type"), _KRAFT_CONTROL_TYPES[name])
        data = {k: v for k, v in data.items() if k != "version"}
        out += _subset("control " + name, data, rec.get("data"), {})
        return out
    if batch["is_control"]:
        out.append("a control record Kafka prints without a control type")
        return out
    if topic == "__cluster_metadata":
        return out + _compare_metadata(kr, rec)
    if topic in ("__transaction_state", "__consumer_offsets"):
        return out + _compare_coordinator(kr, rec, topic)
    key, value = _raw(rec, "key"), _raw(rec, "value")
    check("key size", -1 if key is None else len(key), kr.key_size)
    check("value size", -1 if value is None else len(value), kr.value_size)
    check("key", None if key is None else key.decode("utf-8", "replace"), kr.key)
    check("value", None if value is None else value.decode("utf-8", "replace"), kr.payload)
    return out


def _compare_metadata(kr: DumpedRecord, rec: dict) -> list[str]:
    payload = decoded_json(kr.payload)
    if not isinstance(payload, dict):
        return [f"Kafka's metadata decoder printed {kr.payload!r}"]
    out = []
    kafka_type = payload["type"]
    ours_type = re.sub(r"(?<!^)(?=[A-Z])", "_", rec.get("type", "")).upper()
    if ours_type != kafka_type:
        out.append(f"type is {rec.get('type')!r} in kafkatx, {kafka_type!r} in Kafka")
    if rec.get("version") != payload["version"]:
        out.append(f"version is {rec.get('version')!r} in kafkatx, {payload['version']!r} in "
                   f"Kafka")
    return out + _subset("data", payload["data"], rec.get("data"), {})


def _scala_transaction_record(key: str, payload: str | None) -> tuple[dict, dict | None]:
    """Kafka 4.0's Scala ``TransactionLog#formatRecordKeyAndValue`` text, in the JSON shape of
    4.2+'s decoder (no value version: the Scala text does not print it)."""
    tid = key.partition("transactionalId=")[2]
    parsed_key = {"type": "0", "data": {"transactionalId": tid}}
    if payload is None or payload == "<DELETE>":
        return parsed_key, None
    m = re.fullmatch(r"producerId:(-?\d+),producerEpoch:(-?\d+),state=(\w+),partitions=\[(.*)\],"
                     r"txnLastUpdateTimestamp=(-?\d+),txnTimeoutMs=(-?\d+)", payload)
    if m is None:
        raise ValueError(f"not Kafka 4.0's transaction log text: {payload!r}")
    partitions: dict[str, list[int]] = {}
    for tp in filter(None, m[4].split(",")):
        topic, _, partition = tp.rpartition("-")
        partitions.setdefault(topic, []).append(int(partition))
    data = {"producerId": int(m[1]), "producerEpoch": int(m[2]), "transactionStatus": m[3],
            "transactionPartitions": [{"topic": t, "partitionIds": sorted(ps)}
                                      for t, ps in partitions.items()],
            "transactionLastUpdateTimestampMs": int(m[5]),
            "transactionTimeoutMs": int(m[6])}
    return parsed_key, {"version": None, "data": data}


def _compare_coordinator(kr: DumpedRecord, rec: dict, topic: str) -> list[str]:
    if kr.key is not None and kr.key.startswith("transaction_metadata::"):
        key, value = _scala_transaction_record(kr.key, kr.payload)
        if value is not None and isinstance(rec.get("value"), dict):
            value["version"] = rec["value"].get("version")  # the Scala text has none
    else:
        key, value = decoded_json(kr.key), decoded_json(kr.payload)
    if not isinstance(key, dict):
        return [f"Kafka's decoder printed key {kr.key!r}"]
    names = _TXN_VALUE_NAMES if topic == "__transaction_state" else _GROUP_NAMES
    out = []
    ours_key = rec.get("key") if isinstance(rec.get("key"), dict) else {}
    type_field = "version" if topic == "__transaction_state" else "record_type"
    if ours_key.get(type_field) != int(key["type"]):
        out.append(f"key type is {ours_key.get(type_field)!r} in kafkatx, {key['type']} in "
                   f"Kafka")
    out += _subset("key", key["data"], ours_key, names)
    ours_value = rec.get("value")
    if value is None:
        if ours_value is not None:
            out.append(f"value is {ours_value!r} in kafkatx, a tombstone in Kafka")
        return out
    if not isinstance(ours_value, dict):
        return [*out, f"value is {ours_value!r} in kafkatx, {value!r} in Kafka"]
    if ours_value.get("version") != int(value["version"]):
        out.append(f"value version is {ours_value.get('version')!r} in kafkatx, "
                   f"{value['version']} in Kafka")
    data = dict(value["data"])
    if topic == "__transaction_state" and "transactionPartitions" in data:
        # compared as sets: Kafka 4.0's Scala text prints them in a hash set's order
        parts = data["transactionPartitions"] or []
        data["transactionPartitions"] = {p["topic"]: sorted(p["partitionIds"]) for p in parts}
        ours_value = {**ours_value, "partitions": {
            t: sorted(ids) for t, ids in (ours_value.get("partitions") or {}).items()}}
    return out + _subset("value", data, ours_value, names)


def _subset(where: str, theirs: Any, ours: Any, names: dict[str, str]) -> list[str]:
    """Every field Kafka printed has the same value in kafkatx's object (names in snake_case
    or as ``names`` maps them); kafkatx may print more (fields at their defaults)."""
    if isinstance(theirs, dict):
        if not isinstance(ours, dict):
            return [f"{where} is {ours!r} in kafkatx, {theirs!r} in Kafka"]
        out = []
        for name, value in theirs.items():
            mine = names.get(name, snake(name))
            decoded = f"{mine}_decoded"
            target = ours.get(decoded, ours.get(mine, _MISSING)) if isinstance(
                value, dict) and decoded in ours else ours.get(mine, _MISSING)
            if target is _MISSING:
                out.append(f"{where}.{mine} is missing in kafkatx ({value!r} in Kafka)")
                continue
            out += _subset(f"{where}.{mine}", value, target, names)
        return out
    if isinstance(theirs, list):
        if not isinstance(ours, list) or len(ours) != len(theirs):
            return [f"{where} is {ours!r} in kafkatx, {theirs!r} in Kafka"]
        out = []
        for i, (a, b) in enumerate(zip(theirs, ours, strict=True)):
            out += _subset(f"{where}[{i}]", a, b, names)
        return out
    if theirs != ours:
        return [f"{where} is {ours!r} in kafkatx, {theirs!r} in Kafka"]
    return []


_MISSING = object()


# ---------------------------------------------------------------------------------------------
# Indexes and snapshots


def _entries(items: list[dict], kind: str) -> list[dict]:
    return [i for i in items if i["kind"] == kind]


def _compare_index(theirs: DumpedFile, items: list[dict], path: Path) -> list[str]:
    expected = [(int(e["offset"]), int(e["position"])) for e in theirs.lines]
    ours = [(e["offset"], e["position"]) for e in _entries(items, "index_entry")]
    return [] if ours == expected else [f"index entries {ours} in kafkatx, {expected} in Kafka"]


def _compare_time_index(theirs: DumpedFile, items: list[dict], path: Path) -> list[str]:
    expected = [(int(e["timestamp"]), int(e["offset"])) for e in theirs.lines]
    base = int(path.name.split(".")[0])
    if expected and expected[-1] == (0, base):
        # Kafka's tool prints the first zero-filled slot of a preallocated time index (a live
        # copy's active segment) as an entry, then stops at the second; kafkatx reads the
        # zero tail as no entry, as the broker's own count of entries has it (docs/dump.md)
        expected.pop()
    ours = [(e["timestamp"], e["offset"]) for e in _entries(items, "time_index_entry")]
    return [] if ours == expected else [f"time index entries {ours} in kafkatx, {expected} in "
                                        f"Kafka"]


def _compare_txn_index(theirs: DumpedFile, items: list[dict], path: Path) -> list[str]:
    expected = [(int(e["version"]), int(e["producerId"]), int(e["firstOffset"]),
                 int(e["lastOffset"]), int(e["lastStableOffset"])) for e in theirs.lines]
    ours = [(e["version"], e["producer_id"], e["first_offset"], e["last_offset"],
             e["last_stable_offset"]) for e in _entries(items, "aborted_txn")]
    return [] if ours == expected else [f"aborted transactions {ours} in kafkatx, {expected} "
                                        f"in Kafka"]


def _compare_snapshot(theirs: DumpedFile, items: list[dict], path: Path) -> list[str]:
    if path.parent.name.startswith("__cluster_metadata"):
        return []  # a KRaft partition's producer snapshot: Kafka reads it as any other
    expected = []
    for e in theirs.lines:
        first_txn = optional_long(e["currentTxnFirstOffset"])
        row = {"producer_id": int(e["producerId"]), "producer_epoch": int(e["producerEpoch"]),
               "coordinator_epoch": int(e["coordinatorEpoch"]),
               "current_txn_first_offset": -1 if first_txn is None else first_txn,
               "timestamp": int(e["lastTimestamp"])}
        if "lastSequence" in e:
            row.update(last_sequence=int(e["lastSequence"]), last_offset=int(e["lastOffset"]),
                       offset_delta=int(e["offsetDelta"]), timestamp=int(e["timestamp"]),
                       first_sequence=int(e["firstSequence"]))
        expected.append(row)
    ours = []
    for e in _entries(items, "producer"):
        row = {k: e[k] for k in ("producer_id", "producer_epoch", "coordinator_epoch",
                                 "current_txn_first_offset", "timestamp")}
        if e["last_offset"] >= 0:
            first = e["last_sequence"] - e["offset_delta"]
            row.update(last_sequence=e["last_sequence"], last_offset=e["last_offset"],
                       offset_delta=e["offset_delta"],
                       first_sequence=first if first >= 0 else first + 2**31)
        ours.append(row)
    return [] if ours == expected else [f"producers {ours} in kafkatx, {expected} in Kafka"]


_COMPARERS = {
    ".log": _compare_segment, ".checkpoint": _compare_segment, ".index": _compare_index,
    ".timeindex": _compare_time_index, ".txnindex": _compare_txn_index,
    ".snapshot": _compare_snapshot,
}
