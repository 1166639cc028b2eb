"""labdriver: the clientlab driver protocol (docs/driver-protocol.md) for Python drivers.

A driver subclasses `Driver` (or `AsyncDriver` for asyncio clients, `HybridDriver` for a library
whose users pick its asyncio client for concurrent work), says which job options
it honours, and supplies three steps: `open(job)` builds the client, `request(req)` does one
request and returns a `Response`, `close()` closes the client. `main()` does the rest:
hello / job / ready / go / done / report, refusing jobs with an option the driver does not
honour (the lab itself never sends a job that needs a capability the driver's `driver.toml` does
not claim), and the calibration loop (`bare`: the same requests in a plain loop on one kept
client, timed by the driver's own clock).

Standard library only: the lab's own test run imports this module without the drivers' venvs.
"""

from __future__ import annotations

import asyncio
import hashlib
import http.cookiejar
import json
import os
import platform
import ssl
import sys
import time
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Iterable, Iterator

PROTOCOL = 1
CHUNK = 64 * 1024  # read/write size for streamed bodies

# Options known in protocol version 1 and the value each must have (None = any JSON list/str).
OPTION_TYPES: dict[str, type] = {
    "tcp_nodelay": bool,
    "max_host_connections": int,
    "share": list,
    "expect_100": bool,
    "multi_api": str,
    "accept_encoding": str,
}

# accept_encoding = "library": the job leaves Accept-Encoding and decoding to the library as it
# ships (docs/driver-protocol.md §3); a driver that honours it lists it as LIBRARY_ENCODING
LIBRARY_ENCODING = ("library",)


@dataclass(frozen=True)
class Request:
    """One entry of `job.requests`, done `repeat` times; `r` is its index."""

    r: int
    method: str
    url: str
    repeat: int = 1
    headers: dict[str, str] = field(default_factory=dict)
    form: dict[str, str] | None = None
    form_encoding: str = "urlencoded"
    body_file: str | None = None
    content_type: str | None = None
    # True: follow 3xx; False: report the 3xx; None (absent): the URL does not redirect, so the
    # library's own redirect setting stays as it ships
    follow_redirects: bool | None = None
    sink: str = "memory"
    sink_path: str | None = None
    # a GET of the URL and nothing else (no headers, body, redirect setting or file sink): what a
    # user's program asks for as `get(url)`, with no arguments for the library to merge
    plain_get: bool = field(init=False, default=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "plain_get", self.method == "GET" and not self.headers and self.form is None
                           and self.body_file is None and self.follow_redirects is None and self.sink == "memory")

    @property
    def multipart(self) -> bool:
        """True when the form goes as multipart/form-data."""
        return self.form is not None and self.form_encoding == "multipart"

    @property
    def to_file(self) -> bool:
        """True when the body is streamed to `sink_path`."""
        return self.sink == "file"

    @property
    def has_body(self) -> bool:
        """True when the request carries a body (form or file)."""
        return self.form is not None or self.body_file is not None

    @property
    def body_size(self) -> int:
        """Size of `body_file`, for an explicit Content-Length."""
        return os.path.getsize(self.body_file) if self.body_file else 0

    @contextmanager
    def open_body(self) -> Iterator[IO[bytes] | None]:
        """`body_file` opened for streaming (closed afterwards), or None when there is none."""
        if not self.body_file:
            yield None
            return
        with open(self.body_file, "rb") as body:
            yield body

    def form_kwargs(self) -> dict:
        """The form as requests and httpx take it: multipart fields as `files` without file
        names (so they stay plain fields), urlencoded ones as `data`; {} when there is no form."""
        if self.form is None:
            return {}
        if self.multipart:
            return {"files": {k: (None, v) for k, v in self.form.items()}}
        return {"data": self.form}

    def redirect_kwargs(self, name: str) -> dict:
        """`{name: follow_redirects}` when the job says whether to follow, else {} (the library's
        own default stays)."""
        return {} if self.follow_redirects is None else {name: self.follow_redirects}

    def requests_kwargs(self, timeout_s: float | None, body: IO[bytes] | None = None) -> dict:
        """Keyword arguments for a requests-style `Session.request()` (requests, niquests): the
        extra headers, redirects when the job names them, the timeout when the job names one,
        streaming for a file sink, the form, and `body` (the opened `body_file`, streamed) as `data`."""
        kwargs = {"headers": self.upload_headers(), **self.redirect_kwargs("allow_redirects"),
                  **timeout_kwargs(timeout_s), "stream": self.to_file, **self.form_kwargs()}
        if body is not None:
            kwargs["data"] = body
        return kwargs

    def upload_headers(self) -> dict[str, str]:
        """The extra headers plus Content-Type for a raw `body_file` body."""
        headers = dict(self.headers)
        if self.body_file:
            headers.setdefault("Content-Type", self.content_type or "application/octet-stream")
        return headers

    @classmethod
    def parse(cls, r: int, data: dict) -> "Request":
        """Build from the job's JSON entry; unknown keys are ignored (newer labs may add some)."""
        return cls(
            r=r,
            method=str(data["method"]).upper(),
            url=data["url"],
            repeat=int(data.get("repeat", 1)),
            headers=dict(data.get("headers") or {}),
            form=dict(data["form"]) if data.get("form") is not None else None,
            form_encoding=data.get("form_encoding") or "urlencoded",
            body_file=data.get("body_file"),
            content_type=data.get("content_type"),
            follow_redirects=None if data.get("follow_redirects") is None else bool(data["follow_redirects"]),
            sink=data.get("sink") or "memory",
            sink_path=data.get("sink_path"),
        )


