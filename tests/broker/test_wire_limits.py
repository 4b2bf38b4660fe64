"""Connections and request memory held to Kafka's limits (issue 25 item 3):
``connections.max.idle.ms`` closes a silent connection and one stalled inside a request, and
``queued.max.request.bytes`` bounds the request bytes read at once over all connections (the
connection of a request that does not fit is not read until enough is released, as Kafka's
``SimpleMemoryPool`` mutes it), while other requests that fit go on."""

from __future__ import annotations

import struct
import time
from collections.abc import Callable

from tests.broker.serve_process import ServeProcess
from tests.broker.wire import request
from tests.realkafka.wire_scenarios import RawConnection, encode, good_batch, produce

Serve = Callable[..., ServeProcess]


def _closed_within(conn: RawConnection, seconds: float) -> float | None:
    """Seconds until the broker closed ``conn`` (None: still open after ``seconds``)."""
    conn.sock.settimeout(seconds)
    start = time.monotonic()
    try:
        data = conn.sock.recv(1)
    except TimeoutError:
        return None
    except ConnectionResetError:
        return time.monotonic() - start
    assert data == b"", data
    return time.monotonic() - start


def test_idle_and_stalled_connections_are_closed(serve: Serve) -> None:
    proc = serve("--connections-max-idle-ms", "700")
    silent = RawConnection(proc.port)
    stalled = RawConnection(proc.port)
    stalled.sock.sendall(struct.pack(">i", 100) + b"\x00\x12\x00\x00")  # 4 of 100 bytes
    busy = RawConnection(proc.port)
    for _ in range(6):  # a request every 0.3 s keeps a connection open
        busy.send_frame(encode(request(18, 0)))
        assert busy.receive_frame() is not None
        time.sleep(0.3)
    assert _closed_within(silent, 3.0) is not None
    assert _closed_within(stalled, 3.0) is not None
    busy.send_frame(encode(request(18, 0)))
    assert busy.receive_frame() is not None
    for conn in (silent, stalled, busy):
        conn.close()
    log = proc.stderr()
    assert "closed: idle for 700 ms" in log and "closed: no byte of the request" in log
    assert proc.stop() == 0


def test_request_memory_is_bounded_over_all_connections(serve: Serve) -> None:
    proc = serve("--queued-max-request-bytes", "600000")
    big = encode(produce(good_batch(), acks=1))
    holder = RawConnection(proc.port)
    # 500,000 bytes declared, a few sent: the pool holds them until the request is complete
    holder.sock.sendall(struct.pack(">i", 500_000) + big[:10])
    time.sleep(0.3)
    small = RawConnection(proc.port)
    small.send_frame(encode(request(18, 0)))  # fits beside it: answered
    assert small.receive_frame() is not None
    waiting = RawConnection(proc.port)
    waiting.send_frame(b"\xff" * 200_000, size=200_000)  # does not fit: not read meanwhile
    waiting.sock.settimeout(1.0)
    try:
        early = waiting.sock.recv(1)
    except TimeoutError:
        early = None
    assert early is None, "a request beyond queued.max.request.bytes was read at once"
    holder.close()  # the held bytes are released: the waiting request is read (and refused)
    assert _closed_within(waiting, 5.0) is not None  # api key -1: closed once read
    small.close()
    waiting.close()
    assert proc.stop() == 0
