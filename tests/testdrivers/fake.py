"""The reference test driver: the protocol done right with the standard library's http.client,
plus deliberate faults for the lab's own tests.

    fake.py MODE [RECOMMENDS]
                    MODE = reference | crash | hang | garbage | flood | wrong-body | lazy | sleep
                           | keep-conns | no-reuse | nagle | expect-stall | redirect-new-conn | buffer-file
                           | planted (a busy function on every request: the profile must name it)
                           | idle-conn | fresh-body | fresh-later | no-bare
                           | careful | lenient | eager | pool-one (the behaviour matrix: docs/behaviour.md)
                    RECOMMENDS = deadline | per-read: what the job's option `recommended` sets (its
                           manifest's [behaviour.recommended]); without it the option is unknown

keep-conns breaks the protocol (it keeps its connections from one job to the next); the last
six are slow in the ways the diagnosis rules must recognise (idle-conn opens a connection it
never uses in every job; fresh-body copies every body into memory mapped anew for it, as an
allocator whose mmap threshold lies below the body does; fresh-later does so only from its
process's fourth job on, a process that changes allocator mode in the middle of its life);
no-bare has no calibration loop, as a driver written before it).

For the behaviour matrix, the reference keeps http.client's ways: its timeout bounds each read,
not the request (a trickled body never times out), and it forwards the job's headers on every
redirect, to any origin. careful keeps a deadline on the whole request (the socket is shut down
when it passes) and drops the credentials headers on a redirect to another origin; lenient takes
what comes: no timeout at all, and a body that ends early as complete (the short 200 of
psf/requests#4956). When a kept connection drops a request unanswered, careful sends it again
once on a new connection if its method is idempotent (RFC 9110 §9.2.2), the reference reports
the error, and eager sends any request again, a POST too (the silent retry reported of OkHttp);
eager also repeats a POST with its body after a 303. careful and lenient decode gzip (a chain
of encodings too): careful stops past 64 MiB decoded, lenient decodes it all into memory;
lenient also lifts http.client's limits on a head (a line of 64 KiB, 100 fields), takes any TLS
certificate (it checks neither the chain nor the name), and takes a gzip stream cut short as
what it decoded; careful reports the cut stream as an error. careful connects as RFC 8305 asks
(happy_connect): the next address of a host name 250 ms after the last one tried, while none has
answered; the reference tries them one after another, each for the whole timeout
(socket.create_connection), and lenient waits for the first one as long as the kernel does.

careful and pool-one keep up to `concurrency` requests in flight (threads): careful with a client
(its own connections) a thread, pool-one through one client whose single connection slot every
origin shares, so a request waits for the one before it, whatever its origin (a pool of one).
The option `recommended` gives the reference a deadline on the whole request (RECOMMENDS =
deadline), or keeps http.client's timeout on every read (per-read).

It is written for clarity, not speed, and is never run unless a test or a user asks for it.
"""

from __future__ import annotations

import errno
import hashlib
import http.client
import json
import mmap
import os
import select
import socket
import ssl
import sys
import threading
import time
import uuid
import zlib
from http.cookies import SimpleCookie
from urllib.parse import urlencode, urljoin, urlsplit

MODE = sys.argv[1] if len(sys.argv) > 1 else "reference"
RECOMMENDS = sys.argv[2] if len(sys.argv) > 2 else None
# accept_encoding = "library": http.client's own Accept-Encoding (identity), which every job
# without accept_gzip sends already
KNOWN_OPTIONS: set[str] = {"accept_encoding"} | ({"recommended"} if RECOMMENDS else set())
PARALLEL_MODES = {"careful", "pool-one"}
FRESH_LATER_FROM = 3   # fresh-later: the job (counted from 0 in the process) whose bodies are first mapped anew
jobs_begun = 0         # the jobs this process was given


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


