"""Why is a client slow? Rules that read a cell's stored figures and state findings.

Each rule looks at what the bench server recorded in the cell's median trial (connections,
TLS handshakes, versions, how requests arrived) and at the lab's resource figures, and returns
a Finding with its evidence and the fix, or nothing. Rules read only stored results, so they
can be run again on any stored run (`clientlab diagnose RUN`).

The DNS rule needs the network lab (`--net`), whose DNS counts the lookups; the connection-cap
rule needs a server cap (a network profile's `max_conns`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from clientlab.analysis.figures import PAGE, mapped_anew
from clientlab.record import Cell, CellFigures, Finding, ServerSummary
from clientlab.store.fingerprint import digest

MIN_REQUESTS = 10          # below this, ratios of connections to requests say little
BIG_BODY = 8_000_000       # bodies from this size on are worth watching in memory


@dataclass(frozen=True)
class CellView:
    """What the rules see of a cell: its client settings, figures and its driver's other cells."""

    driver: str
    scenario: str
    client: dict
    sinks: list[str]        # "memory" / "file": where the scenario's bodies go
    figures: CellFigures
    baseline_rss_kb: int    # the driver's smallest peak RSS in this run (its footprint without bodies)
    over_http3: Cell | None = None   # the run's cell of the same driver and work over HTTP/3, if any

    @property
    def server(self) -> ServerSummary:
        return self.figures.server_seen


Rule = Callable[[CellView], Finding | None]
RULES: list[Rule] = []


def rule(fn: Rule) -> Rule:
    RULES.append(fn)
    return fn


@rule
def no_connection_reuse(cell: CellView) -> Finding | None:
    s = cell.server
    requests, conns = s.requests, s.connections
    if not cell.client.get("keep_alive", True) or requests < MIN_REQUESTS or conns < 0.9 * requests:
        return None
    if (s.cap or {}).get("idle_closed", 0) >= 0.5 * conns:
        return None  # the server closed them to make room: the connection-cap rule says why
    if s.quic:
        cost = "a QUIC handshake"
    else:
        cost = f"a TCP connect{' and a TLS handshake' if s.tls.get('full') else ''}"
    return Finding(
        "no-connection-reuse", "warn", "No connection reuse",
        f"{requests} requests came on {conns} connections although keep-alive was allowed: every request "
        f"paid for {cost}.",
        "Keep one client (session, handle, agent) for all requests so that its connection pool is reused.",
    )


@rule
def nagle_stall(cell: CellView) -> Finding | None:
    s = cell.server
    stalled, requests = s.stalled_requests, s.requests
    gap = s.stall_gap_ms_median
    # Nagle waits for the peer's delayed ACK on every such request: a stall that hits a few requests
    # of many is the scheduler on a busy machine, not Nagle
    if not requests or stalled < max(2, 0.25 * requests) or not 30 <= gap < 500:
        return None
    return Finding(
        "nagle-delayed-ack", "warn", "Nagle / delayed-ACK stall",
        f"{stalled} of {requests} requests reached the server in two or more pieces with a pause of "
        f"{gap:.0f} ms (median) in between: the client wrote headers and body separately, Nagle held the "
        f"second write until the server's delayed ACK.",
        "Send each request in one write (e.g. an urlencoded body instead of a multipart form built in "
        "pieces), or set TCP_NODELAY on the client's socket.",
    )


@rule
def expect_continue_stall(cell: CellView) -> Finding | None:
    s = cell.server
    stalled = s.expect_stalled
    if not stalled:
        return None
    return Finding(
        "expect-100-continue", "warn", "1-second stall on Expect: 100-continue",
        f"{stalled} request(s) sent 'Expect: 100-continue' and held their body back for about a second "
        f"(longest pause {s.max_read_gap_ms:.0f} ms).",
        "Send 'Expect:' (empty) to switch it off, or answer 100 Continue on the server.",
    )


@rule
def more_connections_than_the_server_takes(cell: CellView) -> Finding | None:
    s = cell.server
    cap = s.cap or {}
    if not cap.get("waited"):
        return None
    return Finding(
        "connections-over-server-cap", "warn", "More connections than the server takes",
        f"The server serves {cap['limit']} connections at once; {cap['waited']} of the client's {s.connections} "
        f"connections waited for a slot ({cap['wait_ms']:.0f} ms in all), and the server closed {cap['idle_closed']} "
        "idle keep-alive connections to make room.",
        "Open no more connections to a host than it serves at once (e.g. CURLMOPT_MAX_HOST_CONNECTIONS), "
        "and reuse them; or use HTTP/2, which multiplexes every request over one connection.",
    )


