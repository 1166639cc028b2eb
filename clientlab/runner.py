"""Running cells (driver × scenario): verification first, then warm-up and timed trials.

The cells of one scenario run together: each driver is verified and warmed up, then the timed
trials go round-robin over the drivers, one trial each per round, so that a drift of the machine
hits every driver alike. Every trial is stored as soon as it completes; a driver that fails,
hangs or lies fails its cell only. A broken lab (the bench server gone, the store unwritable)
raises LabError.

What makes trials comparable (docs/measurement.md):
- every trial starts on a fresh server port, so no TIME_WAIT or ephemeral-port state of earlier
  trials, cells or runs meets it;
- the driver runs in a cgroup of its own (CPU in ns, the tree's true peak memory);
- steal and other processes' CPU are read around every trial; a disturbed trial is run again;
- with a trial budget, request counts are scaled so that one trial lasts about that long.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Protocol, Sequence

from clientlab import cgroup, figures, hostprobe, limits, machine, paths, stats
from clientlab.errors import LabError
from clientlab.job import plan, required_capabilities
from clientlab.manifest import Driver
from clientlab.measure import TreeMeter, Usage
from clientlab.noise import Noise, NoiseMeter
from clientlab.protocol import DriverFault, DriverProcess, DriverTimeout
from clientlab.scenario import Scenario
from clientlab.server import BenchServer
from clientlab.stats import StopRule
from clientlab.store import Store, Trial
from clientlab.verify import check_trial, check_verification
from clientlab.warmup import DEFAULT as DEFAULT_WARMUP
from clientlab.warmup import WarmupPolicy

if TYPE_CHECKING:
    from clientlab.serverside import ServerSide

HELLO_TIMEOUT_S = 60.0
REPORT_TIMEOUT_S = 120.0
VERIFY_REQUESTS = 100         # verification makes about this many requests at most (or one per transfer in flight)
STALL_S = 15.0                # verification: no request reaching the server for this long = hung
TRIAL_TIMEOUT_FACTOR = 10     # a timed trial may take this many times what verification predicts…
TRIAL_TIMEOUT_FLOOR_S = 10.0  # …but never less than this
STALLED_FACTOR = 4            # a first timed trial this far over the budget stops the cell early
# a shared JIT process's warm-up work before timing, however many cells share it: how warm a
# JIT cell is must not depend on how many scenarios the run holds (warmup.WarmupPolicy)
JIT_WARM_S = 30.0   # the CLI's jit_warm_s

PLACEMENTS = ("split", "shared", "free")
# which cells take turns trial by trial: the drivers of one scenario (the scenarios one after
# another), or every cell of the run (each cell's trials spread over the whole run)
INTERLEAVES = ("scenario", "run")


class Unsupported(Exception):
    """The driver (or its manifest) cannot do this job exactly as asked."""


@dataclass
class RunOptions:
    """How cells are run. The defaults are the plain, unscaled behaviour the tests rely on; the
    CLI sets the budget, retries and placement a user run gets."""

    warmup: int = 1
    stop: StopRule = field(default_factory=StopRule)
    fresh_process: bool = False   # a new driver process per trial (cold cost) instead of one per cell
    placement: str = "split"      # split / shared / free: see Placement
    trial_budget_s: float | None = None   # scale request counts so that a trial lasts about this long
    fixed_counts: frozenset[str] = frozenset()  # scenario labels whose counts the user set: never scaled
    trial_timeout_s: float | None = None  # a timed trial's limit; None: derived from verification
    retries: int = 0              # disturbed trials run again, at most this many per cell
    fresh_port: bool = True       # a new server port for every trial (where the server can)
    host_probe: bool = True       # read the host's speed on the driver's core around timed trials
    keep_warm: bool = True        # a JIT driver's process serves every scenario of the run (see _Kept)
    interleave: str = "scenario"  # scenario / run: see INTERLEAVES and run_groups
    time_budget_s: float | None = None  # the whole run's time (interleave = scenario: a share each, run_matrix)
    forks: int = 1                # processes a cell's timed trials are spread over (_next_fork); JIT drivers: 1
    jit_warm_s: float = 0.0       # a shared JIT process's warm-up work before timing, at least (_settle)
    warmup_policy: WarmupPolicy = DEFAULT_WARMUP  # when a JIT process is warm

    def __post_init__(self) -> None:
        if self.interleave not in INTERLEAVES:
            raise ValueError(f"interleave must be one of {', '.join(INTERLEAVES)}")
        if self.placement not in PLACEMENTS:
            raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)}")


@dataclass(frozen=True)
class Placement:
    """Which core the lab's own threads, the bench server and the driver run on (None: any).

    split: server (and lab) on one core, driver on another — no competition, but every request
    pays a cross-core wake-up. shared: driver and server on one core, the lab on the other — no
    wake-up across cores, but the server's work is on the driver's core. free: the scheduler decides.
    """

    name: str
    lab: int | None
    server: int | None
    driver: int | None

    @classmethod
    def of(cls, name: str) -> "Placement":
        available = sorted(os.sched_getaffinity(0))
        if name == "free" or len(available) < 2:
            return cls(name if len(available) >= 2 else "free", None, None, None)
        first, second = available[0], available[1]
        if name == "shared":
            return cls(name, first, second, second)
        return cls("split", first, first, second)

    def apply_to_lab(self) -> None:
        if self.lab is not None:
            os.sched_setaffinity(0, {self.lab})  # the lab's own threads stay off the driver's core


@contextlib.contextmanager
def stored_run(store: Store, config: dict, placement_name: str) -> Iterator[tuple[int, Placement]]:
    """The set-up every measuring command shares: the placement applied to the lab, the run stored
    as started (with the machine and `config`), and marked complete, interrupted (Ctrl-C, SIGTERM)
    or failed when the block ends."""
    placement = Placement.of(placement_name)
    placement.apply_to_lab()
    run_id = store.start_run(machine.describe(), {**config, "placement": placement.name})
    status = "failed"
    try:
        yield run_id, placement
        status = "complete"
    except KeyboardInterrupt:
        status = "interrupted"
        raise
    finally:
        store.finish_run(run_id, status)


def loopback_run(store: Store, kind: str, drivers: Sequence[Driver], scenarios: Sequence[Scenario],
                 placement_name: str) -> contextlib.AbstractContextManager[tuple[int, Placement]]:
    """A stored run on loopback (crosscheck, calibration)."""
    config = {"kind": kind, "drivers": [d.id for d in drivers], "scenarios": [s.label for s in scenarios],
              "net": {"profile": "loopback"}}
    return stored_run(store, config, placement_name)


def pick_cpus() -> tuple[int | None, int | None]:
    """(server CPU, driver CPU) of the split placement."""
    p = Placement.of("split")
    return p.server, p.driver


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
    def trial_done(self, driver: str, scenario: str, trial: Trial) -> None: ...
    def cell_done(self, result: CellResult) -> None: ...


class Beside(Protocol):
    """Work that takes its turn right after each timed trial of a cell, with every driver process
    of the run stopped: the calibration loop of the same client (clientlab/calibrate.py)."""

    def after_trial(self, driver: Driver, scenario: Scenario, work: Scenario, server: ServerSide,
                    trial: Trial) -> None: ...


class SilentEvents:
    def cell_started(self, driver: str, scenario: str) -> None:
        pass

    def trial_done(self, driver: str, scenario: str, trial: Trial) -> None:
        pass

    def cell_done(self, result: CellResult) -> None:
        pass


def scale(scenario: Scenario, factor: float) -> Scenario:
    """The scenario with every repeated request's count multiplied by `factor` (at least 1 each);
    requests made once (a login) stay once."""
    if factor >= 1:
        return scenario
    requests = [r.model_copy(update={"repeat": max(1, math.floor(r.repeat * factor))}) if r.repeat > 1 else r
                for r in scenario.requests]
    return scenario.model_copy(update={"requests": requests})


def _round_count(n: float) -> float:
    """Two significant figures, so that counts read well in the table (1,234 → 1,200)."""
    if n < 100:
        return max(1.0, math.floor(n))
    digits = 10 ** (int(math.log10(n)) - 1)
    return math.floor(n / digits) * digits


@dataclass(frozen=True)
class CellGroup:
    """Cells that run_groups runs together: the drivers on one scenario, served by `server` (None:
    the runner's own), run with `options` (None: the runner's own; an experiment's parts differ)."""

    drivers: Sequence[Driver]
    scenario: Scenario
    server: ServerSide | None = None
    options: RunOptions | None = None


@dataclass
class _Cell:
    """One cell while its scenario runs."""

    driver: Driver
    scenario: Scenario
    cell_id: int
    tag: str
    server: ServerSide                    # what its trials are served by (BenchServer, NetLab, nginx)
    options: RunOptions                   # how it runs (an experiment's parts differ in these)
    trials: list[Trial] = field(default_factory=list)
    proc: DriverProcess | None = None
    group: cgroup.Group | None = None
    versions: dict | None = None
    work: Scenario | None = None          # the scenario at the count the timed trials use
    per_request_s: float | None = None    # from verification: what one request costs this driver
    timed_walls: list[float] = field(default_factory=list)
    timed_spent_s: float = 0.0       # the lab's time in this cell's timed rounds (the stop rule's clock)
    started: float = field(default_factory=time.monotonic)
    retries_left: int = 0
    startup_s: float | None = None   # when the lab started this cell's process
    kept_warm: bool = False          # its process came warm from an earlier scenario (_Kept)
    warm: list[float] = field(default_factory=list)  # its warm-ups' seconds per request, in order
    budget_stopped: bool = False     # its trials ended with the run's time budget (_stop_for_time)
    slow_skips: int = 0              # turns it let pass: the host still in a slow phase (_timed_round)
    processes: int = 1               # driver processes its timed trials ran in (_next_fork)
    forked_at: int = 0               # its timed trials when its current process took over
    notes: list[str] = field(default_factory=list)
    result: CellResult | None = None
    next_idx: int = 0

    def finish(self, status: str, reason: str | None = None, figs: dict | None = None) -> CellResult:
        self.result = CellResult(self.driver.id, self.scenario.label, status, reason, figs, self.versions)
        return self.result


@dataclass
class _Kept:
    """A JIT driver's process between two scenarios of a run. Its runtime compiled the client's
    hot paths (connection pool, parser, I/O loop) during earlier cells; a new process per scenario
    would start that over and keep JIT drivers from a steady state within a cell's few seconds.
    Every cell still verifies and warms up the kept process; jobs share no client state (the
    protocol: a driver closes its client at the end of each job)."""

    proc: DriverProcess
    group: cgroup.Group | None
    versions: dict
    startup_s: float

    def stop(self) -> None:
        self.proc.close()
        if self.group is not None:
            self.group.remove()


class CellRunner:
    """Runs cells against one bench server, writing to one store. Use it as a context manager
    (or call close()): it keeps warm JIT driver processes from one scenario to the next."""

    def __init__(self, server: ServerSide, store: Store, run_id: int, options: RunOptions,
                 events: Events | None = None, driver_cpu: int | None = None):
        self.server = server
        self.store = store
        self.run_id = run_id
        self.options = options
        self.events = events or SilentEvents()
        self.driver_cpu = driver_cpu
        self.scratch = paths.scratch_dir()
        # the host's slow phases on the driver's core (none when the driver is not pinned)
        self.probe = hostprobe.for_core(driver_cpu) if options.host_probe else None
        self._kept: dict[str, _Kept] = {}
        # interleave = run: a JIT driver's one process, shared by its cells while they take turns
        self._shared: dict[str, _Kept] = {}
        self._ended: dict[int, str] = {}  # pid of a shared process ended by a cell's failure -> why
        self._warm_work: dict[int, float] = {}  # pid -> seconds of warm-up trials it has run
        self.deadline: float | None = None  # the running group's share of the time budget ends
        self.beside: Beside | None = None  # runs right after each timed trial (crosscheck --bare)

    def __enter__(self) -> "CellRunner":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop the driver processes kept for later scenarios (or shared by a run's cells)."""
        while self._kept:
            self._kept.popitem()[1].stop()
        while self._shared:
            self._shared.popitem()[1].stop()

    # -- cells ------------------------------------------------------------------------------

    def run_cell(self, driver: Driver, scenario: Scenario) -> CellResult:
        return self.run_cells([driver], scenario)[0]

    def run_cells(self, drivers: list[Driver], scenario: Scenario) -> list[CellResult]:
        """Every driver on one scenario: each verified and warmed up, then timed trials round-robin."""
        return self.run_groups([CellGroup(drivers, scenario)])

    def run_in_turns(self, groups: Sequence[CellGroup], end: float | None) -> Iterator[list[CellResult]]:
        """The groups as the run's interleave says: every cell's trials spread over the time to
        `end` ("run"), or one group after another, each with a share of the time left in
        proportion to its cells ("scenario": one that ends early leaves its rest to the others)."""
        if self.options.interleave == "run":
            yield self.run_groups(groups, end)
            return
        left = sum(len(g.drivers) for g in groups)
        for g in groups:
            yield self.run_groups([g], share(end, len(g.drivers), left))
            left -= len(g.drivers)

    def run_groups(self, groups: Sequence[CellGroup], deadline: float | None = None) -> list[CellResult]:
        """Cells of several scenarios together: each verified and warmed up (scenario by scenario),
        then one timed trial of each in turn until all are done, so that a drift of the machine over
        the run hits every cell alike; results in the order the cells were given. A group may be
        served by another server than the runner's (crosscheck: nginx's cells take turns with the
        bench server's) and run with other options (an experiment's parts). Past `deadline`
        (time.monotonic), a cell that has its minimum of timed trials stops where it is."""
        self.deadline = deadline
        cells: list[_Cell] = []
        most = max(group.scenario.client.concurrency for group in groups)
        lifted = limits.lift(most, self.server)  # connection-heavy cells; restored below
        own = limits.lift_for_cells(sum(len(group.drivers) for group in groups))
        try:
            for group in groups:
                for driver in group.drivers:
                    cell = self._start(driver, group.scenario, group.server or self.server,
                                       group.options or self.options)
                    cells.append(cell)
                    shared = self._shared_for(cell)
                    with _others_paused(cells, cell, shared.proc.pid if shared else None):
                        self._guard(cell, self._prepare)
            self._settle(cells)
            while running := [c for c in cells if c.result is None]:
                for cell in running:
                    if self._out_of_time(cell):
                        self._guard(cell, self._stop_for_time)
                        continue
                    timed = len(cell.timed_walls)
                    with _others_paused(cells, cell):
                        self._guard(cell, self._timed_round)
                    if self.beside is not None and len(cell.timed_walls) > timed:
                        # every cell's process stopped: the calibration loop has the core to itself
                        with _stopped(sorted({c.proc.pid for c in cells if c.proc is not None})):
                            self.beside.after_trial(cell.driver, cell.scenario, cell.work, cell.server,
                                                    cell.trials[-1])
        except BaseException as exc:  # the lab broke (or Ctrl-C): open cells say so, the run stops
            interrupted = isinstance(exc, KeyboardInterrupt)
            reason = "interrupted" if interrupted else f"lab error: {type(exc).__name__}: {exc}"
            for cell in cells:
                if cell.result is None:
                    self._close(cell)
                    if interrupted and len(cell.timed_walls) >= cell.options.stop.min_trials:
                        # as a spent time budget would: what it has is a measurement
                        cell.notes.append(f"the run was interrupted after {len(cell.timed_walls)} timed trials")
                        self._finish_ok(cell)
                        assert cell.result is not None
                        self.store.finish_cell(cell.cell_id, "ok", None, cell.result.figures, cell.versions)
                    else:
                        self.store.finish_cell(cell.cell_id, "failed", reason, None, cell.versions)
            raise
        finally:
            for cell in cells:
                self._close(cell)
            own.restore()
            lifted.restore()
        return [c.result for c in cells if c.result is not None]

    def _start(self, driver: Driver, scenario: Scenario, server: ServerSide, options: RunOptions) -> _Cell:
        self.events.cell_started(driver.id, scenario.label)
        params = {**scenario.params, "client": scenario.client.model_dump(),
                  "sinks": sorted({r.sink for r in scenario.requests})}
        cell_id = self.store.start_cell(self.run_id, driver.id, scenario.label, params, scenario.metric,
                                        driver.manifest.departures)
        # the tag names scratch files: unique across lab processes sharing the scratch folder
        tag = f"{os.getpid()}-{self.run_id}-{cell_id}"
        return _Cell(driver, scenario, cell_id, tag, server, options, retries_left=options.retries)

    def _guard(self, cell: _Cell, step: Callable[[_Cell], None]) -> None:
        """Run one step of a cell; a driver's fault or refusal ends that cell only."""
        try:
            step(cell)
        except Unsupported as exc:
            cell.finish("unsupported", str(exc))
        except DriverFault as exc:
            failed = Trial(kind="fault", idx=len(cell.trials), ok=False, problems=[str(exc)])
            self._record(cell, failed)
            cell.finish("failed", str(exc))
        if cell.result is not None:
            self._close(cell, keep=cell.result.status == "ok")
            self.store.finish_cell(cell.cell_id, cell.result.status, cell.result.reason,
                                   cell.result.figures, cell.result.versions)
            self.events.cell_done(cell.result)

    # -- the steps of a cell ----------------------------------------------------------------

    def _prepare(self, cell: _Cell) -> None:
        """Capabilities, start, verification, the count for the trials, warm-up."""
        driver, scenario = cell.driver, cell.scenario
        missing = driver.missing()
        if missing:
            cell.finish("not-installed", missing)
            return
        probe = plan(scenario, cell.server.endpoint, self.scratch, verify=True, tag=cell.tag)
        lacking = [c for c in required_capabilities(probe) if c not in driver.manifest.capabilities]
        if lacking:
            cell.finish("unsupported", f"manifest does not claim {', '.join(lacking)}")
            return
        options = cell.options
        budget = options.trial_budget_s if scenario.label not in options.fixed_counts else None
        # every request verified body by body: a count the user fixed is for the timed trials
        # (multi-socket's 10,000 transfers of 100 KB took php-curl-multi 16 s to verify, 2 s to time)
        check = scale(scenario, max(VERIFY_REQUESTS, scenario.client.concurrency) / scenario.total_requests)
        startup_s = self._spawn(cell)
        verification = self._trial(cell, check, "verify", 0)
        verification.startup_s = startup_s + (verification.setup_s or 0.0)
        self._record(cell, verification)
        if not verification.ok:
            cell.finish("failed", "verification: " + "; ".join(verification.problems or []))
            return
        cell.per_request_s = (verification.wall_s or 0.0) / check.total_requests
        cell.work = self._fit(cell, scenario, budget, verification)
        warmup = max(options.warmup, driver.manifest.warmup) if options.warmup else 0
        # a JIT runtime (manifest warm-up > 1) compiles its hot paths over the first thousands of
        # requests: it warms up until three trials in a row cost the same per request
        until_steady = warmup > 1 and not options.fresh_process
        policy = options.warmup_policy
        least_s = policy.fresh_min_s if until_steady and not cell.kept_warm else 0.0
        most_s, most_trials = policy.max_s + least_s, policy.max_trials * (2 if least_s else 1)
        if cell.kept_warm and self._shares(cell):
            most_s = policy.shared_max_s
        per_request = cell.warm
        idx, warm_started = 0, time.monotonic()

        def warming() -> bool:
            elapsed = time.monotonic() - warm_started
            if elapsed < least_s:
                return idx < most_trials
            return idx < most_trials and not policy.is_steady(per_request) and elapsed < most_s

        while idx < warmup or (until_steady and warming()):
            idx += 1
            if not self._warmup_trial(cell, idx - 1):
                return
        cell.next_idx = idx
        if until_steady and not policy.is_steady(per_request) and not self._shares(cell):  # shared: _settle says
            self._not_steady(cell)

    def _warmup_trial(self, cell: _Cell, idx: int, refit: bool = True) -> bool:
        """One warm-up trial; a failed one ends the cell (False). Before the timed trials (refit)
        it also sets their count; a later process's warm-up keeps it (_next_fork)."""
        trial = self._fresh_trial(cell, "warmup", idx)
        if cell.proc is not None:
            self._warm_work[cell.proc.pid] = self._warm_work.get(cell.proc.pid, 0.0) + (trial.wall_s or 0.0)
        if not trial.ok:
            cell.finish("failed", f"warmup trial {idx}: " + "; ".join(trial.problems or []))
            return False
        assert cell.work is not None
        cell.warm.append((trial.wall_s or 0.0) / cell.work.total_requests)
        budget = cell.options.trial_budget_s if cell.scenario.label not in cell.options.fixed_counts else None
        if budget and refit:  # the latest warm-up is the best guess of a timed trial
            cell.per_request_s = cell.warm[-1]
            cell.work = self._fit(cell, cell.scenario, budget, trial)
        return True

    def _not_steady(self, cell: _Cell) -> None:
        last = ", ".join(f"{v * 1e6:,.0f}" for v in cell.warm[-3:])
        cell.notes.append(f"not steady after {len(cell.warm)} warm-up trials (the last ones {last} µs per request)")

    def _settle(self, cells: list[_Cell]) -> None:
        """The cells of JIT processes shared over the run warm up in turn until each is settled
        (WarmupPolicy.is_settled) and their process has done `jit_warm_s` of warm-up work in all,
        each process for at most the policy's settle_max_s beyond that, never past the deadline."""
        jit = [c for c in cells if c.result is None and self._shares(c) and len(c.warm) > 1]
        spent: dict[int, float] = {}

        def pending_cell(c: _Cell) -> bool:
            if c.result is not None or c.proc is None:
                return False
            pid = c.proc.pid
            short = self._warm_work.get(pid, 0.0) < c.options.jit_warm_s
            policy = c.options.warmup_policy
            unsettled = not policy.is_settled(c.warm) and len(c.warm) < policy.settle_max_trials
            return (short or unsettled) and spent.get(pid, 0.0) < policy.settle_max_s + c.options.jit_warm_s

        while pending := [c for c in jit if pending_cell(c)]:
            if self._past_deadline():
                break
            for cell in pending:
                assert cell.proc is not None
                pid, started = cell.proc.pid, time.monotonic()
                with _others_paused(cells, cell):
                    self._guard(cell, self._settling_trial)
                spent[pid] = spent.get(pid, 0.0) + time.monotonic() - started
        for cell in jit:
            if cell.result is None and not cell.options.warmup_policy.is_settled(cell.warm):
                self._not_steady(cell)

    def _settling_trial(self, cell: _Cell) -> None:
        cell.next_idx += 1
        self._warmup_trial(cell, cell.next_idx - 1)

    def _fit(self, cell: _Cell, scenario: Scenario, budget: float | None, measured: Trial) -> Scenario:
        """The scenario at the count whose trial lasts about `budget` (never more than written)."""
        if not budget or not cell.per_request_s:
            return scenario
        wanted = _round_count(budget / cell.per_request_s)
        factor = min(1.0, wanted / scenario.total_requests)
        if factor < 1 and cell.work is None:
            cell.notes.append(f"{scenario.total_requests:,} requests scaled to fit a {budget:g} s trial")
        return scale(scenario, factor)

    def _timed_round(self, cell: _Cell) -> None:
        """One timed trial; finish when the stop rule says so. A disturbed trial is stored apart and
        run again at the cell's next turn, while retries remain: the other cells' trials come
        between, and a slow phase of the host rarely outlasts them (run again at once, three
        retries in a row could all fall in one long phase). Past the time budget a disturbed
        trial is kept (flagged), so that the budget holds. The turn may first start the cell's
        next process (_fork_due), and is let pass when the host is still slow after the wait."""
        assert cell.work is not None
        started = time.monotonic()
        if self._fork_due(cell) and not self._next_fork(cell):
            return
        before = self._host_before(cell)
        if (before is not None and before > hostprobe.SLOW_LIMIT and cell.retries_left > 0
                and not self._past_deadline()):
            # still in a slow phase after the wait: the trial would be disturbed, so it waits for
            # the cell's next turn instead of being run and thrown away (it counts as a retry)
            cell.retries_left -= 1
            cell.slow_skips += 1
            cell.timed_spent_s += time.monotonic() - started
            return
        trial = self._probed_trial(cell, before)
        reason = Noise.of(trial.noise, trial.wall_s or 0.0).disturbed() if trial.ok and trial.noise else None
        if reason and cell.retries_left > 0 and not self._past_deadline():
            cell.retries_left -= 1
            trial.kind, trial.problems = "disturbed", [f"disturbed, run again: {reason}"]
            self._record(cell, trial)
            cell.timed_spent_s += time.monotonic() - started
            return
        self._record(cell, trial)
        cell.timed_spent_s += time.monotonic() - started
        if not trial.ok:
            cell.finish("failed", f"timed trial {trial.idx}: " + "; ".join(trial.problems or []))
            return
        cell.timed_walls.append(trial.wall_s or 0.0)
        budget = cell.options.trial_budget_s
        stalled = (budget and len(cell.timed_walls) == 1 and cell.scenario.label not in cell.options.fixed_counts
                   and (trial.wall_s or 0.0) > STALLED_FACTOR * budget)
        if stalled:
            cell.notes.append(f"stopped after one timed trial: it took {trial.wall_s:.2f} s, "
                              f"over {STALLED_FACTOR}× the {budget:g} s budget")
        if stalled or cell.options.stop.done(cell.timed_walls, cell.timed_spent_s):
            self._finish_ok(cell)

    def _fork_due(self, cell: _Cell) -> bool:
        """Whether the cell's next timed trial starts in a new process: its timed trials are spread
        over `forks` processes, a new one after each ceil(min_trials / forks) of them. A process
        keeps a state of its own for life (where its heap and buffers landed, what its allocator
        did): cells whose trials agreed within 2 % moved by 25-37 % from one run to the next
        (ruby-net-http and perl-lwp on the 335 KB JSON), so a median over one process is that
        process's figure. JIT drivers keep their one process (a new JVM needs its minute)."""
        forks, done = cell.options.forks, len(cell.timed_walls)
        if forks <= 1 or cell.options.fresh_process or done == 0 or done == cell.forked_at:
            return False
        if max(cell.options.warmup, cell.driver.manifest.warmup) > 1:
            return False
        return done % math.ceil(cell.options.stop.min_trials / forks) == 0

    def _next_fork(self, cell: _Cell) -> bool:
        """A new process for the cell, warmed up as its first was (no verification: the program is
        the same, and every timed trial is checked); False when it failed (the cell ends)."""
        cell.forked_at = len(cell.timed_walls)
        self._spawn(cell)
        cell.processes += 1
        if cell.options.warmup:
            cell.next_idx += 1
            return self._warmup_trial(cell, cell.next_idx - 1, refit=False)
        return True

    def _past_deadline(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def _out_of_time(self, cell: _Cell) -> bool:
        return self._past_deadline() and len(cell.timed_walls) >= cell.options.stop.min_trials

    def _stop_for_time(self, cell: _Cell) -> None:
        cell.notes.append(f"stopped after {len(cell.timed_walls)} timed trials: the run's time budget "
                          f"({cell.options.time_budget_s:g} s) was spent")
        cell.budget_stopped = True
        self._finish_ok(cell)

    def _finish_ok(self, cell: _Cell) -> None:
        # start-up = spawn to the first `ready` (fresh processes: the median over trials)
        starts = [t.startup_s for t in cell.trials if t.startup_s is not None]
        assert cell.work is not None
        figs = figures.cell_figures(cell.trials, cell.scenario.metric, cell.work.total_requests,
                                    stats.median(starts[1:] or starts))
        figs["elapsed_s"] = time.monotonic() - cell.started
        figs["scenario_requests"] = cell.scenario.total_requests
        disturbed = [t for t in cell.trials if t.kind == "disturbed"]
        figs["disturbed_trials"] = len(disturbed)
        kept = [t for t in cell.trials if t.kind == "timed" and t.noise
                and Noise.of(t.noise, t.wall_s or 0.0).disturbed()]
        if kept:
            cell.notes.append(f"{len(kept)} timed trial(s) disturbed and kept (no retries left)")
        figs["disturbed_kept"] = len(kept)
        figs["slow_host_skips"] = cell.slow_skips
        figs["processes"] = cell.processes
        if cell.slow_skips:
            cell.notes.append(f"{cell.slow_skips} turn(s) let pass: the host was in a slow phase on the "
                              f"driver's core right before (over {hostprobe.SLOW_LIMIT:g}× after the wait)")
        figs["budget_stopped"] = cell.budget_stopped
        if cell.group is not None:
            figs["measured_by"] = f"cgroup v{cell.group.version}"
        else:
            figs["measured_by"] = "proc"
        figs["kept_warm"] = cell.kept_warm
        figs["notes"] = cell.notes
        cell.finish("ok", None, figs)

    # -- pieces -----------------------------------------------------------------------------

    def _spawn(self, cell: _Cell) -> float:
        """Start the cell's driver (in its own cgroup where the lab can make one), or take the one
        kept warm from an earlier scenario; the start-up time (as measured when it started)."""
        self._close(cell)
        shared = self._shared_for(cell)
        if shared is not None and shared.proc.proc.poll() is None:
            cell.proc, cell.group, cell.versions = shared.proc, shared.group, shared.versions
            cell.kept_warm, cell.startup_s = True, shared.startup_s
            return shared.startup_s
        kept = self._kept.pop(cell.driver.id, None)
        if kept is not None and kept.proc.proc.poll() is None and self._keeps(cell):
            cell.proc, cell.group, cell.versions = kept.proc, kept.group, kept.versions
            cell.kept_warm, cell.startup_s = True, kept.startup_s
            if self._shares(cell):
                self._shared[cell.driver.id] = kept
            return kept.startup_s
        if kept is not None:
            kept.stop()
        cell.group = cgroup.open_group("driver")
        t0 = time.perf_counter()
        argv = [*cell.server.driver_prefix, *cell.driver.argv]
        if cell.group is not None:
            argv = cell.group.wrap(argv)
        proc = DriverProcess(argv, cell.driver.folder, cpu=self.driver_cpu, env=cell.driver.env())
        cell.proc = proc
        hello = proc.hello(HELLO_TIMEOUT_S)
        cell.versions = hello["versions"]
        cell.startup_s = time.perf_counter() - t0
        if self._shares(cell):
            self._shared[cell.driver.id] = _Kept(proc, cell.group, cell.versions, cell.startup_s)
        return cell.startup_s

    def _keeps(self, cell: _Cell) -> bool:
        """A JIT driver (warm-up > 1, as in _prepare) keeps its process across the scenarios of a run."""
        options = cell.options
        return (options.keep_warm and not options.fresh_process and options.warmup > 0
                and max(options.warmup, cell.driver.manifest.warmup) > 1)

    def _shared_for(self, cell: _Cell) -> _Kept | None:
        """The process this cell will share with the run's other cells of its driver, if any."""
        return self._shared.get(cell.driver.id) if self._shares(cell) else None

    def _shares(self, cell: _Cell) -> bool:
        """With the cells of a run interleaved, a JIT driver's cells share one process."""
        return cell.options.interleave == "run" and self._keeps(cell)

    def _server_group(self, server: ServerSide) -> cgroup.Group | None:
        """The server's CPU is read per trial too (per-request server CPU): its group."""
        return cgroup.group_of(server.proc.pid, "server")

    def _close(self, cell: _Cell, keep: bool = False) -> None:
        """End the cell's driver process, or (keep: a JIT driver that finished well) keep it for
        the next scenario. A process shared by a run's cells stays for the others unless this
        cell failed (its process crashed, hung or lied): then it ends, and so do their cells."""
        shared = self._shared.get(cell.driver.id)
        if shared is not None and cell.proc is shared.proc:
            failed = cell.result is not None and cell.result.status == "failed"
            if not failed and shared.proc.proc.poll() is None:
                cell.proc = cell.group = None
            else:
                del self._shared[cell.driver.id]
                self._ended[shared.proc.pid] = (f"{cell.scenario.label} failed: {cell.result.reason}"
                                                if failed else "it ended")
                cell.group = None
                shared.stop()
                cell.proc = None
        if keep and cell.proc is not None and cell.proc.proc.poll() is None and self._keeps(cell):
            self._kept[cell.driver.id] = _Kept(cell.proc, cell.group, cell.versions, cell.startup_s or 0.0)
            cell.proc = cell.group = None
        if cell.proc is not None:
            cell.proc.close()
            cell.proc = None
        if cell.group is not None:
            cell.group.remove()
            cell.group = None
        for path in Path(self.scratch).glob(f"sink-{cell.tag}-*"):
            path.unlink(missing_ok=True)

    def _host_before(self, cell: _Cell) -> float | None:
        """The host probe on the driver's core, with the driver stopped, once a slow phase has
        been waited out (a second at most); None without a probe."""
        if self.probe is None:
            return None
        with _stopped([cell.proc.pid] if cell.proc is not None else []):
            return self.probe.wait_fast(self._wait_limit())

    def _probed_trial(self, cell: _Cell, before: float | None) -> Trial:
        """A timed trial between two readings of the host probe on the driver's core (`before`,
        from _host_before), the one after taken with the driver stopped."""
        after = None
        trial = self._fresh_trial(cell, "timed", cell.next_idx, record=False)
        cell.next_idx += 1
        if self.probe is not None:
            with _stopped([cell.proc.pid] if cell.proc is not None else []):
                after = self.probe.slowdown()
        if trial.noise is not None and before is not None:
            trial.noise = {**trial.noise, "host_before": round(before, 3), "host_after": round(after or 0.0, 3)}
        return trial

    def _wait_limit(self) -> float:
        """How long a trial may wait for a slow phase of the host to pass: not past the deadline."""
        if self.deadline is None:
            return hostprobe.WAIT_FAST_S
        return max(0.0, min(hostprobe.WAIT_FAST_S, self.deadline - time.monotonic()))

    def _fresh_trial(self, cell: _Cell, kind: str, idx: int, record: bool = True) -> Trial:
        """A warm-up or timed trial at the cell's count (a new process first with --fresh-process)."""
        assert cell.work is not None
        startup_s = self._spawn(cell) if cell.options.fresh_process else None
        trial = self._trial(cell, cell.work, kind, idx)
        if startup_s is not None:
            trial.startup_s = startup_s + (trial.setup_s or 0.0)
        if record:
            self._record(cell, trial)
        return trial

    def _trial(self, cell: _Cell, scenario: Scenario, kind: str, idx: int) -> Trial:
        assert cell.proc is not None
        if cell.proc.proc.poll() is not None:
            why = self._ended.get(cell.proc.pid)
            raise DriverFault(f"the driver's process, shared with its other cells, was ended when {why}" if why
                              else f"the driver's process has exited (code {cell.proc.proc.returncode})")
        verify = kind == "verify"
        server = cell.server
        if cell.options.fresh_port:
            server.rebind()
        planned = plan(scenario, server.endpoint, self.scratch, verify=verify, tag=cell.tag)
        server.configure(record_digests=verify)
        if verify:
            timeout = cell.options.trial_timeout_s or scenario.timeout_s
        else:
            timeout = self._timed_limit(cell, scenario)
        phase = timed_phase(cell.proc, server, planned.job, timeout, group=cell.group,
                            watch=server if verify else None, server_group=self._server_group(server))
        problems = (check_verification if verify else check_trial)(planned, phase.report, phase.snapshot)
        summary = figures.server_summary(phase.snapshot, sequential=planned.job["concurrency"] == 1)
        if phase.server_cpu_s is not None:
            summary["cpu_s"] = phase.server_cpu_s
        summary["port"] = server.endpoint.http_port  # a fresh one per trial where the server rebinds
        for path in planned.files:
            path.unlink(missing_ok=True)
        usage = phase.usage
        return Trial(
            kind=kind, idx=idx, ok=not problems,
            wall_s=usage.wall_s, user_s=usage.user_s, sys_s=usage.sys_s, peak_rss_kb=usage.peak_rss_kb,
            setup_s=phase.setup_s, work_requests=phase.snapshot.get("requests"),
            work_bytes=summary["resp_body_bytes"] + summary["req_body_bytes"],
            server=summary, problems=problems or None, noise=phase.noise.to_dict(),
            page_faults=usage.page_faults, wakeups=usage.wakeups,
        )

    def _timed_limit(self, cell: _Cell, scenario: Scenario) -> float:
        """--trial-timeout, else 10× what verification predicts for this count (at least 10 s),
        never more than the scenario's own limit."""
        if cell.options.trial_timeout_s:
            return cell.options.trial_timeout_s
        if not cell.per_request_s:
            return scenario.timeout_s
        predicted = cell.per_request_s * scenario.total_requests
        return min(scenario.timeout_s, max(TRIAL_TIMEOUT_FLOOR_S, TRIAL_TIMEOUT_FACTOR * predicted))

    def _record(self, cell: _Cell, trial: Trial) -> None:
        cell.trials.append(trial)
        self.store.add_trial(cell.cell_id, trial)
        self.events.trial_done(cell.driver.id, cell.scenario.label, trial)




@contextlib.contextmanager
def _others_paused(cells: list[_Cell], active: _Cell, spare: int | None = None) -> Iterator[None]:
    """The other drivers of the scenario wait between their trials, but a runtime's own threads
    (a JIT compiling, a GC, timers) would still run on the driver's core during this cell's trial:
    they are stopped (SIGSTOP to their process groups) and continued afterwards. The active
    cell's process, and `spare` (the process it is about to share), run."""
    running = {active.proc.pid if active.proc is not None else None, spare}
    with _stopped(sorted({c.proc.pid for c in cells if c is not active and c.proc is not None
                          and c.result is None and c.proc.pid not in running})):
        yield


@contextlib.contextmanager
def _stopped(groups: list[int]) -> Iterator[None]:
    """These process groups stopped (SIGSTOP) for the block, continued after."""
    stopped = []
    for pid in groups:
        try:
            os.killpg(pid, signal.SIGSTOP)
            stopped.append(pid)
        except OSError:
            pass
    try:
        yield
    finally:
        for pid in stopped:
            try:
                os.killpg(pid, signal.SIGCONT)
            except OSError:
                pass


@dataclass
class Phase:
    """One job's timed phase: set-up time, resource use, the server's record, the driver's report."""

    setup_s: float
    usage: Usage
    snapshot: dict
    report: dict
    noise: Noise
    server_cpu_s: float | None = None


def _wait_done(proc: DriverProcess, timeout_s: float, watch: ServerSide | None) -> dict:
    """The driver's `done`, within `timeout_s`; with `watch`, also a fault once the server has seen
    no new request for STALL_S (a hung driver costs seconds, not the scenario's whole limit)."""
    if watch is None:
        return proc.receive({"done"}, timeout_s)
    deadline = time.monotonic() + timeout_s
    seen: tuple | None = None
    last_progress = time.monotonic()
    while True:
        left = deadline - time.monotonic()
        try:
            return proc.receive({"done"}, max(0.01, min(left, STALL_S / 3)))
        except DriverTimeout:
            if time.monotonic() >= deadline:
                raise proc.fault(f"timed out after {timeout_s:.0f} s waiting for done", DriverTimeout) from None
        snapshot = watch.progress()
        progress = tuple(snapshot.get(k) for k in ("requests", "bytes_in", "bytes_out"))
        if progress != seen:
            seen, last_progress = progress, time.monotonic()
        elif time.monotonic() - last_progress >= STALL_S:
            raise proc.fault(f"timed out: the server saw no new request or byte for {STALL_S:.0f} s, "
                             "and the driver did not say done", DriverTimeout)


def timed_phase(proc: DriverProcess, server: ServerSide, job: dict, timeout_s: float,
                group: cgroup.Group | None = None, watch: ServerSide | None = None,
                server_group: cgroup.Group | None = None) -> Phase:
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
    server_cpu0 = server_group.cpu().total_ns if server_group else None
    noise = NoiseMeter()
    noise.start()
    meter = TreeMeter(proc.pid, group=group)
    meter.start()
    proc.send({"type": "go"})
    try:
        done = _wait_done(proc, timeout_s, watch)
    finally:
        usage = meter.stop(time.perf_counter())  # also stops the sampler when the driver failed
    disturbance = noise.stop()
    server_cpu_s = (server_group.cpu().total_ns - server_cpu0) / 1e9 if server_group else None
    if done["type"] != "done":
        raise DriverFault(f"driver sent {done['type']} instead of done: {done.get('message') or done.get('reason')}")
    snapshot = server.counters()
    report = proc.receive({"report"}, REPORT_TIMEOUT_S)
    if report["type"] != "report":
        raise DriverFault(f"driver sent {report['type']} instead of its report")
    return Phase(setup_s, usage, snapshot, report, disturbance, server_cpu_s)


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


def share(end: float | None, weight: float, weight_left: float) -> float | None:
    """The deadline of the next part of the time left before `end`, in proportion to its weight
    (its cells) among those still to run: a part that ends early leaves its rest to the others."""
    if end is None:
        return None
    now = time.monotonic()
    return now + max(0.0, end - now) * weight / max(weight_left, weight, 1e-9)


def run_matrix(store: Store, run_id: int, drivers: list[Driver], scenarios: list[Scenario],
               options: RunOptions, events: Events | None = None,
               after_cell=None, network: Callable[[int | None], ServerSide] | None = None,
               ) -> list[CellResult]:  # noqa: ANN001 - callable(CellResult)
    """Every driver on every scenario (scenario by scenario, the drivers' trials interleaved), with
    one bench server (or one network lab) for the whole run. `network(cpu)` opens the server side;
    default: the bench server on loopback."""
    placement = Placement.of(options.placement)
    placement.apply_to_lab()
    results = []
    with ((network or (lambda cpu: BenchServer(cpu=cpu)))(placement.server) as server,
          CellRunner(server, store, run_id, options, events, placement.driver) as runner):
        end = time.monotonic() + options.time_budget_s if options.time_budget_s else None
        for batch in runner.run_in_turns([CellGroup(drivers, scenario) for scenario in scenarios], end):
            for result in batch:
                results.append(result)
                if after_cell:
                    after_cell(result)
    return results
