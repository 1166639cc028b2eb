"""Judging an article's claims with a stored run's numbers.

A claim is confirmed when the lab measures the effect at least as large as the claim's `ratio`
asks, "partly confirmed" when it points the same way but smaller — and larger than the cells'
own noise (the half-widths of their medians' confidence intervals, at least MIN_EFFECT) —,
refuted when it does not show or stays within that noise, and "not reproducible here" when the cells it needs were not measured (the reason is
given: a client not packaged, a network the machine cannot build, a job a driver refuses).
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any

from clientlab.analysis.figures import plain_verdict
from clientlab.experiment.spec import Claim, Experiment, Select
from clientlab.record import Cell, CellFigures, PlainCheck
from clientlab.units import format_bytes

LOWER_IS_BETTER = {"wall_s": True, "cpu_s": True, "cpu_per_work": True, "peak_rss_kb": True, "throughput": False}
CPU_METRICS = ("cpu_s", "cpu_per_work")

CONFIRMED, PARTLY, REFUTED, NOT_HERE = "confirmed", "partly confirmed", "refuted", "not reproducible here"
NOT_DECIDED = "not decided"  # the effect's CI straddles what the claim needs: the noise decides nothing
MIN_EFFECT = 0.05  # an effect smaller than this is not one, however precise the cells


@dataclass
class Verdict:
    claim: Claim
    outcome: str
    evidence: list[str] = field(default_factory=list)


def metric_value(cell: Cell, metric: str) -> float:
    f = cell.figures
    if metric == "wall_s":
        return f.wall_s.median
    if metric == "cpu_s":
        return f.cpu_s
    if metric == "cpu_per_work":  # a work unit is what the throughput counts: a request, or a MB
        return f.cpu_s / (f.work_units or float("nan"))
    return float(getattr(f, metric))


def _unit(cell: Cell | None) -> str:
    return cell.figures.unit if cell is not None and cell.figures is not None else ""


def show(value: float, metric: str, cell: Cell | None = None) -> str:
    if metric == "wall_s":
        return f"{value:.3f} s" if value < 10 else f"{value:.1f} s"
    if metric == "cpu_s":
        return f"{value:.3f} s CPU"
    if metric == "cpu_per_work":
        if _unit(cell) == "MB/s":
            return f"{value * 1e3:,.2f} ms CPU a MB"
        return f"{value * 1e6:,.0f} µs CPU a request"
    if metric == "peak_rss_kb":
        return f"{format_bytes(value * 1024)} peak RSS"
    return f"{value:,.1f} {_unit(cell)}".strip()


def _base(label: str) -> str:
    return label.split("[", 1)[0]


def select(cells: list[Cell], s: Select) -> list[Cell]:
    def fits(c: Cell) -> bool:
        p = c.params
        return (p.get("part") == s.part and (s.driver is None or fnmatch.fnmatchcase(c.driver, s.driver))
                and (s.scenario is None or _base(c.scenario) == s.scenario)
                and (s.value is None or p.get("value") == s.value)
                and (s.http is None or c.client.get("http") == s.http))
    return [c for c in cells if fits(c)]


def _missing(chosen: list[Cell]) -> list[str]:
    """What was not measured, once per driver and reason."""
    by_reason: dict[tuple[str, str, str], int] = {}
    for c in chosen:
        if c.status != "ok":
            key = (c.driver, c.status, c.reason or "")
            by_reason[key] = by_reason.get(key, 0) + 1
    return [f"{driver}: {status}" + (f" ({reason})" if reason else "") + (f" ×{n}" if n > 1 else "")
            for (driver, status, reason), n in by_reason.items()]


def _name(c: Cell) -> str:
    return f"{c.driver} × {c.scenario}"


def judge(claim: Claim, cells: list[Cell], sweep_order: dict[str, list]) -> Verdict:
    a = select(cells, claim.a)
    b = select(cells, claim.b) if claim.b else []
    if not a or (claim.b and not b):
        return Verdict(claim, NOT_HERE, ["no measured cell matches the claim's selection"])
    problems = _missing(a + b)
    ok_a = [c for c in a if c.measured]
    ok_b = [c for c in b if c.measured]
    if not ok_a or (claim.b and not ok_b):
        return Verdict(claim, NOT_HERE, problems)
    if claim.check == "matches_plain":
        return _judge_matches_plain(claim, ok_a, problems)
    m, lower = claim.metric, LOWER_IS_BETTER[claim.metric]
    if claim.check == "faster" and claim.each:
        return _judge_each(claim, ok_a, ok_b, problems)
    if claim.check == "faster":
        va, vb = _aggregate(ok_a, m), _aggregate(ok_b, m)
        ratio = (vb / va if lower else va / vb) if min(va, vb) > 0 else float("inf")
        noise = _noise(ok_a, m) + _noise(ok_b, m)
        outcome = _outcome(ratio, claim.ratio, noise)
        evidence = [f"{show(va, m, ok_a[0])}{_per_driver(ok_a)} ({', '.join(_name(c) for c in ok_a)}) against "
                    f"{show(vb, m, ok_b[0])}{_per_driver(ok_b)} ({', '.join(_name(c) for c in ok_b)}): {ratio:.2f}× "
                    f"{'better' if ratio >= 1 else 'worse'} (the claim needs {claim.ratio:g}×; "
                    f"noise ±{max(MIN_EFFECT, noise):.0%}"
                    + ("; the noise is larger than the effect asked, so it decides nothing" if outcome == NOT_DECIDED
                       else "") + ")"]
        return Verdict(claim, outcome, evidence + problems)
    if claim.check == "similar":
        values = [(metric_value(c, m), c) for c in ok_a]
        best = min(v for v, _ in values) if lower else max(v for v, _ in values)
        worst = max(v for v, _ in values) if lower else min(v for v, _ in values)
        spread = (worst / best if lower else best / worst) - 1 if best and worst else float("inf")
        outcome = CONFIRMED if spread <= claim.tolerance else REFUTED
        evidence = [f"{_name(c)}: {show(v, m, c)}" for v, c in values]
        evidence.append(f"spread {spread:.0%} between best and worst (the claim allows {claim.tolerance:.0%})")
        return Verdict(claim, outcome, evidence + problems)
    return _judge_sweep(claim, ok_a, sweep_order.get(claim.a.part, []), problems)


def _judge_each(claim: Claim, ok_a: list[Cell], ok_b: list[Cell], problems: list[str]) -> Verdict:
    """'faster' for every driver: each driver's a against its own b."""
    m, lower = claim.metric, LOWER_IS_BETTER[claim.metric]
    drivers = sorted({c.driver for c in ok_a} & {c.driver for c in ok_b})
    if not drivers:
        return Verdict(claim, NOT_HERE, ["no driver was measured on both sides"] + problems)
    outcomes, evidence = [], []
    for d in drivers:
        mine_a = [c for c in ok_a if c.driver == d]
        mine_b = [c for c in ok_b if c.driver == d]
        va, vb = _aggregate(mine_a, m), _aggregate(mine_b, m)
        ratio = (vb / va if lower else va / vb) if min(va, vb) > 0 else float("inf")
        noise = _noise(mine_a, m) + _noise(mine_b, m)
        outcomes.append(_outcome(ratio, claim.ratio, noise))
        within = ("not decided, the noise larger than the effect asked: " if outcomes[-1] == NOT_DECIDED
                  else "within the noise, " if ratio < claim.ratio and outcomes[-1] == REFUTED and ratio > 1
                  else "noise ")
        evidence.append(f"{d}: {show(va, m, mine_a[0])} against {show(vb, m, mine_b[0])}: {ratio:.2f}× "
                        f"({within}±{max(MIN_EFFECT, noise):.0%})")
    held = sum(o == CONFIRMED for o in outcomes)
    evidence.append(f"holds for {held} of {len(drivers)} drivers (each needs {claim.ratio:g}×)")
    if held == len(drivers):
        outcome = CONFIRMED
    elif all(o == REFUTED for o in outcomes):
        outcome = REFUTED
    elif all(o in (REFUTED, NOT_DECIDED) for o in outcomes):
        outcome = NOT_DECIDED
    else:
        outcome = PARTLY
    return Verdict(claim, outcome, evidence + problems)


