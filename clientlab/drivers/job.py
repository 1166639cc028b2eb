"""Turning a scenario into a driver job, and into what verification should find.

The job is what the driver sees (docs/driver-protocol.md §3); the expectations stay with the lab.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from clientlab.errors import LabError, LabInputError, quote
from clientlab.scenario import Scenario, path_problem
from clientlab.servers.side import Endpoint

PROTOCOL_VERSION = 1


@dataclass(frozen=True)
class Expectation:
    """What a correct client produces for one request entry."""

    repeat: int
    status: int
    final_path: str          # path of the resource whose body ends up in the response
    redirect_hops: int       # redirects the server must see per repetition (followed)
    form_kind: str | None    # "urlencoded" / "multipart" when a form is posted
    form_sha256: str | None
    upload_size: int | None
    sink_path: Path | None
    gzip_asked: bool


@dataclass
class PlannedJob:
    """A job and its expectations; `files` are scratch files to remove afterwards."""

    job: dict
    expectations: list[Expectation]
    files: list[Path] = field(default_factory=list)

    @property
    def server_requests(self) -> int:
        """Requests the server must see in one trial (redirect hops included)."""
        return sum(e.repeat * (1 + e.redirect_hops) for e in self.expectations)

    @property
    def http_label(self) -> str:
        """The HTTP version every response must have, as drivers report it."""
        return {"2": "2", "h2c": "2", "3": "3"}.get(self.job["http"], "1.1")

    @property
    def server_version(self) -> str:
        """The version the bench server must record for every request (its `versions` key)."""
        return {"2": "HTTP/2.0", "3": "HTTP/3.0"}.get(self.http_label, "HTTP/1.1")


def form_digest(fields: dict[str, str]) -> str:
    """The bench server's canonical digest of form fields (docs/bench-server.md)."""
    digest = hashlib.sha256()
    for name, value in sorted(fields.items()):
        digest.update(name.encode() + b"\0" + value.encode() + b"\n")
    return digest.hexdigest()


def _redirect_target(path: str) -> tuple[str, int]:
    """For /redirect/{n}?to=P: (P, n); for anything else (path, 0)."""
    parts = urlsplit(path)
    segments = parts.path.strip("/").split("/")
    if len(segments) == 2 and segments[0] == "redirect" and segments[1].isdigit():
        target = parse_qs(parts.query).get("to", ["/"])[0]
        return target, int(segments[1])
    return path, 0


def same_origin_url(base: str, path: str) -> str:
    """`base + path`, checked to stay on the lab's server `base` (scheme://host:port) however a
    client reads it: the path as the scenario rules take it (path_problem), and the URL as parsed
    having exactly the base's scheme and host. Raises LabInputError otherwise."""
    url = base + path
    problem = path_problem(path)
    parts, origin = urlsplit(url), urlsplit(base)
    if problem is None and (parts.scheme, parts.netloc) != (origin.scheme, origin.netloc):
        problem = f"reads as {parts.scheme}://{parts.netloc}"
    if problem:
        raise LabInputError(f"the URL {quote(url, 200)} would leave the lab's server {base}: it {problem}")
    return url


def _upload_file(scratch: Path, size: int) -> Path:
    """A deterministic upload body of `size` bytes (written once, reused)."""
    path = scratch / f"upload-{size}.bin"
    if not path.exists() or path.stat().st_size != size:
        chunk = bytes(range(256)) * 4096  # 1 MiB
        with open(path, "wb") as out:
            left = size
            while left > 0:
                out.write(chunk[: min(left, len(chunk))])
                left -= len(chunk)
    return path


def _port(scenario: Scenario, endpoint: Endpoint) -> int:
    """The server port the scenario's requests go to: plain, TLS, or HTTP/3's UDP port."""
    client = scenario.client
    if client.http != "3":
        return endpoint.https_port if client.scheme == "https" else endpoint.http_port
    if not endpoint.h3_port:
        raise LabError(f"scenario {scenario.name} asks for HTTP/3, and this server side has no HTTP/3 (UDP) "
                       "port: a network profile whose delay comes from the TCP latency proxy carries no UDP (use a "
                       "link = \"relay\" profile such as lossy-1pct), or the bench server predates HTTP/3 (./setup.sh)")
    return endpoint.h3_port