@dataclass(frozen=True)
class Job:
    """A job (docs/driver-protocol.md §3) as typed fields."""

    scenario: str
    verify: bool
    http: str
    tls_ca: str | None
    concurrency: int
    keep_alive: bool
    cookies: bool
    accept_gzip: bool
    timeout_s: float | None   # None: the job names no time limit, the library keeps its default
    options: dict[str, Any]
    requests: list[Request]

    @classmethod
    def parse(cls, data: dict) -> "Job":
        """Build from the `job` object of a job message."""
        if not isinstance(data.get("requests"), list):  # the work itself: a job without it is malformed
            raise ValueError("job must be an object with a requests list")
        return cls(
            scenario=data.get("scenario", ""),
            verify=bool(data.get("verify", False)),
            http=str(data.get("http", "1.1")),
            tls_ca=data.get("tls_ca"),
            concurrency=int(data.get("concurrency", 1)),
            keep_alive=bool(data.get("keep_alive", True)),
            cookies=bool(data.get("cookies", False)),
            accept_gzip=bool(data.get("accept_gzip", False)),
            timeout_s=None if data.get("timeout_s") is None else float(data["timeout_s"]),
            options=dict(data.get("options") or {}),
            requests=[Request.parse(r, entry) for r, entry in enumerate(data["requests"])],
        )

    def option(self, name: str) -> Any:
        """The option's value, None when absent or null (the client's default)."""
        return self.options.get(name)

    @property
    def library_encoding(self) -> bool:
        """The job leaves Accept-Encoding and decoding to the library as it ships (the option
        accept_encoding = "library"): the driver sets no Accept-Encoding of its own."""
        return self.option("accept_encoding") == "library"

    @property
    def gzip_header(self) -> str:
        """Accept-Encoding value: gzip when asked, else identity (clients' defaults may say gzip)."""
        return "gzip" if self.accept_gzip else "identity"

    @property
    def client_headers(self) -> dict[str, str]:
        """Headers for every request of a client configured by default headers: Accept-Encoding
        as asked (none where the job leaves it to the library), and `Connection: close` when
        keep-alive is off (HTTP/1.1's way to close)."""
        headers = {} if self.library_encoding else {"Accept-Encoding": self.gzip_header}
        if not self.keep_alive:
            headers["Connection"] = "close"
        return headers

    def close_refusal(self, library: str) -> str | None:
        """Why a client that closes connections only with `Connection: close` cannot do this
        job (keep-alive off over HTTP/2, where that header does not exist), or None."""
        if not self.keep_alive and self.http != "1.1":
            version = "3" if self.http == "3" else "2"
            return f"{library} cannot close HTTP/{version} connections per request (Connection: close is HTTP/1.1)"
        return None

    def work(self) -> Iterator[Request]:
        """Every request to do, in order, repeats expanded."""
        for req in self.requests:
            for _ in range(req.repeat):
                yield req


@dataclass(slots=True)
class Response:
    """What one request got: final status, decoded body length, HTTP version, digest if verify."""

    status: int
    bytes: int
    http: str
    sha256: str | None = None

    @classmethod
    def of(cls, status: int, http: Any, body: bytes, verify: bool) -> "Response":
        """A response whose whole (decoded) body is in memory."""
        return cls(status, len(body), http_label(http), hashlib.sha256(body).hexdigest() if verify else None)


