"""One trial of a cell: the job planned, the server readied, the timed phase measured around the
driver's go → done, the answer checked against what the server saw, the trial stored.

What makes trials comparable (docs/measurement.md):
- every trial starts on a fresh server port, so no TIME_WAIT or ephemeral-port state of earlier
  trials, cells or runs meets it;
- the driver runs in a cgroup of its own (CPU in ns, the tree's true peak memory);
- steal and other processes' CPU are read around every trial; the host's speed on the driver's
  core before and after each timed trial.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from clientlab.analysis import figures
from clientlab.drivers.job import PlannedJob, plan
from clientlab.drivers.protocol import DriverFault, DriverProcess, DriverTimeout
from clientlab.drivers.verify import check_trial, check_verification
from clientlab.errors import LabError
from clientlab.measuring import cgroup, hostprobe
from clientlab.measuring.measure import TreeMeter, Usage
from clientlab.measuring.noise import HostProbe, Noise, NoiseMeter
from clientlab.measuring.procfs import process_tree
from clientlab.runner.cell import Cell, Events
from clientlab.runner.deadline import Deadline
from clientlab.runner.options import STALL_S
from clientlab.runner.pool import HELLO_TIMEOUT_S, ProcessPool, stopped
from clientlab.scenario import Scenario
from clientlab.store import Store, Trial

if TYPE_CHECKING:
    from clientlab.servers.side import Endpoint, ServerSide


class UsageMeter(Protocol):
    """What measures a trial's timed phase of the driver's process tree (measuring/measure.py's
    TreeMeter): start() right before go, stop(t1) at done."""

    def start(self) -> float: ...

    def stop(self, t1: float) -> Usage: ...


def tree_meter(kind: str, root: int, group: cgroup.Group | None) -> UsageMeter:
    """The meter of a trial of `kind` ("verify", "warmup", "timed", "profiled") on the tree rooted
    at `root`: the same for every kind, in the driver's cgroup where it has one."""
    return TreeMeter(root, group=group)


class Sampler(Protocol):
    """What watches a trial's timed phase (a profiler's sampler, clientlab/profile/samplers.py)."""

    def start(self, pids: list[int]) -> None: ...

    def halt(self, done_at: float | None = None) -> None: ...

    def stop(self) -> None: ...

REPORT_TIMEOUT_S = 120.0
TRIAL_TIMEOUT_FACTOR = 10     # a timed trial may take this many times what verification predicts…
TRIAL_TIMEOUT_FLOOR_S = 10.0  # …but never less than this


class Unsupported(Exception):
    """The driver (or its manifest) cannot do this job exactly as asked."""


class Planner(Protocol):
    """What turns a scenario into a trial's job (drivers/job.plan; the tests count its calls)."""

    def __call__(self, scenario: Scenario, endpoint: Endpoint, scratch: Path, verify: bool,
                 tag: str) -> PlannedJob: ...


