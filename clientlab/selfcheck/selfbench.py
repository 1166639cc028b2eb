"""`clientlab selfbench`: is the lab fast enough to measure clients?

1. Bench server against nginx, side by side: both servers started on the same core (the
   server's core of the split placement), nginx with one worker; wrk (one thread, on the other
   core) GETs /bytes/1024 with keep-alive at 1, 10, 100, 1,000 and 10,000 connections, and h2load
   (TLS, HTTP/2, 100 streams per connection) at 1, 10 and 100 connections, against each server in
   turn, three times: medians of req/s and MB/s, their spread, the ratio (target >= 1.0x nginx),
   and each server's CPU per request. The bench server keeps every counter on as in a timed trial
   (trial records, per-request read events; record_digests off). Connection-heavy points get the
   limits they need (clientlab/measuring/limits.py). Then the memory each server holds per idle keep-alive
   connection, with 10,000 of them open.
   The drivers: get-small (sequential) and parallel-feeds (20 in flight) on every installed driver,
   measured the normal way: the fastest sequential and the fastest parallel driver's rates against
   the server's ceiling (target: the server at least 5x the fastest), and the bench server's CPU per
   request in those trials (the server's cgroup CPU, server["cpu_s"]) against the cheapest driver's
   CPU per request (target <= 1/5).
2. The lab's overhead on a 1-second trial: a test driver sleeps exactly 1 s between go and done;
   overhead = measured wall - 1 s, and the CPU the lab itself used meanwhile. Target: < 1 %.
   The spread of those ten 1 s trials (CV) is the floor of any wall-time figure.
3. The machine's noise floor: the same fixed CPU work timed ten times on the driver's core (CV,
   max/min, steal seen meanwhile); and the host's slow phases on that core (clientlab/measuring/hostprobe,
   sampled for 20 s): how much of the time the core's kernel work ran slow, and how slow.
4. Placements: one driver on get-small under split / shared / free — per-request time (the
   wake-up cost shows as the difference) and its spread over trials; the one with the smallest
   spread measures a client most repeatably on this machine.
These are benchmark figures to report; no test asserts them.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from clientlab import paths, scenario
from clientlab.analysis import stats
from clientlab.analysis.stats import StopRule
from clientlab.drivers import build as builder
from clientlab.drivers.manifest import Driver, load_manifest
from clientlab.drivers.protocol import DriverProcess
from clientlab.errors import LabError
from clientlab.measuring import affinity, limits, machine
from clientlab.runner import PLACEMENTS, CellResult, RunOptions, lab_run, pick_cpus, run_matrix, timed_phase
from clientlab.servers.bench import BenchServer
from clientlab.store import Store, open_store

WRK_REPORT = """
done = function(summary, latency, requests)
  io.write(string.format('{"requests": %d, "duration_us": %d, "bytes": %d, "errors": %d}\\n',
    summary.requests, summary.duration, summary.bytes,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status + summary.errors.timeout))
