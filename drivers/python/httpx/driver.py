"""clientlab driver: httpx, one sync Client for the job."""

from __future__ import annotations

import http.cookiejar
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))

import h2  # noqa: E402
import h11  # noqa: E402
import httpcore  # noqa: E402
import httpx  # noqa: E402
import labdriver  # noqa: E402


class HttpxDriver(labdriver.Driver):
    """One httpx.Client per job; HTTP/2 forced with http1=False (ALPN h2 only, or h2c prior knowledge)."""

    # httpcore always sets TCP_NODELAY and httpx never sends Expect: 100-continue:
    # those values are honoured as they are, the others cannot be
    # accept_encoding "library": httpx's own Accept-Encoding (gzip, deflate, and br or zstd where
    # their packages are installed), decoded by httpx
    options = {"tcp_nodelay": (True,), "expect_100": (False,), "accept_encoding": labdriver.LIBRARY_ENCODING}

    def versions(self) -> dict[str, str]:
        return {**labdriver.base_versions(), "httpx": httpx.__version__, "httpcore": httpcore.__version__,
                "h11": h11.__version__, "h2": h2.__version__}

    def refuse(self, job: labdriver.Job) -> str | None:
        if not job.keep_alive and job.http != "1.1":
            return "httpx cannot close HTTP/2 connections per request (Connection: close is HTTP/1.1)"
        return None

    def open(self, job: labdriver.Job) -> None:
        self.job = job
        h2only = job.http in ("2", "h2c")
        transport = httpx.HTTPTransport(
            verify=labdriver.ssl_context(job) if job.tls_ca else True,
            http1=not h2only, http2=h2only,  # without http1 there is no fallback to HTTP/1.1
        )
        headers = job.client_headers  # httpx asks for gzip/deflate/br by default: what the job wants
        jar = None if job.cookies else http.cookiejar.CookieJar(labdriver.refuse_cookies())
        # trust_env as shipped: the lab keeps proxies and SSL_CERT_FILE out of the environment
        self.client = httpx.Client(transport=transport, headers=headers, cookies=jar,
                                   **labdriver.timeout_kwargs(job.timeout_s))

    def request(self, req: labdriver.Request) -> labdriver.Response:
        if req.plain_get:  # as httpx's docs get a URL, with no arguments to merge
            resp = self.client.get(req.url)
            return labdriver.Response.of(resp.status_code, resp.http_version, resp.content, self.job.verify)
        kwargs: dict = {"headers": req.upload_headers(), **req.redirect_kwargs("follow_redirects")}
        kwargs.update(req.form_kwargs())
        with req.open_body() as body:
            if body:
                kwargs["content"] = body  # streamed from the file
            return self._send(req, **kwargs)

    def _send(self, req: labdriver.Request, **kwargs) -> labdriver.Response:
        if req.to_file:
            with self.client.stream(req.method, req.url, **kwargs) as resp, \
                    labdriver.FileSink(req.sink_path, self.job.verify) as sink:
                # iter_bytes() as httpx's docs stream a download: the pieces as they arrive, not
                # re-cut to a size of the driver's
                return sink.drain(resp.iter_bytes(), resp.status_code, resp.http_version)
        resp = self.client.request(req.method, req.url, **kwargs)
        return labdriver.Response.of(resp.status_code, resp.http_version, resp.content, self.job.verify)

    def close(self) -> None:
        self.client.close()


if __name__ == "__main__":
    labdriver.main(HttpxDriver())