class Trials:
    """Runs and stores the trials of cells, on the processes the pool gives them."""

    def __init__(self, store: Store, events: Events, pool: ProcessPool, probe: HostProbe | None,
                 scratch: Path, planner: Planner = plan, noise_meter: Callable[[], NoiseMeter] = NoiseMeter,
                 usage_meter: Callable[[str, int, cgroup.Group | None], UsageMeter] = tree_meter):
        self.store, self.events, self.pool, self.probe, self.scratch = store, events, pool, probe, scratch
        self.planner, self.noise_meter, self.usage_meter = planner, noise_meter, usage_meter

    def plan(self, cell: Cell, scenario: Scenario, verify: bool) -> PlannedJob:
        """The job of the cell's next trial, on a fresh server port where the server moves its
        ports (every trial starts on one: see the module's docstring)."""
        if cell.options.fresh_port:
            cell.server.rebind()
        return self.planner(scenario, cell.server.endpoint, self.scratch, verify=verify, tag=cell.tag)

    def run(self, cell: Cell, scenario: Scenario, kind: str, idx: int,
            samplers: Sequence[Sampler] = (), planned: PlannedJob | None = None) -> Trial:
        """One trial of `scenario` (verify, warmup, timed or profiled) on the cell's process; not
        stored. `samplers` (profiled trials: clientlab/profile) watch its timed phase. `planned`:
        its job as the cell's set-up planned it (verification), else planned here."""
        assert cell.running is not None
        self.pool.check_alive(cell)
        verify = kind == "verify"
        server = cell.server
        planned = planned or self.plan(cell, scenario, verify)
        server.configure(record_digests=verify, headers=scenario.server.headers)
        # a profiled trial (samplers) may run several times slower than a timed one (a tracer such as
        # NYTProf): it gets the scenario's own limit, as verification does
        timeout = (cell.options.trial_timeout_s or scenario.timeout_s) if verify or samplers \
            else timed_limit(cell, scenario)
        phase = timed_phase(cell.running.proc, server, planned.job, timeout, group=cell.running.group,
                            watch=server if verify else None,
                            server_cpu=True, stall_s=cell.options.stall_s, samplers=samplers,
                            noise_meter=self.noise_meter,
                            meter=self.usage_meter(kind, cell.running.proc.pid, cell.running.group))
        problems = (check_verification if verify else check_trial)(planned, phase.report, phase.snapshot)
        summary = figures.server_summary(phase.snapshot, sequential=planned.job["concurrency"] == 1)
        if phase.server_cpu_s is not None:
            summary["cpu_s"] = phase.server_cpu_s
        summary["port"] = server.endpoint.http_port  # a fresh one per trial where the server rebinds
        for path in planned.files:
            path.unlink(missing_ok=True)
        usage = phase.usage
        self.pool.trial_ended(cell)
        return Trial(
            kind=kind, idx=idx, ok=not problems,
            wall_s=usage.wall_s, user_s=usage.user_s, sys_s=usage.sys_s, peak_rss_kb=usage.peak_rss_kb,
            setup_s=phase.setup_s, work_requests=phase.snapshot.get("requests"),
            work_bytes=summary["resp_body_bytes"] + summary["req_body_bytes"],
            server=summary, problems=problems or None, noise=phase.noise.to_dict(),
            page_faults=usage.page_faults, wakeups=usage.wakeups,
            process=cell.log.process if cell.log.process >= 0 else None,
        )

    def record(self, cell: Cell, trial: Trial) -> None:
        cell.log.trials.append(trial)
        self.store.add_trial(cell.cell_id, trial)
        self.events.trial_done(cell.driver.id, cell.scenario.label, trial)

    def fresh(self, cell: Cell, kind: str, idx: int, record: bool = True) -> Trial:
        """A warm-up or timed trial at the cell's count (a new process first with fresh_process)."""
        assert cell.work is not None
        startup_s = self.pool.spawn(cell) if cell.options.fresh_process else None
        trial = self.run(cell, cell.work, kind, idx)
        if startup_s is not None:
            trial.startup_s = startup_s + (trial.setup_s or 0.0)
        if record:
            self.record(cell, trial)
        return trial

    def host_before(self, cell: Cell, deadline: Deadline) -> float | None:
        """The host probe on the driver's core, with the driver stopped, once a slow phase has
        been waited out (a second at most, never past the deadline); None without a probe."""
        if self.probe is None:
            return None
        with stopped([cell.pid] if cell.pid is not None else []):
            return self.probe.wait_fast(deadline.left(hostprobe.WAIT_FAST_S))

    def probed(self, cell: Cell, before: float | None) -> Trial:
        """A timed trial (not stored) between two readings of the host probe on the driver's core
        (`before`, from host_before), the one after taken with the driver stopped."""
        trial = self.fresh(cell, "timed", cell.log.take_idx(), record=False)
        after = None
        if self.probe is not None:
            with stopped([cell.pid] if cell.pid is not None else []):
                after = self.probe.slowdown()
        if trial.noise is not None and before is not None:
            trial.noise = {**trial.noise, "host_before": round(before, 3), "host_after": round(after or 0.0, 3)}
        return trial


def timed_limit(cell: Cell, scenario: Scenario) -> float:
    """--trial-timeout, else 10× what verification predicts for this count (at least 10 s),
    never more than the scenario's own limit."""
    if cell.options.trial_timeout_s:
        return cell.options.trial_timeout_s
    if not cell.per_request_s:
        return scenario.timeout_s
    predicted = cell.per_request_s * scenario.total_requests
    return min(scenario.timeout_s, max(TRIAL_TIMEOUT_FLOOR_S, TRIAL_TIMEOUT_FACTOR * predicted))