end
"""
SLEEP_S = 1.0
OVERHEAD_TRIALS = 10
SERVER_TARGET_RATIO = 5.0
OVERHEAD_TARGET = 0.01
NGINX_TARGET_RATIO = 1.0        # the bench server at least as fast as nginx (one worker, same core)
SERVER_CPU_TARGET = 1 / 5       # server CPU per request at most this share of the cheapest driver's
H1_CONNECTIONS = (1, 10, 100, 1000, 10000)
H2_CONNECTIONS = (1, 10, 100)
H2_STREAMS = 100
REPEATS = 3
IDLE_CONNECTIONS = 10000


def server_capacity(seconds: int, connections: int = 10) -> dict:
    """Requests/s wrk gets from the bench server on small keep-alive GETs."""
    if shutil.which("wrk") is None:
        raise LabError("wrk is not installed (./setup.sh installs it)")
    server_cpu, client_cpu = pick_cpus()
    with BenchServer(cpu=server_cpu) as server, tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
        script.write(WRK_REPORT)
        script.flush()
        url = f"http://127.0.0.1:{server.endpoint.http_port}/bytes/1024"
        argv = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "-s", script.name, url]
        argv = affinity.pinned(argv, client_cpu)
        proc = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=seconds + 30)
        line = next((l for l in proc.stdout.splitlines() if l.startswith("{")), None)
        if proc.returncode != 0 or line is None:
            raise LabError(f"wrk failed: {proc.stderr.strip() or proc.stdout.strip()}")
        result = json.loads(line)
        server_requests = server.counters()["requests"]
    rate = result["requests"] / (result["duration_us"] / 1e6)
    return {"tool": "wrk", "connections": connections, "seconds": seconds, "requests_per_s": rate,
            "errors": result["errors"], "server_counted": server_requests}


# -- the bench server against nginx -------------------------------------------------------------

def _proc_cpu_s(pids: list[int]) -> float:
    """user + system CPU seconds of these live processes."""
    total, tick = 0, os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total / tick


def _rss_bytes(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except (OSError, ValueError):
            pass
    return total


def _wrk(url: str, connections: int, seconds: int, cpu: int | None, script: str) -> dict:
    argv = affinity.pinned(["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--timeout", "10s", "-s", script, url], cpu)
    proc = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=seconds + 120)
    line = next((l for l in proc.stdout.splitlines() if l.startswith("{")), None)
    if proc.returncode != 0 or line is None:
        raise LabError(f"wrk failed: {proc.stderr.strip() or proc.stdout.strip()}")
    r = json.loads(line)
    secs = r["duration_us"] / 1e6
    return {"requests": r["requests"], "requests_per_s": r["requests"] / secs,
            "mb_per_s": r.get("bytes", 0) / secs / 1e6, "errors": r["errors"]}


def _h2load(url: str, connections: int, seconds: int, cpu: int | None) -> dict:
    argv = affinity.pinned(["h2load", "-t1", "-c", str(connections), "-m", str(H2_STREAMS), "-D", str(seconds),
                    "--warm-up-time=1", url], cpu)
    proc = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=seconds + 120)
    rate = mb = None
    requests, errors = 0, 0
    for line in proc.stdout.splitlines():
        if line.startswith("finished in"):  # finished in 3.00s, 109685.33 req/s, 115.13MB/s
            parts = [p.strip() for p in line.split(",")]
            rate = float(parts[1].split()[0])
            value = parts[2].split("/")[0]
            scale = {"GB": 1e3, "MB": 1.0, "KB": 1e-3, "B": 1e-6}
            unit = next(u for u in ("GB", "MB", "KB", "B") if value.endswith(u))
            mb = float(value[:-len(unit)]) * scale[unit]
        elif line.startswith("requests:"):  # requests: N total, N started, N done, N succeeded, N failed, N errored
            words = line.split()
            requests = int(words[7])
            errors = int(words[9]) + int(words[11])
    if proc.returncode != 0 or rate is None:
        raise LabError(f"h2load failed: {proc.stderr.strip() or proc.stdout.strip()[-500:]}")
    return {"requests": requests, "requests_per_s": rate, "mb_per_s": mb, "errors": errors}


def _static_root(server: BenchServer, path: str) -> Path:
    """A folder for nginx holding `path` as the bench server serves it (the same bytes)."""
    import http.client

    root = Path(tempfile.mkdtemp(prefix="clientlab-selfbench-", dir=paths.scratch_dir()))
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    conn = http.client.HTTPConnection(server.endpoint.host, server.endpoint.http_port, timeout=30)
    try:
        conn.request("GET", path)
        target.write_bytes(conn.getresponse().read())
    finally:
        conn.close()
    return root


def _idle_cost(port: int, pids: list[int], count: int) -> dict:
    """Server memory per idle keep-alive connection: `count` connections each carry one GET and stay
    open; the server's RSS before and with them open."""
    import socket

    request = b"GET /bytes/1024 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    before = _rss_bytes(pids)
    socks: list[socket.socket] = []
    opened = 0
    try:
        for _ in range(count):
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            socks.append(s)
            s.sendall(request)
            got = b""
            while b"\r\n\r\n" not in got or len(got) < got.index(b"\r\n\r\n") + 4 + 1024:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
            opened += 1
        time.sleep(1)
        during = _rss_bytes(pids)
        # still serving with them all open?
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        s.sendall(request)
        serving = s.recv(64).startswith(b"HTTP/1.1 200")
        s.close()
    finally:
        for s in socks:
            s.close()
    return {"connections": opened, "rss_before": before, "rss_with": during,
            "bytes_per_connection": (during - before) / opened if opened else None, "still_serving": serving}


