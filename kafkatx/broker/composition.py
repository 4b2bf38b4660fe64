"""The composition root: the one place a broker (or a ``--brokers N`` cluster) is built.

A :class:`~kafkatx.broker.server.Broker` is the server (connections, dispatch, its loops)
and the :class:`~kafkatx.broker.context.BrokerContext` its collaborators see; here it is given
them: the log dir's ``LogManager`` and cleaner, the producer id manager, the replica manager,
the group and transaction coordinators and the handler registry, as Kafka's ``BrokerServer``
wires ``KafkaApis``. Nothing else constructs them, and nothing but the CLI and the tests
import this module.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping

from rich.console import Console

from kafkatx.broker.cluster import Cluster
from kafkatx.broker.config import BrokerConfig
from kafkatx.broker.faults import Faults
from kafkatx.broker.group_coordinator import GroupCoordinator
from kafkatx.broker.handlers import load_handlers
from kafkatx.broker.lifecycle import StopRequest
from kafkatx.broker.log_cleaner import LogCleaner
from kafkatx.broker.log_loader import LoadInterrupted
from kafkatx.broker.log_manager import LogManager
from kafkatx.broker.producer_ids import ProducerIdManager
from kafkatx.broker.replica_manager import ReplicaManager
from kafkatx.broker.server import Broker
from kafkatx.broker.txn_coordinator import TransactionCoordinator


def build_broker(config: BrokerConfig, *, console: Console | None = None,
                 cluster: Cluster | None = None) -> Broker:
    """A broker over ``config.log_dir`` (not loaded yet): the single node of ``kafkatx
    serve``, or one of the brokers of ``cluster``."""
    broker = Broker(config, console=console, cluster=cluster)
    broker.faults = Faults(tuple(config.faults))
    broker.logs = LogManager(config)
    broker.cleaner = LogCleaner(broker.logs, crash_at=broker.faults.crash_while_cleaning)
    broker.producer_ids = cluster.producer_ids if cluster is not None else ProducerIdManager()
    broker.replicas = ReplicaManager(broker)
    broker.groups = GroupCoordinator(
        broker, initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms)
    broker.transactions = TransactionCoordinator(broker)
    broker.transactions.id_expiration_ms = config.transactional_id_expiration_ms
    broker.handlers = load_handlers(config.transaction_version, cluster=cluster is not None)
    return broker


def build_cluster(configs: Mapping[int, BrokerConfig], *, console: Console | None = None,
                  default_replication_factor: int = 1) -> Cluster:
    """The brokers of one ``kafkatx serve --brokers N`` (by node id) and their controller."""
    cluster = Cluster(dict(configs), console=console,
                      default_replication_factor=default_replication_factor)
    cluster.new_broker_node = lambda config, owner: build_broker(config, console=owner.console,
                                                                 cluster=owner)
    return cluster


async def run_broker(config: BrokerConfig, *, console: Console | None = None,
                     on_listening: Callable[[Broker], None] | None = None,
                     stop: StopRequest | None = None) -> None:
    """Run until SIGTERM/SIGINT (``stop``: the process's ``StopRequest``, installed here when
    not given), then shut down cleanly; a stop during start-up closes what was loaded."""
    if stop is None:
        stop = StopRequest()
        with contextlib.suppress(ValueError):  # not the main thread: no signals
            stop.install()
    loop = asyncio.get_running_loop()
    broker = build_broker(config, console=console)
    stop.notify(lambda: loop.call_soon_threadsafe(broker.stopping.set))
    try:
        await broker.start(stop)
    except LoadInterrupted:
        broker.log("stop requested during start-up: closing what was loaded")
        broker.close()
        broker.log("stopped cleanly")
        return
    if on_listening is not None:
        on_listening(broker)
    try:
        await broker.stopping.wait()
    finally:
        broker.log("shutting down: writing producer snapshots and checkpoints")
        await broker.stop()
        broker.log("stopped cleanly")
