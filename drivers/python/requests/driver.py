"""clientlab driver: requests, one Session for the job."""

from __future__ import annotations

import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))

import labdriver  # noqa: E402
import requests  # noqa: E402
import urllib3  # noqa: E402
from requests.adapters import HTTPAdapter  # noqa: E402


class _Adapter(HTTPAdapter):
    """An HTTPAdapter whose pools set the given socket options (requests has no other hook)."""

    def __init__(self, socket_options: list | None, **kwargs):
        self.socket_options = socket_options
        super().__init__(**kwargs)

    def init_poolmanager(self, *args, **kwargs):
        if self.socket_options is not None:
            kwargs["socket_options"] = self.socket_options
        super().init_poolmanager(*args, **kwargs)


class RequestsDriver(labdriver.Driver):
    """One requests.Session per job."""

    # requests never sends Expect: 100-continue, so expect_100=false is what it always does
    # accept_encoding "library": requests' own Accept-Encoding (urllib3's: gzip, deflate, and br
    # or zstd where their packages are installed), decoded by urllib3
    options = {"tcp_nodelay": None, "max_host_connections": None, "expect_100": (False,),
               "accept_encoding": labdriver.LIBRARY_ENCODING}

    def versions(self) -> dict[str, str]:
        return {**labdriver.base_versions(), "requests": requests.__version__, "urllib3": urllib3.__version__}

    def open(self, job: labdriver.Job) -> None:
        self.job = job
        session = requests.Session()  # trust_env as shipped: the lab keeps proxies out of the environment
        nodelay = job.option("tcp_nodelay")
        limit = job.option("max_host_connections")
        adapter = _Adapter(
            socket_options=None if nodelay is None else [(socket.IPPROTO_TCP, socket.TCP_NODELAY, int(nodelay))],
            pool_maxsize=limit or 10, pool_block=limit is not None,
        )
        session.mount("http://", adapter)
        session.mount("https://", adapter)
        if job.tls_ca:
            session.verify = job.tls_ca
        if not job.cookies:
            session.cookies.set_policy(labdriver.refuse_cookies())
        # requests asks for gzip/deflate by default: say exactly what the job wants, unless the job
        # leaves it to the library
        if not job.library_encoding:
            session.headers["Accept-Encoding"] = job.gzip_header
        if not job.keep_alive:
            session.headers["Connection"] = "close"
        self.session = session

    def request(self, req: labdriver.Request) -> labdriver.Response:
        with req.open_body() as body:  # a body_file is streamed from the file
            resp = self.session.request(req.method, req.url, **req.requests_kwargs(self.job.timeout_s, body))
            return labdriver.requests_response(resp, req, self.job.verify)

    def close(self) -> None:
        self.session.close()


if __name__ == "__main__":
    labdriver.main(RequestsDriver())