def _median_row(runs: list[dict]) -> dict:
    rates = [r["requests_per_s"] for r in runs]
    return {"requests_per_s": stats.median(rates), "min": min(rates), "max": max(rates),
            "mb_per_s": stats.median([r["mb_per_s"] or 0.0 for r in runs]),
            "cpu_us_per_request": stats.median([r["cpu_us_per_request"] for r in runs if r.get("cpu_us_per_request")] or [0.0]),
            "errors": sum(r["errors"] for r in runs), "runs": runs}


@dataclass
class _Servers:
    """The bench server and nginx, both up on the server's core, as a measurement point reaches them."""

    bench: BenchServer
    nginx: Any  # clientlab.servers.nginx.Nginx; None where nginx is not installed
    reach: dict[str, tuple[int, int, list[int]]]  # server -> (HTTP port, HTTPS port, its processes)
    path: str
    wrk_script: str
    limits: dict  # what was raised for the servers (restored after), and what could not be


@contextlib.contextmanager
def _servers_started(path: str, most: int, server_cpu: int | None, nginx_missing: str | None) -> Iterator[_Servers]:
    """The bench server (record_digests off, every other counter on) and nginx (one worker, no access
    log) on `server_cpu`, serving the same bytes at `path`, with the limits `most` connections need."""
    from clientlab.servers import nginx as nginx_mod
    from clientlab.measuring.procfs import process_tree

    with limits.lift(most) as lifted, BenchServer(cpu=server_cpu) as bench, \
            tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
        script.write(WRK_REPORT)
        script.flush()
        bench.configure(record_digests=False)
        lifted_server = limits.lift(most, bench)  # its descriptors too (Go raises its soft limit itself)
        raised = {**{k: list(v) for k, v in {**lifted.changed, **lifted_server.changed}.items()},
                  "notes": lifted.notes + lifted_server.notes}
        root = _static_root(bench, path)
        nginx = None
        try:
            if nginx_missing is None:
                nginx = nginx_mod.Nginx(root, server_cpu, access_log=False, connections=most)
            reach = {"clientlab": (bench.endpoint.http_port, bench.endpoint.https_port, [bench.proc.pid])}
            if nginx:
                reach["nginx"] = (nginx.http_port, nginx.https_port, process_tree(nginx.proc.pid))
            yield _Servers(bench, nginx, reach, path, script.name, raised)
        finally:
            if nginx:
                nginx.stop()
            shutil.rmtree(root, ignore_errors=True)
            lifted_server.restore()


def _trial(servers: _Servers, name: str, kind: str, connections: int, seconds: int, client_cpu: int | None) -> dict:
    """One wrk (kind h1) or h2load (h2) run against one server, and that server's CPU per request."""
    http_port, https_port, pids = servers.reach[name]
    if name == "clientlab":
        servers.bench.reset()  # a fresh trial record, as the lab starts every trial
    cpu0 = _proc_cpu_s(pids)
    if kind == "h1":
        r = _wrk(f"http://127.0.0.1:{http_port}{servers.path}", connections, seconds, client_cpu, servers.wrk_script)
    else:
        r = _h2load(f"https://127.0.0.1:{https_port}{servers.path}", connections, seconds, client_cpu)
    cpu = _proc_cpu_s(pids) - cpu0
    # h2load's rate excludes its warm-up second, the CPU does not: per request over all
    done = r["requests"] if kind == "h1" else r["requests"] + r["requests_per_s"]
    r["cpu_s"] = cpu
    r["cpu_us_per_request"] = cpu / done * 1e6 if done else None
    return r


def _point(servers: _Servers, kind: str, connections: int, seconds: int, repeats: int,
           client_cpu: int | None) -> dict:
    """One measurement point: the servers in turn, `repeats` times; each one's medians, and the ratio."""
    runs: dict[str, list[dict]] = {name: [] for name in servers.reach}
    for _ in range(repeats):
        for name in servers.reach:
            runs[name].append(_trial(servers, name, kind, connections, seconds, client_cpu))
    row = {"connections": connections, **{name: _median_row(v) for name, v in runs.items()}}
    if "nginx" in row and row["nginx"]["requests_per_s"]:
        row["ratio"] = row["clientlab"]["requests_per_s"] / row["nginx"]["requests_per_s"]
        row["met"] = row["ratio"] >= NGINX_TARGET_RATIO
    return row


