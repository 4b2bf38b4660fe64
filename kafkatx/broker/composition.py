"""The composition root: the one place a broker (or a ``--brokers N`` cluster) is built.

A :class:`~kafkatx.broker.protocol.server.Broker` is the server (connections, dispatch, its loops)
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

from kafkatx.broker.config.broker_config import BrokerConfig
from kafkatx.broker.coordinators.add_partitions_manager import AddPartitionsToTxnManager
from kafkatx.broker.coordinators.group_coordinator import GroupCoordinator
from kafkatx.broker.coordinators.txn_coordinator import TransactionCoordinator
from kafkatx.broker.faults import Faults
from kafkatx.broker.kraft.producer_ids import ProducerIdManager
from kafkatx.broker.logdir.log_cleaner import LogCleaner
from kafkatx.broker.logdir.log_manager import LogManager
from kafkatx.broker.logs.log_loader import LoadInterrupted
from kafkatx.broker.protocol.handlers import load_handlers
from kafkatx.broker.protocol.lifecycle import StopRequest
from kafkatx.broker.protocol.server import Broker
from kafkatx.broker.replication.cluster import Cluster
from kafkatx.broker.replication.replica_manager import ReplicaManager


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
    broker.txn_verifier = AddPartitionsToTxnManager(broker)
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


async def run_cluster(cluster: Cluster, stop: StopRequest,
                      on_listening: Callable[[Cluster], None] | None = None) -> None:
    """``kafkatx serve --brokers N`` until SIGTERM/SIGINT: start every broker, then at the stop
    let the followers catch up (at most ``SETTLE_TIMEOUT_S``) and stop them all cleanly."""
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    stop.notify(lambda: loop.call_soon_threadsafe(stopping.set))
    await cluster.start()
    if on_listening is not None:
        on_listening(cluster)
    try:
        await stopping.wait()
    finally:
        if cluster.brokers:
            next(iter(cluster.brokers.values())).log(
                "shutting down: followers catch up, then producer snapshots and checkpoints")
        await cluster.wait_settled()
        await cluster.stop()
