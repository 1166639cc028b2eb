"""clientlab driver: urllib3, one PoolManager for the job."""

from __future__ import annotations

import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))

import labdriver  # noqa: E402
import urllib3  # noqa: E402


class Urllib3Driver(labdriver.Driver):
    """One urllib3.PoolManager per job."""

    # urllib3 never sends Expect: 100-continue, so expect_100=false is what it always does
    # accept_encoding "library": a PoolManager sends no Accept-Encoding of its own, and decodes
    # what comes content-coded (decode_content, on by default)
    options = {"tcp_nodelay": None, "max_host_connections": None, "expect_100": (False,),
               "accept_encoding": labdriver.LIBRARY_ENCODING}

    def versions(self) -> dict[str, str]:
        return {**labdriver.base_versions(), "urllib3": urllib3.__version__}

    def open(self, job: labdriver.Job) -> None:
        self.job = job
        kwargs: dict = {
            **labdriver.timeout_kwargs(None if job.timeout_s is None else urllib3.Timeout(total=job.timeout_s)),
            # a failed request is reported, not sent again; redirects as urllib3's default Retry(3)
            # counts them (at most 3), followed or not as each request says
            "retries": urllib3.Retry(3, connect=0, read=0, other=0),
        }
        if job.tls_ca:
            kwargs.update(cert_reqs="CERT_REQUIRED", ca_certs=job.tls_ca)
        nodelay = job.option("tcp_nodelay")
        if nodelay is not None:
            kwargs["socket_options"] = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, int(nodelay))]
        limit = job.option("max_host_connections")
        if limit is not None:
            kwargs.update(maxsize=limit, block=True)  # block: never more than `limit` per host
        headers = job.client_headers
        self.pool = urllib3.PoolManager(headers=headers, **kwargs)

    def request(self, req: labdriver.Request) -> labdriver.Response:
        if req.plain_get:  # as urllib3's README asks for a URL: the pool's headers, nothing to merge
            resp = self.pool.request("GET", req.url)
            return labdriver.Response.of(resp.status, resp.version, resp.data, self.job.verify)
        headers = {**self.pool.headers, **req.upload_headers()}
        kwargs: dict = {"headers": headers, **req.redirect_kwargs("redirect"), "preload_content": not req.to_file}
        if req.form is not None:
            kwargs.update(fields=req.form, encode_multipart=req.multipart)
        with req.open_body() as body:
            if body:
                headers["Content-Length"] = str(req.body_size)  # else urllib3 would send it chunked
                kwargs["body"] = body
            return self._send(req, **kwargs)

    def _send(self, req: labdriver.Request, **kwargs) -> labdriver.Response:
        resp = self.pool.request(req.method, req.url, **kwargs)
        if req.to_file:
            with labdriver.FileSink(req.sink_path, self.job.verify) as sink:
                result = sink.drain(resp.stream(labdriver.CHUNK), resp.status, resp.version)
            resp.release_conn()
            return result
        return labdriver.Response.of(resp.status, resp.version, resp.data, self.job.verify)

    def close(self) -> None:
        self.pool.clear()


if __name__ == "__main__":
    labdriver.main(Urllib3Driver())
