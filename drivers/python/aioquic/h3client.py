"""An HTTP/3 client on aioquic, written as aioquic's own examples/http3_client.py writes one: a
QuicConnectionProtocol subclass whose H3Connection turns QUIC events into HTTP events, each
request on a stream of its own, awaited through a future. Many requests in flight share the one
QUIC connection as streams.
"""

from __future__ import annotations

import asyncio
from typing import IO, Protocol

import aioquic
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3Connection
from aioquic.h3.events import DataReceived, H3Event, HeadersReceived
from aioquic.quic.events import ConnectionTerminated, QuicEvent, StreamReset

USER_AGENT = f"aioquic/{aioquic.__version__}"  # what aioquic's example client sends
CHUNK = 64 * 1024  # read size for a streamed request body


class BodySink(Protocol):
    """Where a response body goes as it arrives (a file sink, or a list of chunks)."""

    def write(self, chunk: bytes) -> int: ...


class ChunkList:
    """A body kept in memory: the chunks as they arrived, joined once at the end."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []

    def write(self, chunk: bytes) -> int:
        self.chunks.append(chunk)
        return len(chunk)

    def body(self) -> bytes:
        return b"".join(self.chunks)


class _Exchange:
    """One request's stream: the status from its headers, its body into `sink`, `done` when the
    server ends the stream."""

    def __init__(self, sink: BodySink, done: asyncio.Future[int]):
        self.sink, self.done = sink, done
        self.status: int | None = None

    def on_event(self, event: H3Event) -> bool:
        """Take one HTTP event; True when the stream has ended."""
        if isinstance(event, HeadersReceived):
            for name, value in event.headers:
                if name == b":status" and self.status is None:  # a later block is trailers
                    self.status = int(value)
        elif isinstance(event, DataReceived) and event.data:
            self.sink.write(event.data)
        if not event.stream_ended:
            return False
        if self.status is None:
            self.done.set_exception(ConnectionError("the stream ended without a response status"))
        else:
            self.done.set_result(self.status)
        return True

    def fail(self, reason: str) -> None:
        if not self.done.done():
            self.done.set_exception(ConnectionError(reason))


class H3Client(QuicConnectionProtocol):
    """One QUIC connection speaking HTTP/3 (ALPN h3 only: the configuration offers nothing else)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._http = H3Connection(self._quic)
        self._exchanges: dict[int, _Exchange] = {}
        self.terminated = False  # the connection is gone: later requests need a new one

    def quic_event_received(self, event: QuicEvent) -> None:
        if isinstance(event, ConnectionTerminated):
            self.terminated = True
            for exchange in self._exchanges.values():
                exchange.fail(f"QUIC connection closed: {event.reason_phrase or event.error_code}")
            self._exchanges.clear()
            return
        if isinstance(event, StreamReset) and event.stream_id in self._exchanges:
            self._exchanges.pop(event.stream_id).fail(f"stream reset by the server (error {event.error_code})")
            return
        for http_event in self._http.handle_event(event):
            stream_id = getattr(http_event, "stream_id", None)
            exchange = self._exchanges.get(stream_id)  # type: ignore[arg-type]
            if exchange is not None and exchange.on_event(http_event):
                del self._exchanges[stream_id]  # type: ignore[arg-type]

    async def request(self, method: str, url_parts: tuple[str, str, str], headers: dict[str, str],
                      body: bytes | IO[bytes] | None, sink: BodySink) -> int:
        """Send one request, its body (bytes, or a file read in chunks) ending the stream; the
        response body goes to `sink` as it arrives. Returns the status."""
        scheme, authority, path = url_parts
        stream_id = self._quic.get_next_available_stream_id()
        fields = [(b":method", method.encode()), (b":scheme", scheme.encode()),
                  (b":authority", authority.encode()), (b":path", path.encode()),
                  (b"user-agent", USER_AGENT.encode())]
        # HTTP/3 field names are lower case
        fields += [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        self._http.send_headers(stream_id=stream_id, headers=fields, end_stream=body is None)
        if isinstance(body, bytes):
            self._http.send_data(stream_id=stream_id, data=body, end_stream=True)
        elif body is not None:
            # aioquic keeps what is sent in the stream's buffer until flow control lets it go
            while chunk := body.read(CHUNK):
                self._http.send_data(stream_id=stream_id, data=chunk, end_stream=False)
            self._http.send_data(stream_id=stream_id, data=b"", end_stream=True)
        done: asyncio.Future[int] = self._loop.create_future()
        self._exchanges[stream_id] = _Exchange(sink, done)
        self.transmit()
        try:
            return await asyncio.shield(done)
        finally:
            self._exchanges.pop(stream_id, None)  # a timed-out request leaves nothing behind
