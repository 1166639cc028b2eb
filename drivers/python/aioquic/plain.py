"""aioquic in a plain loop, its HTTP/3 client as aioquic's examples/http3_client.py writes one: a
QuicConnectionProtocol whose H3Connection turns QUIC events into HTTP events, a GET on a stream
of its own, awaited until the stream ends; one QUIC connection, each GET after the last. The
library's plain loop of docs/driver-protocol.md §9 (aioquic speaks HTTP/3 alone, so URL is
https on the bench server's UDP port and CA the lab's CA file):
    plain.py URL COUNT MODE WARMUP_S CA
"""

import asyncio
import json
import sys
import time
from urllib.parse import urlsplit

import aioquic
from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration

if len(sys.argv) != 6:
    sys.exit("usage: plain.py URL COUNT MODE WARMUP_S CA (aioquic speaks HTTP/3 only: an https URL and the CA)")
url, count, mode, warmup_s, ca = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), sys.argv[5]
if mode == "close":
    sys.exit("plain.py: aioquic has no connection pool to turn off: MODE close cannot run")
if mode != "keep-alive":
    sys.exit(f"plain.py: MODE must be keep-alive or close, not {mode!r}")
parts = urlsplit(url)
path = parts.path + ("?" + parts.query if parts.query else "")


class HttpClient(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._http = H3Connection(self._quic)
        self._events: dict[int, list] = {}
        self._waiters: dict[int, asyncio.Future] = {}

    def quic_event_received(self, event) -> None:
        for http_event in self._http.handle_event(event):
            if isinstance(http_event, (HeadersReceived, DataReceived)) and http_event.stream_id in self._events:
                self._events[http_event.stream_id].append(http_event)
                if http_event.stream_ended:
                    del self._events[http_event.stream_id]
                    self._waiters.pop(http_event.stream_id).set_result(None)

    async def get(self) -> tuple[int, bytes]:
        stream_id = self._quic.get_next_available_stream_id()
        self._http.send_headers(stream_id=stream_id, headers=[
            (b":method", b"GET"), (b":scheme", b"https"), (b":authority", parts.netloc.encode()),
            (b":path", path.encode()), (b"user-agent", f"aioquic/{aioquic.__version__}".encode()),
        ], end_stream=True)
        events: list = []
        self._events[stream_id] = events
        waiter = self._waiters[stream_id] = self._loop.create_future()
        self.transmit()
        await asyncio.shield(waiter)
        status = next(int(v) for e in events if isinstance(e, HeadersReceived) for k, v in e.headers if k == b":status")
        return status, b"".join(e.data for e in events if isinstance(e, DataReceived))


async def main() -> None:
    configuration = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN)
    configuration.load_verify_locations(ca)
    async with connect(parts.hostname, parts.port or 443, configuration=configuration,
                       create_protocol=HttpClient) as client:

        async def get() -> int:
            try:
                status, body = await client.get()
            except (ConnectionError, StopIteration) as exc:
                sys.exit(f"plain.py: GET {url} failed: {exc!r}")
            if status != 200:
                sys.exit(f"plain.py: GET {url} answered {status}")
            return len(body)

        end = time.monotonic() + warmup_s
        while time.monotonic() < end:
            await get()
        total = 0
        t0 = time.perf_counter()
        for _ in range(count):
            total += await get()
        seconds = time.perf_counter() - t0
    print(json.dumps({"requests": count, "bytes": total, "seconds": seconds}))


asyncio.run(main())
