"""Scripted raw-socket request sequences, each run on a fresh connection to a broker (real
Kafka or ``kafkatx serve``), recorded as what a client observes: the error codes of the answer
(if any) and whether the broker closed the connection.

The sequences are what a hostile or buggy client sends: malformed frames (a negative or huge
size), truncated bodies, unknown api keys, unsupported versions, and Produce requests whose
batches are bad in each way ``LogValidator`` checks (a wrong CRC; a right CRC over records
that do not decode in every codec; a batch larger than ``message.max.bytes``).
``test_serve_side_by_side.py`` runs them against both and compares.
"""

from __future__ import annotations

import datetime
import io
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kio.serial import entity_reader, entity_writer

from kafkatx.broker.wire import codec
from kafkatx.formats.compression import Codec
from kafkatx.formats.record_batch import HEADER_SIZE, Record, build_batch
from tests.broker.wire import entity, request
from tests.formats.batch_edits import with_records_section

TOPIC = "side-by-side"
PRODUCE_VERSION = 9  # flexible, with per-record errors; served by Kafka 3.0 to 4.4
CLIENT_ID = "kafkatx-side-by-side"
CLOSED = "closed"
#: Created before the scenarios: ``side_x`` and ``side.x`` collide (Topic#hasCollision).
COLLIDES_WITH = "side.x"
COLLIDING = "side_x"


@dataclass(frozen=True)
class Outcome:
    """What the client saw: the answer's error codes (top level, or per partition for Produce,
    with the per-record error indexes) or none, and whether the connection was closed."""

    errors: tuple[int, ...] | None
    closed: bool
    record_errors: tuple[int, ...] = field(default=())

    def __str__(self) -> str:
        answer = "no answer" if self.errors is None else f"errors {list(self.errors)}"
        if self.record_errors:
            answer += f" record errors at {list(self.record_errors)}"
        return f"{answer}, {'closed' if self.closed else 'open'}"


class RawConnection:
    def __init__(self, port: int, timeout_s: float = 10.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)

    def close(self) -> None:
        self.sock.close()

    def send_frame(self, payload: bytes, *, size: int | None = None) -> None:
        self.sock.sendall(struct.pack(">i", len(payload) if size is None else size) + payload)

    def receive_frame(self) -> bytes | None:
        """The next response frame, or None when the broker closed the connection."""
        head = self._exactly(4)
        if head is None:
            return None
        return self._exactly(struct.unpack(">i", head)[0])

    def is_closed(self) -> bool:
        """Probe: an ApiVersions v0 request; a closed connection does not answer it."""
        try:
            self.send_frame(encode(request(18, 0), correlation_id=999))
            return self.receive_frame() is None
        except OSError:
            return True

    def _exactly(self, n: int) -> bytes | None:
        out = bytearray()
        while len(out) < n:
            try:
                chunk = self.sock.recv(n - len(out))
            except (ConnectionResetError, TimeoutError):
                return None
            if not chunk:
                return None
            out += chunk
        return bytes(out)


def encode(body: Any, *, correlation_id: int = 1, api_version: int | None = None) -> bytes:
    cls = type(body)
    header = cls.__header_schema__(request_api_key=cls.__api_key__,
                                   request_api_version=(cls.__version__ if api_version is None
                                                        else api_version),
                                   correlation_id=correlation_id, client_id=CLIENT_ID)
    buf = io.BytesIO()
    entity_writer(type(header))(buf, header)
    entity_writer(cls)(buf, body)
    return buf.getvalue()


