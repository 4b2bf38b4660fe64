"""A transactional producer of confluent-kafka or kafka-python, in a process a test SIGKILLs.

``python tests/realkafka/python_producer.py CLIENT BOOTSTRAP TRANSACTIONAL_ID TOPIC PARTITION
VALUE... [--timeout-ms N] [--commit-first N]``: initializes and commits a transaction of the
first N values (default 0: none), prints ``initialized``, waits for a line on stdin (so a test
can start the transactions of several producers at once), then begins a transaction, sends the
other values to TOPIC-PARTITION, flushes, prints ``ready <offset>...`` (every value's offset)
and waits, the transaction open, until it is killed (or its stdin closes: then it exits without
committing).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

Send = Callable[[list[str]], list[int]]  # sends values, flushes, returns their offsets


def confluent(args: argparse.Namespace) -> tuple[Any, Send]:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": args.bootstrap,
                         "transactional.id": args.transactional_id,
                         "transaction.timeout.ms": args.timeout_ms, "linger.ms": 0})
    producer.init_transactions(30)

    def send(values: list[str]) -> list[int]:
        offsets: list[int] = []
        for value in values:
            producer.produce(args.topic, value.encode(), partition=args.partition,
                             on_delivery=lambda err, msg: offsets.append(
                                 -1 if err is not None else msg.offset()))
        producer.flush(30)
        return offsets

    return producer, send


def kafka_python(args: argparse.Namespace) -> tuple[Any, Send]:
    import logging

    from kafka import KafkaProducer

    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    producer = KafkaProducer(bootstrap_servers=args.bootstrap,
                             transactional_id=args.transactional_id,
                             transaction_timeout_ms=args.timeout_ms)
    producer.init_transactions()

    def send(values: list[str]) -> list[int]:
        futures = [producer.send(args.topic, value.encode(), partition=args.partition)
                   for value in values]
        producer.flush()
        return [f.get(30).offset for f in futures]

    return producer, send


CLIENTS = {"confluent-kafka": confluent, "kafka-python": kafka_python}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("client", choices=sorted(CLIENTS))
    parser.add_argument("bootstrap")
    parser.add_argument("transactional_id")
    parser.add_argument("topic")
    parser.add_argument("partition", type=int)
    parser.add_argument("values", nargs="+")
    parser.add_argument("--timeout-ms", type=int, default=60_000)
    parser.add_argument("--commit-first", type=int, default=0)
    args = parser.parse_args()
    producer, send = CLIENTS[args.client](args)
    offsets: list[int] = []
    if args.commit_first:
        producer.begin_transaction()
        offsets += send(args.values[:args.commit_first])
        producer.commit_transaction()
    print("initialized", flush=True)
    sys.stdin.readline()
    producer.begin_transaction()
    offsets += send(args.values[args.commit_first:])
    print("ready", *offsets, flush=True)
    sys.stdin.read()  # the transaction stays open until the test kills this process
    return 0


if __name__ == "__main__":
    sys.exit(main())