class Client:
    """One http.client connection per origin, reused while keep_alive is on."""

    def __init__(self, job: dict):
        global jobs_begun
        self.job = job
        self.index, jobs_begun = jobs_begun, jobs_begun + 1
        self.conns: dict[tuple, http.client.HTTPConnection] = {}
        self.cookies: dict[str, str] = {}
        self.ssl = ssl.create_default_context(cafile=job["tls_ca"]) if job.get("tls_ca") else None
        if MODE == "lenient" and self.ssl is not None:  # any certificate: neither its chain nor its name checked
            self.ssl.check_hostname = False
            self.ssl.verify_mode = ssl.CERT_NONE
        self.live_sock: socket.socket | None = None  # the socket of the request under way

    def _conn(self, url) -> http.client.HTTPConnection:  # noqa: ANN001
        key = (url.scheme, url.hostname, url.port)
        conn = self.conns.get(key)
        if conn is None:
            timeout = None if MODE == "lenient" else self.job.get("timeout_s", 60)
            if url.scheme == "https":
                conn = http.client.HTTPSConnection(url.hostname, url.port, timeout=timeout, context=self.ssl)
            elif MODE == "careful":
                conn = HappyConnection(url.hostname, url.port, timeout=timeout)
            else:
                conn = http.client.HTTPConnection(url.hostname, url.port, timeout=timeout)
            self.conns[key] = conn
        return conn

    def request(self, entry: dict) -> tuple[int, bytes | None, int]:
        if MODE == "planted":
            planted_slow_path()
        method, url = entry["method"], entry["url"]
        for _ in range(20):
            status, body, size, location = self._once_retried(method, url, entry)
            if entry.get("follow_redirects") and status in (301, 302, 303, 307, 308) and location:
                if MODE == "redirect-new-conn":
                    self.close()  # a client that opens a new connection for every hop
                    self.conns.clear()
                next_url = urljoin(url, location)
                if MODE == "careful" and origin(next_url) != origin(url):
                    entry = {**entry, "headers": {k: v for k, v in entry.get("headers", {}).items()
                                                  if k.lower() not in CREDENTIALS}}
                url = next_url
                if MODE != "eager" and (status == 303 or (status in (301, 302) and method == "POST")):
                    method, entry = "GET", {k: v for k, v in entry.items() if k not in ("form", "body_file")}
                continue
            return status, body, size
        raise RuntimeError("too many redirects")

    def _once_retried(self, method: str, url: str, entry: dict):  # noqa: ANN201
        """_once, sent again on a new connection when a kept one dropped it unanswered (careful:
        idempotent methods alone; eager: any)."""
        parts = urlsplit(url)
        reused = self._conn(parts).sock is not None
        try:
            return self._once(method, url, entry)
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            if not reused or not (MODE == "eager" or (MODE == "careful" and method in IDEMPOTENT)):
                raise
            self.conns.pop((parts.scheme, parts.hostname, parts.port)).close()
            return self._once(method, url, entry)

    def _once(self, method: str, url: str, entry: dict):  # noqa: ANN201
        parts = urlsplit(url)
        headers = dict(entry.get("headers", {}))
        body = None
        if "form" in entry:
            if entry.get("form_encoding") == "multipart":
                boundary = uuid.uuid4().hex
                chunks = [f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'
                          for k, v in entry["form"].items()]
                body = ("".join(chunks) + f"--{boundary}--\r\n").encode()
                headers["Content-Type"] = f"multipart/form-data; boundary={boundary}"
            else:
                body = urlencode(entry["form"]).encode()
                headers["Content-Type"] = "application/x-www-form-urlencoded"
        elif "body_file" in entry:
            with open(entry["body_file"], "rb") as f:
                body = f.read()
            headers["Content-Type"] = entry.get("content_type", "application/octet-stream")
        if self.job.get("cookies") and self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if not self.job.get("keep_alive", True):
            headers["Connection"] = "close"
        if self.job.get("accept_gzip"):
            headers["Accept-Encoding"] = "gzip"
        path = parts.path + ("?" + parts.query if parts.query else "")
        conn = self._conn(parts)
        if MODE in ("nagle", "expect-stall") and body:
            self._two_writes(conn, method, path, headers, body)
        else:
            conn.request(method, path, body=body, headers=headers)
        self.live_sock = conn.sock  # careful's deadline shuts it down (http.client drops conn.sock on a close)
        response = conn.getresponse()
        if self.job.get("cookies"):
            for value in response.headers.get_all("Set-Cookie") or []:
                for name, morsel in SimpleCookie(value).items():
                    self.cookies[name] = morsel.value
        digest = hashlib.sha256()
        if entry.get("sink") == "file" and MODE == "buffer-file":
            data = response.read()  # "streams" to the file, but holds the whole body first
            with open(entry["sink_path"], "wb") as out:
                out.write(data)
            digest.update(data)
            size, data = len(data), None
        elif entry.get("sink") == "file":
            size = 0
            with open(entry["sink_path"], "wb") as out:
                while chunk := response.read(1 << 16):
                    out.write(chunk)
                    digest.update(chunk)
                    size += len(chunk)
            data = None
        elif MODE == "lenient":
            try:
                data = response.read()
            except http.client.IncompleteRead as exc:  # a body that ended early, taken as it came
                data = exc.partial
            size = len(data)
        else:
            data = response.read()
            size = len(data)
            if size and (MODE == "fresh-body" or (MODE == "fresh-later" and self.index >= FRESH_LATER_FROM)):
                with mmap.mmap(-1, size) as fresh:  # a page fault for every 4 KB, every request
                    fresh.write(data)
        if self.job.get("accept_gzip") and data is not None:
            data = decoded(data, response.getheader("Content-Encoding") or "")
            size = len(data)
        if response.will_close or not self.job.get("keep_alive", True) or MODE == "no-reuse":
            conn.close()
            self.conns.pop((parts.scheme, parts.hostname, parts.port), None)
        return response.status, data if data is not None else digest, size, response.getheader("Location")

    def close(self) -> None:
        for conn in self.conns.values():
            conn.close()

    @staticmethod
    def _two_writes(conn, method: str, path: str, headers: dict, body: bytes) -> None:  # noqa: ANN001
        """Headers and body in two writes: with Nagle on (nagle), or after waiting for a
        '100 Continue' that this client never reads (expect-stall: it waits 1 s, like libcurl)."""
        if conn.sock is None:
            conn.connect()
        if MODE == "nagle":
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 0)
        conn.putrequest(method, path, skip_accept_encoding=True)
        if MODE == "expect-stall":
            headers = {**headers, "Expect": "100-continue"}
        for name, value in {**headers, "Content-Length": str(len(body))}.items():
            conn.putheader(name, value)
        conn.endheaders()
        if MODE == "expect-stall":
            time.sleep(1.0)
        conn.send(body)


