"""The handler registry: ``@api(key, min, max)`` registers a handler with the versions it
serves. Handler modules import this; :mod:`kafkatx.broker.protocol.handlers` imports them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from kafkatx.lazy_dataclass import dataclass

if TYPE_CHECKING:
    from kafkatx.broker.context import BrokerContext, RequestContext

Handler = Callable[["BrokerContext", "RequestContext", Any], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class ApiHandler:
    api_key: int
    min_version: int
    max_version: int
    handle: Handler
    tv2_max_version: int | None = None  # the range's top at transaction.version 2
    cluster_only: bool = False  # served by the brokers of a --brokers N serve only
    cluster_max_version: int | None = None  # the top below transaction.version 2 with brokers

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


REGISTRY: dict[int, ApiHandler] = {}


def api(api_key: int, min_version: int, max_version: int, *,
        tv2_max_version: int | None = None, cluster_only: bool = False,
        cluster_max_version: int | None = None) -> Callable[[Handler], Handler]:
    """Register ``handle`` for ``api_key`` versions [min_version, max_version] (up to
    ``tv2_max_version`` when the broker runs at transaction.version 2, up to
    ``cluster_max_version`` below it for the brokers of a ``--brokers N`` serve: the
    broker-to-broker versions their peers send)."""

    def register(handle: Handler) -> Handler:
        REGISTRY[api_key] = ApiHandler(api_key, min_version, max_version, handle,
                                       tv2_max_version, cluster_only, cluster_max_version)
        return handle

    return register
