"""AlterConfigs (33) and IncrementalAlterConfigs (44): live topic and broker configs.

Mirrors ``KafkaApis#handleAlterConfigsRequest`` / ``#handleIncrementalAlterConfigsRequest`` on a
KRaft node (``ConfigAdminManager#preprocess``, then the controller's answer reassembled in the
request's order: ``reassembleLegacyResponse`` / ``reassembleIncrementalResponse``) through
:class:`kafkatx.broker.protocol.config_admin.ConfigAdmin`. DescribeConfigs (in ``topics``) shows the
result. Advertised ranges are Kafka 3.0's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkatx.broker.protocol.config_admin import ConfigAdmin, Result
from kafkatx.broker.protocol.handlers.registry import api
from kafkatx.broker.wire import codec

if TYPE_CHECKING:
    from kafkatx.broker.context import BrokerContext, RequestContext


def _response(broker: BrokerContext, ctx: RequestContext, request: Any,
              results: list[Result]) -> Any:
    for res, result in zip(request.resources, results, strict=True):
        if result.error.value == 0 and not request.validate_only:
            broker.log(f"configs of {'topic' if res.resource_type == 2 else 'broker'} "
                       f"{res.resource_name!r} altered: "
                       + ", ".join(c.name for c in res.configs))
    return codec.make(ctx.response_cls, responses=tuple(
        codec.make(ctx.resp.AlterConfigsResourceResponse, error_code=result.error,
                      error_message=result.message, resource_type=res.resource_type,
                      resource_name=res.resource_name)
        for res, result in zip(request.resources, results, strict=True)))


@api(33, 0, 2)
async def handle_alter_configs(broker: BrokerContext, ctx: RequestContext, request: Any) -> Any:
    admin = ConfigAdmin(broker.logs, broker.config.node_id)
    results = admin.legacy_alter(
        [(r.resource_type, r.resource_name, [(c.name, c.value) for c in r.configs])
         for r in request.resources], request.validate_only)
    return _response(broker, ctx, request, results)


@api(44, 0, 1)
async def handle_incremental_alter_configs(broker: BrokerContext, ctx: RequestContext,
                                           request: Any) -> Any:
    admin = ConfigAdmin(broker.logs, broker.config.node_id)
    results = admin.incremental_alter(
        [(r.resource_type, r.resource_name,
          [(c.name, c.config_operation, c.value) for c in r.configs])
         for r in request.resources], request.validate_only)
    return _response(broker, ctx, request, results)
