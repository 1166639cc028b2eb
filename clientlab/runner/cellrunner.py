"""The cells of a run, taking turns: each verified and warmed up, then one timed trial of each in
turn, so that a drift of the machine hits every cell alike. Every trial is stored as soon as it
completes; a driver that fails, hangs or lies fails its cell only. A broken lab (the bench server
gone, the store unwritable) raises LabError, and Ctrl-C keeps what is measured."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from clientlab import paths
from clientlab.drivers.build import Readiness
from clientlab.drivers.job import plan
from clientlab.drivers.manifest import Driver
from clientlab.drivers.protocol import DriverFault
from clientlab.measuring import cgroup, hostprobe, limits
from clientlab.measuring.clock import SYSTEM, Clock
from clientlab.measuring.noise import HostProbe, NoiseMeter
from clientlab.runner import allocator
from clientlab.runner.cell import Beside, Cell, CellGroup, CellResult, Events, SilentEvents, TrialLog
from clientlab.runner.deadline import NONE, Deadline
from clientlab.runner.options import RunOptions
from clientlab.runner.pool import ProcessPool, others_paused, stopped
from clientlab.runner.prepare import prepare
from clientlab.runner.timed import TimedTurns
from clientlab.runner.trial import Planner, Trials, Unsupported, UsageMeter, tree_meter
from clientlab.runner.warming import Warming, fit
from clientlab.scenario import Scenario
from clientlab.store import Store, Trial

if TYPE_CHECKING:
    from clientlab.servers.side import ServerSide


class Profiler(Protocol):
    """Work on a cell that finished measured, before its process is released: its profiled
    trials (clientlab/profile/profiled.py), which add the CPU's layers to its figures."""

    def profile(self, cell: Cell, trials: Trials) -> None: ...


