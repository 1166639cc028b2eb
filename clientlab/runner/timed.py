"""A cell's turn at a timed trial, and when its timed trials are done."""

from __future__ import annotations

import math
from typing import Protocol

from clientlab.drivers.protocol import DriverFault
from clientlab.measuring import hostprobe
from clientlab.measuring.clock import SYSTEM, Clock
from clientlab.measuring.noise import Noise
from clientlab.runner import allocator
from clientlab.runner.cell import Cell
from clientlab.runner.deadline import Deadline
from clientlab.runner.pool import ProcessPool
from clientlab.runner.trial import Trials
from clientlab.runner.warming import Warming
from clientlab.store import Trial

STALLED_FACTOR = 4   # a first timed trial this far over the trial budget stops the cell early


class HeldPairs(Protocol):
    """A check that paces the cells, beside a cell's trials held in its allocator modes
    (CellRunner): its round right after each such trial, and whether a mode wants more."""

    def pair(self, cell: Cell, trial: Trial) -> None: ...

    def wanted(self, cell: Cell, mode: str) -> bool: ...


class TimedTurns:
    def __init__(self, trials: Trials, warming: Warming, pool: ProcessPool, clock: Clock = SYSTEM):
        self.trials, self.warming, self.pool, self.clock = trials, warming, pool, clock
        self.held: HeldPairs | None = None   # a check pacing the cells (CellRunner sets it)

    def turn(self, cell: Cell, deadline: Deadline, most: int | None = None) -> None:
        """One timed trial; finish when the stop rule says so. A disturbed trial is stored apart and
        run again at the cell's next turn, while retries remain: the other cells' trials come
        between, and a slow phase of the host rarely outlasts them (run again at once, three
        retries in a row could all fall in one long phase). Past the deadline a disturbed trial
        is kept (flagged), so that the time budget holds. The turn may first start the cell's
        next process (forks), and is let pass when the host is still slow after the wait.
        `most`: a check beside the cell ends its trials once it has decided (CellRunner), so the
        cell's own stop rule does not; it stops here only at that many trials."""
        log, started = cell.log, self.clock.monotonic()
        if self._fork_due(cell) and not self._next_fork(cell):
            return
        try:
            # a JIT process that sat idle meets the timed trial warm again, as a program making
            # requests without pause would (Warming.rewarm, WarmupPolicy.rewarm_idle_s)
            if cell.jit() and self.pool.idle_s(cell) > cell.options.warmup_policy.rewarm_idle_s:
                if not self.warming.rewarm(cell):
                    return
            before = self.trials.host_before(cell, deadline)
            if (before is not None and before > hostprobe.SLOW_LIMIT and log.retries_left > 0
                    and not deadline.passed()):
                # still in a slow phase after the wait: the trial would be disturbed, so it waits
                # for the cell's next turn instead of being run and thrown away (a retry spent)
                log.retries_left -= 1
                log.slow_skips += 1
                return
            trial = self.trials.probed(cell, before)
            reason = Noise.of(trial.noise, trial.wall_s or 0.0).disturbed() if trial.ok and trial.noise else None
            if reason and log.retries_left > 0 and not deadline.passed():
                log.retries_left -= 1
                trial.kind, trial.problems = "disturbed", [f"disturbed, run again: {reason}"]
                self.trials.record(cell, trial)
                return
            self.trials.record(cell, trial)
        finally:
            log.timed_spent_s += self.clock.monotonic() - started
        if not trial.ok:
            cell.finish("failed", f"timed trial {trial.idx}: " + "; ".join(trial.problems or []))
            return
        log.timed_walls.append(trial.wall_s or 0.0)
        done = (len(log.timed_walls) >= most if most is not None
                else cell.options.stop.done(log.timed_walls, log.timed_spent_s))
        if self._stalled(cell) or done:
            self.finish(cell)

    def finish(self, cell: Cell) -> None:
        """The cell's timed trials are done: its allocator modes, then its figures."""
        self._note_rewarms(cell)
        self._allocator_modes(cell)
        cell.finish_ok()

    def _note_rewarms(self, cell: Cell) -> None:
        if note := self.warming.rewarm_note(cell):
            cell.log.notes.append(note)

    def _allocator_modes(self, cell: Cell) -> None:
        """A few trials in each allocator mode, each in a process held in it (runner/allocator.py),
        where the cell's bodies can fall into either; a failure there is noted, and the cell keeps
        its figures. A check that paces the cells (`held`) has its round right after each, and a
        mode it has not decided after those takes more (_held): to its decision, its most or the budget."""
        if not allocator.due(cell):
            return
        for mode in allocator.TUNABLES:
            if not self._held(cell, mode, cell.options.mode_trials):
                return
        if self.held is None:
            return
        # a check that paces the cells: a mode its held pairs have not decided takes more, each in
        # a new process held in it, as the cell's own pairs do (one mode decided, the other goes on)
        for mode in allocator.TUNABLES:
            if self.held.wanted(cell, mode) and not self._held(cell, mode, None):
                return

    def _held(self, cell: Cell, mode: str, count: int | None) -> bool:
        """A process held in `mode`, its warm-up, then `count` trials in the mode (None: until the
        check's `wanted` says no more), each beside the check's round when one paces the cells;
        False when it failed (noted: the cell keeps its figures)."""
        held = self.held
        try:
            self.pool.spawn(cell, env=allocator.env(mode))
            for _ in range(min(1, cell.options.warmup)):
                trial = self.trials.fresh(cell, "warmup", cell.log.take_idx())
                if not trial.ok:
                    raise DriverFault("; ".join(trial.problems or ["its trial failed"]))
            made = 0
            while (made < count) if count is not None else (held is not None and held.wanted(cell, mode)):
                trial = self.trials.fresh(cell, allocator.kind(mode), cell.log.take_idx())
                if not trial.ok:
                    raise DriverFault("; ".join(trial.problems or ["its trial failed"]))
                made += 1
                if held is not None:
                    held.pair(cell, trial)
        except DriverFault as exc:
            what = (f"the {mode} mode was not measured" if count is not None
                    else f"no more pairs held in the {mode} mode")
            cell.log.notes.append(f"{what}: {str(exc).splitlines()[0]}")
            return False
        return True

    @staticmethod
    def _stalled(cell: Cell) -> bool:
        """A first timed trial far over the trial budget: more would not fit the run's time."""
        budget, walls = cell.options.trial_seconds_for(cell.scenario), cell.log.timed_walls
        if budget and cell.options.min_requests and cell.work is not None and cell.per_request_s:
            # a count held up to the run's floor lasts longer than the budget by design
            budget = max(budget, cell.work.total_requests * cell.per_request_s)
        if not budget or len(walls) != 1 or walls[0] <= STALLED_FACTOR * budget:
            return False
        cell.log.notes.append(f"stopped after one timed trial: it took {walls[0]:.2f} s, "
                              f"over {STALLED_FACTOR}× the {budget:.3g} s budget")
        return True

    @staticmethod
    def out_of_time(cell: Cell, deadline: Deadline, checked: bool = False) -> bool:
        """Past the deadline, a cell with its minimum of timed trials stops; a cell whose trials a
        check beside it paces (`checked`: crosscheck --plain, the truth experiment) stops with one:
        there the check's pairs are the work, a JIT loop's pair takes half a minute, and a minimum
        the budget cannot hold would be a budget in name only."""
        least = 1 if checked else cell.options.stop.min_trials
        return deadline.passed() and len(cell.log.timed_walls) >= least

    def stop_for_time(self, cell: Cell) -> None:
        """The budget is spent: the cell stops where it is, after its allocator modes (a large
        answer's two figures are the cell's, not the stop rule's)."""
        self._note_rewarms(cell)
        n, least = len(cell.log.timed_walls), cell.options.stop.min_trials
        short = f", short of its minimum of {least}" if n < least else ""
        budget = f" ({cell.options.run_budget_s:g} s)" if cell.options.run_budget_s else ""
        cell.log.notes.append(f"stopped after {n} timed trials{short}: the run's time budget{budget} was spent")
        cell.log.budget_stopped = True
        self._allocator_modes(cell)
        cell.finish_ok()

    @staticmethod
    def closing_s(cell: Cell, checked: bool) -> float:
        """About how long the cell's closing work takes once its trials end: its allocator modes
        (two processes, each a start, a warm-up and the mode's trials at the cell's trial length),
        each trial with a round of the loop beside it when a check paces the cell. The time
        budget keeps this much back for the cells still open, so that it holds."""
        if not cell.open or not cell.log.timed_walls or not allocator.due(cell):
            return 0.0
        wall = sorted(cell.log.timed_walls)[len(cell.log.timed_walls) // 2]
        start = cell.running.startup_s if cell.running is not None else 1.0
        per_mode = start + (1 + cell.options.mode_trials) * wall * (3 if checked else 1)
        return 2 * per_mode

    @staticmethod
    def _fork_due(cell: Cell) -> bool:
        """Whether the cell's next timed trial starts in a new process: its timed trials are spread
        over `forks` processes, a new one after each ceil(min_trials / forks) of them. A process
        keeps a state of its own for life (where its heap and buffers landed, what its allocator
        did), so a median over one process is that process's figure; cells whose trials agreed
        within 2 % moved by a third from one run to the next (docs/evidence/measurement.md). JIT drivers
        keep their one process (a new JVM needs its minute)."""
        options, done = cell.options, len(cell.log.timed_walls)
        if options.forks <= 1 or options.fresh_process or done == 0 or done == cell.log.forked_at:
            return False
        if max(options.warmup, cell.driver.manifest.warmup) > 1:
            return False
        return done % math.ceil(options.stop.min_trials / options.forks) == 0

    def _next_fork(self, cell: Cell) -> bool:
        """A new process for the cell, warmed up as its first was (no verification: the program is
        the same, and every timed trial is checked); False when it failed (the cell ends)."""
        cell.log.forked_at = len(cell.log.timed_walls)
        self.pool.spawn(cell)
        cell.log.processes += 1
        return self.warming.trial(cell, refit=False) if cell.options.warmup else True