def _idle_memory(servers: _Servers, server_cpu: int | None, most: int, count: int) -> dict:
    """Memory per idle connection: of a fresh bench server (the trial records of the points measured
    would still sit in the heap), and of nginx as it is."""
    idle = {}
    with BenchServer(cpu=server_cpu) as fresh:
        fresh.configure(record_digests=False)
        fresh_lift = limits.lift(most, fresh)
        try:
            idle["clientlab"] = _idle_cost(fresh.endpoint.http_port, [fresh.proc.pid], count)
        finally:
            fresh_lift.restore()
    if servers.nginx:
        idle["nginx"] = _idle_cost(servers.nginx.http_port, servers.reach["nginx"][2], count)
    return idle


def against_nginx(seconds: int, h1_connections: tuple[int, ...] = H1_CONNECTIONS,
                  h2_connections: tuple[int, ...] = H2_CONNECTIONS, repeats: int = REPEATS,
                  idle_connections: int = IDLE_CONNECTIONS) -> dict:
    """The bench server and nginx side by side, one run (see the module's docstring)."""
    from clientlab.servers import nginx as nginx_mod

    if shutil.which("wrk") is None:
        raise LabError("wrk is not installed (./setup.sh installs it)")
    server_cpu, client_cpu = pick_cpus()
    most = max([*h1_connections, *h2_connections, idle_connections, 1])
    path = "/bytes/1024"
    out: dict = {"path": path, "seconds": seconds, "repeats": repeats, "h1": [], "h2": [],
                 "nginx": nginx_mod.version(), "nginx_missing": nginx_mod.available()}
    with _servers_started(path, most, server_cpu, out["nginx_missing"]) as servers:
        out["limits"] = servers.limits
        for c in h1_connections:
            out["h1"].append(_point(servers, "h1", c, seconds, repeats, client_cpu))
        for c in h2_connections:
            out["h2"].append(_point(servers, "h2", c, seconds, repeats, client_cpu))
        out["idle"] = _idle_memory(servers, server_cpu, most, idle_connections)
    return out


def _driver_row(r: CellResult) -> dict:
    """A cell's rate, and its driver's and the bench server's CPU per request."""
    row = {"driver": r.driver, "scenario": r.scenario, "status": r.status, "reason": r.reason,
           "requests_per_s": r.figures.throughput if r.figures else None}
    if r.figures and r.figures.requests:
        n = r.figures.requests
        row["driver_cpu_us_per_request"] = r.figures.cpu_us_per_request
        server_cpu = r.figures.server_seen.cpu_s
        row["server_cpu_us_per_request"] = server_cpu / n * 1e6 if server_cpu is not None else None
    return row


def fastest_driver(drivers: list[Driver], store: Store) -> tuple[int, list[dict]]:
    """get-small (2000 GETs, sequential) and parallel-feeds (100 feeds, 20 in flight) on each
    installed driver, measured as in a normal run."""
    files, _ = scenario.discover()
    chosen = scenario.select(files, ["get-small", "parallel-feeds"], {})
    readiness = builder.Readiness()
    installed = [d for d in drivers if readiness.missing(d) is None]
    if not installed:
        raise LabError("no installed driver to compare the server with")
    config = {"kind": "selfbench", "drivers": [d.id for d in installed], "scenarios": ["get-small", "parallel-feeds"],
              "net": "loopback"}
    options = RunOptions(warmup=1, stop=StopRule(min_trials=5, max_trials=5))
    with lab_run(store, config, options, readiness=readiness) as lab:
        results = run_matrix(lab, installed, chosen)
    return lab.run_id, [_driver_row(r) for r in results]


