"""A minimal blocking Kafka-protocol client built on kio, for wire-level broker tests."""

from __future__ import annotations

import io
import socket
import struct
from typing import Any

from kio.serial import entity_reader, entity_writer

from kafkatx.broker.wire import codec


class WireClient:
    def __init__(self, port: int, *, timeout_s: float = 10.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, request: Any) -> int:
        self.correlation_id += 1
        cls = type(request)
        header = cls.__header_schema__(request_api_key=cls.__api_key__,
                                       request_api_version=cls.__version__,
                                       correlation_id=self.correlation_id,
                                       client_id="kafkatx-tests")
        buf = io.BytesIO()
        entity_writer(type(header))(buf, header)
        entity_writer(cls)(buf, request)
        self.send_raw(buf.getvalue())
        return self.correlation_id

    def send_raw(self, payload: bytes) -> None:
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)

    def receive_raw(self) -> bytes:
        size = struct.unpack(">i", self._exactly(4))[0]
        return self._exactly(size)

    def receive(self, response_cls: type, correlation_id: int) -> Any:
        payload = self.receive_raw()
        header, used = entity_reader(response_cls.__header_schema__)(payload, 0)
        assert header.correlation_id == correlation_id
        body, size = entity_reader(response_cls)(payload, used)
        assert used + size == len(payload)
        return body

    def call(self, request: Any) -> Any:
        corr = self.send(request)
        cls = type(request)
        return self.receive(codec.response_type(cls.__api_key__, cls.__version__), corr)

    def _exactly(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("connection closed by the broker")
            out += chunk
        return bytes(out)


def request(api_key: int, version: int, **values: Any) -> Any:
    """A request of ``api_key``/``version`` from ``values`` (missing fields zero-filled)."""
    cls = codec.request_type(api_key, version)
    assert cls is not None
    return codec.make(cls, **values)


def entity(api_key: int, version: int, class_name: str, /, **values: Any) -> Any:
    """A nested request entity of class ``class_name`` of ``api_key``/``version``."""
    import sys

    cls = codec.request_type(api_key, version)
    assert cls is not None
    return codec.make(getattr(sys.modules[cls.__module__], class_name), **values)