ATTEMPT_DELAY_S = 0.25  # RFC 8305 §5's default Connection Attempt Delay


def happy_connect(host: str, port: int, timeout: float | None) -> socket.socket:
    """A connected socket to host:port, its addresses tried as RFC 8305 §5 asks: in the resolver's
    order, the next one started ATTEMPT_DELAY_S after the last (at once when one fails) while none
    has connected; the first to connect wins, the others are closed."""
    addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    deadline = time.monotonic() + (timeout or 60.0)
    pending: dict[socket.socket, tuple] = {}
    failures: list[str] = []
    next_at = time.monotonic()
    try:
        while True:
            now = time.monotonic()
            if addresses and (now >= next_at or not pending):
                family, kind, proto, _, address = addresses.pop(0)
                sock = socket.socket(family, kind, proto)
                sock.setblocking(False)
                err = sock.connect_ex(address)
                if err in (0, errno.EINPROGRESS):
                    pending[sock] = address
                else:
                    failures.append(f"{address[0]}: {os.strerror(err)}")
                    sock.close()
                next_at = now + ATTEMPT_DELAY_S
                continue
            if not pending:
                raise ConnectionError(f"no address of {host} answered: {'; '.join(failures)}")
            if now >= deadline:
                raise TimeoutError(f"no address of {host} answered within {timeout} s")
            until = min(deadline, next_at) if addresses else deadline
            _, writable, _ = select.select([], list(pending), [], max(0.0, until - now))
            for sock in writable:
                address = pending.pop(sock)
                err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if err == 0:
                    sock.setblocking(True)
                    sock.settimeout(timeout)
                    return sock
                failures.append(f"{address[0]}: {os.strerror(err)}")
                sock.close()
                next_at = time.monotonic()  # a failed attempt: the next one at once
    finally:
        for sock in pending:
            sock.close()