def lab_overhead() -> dict:
    """Measured wall minus a known 1-second phase, and the lab's own CPU during it."""
    driver = load_manifest(paths.instruments_dir() / "sleep" / "driver.toml")
    server_cpu, driver_cpu = pick_cpus()
    excess, lab_cpu = [], []
    env = {**os.environ, "INSTRUMENT_SLEEP_S": str(SLEEP_S)}
    job = {"scenario": "selfbench-sleep", "verify": False, "http": "1.1", "tls_ca": None, "concurrency": 1,
           "keep_alive": True, "cookies": False, "accept_gzip": False, "timeout_s": 30, "options": {},
           "requests": []}
    with BenchServer(cpu=server_cpu) as server:
        proc = DriverProcess(driver.argv, driver.folder, cpu=driver_cpu, env=env)
        try:
            proc.hello(30)
            for _ in range(OVERHEAD_TRIALS):
                t0 = os.times()
                phase = timed_phase(proc, server, job, 30)
                t1 = os.times()
                excess.append(phase.usage.wall_s - SLEEP_S)
                lab_cpu.append((t1.user + t1.system) - (t0.user + t0.system))
        finally:
            proc.close()
    median_excess = stats.median(excess)
    walls = [SLEEP_S + e for e in excess]
    return {"trial_s": SLEEP_S, "trials": OVERHEAD_TRIALS, "excess_s": stats.percentiles(excess), "cv": _cv(walls),
            "overhead": median_excess / SLEEP_S, "lab_cpu_s": stats.median(lab_cpu),
            "lab_cpu_fraction": stats.median(lab_cpu) / SLEEP_S}


def _cv(values: list[float]) -> float:
    mean = sum(values) / len(values)
    return (sum((v - mean) ** 2 for v in values) / (len(values) - 1)) ** 0.5 / mean if len(values) > 1 else 0.0


def noise_floor(trials: int = 10) -> dict:
    """A fixed amount of CPU work (the spin instrument), timed `trials` times on the driver's core."""
    driver = load_manifest(paths.instruments_dir() / "spin" / "driver.toml")
    server_cpu, driver_cpu = pick_cpus()
    job = {"scenario": "selfbench-spin", "verify": False, "http": "1.1", "tls_ca": None, "concurrency": 1,
           "keep_alive": True, "cookies": False, "accept_gzip": False, "timeout_s": 60, "options": {},
           "requests": []}
    walls, steal, other = [], 0.0, 0.0
    with BenchServer(cpu=server_cpu) as server:
        proc = DriverProcess(driver.argv, driver.folder, cpu=driver_cpu, env=driver.env())
        try:
            proc.hello(30)
            timed_phase(proc, server, job, 60)  # warm-up
            for _ in range(trials):
                phase = timed_phase(proc, server, job, 60)
                walls.append(phase.usage.wall_s)
                steal += phase.noise.steal_s
                other += phase.noise.other_cpu_s
        finally:
            proc.close()
    return {"trials": trials, "wall_s": stats.median(walls), "cv": _cv(walls),
            "max_over_min": max(walls) / min(walls), "steal_s": steal, "other_cpu_s": other}


def host_phases(seconds: float = 20.0, every_s: float = 0.05) -> dict | None:
    """The host probe on the driver's core, sampled for `seconds`: the share of samples in a slow
    phase (over hostprobe.SLOW_LIMIT × the fastest), their median slowdown, the phases and the
    longest one. None when set-up did not build the probe."""
    from clientlab.measuring import hostprobe

    _, driver_cpu = pick_cpus()
    if driver_cpu is None or not paths.lab_binary(hostprobe.BINARY).exists():
        return None
    probe = hostprobe.HostProbe(driver_cpu)
    try:
        samples = []
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            samples.append((time.monotonic(), probe.sample()))
            time.sleep(every_s)
    finally:
        probe.close()
    best = min(ns for _, ns in samples)
    slow = [(t, ns / best) for t, ns in samples if ns / best > hostprobe.SLOW_LIMIT]
    phases, longest, start, last = 0, 0.0, None, None
    for t, ns in samples:
        if ns / best > hostprobe.SLOW_LIMIT:
            if start is None:
                phases, start = phases + 1, t
            last = t
            longest = max(longest, last - start + every_s)
        else:
            start = None
    return {"seconds": seconds, "samples": len(samples), "best_ns": best,
            "slow_share": len(slow) / len(samples), "slow_median": stats.median([x for _, x in slow]) if slow else None,
            "phases": phases, "longest_s": longest}


def _placement_figures(run_id: int, result: CellResult) -> dict:
    """Per-request time and spread of the placement's cell, or why it has none."""
    if result.status != "ok":
        return {"status": result.status, "reason": result.reason}
    f = result.figures
    return {"run": run_id, "us_per_request": f.wall_s.median / f.requests * 1e6,
            "relative_spread": f.relative_spread, "precision": f.precision,
            "max_over_min": f.wall_s.max / f.wall_s.min, "disturbed": f.disturbed_trials or 0}


