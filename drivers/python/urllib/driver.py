"""clientlab driver: urllib.request from the standard library, one opener for the job.

urllib.request sends `Connection: close` on every request and opens a new connection for each
one: it has no keep-alive. The manifest claims keepalive_off only, so the lab answers keep-alive
cells unsupported rather than measure a client that cannot keep connections there.
"""

from __future__ import annotations

import http.cookiejar
import os
import sys
import urllib.error
import urllib.request
from urllib.parse import urlencode

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))

import labdriver  # noqa: E402


class _Redirects(urllib.request.HTTPRedirectHandler):
    """The opener's redirect handler, set per request: `follow` False makes the 3xx the response;
    True or None (the job names no redirect setting) follows, as urllib's own handler does."""

    follow: bool | None = None

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if self.follow is False:
            return None  # urllib then raises HTTPError carrying the 3xx response
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class UrllibDriver(labdriver.Driver):
    """One OpenerDirector per job (cookie, redirect and HTTPS handlers); a new connection per request."""

    # http.client always sets TCP_NODELAY and never sends Expect: 100-continue. A new connection
    # per request, closed before the next one opens: never more than one at once, so any
    # max_host_connections limit holds as it is
    # accept_encoding "library": http.client's own "Accept-Encoding: identity", decoding nothing,
    # as every job does already
    options = {"tcp_nodelay": (True,), "max_host_connections": None, "expect_100": (False,),
               "accept_encoding": labdriver.LIBRARY_ENCODING}

    def versions(self) -> dict[str, str]:
        # urllib.request's own version is the interpreter's (it is what its User-Agent says)
        return {**labdriver.base_versions(), "urllib": urllib.request.__version__}

    def open(self, job: labdriver.Job) -> None:
        self.job = job
        self.redirects = _Redirects()
        handlers: list = [
            urllib.request.HTTPSHandler(context=labdriver.ssl_context(job)),
            self.redirects,
        ]
        if job.cookies:
            handlers.append(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        self.opener = urllib.request.build_opener(*handlers)

    def request(self, req: labdriver.Request) -> labdriver.Response:
        self.redirects.follow = req.follow_redirects
        headers = req.upload_headers()
        data = None
        if req.form is not None:
            data = urlencode(req.form).encode()  # urllib adds the urlencoded Content-Type
        with req.open_body() as body:
            if body:
                headers["Content-Length"] = str(req.body_size)  # else http.client sends it chunked
                data = body  # streamed from the file
            request = urllib.request.Request(req.url, data=data, headers=headers, method=req.method)
            try:
                resp = self.opener.open(request, **labdriver.timeout_kwargs(self.job.timeout_s))
            except urllib.error.HTTPError as err:  # a 3xx not followed, a 4xx or a 5xx: still a response
                resp = err
            with resp:
                return self._read(req, resp)

    def _read(self, req: labdriver.Request, resp) -> labdriver.Response:
        status = resp.status
        http = resp.fp.version if isinstance(resp, urllib.error.HTTPError) else resp.version
        if req.to_file:
            with labdriver.FileSink(req.sink_path, self.job.verify) as sink:
                return sink.drain(iter(lambda: resp.read(labdriver.CHUNK), b""), status, http)
        return labdriver.Response.of(status, http, resp.read(), self.job.verify)

    def close(self) -> None:
        self.opener.close()


if __name__ == "__main__":
    labdriver.main(UrllibDriver())