class FileSink:
    """Writes a streamed body to a file chunk by chunk, counting it (and hashing when verifying)."""

    def __init__(self, path: str, verify: bool):
        self.file: IO[bytes] = open(path, "wb")
        self.size = 0
        self.digest = hashlib.sha256() if verify else None

    def write(self, chunk: bytes) -> int:
        """Append one chunk; returns its length (libcurl's write callbacks want that)."""
        self.file.write(chunk)
        self.size += len(chunk)
        if self.digest is not None:
            self.digest.update(chunk)
        return len(chunk)

    def drain(self, chunks: Iterable[bytes], status: int, http: Any) -> Response:
        """Write every chunk of a streamed body, then describe the file (see `response`)."""
        for chunk in chunks:
            self.write(chunk)
        return self.response(status, http)

    def response(self, status: int, http: Any) -> Response:
        """Close the file and describe what was written."""
        self.close()
        return Response(status, self.size, http_label(http), self.digest.hexdigest() if self.digest else None)

    def close(self) -> None:
        """Close the file (idempotent)."""
        self.file.close()

    def __enter__(self) -> "FileSink":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def requests_response(resp: Any, req: Request, verify: bool) -> Response:
    """A requests-style response (requests, niquests: `status_code`, `raw.version`, `content`,
    `iter_content`) as a Response: streamed into the file sink when asked, else read whole."""
    http = resp.raw.version
    if req.to_file:
        with resp, FileSink(req.sink_path, verify) as sink:
            return sink.drain(resp.iter_content(CHUNK), resp.status_code, http)
    return Response.of(resp.status_code, http, resp.content, verify)


# a version's text (upper case, without "HTTP/") -> its label
_HTTP_LABELS = {"10": "1.0", "11": "1.1", "20": "2", "2": "2", "2.0": "2", "1.0": "1.0", "1.1": "1.1",
                "30": "3", "3": "3", "3.0": "3"}
# the values libraries give most often -> their labels: one look-up per response in the timed phase
_KNOWN_VERSIONS: dict[Any, str] = {
    10: "1.0", 11: "1.1", 20: "2", 30: "3", (1, 0): "1.0", (1, 1): "1.1", (2, 0): "2", (3, 0): "3",
    **{text: label for text, label in _HTTP_LABELS.items()},
    **{f"HTTP/{text}": label for text, label in _HTTP_LABELS.items() if "." in text or len(text) == 1},
}


def timeout_kwargs(timeout_s: Any, name: str = "timeout") -> dict:
    """`{name: timeout_s}` when the job names a time limit (the value as the library takes it),
    else {}: the library keeps its own default, as a plain program's would."""
    return {} if timeout_s is None else {name: timeout_s}


def http_label(version: Any) -> str:
    """Normalise a library's idea of the HTTP version to "1.0", "1.1", "2" or "3".

    Accepts 10/11/20/30 (http.client, urllib3, urllib3-future), "HTTP/1.1"/"HTTP/2" (httpx),
    (1, 1) tuples (aiohttp).
    """
    try:
        return _KNOWN_VERSIONS[version]
    except (KeyError, TypeError):  # TypeError: an unhashable value
        pass
    if isinstance(version, tuple):
        version = f"{version[0]}.{version[1]}"
    text = str(version).upper().removeprefix("HTTP/")
    return _HTTP_LABELS.get(text, text)


def sha256_file(path: str) -> str:
    """Hex SHA-256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class _RefuseAll(http.cookiejar.CookiePolicy):
    """Neither stores nor returns any cookie."""

    netscape, rfc2965, hide_cookie2 = True, False, False

    def set_ok(self, cookie: Any, request: Any) -> bool:
        return False

    def return_ok(self, cookie: Any, request: Any) -> bool:
        return False

    def domain_return_ok(self, domain: str, request: Any) -> bool:
        return False

    def path_return_ok(self, path: str, request: Any) -> bool:
        return False


def refuse_cookies() -> http.cookiejar.CookiePolicy:
    """A cookie policy for jobs with `cookies: false`: the client keeps no cookies at all."""
    return _RefuseAll()


def ssl_context(job: Job) -> ssl.SSLContext:
    """A verifying TLS context trusting the job's CA (never disables verification)."""
    return ssl.create_default_context(cafile=job.tls_ca)


def base_versions() -> dict[str, str]:
    """Versions every Python driver reports: the interpreter and its OpenSSL."""
    return {"python": platform.python_version(), "openssl": ssl.OPENSSL_VERSION}


