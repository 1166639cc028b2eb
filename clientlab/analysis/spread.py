"""How far the same cells moved across repeated runs: the lab's repeatability, from the store.

For every cell measured in each of the runs (same driver, scenario label and position, as
`compare` pairs them) the figure is max/min of the runs' medians (throughput; the same ratio as
for time per request), and the same for the driver's ratio to the scenario's fastest driver in
each run (what the tables are read for). The summary counts cells within 5 % and 10 % and lists
them per driver; each run's wall time and disturbed trials say how noisy the host was.
docs/evidence/measurement.md quotes these figures.

What the trials within each run predict: a median of n trials whose robust spread (1.4826 MAD /
median) is c varies by about 1.2533 c / sqrt(n) (the median's standard error for a normal
sample), and the largest over the smallest of k such medians is then about 1 + d_k times that,
d_k the expected range of k normal samples (2.326 for five). So each cell gets the spread its
own trials predict and the trials a run would need for 5 %: where the measured spread is
larger than the predicted one, the figure moved between runs by more than its trials' noise
(the host's slow phases over minutes, a JIT's different steady state in another process).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field

from rich import box
from rich.table import Table

from clientlab.analysis import stats
from clientlab.analysis.compare import keyed_cells, trial_throughputs
from clientlab.errors import LabInputError
from clientlab.record import Cell
from clientlab.store import Store

LIMITS = (0.05, 0.10)
MEDIAN_SE = 1.2533   # standard error of a median over that of a mean, normal samples
# expected range of k standard normal samples (Tippett, 1925), k = 2 … 10
EXPECTED_RANGE = {2: 1.128, 3: 1.693, 4: 2.059, 5: 2.326, 6: 2.534, 7: 2.704, 8: 2.847, 9: 2.970, 10: 3.078}


def expected_range(k: int) -> float:
    return EXPECTED_RANGE[min(max(k, 2), 10)]


@dataclass
class CellSpread:
    driver: str
    scenario: str
    unit: str
    medians: list[float]             # the cell's median throughput in each run, in run order
    to_fastest: list[float]          # the same over the scenario's fastest cell, per run
    trial_spread: float = 0.0        # robust spread of the timed trials within a run (median over runs)
    trials: float = 0.0              # timed trials per run (mean)

    @property
    def predicted(self) -> float:
        """max/min of the medians that the trials' own noise alone would give."""
        if not self.trials:
            return 1.0
        return 1 + expected_range(len(self.medians)) * MEDIAN_SE * self.trial_spread / self.trials ** 0.5

    def trials_for(self, limit: float = LIMITS[0]) -> int:
        """Timed trials per run for the predicted spread to be within `limit`."""
        return max(1, math.ceil((expected_range(len(self.medians)) * MEDIAN_SE * self.trial_spread / limit) ** 2))

    @property
    def spread(self) -> float:
        return max(self.medians) / min(self.medians)

    @property
    def spread_to_fastest(self) -> float:
        return max(self.to_fastest) / min(self.to_fastest)

    def to_dict(self) -> dict:
        return {**asdict(self), "spread": self.spread, "spread_to_fastest": self.spread_to_fastest,
                "predicted_spread": self.predicted, "trials_for_5pct": self.trials_for()}


@dataclass
class RunFacts:
    run_id: int
    wall_s: float | None
    cells: int
    disturbed_trials: int           # run again as disturbed
    disturbed_kept: int             # disturbed, kept after the retries ran out


@dataclass
class Spread:
    runs: list[RunFacts]
    cells: list[CellSpread]
    left_out: list[str] = field(default_factory=list)   # cells not measured in every run

    def within(self, limit: float, to_fastest: bool = False) -> int:
        return sum(1 for c in self.cells if (c.spread_to_fastest if to_fastest else c.spread) - 1 <= limit)

    def predicted_within(self, limit: float) -> int:
        """Cells whose own trials predict a spread within `limit`."""
        return sum(1 for c in self.cells if c.predicted - 1 <= limit)

    def by_driver(self, limit: float = LIMITS[0]) -> dict[str, tuple[int, int]]:
        """driver -> (cells within `limit`, cells)."""
        out: dict[str, tuple[int, int]] = {}
        for c in self.cells:
            hit, total = out.get(c.driver, (0, 0))
            out[c.driver] = (hit + (c.spread - 1 <= limit), total + 1)
        return out

    def to_dict(self) -> dict:
        n = len(self.cells)
        return {"runs": [asdict(r) for r in self.runs], "cells": [c.to_dict() for c in self.cells],
                "left_out": self.left_out,
                "summary": {"cells": n,
                            "median_spread": statistics.median(c.spread for c in self.cells) if n else None,
                            **{f"within_{int(lim * 100)}pct": self.within(lim) for lim in LIMITS},
                            **{f"to_fastest_within_{int(lim * 100)}pct": self.within(lim, True) for lim in LIMITS},
                            "predicted_within_5pct": self.predicted_within(LIMITS[0]),
                            "median_predicted_spread": statistics.median(c.predicted for c in self.cells) if n else None,
                            "by_driver_within_5pct": self.by_driver()}}


def run_ids(store: Store, refs: tuple[str, ...]) -> list[int]:
    """Run ids from numbers, 'last' and ranges such as 184-188."""
    ids = store.resolve_all(refs)
    if len(set(ids)) < 2:
        raise LabInputError("spread needs at least two different runs")
    return ids


