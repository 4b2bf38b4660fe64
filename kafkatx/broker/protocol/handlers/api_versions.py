"""ApiVersions (key 18): what this broker serves, including the reply to versions it does not.

Mirrors ``KafkaApis#handleApiVersionsRequest`` / ``ApiVersionsResponse``: the advertised ranges
are exactly the handlers this broker serves; from v3 on, the ``transaction.version`` feature is
listed as supported (0-2) and, when ``--transaction-version`` is above 0, as finalized at that
level (what a Kafka 4 client reads to use transactions v2); a request of an unknown ApiVersions
version gets UNSUPPORTED_VERSION in the v0 layout with only the ApiVersions range
(``ApiVersionsRequest#getErrorResponse``), so the client retries at a version both know.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any

from kio.schema.api_versions.v0.response import ApiVersion as ApiVersionV0
from kio.schema.api_versions.v0.response import ApiVersionsResponse as ApiVersionsResponseV0
from kio.schema.errors import ErrorCode

from kafkatx.broker.protocol.handlers.registry import ApiHandler, api
from kafkatx.broker.wire import codec

if TYPE_CHECKING:
    from kafkatx.broker.context import BrokerContext, RequestContext

API_VERSIONS_KEY = 18
MIN_VERSION, MAX_VERSION = 0, 3  # Kafka 3.0's ApiVersions range
TRANSACTION_VERSION_FEATURE = "transaction.version"
MAX_TRANSACTION_VERSION = 2
FINALIZED_FEATURES_EPOCH = 0


@api(API_VERSIONS_KEY, MIN_VERSION, MAX_VERSION)
async def handle_api_versions(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    client = getattr(request, "client_software_name", None)
    if client:
        broker.log(f"{ctx.peer} is {client} {getattr(request, 'client_software_version', '')}")
    keys = tuple(
        codec.make(ctx.resp.ApiVersion, api_key=h.api_key, min_version=h.min_version,
                      max_version=h.max_version)
        for h in sorted(broker.handlers.values(), key=lambda h: h.api_key)
    )
    features: dict[str, Any] = {}
    if ctx.api_version >= 3:
        level = broker.config.transaction_version
        features["supported_features"] = (codec.make(
            ctx.resp.SupportedFeatureKey, name=TRANSACTION_VERSION_FEATURE, min_version=0,
            max_version=MAX_TRANSACTION_VERSION),)
        if level > 0:
            features["finalized_features_epoch"] = FINALIZED_FEATURES_EPOCH
            features["finalized_features"] = (codec.make(
                ctx.resp.FinalizedFeatureKey, name=TRANSACTION_VERSION_FEATURE,
                max_version_level=level, min_version_level=level),)
    return codec.make(ctx.response_cls, error_code=ErrorCode.none, api_keys=keys,
                         throttle_time=datetime.timedelta(0), **features)


def unsupported_version_reply(correlation_id: int, handlers: dict[int, ApiHandler]) -> bytes:
    """The v0-layout UNSUPPORTED_VERSION answer (header v0, like every ApiVersions response)."""
    own = handlers.get(API_VERSIONS_KEY)
    low, high = (own.min_version, own.max_version) if own else (MIN_VERSION, MAX_VERSION)
    body = ApiVersionsResponseV0(
        error_code=ErrorCode.unsupported_version,
        api_keys=(ApiVersionV0(api_key=API_VERSIONS_KEY, min_version=low, max_version=high),),
    )
    return codec.encode_response(correlation_id, body)