class Driver:
    """A synchronous driver: one client per job, requests one after another.

    Subclasses set `options` and override `versions`, `open`, `request` and `close`; `refuse`
    may add per-job refusals. `options` maps each option the driver honours to the values it
    honours exactly, or to None for every valid value; any other non-null option is refused.
    """

    options: dict[str, tuple | None] = {}

    def versions(self) -> dict[str, str]:
        """Library versions for the hello message."""
        return base_versions()

    def refuse(self, job: Job) -> str | None:
        """A reason this driver cannot do `job` exactly, or None."""
        return None

    def open(self, job: Job) -> None:
        """Build and configure the client. No connection may be opened here."""
        raise NotImplementedError

    def request(self, req: Request) -> Response:
        """Do one request; raise on failure without a response (it becomes a report error)."""
        raise NotImplementedError

    def close(self) -> None:
        """Close the client and every connection it holds."""

    def run_all(self, job: Job, report: "Report | Tally") -> None:
        """The timed phase: every request, in order, each one's outcome into `report`."""
        for req in job.work():
            try:
                report.add(req, self.request(req))
            except Exception as exc:  # a failed request is reported, never fatal
                report.fail(req, exc)


class AsyncDriver(Driver):
    """An asyncio driver: `open`, `request` and `close` are coroutines; up to `concurrency`
    requests run at once. All jobs of the process share one event loop."""

    def __init__(self) -> None:
        self.loop = asyncio.Runner()

    async def open(self, job: Job) -> None:  # type: ignore[override]
        """Build the client inside the running loop. No connection may be opened here."""
        raise NotImplementedError

    async def request(self, req: Request) -> Response:  # type: ignore[override]
        """Do one request."""
        raise NotImplementedError

    async def close(self) -> None:  # type: ignore[override]
        """Close the client."""

    def run_all(self, job: Job, report: "Report | Tally") -> None:
        self.loop.run(run_concurrently(job, report, self.request))


class HybridDriver(Driver):
    """A library with a synchronous client and an asyncio one, each used as its users use it:
    the synchronous client for sequential jobs (`request`), the asyncio one for parallel jobs
    (concurrency > 1: `arequest`, up to `concurrency` at once). `open` and `close` build and close
    whichever the job needs; for the asyncio client they return a coroutine, which runs on the
    driver's event loop (one for every job of the process)."""

    def __init__(self) -> None:
        self.loop = asyncio.Runner()

    @staticmethod
    def parallel(job: Job) -> bool:
        """True when the job goes to the asyncio client."""
        return job.concurrency > 1

    async def arequest(self, req: Request) -> Response:
        """Do one request of a parallel job on the asyncio client."""
        raise NotImplementedError

    def run_all(self, job: Job, report: "Report | Tally") -> None:
        if self.parallel(job):
            self.loop.run(run_concurrently(job, report, self.arequest))
        else:
            super().run_all(job, report)


async def run_concurrently(job: Job, report: "Report | Tally", request: Any) -> None:
    """Every request of the job with up to `concurrency` in flight (order free), each one's
    outcome into `report`; `request` is the driver's coroutine function for one request."""
    work = job.work()  # shared by the workers: asyncio switches only at awaits

    async def worker() -> None:
        for req in work:
            try:
                report.add(req, await request(req))
            except Exception as exc:  # a failed request is reported, never fatal
                report.fail(req, exc)

    await asyncio.gather(*(worker() for _ in range(max(1, job.concurrency))))


class Tally:
    """Counts responses and errors and keeps nothing else: the bare loop's stand-in for a Report,
    so that the calibration loop pays for no report a plain program would not build."""

    def __init__(self) -> None:
        self.counted = 0
        self.errors = 0
        self.first_error: str | None = None
        self._rows: list[list] = []

    @property
    def responses(self) -> int:
        """Every response counted, those of `rows` lists included."""
        return self.counted + sum(map(len, self._rows))

    def add(self, req: Request, resp: Response) -> None:
        self.counted += 1

    def rows(self, req: Request, label: Callable[[Any], str] = http_label) -> list:
        """A list whose items are counted as responses (see `Report.rows`)."""
        rows: list = []
        self._rows.append(rows)
        return rows

    def fail(self, req: Request, exc: BaseException) -> None:
        self.errors += 1
        if self.first_error is None:
            self.first_error = f"{type(exc).__name__}: {exc}"[:500]


