"""A broker's own connection to another broker: size-prefixed kio requests over asyncio, one at
a time (what Kafka's ``NetworkClient`` under ``BlockingSend`` gives a replica fetcher)."""

from __future__ import annotations

import asyncio
import contextlib
import io
import struct
from typing import Any

from kafkatx.broker.wire import codec

_SIZE = struct.Struct(">i")


class BrokerConnection:
    def __init__(self, host: str, port: int, client_id: str) -> None:
        self.host, self.port, self.client_id = host, port, client_id
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._correlation_id = 0

    @property
    def connected(self) -> bool:
        return self._writer is not None and not self._writer.is_closing()

    async def connect(self, timeout_s: float = 5.0) -> None:
        self._reader, self._writer = await asyncio.wait_for(
            asyncio.open_connection(self.host, self.port), timeout_s)

    async def request(self, request: Any, timeout_s: float) -> Any:
        """Send ``request`` (a kio request entity), return the parsed response body."""
        if not self.connected:
            await self.connect()
        assert self._reader is not None and self._writer is not None
        self._correlation_id += 1
        cls = type(request)
        header = cls.__header_schema__(request_api_key=cls.__api_key__,
                                       request_api_version=cls.__version__,
                                       correlation_id=self._correlation_id,
                                       client_id=self.client_id)
        buf = io.BytesIO()
        codec._writer(type(header))(buf, header)
        codec._writer(cls)(buf, request)
        payload = buf.getvalue()
        self._writer.write(_SIZE.pack(len(payload)) + payload)
        await self._writer.drain()
        size = _SIZE.unpack(await asyncio.wait_for(self._reader.readexactly(4), timeout_s))[0]
        body = await asyncio.wait_for(self._reader.readexactly(size), timeout_s)
        response_cls = codec.response_type(cls.__api_key__, cls.__version__)
        _, used = codec._reader(response_cls.__header_schema__)(body, 0)
        response, _ = codec._reader(response_cls)(body, used)
        return response

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(Exception):
                await self._writer.wait_closed()
        self._reader = self._writer = None