@rule
def idle_connections(cell: CellView) -> Finding | None:
    s = cell.server
    idle, conns = s.idle_connections, s.connections
    if not idle:
        return None
    cost = "a TCP connect" + (" and a TLS handshake" if s.handshakes else "")
    if s.versions.get("HTTP/2.0") and cell.client.get("concurrency", 1) > 1:
        return Finding(
            "idle-connections", "warn", "Parallel HTTP/2 requests opened connections they never used",
            f"{idle} of the client's {conns} connections carried no request: it opened a connection for each "
            f"parallel request before it knew that one HTTP/2 connection carries them all; each cost {cost}.",
            "Let the first connection finish its handshake before the parallel requests start (one request "
            "first, or the client's setting to wait for a pending HTTP/2 connection instead of dialing another).",
        )
    return Finding(
        "idle-connections", "warn", "Connections opened and never used",
        f"{idle} of the client's {conns} connections carried no request: each cost {cost} and a server slot "
        "for nothing (a client that dials for a waiting request and then serves it on a connection that "
        "became free keeps the new one unused).",
        "Open connections only when a request needs one: turn off pre-connecting or speculative dialing, "
        "size the pool to the parallelism, and do not open a connection to probe the server.",
    )


@rule
def connections_kept_across_jobs(cell: CellView) -> Finding | None:
    kept = cell.server.kept_open
    if not kept:
        return None
    return Finding(
        "connections-kept-across-jobs", "warn", "Connections kept open from one job to the next",
        f"{kept} connection(s) opened in earlier jobs were still open when this trial ended: the driver does "
        "not close its client after a job (with a fresh server port per trial they carry no request, so the "
        "cell is not failed for it).",
        "Close the client (its connection pool) at the end of every job, after the report, as the driver "
        "protocol asks: every trial then starts cold in the same way.",
    )


@rule
def dns_lookup_per_request(cell: CellView) -> Finding | None:
    s = cell.server
    lookups = (s.dns or {}).get("by_type", {}).get("A", 0)
    requests = s.requests
    if requests < MIN_REQUESTS or lookups < 0.9 * requests:
        return None
    return Finding(
        "dns-lookup-per-request", "warn", "A DNS lookup per request",
        f"The lab DNS answered {lookups} A queries for {requests} requests to "
        f"{(s.dns or {}).get('names', 1)} host name(s): the client resolved the name again every time.",
        "Keep one client so that its DNS cache (and its connections) survive between requests, share the DNS "
        "cache between handles (libcurl share with CURL_LOCK_DATA_DNS), or run a local cache (e.g. dnsmasq).",
    )


@rule
def tls_full_handshake_per_request(cell: CellView) -> Finding | None:
    s = cell.server
    full, requests = s.tls.get("full", 0), s.requests
    if requests < MIN_REQUESTS or full < 0.9 * requests:
        return None
    return Finding(
        "tls-full-handshake-per-request", "warn", "A full TLS handshake per request",
        f"{full} full TLS handshakes (and {s.tls.get('resumed', 0)} resumed) for {requests} requests.",
        "Reuse connections; where a new one is needed, keep the TLS session cache (e.g. a libcurl share "
        "handle with CURL_LOCK_DATA_SSL_SESSION) so that sessions resume.",
    )


@rule
def redirect_new_connections(cell: CellView) -> Finding | None:
    s = cell.server
    redirects = int(s.statuses.get("302", 0))
    requests, conns = s.requests, s.connections
    if redirects < MIN_REQUESTS or not cell.client.get("keep_alive", True) or conns < 0.5 * requests:
        return None
    return Finding(
        "redirect-new-connections", "warn", "Redirects open new connections",
        f"{redirects} redirects on the same host, yet {conns} connections for {requests} requests.",
        "Follow redirects with the same client so the hop reuses the open connection.",
    )


@rule
def http2_offered_not_used(cell: CellView) -> Finding | None:
    s = cell.server
    # only HTTP/1.1 requests: a client that spoke HTTP/2 or HTTP/3 used what it was offered
    if cell.client.get("concurrency", 1) <= 1 or s.handshakes <= 1 or set(s.versions) - {"HTTP/1.1"}:
        return None
    return Finding(
        "http2-not-used", "info", "HTTP/2 offered and not used",
        f"The server offered h2 by ALPN; the client made {s.requests} parallel requests in HTTP/1.1 "
        f"on {s.connections} connections.",
        "Ask for HTTP/2 (e.g. CURL_HTTP_VERSION_2TLS): one connection multiplexes the requests and skips "
        "a handshake and a TCP slow start per connection.",
    )