class CellRunner:
    """Runs cells against one server side, writing to one store. Use it as a context manager (or
    call close()): its pool keeps warm JIT driver processes from one scenario to the next.

    Its seams, each with the real thing by default: `readiness` reads whether each driver can
    run, once a driver (the run's own, where a command has read its drivers already); `planner`
    makes each trial's job; `clock` times the lab's own steps (measuring/clock.py); `probe_for`
    gives the host probe of the driver's core (None: unpinned, or no probe); `noise_meter` reads
    steal and other processes' CPU around each trial; `usage_meter` measures the driver's CPU,
    memory and time in each trial, given the trial's kind (runner/trial.py)."""

    def __init__(self, server: ServerSide, store: Store, run_id: int, options: RunOptions,
                 events: Events | None = None, driver_cpu: int | None = None, *,
                 readiness: Readiness | None = None, planner: Planner = plan, clock: Clock = SYSTEM,
                 probe_for: Callable[[int | None], HostProbe | None] = hostprobe.for_core,
                 noise_meter: Callable[[], NoiseMeter] = NoiseMeter,
                 usage_meter: Callable[[str, int, cgroup.Group | None], UsageMeter] = tree_meter):
        self.server, self.store, self.run_id, self.options = server, store, run_id, options
        self.events = events or SilentEvents()
        self.readiness, self.clock = readiness or Readiness(), clock
        self.scratch = paths.scratch_dir()
        # the host's slow phases on the driver's core (none when the driver is not pinned)
        probe = probe_for(driver_cpu) if options.host_probe else None
        self.pool = ProcessPool(driver_cpu, clock)
        self.trials = Trials(store, self.events, self.pool, probe, self.scratch, planner, noise_meter, usage_meter)
        self.warming = Warming(self.trials, self.pool, clock)
        self.turns = TimedTurns(self.trials, self.warming, self.pool, clock)
        self.beside: Beside | None = None  # runs right after each timed trial (crosscheck --bare)
        # profiles each measured cell (run --profile, profile)
        self.profiler: Profiler | None = options.profiler(store) if options.profiler else None

    def __enter__(self) -> CellRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.pool.close()

    def run_cell(self, driver: Driver, scenario: Scenario) -> CellResult:
        return self.run_cells([driver], scenario)[0]

    def run_cells(self, drivers: list[Driver], scenario: Scenario) -> list[CellResult]:
        """Every driver on one scenario: each verified and warmed up, then timed trials round-robin."""
        return self.run_groups([CellGroup(drivers, scenario)])

    def run_in_turns(self, groups: Sequence[CellGroup], deadline: Deadline) -> Iterator[list[CellResult]]:
        """The groups as the run's interleave says: every cell's trials spread over the time to
        the deadline ("run"), or one group after another, each with a share of the time left in
        proportion to its cells ("scenario": one that ends early leaves its rest to the others)."""
        if self.options.interleave == "run":
            yield self.run_groups(groups, deadline)
            return
        left = sum(len(g.drivers) for g in groups)
        for g in groups:
            yield self.run_groups([g], deadline.share(len(g.drivers), left))
            left -= len(g.drivers)

    def run_groups(self, groups: Sequence[CellGroup], deadline: Deadline = NONE) -> list[CellResult]:
        """Cells of several scenarios together: each verified and warmed up (scenario by scenario),
        then one timed trial of each in turn until all are done; results in the order the cells
        were given. A group may be served by another server than the runner's (crosscheck: nginx's
        cells take turns with the bench server's) and run with other options (an experiment's
        parts). Past the deadline, a cell that has its minimum of timed trials stops where it is."""
        cells: list[Cell] = []
        most = max(group.scenario.client.concurrency for group in groups)
        lifted = limits.lift(most, self.server)  # connection-heavy cells; restored below
        own = limits.lift_for_cells(sum(len(group.drivers) for group in groups))
        try:
            for group in groups:
                for driver in group.drivers:
                    cells.append(cell := self._start(driver, group))
                    with others_paused(cells, cell, self.pool.shared_pid(cell)):
                        self._guard(cell, self._prepare)
            self._settle(cells, deadline)
            self._take_turns(cells, deadline)
        except BaseException as exc:  # the lab broke (or Ctrl-C): open cells say so, the run stops
            self._abandon(cells, exc)
            raise
        finally:
            for cell in cells:
                self._close(cell)
            own.restore()
            lifted.restore()
        return [c.result for c in cells if c.result is not None]

    def _start(self, driver: Driver, group: CellGroup) -> Cell:
        scenario, options = group.scenario, group.options or self.options
        self.events.cell_started(driver.id, scenario.label)
        params = {**scenario.params, "client": scenario.client.model_dump(),
                  "sinks": sorted({r.sink for r in scenario.requests})}
        cell_id = self.store.start_cell(self.run_id, driver.id, scenario.label, params, scenario.metric,
                                        driver.manifest.departures)
        # the tag names scratch files: unique across lab processes sharing the scratch folder
        tag = f"{os.getpid()}-{self.run_id}-{cell_id}"
        return Cell(driver, scenario, cell_id, tag, group.server or self.server, options,
                    TrialLog(retries_left=options.retries))

    def _guard(self, cell: Cell, step: Callable[[Cell], object]) -> None:
        """Run one step of a cell; a driver's fault or refusal ends that cell only."""
        try:
            step(cell)
        except Unsupported as exc:
            cell.finish("unsupported", str(exc))
        except DriverFault as exc:
            self.trials.record(cell, Trial(kind="fault", idx=len(cell.log.trials), ok=False, problems=[str(exc)]))
            cell.finish("failed", str(exc))
        if cell.result is not None and cell.result.status == "ok" and self.profiler is not None:
            # extra trials on the same process, after the timed ones: never in the figures
            self.profiler.profile(cell, self.trials)
        if cell.result is not None:
            self._close(cell, keep=cell.result.status == "ok")
            self.store.finish_cell(cell.cell_id, cell.result.status, cell.result.reason,
                                   cell.result.figures, cell.result.versions)
            self.events.cell_done(cell.result)

    def _prepare(self, cell: Cell) -> None:
        """Set-up (readiness, verification's job, capabilities: runner/prepare.py), start,
        verification, the count for the trials, warm-up."""
        prepared = prepare(cell, self.readiness, self.trials)
        if prepared.missing:
            cell.finish("not-installed", prepared.missing)
            return
        if prepared.lacking:
            cell.finish("unsupported", f"manifest does not claim {', '.join(prepared.lacking)}")
            return
        check = prepared.check
        assert check is not None
        startup_s = self.pool.spawn(cell)
        verification = self.trials.run(cell, check, "verify", 0, planned=prepared.planned)
        verification.startup_s = startup_s + (verification.setup_s or 0.0)
        self.trials.record(cell, verification)
        if not verification.ok:
            cell.finish("failed", "verification: " + "; ".join(verification.problems or []))
            return
        cell.per_request_s = (verification.wall_s or 0.0) / check.total_requests
        cell.work = fit(cell)
        self.warming.warm_up(cell)

    def _settle(self, cells: list[Cell], deadline: Deadline) -> None:
        """The cells of JIT processes shared over the run warm up in turn until each is settled
        (Warming.unsettled), never past the deadline."""
        jit = [c for c in cells if c.open and self.pool.shares(c) and len(c.log.warm) > 1]
        spent: dict[int, float] = {}
        while pending := [c for c in jit if self.warming.unsettled(c, spent)]:
            if deadline.passed():
                break
            for cell in pending:
                pid, started = cell.pid, self.clock.monotonic()
                with others_paused(cells, cell):
                    self._guard(cell, self.warming.trial)
                if pid is not None:
                    spent[pid] = spent.get(pid, 0.0) + self.clock.monotonic() - started
        for cell in jit:
            if cell.open and not cell.options.warmup_policy.is_settled(cell.log.warm):
                self.warming.not_steady(cell)

    def _take_turns(self, cells: list[Cell], deadline: Deadline) -> None:
        """One timed trial of each open cell in turn, until every cell is done. With a check
        beside the cells that paces them (Beside.most_pairs), each trial is followed by the
        check's round, and a cell that has its minimum of trials stops once the check has
        decided. The deadline keeps back the closing work of the cells still open (their
        allocator modes: TimedTurns.closing_s), so that the time budget holds."""
        beside = self.beside
        most = beside.most_pairs if beside is not None else None
        checked = most is not None
        self.turns.held = _PacedModes(self, cells, deadline) if checked else None
        spent: dict[int, float] = {}   # paced: each cell's time in its turns and the check's rounds
        last: dict[int, float] = {}    # ... in its last turn
        while running := [c for c in cells if c.open]:
            if checked and not self._less_closing(deadline, cells, checked).passed():
                running = _time_fair(running, spent, last)
            for cell in running:
                turns_end = self._less_closing(deadline, cells, checked)
                if self.turns.out_of_time(cell, turns_end, checked):
                    with others_paused(cells, cell):
                        self._guard(cell, self.turns.stop_for_time)
                    self._modes_beside(cells, cell)
                    continue
                timed, started = len(cell.log.timed_walls), self.clock.monotonic()
                with others_paused(cells, cell):
                    self._guard(cell, lambda c: self.turns.turn(c, turns_end, most))
                if beside is not None and len(cell.log.timed_walls) > timed:
                    # the timed trial just made (allocator modes' trials may follow it in the log)
                    trial = next(t for t in reversed(cell.log.trials) if t.kind == "timed")
                    # every cell's process stopped: the calibration loop has the core to itself
                    with stopped(sorted({c.pid for c in cells if c.pid is not None})):
                        beside.after_trial(cell.driver, cell.scenario, cell.work, cell.server, trial)
                    if (checked and cell.open and len(cell.log.timed_walls) >= cell.options.stop.min_trials
                            and beside.decided(cell.driver.id, cell.scenario.label)):
                        with others_paused(cells, cell):
                            self._guard(cell, self.turns.finish)
                last[cell.cell_id] = self.clock.monotonic() - started
                spent[cell.cell_id] = spent.get(cell.cell_id, 0.0) + last[cell.cell_id]
                self._modes_beside(cells, cell)

    def _less_closing(self, deadline: Deadline, cells: list[Cell], checked: bool) -> Deadline:
        """The deadline for the cells' turns: the run's, less the closing work of the open cells."""
        if deadline.end is None:
            return deadline
        return Deadline(deadline.end - sum(self.turns.closing_s(c, checked) for c in cells), deadline.clock)

    def _modes_beside(self, cells: list[Cell], cell: Cell) -> None:
        """A cell that just ended measured, with trials in its allocator modes: the check beside
        it runs its own rounds in the same modes."""
        if self.beside is None or cell.result is None or cell.result.status != "ok" or cell.work is None:
            return
        if self.beside.most_pairs is not None:
            return   # a check that paces the cells had its round right after each (_PacedModes)
        modes = [t for t in cell.log.trials if t.kind.startswith(allocator.KIND_PREFIX) and t.ok]
        if modes:   # a cell ends once: it takes no turn after this
            with stopped(sorted({c.pid for c in cells if c.pid is not None})):
                self.beside.after_modes(cell.driver, cell.scenario, cell.work, cell.server, modes)

    def _abandon(self, cells: list[Cell], exc: BaseException) -> None:
        """The run stops: a cell with its minimum of timed trials is measured when it was Ctrl-C
        (as a spent time budget would leave it); any other open cell fails, saying why."""
        interrupted = isinstance(exc, KeyboardInterrupt)
        reason = "interrupted" if interrupted else f"lab error: {type(exc).__name__}: {exc}"
        for cell in cells:
            if not cell.open:
                continue
            if interrupted and len(cell.log.timed_walls) >= cell.options.stop.min_trials:
                cell.log.notes.append(f"the run was interrupted after {len(cell.log.timed_walls)} timed trials")
                result = cell.finish_ok()
                self.store.finish_cell(cell.cell_id, "ok", None, result.figures, cell.versions)
            else:
                self.store.finish_cell(cell.cell_id, "failed", reason, None, cell.versions)
            self._close(cell)

    def _close(self, cell: Cell, keep: bool = False) -> None:
        self.pool.release(cell, keep)
        for path in Path(self.scratch).glob(f"sink-{cell.tag}-*"):
            path.unlink(missing_ok=True)