class Report:
    """Collects responses and errors; `responses` gives them in the report's wire format."""

    def __init__(self, verify: bool):
        self.verify = verify
        # each response as it came, turned into the wire format only when the report is sent,
        # after `done`: the timed phase pays for one append a request, as a plain loop keeps a count
        self._got: list[tuple[int, Response] | tuple[int, list, Callable[[Any], str]]] = []
        self.errors: list[dict] = []

    def add(self, req: Request, resp: Response) -> None:
        """Record one response."""
        self._got.append((req.r, resp))

    def rows(self, req: Request, label: Callable[[Any], str] = http_label) -> list:
        """A list for a driver's own tight loop over `req`'s repeats to append each response to as
        a plain tuple, (status, bytes, version) or, verifying, (status, bytes, version, sha256),
        the version as the library gives it. A library that does little a request (pycurl: about
        30 µs of CPU) makes a record object and a method call a response a share of its CPU that
        its users' loops do not pay; the tuples are turned into the wire format, each version
        through `label`, only when the report is sent, after `done`. Responses keep their order
        with those of `add`: the list takes its place when asked for."""
        rows: list = []
        self._got.append((req.r, rows, label))
        return rows

    @property
    def responses(self) -> list[dict]:
        """The responses in the report's wire format."""
        items = []
        for got in self._got:
            if len(got) == 2:
                r, resp = got
                item = {"r": r, "status": resp.status, "bytes": resp.bytes, "http": resp.http}
                if self.verify:
                    item["sha256"] = resp.sha256
                items.append(item)
                continue
            r, rows, label = got
            for row in rows:
                item = {"r": r, "status": row[0], "bytes": row[1], "http": label(row[2])}
                if self.verify:
                    item["sha256"] = row[3] if len(row) > 3 else None
                items.append(item)
        return items

    def fail(self, req: Request, exc: BaseException) -> None:
        """Record one request that got no response."""
        text = str(exc)  # some exceptions (asyncio's TimeoutError) have no message
        message = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
        self.errors.append({"r": req.r, "message": message[:500]})


def refusal(job: Job, honoured: dict[str, tuple | None]) -> str | None:
    """Why a job cannot be done exactly (an option not honoured), or None. Capabilities are the
    lab's business: it never sends a job that needs one the manifest does not claim."""
    for name, value in sorted(job.options.items()):
        if value is None:
            continue
        if name not in honoured:
            return f"option {name} is not supported"
        kind = OPTION_TYPES.get(name)
        if kind is not None and (type(value) is not kind):  # bool is not an int here
            return f"option {name} must be a {kind.__name__}, got {value!r}"
        allowed = honoured[name]
        if allowed is not None and value not in allowed:
            return f"option {name}={json.dumps(value)} cannot be honoured (only {', '.join(map(json.dumps, allowed))})"
    return None