@rule
def http3_offered_not_used(cell: CellView) -> Finding | None:
    """Only where the run measured the same work over HTTP/3 too, and it was faster there beyond
    both cells' noise: the lab's jobs name their version, so not upgrading by Alt-Svc is the
    client doing as asked; the finding is that asking for HTTP/3 would have paid."""
    s, h3 = cell.server, cell.over_http3
    versions = set(s.versions)
    if h3 is None or not s.alt_svc or not versions or versions - {"HTTP/1.1", "HTTP/2.0"}:
        return None
    mine, theirs = cell.figures, h3.figures
    noise = max(0.05, (mine.precision or 0) + (theirs.precision or 0))
    if theirs.throughput <= mine.throughput * (1 + noise):
        return None
    version = "HTTP/2" if "HTTP/2.0" in versions else "HTTP/1.1"
    return Finding(
        "http3-not-used", "info", "HTTP/3 offered and not used",
        f"The server offered HTTP/3 (Alt-Svc: {s.alt_svc}); this client speaks it, and in this run the same "
        f"work over HTTP/3 measured {_rate(theirs)} against {_rate(mine)} over {version} "
        f"({theirs.throughput / mine.throughput:.2f}×).",
        "Ask for HTTP/3 (with the client's HTTP/3 support, or by letting it follow Alt-Svc): on this network "
        "it does the same work faster.",
    )


@rule
def multiplexing_unused(cell: CellView) -> Finding | None:
    s = cell.server
    versions = set(s.versions)
    concurrency, requests = cell.client.get("concurrency", 1), s.requests
    carrying = s.carrying_connections
    in_flight = min(concurrency, requests)
    if not versions or versions - {"HTTP/2.0", "HTTP/3.0"} or in_flight < 4 or carrying < max(2, in_flight / 2):
        return None
    version, handshake = ("HTTP/3", "a QUIC handshake") if s.quic else ("HTTP/2", "a TCP connect and TLS handshake")
    return Finding(
        "multiplexing-unused", "info", f"Parallel {version} requests on a connection each",
        f"Up to {concurrency} requests in flight came on {carrying} {version} connections: each paid {handshake} "
        f"and started its own congestion window, where one connection carries them all as streams.",
        f"Let the parallel requests share one {version} connection: wait for the pending connection instead of "
        "opening another (e.g. CURLOPT_PIPEWAIT), or send one request first.",
    )


@rule
def zero_rtt_unused(cell: CellView) -> Finding | None:
    s = cell.server
    tls, requests = s.tls, s.requests
    resumed = tls.get("resumed", 0)
    # 0-RTT is for idempotent requests: a cell that sent bodies is right not to use it
    if not s.quic or resumed < 2 or tls.get("early_data", 0) or s.req_body_bytes or requests < resumed:
        return None
    return Finding(
        "zero-rtt-unused", "info", "QUIC sessions resumed without 0-RTT",
        f"{resumed} QUIC connections resumed a TLS session and none sent its request as 0-RTT data (the server "
        "accepts it): each GET waited a round trip for the handshake first.",
        "Where the client offers it, send idempotent requests as 0-RTT data on resumed connections (e.g. quic-go's "
        "http3.MethodGet0RTT with a TLS session cache); better still, keep the connection.",
    )


def _rate(figures: CellFigures) -> str:
    return f"{figures.throughput:,.1f} {figures.unit} (±{(figures.precision or 0):.0%})"


@rule
def whole_body_in_memory(cell: CellView) -> Finding | None:
    s = cell.server
    requests = s.requests
    if not requests:
        return None
    body = s.resp_body_bytes / requests
    growth = ((cell.figures.peak_rss_kb or 0) - cell.baseline_rss_kb) * 1024
    if body < BIG_BODY or growth < 0.8 * body:
        return None
    copies = growth / body
    evidence = (f"Peak RSS grew {growth / 1e6:.0f} MB above the driver's footprint for {body / 1e6:.0f} MB "
                f"bodies ({copies:.1f}× the body).")
    if "file" in cell.sinks:
        # the lab checked that the body reached the file: "stream it to a file" would be no advice
        return Finding("whole-body-in-memory", "warn",
                       "Memory grew by the body's size although the body was streamed to a file", evidence,
                       "The body did reach the file, so the chunks read stay allocated until the runtime frees "
                       "them (a collector that runs late) or the library buffers the body before handing it "
                       "over: use the library's chunked read (a block or an iterator over the body) and keep no "
                       "chunk; in a collected runtime, smaller chunks or a collection between them keep memory "
                       "flat.")
    if copies >= 3:  # a growing buffer's doubling explains up to 2x; more means extra copies
        return Finding("whole-body-in-memory", "warn", f"About {copies:.0f} copies of each body in memory",
                       evidence, "Read the body once into one buffer (or stream it); avoid joins and re-decodes.")
    return None  # one body in memory is what a scenario with a memory sink asks for