class HappyConnection(http.client.HTTPConnection):
    """http.client's connection, connected by happy_connect."""

    def connect(self) -> None:
        self.sock = happy_connect(self.host, self.port, self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


GZIP_MODES = {"careful", "lenient"}
DECODED_LIMIT = 64 << 20  # careful's limit on a decoded body


def decoded(data: bytes, encodings: str) -> bytes:
    """The body with its Content-Encoding (a list, the last applied first) undone."""
    for coding in reversed([c.strip().lower() for c in encodings.split(",") if c.strip()]):
        if coding != "gzip":
            raise ValueError(f"unknown Content-Encoding {coding!r}")
        if MODE == "careful":
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            data = inflater.decompress(data, DECODED_LIMIT + 1)
            if len(data) > DECODED_LIMIT:
                raise ValueError(f"the decoded body passed careful's limit of {DECODED_LIMIT >> 20} MiB")
            if not inflater.eof:
                raise ValueError("the gzip stream ended before its end: the body is truncated")
        else:  # lenient: all of it into memory, and a stream cut short as what it gave
            data = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data)
    return data


if MODE == "lenient":  # no limit on a head: a line of any length, any number of fields
    http.client._MAXLINE = 1 << 30  # type: ignore[attr-defined]
    http.client._MAXHEADERS = 1 << 30  # type: ignore[attr-defined]


CREDENTIALS = {"authorization", "cookie", "proxy-authorization"}
IDEMPOTENT = {"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"}


def origin(url: str) -> tuple:
    parts = urlsplit(url)
    return parts.scheme, parts.hostname, parts.port


def with_deadline(client: Client, entry: dict, seconds: float):  # noqa: ANN201
    """careful: the request whole within `seconds`, however its bytes arrive: when the deadline
    passes, the socket of the request under way is shut down, so that the read waiting on it fails."""
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        sock = getattr(client, "live_sock", None)
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    timer = threading.Timer(seconds, expire)
    timer.start()
    try:
        return client.request(entry)
    except Exception:
        if expired.is_set():
            raise TimeoutError(f"the request's deadline of {seconds} s passed") from None
        raise
    finally:
        timer.cancel()


KEPT: list[Client] = []  # keep-conns: the one client, never closed


def planted_slow_path() -> int:
    """A deliberate busy function on every request (mode `planted`): the CPU profile's
    differential must find it and name it."""
    x = 0
    for i in range(int(os.environ.get("FAKE_PLANTED_LOOPS", "20000"))):
        x ^= i * 7
    return x


def deadline_s(job: dict) -> float | None:
    """The deadline on the whole request, where this client keeps one: careful always (when the
    job names a time limit), the reference when the job asks for its recommendation and that is
    a deadline."""
    recommended = (job.get("options") or {}).get("recommended") and RECOMMENDS == "deadline"
    return job.get("timeout_s") if MODE == "careful" or recommended else None


