"""clientlab driver: aioquic's HTTP/3 client (asyncio connect() + H3Connection), one QUIC connection
for the job, its requests as streams on it (up to `concurrency` at once)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from urllib.parse import urlencode, urlsplit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))

import aioquic  # noqa: E402
import cryptography  # noqa: E402
import labdriver  # noqa: E402
import pylsqpack  # noqa: E402
from aioquic.asyncio.client import connect  # noqa: E402
from aioquic.h3.connection import H3_ALPN  # noqa: E402
from aioquic.quic.configuration import QuicConfiguration  # noqa: E402
from h3client import ChunkList, H3Client  # noqa: E402

# why each option cannot be honoured over aioquic's QUIC connection (expect_100=false is what it
# always does: it never sends Expect: 100-continue)
OPTION_REFUSALS = {
    "tcp_nodelay": "tcp_nodelay: HTTP/3 runs over UDP",
    "max_host_connections": "max_host_connections: this client keeps one QUIC connection a host (requests are streams on it)",
    "expect_100": "expect_100: aioquic's H3Connection sends the body without waiting for 100 Continue",
}


class AioquicDriver(labdriver.AsyncDriver):
    """One QUIC connection a host for the job, opened by the first request (after go) and kept
    for the job's later ones; parallel requests are concurrent streams on it."""

    # listed so that refuse() can say why a value cannot be honoured (OPTION_REFUSALS)
    options = {"tcp_nodelay": None, "max_host_connections": None, "expect_100": None}

    def versions(self) -> dict[str, str]:
        return {**labdriver.base_versions(), "aioquic": aioquic.__version__,
                "pylsqpack": getattr(pylsqpack, "__version__", "?"), "cryptography": cryptography.__version__}

    def refuse(self, job: labdriver.Job) -> str | None:
        if job.http != "3":
            return "aioquic is an HTTP/3 (QUIC) library"
        for name in sorted(OPTION_REFUSALS):
            value = job.option(name)
            if value is not None and not (name == "expect_100" and value is False):
                return OPTION_REFUSALS[name]
        if not job.keep_alive:
            return "aioquic has no connection pool to turn off: this client keeps its QUIC connection (keep_alive false)"
        if any(req.follow_redirects for req in job.requests):
            return "aioquic does not follow redirects (it is a protocol library, with no redirect layer)"
        if any(req.multipart for req in job.requests):
            return "aioquic has no multipart/form-data encoder"
        if any(not req.url.startswith("https://") for req in job.requests):
            return "HTTP/3 needs https URLs"
        return None

    async def open(self, job: labdriver.Job) -> None:
        self.job = job
        # ALPN h3 only, the job's CA (aioquic verifies the server's certificate by default)
        self.configuration = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN)
        if job.tls_ca:
            self.configuration.load_verify_locations(job.tls_ca)
        self.connections: dict[tuple[str, int], H3Client] = {}
        self.exits = contextlib.AsyncExitStack()
        self.connecting = asyncio.Lock()  # the first requests in flight wait for one handshake

    async def _client(self, host: str, port: int) -> H3Client:
        """The host's QUIC connection, opened by the first request that needs it (a new one if the
        last was closed, e.g. by the idle timeout)."""
        async with self.connecting:
            client = self.connections.get((host, port))
            if client is None or client.terminated:
                client = await self.exits.enter_async_context(
                    connect(host, port, configuration=self.configuration, create_protocol=H3Client))
                self.connections[(host, port)] = client
            return client

    async def request(self, req: labdriver.Request) -> labdriver.Response:
        url = urlsplit(req.url)
        path = url.path or "/"
        if url.query:
            path += "?" + url.query
        async with asyncio.timeout(self.job.timeout_s):
            client = await self._client(url.hostname or "", url.port or 443)
            with req.open_body() as file_body:
                headers, body = self._body(req, file_body)
                if req.to_file:
                    with labdriver.FileSink(req.sink_path, self.job.verify) as sink:
                        status = await client.request(req.method, (url.scheme, url.netloc, path), headers, body, sink)
                        return sink.response(status, "3")
                chunks = ChunkList()
                status = await client.request(req.method, (url.scheme, url.netloc, path), headers, body, chunks)
                return labdriver.Response.of(status, "3", chunks.body(), self.job.verify)

    @staticmethod
    def _body(req: labdriver.Request, file_body):
        """The request's headers and body: the form urlencoded (as aioquic's example posts data),
        or the opened body_file, streamed; Content-Length from its size."""
        headers = req.upload_headers()
        if req.form is not None:
            body = urlencode(req.form).encode()
            headers.setdefault("Content-Type", "application/x-www-form-urlencoded")
            headers["Content-Length"] = str(len(body))
            return headers, body
        if file_body is not None:
            headers["Content-Length"] = str(req.body_size)
        return headers, file_body

    async def close(self) -> None:
        await self.exits.aclose()  # closes every QUIC connection and waits for it to end
        self.connections = {}


if __name__ == "__main__":
    labdriver.main(AioquicDriver())
