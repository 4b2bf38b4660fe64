"""Request handlers, one module per API group, registered by api key with the versions served.

A handler is ``async def handle(broker, ctx, request) -> response | None`` (None: no response,
as for Produce with acks=0). ``ApiVersions`` advertises exactly what is registered here, so a
module that registers nothing advertises nothing. Some APIs serve more versions when the
cluster's ``transaction.version`` is 2 (Kafka 4.0's ranges for transactions v2).
"""

from __future__ import annotations

import dataclasses
import importlib

from kafkatx.broker.protocol.handlers.registry import REGISTRY, ApiHandler, api

__all__ = ["ApiHandler", "api", "load_handlers"]

HANDLER_MODULES = (
    "kafkatx.broker.protocol.handlers.api_versions",
    "kafkatx.broker.protocol.handlers.metadata",
    "kafkatx.broker.protocol.handlers.topics",
    "kafkatx.broker.protocol.handlers.configs",
    "kafkatx.broker.protocol.handlers.replicas",
    "kafkatx.broker.protocol.handlers.produce",
    "kafkatx.broker.protocol.handlers.fetch",
    "kafkatx.broker.protocol.handlers.list_offsets",
    "kafkatx.broker.protocol.handlers.leader_epochs",
    "kafkatx.broker.protocol.handlers.records",
    "kafkatx.broker.protocol.handlers.coordinator",
    "kafkatx.broker.protocol.handlers.transactions",
    "kafkatx.broker.protocol.handlers.groups",
)


def load_handlers(transaction_version: int = 0, *,
                  cluster: bool = False) -> dict[int, ApiHandler]:
    """The handlers with the version ranges this broker serves (``cluster``: a broker of a
    ``--brokers N`` serve, which also serves the replication APIs)."""
    for module in HANDLER_MODULES:
        importlib.import_module(module)
    served = {key: h for key, h in REGISTRY.items() if cluster or not h.cluster_only}
    if transaction_version < 2:
        if not cluster:
            return served
        return {key: (dataclasses.replace(h, max_version=h.cluster_max_version)
                      if h.cluster_max_version is not None else h)
                for key, h in served.items()}
    return {key: (dataclasses.replace(h, max_version=h.tv2_max_version)
                  if h.tv2_max_version is not None else h) for key, h in served.items()}