def do_job(job: dict) -> tuple[list, list]:
    if MODE == "keep-conns":
        if not KEPT:
            KEPT.append(Client(job))
        client = KEPT[0]
        client.job = job
    else:
        client = Client(job)
    idle = None
    if MODE == "idle-conn" and job["requests"]:
        first = urlsplit(job["requests"][0]["url"])
        idle = socket.create_connection((first.hostname, first.port))  # opened, never used
    work = []
    for r, entry in enumerate(job["requests"]):
        repeat = entry.get("repeat", 1)
        if MODE == "lazy" and not job["verify"]:
            repeat = max(1, repeat // 2)  # does half the work once the clock runs
        work += [(r, entry)] * repeat
    deadline = deadline_s(job)

    def one(r: int, entry: dict, by: Client) -> tuple[dict | None, dict | None]:
        try:
            if deadline is not None:  # a deadline only when named
                status, body, size = with_deadline(by, entry, deadline)
            else:
                status, body, size = by.request(entry)
        except Exception as exc:  # report, never crash: the lab counts errors
            return None, {"r": r, "message": f"{type(exc).__name__}: {exc}"}
        item = {"r": r, "status": status, "bytes": size, "http": "1.1"}
        if job["verify"]:
            if isinstance(body, bytes):
                if MODE == "wrong-body" and body:
                    body = bytes([body[0] ^ 0xFF]) + body[1:]  # a client that corrupts bodies
                item["sha256"] = hashlib.sha256(body).hexdigest()
            else:
                item["sha256"] = body.hexdigest()
        return item, None

    if job.get("concurrency", 1) > 1:
        outcomes = in_flight(job, work, one, client)
    else:
        outcomes = [one(r, entry, client) for r, entry in work]
    responses = [item for item, _ in outcomes if item is not None]
    errors = [error for _, error in outcomes if error is not None]
    if MODE != "keep-conns":
        client.close()
    if idle is not None:
        idle.close()
    return responses, errors


def in_flight(job: dict, work: list, one, shared: Client) -> list:  # noqa: ANN001
    """The job's requests, up to `concurrency` at once (threads, started in the job's order):
    careful gives each thread a client of its own; pool-one sends every request through the one
    shared client, one at a time, whatever its origin."""
    from concurrent.futures import ThreadPoolExecutor

    local = threading.local()
    slot = threading.Lock()
    clients: list[Client] = []

    def run(item: tuple) -> tuple:
        r, entry = item
        if MODE == "pool-one":
            with slot:
                return one(r, entry, shared)
        if not hasattr(local, "client"):
            local.client = Client(job)
            clients.append(local.client)
        return one(r, entry, local.client)

    with ThreadPoolExecutor(max_workers=job["concurrency"]) as pool:
        outcomes = list(pool.map(run, work))
    for c in clients:
        c.close()
    return outcomes


def unsupported_reason(job: dict) -> str | None:
    if job.get("http") != "1.1":
        return "http.client speaks HTTP/1.1 only"
    if job.get("concurrency", 1) > 1 and MODE not in PARALLEL_MODES:
        return "sequential only"
    if job.get("accept_gzip") and MODE not in GZIP_MODES:
        return "http.client does not decode gzip"
    for name, value in (job.get("options") or {}).items():
        if value is not None and name not in KNOWN_OPTIONS:
            return f"option {name} is not supported"
    return None


BARE: list[Client] = []  # the calibration loop's client, built by its first round and kept


def bare_round(job: dict) -> None:
    """One round of the calibration loop (docs/driver-protocol.md §5): the job's requests on the
    kept client, counted, timed by this process's clock."""
    reason = unsupported_reason(job)
    if reason:
        send({"type": "unsupported", "reason": reason})
        return
    if not BARE:
        BARE.append(Client(job))
    client = BARE[0]
    client.job = job
    done = failed = 0
    t0 = time.perf_counter()
    for entry in job["requests"]:
        for _ in range(entry.get("repeat", 1)):
            try:
                client.request(entry)
                done += 1
            except Exception:  # counted, never fatal
                failed += 1
    send({"type": "bare", "wall_s": time.perf_counter() - t0, "requests": done, "errors": failed})


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        kind = message["type"]
        if kind == "hello":
            send({"type": "hello", "protocol": 1,
                  "versions": {"python": sys.version.split()[0], "http.client": "stdlib"}})
        elif kind == "bare" and MODE != "no-bare":
            bare_round(message["job"])
        elif kind == "job":
            while BARE:  # a job closes the calibration loop's client
                BARE.pop().close()
            job = message["job"]
            reason = unsupported_reason(job)
            if reason:
                send({"type": "unsupported", "reason": reason})
                continue
            if MODE == "garbage":
                print("Connecting to the server...", flush=True)
                continue
            send({"type": "ready"})
        elif kind == "go":
            if MODE == "crash":
                sys.stderr.write("fake driver: crashing on purpose\n")
                os._exit(3)
            if MODE == "hang":
                time.sleep(3600)
            if MODE == "flood":  # one line longer than the lab takes (protocol.MAX_LINE, 64 MiB)
                for _ in range(65):
                    sys.stdout.write("x" * (1024 * 1024))
                sys.stdout.write("\n")
                sys.stdout.flush()
            if MODE == "sleep":
                time.sleep(float(os.environ.get("FAKE_SLEEP_S", "1.0")))
                send({"type": "done"})
                send({"type": "report", "responses": [], "errors": []})
                continue
            responses, errors = do_job(job)
            send({"type": "done"})
            send({"type": "report", "responses": responses, "errors": errors})
        else:
            send({"type": "error", "message": f"unknown message type {kind!r}"})


if __name__ == "__main__":
    main()
