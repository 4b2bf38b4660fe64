"""A partition leader's questions to the transaction coordinator of a transactional produce.

Mirrors ``AddPartitionsToTxnManager`` (KIP-890): the leader of a partition a transactional
batch would start a transaction in asks the coordinator of the batch's transactional id (the
leader of its ``__transaction_state`` partition) with an AddPartitionsToTxn request of the
broker-to-broker batch form (v4+), over a loopback connection of its own: ``verify_only`` (is
the partition in the ongoing transaction?) for clients before transactions v2, an add of the
partition for a Produce v12+ under transactions v2 (``TransactionSupportedOperation
.ADD_PARTITION``). The coordinator's answer is translated as ``AddPartitionsToTxnHandler
#onComplete`` does: PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH, TRANSACTION_ABORTABLE
becomes INVALID_TXN_STATE for a produce version that does not know it, a top-level error goes
to every partition (CLUSTER_AUTHORIZATION_FAILED as INVALID_TXN_STATE), no coordinator is
COORDINATOR_NOT_AVAILABLE, a lost connection NETWORK_EXCEPTION. Kafka batches the questions of
concurrent requests to one coordinator in one request; here each produce request asks alone,
one request at a time per coordinator.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING

from kio.schema.add_partitions_to_txn.v4 import request as add_v4
from kio.schema.add_partitions_to_txn.v5 import request as add_v5
from kio.schema.errors import ErrorCode

from kafkatx.broker.logdir.log_manager import INTERNAL_PARTITIONS
from kafkatx.broker.replication.broker_client import BrokerConnection
from kafkatx.formats.internal_topics import TRANSACTION_STATE_TOPIC
from kafkatx.semantics.coordinator_partition import partition_for

if TYPE_CHECKING:
    from kafkatx.broker.context import BrokerContext, TopicPartition

REQUEST_TIMEOUT_S = 30.0  # request.timeout.ms, as the sender thread waits for an answer
FIRST_TV2_VERSION = 5  # AddPartitionsToTxn v5: the add of transactions v2


def coordinator_error(error: ErrorCode, knows_abortable: bool) -> ErrorCode:
    """A coordinator's error for one partition as the produce path takes it."""
    if error == ErrorCode.producer_fenced:
        return ErrorCode.invalid_producer_epoch
    if error == ErrorCode.transaction_abortable and not knows_abortable:
        return ErrorCode.invalid_txn_state
    return error


class AddPartitionsToTxnManager:
    """One broker's connections to the transaction coordinators it verifies with."""

    def __init__(self, broker: BrokerContext) -> None:
        self.broker = broker
        self._connections: dict[int, BrokerConnection] = {}
        self._in_flight: dict[int, asyncio.Lock] = {}

    async def add_or_verify(self, transactional_id: str, producer_id: int, producer_epoch: int,
                            partitions: Iterable[TopicPartition], *, add: bool,
                            knows_abortable: bool) -> dict[TopicPartition, ErrorCode]:
        """``addOrVerifyTransaction``: the partitions not verified (or not added, ``add``),
        with their errors; an empty map when all are in the transaction."""
        wanted = list(partitions)
        cluster = self.broker.cluster
        assert cluster is not None
        state = cluster.state(TRANSACTION_STATE_TOPIC,
                              partition_for(transactional_id, INTERNAL_PARTITIONS))
        node = cluster.brokers.get(state.leader) if state is not None else None
        if node is None:
            return dict.fromkeys(wanted, ErrorCode.coordinator_not_available)
        schema = add_v5 if self.broker.config.transaction_version >= 2 else add_v4
        by_topic: dict[str, list[int]] = {}
        for topic, partition in wanted:
            by_topic.setdefault(topic, []).append(partition)
        request = schema.AddPartitionsToTxnRequest(transactions=(
            schema.AddPartitionsToTxnTransaction(
                transactional_id=transactional_id, producer_id=producer_id,
                producer_epoch=producer_epoch, verify_only=not add,
                topics=tuple(schema.AddPartitionsToTxnTopic(name=t, partitions=tuple(ps))
                             for t, ps in by_topic.items())),))
        lock = self._in_flight.setdefault(node.config.node_id, asyncio.Lock())
        async with lock:
            conn = self._connections.get(node.config.node_id)
            if conn is None or (conn.host, conn.port) != (node.advertised_host, node.port):
                conn = BrokerConnection(node.advertised_host, node.port,
                                        f"broker-{self.broker.config.node_id}-txn-verifier")
                self._connections[node.config.node_id] = conn
            try:
                response = await conn.request(request, REQUEST_TIMEOUT_S)
            except (TimeoutError, OSError, EOFError, asyncio.IncompleteReadError):
                await conn.close()
                return dict.fromkeys(wanted, ErrorCode.network_exception)
        if response.error_code != ErrorCode.none:
            error = (ErrorCode.invalid_txn_state
                     if response.error_code == ErrorCode.cluster_authorization_failed
                     else response.error_code)
            return dict.fromkeys(wanted, error)
        unverified: dict[TopicPartition, ErrorCode] = {}
        for result in response.results_by_transaction:
            for topic_result in result.topic_results:
                for p in topic_result.results_by_partition:
                    if p.partition_error_code != ErrorCode.none:
                        unverified[(topic_result.name, p.partition_index)] = \
                            coordinator_error(p.partition_error_code, knows_abortable)
        return unverified

    async def close(self) -> None:
        for conn in self._connections.values():
            await conn.close()
        self._connections.clear()
