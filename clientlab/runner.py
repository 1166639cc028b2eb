"""Running cells (driver × scenario): verification first, then warm-up and timed trials.

Every trial is stored as soon as it completes; a driver that fails, hangs or lies fails its
cell only. A broken lab (the bench server gone, the store unwritable) raises LabError.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Protocol

from clientlab import figures, paths, stats
from clientlab.errors import LabError
from clientlab.job import PlannedJob, plan, required_capabilities
from clientlab.manifest import Driver
from clientlab.measure import TreeMeter, Usage
from clientlab.protocol import DriverFault, DriverProcess
from clientlab.scenario import Scenario
from clientlab.server import BenchServer
from clientlab.stats import StopRule
from clientlab.store import Store, Trial
from clientlab.verify import check_trial, check_verification

if TYPE_CHECKING:
    from clientlab.netlab.lab import NetLab

HELLO_TIMEOUT_S = 60.0
REPORT_TIMEOUT_S = 120.0


class Unsupported(Exception):
    """The driver (or its manifest) cannot do this job exactly as asked."""


@dataclass
class RunOptions:
    """How cells are run."""

    warmup: int = 1
    stop: StopRule = field(default_factory=StopRule)
    fresh_process: bool = False   # a new driver process per trial (cold cost) instead of one per cell
    pin_cpus: bool = True


@dataclass
class CellResult:
    """The outcome of one cell, as stored."""

    driver: str
    scenario: str
    status: str                   # ok / failed / unsupported / not-installed
    reason: str | None = None
    figures: dict | None = None
    versions: dict | None = None


class Events(Protocol):
    """Progress callbacks (the CLI shows a progress bar; tests pass a silent one)."""

    def cell_started(self, driver: str, scenario: str) -> None: ...
    def trial_done(self, trial: Trial) -> None: ...
    def cell_done(self, result: CellResult) -> None: ...


class SilentEvents:
    def cell_started(self, driver: str, scenario: str) -> None:
        pass

    def trial_done(self, trial: Trial) -> None:
        pass

    def cell_done(self, result: CellResult) -> None:
        pass


def pick_cpus() -> tuple[int | None, int | None]:
    """(server CPU, driver CPU): different cores when there are at least two."""
    available = sorted(os.sched_getaffinity(0))
    if len(available) < 2:
        return None, None
    return available[0], available[1]


class CellRunner:
    """Runs cells against one bench server, writing to one store."""

    def __init__(self, server: BenchServer, store: Store, run_id: int, options: RunOptions,
                 events: Events | None = None, driver_cpu: int | None = None):
        self.server = server
        self.store = store
        self.run_id = run_id
        self.options = options
        self.events = events or SilentEvents()
        self.driver_cpu = driver_cpu
        self.scratch = paths.scratch_dir()

    # -- one cell -------------------------------------------------------------------------

    def run_cell(self, driver: Driver, scenario: Scenario) -> CellResult:
        self.events.cell_started(driver.id, scenario.label)
        params = {**scenario.params, "client": scenario.client.model_dump(),
                  "sinks": sorted({r.sink for r in scenario.requests})}
        cell_id = self.store.start_cell(self.run_id, driver.id, scenario.label, params, scenario.metric)
        try:
            result = self._run_cell(driver, scenario, cell_id)
        except BaseException as exc:  # the lab broke (or Ctrl-C): the cell says so, the run stops
            reason = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"lab error: {type(exc).__name__}: {exc}"
            self.store.finish_cell(cell_id, "failed", reason, None, None)
            raise
        self.store.finish_cell(cell_id, result.status, result.reason, result.figures, result.versions)
        self.events.cell_done(result)
        return result

    def _run_cell(self, driver: Driver, scenario: Scenario, cell_id: int) -> CellResult:
        def finish(status: str, reason: str | None = None, figs: dict | None = None) -> CellResult:
            return CellResult(driver.id, scenario.label, status, reason, figs, versions)

        versions: dict | None = None
        missing = driver.missing()
        if missing:
            return finish("not-installed", missing)
        tag = f"{self.run_id}-{cell_id}"
        probe = plan(scenario, self.server.endpoint, self.scratch, verify=True, tag=tag)
        lacking = [c for c in required_capabilities(probe) if c not in driver.manifest.capabilities]
        if lacking:
            return finish("unsupported", f"manifest does not claim {', '.join(lacking)}")
        trials: list[Trial] = []
        proc: DriverProcess | None = None
        started = time.monotonic()
        try:
            proc, startup_s, versions = self._spawn(driver)
            verification = self._trial(proc, probe, "verify", 0, scenario)
            verification.startup_s = startup_s + (verification.setup_s or 0.0)
            self._record(cell_id, verification, trials)
            if not verification.ok:
                return finish("failed", "verification: " + "; ".join(verification.problems or []))
            idx = 0
            timed_walls: list[float] = []
            timed_started = time.monotonic()
            warmup = max(self.options.warmup, driver.manifest.warmup) if self.options.warmup else 0
            while True:
                kind = "warmup" if idx < warmup else "timed"
                if self.options.fresh_process:
                    proc.close()
                    proc, startup_s, versions = self._spawn(driver)
                planned = plan(scenario, self.server.endpoint, self.scratch, verify=False, tag=tag)
                trial = self._trial(proc, planned, kind, idx, scenario)
                if self.options.fresh_process:
                    trial.startup_s = startup_s + (trial.setup_s or 0.0)
                self._record(cell_id, trial, trials)
                if not trial.ok:
                    return finish("failed", f"{kind} trial {idx}: " + "; ".join(trial.problems or []))
                if kind == "timed":
                    timed_walls.append(trial.wall_s or 0.0)
                    if self.options.stop.done(timed_walls, time.monotonic() - timed_started):
                        break
                idx += 1
            # start-up = spawn to the first `ready` (fresh processes: the median over trials)
            starts = [t.startup_s for t in trials if t.startup_s is not None]
            figs = figures.cell_figures(trials, scenario.metric, scenario.total_requests,
                                        stats.median(starts[1:] or starts))
            figs["elapsed_s"] = time.monotonic() - started
            return finish("ok", None, figs)
        except Unsupported as exc:
            return finish("unsupported", str(exc))
        except DriverFault as exc:
            failed = Trial(kind="fault", idx=len(trials), ok=False, problems=[str(exc)])
            self._record(cell_id, failed, trials)
            return finish("failed", str(exc))
        finally:
            if proc is not None:
                proc.close()
            self._cleanup(tag)

    # -- pieces ---------------------------------------------------------------------------

    def _spawn(self, driver: Driver) -> tuple[DriverProcess, float, dict]:
        t0 = time.perf_counter()
        proc = DriverProcess([*self.server.driver_prefix, *driver.argv], driver.folder, cpu=self.driver_cpu)
        try:
            hello = proc.hello(HELLO_TIMEOUT_S)
        except DriverFault:
            proc.close()
            raise
        return proc, time.perf_counter() - t0, hello["versions"]

    def _trial(self, proc: DriverProcess, planned: PlannedJob, kind: str, idx: int, scenario: Scenario) -> Trial:
        verify = kind == "verify"
        self.server.configure(record_digests=verify)
        phase = timed_phase(proc, self.server, planned.job, scenario.timeout_s)
        problems = (check_verification if verify else check_trial)(planned, phase.report, phase.snapshot)
        summary = figures.server_summary(phase.snapshot, sequential=planned.job["concurrency"] == 1)
        for path in planned.files:
            path.unlink(missing_ok=True)
        usage = phase.usage
        return Trial(
            kind=kind, idx=idx, ok=not problems,
            wall_s=usage.wall_s, user_s=usage.user_s, sys_s=usage.sys_s, peak_rss_kb=usage.peak_rss_kb,
            setup_s=phase.setup_s, work_requests=phase.snapshot.get("requests"),
            work_bytes=summary["resp_body_bytes"] + summary["req_body_bytes"],
            server=summary, problems=problems or None,
        )

    def _record(self, cell_id: int, trial: Trial, trials: list[Trial]) -> None:
        trials.append(trial)
        self.store.add_trial(cell_id, trial)
        self.events.trial_done(trial)

    def _cleanup(self, tag: str) -> None:
        for path in Path(self.scratch).glob(f"sink-{tag}-*"):
            path.unlink(missing_ok=True)


@dataclass
class Phase:
    """One job's timed phase: set-up time, resource use, the server's record, the driver's report."""

    setup_s: float
    usage: Usage
    snapshot: dict
    report: dict


