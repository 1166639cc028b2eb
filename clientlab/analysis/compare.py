"""Two stored runs side by side: for every cell in both (same driver and scenario label), is B
faster or slower than A, beyond the noise both runs measured?

Throughput: the ratio of the medians B/A, and a two-sided Mann–Whitney U test (Mann & Whitney,
1947) on the two runs' timed trials (each trial's throughput). With no ties and at most
EXACT_MAX trials in all the p-value is exact (the null distribution of U counted by the
recurrence of Mann & Whitney); otherwise the normal approximation with the tie correction and a
continuity correction (e.g. Conover, "Practical Nonparametric Statistics", §5.1).

Verdicts: faster / slower (p < ALPHA and the medians differ by more than MIN_CHANGE), no
significant difference, or too few trials — when even
the most extreme ranking possible could not reach p < ALPHA (3 trials against 3 cannot: the
smallest two-sided p is 2/20 = 0.1; 4 against 4 can: 2/70). A rank test finds even a tiny shift
that is consistent, so like criterion.rs's noise threshold a change below MIN_CHANGE is not called
faster or slower. CPU (user + system) and peak RSS are compared as ratios of the medians.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import lru_cache
from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from clientlab.record import Cell
from clientlab.store import Store
from clientlab.store.fingerprint import HOST_FIELDS, network_of

ALPHA = 0.05
MIN_CHANGE = 0.02  # |B/A - 1| below this is within the noise of any shared machine
EXACT_MAX = 60  # trials of both runs together, for the exact distribution


# -- the test: pure functions ---------------------------------------------------------------

def ranks(values: list[float]) -> list[float]:
    """1-based ranks; tied values share the mean of their ranks."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


@lru_cache(maxsize=None)
def _u_counts(m: int, n: int) -> tuple[int, ...]:
    """How many of the C(m+n, m) orderings give U = 0, 1, ..., m·n (no ties)."""
    if m == 0 or n == 0:
        return (1,)
    # c(m, n, u) = c(m-1, n, u-n) + c(m, n-1, u): the largest value is from the first sample or not
    first, second = _u_counts(m - 1, n), _u_counts(m, n - 1)
    return tuple((first[u - n] if 0 <= u - n < len(first) else 0) + (second[u] if u < len(second) else 0)
                 for u in range(m * n + 1))


def smallest_p(m: int, n: int) -> float:
    """The smallest two-sided p any two samples of these sizes can give."""
    return min(1.0, 2 / math.comb(m + n, m)) if m and n else 1.0


@dataclass(frozen=True)
class UTest:
    u: float       # U of the first sample: how often one of its values beats one of the second's
    p: float       # two-sided
    method: str    # "exact" or "normal"


def mann_whitney(a: list[float], b: list[float]) -> UTest:
    m, n = len(a), len(b)
    if not m or not n:
        raise ValueError("Mann-Whitney U needs values in both samples")
    r = ranks(a + b)
    u = sum(r[:m]) - m * (m + 1) / 2
    ties = len(set(a + b)) < m + n
    if not ties and m + n <= EXACT_MAX:
        counts = _u_counts(m, n)
        total = math.comb(m + n, m)
        k = int(u)
        low, high = sum(counts[: k + 1]) / total, sum(counts[k:]) / total
        return UTest(u, min(1.0, 2 * min(low, high)), "exact")
    return UTest(u, normal_p(u, m, n, _tie_sizes(a + b)), "normal")


def normal_p(u: float, m: int, n: int, tie_sizes: list[int]) -> float:
    """Two-sided p of U from the normal approximation, corrected for ties and continuity."""
    size = m + n
    tie_term = sum(t**3 - t for t in tie_sizes) / (size * (size - 1))
    sigma = math.sqrt(m * n / 12 * ((size + 1) - tie_term))
    if sigma == 0:
        return 1.0
    z = max(0.0, abs(u - m * n / 2) - 0.5) / sigma
    return min(1.0, math.erfc(z / math.sqrt(2)))


