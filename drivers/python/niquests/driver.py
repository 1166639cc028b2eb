"""clientlab driver: niquests, one Session for the job (urllib3-future underneath)."""

from __future__ import annotations

import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))

import labdriver  # noqa: E402
import niquests  # noqa: E402
import urllib3  # noqa: E402  (urllib3-future: it installs itself as `urllib3`)

# job.http -> the protocols the Session may negotiate; the others are disabled, so there is no
# fallback. HTTP/3 is always off (niquests would otherwise upgrade through Alt-Svc).
PROTOCOLS = {
    "1.1": {"disable_http2": True, "disable_http3": True},
    "2": {"disable_http1": True, "disable_http3": True},  # ALPN offers h2 only
    "h2c": {"disable_http1": True, "disable_http3": True},  # HTTP/2 over cleartext, prior knowledge
}


class NiquestsDriver(labdriver.Driver):
    """One niquests.Session per job, used sequentially (not multiplexed)."""

    # niquests never sends Expect: 100-continue, so expect_100=false is what it always does
    options = {"tcp_nodelay": None, "max_host_connections": None, "expect_100": (False,)}

    def versions(self) -> dict[str, str]:
        versions = {**labdriver.base_versions(), "niquests": niquests.__version__}
        # `urllib3` here is urllib3-future; say so rather than pass it off as urllib3
        versions["urllib3-future" if hasattr(urllib3, "HttpVersion") else "urllib3"] = urllib3.__version__
        for name in ("jh2", "h11", "wassima"):
            try:
                versions[name] = __import__(name).__version__
            except (ImportError, AttributeError):
                pass
        return versions

    def refuse(self, job: labdriver.Job) -> str | None:
        return job.close_refusal("niquests")

    def open(self, job: labdriver.Job) -> None:
        self.job = job
        self.h2only = job.http != "1.1"
        limit = job.option("max_host_connections")
        session = niquests.Session(
            **PROTOCOLS[job.http],
            retries=0,  # a failure is reported, not retried
            pool_maxsize=limit or 10,  # niquests' default pool size
            # no OCSP/CRL look-ups: they would go to hosts outside the lab (the lab CA has none)
            revocation_configuration=None,
        )
        # trust_env as shipped: the lab keeps proxies and CA bundles out of the environment
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
        self.session = session

    def request(self, req: labdriver.Request) -> labdriver.Response:
        with req.open_body() as body:  # a body_file is streamed from the file
            return self._send(req, **req.requests_kwargs(self.job.timeout_s, body))

    def _send(self, req: labdriver.Request, **kwargs) -> labdriver.Response:
        resp = self.session.request(req.method, req.url, **kwargs)
        if self.h2only and resp.raw.version != 20:  # never report other work as HTTP/2
            resp.close()
            raise RuntimeError(f"asked for HTTP/2, got HTTP version {resp.raw.version}")
        return labdriver.requests_response(resp, req, self.job.verify)

    def close(self) -> None:
        self.session.close()


if __name__ == "__main__":
    labdriver.main(NiquestsDriver(), __file__)