class Loop:
    """The protocol message loop for one driver, reading `inp` and writing `out`."""

    def __init__(self, driver: Driver, inp: IO[bytes], out: IO[str]):
        self.driver, self.inp, self.out = driver, inp, out
        self.job: Job | None = None
        self.bare_open = False  # a bare loop's client is built and kept for the next bare round

    def send(self, message: dict) -> None:
        """Write one protocol line."""
        self.out.write(json.dumps(message, separators=(",", ":")) + "\n")
        self.out.flush()

    def _call(self, fn: Any, *args: Any) -> Any:
        """Call a driver step, sync or async."""
        result = fn(*args)
        if asyncio.iscoroutine(result):
            return self.driver.loop.run(result)  # type: ignore[attr-defined]
        return result

    def _open(self, data: dict) -> Job | None:
        """Parse a job and build the client for it; None (after saying why) when it cannot be done."""
        try:
            job = Job.parse(data)
        except (KeyError, TypeError, ValueError) as exc:
            self.send({"type": "error", "message": f"bad job: {exc!r}"})
            return None
        reason = refusal(job, self.driver.options) or self.driver.refuse(job)
        if reason:
            self.send({"type": "unsupported", "reason": reason})
            return None
        try:
            self._call(self.driver.open, job)
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            self.send({"type": "error", "message": f"building the client failed: {type(exc).__name__}: {exc}"})
            return None
        return job

    def _close(self) -> None:
        try:
            self._call(self.driver.close)
        except Exception:
            traceback.print_exc(file=sys.stderr)

    def drop_ready(self) -> None:
        """Close the client of a job that said `ready` and got no `go`: a new job, a bare round or
        the end of input came instead (a trial the lab gave up after `ready`: a sampler that did
        not start, a run stopped). Left to the garbage collector, an asyncio client warns that it
        was never closed (aiohttp's "Unclosed client session" on stderr)."""
        if self.job is not None:
            self.job = None
            self._close()

    def on_job(self, data: dict) -> None:
        self.drop_ready()
        self.end_bare()
        self.job = self._open(data)
        if self.job is not None:
            self.send({"type": "ready"})

    def on_go(self) -> None:
        job, self.job = self.job, None
        if job is None:
            self.send({"type": "error", "message": "go without a ready job"})
            return
        report = Report(job.verify)
        self.driver.run_all(job, report)
        self.send({"type": "done"})  # before the report: serialising it is not timed
        self.send({"type": "report", "responses": report.responses, "errors": report.errors})
        self._close()  # no connection survives the job

    def on_bare(self, data: dict) -> None:
        """One round of the calibration loop: the job's requests on the kept client (built by the
        first round), timed by the driver's own clock, nothing kept but counts."""
        self.drop_ready()
        if self.bare_open:
            try:
                job: Job | None = Job.parse(data)
            except (KeyError, TypeError, ValueError) as exc:
                self.send({"type": "error", "message": f"bad job: {exc!r}"})
                return
        else:
            job = self._open(data)
            if job is None:
                return
            self.bare_open = True
        assert job is not None
        tally = Tally()
        t0 = time.perf_counter()
        self.driver.run_all(job, tally)
        wall_s = time.perf_counter() - t0
        answer: dict[str, Any] = {"type": "bare", "wall_s": wall_s, "requests": tally.responses,
                                  "errors": tally.errors}
        if tally.first_error:
            answer["error"] = tally.first_error
        self.send(answer)

    def end_bare(self) -> None:
        """Close the calibration loop's client, if one is open."""
        if self.bare_open:
            self.bare_open = False
            self._close()

    def run(self) -> None:
        """Answer messages until end of input."""
        while line := self.inp.readline():
            if not line.strip():
                continue
            try:
                message = json.loads(line)
                kind = message["type"]
            except (ValueError, KeyError, TypeError):
                self.send({"type": "error", "message": f"not a protocol message: {line[:200]!r}"})
                continue
            if kind == "hello":
                self.send({"type": "hello", "protocol": PROTOCOL, "versions": self.driver.versions()})
            elif kind == "job":
                self.on_job(message.get("job") or {})
            elif kind == "go":
                self.on_go()
            elif kind == "bare":
                self.on_bare(message.get("job") or {})
            else:
                self.send({"type": "error", "message": f"unknown message type {kind!r}"})
        self.drop_ready()
        self.end_bare()


def leave_import_path(*folders: str) -> None:
    """Take `folders` (the lab's own: this module's, by default) off the import path once the
    driver has imported what it needs. A library that tries an import while it works searches
    every folder on the path each time one fails (httpcore looks for sniffio on every request of
    its async client): the driver's process searches no more folders than a plain program does."""
    drop = {os.path.abspath(f) for f in (folders or (os.path.dirname(os.path.abspath(__file__)),))}
    sys.path[:] = [p for p in sys.path if os.path.abspath(p) not in drop]


class LineWriter:
    """Protocol lines written whole to a file descriptor, however many write(2) calls that takes.

    Python's buffered writer can return a short count from a write that a signal or a ptrace stop
    interrupted (a pipe full with a report of thousands of responses, while a profiler that stops
    the process at each sample, py-spy --native, is attached), and the text layer over it drops
    the rest: the lab then read 64 KiB of a report and the next message on one line. Here a short
    write is followed by the rest."""

    def __init__(self, fd: int):
        self.fd = fd

    def write(self, text: str) -> None:
        """Write all of `text`, encoded as UTF-8."""
        data = memoryview(text.encode())
        while data:
            data = data[os.write(self.fd, data):]  # os.write retries EINTR itself (PEP 475)

    def flush(self) -> None:
        """Nothing is held back: every write went to the descriptor."""


def main(driver: Driver) -> None:
    """Run `driver` on stdin/stdout."""
    leave_import_path()
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError):  # a stream with no descriptor (io.UnsupportedOperation): as it is
        out: Any = sys.stdout
    else:
        sys.stdout.flush()
        out = LineWriter(fd)
    sys.stdout = sys.stderr  # a stray print() from a library must not break the protocol
    loop = Loop(driver, sys.stdin.buffer, out)
    try:
        loop.run()
    finally:
        if isinstance(driver, (AsyncDriver, HybridDriver)):
            driver.loop.close()
