"""clientlab driver: curl_cffi, one Session (sequential jobs) or AsyncSession (parallel jobs) for the job, no impersonation."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))

import curl_cffi  # noqa: E402
import labdriver  # noqa: E402
from curl_cffi import CurlHttpVersion, CurlMime, CurlOpt  # noqa: E402
from curl_cffi import requests as cffi_requests  # noqa: E402

# job.http -> libcurl's HTTP version. 2_PRIOR_KNOWLEDGE: h2c without Upgrade, and ALPN h2 only
# over TLS (no fallback). Left unset, this libcurl would negotiate h2 on every https URL.
# V3ONLY: QUIC straight to the URL's port (ngtcp2 + nghttp3 in the bundled libcurl), no fallback.
HTTP_VERSIONS = {"1.1": CurlHttpVersion.V1_1, "2": CurlHttpVersion.V2_PRIOR_KNOWLEDGE,
                 "h2c": CurlHttpVersion.V2_PRIOR_KNOWLEDGE, "3": CurlHttpVersion.V3ONLY}
# AsyncSession's own number of easy handles, so of requests in flight (its max_clients default)
ASYNC_MAX_CLIENTS = 10
# CURLINFO_HTTP_VERSION values -> the report's labels
HTTP_LABELS = {CurlHttpVersion.V1_0: "1.0", CurlHttpVersion.V1_1: "1.1", CurlHttpVersion.V2_0: "2",
               CurlHttpVersion.V3: "3"}


def _curl_versions() -> dict[str, str]:
    """The bundled libcurl-impersonate and its libraries, from curl_version() at run time:
    "libcurl/8.x-IMPERSONATE BoringSSL zlib/1.3.1 ... nghttp2/1.63.0 ..."."""
    parts = curl_cffi.Curl().version().decode().split()
    libs = dict(part.split("/", 1) for part in parts if "/" in part)
    return {"libcurl": libs.get("libcurl", "?"), "libcurl-ssl": parts[1] if len(parts) > 1 else "?",
            "nghttp2": libs.get("nghttp2", "none"), "ngtcp2": libs.get("ngtcp2", "none"),
            "nghttp3": libs.get("nghttp3", "none")}


class CurlCffiDriver(labdriver.HybridDriver):
    """One curl_cffi Session per sequential job (its curl easy handle keeps the connection between
    requests); one AsyncSession per parallel job, up to `concurrency` requests awaited at once
    (curl_cffi's way to run requests concurrently: easy handles on one curl multi handle)."""

    # curl_cffi always removes Expect: 100-continue, so expect_100=false is what it always does
    # accept_encoding "library": curl_cffi's own accept_encoding (the request's keyword left out)
    options = {"tcp_nodelay": None, "expect_100": (False,), "accept_encoding": labdriver.LIBRARY_ENCODING}

    def versions(self) -> dict[str, str]:
        return {**labdriver.base_versions(), "curl_cffi": curl_cffi.__version__, **_curl_versions()}

    def refuse(self, job: labdriver.Job) -> str | None:
        if job.http == "3" and job.option("tcp_nodelay") is not None:
            return "tcp_nodelay: HTTP/3 runs over UDP"
        if self.parallel(job) and not job.keep_alive and job.http != "1.1":
            version = "3" if job.http == "3" else "2"
            return (f"curl_cffi's AsyncSession multiplexes the HTTP/{version} requests in flight on one connection: "
                    "FORBID_REUSE closes it after its transfers, not one connection per request")
        return None

    def open(self, job: labdriver.Job):
        self.job = job
        # curl_cffi asks for gzip/deflate/br by default; None sends no Accept-Encoding at all
        self.accept_encoding = "gzip" if job.accept_gzip else None
        # left to the library: its default keyword stays
        self.encoding_kwargs = {} if job.library_encoding else {"accept_encoding": self.accept_encoding}
        if self.parallel(job):
            return self._aopen(job)  # AsyncSession is built inside the event loop
        self.session = self._configure(cffi_requests.Session(**self._session_kwargs(job)), job)
        return None

    async def _aopen(self, job: labdriver.Job) -> None:
        kwargs = self._session_kwargs(job)
        if job.concurrency > ASYNC_MAX_CLIENTS:
            # one easy handle per request in flight: the default would hold the job to fewer at once
            kwargs["max_clients"] = job.concurrency
        self.session = self._configure(cffi_requests.AsyncSession(**kwargs), job)

    @staticmethod
    def _session_kwargs(job: labdriver.Job) -> dict:
        curl_options = {}
        if not job.keep_alive:
            curl_options[CurlOpt.FORBID_REUSE] = 1  # close the connection after every transfer
        if job.option("tcp_nodelay") is not None:
            curl_options[CurlOpt.TCP_NODELAY] = int(job.option("tcp_nodelay"))
        return {**labdriver.timeout_kwargs(job.timeout_s), "http_version": HTTP_VERSIONS[job.http], "curl_options": curl_options,
                "discard_cookies": not job.cookies}  # discard: keep no cookies from responses

    @staticmethod
    def _configure(session, job: labdriver.Job):
        # set after construction: the constructor would take REQUESTS_CA_BUNDLE over `True`
        session.verify = job.tls_ca or True
        return session

    def _kwargs(self, req: labdriver.Request, body, mime: CurlMime | None) -> dict:
        """The request's keyword arguments, the same for Session and AsyncSession."""
        kwargs: dict = {"headers": req.upload_headers(), **req.redirect_kwargs("allow_redirects"), **self.encoding_kwargs}
        if mime is not None:
            for name, value in req.form.items():
                mime.addpart(name=name, data=value.encode())
            kwargs["multipart"] = mime  # curl_mime; curl_cffi takes no `files=`
        elif req.form is not None:
            kwargs["data"] = req.form
        if body:
            kwargs["content"] = body  # streamed from the file, Content-Length from its size
        return kwargs

    def request(self, req: labdriver.Request) -> labdriver.Response:
        if req.plain_get:  # as curl_cffi's docs get a URL: session.get(url), no body, file or headers to pass
            resp = self.session.get(req.url, **self.encoding_kwargs)
            return labdriver.Response.of(resp.status_code, self._http(resp), resp.content, self.job.verify)
        mime = CurlMime(self.session.curl) if req.multipart else None
        try:
            with req.open_body() as body:
                kwargs = self._kwargs(req, body, mime)
                if req.to_file:
                    # libcurl's write callback straight into the file, on the Session's own handle
                    # (stream=True would duplicate the handle, and so open a new connection, in a thread)
                    with labdriver.FileSink(req.sink_path, self.job.verify) as sink:
                        resp = self.session.request(req.method, req.url, content_callback=sink.write, **kwargs)
                        return sink.response(resp.status_code, self._http(resp))
                resp = self.session.request(req.method, req.url, **kwargs)
                return labdriver.Response.of(resp.status_code, self._http(resp), resp.content, self.job.verify)
        finally:
            if mime is not None:
                mime.close()

    async def arequest(self, req: labdriver.Request) -> labdriver.Response:
        # CurlMime() as curl_cffi's docs build one: the handle that sends the request comes from
        # the session's pool only inside request()
        mime = CurlMime() if req.multipart else None
        try:
            with req.open_body() as body:
                kwargs = self._kwargs(req, body, mime)
                if req.to_file:
                    with labdriver.FileSink(req.sink_path, self.job.verify) as sink:
                        resp = await self.session.request(req.method, req.url, content_callback=sink.write, **kwargs)
                        return sink.response(resp.status_code, self._http(resp))
                resp = await self.session.request(req.method, req.url, **kwargs)
                return labdriver.Response.of(resp.status_code, self._http(resp), resp.content, self.job.verify)
        finally:
            if mime is not None:
                mime.close()

    def _http(self, resp) -> str:
        label = HTTP_LABELS.get(resp.http_version, str(resp.http_version))
        wanted = {"1.1": None, "3": "3"}.get(self.job.http, "2")
        if wanted is not None and label != wanted:  # never report other work as HTTP/2 or HTTP/3
            raise RuntimeError(f"asked for HTTP/{wanted}, got HTTP {label}")
        return label

    def close(self):
        return self.session.close()  # AsyncSession.close() is a coroutine: the loop runs it


if __name__ == "__main__":
    labdriver.main(CurlCffiDriver())
