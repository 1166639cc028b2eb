"""The profiled trials of a cell: extra trials of the cell, after its timed ones, on the same
process and at the same count, with the samplers attached; stored with their own kind
(`profiled`), never in the figures. The cell's figures gain `layers` (model.Layers) and
`profile` (the profilers, their overhead and blind spots); the folded stacks go to the store's
`profiles` table."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clientlab.analysis import stats
from clientlab.drivers.protocol import DriverFault
from clientlab.profile import folded as fold
from clientlab.profile.layers import layers, own_side
from clientlab.profile.rules import Rules
from clientlab.profile.samplers import ProfilerFailed, Sampler, for_language, process_argv, process_env
from clientlab.runner.warming import scale
from clientlab.store.profiles import add_profile

if TYPE_CHECKING:
    from clientlab.runner.cell import Cell
    from clientlab.scenario import Scenario
    from clientlab.runner.trial import Trials
    from clientlab.store import Store

KIND = "profiled"
MIN_PROFILED_S = 1.5   # profiled trials until they sampled this much wall time…
MIN_OWN_SAMPLES = 200  # …and the language's profiler holds this many samples of CPU (where there is one)…
MAX_TRIALS = 20        # …or this many
TRIAL_S = 0.5          # a profiled trial's count is raised so that it lasts about this long (up to the
                       # scenario's own count): a profile needs samples, a trial fitted to 0.3 s has few
OWN_WARM_S = 10.0      # a JIT runtime's own profiling process warms up this long first


ATTEMPTS = 2   # a profiler (or a profiling process) that failed to start is tried once more


class CellProfiler:
    """The runner's `profiler` hook: profiles each cell that finished measured."""

    def __init__(self, store: Store, min_seconds: float = MIN_PROFILED_S, max_trials: int = MAX_TRIALS,
                 min_own_samples: int = MIN_OWN_SAMPLES):
        self.store, self.min_seconds, self.max_trials = store, min_seconds, max_trials
        self.min_own_samples = min_own_samples

    def profile(self, cell: Cell, trials: Trials) -> None:
        result = cell.result
        if result is None or result.status != "ok" or cell.running is None or cell.work is None:
            return
        language, runtime = cell.driver.manifest.language, cell.driver.variant.kind if cell.driver.variant else None
        env = process_env(language, runtime)
        argv = process_argv(language, runtime, cell.driver.argv) if env else None
        for attempt in range(ATTEMPTS):
            try:
                if env:
                    self._own_process(cell, trials, env, argv)
                added = self._profiled(cell, trials)
                break
            except (ProfilerFailed, DriverFault) as exc:
                # a sampler that did not start or wrote nothing, or a profiling process that did not
                # answer in time (a JVM starting its recording on a busy host missed its minute for
                # hello), is tried once more; the cell keeps its figures either way
                if attempt + 1 < ATTEMPTS:
                    continue
                result.figures = _with_note(result.figures, f"no profile: {str(exc).splitlines()[0]}")
                return
            finally:
                if env:
                    trials.pool.release(cell)   # the profiling process serves no timed trial, ever
        result.figures = _with(result.figures, added)

    def _own_process(self, cell: Cell, trials: Trials, env: dict[str, str], argv: list[str] | None) -> None:
        """A process of the driver of its own for the profile, started with `env` (a runtime that
        names its JIT-compiled frames for perf only when started so, a profiler loaded in the
        process: samplers.process_env) and by `argv` where given (samplers.process_argv), warmed up
        at the cell's count (a JIT runtime for OWN_WARM_S): the cell's timed trials ran in
        processes without them."""
        assert cell.work is not None
        # the cell's own process stays what it was: kept warm for the driver's next scenario
        # where the pool keeps JIT processes, shared with its other cells where they share one
        trials.pool.release(cell, keep=True)
        trials.pool.spawn(cell, env=env, argv=argv)
        started = time.monotonic()
        # a JIT runtime (a manifest's warmup over 1) for OWN_WARM_S, an interpreter (PHP, Perl) once
        warm_s = OWN_WARM_S if cell.driver.manifest.warmup > 1 else 0.0
        while True:
            trial = trials.run(cell, cell.work, "warmup", -1)
            if not trial.ok:
                raise ProfilerFailed(f"the profiling process's warm-up failed: {'; '.join(trial.problems or [])}")
            if time.monotonic() - started >= warm_s:
                break

    def _profiled(self, cell: Cell, trials: Trials) -> dict:
        assert cell.work is not None
        language = cell.driver.manifest.language
        work = _profiled_work(cell)
        profiles: dict[str, fold.Folded] = {}
        walls: list[float] = []
        cpu_s, requests = 0.0, 0
        blind: dict[str, str] = {}
        maps: set[int] = set()
        rules = Rules.load(language, cell.driver.folder)
        outside: dict[str, int] = {}   # a profiler's samples taken outside the timed phase, left out
        try:
            while more_trials(walls, own_samples(profiles, rules), self.min_seconds, self.max_trials,
                              self.min_own_samples):
                samplers: list[Sampler] = for_language(language)
                try:
                    trial = trials.run(cell, work, KIND, cell.log.take_idx(), samplers=samplers)
                    trials.record(cell, trial)
                    if not trial.ok:
                        raise ProfilerFailed(f"the profiled trial failed: {'; '.join(trial.problems or [])}")
                    for s in samplers:
                        kept, left_out = rules.timed_phase(s.folded())
                        profiles[s.name] = fold.merge([profiles.get(s.name, {}), kept])
                        outside[s.name] = outside.get(s.name, 0) + left_out
                        blind[s.name] = s.blind_spots
                finally:
                    for s in samplers:
                        maps.update(getattr(s, "pids", ()))
                        s.close()
                walls.append(trial.wall_s or 0.0)
                cpu_s += (trial.user_s or 0.0) + (trial.sys_s or 0.0)
                requests += work.total_requests
        finally:
            for pid in maps:   # the JIT runtimes' perf maps (/tmp/perf-PID.map), read by now
                Path(f"/tmp/perf-{pid}.map").unlink(missing_ok=True)
        timed = [w for w in cell.log.timed_walls if w]
        # wall time a request, the profiled trials' against the timed ones' (their counts may differ)
        overhead = (stats.median(walls) / work.total_requests) / (stats.median(timed) / cell.work.total_requests) - 1 \
            if timed and walls else None
        timed_cpu = [(t.user_s or 0.0) + (t.sys_s or 0.0) for t in cell.log.trials if t.kind == "timed" and t.ok]
        # what sampling cost the driver's own CPU (py-spy --native stops it at every sample)
        cpu_overhead = (cpu_s / requests) / (stats.median(timed_cpu) / cell.work.total_requests) - 1 \
            if timed_cpu and requests and stats.median(timed_cpu) else None
        found = layers(profiles, rules, cpu_s, requests, round(overhead, 4) if overhead is not None else None)
        for name, f in profiles.items():
            add_profile(self.store, cell.cell_id, name, fold.to_text(f), fold.total(f),
                        {"trials": len(walls), "requests": requests, "cpu_s": cpu_s, "walls": walls,
                         "blind_spots": blind.get(name), "language": language, "folder": str(cell.driver.folder),
                         "outside_samples": outside.get(name, 0)})
        return {"layers": found,
                "profile": {"profilers": sorted(profiles), "trials": len(walls), "requests": requests,
                            "cpu_s": cpu_s, "wall_s": walls, "overhead": found.overhead,
                            "cpu_overhead": round(cpu_overhead, 4) if cpu_overhead is not None else None,
                            "blind_spots": blind}}