@rule
def body_memory_from_the_kernel(cell: CellView) -> Finding | None:
    """A process that maps each large body afresh pays a page fault per 4 KB of it, every request.
    glibc serves blocks over its mmap threshold with mmap and raises the threshold only when such
    a block is freed: a buffer that grows past the size it was last freed at (grown, then shrunk
    to the body) is mapped anew every time. Whether a process is in that mode is settled early in
    its life (what it imported, how its first bodies arrived) and lasts it."""
    s, f = cell.server, cell.figures
    requests, faults = s.requests, f.page_faults
    if not requests or faults is None:
        return None
    body = s.resp_body_bytes / requests
    per_request = faults / requests
    if requests < MIN_REQUESTS or not mapped_anew(faults, requests, s.resp_body_bytes):
        return None
    system_us = (f.cpu_sys_s or 0.0) / requests * 1e6
    held = [m for m in f.modes or () if m.cause == "allocator"]
    glibc = not any("do not come from glibc's malloc" in n for n in f.notes or ())
    modes = (f" Held in each mode on purpose it ran at {held[0].throughput:,.0f} {f.unit} with bodies "
             f"on the heap and {held[1].throughput:,.0f} with bodies mapped anew." if len(held) == 2 else "")
    return Finding(
        "body-memory-from-the-kernel", "warn", "Each body's memory is taken anew from the kernel",
        f"{per_request:.0f} page faults a request ({per_request * PAGE / 1024:.0f} KB of fresh pages for a "
        f"{body / 1024:.0f} KB body), {system_us:.0f} µs of system CPU a request: the allocator maps the body's "
        "buffer and unmaps it again every time. Another process of the same program may keep its bodies on "
        "the heap (no faults, a fraction of the CPU): the mode is a process's, set early in its life." + modes,
        _fresh_pages_fix(cell.driver.split("-", 1)[0], glibc),
    )


def _fresh_pages_fix(language: str, glibc: bool) -> str:
    """The fix for bodies mapped anew in the runtime's own terms: glibc's tunables reach only the
    bodies that glibc's malloc serves, not Go's heap nor the JVM's."""
    if language == "go":
        return ("Go's runtime takes a large object's spans from the kernel and returns them when the heap "
                "shrinks: read bodies into one reused buffer (a bytes.Buffer kept across requests, or a "
                "sync.Pool), or stream them; GOGC or a GOMEMLIMIT-backed larger heap keeps spans mapped longer. "
                "glibc's malloc settings do not reach Go's heap.")
    if language in ("java", "kotlin"):
        return ("The JVM's heap, not glibc, holds the body: reuse a buffer or stream the body; a larger young "
                "generation (-Xmn) or a fixed heap (-Xms = -Xmx) keeps its pages mapped. glibc's malloc settings "
                "do not reach Java's heap.")
    if not glibc:
        return ("Reuse one buffer for bodies, or stream them: held in each mode by glibc's tunables this "
                "process took the same pages, so its bodies come from an allocator of its own.")
    return ("Reuse one buffer for bodies, or stream them; with glibc, a fixed MALLOC_MMAP_THRESHOLD_ and "
            "MALLOC_TRIM_THRESHOLD_ above the body size keep bodies on the heap (or GLIBC_TUNABLES' "
            "glibc.malloc.mmap_threshold and glibc.malloc.trim_threshold).")


def diagnose(cell: CellView) -> list[Finding]:
    return [f for f in (r(cell) for r in RULES) if f is not None]


def diagnose_run(cells: list[Cell]) -> dict[int, list[Finding]]:
    """Findings for every measured cell of a stored run, by cell id."""
    ok = [c for c in cells if c.measured]
    baselines: dict[str, int] = {}
    for c in ok:
        rss = c.figures.peak_rss_kb or 0
        baselines[c.driver] = min(baselines.get(c.driver, rss), rss)
    over_http3 = {_same_work(c): c for c in ok if c.client.get("http") == "3"}
    out = {}
    for c in ok:
        view = CellView(c.driver, c.scenario, dict(c.client), list(c.params.get("sinks") or []),
                        c.figures, baselines[c.driver], over_http3.get(_same_work(c)))
        out[c.id] = diagnose(view)
    return out


def _same_work(cell: Cell) -> str:
    """A cell's driver and work with its HTTP version left out (and a sweep value that is only
    the version), so that the cells of one work over two versions share it."""
    params = dict(cell.params)
    client = dict(params.get("client") or {})
    if params.get("value") == client.get("http"):
        params.pop("value", None)
    client.pop("http", None)
    params["client"] = client
    return digest([cell.driver, cell.scenario.split("[", 1)[0], params])