def _judge_matches_plain(claim: Claim, ok_a: list[Cell], problems: list[str]) -> Verdict:
    """Each cell's lab ÷ plain (its time per request over its library's plain loop's, pair by
    pair): within when its CI lies inside 1 ± tolerance, off when the CI lies outside it, and
    not decided when the CI straddles a bound or covers too little. Confirmed when every cell is
    within, refuted when one is off, else not decided. A cell not decided says why (the bound its
    CI straddles, or its pairs too few for a 90 % interval; the time budget that stopped it), and
    the sum counts those reasons: not decided is no verdict on the lab, never "within its noise"."""
    low, high = 1 - claim.tolerance, 1 + claim.tolerance
    outcomes, evidence, why_not = [], [], []
    for c in ok_a:
        plain = c.figures.plain
        if plain is None or plain.ratio is None:
            evidence.append(f"{_name(c)}: no plain loop figure ({(plain and plain.problem) or 'none was run'})")
            continue
        r, lo, hi = plain.ratio, plain.ratio_ci_low, plain.ratio_ci_high
        if plain.decision is not None and claim.tolerance == PLAIN_TARGET:
            # the check's own verdict, which also asks its interval for 90 % coverage, mode by
            # mode where the cell's allocator modes cost apart
            outcomes.append(_PLAIN_OUTCOME[plain_verdict(plain.decision, plain.modes)])
        else:   # a run stored before the check decided, or another tolerance: the interval alone
            outcomes.append(CONFIRMED if low <= lo and hi <= high else REFUTED if hi < low or lo > high
                            else NOT_DECIDED)
        said = "" if outcomes[-1] == CONFIRMED else f": {outcomes[-1]}"
        if outcomes[-1] == NOT_DECIDED:
            why = _undecided(plain, c.figures, low, high)
            why_not.append((why, plain.compared, bool(c.figures.budget_stopped)))
            said += f", {why}" + ("; the time budget stopped its pairs" if c.figures.budget_stopped else "")
        if plain.note and outcomes[-1] != CONFIRMED:   # beside the miss, never instead of it
            said += f"; known cause: {plain.note}"
        evidence.append(f"{_name(c)}: lab ÷ plain {r:.2f} (CI {lo:.2f}–{hi:.2f}, {plain.compared} "
                        f"pair{'' if plain.compared == 1 else 's'})"
                        + said + "".join(f"; {m.mode}: lab {_rate(m.lab_s_per_request)} / plain "
                                         f"{_rate(m.plain_s_per_request)} req/s, {m.ratio:.2f} "
                                         f"({m.ratio_ci_low:.2f}–{m.ratio_ci_high:.2f}, {m.pairs} held pairs) {m.decision}"
                                         for m in plain.modes if m.ratio is not None))
    if not outcomes:
        return Verdict(claim, NOT_HERE, evidence + problems)
    held = outcomes.count(CONFIRMED)
    evidence.append(f"{held} of {len(outcomes)} cells within {claim.tolerance:.0%} of their plain loop; "
                    f"{outcomes.count(REFUTED)} off, {_not_decided_sum(why_not)}")
    outcome = (CONFIRMED if held == len(outcomes) else REFUTED if REFUTED in outcomes else NOT_DECIDED)
    return Verdict(claim, outcome, evidence + problems)


