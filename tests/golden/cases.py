"""The golden cases: every command, in each output format it has, on every bundled fixture.

A case is a name (its golden file, ``tests/golden/<command>/<name>.txt``) and the argv after
``kafkatx``. Times that would make an output depend on the day it runs are pinned with
``--now``. Spark is left out (``tests/engines`` prove it equal to the local engine).
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent
NOW = "2027-01-01T00:00:00Z"  # after every fixture's newest record

# Every log dir (or set of copies) the fixtures hold, as commands take them.
LOG_DIRS: dict[str, list[str]] = {
    "logdir": ["fixtures/logdir"],
    "corrupt": ["fixtures/corrupt"],
    "legacy": ["fixtures/legacy"],
    "kraft": ["fixtures/kraft"],
    "replicas": ["fixtures/replicas"],
    **{f"served-{p.name}": [f"fixtures/served/{p.name}"]
       for p in sorted((ROOT / "fixtures" / "served").iterdir()) if p.is_dir()},
    **{f"served-replicas-{p.name}": [f"fixtures/served-replicas/{p.name}"]
       for p in sorted((ROOT / "fixtures" / "served-replicas").iterdir()) if p.is_dir()},
    **{f"realkafka-{p.name}": [f"fixtures/realkafka/{p.name}"]
       for p in sorted((ROOT / "fixtures" / "realkafka").iterdir()) if p.is_dir()},
}

# (log dir, topic, partition) replayed: one partition of each kind of history.
REPLAYS: list[tuple[str, str, int]] = [
    ("logdir", "payments", 0),
    ("logdir", "payments", 1),
    ("corrupt", "damaged", 0),
    ("legacy", "legacy", 0),
    ("kraft", "payments", 0),
    ("served-clean", "payments", 0),
    ("served-hanging", "payments", 0),
    ("served-zombie", "payments", 0),
    ("served-compacted", "inventory", 0),
    ("realkafka-open-transaction", "payments", 0),
    ("realkafka-compacted", "inventory", 0),
]

# Whole partition dirs and single files dump decodes (one of each decoder).
DUMPS: dict[str, list[str]] = {
    "logdir-payments-0": ["fixtures/logdir/payments-0"],
    "logdir-txn-state-39": ["fixtures/logdir/__transaction_state-39"],
    "logdir-offsets-41": ["fixtures/logdir/__consumer_offsets-41"],
    "logdir-checkpoints": [
        "fixtures/logdir/cleaner-offset-checkpoint",
        "fixtures/logdir/log-start-offset-checkpoint",
        "fixtures/logdir/recovery-point-offset-checkpoint",
        "fixtures/logdir/replication-offset-checkpoint",
        "fixtures/logdir/meta.properties",
    ],
    "corrupt-damaged-0": ["fixtures/corrupt/damaged-0"],
    "legacy-0": ["fixtures/legacy/legacy-0"],
    "kraft-metadata": ["fixtures/kraft/__cluster_metadata-0"],
    "served-clean-txn-state-18": ["fixtures/served/clean/__transaction_state-18"],
    # both group protocols' records, as real Kafka 4.4 wrote them
    "realkafka-offsets-3": ["fixtures/realkafka/open-transaction/__consumer_offsets-3"],
}

# (case name, argv) of txn-partition: a transactional id, a group id, a non-ASCII id.
TXN_PARTITION_IDS = [("ledger-writer", ["ledger-writer"]),
                     ("payments-app-group", ["payments-app", "--group"]),
                     ("unicode-id", ["Ünïcode-id", "--partitions", "7"])]


def cases() -> list[tuple[str, list[str]]]:
    """(golden name ``command/case``, argv) for every case."""
    out: list[tuple[str, list[str]]] = []

    def add(command: str, name: str, formats: list[str], argv: list[str]) -> None:
        for fmt in formats:
            out.append((f"{command}/{name}.{fmt}", [command, *argv, "--format", fmt]))

    for name, paths in LOG_DIRS.items():
        add("lso", name, ["table", "json"], [*paths, "--now", NOW])
        add("inspect", name, ["table", "json"], [*paths, "--now", NOW, "--all"])
        add("verify", name, ["table", "json"], [*paths, "--now", NOW, "--all"])
        add("groups", name, ["table", "json"], [*paths, "--now", NOW])
        add("timeline", name, ["table", "jsonl"], [*paths, "--now", NOW])
    for name in ("kraft", *[n for n in LOG_DIRS if n.startswith("served-") and
                            not n.startswith("served-replicas")]):
        add("cluster", name, ["table", "json"], [*LOG_DIRS[name], "--all"])
    for log_dir, topic, partition in REPLAYS:
        add("replay", f"{log_dir}-{topic}-{partition}", ["table", "jsonl"],
            [*LOG_DIRS[log_dir], "--topic", topic, "--partition", str(partition),
             "--show-hidden", "--records"])
    for name, paths in DUMPS.items():
        add("dump", name, ["table", "jsonl"], [*paths, "--records"])
    for name, argv in TXN_PARTITION_IDS:
        add("txn-partition", name, ["table", "json"], argv)
    return out
