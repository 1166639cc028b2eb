"""The httpx.AsyncClient driver, shared by python-httpx-async and python-httpx-http2.

Both folders run this same class; they differ in their venv (python-httpx-http2 adds the h2
package, `httpx[http2]`) and so in what their manifests claim. HTTP/2 is forced when the job
asks for it (http1=False: ALPN h2 only over TLS, prior knowledge over cleartext, no fallback).
"""

from __future__ import annotations

import http.cookiejar
from typing import AsyncIterator, BinaryIO

import h11
import httpcore
import httpx
import labdriver

try:  # only in python-httpx-http2's venv
    import h2
except ImportError:
    h2 = None


async def _chunks(body: BinaryIO) -> AsyncIterator[bytes]:
    """A file as an async byte stream: AsyncClient refuses sync file objects as content."""
    while chunk := body.read(labdriver.CHUNK):
        yield chunk


class HttpxAsyncDriver(labdriver.AsyncDriver):
    """One httpx.AsyncClient per job, up to `concurrency` requests in flight on asyncio."""

    # httpcore always sets TCP_NODELAY and httpx never sends Expect: 100-continue:
    # those values are honoured as they are, the others cannot be. No max_host_connections:
    # httpx's pool limit counts every host together.
    # accept_encoding "library": httpx's own Accept-Encoding (client_headers then sets none)
    options = {"tcp_nodelay": (True,), "expect_100": (False,), "accept_encoding": labdriver.LIBRARY_ENCODING}

    def versions(self) -> dict[str, str]:
        versions = {**labdriver.base_versions(), "httpx": httpx.__version__, "httpcore": httpcore.__version__,
                    "h11": h11.__version__}
        if h2 is not None:
            versions["h2"] = h2.__version__
        return versions

    def refuse(self, job: labdriver.Job) -> str | None:
        if job.http != "1.1" and h2 is None:
            return "HTTP/2 needs the h2 package (httpx[http2]), which this venv does not have"
        return job.close_refusal("httpx")

    async def open(self, job: labdriver.Job) -> None:
        self.job = job
        self.h2only = job.http in ("2", "h2c")
        n = max(1, job.concurrency)
        transport = httpx.AsyncHTTPTransport(
            verify=labdriver.ssl_context(job) if job.tls_ca else True,
            http1=not self.h2only, http2=self.h2only,  # without http1 there is no fallback to HTTP/1.1
            # one connection per request in flight, all kept alive (httpx keeps 20 by default)
            limits=httpx.Limits(max_connections=n, max_keepalive_connections=n),
        )
        jar = None if job.cookies else http.cookiejar.CookieJar(labdriver.refuse_cookies())
        # client_headers: httpx would ask for gzip/deflate/br. trust_env as shipped: the lab keeps
        # proxies and SSL_CERT_FILE out of the environment
        self.client = httpx.AsyncClient(transport=transport, headers=job.client_headers, cookies=jar,
                                        **labdriver.timeout_kwargs(job.timeout_s))

    async def request(self, req: labdriver.Request) -> labdriver.Response:
        if req.plain_get:  # as httpx's docs get a URL, with no arguments to merge
            resp = await self.client.get(req.url)
            self._check_version(resp)
            return labdriver.Response.of(resp.status_code, resp.http_version, resp.content, self.job.verify)
        kwargs: dict = {"headers": req.upload_headers(), **req.redirect_kwargs("follow_redirects")}
        kwargs.update(req.form_kwargs())
        with req.open_body() as body:
            if body:
                kwargs["headers"]["Content-Length"] = str(req.body_size)  # else httpx sends it chunked
                kwargs["content"] = _chunks(body)  # streamed from the file
            return await self._send(req, **kwargs)

    async def _send(self, req: labdriver.Request, **kwargs) -> labdriver.Response:
        if req.to_file:
            async with self.client.stream(req.method, req.url, **kwargs) as resp:
                self._check_version(resp)
                with labdriver.FileSink(req.sink_path, self.job.verify) as sink:
                    async for chunk in resp.aiter_bytes():  # as they arrive, not re-cut (httpx's docs)
                        sink.write(chunk)
                    return sink.response(resp.status_code, resp.http_version)
        resp = await self.client.request(req.method, req.url, **kwargs)
        self._check_version(resp)
        return labdriver.Response.of(resp.status_code, resp.http_version, resp.content, self.job.verify)

    def _check_version(self, resp: httpx.Response) -> None:
        """An HTTP/2 job's response must have come over HTTP/2: never report other work as h2."""
        if self.h2only and resp.http_version != "HTTP/2":
            raise RuntimeError(f"asked for HTTP/2, got {resp.http_version}")

    async def close(self) -> None:
        await self.client.aclose()