def plan(scenario: Scenario, endpoint: Endpoint, scratch: Path, verify: bool, tag: str) -> PlannedJob:
    """Build the job for one trial. `tag` keeps scratch file names of concurrent cells apart."""
    client = scenario.client
    base = f"{client.scheme}://{endpoint.host}:{_port(scenario, endpoint)}"
    requests, expectations, files = [], [], []
    for r, req in enumerate(scenario.requests):
        entry: dict = {"method": req.method, "url": same_origin_url(base, req.path), "repeat": req.repeat}
        if req.headers:
            entry["headers"] = dict(req.headers)
        if req.form is not None:
            entry["form"] = dict(req.form)
            entry["form_encoding"] = req.form_encoding
        if req.upload_size is not None:
            entry["body_file"] = str(_upload_file(scratch, req.upload_size))
            entry["content_type"] = req.content_type
        if req.follow_redirects:
            entry["follow_redirects"] = True
        elif _redirect_target(req.path)[1] or 300 <= req.expect_status < 400:
            # only where the answer is a redirect: elsewhere the driver keeps its library's default
            # (axios' default redirect layer, for one, costs time a user of axios pays)
            entry["follow_redirects"] = False
        sink_path = None
        if req.sink == "file":
            sink_path = scratch / f"sink-{tag}-{r}.bin"
            entry["sink"] = "file"
            entry["sink_path"] = str(sink_path)
            files.append(sink_path)
        requests.append(entry)
        final, hops = _redirect_target(req.path) if req.follow_redirects else (req.path, 0)
        expectations.append(
            Expectation(
                repeat=req.repeat,
                status=req.expect_status,
                final_path=urlsplit(final).path,
                redirect_hops=hops,
                form_kind=req.form_encoding if req.form is not None else None,
                form_sha256=form_digest(req.form) if req.form is not None else None,
                upload_size=req.upload_size,
                sink_path=sink_path,
                gzip_asked=client.accept_gzip and "gzip=1" in req.path,
            )
        )
    job = {
        "scenario": scenario.name,
        "verify": verify,
        "http": client.http,
        "tls_ca": str(endpoint.ca_file) if client.scheme == "https" else None,
        "concurrency": client.concurrency,
        "keep_alive": client.keep_alive,
        "cookies": client.cookies,
        "accept_gzip": client.accept_gzip,
        "timeout_s": client.timeout_s,
        "options": dict(client.options),
        "requests": requests,
    }
    return PlannedJob(job=job, expectations=expectations, files=files)


def required_capabilities(planned: PlannedJob) -> list[str]:
    """Capabilities a driver's manifest must claim to be given this job."""
    job, needed = planned.job, set()
    if any(r["url"].startswith("https:") for r in job["requests"]):
        needed.add("tls")
    if job["http"] == "1.1":
        needed.add("http1")
    if job["http"] == "2":
        needed.add("http2")
    if job["http"] == "h2c":
        needed.add("h2c")
    if job["http"] == "3":
        needed.add("http3")
    if job["cookies"]:
        needed.add("cookies")
    if job["accept_gzip"]:
        needed.add("gzip")
    if job["concurrency"] > 1:
        needed.add("parallel")
    if not job["keep_alive"]:
        needed.add("keepalive_off")
    elif planned.server_requests > 1:  # a single request has no connection to reuse
        needed.add("keepalive")
    for r in job["requests"]:
        if r.get("follow_redirects"):
            needed.add("redirects")
        if "form" in r:
            needed.add("form" if r["form_encoding"] == "urlencoded" else "multipart")
        if "body_file" in r:
            needed.add("upload")
        if r.get("sink") == "file":
            needed.add("sink_file")
    return sorted(needed)
