"""A cell (one driver on one scenario) as data: what it is, its process, what its trials gave."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from clientlab.analysis import figures, stats
from clientlab.drivers.manifest import Driver
from clientlab.drivers.protocol import DriverProcess
from clientlab.measuring import cgroup, hostprobe
from clientlab.measuring.noise import Noise
from clientlab.record import CellFigures
from clientlab.runner.options import RunOptions
from clientlab.scenario import Scenario
from clientlab.store import Trial

if TYPE_CHECKING:
    from clientlab.servers.side import ServerSide


@dataclass
class CellResult:
    """The outcome of one cell, as stored."""

    driver: str
    scenario: str
    status: str                   # ok / failed / unsupported / not-installed
    reason: str | None = None
    figures: CellFigures | None = None
    versions: dict | None = None


@dataclass(frozen=True)
class CellGroup:
    """Cells that run together: the drivers on one scenario, served by `server` (None: the
    runner's own), run with `options` (None: the runner's own; an experiment's parts differ)."""

    drivers: Sequence[Driver]
    scenario: Scenario
    server: ServerSide | None = None
    options: RunOptions | None = None


class Events(Protocol):
    """Progress callbacks (the CLI shows a progress bar; tests pass a silent one)."""

    def cell_started(self, driver: str, scenario: str) -> None: ...
    def trial_done(self, driver: str, scenario: str, trial: Trial) -> None: ...
    def cell_done(self, result: CellResult) -> None: ...


class SilentEvents:
    def cell_started(self, driver: str, scenario: str) -> None:
        pass

    def trial_done(self, driver: str, scenario: str, trial: Trial) -> None:
        pass

    def cell_done(self, result: CellResult) -> None:
        pass


class Beside(Protocol):
    """Work that takes its turn right after each timed trial of a cell, with every driver process
    of the run stopped: the calibration loop of the same client (clientlab/selfcheck/calibrate.py).

    `most_pairs` None: each cell's own stop rule ends its trials. A number: the check paces them
    (crosscheck --plain, the truth experiment): once a cell has its minimum of timed trials, it
    stops when `decided` says its pairs have decided, else at this many pairs."""

    most_pairs: int | None

    def after_trial(self, driver: Driver, scenario: Scenario, work: Scenario, server: ServerSide,
                    trial: Trial) -> None: ...

    def decided(self, driver: str, scenario: str) -> bool: ...

    def after_modes(self, driver: Driver, scenario: Scenario, work: Scenario, server: ServerSide,
                    trials: list[Trial]) -> None:
        """The cell's trials in its allocator modes (runner/allocator.py): once they are done, or,
        when the check paces the cells, each right after it is made."""

    def mode_decided(self, driver: str, scenario: str, mode: str) -> bool:
        """When the check paces the cells: whether the pairs held in this allocator mode need no
        more (decided, at `most_pairs`, or the cell not judged by its modes); after each mode's
        `mode_trials` the cell's trials in an undecided mode go on until it is, within the budget."""


@dataclass
class Running:
    """A started driver process: its cgroup (None where the lab cannot make one), the versions
    it said hello with, and how long it took to start."""

    proc: DriverProcess
    group: cgroup.Group | None
    versions: dict
    startup_s: float

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.proc.poll() is None

    def stop(self) -> None:
        self.proc.close()
        if self.group is not None:
            self.group.remove()


@dataclass
class TrialLog:
    """What a cell's trials have given so far: what its stop rules and its figures read."""

    retries_left: int = 0
    trials: list[Trial] = field(default_factory=list)   # every trial, as stored
    warm: list[float] = field(default_factory=list)     # the warm-ups' seconds per request, in order
    warm_cpu: list[float] = field(default_factory=list)  # their CPU seconds a request (0: not read)
    warm_band: float | None = None  # the most CPU a request of its warm state (WarmupPolicy.warm_band)
    timed_walls: list[float] = field(default_factory=list)
    timed_spent_s: float = 0.0     # the lab's time in the cell's timed turns (the stop rule's clock)
    next_idx: int = 0              # the index of its next warm-up or timed trial
    slow_skips: int = 0            # turns it let pass: the host still in a slow phase
    rewarmed: int = 0              # timed turns that began with warm-ups, the process idle too long
    rewarm_trials: int = 0         # the warm-up trials those turns ran
    rewarm_short: int = 0          # those turns whose warm-ups ended before the CPU was back in its band
    processes: int = 1             # driver processes its timed trials ran in (forks)
    process: int = -1              # which of the processes the cell was given runs its trials now
                                   # (0 its first; -1 none yet): each trial keeps it (Trial.process)
    forked_at: int = 0             # its timed trials when its current process took over
    budget_stopped: bool = False   # its trials ended with the run's time budget
    notes: list[str] = field(default_factory=list)

    def take_idx(self) -> int:
        self.next_idx += 1
        return self.next_idx - 1


@dataclass
class Cell:
    """One cell while its scenario runs."""

    driver: Driver
    scenario: Scenario
    cell_id: int
    tag: str                               # names its scratch files
    server: ServerSide                     # what its trials are served by
    options: RunOptions                    # how it runs (an experiment's parts differ in these)
    log: TrialLog = field(default_factory=TrialLog)
    running: Running | None = None
    versions: dict | None = None
    kept_warm: bool = False                # its process came warm from an earlier scenario
    work: Scenario | None = None           # the scenario at the count the timed trials use
    per_request_s: float | None = None     # from verification: what one request costs this driver
    started: float = field(default_factory=time.monotonic)
    result: CellResult | None = None

    @property
    def pid(self) -> int | None:
        return self.running.pid if self.running is not None else None

    @property
    def open(self) -> bool:
        return self.result is None

    def jit(self) -> bool:
        """A JIT runtime's cell: its warm-up (the run's or the manifest's) is more than one trial."""
        return self.options.warmup > 0 and max(self.options.warmup, self.driver.manifest.warmup) > 1

    def finish(self, status: str, reason: str | None = None, figs: CellFigures | None = None) -> CellResult:
        self.result = CellResult(self.driver.id, self.scenario.label, status, reason, figs, self.versions)
        return self.result

    def finish_ok(self) -> CellResult:
        return self.finish("ok", None, measured(self))


def measured(cell: Cell) -> CellFigures:
    """A measured cell's figures, with what the lab noted on the way."""
    log = cell.log
    assert cell.work is not None
    # start-up = spawn to the first `ready` (fresh processes: the median over trials)
    starts = [t.startup_s for t in log.trials if t.startup_s is not None]
    figs = figures.cell_figures(log.trials, cell.scenario.metric, cell.work.total_requests,
                                stats.median(starts[1:] or starts))
    kept = [t for t in log.trials if t.kind == "timed" and t.noise and Noise.of(t.noise, t.wall_s or 0.0).disturbed()]
    if kept:
        log.notes.append(f"{len(kept)} timed trial(s) disturbed and kept (no retries left)")
    if log.slow_skips:
        log.notes.append(f"{log.slow_skips} turn(s) let pass: the host was in a slow phase on the "
                         f"driver's core right before (over {hostprobe.SLOW_LIMIT:g}× after the wait)")
    _, one_mode = figures.allocator_modes(log.trials, cell.work.total_requests)
    if one_mode:
        log.notes.append(one_mode)
    # a process that changed allocator mode in the middle of its life is a finding of its own
    own = figures.own_processes([t for t in log.trials if t.kind == "timed" and t.ok and t.wall_s],
                                cell.work.total_requests)
    if own is not None:
        log.notes.extend(own.changes)
    group = cell.running.group if cell.running is not None else None
    return figs.with_(
        elapsed_s=time.monotonic() - cell.started,
        scenario_requests=cell.scenario.total_requests,
        disturbed_trials=sum(1 for t in log.trials if t.kind == "disturbed"),
        disturbed_kept=len(kept),
        slow_host_skips=log.slow_skips,
        processes=log.processes,
        budget_stopped=log.budget_stopped,
        measured_by=f"cgroup v{group.version}" if group is not None else "proc",
        kept_warm=cell.kept_warm,
        notes=tuple(log.notes),
    )
