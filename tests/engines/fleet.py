"""Generated fleets of log dirs for engine tests: several brokers, many partitions, damage.

Deterministic for a seed. Each partition gets a random run of transactional, idempotent and
plain producers (commits, aborts, transactions left open, epoch bumps, zombies, segment rolls,
snapshots); some partitions are then damaged on disk (a flipped byte, a torn tail, a wrong
``.txnindex``, a high watermark inside the log, retention). Segments are several KB with an
index entry every 256 bytes, so tiny Spark splits cut them at batch boundaries.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

from kafkatx.formats.txn_index import AbortedTxnEntry
from tests.analysis.logdirs import LogDirBuilder, PartitionBuilder


@dataclass
class Fleet:
    root: Path
    partitions: list[tuple[str, str, int]] = field(default_factory=list)  # (broker, topic, p)


def _history(p: PartitionBuilder, rng: random.Random, steps: int) -> None:
    txn_pids = [rng.randrange(1000, 1_000_000) for _ in range(rng.randint(1, 3))]
    epochs = dict.fromkeys(txn_pids, 0)
    open_txn: set[int] = set()
    idempotent = rng.randrange(2_000_000, 3_000_000)
    for _ in range(steps):
        r = rng.random()
        if r < 0.45:
            pid = rng.choice(txn_pids)
            p.data(pid=pid, epoch=epochs[pid], n=rng.randint(1, 8), txn=True,
                   size=rng.randint(5, 60))
            open_txn.add(pid)
        elif r < 0.65 and open_txn:
            pid = rng.choice(sorted(open_txn))
            if rng.random() < 0.7:
                p.commit(pid=pid, epoch=epochs[pid], coordinator_epoch=rng.randint(0, 2))
            else:
                p.abort(pid=pid, epoch=epochs[pid], coordinator_epoch=rng.randint(0, 2))
            open_txn.discard(pid)
        elif r < 0.75:
            p.data(pid=idempotent, n=rng.randint(1, 5), size=rng.randint(5, 40))
        elif r < 0.82:
            p.data(n=rng.randint(1, 4))
        elif r < 0.86:
            pid = rng.choice(txn_pids)
            if pid in open_txn:  # a producer that restarts: fenced with an abort marker
                epochs[pid] += 1
                p.abort(pid=pid, epoch=epochs[pid])
                open_txn.discard(pid)
            elif rng.random() < 0.5:  # a zombie writes under an old epoch
                p.data(pid=pid, epoch=max(epochs[pid] - 1, 0), n=1, txn=True)
                open_txn.add(pid)
        elif r < 0.93:
            p.roll()
        else:
            p.snapshot()


def build_fleet(root: Path, *, seed: int = 7, brokers: int = 2, partitions: int = 5,
                steps: int = 60) -> Fleet:
    """``brokers`` log dirs under ``root`` with ``partitions`` partitions each (two topics;
    broker copies share partition names, as replicas do), then damage in a few of them."""
    rng = random.Random(seed)
    fleet = Fleet(root=root)
    for b in range(brokers):
        broker = f"broker-{b + 1}"
        builder = LogDirBuilder(root / broker)
        built: list[PartitionBuilder] = []
        for i in range(partitions):
            topic = "orders" if i % 2 == 0 else "payments"
            p = builder.partition(topic, i)
            _history(p, rng, steps + rng.randint(0, steps))
            built.append(p)
            fleet.partitions.append((broker, topic, i))
        if b == 0 and len(built) > 2:
            built[1].hw(max(built[1].log_end_offset - 3, 0))  # HW inside the log
            wrong = AbortedTxnEntry(producer_id=42, first_offset=1, last_offset=2,
                                    last_stable_offset=1)
            built[2].txn_index = False
            built[2].write_txn_index(0, [wrong])  # a .txnindex that matches no ABORT
        builder.build()
        if b == 0 and len(built) > 4:
            _flip_byte(sorted(built[3].dir.glob("*.log"))[0], rng)
            _tear_tail(sorted(built[4].dir.glob("*.log"))[-1])
    return fleet


def _flip_byte(log: Path, rng: random.Random) -> None:
    data = bytearray(log.read_bytes())
    if len(data) > 200:
        at = rng.randrange(100, len(data) - 1)
        data[at] ^= 0x5A
        log.write_bytes(bytes(data))


def _tear_tail(log: Path) -> None:
    data = log.read_bytes()
    if len(data) > 40:
        log.write_bytes(data[:-17])
