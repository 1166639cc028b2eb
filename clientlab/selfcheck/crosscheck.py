"""Is the bench server part of the answer? The same drivers on the same static workloads, against
the bench server and against Debian's nginx (one worker, the same core), in one run.

If the bench server were slow in a way that favours some clients, the drivers' ratios to the
fastest would differ between the two servers. Each driver's ratio under both is printed; they
must agree within AGREEMENT.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from clientlab import paths
from clientlab.drivers.job import plan
from clientlab.drivers.manifest import Driver
from clientlab.errors import LabError
from clientlab.runner import CellGroup, CellResult, Events, RunOptions, lab_run, loopback_config
from clientlab.scenario import Scenario
from clientlab.servers import nginx, writes
from clientlab.servers.bench import BenchServer
from clientlab.store import Store

STATIC_SCENARIOS = ("get-small", "get-json-335k", "download-memory", "download-file")
AGREEMENT = 0.10
SLOWER = 0.05     # the bench server giving a driver less than nginx by more than this is flagged
NGINX_MARK = "server=nginx"


@dataclass
class Row:
    """One driver on one scenario, under both servers."""

    scenario: str
    driver: str
    bench: float | None        # throughput against the bench server
    nginx: float | None        # against nginx
    unit: str
    bench_ratio: float | None = None   # to the fastest driver on this scenario, same server
    nginx_ratio: float | None = None
    reason: str | None = None

    @property
    def agreement(self) -> float | None:
        """How far apart the two ratios are (0.03 = 3 %)."""
        if not self.bench_ratio or not self.nginx_ratio:
            return None
        return abs(self.bench_ratio / self.nginx_ratio - 1)

    @property
    def agrees(self) -> bool | None:
        return None if self.agreement is None else self.agreement <= AGREEMENT

    @property
    def bench_over_nginx(self) -> float | None:
        """The driver's rate from the bench server over its rate from nginx (1.2 = 20 % faster):
        where ratios disagree, this says which server held the driver back."""
        return self.bench / self.nginx if self.bench and self.nginx else None


@dataclass
class Writes:
    """How each server wrote one scenario's answer (writes.WritePattern), or why it is not known."""

    scenario: str
    path: str
    patterns: dict[str, writes.WritePattern] = field(default_factory=dict)  # by server: "bench", "nginx"
    problem: str | None = None

    def to_dict(self) -> dict:
        return {"scenario": self.scenario, "path": self.path, "problem": self.problem,
                **{server: p.to_dict() for server, p in self.patterns.items()}}


def _served_paths(scenarios: list[Scenario]) -> list[str]:
    return sorted({r.path.split("?", 1)[0] for s in scenarios for r in s.requests})


def _writes(scenario: Scenario, bench: BenchServer, static: nginx.StaticServer) -> Writes:
    """Each server's send calls for the scenario's first request, after the cells (the probe's
    strace never overlaps a trial)."""
    planned = plan(scenario, bench.endpoint, paths.scratch_dir(), verify=False, tag="writes")
    for f in planned.files:
        f.unlink(missing_ok=True)
    url = urlsplit(planned.job["requests"][0]["url"])
    path = url.path + (f"?{url.query}" if url.query else "")
    found = Writes(scenario.label, path)
    try:
        for name, pids, endpoint in (("bench", [bench.proc.pid], bench.endpoint),
                                     ("nginx", static.nginx.pids(), static.endpoint)):
            found.patterns[name] = writes.probe(pids, endpoint.host, endpoint.http_port, path)
    except RuntimeError as exc:
        found.problem = str(exc)
    return found


def run(store: Store, drivers: list[Driver], scenarios: list[Scenario], options: RunOptions,
        events: Events | None = None, *,
        static_server: Callable[..., nginx.StaticServer] = nginx.StaticServer) -> tuple[int, list[Row], list[Writes]]:
    """Every driver on every scenario against both servers; the stored run's id, the rows, and how
    each server wrote each scenario's answer. `static_server` starts nginx where the runner expects
    a bench server (a test keeps it to read its log's writes)."""
    reason = nginx.available()
    if reason:
        raise LabError(f"crosscheck needs nginx: {reason}")
    for s in scenarios:
        if any(r.method != "GET" or r.follow_redirects for r in s.requests) or s.client.cookies:
            raise LabError(f"scenario {s.label}: crosscheck takes static GET workloads only "
                           f"({', '.join(STATIC_SCENARIOS)})")
    results: list[tuple[str, CellResult]] = []
    with lab_run(store, loopback_config("crosscheck", drivers, scenarios), options, events) as lab, \
            lab.bench_server() as bench, \
            static_server(bench, _served_paths(scenarios), cpu=lab.placement.server) as static, \
            lab.runner(bench) as runner:
        run_id = lab.run_id
        store.update_config(run_id, nginx=nginx.version())
        for s in scenarios:
            marked = s.model_copy(update={"variant": ",".join(v for v in (s.variant, NGINX_MARK) if v)})
            # both servers' cells take turns trial by trial: a drift of the host over the
            # minutes of a scenario hits both alike, not the server that ran in the slow minute
            for r in runner.run_groups([CellGroup(drivers, s), CellGroup(drivers, marked, static)]):
                results.append(("nginx" if r.scenario == marked.label else "bench", r))
        patterns = [_writes(s, bench, static) for s in scenarios]
        store.update_config(run_id, writes=[w.to_dict() for w in patterns])
    return run_id, rows_of(scenarios, results), patterns


def rows_of(scenarios: list[Scenario], results: list[tuple[str, CellResult]]) -> list[Row]:
    rows = []
    for s in scenarios:
        bench = {r.driver: r for server, r in results if server == "bench" and r.scenario == s.label}
        other = {r.driver: r for server, r in results if server == "nginx" and r.scenario.startswith(s.label)
                 and NGINX_MARK in r.scenario}
        mine = []
        for driver in dict.fromkeys([*bench, *other]):
            b, n = bench.get(driver), other.get(driver)
            rate = lambda r: r.figures.throughput if r and r.status == "ok" and r.figures else None
            unit = next((r.figures.unit for r in (b, n) if r and r.figures), "")
            why = next((f"{where}: {r.status}: {r.reason}" for where, r in (("bench server", b), ("nginx", n))
                        if r and r.status != "ok"), None)
            mine.append(Row(s.label, driver, rate(b), rate(n), unit, reason=why))
        best_b = max((r.bench for r in mine if r.bench), default=None)
        best_n = max((r.nginx for r in mine if r.nginx), default=None)
        for r in mine:
            r.bench_ratio = r.bench / best_b if r.bench and best_b else None
            r.nginx_ratio = r.nginx / best_n if r.nginx and best_n else None
        rows.extend(mine)
    return rows