def _facts(store: Store, run_id: int, cells: list[Cell]) -> RunFacts:
    run = store.run(run_id)
    wall = run["finished_at"] - run["started_at"] if run["finished_at"] else None
    figs = [c.figures for c in cells if c.measured]
    return RunFacts(run_id, wall, len(cells), sum(f.disturbed_trials or 0 for f in figs),
                    sum(f.disturbed_kept or 0 for f in figs))


def _fastest(cells: dict[tuple[str, str, int], Cell]) -> dict[tuple[str, int], float]:
    """The fastest ok cell's throughput per (scenario, position)."""
    out: dict[tuple[str, int], float] = {}
    for (_, scenario, nth), c in cells.items():
        if c.measured:
            out[(scenario, nth)] = max(out.get((scenario, nth), 0.0), c.figures.throughput)
    return out


def spread(store: Store, ids: list[int]) -> Spread:
    runs = [store.cell_records(i) for i in ids]
    keyed = [keyed_cells(cells) for cells in runs]
    fastest = [_fastest(k) for k in keyed]
    out = Spread([_facts(store, i, cells) for i, cells in zip(ids, runs)], [])
    for key in keyed[0]:
        driver, scenario, nth = key
        found = [k.get(key) for k in keyed]
        measured = [c is not None and c.measured for c in found]
        if not any(measured):
            continue  # unsupported or failed in every run: nothing to compare
        if not all(measured):
            out.left_out.append(f"{driver} × {scenario}")
            continue
        units = {c.figures.unit for c in found}
        if len(units) > 1:
            out.left_out.append(f"{driver} × {scenario} (different metrics)")
            continue
        medians = [c.figures.throughput for c in found]
        to_fastest = [m / f[(scenario, nth)] for m, f in zip(medians, fastest)]
        per_run = [trial_throughputs(store, c) for c in found]
        noise = [stats.MAD_TO_SIGMA * stats.mad(x) / stats.median(x) for x in per_run if len(x) >= 2]
        out.cells.append(CellSpread(driver, scenario, units.pop(), medians, to_fastest,
                                    stats.median(noise) if noise else 0.0,
                                    statistics.mean(len(x) for x in per_run)))
    if not out.cells:
        raise LabInputError(f"runs {', '.join(map(str, ids))} have no cell measured in all of them")
    return out


# -- the terminal --------------------------------------------------------------------------

def _pct(x: float) -> str:
    return f"{(x - 1) * 100:.1f} %"


def table(s: Spread) -> Table:
    ids = [r.run_id for r in s.runs]
    t = Table(title=f"the same cells over runs {', '.join(map(str, ids))}: max/min of the medians",
              box=box.SIMPLE_HEAD)
    t.add_column("driver × scenario", overflow="fold", min_width=16)
    t.add_column("medians (min … max)", justify="right", no_wrap=True)
    t.add_column("spread", justify="right", no_wrap=True)
    t.add_column("÷ fastest", justify="right", no_wrap=True)
    t.add_column("trials predict", justify="right", no_wrap=True)
    t.add_column("trials for 5 %", justify="right", no_wrap=True)
    for c in sorted(s.cells, key=lambda c: -c.spread):
        style = "" if c.spread - 1 <= LIMITS[0] else ("yellow" if c.spread - 1 <= LIMITS[1] else "bold red")
        t.add_row(f"{c.driver} × {c.scenario}", f"{min(c.medians):,.0f} … {max(c.medians):,.0f} {c.unit}",
                  _pct(c.spread), _pct(c.spread_to_fastest), _pct(c.predicted),
                  f"{c.trials_for()} (ran {c.trials:.0f})", style=style)
    return t


def summary_lines(s: Spread) -> list[str]:
    n = len(s.cells)
    lines = []
    for r in s.runs:
        wall = f"{int(r.wall_s // 60)} min {r.wall_s % 60:.0f} s" if r.wall_s else "did not finish"
        lines.append(f"run {r.run_id}: {wall}, {r.cells} cells, {r.disturbed_trials} trials run again as "
                     f"disturbed, {r.disturbed_kept} kept disturbed")
    lines.append(f"{n} cells measured in every run; median spread {_pct(statistics.median(c.spread for c in s.cells))}")
    for lim in LIMITS:
        lines.append(f"within {lim * 100:.0f} %: {s.within(lim)} of {n} ({s.within(lim) / n:.0%}); ratio to the "
                     f"scenario's fastest: {s.within(lim, True)} ({s.within(lim, True) / n:.0%})")
    predicted_ok = s.predicted_within(LIMITS[0])
    lines.append(f"the trials' own noise predicts a median spread of "
                 f"{_pct(statistics.median(c.predicted for c in s.cells))} and {predicted_ok} of {n} cells within 5 %; "
                 f"{sum(1 for c in s.cells if c.spread > c.predicted)} cells moved more than their trials predict "
                 "(drift between runs)")
    per = s.by_driver()
    lines.append("within 5 % by driver: " + ", ".join(f"{d} {hit}/{total}" for d, (hit, total)
                                                     in sorted(per.items(), key=lambda kv: -kv[1][0] / kv[1][1])))
    if s.left_out:
        lines.append(f"left out (not measured in every run): {', '.join(s.left_out)}")
    return lines
