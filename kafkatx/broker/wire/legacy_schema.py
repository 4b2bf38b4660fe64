"""The old message versions kio does not model: Produce v0-v2, Fetch v0-v3, ListOffsets v0.

Built from Kafka's ``ProduceRequest/Response.json``, ``FetchRequest/Response.json`` and
``ListOffsetsRequest/Response.json`` (the fields of those versions, in schema order) as kio-style
entities: frozen dataclasses with ``kafka_type`` metadata that kio's ``entity_reader`` /
``entity_writer`` read and write, one module per (API, version, request or response) so the
handlers find nested entities by name as they do in kio's modules. None of these versions is
flexible: request header v1, response header v0. Kafka 3.x serves them (KIP-896 removed them in
Kafka 4.0).
"""

from __future__ import annotations

import dataclasses
import datetime
import sys
import types
from typing import Any

from kio.schema.errors import ErrorCode
from kio.schema.request_header.v1.header import RequestHeader
from kio.schema.response_header.v0.header import ResponseHeader
from kio.static.constants import EntityType
from kio.static.primitive import Records, TZAware, i16, i32, i32Timedelta, i64

PRODUCE, FETCH, LIST_OFFSETS = 0, 1, 2
_API_NAMES = {PRODUCE: "produce", FETCH: "fetch", LIST_OFFSETS: "list_offsets"}
_NO_DEFAULT = dataclasses.MISSING
# (name, annotation, kafka_type or None for nested entities, default)
Field = tuple[str, Any, str | None, Any]


def _f(name: str, annotation: Any, kafka_type: str | None = None,
       default: Any = _NO_DEFAULT) -> Field:
    return name, annotation, kafka_type, default


def _module(api_key: int, version: int, kind: str,
            entities: list[tuple[str, list[Field]]]) -> type:
    """Define ``entities`` (nested ones first, the request/response last) in a module of their
    own; returns the last."""
    name = f"{__name__}.{_API_NAMES[api_key]}_v{version}_{kind}"
    module = types.ModuleType(name)
    sys.modules[name] = module
    header = RequestHeader if kind == "request" else ResponseHeader
    top = None
    for index, (entity_name, fields) in enumerate(entities):
        last = index == len(entities) - 1
        entity_type = (EntityType.request if kind == "request" else EntityType.response) \
            if last else EntityType.nested
        specs = []
        for field_name, annotation, kafka_type, default in fields:
            if isinstance(annotation, str):  # a nested entity of this module, by name
                annotation = tuple[getattr(module, annotation), ...]  # type: ignore[misc]
            metadata = {} if kafka_type is None else {"kafka_type": kafka_type}
            specs.append((field_name, annotation, dataclasses.field(metadata=metadata,
                                                                    default=default)))
        cls = dataclasses.make_dataclass(
            entity_name, specs, frozen=True, slots=True, kw_only=True,
            namespace={"__type__": entity_type, "__version__": i16(version),
                       "__flexible__": False, "__api_key__": i16(api_key),
                       "__header_schema__": header, "__module__": name})
        setattr(module, entity_name, cls)
        top = cls
    assert top is not None
    return top


def _produce(version: int) -> tuple[type, type]:
    request = _module(PRODUCE, version, "request", [
        ("PartitionProduceData", [_f("index", i32, "int32"),
                                  _f("records", Records | None, "records")]),
        ("TopicProduceData", [_f("name", str, "string"),
                              _f("partition_data", "PartitionProduceData")]),
        ("ProduceRequest", [_f("acks", i16, "int16"),
                            _f("timeout", i32Timedelta, "timedelta_i32"),
                            _f("topic_data", "TopicProduceData")]),
    ])
    partition = [_f("index", i32, "int32"), _f("error_code", ErrorCode, "error_code"),
                 _f("base_offset", i64, "int64")]
    if version >= 2:
        partition.append(_f("log_append_time", TZAware | None, "datetime_i64", None))
    top = [_f("responses", "TopicProduceResponse")]
    if version >= 1:
        top.append(_f("throttle_time", i32Timedelta, "timedelta_i32",
                      i32Timedelta.parse(datetime.timedelta(0))))
    response = _module(PRODUCE, version, "response", [
        ("PartitionProduceResponse", partition),
        ("TopicProduceResponse", [_f("name", str, "string"),
                                  _f("partition_responses", "PartitionProduceResponse")]),
        ("ProduceResponse", top),
    ])
    return request, response


def _fetch(version: int) -> tuple[type, type]:
    top = [_f("replica_id", i32, "int32"), _f("max_wait", i32Timedelta, "timedelta_i32"),
           _f("min_bytes", i32, "int32")]
    if version >= 3:
        top.append(_f("max_bytes", i32, "int32", i32(2**31 - 1)))
    top.append(_f("topics", "FetchTopic"))
    request = _module(FETCH, version, "request", [
        ("FetchPartition", [_f("partition", i32, "int32"), _f("fetch_offset", i64, "int64"),
                            _f("partition_max_bytes", i32, "int32")]),
        ("FetchTopic", [_f("topic", str, "string"), _f("partitions", "FetchPartition")]),
        ("FetchRequest", top),
    ])
    response_top = []
    if version >= 1:
        response_top.append(_f("throttle_time", i32Timedelta, "timedelta_i32"))
    response_top.append(_f("responses", "FetchableTopicResponse"))
    response = _module(FETCH, version, "response", [
        ("PartitionData", [_f("partition_index", i32, "int32"),
                           _f("error_code", ErrorCode, "error_code"),
                           _f("high_watermark", i64, "int64"),
                           _f("records", Records | None, "records")]),
        ("FetchableTopicResponse", [_f("topic", str, "string"),
                                    _f("partitions", "PartitionData")]),
        ("FetchResponse", response_top),
    ])
    return request, response


def _list_offsets_v0() -> tuple[type, type]:
    request = _module(LIST_OFFSETS, 0, "request", [
        ("ListOffsetsPartition", [_f("partition_index", i32, "int32"),
                                  _f("timestamp", i64, "int64"),
                                  _f("max_num_offsets", i32, "int32", i32(1))]),
        ("ListOffsetsTopic", [_f("name", str, "string"),
                              _f("partitions", "ListOffsetsPartition")]),
        ("ListOffsetsRequest", [_f("replica_id", i32, "int32"),
                                _f("topics", "ListOffsetsTopic")]),
    ])
    response = _module(LIST_OFFSETS, 0, "response", [
        ("ListOffsetsPartitionResponse", [_f("partition_index", i32, "int32"),
                                          _f("error_code", ErrorCode, "error_code"),
                                          _f("old_style_offsets", tuple[i64, ...], "int64")]),
        ("ListOffsetsTopicResponse", [_f("name", str, "string"),
                                      _f("partitions", "ListOffsetsPartitionResponse")]),
        ("ListOffsetsResponse", [_f("topics", "ListOffsetsTopicResponse")]),
    ])
    return request, response


SCHEMAS: dict[tuple[int, int], tuple[type, type]] = {
    **{(PRODUCE, v): _produce(v) for v in (0, 1, 2)},
    **{(FETCH, v): _fetch(v) for v in (0, 1, 2, 3)},
    (LIST_OFFSETS, 0): _list_offsets_v0(),
}


def request_type(api_key: int, api_version: int) -> type | None:
    schema = SCHEMAS.get((api_key, api_version))
    return schema[0] if schema else None


def response_type(api_key: int, api_version: int) -> type | None:
    schema = SCHEMAS.get((api_key, api_version))
    return schema[1] if schema else None
