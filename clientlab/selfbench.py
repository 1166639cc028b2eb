"""`clientlab selfbench`: is the lab fast enough to measure clients?

1. Bench server capacity: wrk (a C load generator, on its own core) against /bytes/1024 with
   keep-alive, compared with the fastest driver's rate on get-small measured the normal way.
   Target: the server at least 5x the fastest driver, so the server is never what is measured.
2. The lab's overhead on a 1-second trial: a test driver sleeps exactly 1 s between go and done;
   overhead = measured wall - 1 s, and the CPU the lab itself used meanwhile. Target: < 1 %.
These are benchmark figures to report; no test asserts them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from clientlab import machine, paths, scenario, stats
from clientlab.errors import LabError
from clientlab.manifest import Driver, load_manifest
from clientlab.protocol import DriverProcess
from clientlab.runner import RunOptions, pick_cpus, run_matrix, timed_phase
from clientlab.server import BenchServer
from clientlab.stats import StopRule
from clientlab.store import Store

WRK_REPORT = """
done = function(summary, latency, requests)
  io.write(string.format('{"requests": %d, "duration_us": %d, "errors": %d}\\n',
    summary.requests, summary.duration,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status + summary.errors.timeout))
end
"""
SLEEP_S = 1.0
OVERHEAD_TRIALS = 10
SERVER_TARGET_RATIO = 5.0
OVERHEAD_TARGET = 0.01


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
        if client_cpu is not None and shutil.which("taskset"):
            argv = ["taskset", "-c", str(client_cpu), *argv]
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 30)
        line = next((l for l in proc.stdout.splitlines() if l.startswith("{")), None)
        if proc.returncode != 0 or line is None:
            raise LabError(f"wrk failed: {proc.stderr.strip() or proc.stdout.strip()}")
        result = json.loads(line)
        server_requests = server.counters()["requests"]
    rate = result["requests"] / (result["duration_us"] / 1e6)
    return {"tool": "wrk", "connections": connections, "seconds": seconds, "requests_per_s": rate,
            "errors": result["errors"], "server_counted": server_requests}


def fastest_driver(drivers: list[Driver], store: Store) -> tuple[int, list[dict]]:
    """get-small (2000 GETs) on each installed driver, measured as in a normal run."""
    files, _ = scenario.discover()
    chosen = scenario.select(files, ["get-small"], {})
    installed = [d for d in drivers if d.missing() is None]
    if not installed:
        raise LabError("no installed driver to compare the server with")
    run_id = store.start_run(machine.describe(), {"kind": "selfbench", "drivers": [d.id for d in installed],
                                                  "scenarios": ["get-small"], "net": "loopback"})
    options = RunOptions(warmup=1, stop=StopRule(min_trials=5, max_trials=5))
    status = "failed"
    try:
        results = run_matrix(store, run_id, installed, chosen, options)
        status = "complete"
    finally:
        store.finish_run(run_id, status)
    rows = [{"driver": r.driver, "status": r.status, "reason": r.reason,
             "requests_per_s": r.figures["throughput"] if r.figures else None} for r in results]
    return run_id, rows


def lab_overhead() -> dict:
    """Measured wall minus a known 1-second phase, and the lab's own CPU during it."""
    driver = load_manifest(paths.ROOT / "clientlab" / "testdrivers" / "sleep" / "driver.toml")
    server_cpu, driver_cpu = pick_cpus()
    excess, lab_cpu = [], []
    env = {**os.environ, "FAKE_SLEEP_S": str(SLEEP_S)}
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
    return {"trial_s": SLEEP_S, "trials": OVERHEAD_TRIALS, "excess_s": stats.percentiles(excess),
            "overhead": median_excess / SLEEP_S, "lab_cpu_s": stats.median(lab_cpu),
            "lab_cpu_fraction": stats.median(lab_cpu) / SLEEP_S}


def run(drivers: list[Driver], seconds: int, out: Console, err: Console, json_path: Path | None = None) -> dict:
    err.print("measuring the bench server with wrk…")
    capacity = server_capacity(seconds)
    err.print("measuring get-small on every installed driver…")
    store = Store(paths.results_db())
    run_id, rows = fastest_driver(drivers, store)
    err.print("measuring the lab's overhead on a 1-second trial…")
    overhead = lab_overhead()
    measured = [r for r in rows if r["requests_per_s"]]
    fastest = max(measured, key=lambda r: r["requests_per_s"]) if measured else None
    ratio = capacity["requests_per_s"] / fastest["requests_per_s"] if fastest else None
    result = {"measured_at": time.time(), "machine": machine.describe(), "server": capacity, "drivers_run": run_id,
              "drivers": rows, "fastest": fastest, "server_to_fastest": ratio, "overhead": overhead,
              "targets": {"server_to_fastest_at_least": SERVER_TARGET_RATIO, "overhead_below": OVERHEAD_TARGET}}
    table = Table(title="clientlab selfbench (one run, medians)")
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_column("target")
    table.add_row("bench server, wrk, GET 1 KiB keep-alive", f"{capacity['requests_per_s']:,.0f} req/s", "")
    if fastest:
        table.add_row(f"fastest driver on get-small ({fastest['driver']})", f"{fastest['requests_per_s']:,.0f} req/s", "")
        verdict = "met" if ratio >= SERVER_TARGET_RATIO else "NOT met"
        table.add_row("server / fastest driver", f"{ratio:.1f}×", f"≥ {SERVER_TARGET_RATIO:.0f}× ({verdict})")
    verdict = "met" if overhead["overhead"] < OVERHEAD_TARGET else "NOT met"
    table.add_row("lab overhead on a 1 s trial (wall)", f"{overhead['overhead'] * 100:.3f} %",
                  f"< {OVERHEAD_TARGET * 100:.0f} % ({verdict})")
    table.add_row("lab's own CPU during a 1 s trial", f"{overhead['lab_cpu_fraction'] * 100:.2f} % of a core", "")
    out.print(table)
    for r in rows:
        if r["status"] != "ok":
            err.print(f"  {r['driver']}: {r['status']} {r['reason'] or ''}", highlight=False)
    if json_path:
        json_path.write_text(json.dumps(result, indent=2) + "\n")
    return result
