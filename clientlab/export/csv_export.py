"""The run as CSV: one row per cell with the headline figures (trials stay in the JSON export).

A profiled cell's layers are the CPU of its *profiled* trials, µs a request, the profiler's own
cost included (docs/profiles.md, "µs a request"): not the cell's figure, which is its timed
trials'. The column names say so (`profiled_cpu_us_incl_profiler_<layer>`), and beside them
stand what profiling cost against the timed trials (`profiler_cpu_cost`: +0.4 = the profiled
trials spent 40 % more CPU a request; `profiler_wall_cost`, the same for wall time), so that a
layer's µs is never read as a part of `cpu_user_s` + `cpu_sys_s`."""

from __future__ import annotations

import csv
import io

from clientlab.analysis.figures import plain_verdict
from clientlab.record import LAYERS, PlainCheck
from clientlab.store import Store

PROFILED = "profiled_cpu_us_incl_profiler"   # the prefix of the layer columns: what their µs are

PLAIN = ("decision", "verdict", "ratio", "ratio_ci_low", "ratio_ci_high", "ratio_ci_confidence", "pairs", "compared",
         "lab_per_s", "plain_per_s", "note", "problem")
PLAIN_MODES = {"heap": "heap", "fresh pages": "fresh"}   # an allocator mode, and its columns' name
PLAIN_MODE = ("lab_per_s", "plain_per_s", "ratio", "ratio_ci_low", "ratio_ci_high", "pairs", "decision",
              "lab_own", "lab_own_of", "plain_own", "plain_own_of", "lab_processes", "lab_processes_of")

COLUMNS = [
    "run", "driver", "scenario", "status", "reason", "throughput", "unit", "wall_median_s",
    "wall_ci_low_s", "wall_ci_high_s", "trials", "noisy", "cpu_user_s", "cpu_sys_s",
    "peak_rss_kb", "startup_s", "connections",
    # a profiled cell's CPU by layer (clientlab/profile): its profiled trials' µs a request, the
    # profiler's cost included, their total, and what profiling cost against the timed trials
    *(f"{PROFILED}_{layer}" for layer in LAYERS), f"{PROFILED}_total", "profiler",
    "profiler_cpu_cost", "profiler_wall_cost",
    # a cell whose trials fell into two modes, or whose allocator modes were measured on purpose
    # (labels heap and fresh pages): each mode's throughput and how many of the cell's own trials
    # and (allocator modes) processes fell into it, fastest first (allocator modes: heap first)
    *(f"mode{i}_{what}" for i in (1, 2) for what in ("label", "throughput", "trials", "processes", "processes_of")),
    # beside the library's plain loop (crosscheck --plain, the truth experiment): lab ÷ plain with
    # its CI, its pairs' decision and the cell's verdict (mode by mode where its modes cost apart),
    # both sides' requests a second; then the same with both sides held in each allocator mode, with how many of each side's own trials or rounds (and the lab's processes) fell
    # into that mode
    *(f"plain_{what}" for what in PLAIN),
    *(f"plain_{mode}_{what}" for mode in PLAIN_MODES.values() for what in PLAIN_MODE),
]


def render(store: Store, run_id: int) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS)
    writer.writeheader()
    for cell in store.cell_records(run_id):
        row = {"run": run_id, "driver": cell.driver, "scenario": cell.scenario, "status": cell.status,
               "reason": cell.reason or ""}
        if (f := cell.figures) is not None:  # a figure not measured (None) is an empty field
            row.update({
                "throughput": f.throughput, "unit": f.unit, "wall_median_s": f.wall_s.median,
                "wall_ci_low_s": f.wall_s.ci_low, "wall_ci_high_s": f.wall_s.ci_high, "trials": f.trials,
                "noisy": f.noisy, "cpu_user_s": f.cpu_user_s, "cpu_sys_s": f.cpu_sys_s,
                "peak_rss_kb": f.peak_rss_kb, "startup_s": f.startup_s,
                "connections": f.server.connections if f.server is not None else None,
            })
            if f.layers is not None:
                us = {f"{PROFILED}_{s.layer}": s.us_per_request for s in f.layers.shares}
                profile = f.extra.get("profile") or {}
                row.update({**us, f"{PROFILED}_total": round(sum(v or 0.0 for v in us.values()), 3),
                            "profiler": f.layers.profiler, "profiler_cpu_cost": profile.get("cpu_overhead"),
                            "profiler_wall_cost": f.layers.overhead})
            for i, m in enumerate(f.modes or (), 1):
                row.update({f"mode{i}_label": m.label, f"mode{i}_throughput": m.throughput, f"mode{i}_trials": m.trials,
                            f"mode{i}_processes": m.processes, f"mode{i}_processes_of": m.processes_of})
            if f.plain is not None:
                row.update(_plain(f.plain))
        writer.writerow(row)
    return out.getvalue()


def _per_s(seconds: float | None) -> float | None:
    return 1 / seconds if seconds else None


def _plain(p: PlainCheck) -> dict[str, object]:
    """A cell's plain-loop check as its columns (PLAIN, and PLAIN_MODE per allocator mode)."""
    row: dict[str, object] = {
        "plain_decision": p.decision, "plain_verdict": plain_verdict(p.decision, p.modes) if p.decision else None,
        "plain_ratio": p.ratio, "plain_ratio_ci_low": p.ratio_ci_low,
        "plain_ratio_ci_high": p.ratio_ci_high, "plain_ratio_ci_confidence": p.ratio_ci_confidence,
        "plain_pairs": p.pairs, "plain_compared": p.compared, "plain_lab_per_s": _per_s(p.lab_s_per_request),
        "plain_plain_per_s": _per_s(p.plain_s_per_request), "plain_note": p.note, "plain_problem": p.problem}
    for m in p.modes:
        name = PLAIN_MODES.get(m.mode)
        if name is None:
            continue
        row.update({f"plain_{name}_{what}": value for what, value in (
            ("lab_per_s", _per_s(m.lab_s_per_request)), ("plain_per_s", _per_s(m.plain_s_per_request)),
            ("ratio", m.ratio), ("ratio_ci_low", m.ratio_ci_low), ("ratio_ci_high", m.ratio_ci_high),
            ("pairs", m.pairs), ("decision", m.decision), ("lab_own", m.lab_own), ("lab_own_of", m.lab_own_of),
            ("plain_own", m.plain_own), ("plain_own_of", m.plain_own_of), ("lab_processes", m.lab_processes),
            ("lab_processes_of", m.lab_processes_of))})
    return row