def timed_phase(proc: DriverProcess, server: BenchServer, job: dict, timeout_s: float) -> Phase:
    """job → ready → (reset counters, start meters) go → done (stop meters, read counters) → report."""
    t_job = time.perf_counter()
    proc.send({"type": "job", "job": job})
    answer = proc.receive({"ready"}, HELLO_TIMEOUT_S)
    if answer["type"] == "unsupported":
        raise Unsupported(str(answer.get("reason") or "driver gave no reason"))
    if answer["type"] == "error":
        raise DriverFault(f"driver could not set up the job: {answer.get('message')}")
    setup_s = time.perf_counter() - t_job
    if not server.alive():
        raise LabError(f"the bench server died (exit code {server.proc.poll()})")
    server.reset()
    meter = TreeMeter(proc.pid)
    meter.start()
    proc.send({"type": "go"})
    try:
        done = proc.receive({"done"}, timeout_s)
    finally:
        usage = meter.stop(time.perf_counter())  # also stops the sampler when the driver failed
    if done["type"] != "done":
        raise DriverFault(f"driver sent {done['type']} instead of done: {done.get('message') or done.get('reason')}")
    snapshot = server.counters()
    report = proc.receive({"report"}, REPORT_TIMEOUT_S)
    if report["type"] != "report":
        raise DriverFault(f"driver sent {report['type']} instead of its report")
    return Phase(setup_s, usage, snapshot, report)


@contextlib.contextmanager
def stop_on_sigterm() -> Iterator[None]:
    """SIGTERM ends a run like Ctrl-C: what was measured is kept and the network lab is taken down."""
    def interrupt(_sig: int, _frame: object) -> None:
        raise KeyboardInterrupt
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_matrix(store: Store, run_id: int, drivers: list[Driver], scenarios: list[Scenario],
               options: RunOptions, events: Events | None = None,
               after_cell=None, network: Callable[[int | None], BenchServer | NetLab] | None = None,
               ) -> list[CellResult]:  # noqa: ANN001 - callable(CellResult)
    """Every driver on every scenario, with one bench server (or one network lab) for the whole run.
    `network(cpu)` opens the server side; default: the bench server on loopback."""
    server_cpu, driver_cpu = pick_cpus() if options.pin_cpus else (None, None)
    if server_cpu is not None:
        os.sched_setaffinity(0, {server_cpu})  # the lab's own threads stay off the driver's core
    results = []
    with (network or (lambda cpu: BenchServer(cpu=cpu)))(server_cpu) as server:
        runner = CellRunner(server, store, run_id, options, events, driver_cpu)
        for driver in drivers:
            for scenario in scenarios:
                results.append(runner.run_cell(driver, scenario))
                if after_cell:
                    after_cell(results[-1])
    return results