def _errors_of(response: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    if hasattr(response, "responses") and response.responses and hasattr(
            response.responses[0], "partition_responses"):
        codes, records = [], []
        for topic in response.responses:
            for part in topic.partition_responses:
                codes.append(int(part.error_code.value))
                records += [int(e.batch_index) for e in getattr(part, "record_errors", ())]
        return tuple(codes), tuple(records)
    if hasattr(response, "error_code"):
        return (int(response.error_code.value),), ()
    if hasattr(response, "topics"):
        return tuple(int(t.error_code.value) for t in response.topics), ()
    return (), ()


def exchange(port: int, payload: bytes, *, api_key: int, api_version: int,
             size: int | None = None, expect_answer: bool = True) -> Outcome:
    """Send one frame on a new connection; decode the answer as (api_key, api_version)'s
    response (ApiVersions errors are answered in v0)."""
    conn = RawConnection(port)
    try:
        conn.send_frame(payload, size=size)
        frame = conn.receive_frame() if expect_answer else None
        if frame is None:
            return Outcome(None, conn.is_closed())
        version = api_version if codec.request_type(api_key, api_version) else 0
        if api_key == 18 and struct.unpack_from(">h", frame, 4)[0] != 0:
            version = 0  # an ApiVersions error answer is in the v0 layout
        response_cls = codec.response_type(api_key, version)
        _, used = entity_reader(response_cls.__header_schema__)(frame, 0)
        body, _ = entity_reader(response_cls)(frame, used)
        errors, record_errors = _errors_of(body)
        return Outcome(errors, conn.is_closed(), record_errors)
    finally:
        conn.close()


# -- the batches ---------------------------------------------------------------------------------

RECORDS = [Record(offset=i, timestamp=1_700_000_000_000 + i, key=b"k%d" % i,
                  value=b"value-%d" % i) for i in range(3)]


def good_batch(codec_id: int = 0) -> bytes:
    return build_batch(RECORDS, base_offset=0, compression_id=codec_id)


def _with_section(section: bytes, *, count: int | None = None,
                  attributes: int | None = None) -> bytes:
    return with_records_section(good_batch(), section, count=count, attributes=attributes)


def bad_batches() -> dict[str, bytes]:
    """CRC-right batches whose records do not decode, and one with a wrong CRC."""
    section = good_batch()[HEADER_SIZE:]
    overrun = bytearray(section)
    overrun[0] = 0x7E
    wrong_crc = bytearray(good_batch())
    wrong_crc[-1] ^= 0xFF
    out = {
        "crc_mismatch": bytes(wrong_crc),
        "record_length_overruns_the_batch": _with_section(bytes(overrun)),
        "record_count_above_the_records": _with_section(section, count=4),
        "record_count_below_the_records": _with_section(section, count=2),
        "trailing_bytes_after_the_records": _with_section(section + b"\x00\x01\x02"),
    }
    for codec_id in (Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD):
        out[f"{codec_id.name.lower()}_flag_over_raw_bytes"] = _with_section(
            section, attributes=int(codec_id))
    return out


def produce(records: bytes, *, version: int = PRODUCE_VERSION, acks: int = -1) -> Any:
    part = entity(0, version, "PartitionProduceData", index=0, records=records)
    topic = entity(0, version, "TopicProduceData", name=TOPIC, partition_data=(part,))
    return request(0, version, acks=acks, timeout=datetime.timedelta(seconds=5),
                   topic_data=(topic,))


# -- the scenarios -------------------------------------------------------------------------------

Scenario = Callable[[int], Outcome]


def _produce_scenario(records: bytes) -> Scenario:
    return lambda port: exchange(port, encode(produce(records)), api_key=0,
                                 api_version=PRODUCE_VERSION)


def _api_versions_unsupported(port: int) -> Outcome:
    return exchange(port, encode(request(18, 3), api_version=99), api_key=18, api_version=99)


def _unknown_api_key(port: int) -> Outcome:
    payload = bytearray(encode(request(3, 1)))
    struct.pack_into(">h", payload, 0, 999)
    return exchange(port, bytes(payload), api_key=3, api_version=1)


def _unsupported_version_of_a_known_api(port: int) -> Outcome:
    payload = bytearray(encode(request(3, 1)))
    struct.pack_into(">h", payload, 2, 999)
    return exchange(port, bytes(payload), api_key=3, api_version=999)


def _truncated_body(port: int) -> Outcome:
    body = request(3, 9, topics=(entity(3, 9, "MetadataRequestTopic", name=TOPIC),),
                   allow_auto_topic_creation=False)
    payload = encode(body)
    return exchange(port, payload[:-4], api_key=3, api_version=9)


def _truncated_produce(port: int) -> Outcome:
    payload = encode(produce(good_batch()))
    return exchange(port, payload[:-30], api_key=0, api_version=PRODUCE_VERSION)


def _header_only(port: int) -> Outcome:
    return exchange(port, struct.pack(">hhi", 3, 9, 5), api_key=3, api_version=9)


def _shorter_than_a_header(port: int) -> Outcome:
    return exchange(port, b"\x00\x03", api_key=3, api_version=9)


def _negative_frame_size(port: int) -> Outcome:
    return exchange(port, b"", api_key=3, api_version=9, size=-5)


def _frame_above_socket_request_max_bytes(port: int) -> Outcome:
    # only the size is sent: a broker must refuse before buffering 200 MB
    return exchange(port, b"", api_key=3, api_version=9, size=200 * 1024 * 1024)


def _huge_array_length(port: int) -> Outcome:
    """A Metadata v9 whose topics array declares 2^31-2 entries in a 20-byte body."""
    payload = bytearray(encode(request(3, 9, topics=(), allow_auto_topic_creation=False)))
    header_len = len(payload) - 5  # the body: topics, 3 booleans, tagged fields (1 byte each)
    payload[header_len:header_len + 1] = b"\xff\xff\xff\xff\x07"
    return exchange(port, bytes(payload), api_key=3, api_version=9)


def _batch_above_message_max_bytes(port: int) -> Outcome:
    big = [Record(offset=0, timestamp=1_700_000_000_000, key=None, value=b"x" * 1_100_000)]
    return _produce_scenario(build_batch(big, base_offset=0))(port)


def _legacy_message_set(port: int) -> Outcome:
    from kafkatx.formats.legacy_message import build_legacy_entry

    return _produce_scenario(build_legacy_entry(offset=0, magic=1, value=b"v",
                                                timestamp=1_700_000_000_000))(port)


def _compressed_with_section(codec_id: int, section: bytes, count: int | None = None) -> bytes:
    from kafkatx.formats.compression import compress

    return _with_section(compress(codec_id, section), count=count, attributes=codec_id)


def _acks0_bad_batch(port: int) -> Outcome:
    bad = bytearray(good_batch())
    bad[-1] ^= 0xFF
    return exchange(port, encode(produce(bytes(bad), acks=0)), api_key=0,
                    api_version=PRODUCE_VERSION, expect_answer=False)


def _create_topics(name: str, partitions: int) -> Scenario:
    def run(port: int) -> Outcome:
        topic = entity(19, 5, "CreatableTopic", name=name, num_partitions=partitions,
                       replication_factor=1, assignments=(), configs=())
        body = request(19, 5, topics=(topic,), timeout_ms=datetime.timedelta(seconds=30))
        return exchange(port, encode(body), api_key=19, api_version=5)
    return run


def _metadata_auto_create(name: str) -> Scenario:
    """Metadata asking for ``name`` with auto-creation, asked again while the answer is
    UNKNOWN_TOPIC_OR_PARTITION or LEADER_NOT_AVAILABLE (Kafka's controller creates the topic
    after the first answer), for at most 3 s: the last answer."""
    def run(port: int) -> Outcome:
        body = request(3, 9, topics=(entity(3, 9, "MetadataRequestTopic", name=name),),
                       allow_auto_topic_creation=True)
        deadline = time.monotonic() + 3
        while True:
            outcome = exchange(port, encode(body), api_key=3, api_version=9)
            if outcome.errors not in ((3,), (5,)) or time.monotonic() > deadline:
                return outcome
            time.sleep(0.2)
    return run


def scenarios() -> dict[str, Scenario]:
    out: dict[str, Scenario] = {
        "produce_good_batch": _produce_scenario(good_batch()),
        "api_versions_unsupported_version": _api_versions_unsupported,
        "unknown_api_key": _unknown_api_key,
        "unsupported_version_of_a_known_api": _unsupported_version_of_a_known_api,
        "truncated_metadata_body": _truncated_body,
        "truncated_produce_body": _truncated_produce,
        "header_without_body": _header_only,
        "frame_shorter_than_a_header": _shorter_than_a_header,
        "negative_frame_size": _negative_frame_size,
        "frame_above_socket_request_max_bytes": _frame_above_socket_request_max_bytes,
        "array_length_beyond_the_frame": _huge_array_length,
        "produce_batch_above_message_max_bytes": _batch_above_message_max_bytes,
        "produce_legacy_magic_1_message_set": _legacy_message_set,
    }
    for name, batch in bad_batches().items():
        out[f"produce_{name}"] = _produce_scenario(batch)
    section = good_batch()[HEADER_SIZE:]
    for codec_id in (Codec.GZIP, Codec.ZSTD):
        name = codec_id.name.lower()
        out[f"produce_{name}_records_count_above_the_records"] = _produce_scenario(
            _compressed_with_section(int(codec_id), section, count=4))
        out[f"produce_{name}_trailing_bytes_after_the_records"] = _produce_scenario(
            _compressed_with_section(int(codec_id), section + b"\x00\x01\x02"))
    out["produce_acks_0_crc_mismatch"] = _acks0_bad_batch
    out["create_topic_colliding_with_an_existing_one"] = _create_topics(COLLIDING, 1)
    out["metadata_auto_creates_a_colliding_topic"] = _metadata_auto_create(COLLIDING)
    out["metadata_auto_creates_a_new_topic"] = _metadata_auto_create("side-new")
    out["create_topic_with_20000_partitions"] = _create_topics("side-huge", 20000)
    for codec_id in (Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD):
        out[f"produce_good_{codec_id.name.lower()}_batch"] = _produce_scenario(
            good_batch(int(codec_id)))
    return out


def create_topic(port: int) -> None:
    """The topic the Produce scenarios write to and the one the collision scenarios collide
    with (1 partition, 1 replica each)."""
    for name in (TOPIC, COLLIDES_WITH):
        outcome = _create_topics(name, 1)(port)
        assert outcome.errors in ((0,), (36,)), outcome  # created, or TOPIC_ALREADY_EXISTS


def run_all(port: int) -> dict[str, Outcome]:
    create_topic(port)
    return {name: scenario(port) for name, scenario in scenarios().items()}
