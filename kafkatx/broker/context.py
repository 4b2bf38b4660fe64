"""What handlers, coordinators and replication see of their broker: one context, no server.

``BrokerContext`` is the broker as its collaborators use it (Kafka's ``KafkaApis`` is handed
the same set: ``ReplicaManager``, the group and transaction coordinators, the producer id
manager, the config, the metadata cache). The server implements it; only the composition root
(:mod:`kafkatx.broker.composition`) builds one. This module imports nothing of the broker, so
every room of it may import this one and none has to import the server back.

The protocols name what one room asks of another; the values a room owns (a partition log, a
group's metadata) are typed ``Any`` here and named in the member's docstring, since their
classes live in the rooms that import this module.
"""

from __future__ import annotations

import asyncio
import sys
import types
from collections.abc import Awaitable, Iterable, Mapping
from typing import Any, Protocol

from kio.schema.errors import ErrorCode

from kafkatx.lazy_dataclass import dataclass

TopicPartition = tuple[str, int]


@dataclass(slots=True)
class RequestContext:
    """One request in flight: its header, the response class of its version, the peer."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    response_cls: type
    peer: str

    @property
    def resp(self) -> types.ModuleType:
        """The kio module of the response (nested entity classes by name)."""
        return sys.modules[self.response_cls.__module__]


@dataclass(slots=True)
class PartitionState:
    """A ``PartitionRecord`` as the controller keeps it (``--brokers N``)."""

    topic: str
    partition: int
    replicas: list[int]
    leader: int
    leader_epoch: int
    isr: list[int]
    partition_epoch: int = 0

    @property
    def tp(self) -> TopicPartition:
        return (self.topic, self.partition)


class ClusterError(Exception):
    """A controller's refusal (``--brokers N``): ``kind`` is "replication_factor" or one of
    ``TopicError``'s kinds."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class ApiRange(Protocol):
    """The versions of one API a broker serves (a registered handler)."""

    api_key: int
    min_version: int
    max_version: int


class Faults(Protocol):
    """The ``--fault`` rules a broker runs with (:class:`kafkatx.broker.faults.Faults`)."""

    def drops_marker(self, topic: str, partition: int) -> bool: ...
    def marker_delay_ms(self, topic: str, partition: int) -> int: ...
    def crashes_after(self, state: Any) -> bool: ...
    def crash_while_cleaning(self, step: str) -> None: ...
    def replication_cut(self, follower: int, leader: int) -> bool: ...
    def replication_delay_ms(self, follower: int) -> int: ...
    def rejection(self, api_key: int) -> ErrorCode | None: ...


class ProducerIds(Protocol):
    """``ProducerIdManager``: producer ids handed out from the controller's blocks."""

    def generate(self) -> int: ...
    def observe(self, producer_id: int) -> None: ...


class Replicas(Protocol):
    """``ReplicaManager``: the partitions this broker hosts and their roles. A partition is a
    :class:`kafkatx.broker.replication.replica_manager.Partition`."""

    partitions: dict[TopicPartition, Any]

    def apply(self, state: PartitionState) -> None: ...
    def forget(self, tp: TopicPartition) -> None: ...
    def resign_all(self) -> None: ...
    def leader_partition(self, topic: str, partition: int) -> Any: ...
    def truncated(self, part: Any, before: int, after: int) -> None: ...
    def update_follower_fetch(self, part: Any, replica_id: int, fetch_offset: int,
                              leader_log_end_offset: int) -> None: ...
    def notify_high_watermark(self) -> None: ...
    def after_leader_append(self, part: Any) -> None: ...
    def min_insync_error(self, part: Any) -> ErrorCode | None: ...
    def min_insync_replicas(self, part: Any) -> int: ...
    def wait_for_replication(self, part: Any, required_offset: int,
                             timeout_s: float) -> Awaitable[ErrorCode]: ...
    def isr_loop(self) -> Awaitable[None]: ...
    def shutdown(self) -> Awaitable[None]: ...


class Groups(Protocol):
    """``GroupCoordinator`` (:mod:`kafkatx.broker.coordinators.group_coordinator`): results
    are its ``JoinResult``, ``SyncResult`` and ``GroupMetadata``; offsets are
    ``OffsetAndMetadata`` by partition."""

    def partition_for(self, group_id: str) -> int: ...
    def owns(self, group_id: str) -> bool: ...
    def load_partition(self, partition: int) -> None: ...
    def unload_partition(self, partition: int) -> None: ...
    def on_transaction_completed(self, producer_id: int, partition: int,
                                 commit: bool) -> None: ...
    def handle_join_group(self, group_id: str, member_id: str, instance_id: str | None, *,
                          require_known_member_id: bool, client_id: str, client_host: str,
                          rebalance_timeout_ms: int, session_timeout_ms: int,
                          protocol_type: str,
                          protocols: list[tuple[str, bytes]]) -> Awaitable[Any]: ...
    def handle_sync_group(self, group_id: str, generation_id: int, member_id: str,
                          protocol_type: str | None, protocol_name: str | None,
                          instance_id: str | None,
                          assignments: Mapping[str, bytes]) -> Awaitable[Any]: ...
    def handle_heartbeat(self, group_id: str, member_id: str, instance_id: str | None,
                         generation_id: int) -> ErrorCode: ...
    def handle_leave_group(self, group_id: str, leaving: list[tuple[str, str | None]]
                           ) -> tuple[ErrorCode, list[tuple[str, str | None, ErrorCode]]]: ...
    def handle_commit_offsets(self, group_id: str, member_id: str, instance_id: str | None,
                              generation_id: int, offsets: Mapping[TopicPartition, Any]
                              ) -> dict[TopicPartition, ErrorCode]: ...
    def handle_txn_commit_offsets(self, group_id: str, producer_id: int, producer_epoch: int,
                                  member_id: str, instance_id: str | None,
                                  generation_id: int, offsets: Mapping[TopicPartition, Any]
                                  ) -> dict[TopicPartition, ErrorCode]: ...
    def handle_fetch_offsets(self, group_id: str, require_stable: bool,
                             partitions: list[TopicPartition] | None
                             ) -> tuple[ErrorCode, dict[TopicPartition, Any]]: ...
    def list_groups(self, states: set[str]) -> list[Any]: ...
    def describe_group(self, group_id: str) -> tuple[ErrorCode, Any]: ...
    def handle_delete_groups(self, group_ids: list[str]) -> dict[str, ErrorCode]: ...
    def settle_writes(self, replicated: bool) -> None: ...
    def handle_delete_offsets(self, group_id: str, partitions: list[TopicPartition]
                              ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]: ...