@dataclass
class Phase:
    """One job's timed phase: set-up time, resource use, the server's record, the driver's report."""

    setup_s: float
    usage: Usage
    snapshot: dict
    report: dict
    noise: Noise
    server_cpu_s: float | None = None


def _wait_done(proc: DriverProcess, timeout_s: float, watch: ServerSide | None, stall_s: float) -> dict:
    """The driver's `done`, within `timeout_s`; with `watch`, also a fault once the server has seen
    no new request for `stall_s` (a hung driver costs seconds, not the scenario's whole limit)."""
    if watch is None:
        return proc.receive({"done"}, timeout_s)
    deadline = time.monotonic() + timeout_s
    seen: tuple | None = None
    last_progress = time.monotonic()
    while True:
        left = deadline - time.monotonic()
        try:
            return proc.receive({"done"}, max(0.01, min(left, stall_s / 3)))
        except DriverTimeout:
            if time.monotonic() >= deadline:
                raise proc.fault(f"timed out after {timeout_s:.0f} s waiting for done", DriverTimeout) from None
        snapshot = watch.progress()
        progress = tuple(snapshot.get(k) for k in ("requests", "bytes_in", "bytes_out"))
        if progress != seen:
            seen, last_progress = progress, time.monotonic()
        elif time.monotonic() - last_progress >= stall_s:
            raise proc.fault(f"timed out: the server saw no new request or byte for {stall_s:.0f} s, "
                             "and the driver did not say done", DriverTimeout)


def timed_phase(proc: DriverProcess, server: ServerSide, job: dict, timeout_s: float,
                group: cgroup.Group | None = None, watch: ServerSide | None = None,
                server_cpu: bool = False, stall_s: float = STALL_S, samplers: Sequence[Sampler] = (),
                noise_meter: Callable[[], NoiseMeter] = NoiseMeter, meter: UsageMeter | None = None) -> Phase:
    """job → ready → (start samplers, reset counters, start meters) go → done (stop meters, stop
    samplers, read counters) → report. Samplers start on the idle driver's process tree before
    the meters, and stop after them: their own start and stop are not in the trial's figures.
    `noise_meter` makes what reads steal and other processes' CPU around the trial; `meter`
    measures the driver's tree (a TreeMeter in its group by default)."""
    t_job = time.perf_counter()
    proc.send({"type": "job", "job": job})
    answer = proc.receive({"ready"}, HELLO_TIMEOUT_S)
    if answer["type"] == "unsupported":
        raise Unsupported(str(answer.get("reason") or "driver gave no reason"))
    if answer["type"] == "error":
        raise DriverFault(f"driver could not set up the job: {answer.get('message')}")
    setup_s = time.perf_counter() - t_job
    if not server.alive():
        raise LabError(f"the bench server is gone: {server.exit_reason()}")
    for sampler in samplers:
        sampler.start(process_tree(proc.pid))
    server.reset()
    server_cpu0 = server.cpu_ns() if server_cpu else None
    noise = noise_meter()
    noise.start()
    meter = meter or TreeMeter(proc.pid, group=group)
    meter.start()
    proc.send({"type": "go"})
    done_at = None
    try:
        done = _wait_done(proc, timeout_s, watch, stall_s)
        done_at = time.time()
    finally:
        usage = meter.stop(time.perf_counter())  # also stops the sampler when the driver failed
        for sampler in samplers:   # every one off before any is waited for (samplers.Sampler)
            sampler.halt(done_at)
        for sampler in samplers:
            sampler.stop()
    disturbance = noise.stop()
    server_cpu1 = server.cpu_ns() if server_cpu0 is not None else None
    server_cpu_s = (server_cpu1 - server_cpu0) / 1e9 if server_cpu0 is not None and server_cpu1 is not None else None
    if done["type"] != "done":
        raise DriverFault(f"driver sent {done['type']} instead of done: {done.get('message') or done.get('reason')}")
    snapshot = server.counters()
    report = proc.receive({"report"}, REPORT_TIMEOUT_S)
    if report["type"] != "report":
        raise DriverFault(f"driver sent {report['type']} instead of its report")
    return Phase(setup_s, usage, snapshot, report, disturbance, server_cpu_s)