TOO_FEW = "too few pairs for a 90 % interval"


def _undecided(plain: PlainCheck, figures: CellFigures, low: float, high: float) -> str:
    """Why a cell's lab ÷ plain decides nothing: its pairs too few for an interval of 90 %
    coverage, or its CI straddling a bound (which one)."""
    confidence = plain.ratio_ci_confidence
    if (confidence is not None and confidence < DECIDE_CONFIDENCE) or plain.compared < 2:
        return TOO_FEW
    lo, hi = plain.ratio_ci_low or 0.0, plain.ratio_ci_high or 0.0
    bounds = [f"{b:.2f}" for b in (low, high) if lo < b < hi]
    return f"its CI straddles {' and '.join(bounds)}" if bounds else "its CI straddles a bound"


def _not_decided_sum(why_not: list[tuple[str, int, bool]]) -> str:
    """'7 not decided (4 whose CI straddles a bound, 5-20 pairs; 3 with too few pairs for a 90 %
    interval, 1-4 pairs; 5 of them stopped by the time budget)', or '0 not decided'."""
    if not why_not:
        return "0 not decided"
    parts = []
    for label, chosen in (("whose CI straddles a bound", [w for w in why_not if w[0] != TOO_FEW]),
                          (f"with {TOO_FEW}", [w for w in why_not if w[0] == TOO_FEW])):
        if chosen:
            pairs = sorted(n for _, n, _ in chosen)
            span = f"{pairs[0]} pair{'' if pairs[0] == 1 else 's'}" if pairs[0] == pairs[-1] \
                else f"{pairs[0]}–{pairs[-1]} pairs"
            parts.append(f"{len(chosen)} {label}, {span}")
    budget = sum(1 for *_, stopped in why_not if stopped)
    if budget:
        parts.append(f"{budget} of them stopped by the time budget")
    return f"{len(why_not)} not decided ({'; '.join(parts)})"


PLAIN_TARGET = 0.10   # the plain-loop check's own tolerance (selfcheck/calibrate.py TARGET)
DECIDE_CONFIDENCE = 0.9  # the coverage the check's interval needs to decide (selfcheck/calibrate.py)
_PLAIN_OUTCOME = {"within": CONFIRMED, "off": REFUTED, "not decided": NOT_DECIDED}


