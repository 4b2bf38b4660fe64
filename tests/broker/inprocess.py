"""A ``Broker`` over a log dir in this process (no sockets), for coordinator tests."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console

from kafkatx.broker.composition import build_broker
from kafkatx.broker.config.broker_config import BrokerConfig
from kafkatx.broker.logs.log_values import AppendResult
from kafkatx.broker.logs.partition_log import PartitionLog
from kafkatx.broker.protocol.server import Broker
from kafkatx.formats.consumer_offsets import parse_key as parse_group_key
from kafkatx.formats.consumer_offsets import parse_value as parse_group_value
from kafkatx.formats.record_batch import Record, RecordBatch, build_batch
from kafkatx.formats.transaction_log import TransactionLogValue, parse_key, parse_value

T = TypeVar("T")
T0 = 1_760_000_000_000


def run_broker(log_dir: Path, body: Callable[[Broker], Coroutine[Any, Any, T]],
               **config: Any) -> T:
    """Load a broker on ``log_dir``, run ``body`` inside the event loop, close it cleanly."""

    async def main() -> T:
        broker = build_broker(BrokerConfig(log_dir=log_dir, port=0, **config),
                              console=Console(file=io.StringIO(), width=200))
        broker.load()
        try:
            return await body(broker)
        finally:
            broker.close()

    return asyncio.run(main())


def output(broker: Broker) -> str:
    file = broker.console.file
    assert isinstance(file, io.StringIO)
    return file.getvalue()


def create_topic(broker: Broker, name: str, partitions: int = 1) -> None:
    broker.logs.create_topic(name, partitions)


def produce(broker: Broker, topic: str, partition: int, values: list[bytes], *, pid: int = -1,
            epoch: int = -1, seq: int = -1, txn: bool = False) -> AppendResult:
    log = broker.logs.get(topic, partition)
    assert log is not None
    records = [Record(offset=i, timestamp=T0 + i, key=None, value=v)
               for i, v in enumerate(values)]
    batch = build_batch(records, base_offset=0, producer_id=pid, producer_epoch=epoch,
                        base_sequence=seq, is_transactional=txn)
    return log.append_as_leader(batch, broker.now_ms())


def batches(log: PartitionLog) -> list[RecordBatch]:
    return list(log.iter_batches())


def markers(log: PartitionLog) -> list[tuple[str, int, int]]:
    """(COMMIT|ABORT, producer id, producer epoch) of each control batch, in log order."""
    out = []
    for b in batches(log):
        if b.header.is_control and b.control is not None:
            out.append((b.control.type, b.header.producer_id, b.header.producer_epoch))
    return out


def txn_log(broker: Broker, transactional_id: str) -> list[TransactionLogValue | None]:
    """Every value written for ``transactional_id`` (None for a tombstone), in order."""
    part = broker.transactions.partition_for(transactional_id)
    log = broker.logs.get("__transaction_state", part)
    assert log is not None
    out: list[TransactionLogValue | None] = []
    for b in batches(log):
        for r in b.records or ():
            assert r.key is not None
            if parse_key(r.key).transactional_id == transactional_id:
                out.append(parse_value(r.value))
    return out


def states(broker: Broker, transactional_id: str) -> list[tuple[str, int, int]]:
    """(state, producer id, epoch) of every value written for the id ("tombstone", -1, -1)."""
    return [("tombstone", -1, -1) if v is None else (v.state_name, v.producer_id,
                                                      v.producer_epoch)
            for v in txn_log(broker, transactional_id)]


def group_records(broker: Broker, group_id: str) -> list[tuple[Any, Any, RecordBatch]]:
    """(key, value, batch) of every ``__consumer_offsets`` record of ``group_id``."""
    log = broker.logs.get("__consumer_offsets", broker.groups.partition_for(group_id))
    assert log is not None
    out = []
    for b in batches(log):
        if b.header.is_control:
            continue
        for r in b.records or ():
            key = parse_group_key(r.key or b"")
            if getattr(key, "group", None) == group_id:
                out.append((key, parse_group_value(key, r.value), b))
    return out