def placements(drivers: list[Driver], store: Store, trials: int = 10) -> dict:
    """One driver (the first installed of c-libcurl and python-requests, else the first installed
    driver given) on get-small under each placement, each its own stored run: per-request time and
    the spread of its trials."""
    readiness = builder.Readiness()
    installed = [d for d in drivers if readiness.missing(d) is None]
    if not installed:
        raise LabError("selfbench: no installed driver to measure placements with (see: clientlab drivers)")
    known = {d.id: d for d in installed}
    driver = next((known[i] for i in ("c-libcurl", "python-requests") if i in known), installed[0])
    files, _ = scenario.discover()
    chosen = scenario.select(files, ["get-small"], {})
    out = {"driver": driver.id, "scenario": "get-small", "placements": {}}
    config = {"kind": "selfbench-placement", "drivers": [driver.id], "scenarios": ["get-small"], "net": "loopback"}
    for name in PLACEMENTS:
        options = RunOptions(warmup=1, stop=StopRule(min_trials=trials, max_trials=trials), placement=name,
                             retries=3)
        try:
            with lab_run(store, config, options, readiness=readiness) as lab:
                run_id = lab.run_id
                [result] = run_matrix(lab, [driver], chosen)
        finally:
            os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))  # the next placement starts from every core
        out["placements"][name] = _placement_figures(run_id, result)
    measured = {k: v for k, v in out["placements"].items() if "relative_spread" in v}
    out["most_repeatable"] = min(measured, key=lambda k: measured[k]["relative_spread"]) if measured else None
    return out


def _against_drivers(side: dict, rows: list[dict]) -> dict:
    """The server's ceiling against the fastest drivers' rates, and its CPU per request against the
    cheapest driver's."""
    def best(scenario_name: str) -> dict | None:
        measured = [r for r in rows if r["requests_per_s"] and r["scenario"] == scenario_name]
        return max(measured, key=lambda r: r["requests_per_s"]) if measured else None

    fastest, fastest_parallel = best("get-small"), best("parallel-feeds")
    ceiling = max((row["clientlab"]["requests_per_s"] for row in side["h1"]), default=None)
    with_cpu = [r for r in rows if r.get("driver_cpu_us_per_request") and r.get("server_cpu_us_per_request")]
    cheapest = min(with_cpu, key=lambda r: r["driver_cpu_us_per_request"]) if with_cpu else None
    return {"fastest": fastest, "fastest_parallel": fastest_parallel, "server_ceiling": ceiling,
            "server_to_fastest": ceiling / fastest["requests_per_s"] if fastest and ceiling else None,
            "server_to_fastest_parallel":
                ceiling / fastest_parallel["requests_per_s"] if fastest_parallel and ceiling else None,
            "cheapest_driver_cpu": cheapest,
            "server_cpu_share":
                cheapest["server_cpu_us_per_request"] / cheapest["driver_cpu_us_per_request"] if cheapest else None}


def measure(drivers: list[Driver], seconds: int, err: Console) -> dict:
    """Every figure of the module's docstring, with its target, as `clientlab selfbench` prints and writes them."""
    err.print("measuring the bench server against nginx (wrk, h2load; same core; three times each)…")
    side = against_nginx(seconds)
    err.print("measuring get-small and parallel-feeds on every installed driver…")
    store = open_store()  # $CLIENTLAB_STORE, else the lab's own
    run_id, rows = fastest_driver(drivers, store)
    err.print("measuring the lab's overhead on a 1-second trial…")
    overhead = lab_overhead()
    err.print("measuring the machine's noise floor (fixed CPU work, ten times)…")
    floor = noise_floor()
    err.print("sampling the host's slow phases on the driver's core (20 s)…")
    phases = host_phases()
    err.print("measuring placements (split, shared, free)…")
    placed = placements(drivers, store)
    return {"measured_at": time.time(), "machine": machine.describe(), "against_nginx": side, "drivers_run": run_id,
            "drivers": rows, **_against_drivers(side, rows),
            "overhead": overhead, "noise_floor": floor, "host_phases": phases, "placements": placed,
            "targets": {"server_to_nginx_at_least": NGINX_TARGET_RATIO,
                        "server_to_fastest_at_least": SERVER_TARGET_RATIO,
                        "server_cpu_share_at_most": SERVER_CPU_TARGET, "overhead_below": OVERHEAD_TARGET}}