def own_samples(profiles: dict[str, fold.Folded], rules: Rules) -> int | None:
    """The samples of CPU the language's own profiler holds so far (those outside a system call:
    layers.own_side), which split all perf does not place; None where perf profiles alone."""
    names = [n for n in profiles if n != "perf"]
    return sum(fold.total(own_side(n, profiles[n], rules)) for n in names) if names else None


def more_trials(walls: list[float], own: int | None, min_seconds: float, max_trials: int, min_own: int) -> bool:
    """Another profiled trial: until the trials sampled `min_seconds` of wall time and the
    language's profiler holds `min_own` samples of CPU, never past `max_trials`. py-spy samples
    wall time, and a driver sharing a busy core with the bench server left it 1 to 11 samples
    outside a system call in 1.5 s, which then split every layer but the kernel."""
    if len(walls) >= max_trials:
        return False
    return sum(walls) < min_seconds or (own is not None and own < min_own)


def _profiled_work(cell: Cell) -> Scenario:
    """The cell's work at a count that lasts about TRIAL_S (by its timed trials), never more than
    the scenario's own count, never less than the timed trials'."""
    assert cell.work is not None
    timed = [w for w in cell.log.timed_walls if w]
    if not timed:
        return cell.work
    wanted = cell.work.total_requests * TRIAL_S / stats.median(timed)
    if wanted <= cell.work.total_requests:
        return cell.work
    return scale(cell.scenario, min(1.0, wanted / cell.scenario.total_requests))


def _with(figs: Any, added: dict) -> Any:
    """The cell's figures with its `layers` and `profile`: a dict, or the typed record
    (clientlab/record.py: `layers` a field of its own, `profile` kept among its other keys)."""
    if figs is None or isinstance(figs, dict):
        return {**(figs or {}), **added, "layers": added["layers"].to_json()}
    extra = {**figs.extra, **{k: v for k, v in added.items() if k != "layers"}}
    return dataclasses.replace(figs, layers=added["layers"], extra=extra)


def _with_note(figs: Any, note: str) -> Any:
    if figs is None or isinstance(figs, dict):
        figs = dict(figs or {})
        figs["notes"] = [*(figs.get("notes") or []), note]
        return figs
    return figs.with_(notes=(*(figs.notes or ()), note))