def _tie_sizes(values: list[float]) -> list[int]:
    counts: dict[float, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    return [c for c in counts.values() if c > 1]


# -- two runs -------------------------------------------------------------------------------

@dataclass
class CellComparison:
    driver: str
    scenario: str
    status_a: str
    status_b: str
    unit: str | None = None
    throughput_a: float | None = None
    throughput_b: float | None = None
    throughput_ratio: float | None = None
    trials_a: int = 0
    trials_b: int = 0
    u: float | None = None
    p_value: float | None = None
    method: str | None = None
    verdict: str = "not measured in both"
    cpu_ratio: float | None = None
    peak_rss_ratio: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def _ratio(b: float, a: float) -> float | None:
    return b / a if a else None


def trial_throughputs(store: Store, cell: Cell) -> list[float]:
    """Each timed trial's throughput, in the cell's unit (the cell's figure is their median)."""
    f = cell.figures
    timed = [t for t in store.trials(cell.id) if t["kind"] == "timed" and t["ok"] and t["wall_s"]]
    if f.in_bytes:
        return [(t["work_bytes"] or 0) / t["wall_s"] / 1e6 for t in timed]
    return [f.requests / t["wall_s"] for t in timed]


def compare_cells(store: Store, a: Cell, b: Cell) -> CellComparison:
    row = CellComparison(a.driver, a.scenario, a.status, b.status)
    if not a.measured or not b.measured:
        return row
    fa, fb = a.figures, b.figures
    row.unit = fa.unit
    row.throughput_a, row.throughput_b = fa.throughput, fb.throughput
    row.throughput_ratio = _ratio(fb.throughput, fa.throughput)
    row.cpu_ratio = _ratio(fb.cpu_s, fa.cpu_s)
    row.peak_rss_ratio = _ratio(fb.peak_rss_kb, fa.peak_rss_kb)
    xa, xb = trial_throughputs(store, a), trial_throughputs(store, b)
    row.trials_a, row.trials_b = len(xa), len(xb)
    if fa.unit != fb.unit:
        row.verdict = "different metrics"
        return row
    if smallest_p(len(xa), len(xb)) >= ALPHA:
        row.verdict = "too few trials"
        return row
    test = mann_whitney(xb, xa)
    row.u, row.p_value, row.method = test.u, test.p, test.method
    if test.p >= ALPHA or abs(row.throughput_ratio - 1) <= MIN_CHANGE:
        row.verdict = "no significant difference"
    else:
        row.verdict = "faster" if fb.throughput > fa.throughput else "slower"
    return row


def keyed_cells(cells: list[Cell]) -> dict[tuple[str, str, int], Cell]:
    """Cells by (driver, scenario, nth): a label that repeats in a run is paired in order."""
    seen: dict[tuple[str, str], int] = {}
    out = {}
    for c in cells:
        key = (c.driver, c.scenario)
        out[(*key, seen.get(key, 0))] = c
        seen[key] = seen.get(key, 0) + 1
    return out


def compare_runs(store: Store, run_a: int, run_b: int) -> list[CellComparison]:
    """One row per cell present in both runs, in run A's order."""
    a, b = keyed_cells(store.cell_records(run_a)), keyed_cells(store.cell_records(run_b))
    return [compare_cells(store, a[key], b[key]) for key in a if key in b]


def named(value: Any) -> Any:
    """A cell's parameters as far as they name something: a key stored as null says what an
    absent one says (a run stored before the key existed left it out)."""
    if isinstance(value, dict):
        return {k: named(v) for k, v in value.items() if v is not None}
    return value


def unlike(store: Store, run_a: int, run_b: int) -> list[str]:
    """What keeps the two runs' figures from being like for like, from what their fingerprints
    cover: another kind of host, another network, and per cell other driver versions or scenario
    parameters. Empty when they measured the same things the same way on the same kind of host."""
    ra, rb = store.run(run_a), store.run(run_b)
    notes = []
    host_a, host_b = ({k: r["machine"].get(k) for k in HOST_FIELDS} for r in (ra, rb))
    if host_a != host_b:
        differ = ", ".join(f"{k} {host_a[k]} / {host_b[k]}" for k in HOST_FIELDS if host_a[k] != host_b[k])
        notes.append(f"runs {run_a} and {run_b} were made on different kinds of host ({differ}): "
                     "their absolute figures are not like for like")
    net_a, net_b = network_of(ra["config"]), network_of(rb["config"])
    if net_a != net_b:
        notes.append(f"network: {net_a['profile']} in run {run_a}, {net_b['profile']} in run {run_b}")
    a, b = keyed_cells(store.cell_records(run_a)), keyed_cells(store.cell_records(run_b))
    for key in (k for k in a if k in b):
        what = [name for name, field in (("driver versions", "versions"), ("scenario parameters", "params"))
                if getattr(a[key], field) and getattr(b[key], field)
                and named(getattr(a[key], field)) != named(getattr(b[key], field))]
        if what:
            notes.append(f"{key[0]} × {key[1]}: other {' and '.join(what)}")
    return notes


def document(run_a: int, run_b: int, rows: list[CellComparison], notes: list[str] | None = None) -> dict:
    return {"run_a": run_a, "run_b": run_b, "alpha": ALPHA, "min_change": MIN_CHANGE,
            "test": "Mann-Whitney U, two-sided, on each timed trial's throughput",
            "not_like_for_like": notes or [], "cells": [r.to_dict() for r in rows]}


# -- the terminal table ---------------------------------------------------------------------

VERDICT_STYLE = {"faster": "bold green", "slower": "bold red", "no significant difference": "dim",
                 "too few trials": "yellow"}


def _x(value: float | None) -> str:
    return f"{value:.2f}×" if value is not None else "—"


def table(run_a: int, run_b: int, rows: list[CellComparison]) -> Table:
    t = Table(title=f"run {run_b} against run {run_a} (B/A)", box=box.SIMPLE_HEAD, caption=(
        f"throughput: ratio of the medians; p: two-sided Mann–Whitney U on the timed trials, "
        f"significant below {ALPHA} with a change over {MIN_CHANGE:.0%}; "
        "CPU (user+system) and peak RSS: ratios B/A of the medians"))
    t.add_column("driver × scenario", overflow="fold", min_width=16)
    for column in ("A", "B", "B/A", "trials", "p"):
        t.add_column(column, justify="right", no_wrap=True)
    t.add_column("verdict", overflow="fold", min_width=11)
    for column in ("CPU", "RSS"):
        t.add_column(column, justify="right", no_wrap=True)
    for r in rows:
        measured = r.throughput_a is not None
        t.add_row(
            f"{r.driver} × {r.scenario}",
            f"{r.throughput_a:,.0f} {r.unit}" if measured else r.status_a,
            f"{r.throughput_b:,.0f} {r.unit}" if measured else r.status_b,
            _x(r.throughput_ratio), f"{r.trials_a} / {r.trials_b}",
            f"{r.p_value:.3g}" if r.p_value is not None else "—",
            Text(r.verdict, style=VERDICT_STYLE.get(r.verdict, "")), _x(r.cpu_ratio), _x(r.peak_rss_ratio))
    return t
