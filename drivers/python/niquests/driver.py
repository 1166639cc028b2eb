"""clientlab driver: niquests, one Session (sequential jobs) or AsyncSession (parallel jobs) for the job."""

from __future__ import annotations

import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))

import labdriver  # noqa: E402
import niquests  # noqa: E402
import urllib3  # noqa: E402  (urllib3-future: it installs itself as `urllib3`)
from niquests._constant import DEFAULT_POOLSIZE  # noqa: E402

# job.http -> the protocols the Session may negotiate; the others are disabled, so there is no
# fallback. HTTP/3 is off except for an HTTP/3 job (niquests would otherwise upgrade through Alt-Svc).
PROTOCOLS = {
    "1.1": {"disable_http2": True, "disable_http3": True},
    "2": {"disable_http1": True, "disable_http3": True},  # ALPN offers h2 only
    "h2c": {"disable_http1": True, "disable_http3": True},  # HTTP/2 over cleartext, prior knowledge
    # HTTP/1.1 and HTTP/2 both off: urllib3-future opens QUIC straight to the URL's port (the
    # job's h3 port, so no Alt-Svc round over TCP) and never downgrades when the handshake fails
    "3": {"disable_http1": True, "disable_http2": True},
}
# job.http -> the version every response must have come over (urllib3-future's numbers)
FORCED_VERSION = {"2": 20, "h2c": 20, "3": 30}


class NiquestsDriver(labdriver.HybridDriver):
    """One niquests.Session per sequential job; one niquests.AsyncSession per parallel job, its
    requests awaited by up to `concurrency` tasks at once (niquests' way to run requests
    concurrently), multiplexed over HTTP/2."""

    # niquests never sends Expect: 100-continue, so expect_100=false is what it always does
    # accept_encoding "library": niquests' own Accept-Encoding (client_headers then sets none)
    options = {"tcp_nodelay": None, "max_host_connections": None, "expect_100": (False,),
               "accept_encoding": labdriver.LIBRARY_ENCODING}

    def versions(self) -> dict[str, str]:
        versions = {**labdriver.base_versions(), "niquests": niquests.__version__}
        # `urllib3` here is urllib3-future; say so rather than pass it off as urllib3
        versions["urllib3-future" if hasattr(urllib3, "HttpVersion") else "urllib3"] = urllib3.__version__
        for name in ("jh2", "h11", "qh3", "wassima"):
            try:
                versions[name] = __import__(name).__version__
            except (ImportError, AttributeError):
                pass
        return versions

    def refuse(self, job: labdriver.Job) -> str | None:
        if job.http == "3" and job.option("tcp_nodelay") is not None:
            return "tcp_nodelay: HTTP/3 runs over UDP"
        return job.close_refusal("niquests")

    def open(self, job: labdriver.Job):
        self.job = job
        self.forced = FORCED_VERSION.get(job.http)  # None: HTTP/1.1 (the only version left enabled)
        if self.parallel(job):
            return self._aopen(job)  # AsyncSession is built inside the event loop
        self.session = self._configure(niquests.Session(**self._session_kwargs(job)), job)
        return None

    async def _aopen(self, job: labdriver.Job) -> None:
        # multiplexed: concurrent requests share an HTTP/2 or HTTP/3 connection as streams
        # (niquests' own switch for it; it changes nothing over HTTP/1.1, where each request in
        # flight has a connection)
        self.session = self._configure(
            niquests.AsyncSession(**self._session_kwargs(job), multiplexed=self.forced is not None), job)

    @staticmethod
    def _session_kwargs(job: labdriver.Job) -> dict:
        kwargs: dict = dict(PROTOCOLS[job.http])
        limit = job.option("max_host_connections")
        if limit is not None:
            kwargs["pool_maxsize"] = limit
        elif job.concurrency > DEFAULT_POOLSIZE and job.http == "1.1":
            # HTTP/1.1 needs a connection per request in flight: the default pool would hold the
            # job to DEFAULT_POOLSIZE at once
            kwargs["pool_maxsize"] = job.concurrency
        return kwargs

    @staticmethod
    def _configure(session, job: labdriver.Job):
        """The job's settings on a Session or an AsyncSession (their configuration is the same)."""
        # trust_env as shipped: the lab keeps proxies and CA bundles out of the environment
        limit = job.option("max_host_connections")
        nodelay = job.option("tcp_nodelay")
        for adapter in session.adapters.values():
            pool_kw = adapter.poolmanager.connection_pool_kw  # read when each host's pool is made
            if limit is not None:
                pool_kw["block"] = True  # never more than `limit` connections per host
            if nodelay is not None:
                pool_kw["socket_options"] = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, int(nodelay))]
        if job.tls_ca:
            session.verify = job.tls_ca
        if not job.cookies:
            session.cookies.set_policy(labdriver.refuse_cookies())
        # niquests asks for gzip/deflate/br/zstd by default: say exactly what the job wants
        session.headers.update(job.client_headers)
        return session

    def request(self, req: labdriver.Request) -> labdriver.Response:
        with req.open_body() as body:  # a body_file is streamed from the file
            resp = self.session.request(req.method, req.url, **req.requests_kwargs(self.job.timeout_s, body))
            if wrong := self._wrong_version(resp):
                resp.close()
                raise RuntimeError(wrong)
            return labdriver.requests_response(resp, req, self.job.verify)

    async def arequest(self, req: labdriver.Request) -> labdriver.Response:
        with req.open_body() as body:
            resp = await self.session.request(req.method, req.url, **req.requests_kwargs(self.job.timeout_s, body))
            if resp.lazy:  # multiplexed: a promise until gathered
                await self.session.gather(resp)
            # an AsyncResponse (a stream, or the last of redirects followed) gives its body to an
            # await; a body read already comes in a plain Response
            streamed = isinstance(resp, niquests.AsyncResponse)
            if wrong := self._wrong_version(resp):
                await resp.close() if streamed else resp.close()
                raise RuntimeError(wrong)
            if req.to_file:  # stream=True: an AsyncResponse
                async with resp:
                    with labdriver.FileSink(req.sink_path, self.job.verify) as sink:
                        async for chunk in await resp.iter_content(labdriver.CHUNK):  # as it arrives
                            sink.write(chunk)
                        return sink.response(resp.status_code, resp.raw.version)
            content = await resp.content if streamed else resp.content
            return labdriver.Response.of(resp.status_code, resp.raw.version, content, self.job.verify)

    def _wrong_version(self, resp) -> str | None:
        """Why an HTTP/2 or HTTP/3 job's response does not count (it came over another version),
        or None."""
        if self.forced is not None and resp.raw.version != self.forced:
            return f"asked for HTTP/{self.forced // 10}, got HTTP version {resp.raw.version}"
        return None

    def close(self):
        if isinstance(self.session, niquests.AsyncSession):
            return self.session.close()
        self.session.close()
        return None


if __name__ == "__main__":
    labdriver.main(NiquestsDriver())
