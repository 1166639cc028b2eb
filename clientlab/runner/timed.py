"""A cell's turn at a timed trial, and when its timed trials are done."""

from __future__ import annotations

import math

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

STALLED_FACTOR = 4   # a first timed trial this far over the trial budget stops the cell early


class TimedTurns:
    def __init__(self, trials: Trials, warming: Warming, pool: ProcessPool, clock: Clock = SYSTEM):
        self.trials, self.warming, self.pool, self.clock = trials, warming, pool, clock

    def turn(self, cell: Cell, deadline: Deadline) -> None:
        """One timed trial; finish when the stop rule says so. A disturbed trial is stored apart and
        run again at the cell's next turn, while retries remain: the other cells' trials come
        between, and a slow phase of the host rarely outlasts them (run again at once, three
        retries in a row could all fall in one long phase). Past the deadline a disturbed trial
        is kept (flagged), so that the time budget holds. The turn may first start the cell's
        next process (forks), and is let pass when the host is still slow after the wait."""
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
        if self._stalled(cell) or cell.options.stop.done(log.timed_walls, log.timed_spent_s):
            self._note_rewarms(cell)
            self._allocator_modes(cell)
            cell.finish_ok()

    def _note_rewarms(self, cell: Cell) -> None:
        if note := self.warming.rewarm_note(cell):
            cell.log.notes.append(note)

    def _allocator_modes(self, cell: Cell) -> None:
        """A few trials in each allocator mode, each in a process held in it (runner/allocator.py),
        where the cell's bodies can fall into either; a failure there is noted, and the cell keeps
        its figures."""
        if not allocator.due(cell):
            return
        for mode in allocator.TUNABLES:
            try:
                self.pool.spawn(cell, env=allocator.env(mode))
                kinds = ["warmup"] * min(1, cell.options.warmup) + [allocator.kind(mode)] * allocator.TRIALS_PER_MODE
                for kind in kinds:
                    trial = self.trials.fresh(cell, kind, cell.log.take_idx())
                    if not trial.ok:
                        raise DriverFault("; ".join(trial.problems or ["its trial failed"]))
            except DriverFault as exc:
                cell.log.notes.append(f"the {mode} mode was not measured: {str(exc).splitlines()[0]}")
                return

    @staticmethod
    def _stalled(cell: Cell) -> bool:
        """A first timed trial far over the trial budget: more would not fit the run's time."""
        budget, walls = cell.options.trial_seconds_for(cell.scenario), cell.log.timed_walls
        if not budget or len(walls) != 1 or walls[0] <= STALLED_FACTOR * budget:
            return False
        cell.log.notes.append(f"stopped after one timed trial: it took {walls[0]:.2f} s, "
                              f"over {STALLED_FACTOR}× the {budget:g} s budget")
        return True

    @staticmethod
    def out_of_time(cell: Cell, deadline: Deadline) -> bool:
        return deadline.passed() and len(cell.log.timed_walls) >= cell.options.stop.min_trials

    def stop_for_time(self, cell: Cell) -> None:
        self._note_rewarms(cell)
        cell.log.notes.append(f"stopped after {len(cell.log.timed_walls)} timed trials: the run's time "
                              f"budget ({cell.options.run_budget_s:g} s) was spent")
        cell.log.budget_stopped = True
        cell.finish_ok()

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
