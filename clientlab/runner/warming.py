"""A cell's warm-up: trials at the timed count until its process is warm (warmup.WarmupPolicy),
and the count itself, fitted so that a timed trial lasts about the trial budget."""

from __future__ import annotations

import math

from clientlab.measuring.clock import SYSTEM, Clock
from clientlab.runner.cell import Cell
from clientlab.runner.pool import ProcessPool
from clientlab.runner.trial import Trials
from clientlab.scenario import Scenario


class Warming:
    def __init__(self, trials: Trials, pool: ProcessPool, clock: Clock = SYSTEM):
        self.trials, self.pool, self.clock = trials, pool, clock

    def warm_up(self, cell: Cell) -> None:
        """The run's (or the manifest's) warm-up trials; a JIT runtime (warm-up > 1) compiles its
        hot paths over the first thousands of requests, so it warms up until three trials in a row
        cost the same per request, within the policy's limits."""
        options, policy = cell.options, cell.options.warmup_policy
        warmup = max(options.warmup, cell.driver.manifest.warmup) if options.warmup else 0
        until_steady = warmup > 1 and not options.fresh_process
        least_s = policy.fresh_min_s if until_steady and not cell.kept_warm else 0.0
        most_s, most_trials = policy.max_s + least_s, policy.max_trials * (2 if least_s else 1)
        if cell.kept_warm and self.pool.shares(cell):
            most_s = policy.shared_max_s
        per_request, started = cell.log.warm, self.clock.monotonic()

        def warming() -> bool:
            done, elapsed = len(per_request), self.clock.monotonic() - started
            if elapsed < least_s:
                return done < most_trials
            return done < most_trials and not policy.is_steady(per_request) and elapsed < most_s

        while len(per_request) < warmup or (until_steady and warming()):
            if not self.trial(cell):
                return
        # a shared process's cells are judged when they have settled together (CellRunner)
        if until_steady and not policy.is_steady(per_request) and not self.pool.shares(cell):
            self.not_steady(cell)

    def trial(self, cell: Cell, refit: bool = True) -> bool:
        """One warm-up trial; a failed one ends the cell (False). Before the timed trials (refit)
        it also sets their count; a later process's warm-up keeps it (forks)."""
        trial = self.trials.fresh(cell, "warmup", cell.log.take_idx())
        self.pool.add_warm_work(cell, trial.wall_s or 0.0)
        if not trial.ok:
            cell.finish("failed", f"warmup trial {trial.idx}: " + "; ".join(trial.problems or []))
            return False
        assert cell.work is not None
        cell.log.warm.append((trial.wall_s or 0.0) / cell.work.total_requests)
        cell.log.warm_cpu.append(((trial.user_s or 0.0) + (trial.sys_s or 0.0)) / cell.work.total_requests)
        if refit and cell.options.trial_seconds_for(cell.scenario):  # the latest warm-up is the best guess
            cell.per_request_s = cell.log.warm[-1]
            cell.work = fit(cell)
        return True

    def rewarm(self, cell: Cell) -> bool:
        """Warm a JIT process up again after it sat idle (WarmupPolicy.rewarm_idle_s): warm-up
        trials until one costs no more CPU a request than the cell's warm band, read from its
        last warm-ups before its timed trials, within the policy's limits; False when a trial
        failed (the cell ends). Measured, not a count: after V8's memory reducer a Node process's
        young generation grows back over several trials, and a JVM's heap needs none."""
        policy, log = cell.options.warmup_policy, cell.log
        if log.warm_band is None:
            log.warm_band = policy.warm_band(log.warm_cpu)
        log.rewarmed += 1
        started = self.clock.monotonic()
        for _ in range(policy.rewarm_max_trials):
            if not self.trial(cell, refit=False):
                return False
            log.rewarm_trials += 1
            cpu = log.warm_cpu[-1]
            if log.warm_band is None or not cpu or cpu <= log.warm_band:
                return True
            if self.clock.monotonic() - started >= policy.rewarm_max_s:
                break
        log.rewarm_short += 1
        return True

    def rewarm_note(self, cell: Cell) -> str | None:
        """What the re-warming before timed trials did, for the cell's notes; None if none ran."""
        log, policy = cell.log, cell.options.warmup_policy
        if not log.rewarmed:
            return None
        band = f" (at most {log.warm_band * 1e6:,.0f} µs a request)" if log.warm_band else ""
        short = (f"; {log.rewarm_short} of them reached the limit ({policy.rewarm_max_trials} trials, "
                 f"{policy.rewarm_max_s:g} s) first") if log.rewarm_short else ""
        return (f"{log.rewarmed} timed trial(s) began with warm-ups ({log.rewarm_trials} in all): the JIT "
                f"process had sat over {policy.rewarm_idle_s:g} s without work, and warmed up until its CPU "
                f"a request was back in its warm band{band}{short}")

    def unsettled(self, cell: Cell, spent: dict[int, float]) -> bool:
        """A shared JIT process's cell that needs another warm-up before the timed trials: until
        it has settled (WarmupPolicy.is_settled) and its process has done `jit_warm_s` of warm-up
        work in all, each process for at most the policy's settle_max_s beyond that."""
        if not cell.open or cell.pid is None:
            return False
        policy, jit_warm_s = cell.options.warmup_policy, cell.options.jit_warm_s
        short = self.pool.warm_work(cell) < jit_warm_s
        settling = not policy.is_settled(cell.log.warm) and len(cell.log.warm) < policy.settle_max_trials
        return (short or settling) and spent.get(cell.pid, 0.0) < policy.settle_max_s + jit_warm_s

    @staticmethod
    def not_steady(cell: Cell) -> None:
        last = ", ".join(f"{v * 1e6:,.0f}" for v in cell.log.warm[-3:])
        cell.log.notes.append(f"not steady after {len(cell.log.warm)} warm-up trials "
                              f"(the last ones {last} µs per request)")


def fit(cell: Cell) -> Scenario:
    """The cell's scenario at the count whose trial lasts about the trial budget, from what one
    request cost it last; never under the run's `min_requests` (a check's floor: a fresh loop's
    first requests stay a small part of its round, however slow the host was when the count was
    fitted), never more than written."""
    scenario, budget = cell.scenario, cell.options.trial_seconds_for(cell.scenario)
    if not budget or not cell.per_request_s:
        return scenario
    fitted, floor = _round_count(budget / cell.per_request_s), cell.options.min_requests or 0
    factor = min(1.0, max(fitted, floor) / scenario.total_requests)
    if factor < 1 and cell.work is None:
        least = f" (at least {floor:,})" if floor else ""
        cell.log.notes.append(f"{scenario.total_requests:,} requests scaled to fit a {budget:g} s trial{least}")
    return scale(scenario, factor)


def scale(scenario: Scenario, factor: float) -> Scenario:
    """The scenario with every repeated request's count multiplied by `factor` (at least 1 each);
    requests made once (a login) stay once."""
    if factor >= 1:
        return scenario
    # the product rounded first: 400 / 3000 × 3000 must stay 400, not fall to 399
    requests = [r.model_copy(update={"repeat": max(1, math.floor(round(r.repeat * factor, 6)))}) if r.repeat > 1 else r
                for r in scenario.requests]
    return scenario.model_copy(update={"requests": requests})


def _round_count(n: float) -> float:
    """Two significant figures, so that counts read well in the table (1,234 → 1,200)."""
    if n < 100:
        return max(1.0, math.floor(n))
    digits = 10 ** (int(math.log10(n)) - 1)
    return math.floor(n / digits) * digits
