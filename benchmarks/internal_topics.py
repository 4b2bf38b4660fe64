"""Internal-topic loads: ``groups`` and ``timeline`` on a large __consumer_offsets and
__transaction_state partition.

    python benchmarks/internal_topics.py [--transactions 20000] [--commits 10] [--repeat 3]
                                         [--kafkatx-root ../other-checkout]

Builds (once, under ``benchmarks/data/``) a log dir whose ``__transaction_state-0`` holds
``--transactions`` transactions of one transactional id each among 500, each written as Kafka's
coordinator writes it (one-record batches: Ongoing, PrepareCommit, CompleteCommit), and whose
``__consumer_offsets-0`` holds as many batches of ``--commits`` OffsetCommit records (50
groups, one topic of 64 partitions), then runs ``kafkatx groups DIR`` and ``kafkatx timeline
DIR`` as processes with their output to /dev/null (CPU seconds, best of ``--repeat``, and peak
RSS). ``--kafkatx-root`` runs another checkout's package (its extension built in place) for a
before/after in one run window.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for p in (str(ROOT), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

from analysis import compile_sources, run  # noqa: E402

from kafkatx.formats.consumer_offsets import OffsetCommitKey, OffsetCommitValue  # noqa: E402
from kafkatx.formats.consumer_offsets import build_key as group_key  # noqa: E402
from kafkatx.formats.consumer_offsets import build_value as group_value  # noqa: E402
from kafkatx.formats.record_batch import Record, build_batch  # noqa: E402
from kafkatx.formats.transaction_log import (  # noqa: E402
    TransactionLogKey,
    TransactionLogValue,
    TransactionState,
    TxnTopicPartitions,
)
from kafkatx.formats.transaction_log import build_key as txn_key  # noqa: E402
from kafkatx.formats.transaction_log import build_value as txn_value  # noqa: E402
from kafkatx.storage.segment_writer import PartitionWriter  # noqa: E402

DATA_DIR = HERE / "data"
T0 = 1_763_700_000_000
IDS = 500  # transactional ids
GROUPS = 50
PARTITIONS = 64


def build(transactions: int, commits: int) -> Path:
    root = DATA_DIR / f"internal-{transactions}t-{commits}c"
    if (root / "meta.properties").exists():
        return root
    root.mkdir(parents=True, exist_ok=True)
    txn = PartitionWriter(root / "__transaction_state-0")
    offsets = PartitionWriter(root / "__consumer_offsets-0")
    parts = (TxnTopicPartitions(topic="orders", partition_ids=(0, 1)),)
    for k in range(transactions):
        tid = f"app-{k % IDS}"
        start = T0 + k * 100
        for step, state in enumerate((TransactionState.ONGOING, TransactionState.PREPARE_COMMIT,
                                      TransactionState.COMPLETE_COMMIT)):
            value = TransactionLogValue(
                version=0, producer_id=1000 + k % IDS, producer_epoch=k // IDS % 30000,
                transaction_timeout_ms=60_000, state=int(state),
                partitions=() if state == TransactionState.COMPLETE_COMMIT else parts,
                last_update_timestamp_ms=start + step * 10, start_timestamp_ms=start)
            txn.append(build_batch([Record(
                offset=txn.log_end_offset, timestamp=start + step * 10,
                key=txn_key(TransactionLogKey(transactional_id=tid)),
                value=txn_value(value))], partition_leader_epoch=0))
        base = offsets.log_end_offset
        offsets.append(build_batch([Record(
            offset=base + i, timestamp=start,
            key=group_key(OffsetCommitKey(group=f"group-{k % GROUPS}", topic="orders",
                                          partition=(k + i) % PARTITIONS)),
            value=group_value(OffsetCommitValue(version=3, offset=k, metadata="",
                                                commit_timestamp_ms=start, leader_epoch=0)))
            for i in range(commits)], partition_leader_epoch=0))
    txn.close()
    offsets.close()
    (root / "meta.properties").write_text("version=1\nnode.id=1\n"
                                          "cluster.id=wq7rlDpkSuCTt7bpn0kvTw\n")
    return root


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--transactions", type=int, default=20_000)
    ap.add_argument("--commits", type=int, default=10, help="OffsetCommit records a batch")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--kafkatx-root", type=Path, default=ROOT)
    args = ap.parse_args(argv)
    root = build(args.transactions, args.commits)
    compile_sources(args.kafkatx_root)
    print(f"{args.transactions:,} transactions ({3 * args.transactions:,} __transaction_state "
          f"records), {args.transactions * args.commits:,} offset commits; best of "
          f"{args.repeat}")
    print(f"{'run':<22}{'wall s':>8}{'cpu s':>8}{'peak RSS MB':>13}")
    for name in ("groups", "timeline"):
        wall, cpu, peak = run([sys.executable, "-m", "kafkatx", name, str(root)], args.repeat,
                              args.kafkatx_root)
        print(f"{'kafkatx ' + name:<22}{wall:>8.2f}{cpu:>8.2f}{peak / 2**20:>13,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