class _PacedModes:
    """The held pairs of a check that paces the cells (timed.HeldPairs): its round right after
    each trial held in an allocator mode, with every driver process of the run stopped, and more
    of a mode while the check has not decided it, below its most pairs and within the time budget
    less the closing work of the other cells still open (their own allocator modes)."""

    def __init__(self, runner: CellRunner, cells: list[Cell], deadline: Deadline):
        self.runner, self.cells, self.deadline = runner, cells, deadline

    def pair(self, cell: Cell, trial: Trial) -> None:
        beside = self.runner.beside
        if beside is None or cell.work is None:
            return
        with stopped(sorted({c.pid for c in self.cells if c.pid is not None})):
            beside.after_modes(cell.driver, cell.scenario, cell.work, cell.server, [trial])

    def wanted(self, cell: Cell, mode: str) -> bool:
        beside = self.runner.beside
        if beside is None or beside.mode_decided(cell.driver.id, cell.scenario.label, mode):
            return False
        others = [c for c in self.cells if c is not cell]
        return not self.runner._less_closing(self.deadline, others, True).passed()


def _time_fair(cells: list[Cell], spent: dict[int, float], last: dict[int, float]) -> list[Cell]:
    """The paced cells that take a turn in this pass: those whose time so far (their trials and
    the check's rounds beside them) is within one turn's usual cost of the least spent. A JIT
    runtime's pair takes half a minute (its plain loop warms up as the lab's processes do), a
    compiled client's a second: in plain turns every pass would wait on the slow cells, and the
    budget would end with every cell at three or four pairs, too few to decide any. So each
    cell gets about the same time, the quick ones deciding first and leaving it to the others."""
    floor = min(spent.get(c.cell_id, 0.0) for c in cells)
    costs = sorted(last[c.cell_id] for c in cells if c.cell_id in last)
    quantum = max(1.0, costs[len(costs) // 2]) if costs else 1.0
    return [c for c in cells if spent.get(c.cell_id, 0.0) <= floor + quantum]