def _rate(seconds: float | None) -> str:
    return f"{1 / seconds:,.0f}" if seconds else "—"


def _noise(cells: list[Cell], metric: str) -> float:
    """The widest relative half-width of a median's confidence interval among these cells: of
    their CPU for a claim on CPU (where the run recorded it), else of their wall times."""
    def precision(f: CellFigures) -> float | None:
        return f.cpu_precision if metric in CPU_METRICS and f.cpu_precision is not None else f.precision
    return max((precision(c.figures) or 0.0 for c in cells), default=0.0)


def _outcome(ratio: float, wanted: float, noise: float) -> str:
    """An effect counts only beyond the noise: confirmed at the claim's ratio, partly when smaller;
    refuted when an effect of the claimed size would have stood out of this noise and none did
    (or the effect went the other way beyond it); else not decided, the noise being larger than
    the effect the claim asks (a 1.85× "effect" at ±119 % confirms nothing)."""
    floor = max(MIN_EFFECT, noise)
    if ratio > 1 + floor:
        return CONFIRMED if ratio >= wanted else PARTLY
    if wanted - 1 > floor or ratio < 1 / (1 + floor):
        return REFUTED
    return NOT_DECIDED


def _aggregate(cells: list[Cell], metric: str) -> float:
    """One figure for a selection: a driver's times add up over its scenarios (the article's script
    total), and drivers that did the same work are averaged; rates and sizes average."""
    if metric not in ("wall_s", "cpu_s"):
        return sum(metric_value(c, metric) for c in cells) / len(cells)
    totals: dict[str, float] = {}
    for c in cells:
        totals[c.driver] = totals.get(c.driver, 0.0) + metric_value(c, metric)
    return sum(totals.values()) / len(totals)


def _per_driver(cells: list[Cell]) -> str:
    drivers = {c.driver for c in cells}
    return f" (mean of {len(drivers)} drivers)" if len(drivers) > 1 else ""


def _judge_sweep(claim: Claim, cells: list[Cell], order: list, problems: list[str]) -> Verdict:
    m, lower = claim.metric, LOWER_IS_BETTER[claim.metric]
    groups: dict[tuple, list[Cell]] = {}
    for c in cells:
        groups.setdefault((c.driver, _base(c.scenario), c.client.get("http")), []).append(c)
    results, evidence = [], []
    for (driver, scen, http), group in sorted(groups.items(), key=lambda kv: str(kv[0])):
        group.sort(key=lambda c: order.index(c.params.get("value")) if c.params.get("value") in order else 0)
        if len(group) < 2:
            evidence.append(f"{driver} × {scen}: only one point of the sweep was measured")
            continue
        values = [metric_value(c, m) for c in group]
        first, last = values[0], values[-1]
        points = ", ".join(f"{c.params.get('value')}: {show(v, m, c)}" for c, v in zip(group, values))
        if claim.check in ("grows", "falls"):
            change = (last / first if claim.check == "grows" else first / last) if min(first, last) > 0 else 0
            ok = change >= claim.ratio
            partly = _outcome(change, claim.ratio, _noise([group[0], group[-1]], m) * 2) == PARTLY
            detail = f"{claim.check} {change:.2f}× from first to last (the claim needs {claim.ratio:g}×)"
        elif claim.check == "flat":
            spread = max(values) / min(values) - 1 if min(values) > 0 else float("inf")
            ok, partly = spread <= claim.tolerance, False
            detail = f"spread {spread:.0%} (the claim allows {claim.tolerance:.0%})"
        else:  # sweet_spot
            best = min(range(len(values)), key=lambda i: values[i]) if lower else max(range(len(values)),
                                                                                     key=lambda i: values[i])
            ok, partly = 0 < best < len(values) - 1, False
            detail = f"best at {group[best].params.get('value')}"
        results.append(CONFIRMED if ok else PARTLY if partly else REFUTED)
        evidence.append(f"{driver} × {scen}{' HTTP/' + http if http else ''}: {points} — {detail}")
    if not results:
        return Verdict(claim, NOT_HERE, evidence + problems)
    outcome = (CONFIRMED if all(r == CONFIRMED for r in results)
               else REFUTED if all(r == REFUTED for r in results) else PARTLY)
    return Verdict(claim, outcome, evidence + problems)


def judge_run(experiment: Experiment, cells: list[Cell]) -> list[Verdict]:
    order = {p.name: list(p.sweep.values) if p.sweep else list(range(len(p.variants))) for p in experiment.parts}
    return [judge(claim, cells, order) for claim in experiment.claims]


def summary_of(cells: list[Cell]) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for c in cells:
        counts[c.status] = counts.get(c.status, 0) + 1
    return counts