class Transactions(Protocol):
    """``TransactionCoordinator`` (:mod:`kafkatx.broker.coordinators.txn_coordinator`):
    results are its ``InitProducerIdResult`` and ``TransactionMetadata``."""

    def owns(self, transactional_id: str) -> bool: ...
    def load_partition(self, partition: int, leader_epoch: int) -> None: ...
    def unload_partition(self, partition: int) -> None: ...
    def handle_init_producer_id(self, transactional_id: str | None, timeout_ms: int,
                                expected: tuple[int, int] | None) -> Any: ...
    def handle_add_partitions(self, transactional_id: str, producer_id: int,
                              producer_epoch: int, partitions: Iterable[TopicPartition],
                              client_transaction_version: int = 0) -> ErrorCode: ...
    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: Iterable[TopicPartition]
                          ) -> dict[TopicPartition, ErrorCode]: ...
    def handle_add_offsets(self, transactional_id: str, producer_id: int, producer_epoch: int,
                           group_id: str, client_transaction_version: int = 0) -> ErrorCode: ...
    def handle_end_transaction(self, transactional_id: str, producer_id: int,
                               producer_epoch: int, commit: bool,
                               client_transaction_version: int = 0
                               ) -> tuple[ErrorCode, int, int]: ...
    def write_markers(self, producer_id: int, producer_epoch: int, coordinator_epoch: int,
                      commit: bool, partitions: Iterable[TopicPartition], *,
                      transaction_version: int = 0) -> dict[TopicPartition, ErrorCode]: ...
    def describe(self, transactional_id: str) -> tuple[ErrorCode, Any]: ...
    def list_transactions(self, producer_ids: set[int], states: set[str],
                          duration_ms: int = -1) -> tuple[list[Any], list[str]]: ...


class TxnVerifier(Protocol):
    """``AddPartitionsToTxnManager`` (:mod:`kafkatx.broker.coordinators.add_partitions_manager`):
    a partition leader's questions to a transaction coordinator on another broker."""

    def add_or_verify(self, transactional_id: str, producer_id: int, producer_epoch: int,
                      partitions: Iterable[TopicPartition], *, add: bool,
                      knows_abortable: bool) -> Awaitable[dict[TopicPartition, ErrorCode]]: ...


class ClusterView(Protocol):
    """The controller of a ``--brokers N`` serve as its brokers use it
    (:class:`kafkatx.broker.replication.cluster.Cluster`)."""

    cluster_id: str
    default_replication_factor: int
    brokers: Mapping[int, BrokerNode]  # the running ones

    @property
    def node_ids(self) -> list[int]: ...
    def state(self, topic: str, partition: int) -> PartitionState | None: ...
    def leader_broker(self, topic: str, partition: int) -> BrokerNode | None: ...
    def assignment(self, num_partitions: int, replication_factor: int) -> list[list[int]]: ...
    def create_topic(self, name: str, num_partitions: int, replication_factor: int | None,
                     configs: Mapping[str, str] | None = None, *,
                     assignment: list[list[int]] | None = None,
                     topic_id: Any = None) -> Any: ...
    def create_partitions(self, name: str, count: int,
                          assignment: list[list[int]] | None = None) -> None: ...
    def ensure_internal_topic(self, name: str) -> None: ...
    def delete_topic(self, name: str) -> None: ...
    def alter_isr(self, tp: TopicPartition, leader: int, leader_epoch: int,
                  isr: list[int]) -> bool: ...


class BrokerContext(Protocol):
    """One broker as its handlers, coordinators and replicas see it."""

    config: Any  # BrokerConfig (kafkatx.broker.config.broker_config.broker_config)
    logs: Any  # LogManager (kafkatx.broker.logs.log_manager): the log dir's topics
    replicas: Replicas
    groups: Groups
    transactions: Transactions
    txn_verifier: TxnVerifier
    producer_ids: ProducerIds
    faults: Faults
    cluster: ClusterView | None  # the controller of a --brokers N serve, else None
    handlers: Mapping[int, ApiRange]  # the APIs served, by api key
    stopping: asyncio.Event
    port: int

    @property
    def advertised_host(self) -> str: ...
    def now_ms(self) -> int: ...
    def log(self, message: str, *, style: str | None = None) -> None: ...
    def warn(self, message: str) -> None: ...
    def notify_append(self) -> None: ...
    def wait_for_append(self, timeout_s: float) -> Awaitable[bool]: ...


class BrokerNode(BrokerContext, Protocol):
    """A broker as the controller of a ``--brokers N`` serve starts and stops it."""

    def load_logs(self) -> None: ...
    def listen(self) -> Awaitable[None]: ...
    def start_tasks(self) -> None: ...
    def stop(self) -> Awaitable[None]: ...
    def kill(self) -> Awaitable[None]: ...
