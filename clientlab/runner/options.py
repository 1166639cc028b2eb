"""How cells are run: one value (RunOptions) that a command builds and every part reads."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from clientlab.analysis.stats import StopRule
from clientlab.measuring.warmup import DEFAULT as DEFAULT_WARMUP
from clientlab.measuring.warmup import WarmupPolicy
from clientlab.scenario import Scenario

if TYPE_CHECKING:
    from clientlab.store import Store

# a shared JIT process's warm-up work before timing, however many cells share it: how warm a
# JIT cell is must not depend on how many scenarios the run holds (warmup.WarmupPolicy)
JIT_WARM_S = 30.0   # RunOptions.measuring()'s jit_warm_s

STALL_S = 15.0   # verification: no request reaching the server for this long = hung

PLACEMENTS = ("split", "shared", "free")
# which cells take turns trial by trial: the drivers of one scenario (the scenarios one after
# another), or every cell of the run (each cell's trials spread over the whole run)
INTERLEAVES = ("scenario", "run")


@dataclass
class RunOptions:
    """How cells are run. The defaults are the plain, unscaled behaviour the tests rely on;
    RunOptions.measuring() is what a measuring command runs with unless told otherwise."""

    warmup: int = 1
    stop: StopRule = field(default_factory=StopRule)
    fresh_process: bool = False   # a new driver process per trial (cold cost) instead of one per cell
    placement: str = "split"      # split / shared / free: see placement.Placement
    trial_seconds: float | None = None   # scale request counts so that a trial lasts about this long
    # ... but never below this many requests (nor above the written count): a check beside the
    # cells (crosscheck --plain, truth) keeps a fresh loop's first requests a small part of a round;
    # None: the command's own (the plain check's floor there, none elsewhere)
    min_requests: int | None = None
    fixed_counts: frozenset[str] = frozenset()  # scenario labels whose counts the user set: never scaled
    trial_timeout_s: float | None = None  # a timed trial's limit; None: derived from verification
    retries: int = 0              # disturbed trials run again, at most this many per cell
    fresh_port: bool = True       # a new server port for every trial (where the server can)
    host_probe: bool = True       # read the host's speed on the driver's core around timed trials
    keep_warm: bool = True        # a JIT driver's process serves every scenario of the run (pool.ProcessPool)
    # every driver's process does, not only a JIT driver's: for checks of what drivers answer, where
    # a new process per scenario would only add its start-up (the conformance tests)
    keep_every: bool = False
    interleave: str = "scenario"  # scenario / run: see INTERLEAVES and CellRunner.run_in_turns
    run_budget_s: float | None = None   # the whole run's time (interleave = scenario: a share each)
    forks: int = 1                # processes a cell's timed trials are spread over (timed.TimedTurns)
    jit_warm_s: float = 0.0       # a shared JIT process's warm-up work before timing, at least (warming)
    warmup_policy: WarmupPolicy = DEFAULT_WARMUP  # when a JIT process is warm
    stall_s: float = STALL_S      # verification: a driver the server hears nothing from this long hangs
    verify_requests: int = 100    # verification makes about this many requests at most (or one per transfer in flight)
    # each measured cell also gets profiled trials: the command gives the profiler's maker
    # (clientlab.profile.CellProfiler, a cellrunner.Profiler), so that the runner needs no profiler
    profiler: Callable[[Store], Any] | None = None
    # a cell whose bodies can fall into either allocator mode also gets a few trials in each, on
    # purpose (runner/allocator.py): both figures shown, never hidden
    allocator_modes: bool = True
    # trials in each allocator mode's process: two show the mode; a check that judges each mode
    # against the plain loop's (crosscheck --plain, truth) needs five for a 90 % interval
    mode_trials: int = 2

    @classmethod
    def measuring(cls) -> "RunOptions":
        """The measurement policy: what `clientlab run` measures with unless its options say
        otherwise (they show these as their defaults), and what experiment, crosscheck and
        calibrate take of it."""
        return cls(
            trial_seconds=0.3,    # a plain `clientlab run` of the default drivers answers in minutes
            placement="shared",   # the most repeatable here (clientlab selfbench, docs/measurement.md)
            interleave="run",     # the host's drift over minutes hits every cell alike (docs/measurement.md)
            run_budget_s=240.0,   # with start-up and set-up, a plain run ends within 5 minutes
            retries=3,            # a disturbed trial run again at most this often a cell
            forks=3,              # a cell's figure is not one process's state (docs/measurement.md, "Forks")
            jit_warm_s=JIT_WARM_S,
        )

    def __post_init__(self) -> None:
        if self.interleave not in INTERLEAVES:
            raise ValueError(f"interleave must be one of {', '.join(INTERLEAVES)}")
        if self.placement not in PLACEMENTS:
            raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)}")

    def trial_seconds_for(self, scenario: Scenario) -> float | None:
        """The trial budget a scenario's counts are fitted to: none where the user set its counts."""
        return self.trial_seconds if scenario.label not in self.fixed_counts else None
