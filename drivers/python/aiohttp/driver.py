"""clientlab driver: aiohttp, one ClientSession for the job, requests in flight up to `concurrency`."""

from __future__ import annotations

import hashlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))

import aiohttp  # noqa: E402
import labdriver  # noqa: E402
import multidict  # noqa: E402
import yarl  # noqa: E402


class AiohttpDriver(labdriver.AsyncDriver):
    """One aiohttp.ClientSession per job; the connector's limit is the job's concurrency."""

    # aiohttp always sets TCP_NODELAY: true is honoured as it is, false cannot be
    # accept_encoding "library": aiohttp's own Accept-Encoding (gzip, deflate, and br where a
    # brotli package is installed), decoded by aiohttp
    options = {"tcp_nodelay": (True,), "max_host_connections": None, "expect_100": None,
               "accept_encoding": labdriver.LIBRARY_ENCODING}

    def versions(self) -> dict[str, str]:
        return {**labdriver.base_versions(), "aiohttp": aiohttp.__version__,
                "multidict": multidict.__version__, "yarl": yarl.__version__}

    async def open(self, job: labdriver.Job) -> None:
        self.job = job
        connector = aiohttp.TCPConnector(
            limit=job.concurrency,
            limit_per_host=job.option("max_host_connections") or 0,  # 0: no per-host cap
            ssl=labdriver.ssl_context(job) if job.tls_ca else True,
            force_close=not job.keep_alive,  # a new connection per request
        )
        # aiohttp's CookieJar refuses cookies from IP hosts unless unsafe=True; the lab uses 127.0.0.1
        jar = aiohttp.CookieJar(unsafe=True) if job.cookies else aiohttp.DummyCookieJar()
        self.session = aiohttp.ClientSession(
            connector=connector, cookie_jar=jar,
            **labdriver.timeout_kwargs(None if job.timeout_s is None else aiohttp.ClientTimeout(total=job.timeout_s)),
            # aiohttp asks for gzip/deflate by default: say what the job wants, unless it leaves it to aiohttp
            headers={} if job.library_encoding else {"Accept-Encoding": job.gzip_header},
        )

    def run_all(self, job: labdriver.Job, report: labdriver.Report | labdriver.Tally) -> None:
        if job.concurrency == 1:
            self.loop.run(self._one_by_one(job, report))
        else:
            super().run_all(job, report)

    async def _one_by_one(self, job: labdriver.Job, report: labdriver.Report | labdriver.Tally) -> None:
        """A sequential job in one coroutine, as aiohttp's quickstart loops: a GET of the URL alone
        written out (`async with session.get(url)`, the body from `await resp.read()`) with each
        answer read back, anything else through `request`; no task or worker a request."""
        session, verify = self.session, job.verify
        for req in job.requests:
            if not req.plain_get:
                for _ in range(req.repeat):
                    try:
                        report.add(req, await self.request(req))
                    except Exception as exc:  # a failed request is reported, never fatal
                        report.fail(req, exc)
                continue
            url = req.url
            for _ in range(req.repeat):
                try:
                    async with session.get(url) as resp:
                        body = await resp.read()
                except Exception as exc:  # a failed request is reported, never fatal
                    report.fail(req, exc)
                    continue
                report.add(req, labdriver.Response(resp.status, len(body), labdriver.http_label(resp.version),
                                                   hashlib.sha256(body).hexdigest() if verify else None))

    async def request(self, req: labdriver.Request) -> labdriver.Response:
        if req.plain_get:  # as aiohttp's docs get a URL, with no arguments to merge
            async with self.session.get(req.url) as resp:
                return labdriver.Response.of(resp.status, resp.version, await resp.read(), self.job.verify)
        kwargs: dict = {"headers": req.upload_headers(), **req.redirect_kwargs("allow_redirects")}
        if req.has_body and self.job.option("expect_100"):
            kwargs["expect100"] = True  # sends Expect: 100-continue and waits for the 100
        if req.multipart:
            form = aiohttp.FormData(default_to_multipart=True)
            for name, value in req.form.items():
                form.add_field(name, value)
            kwargs["data"] = form
        elif req.form is not None:
            kwargs["data"] = req.form
        with req.open_body() as body:
            if body:
                kwargs["data"] = body  # streamed from the file
            return await self._send(req, **kwargs)

    async def _send(self, req: labdriver.Request, **kwargs) -> labdriver.Response:
        async with self.session.request(req.method, req.url, **kwargs) as resp:
            if req.to_file:
                with labdriver.FileSink(req.sink_path, self.job.verify) as sink:
                    async for chunk in resp.content.iter_chunked(labdriver.CHUNK):
                        sink.write(chunk)
                    return sink.response(resp.status, resp.version)
            return labdriver.Response.of(resp.status, resp.version, await resp.read(), self.job.verify)

    async def close(self) -> None:
        await self.session.close()


if __name__ == "__main__":
    labdriver.main(AiohttpDriver())
