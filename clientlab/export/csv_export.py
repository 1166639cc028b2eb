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

from clientlab.record import LAYERS
from clientlab.store import Store

PROFILED = "profiled_cpu_us_incl_profiler"   # the prefix of the layer columns: what their µs are

COLUMNS = [
    "run", "driver", "scenario", "status", "reason", "throughput", "unit", "wall_median_s",
    "wall_ci_low_s", "wall_ci_high_s", "trials", "noisy", "cpu_user_s", "cpu_sys_s",
    "peak_rss_kb", "startup_s", "connections",
    # a profiled cell's CPU by layer (clientlab/profile): its profiled trials' µs a request, the
    # profiler's cost included, their total, and what profiling cost against the timed trials
    *(f"{PROFILED}_{layer}" for layer in LAYERS), f"{PROFILED}_total", "profiler",
    "profiler_cpu_cost", "profiler_wall_cost",
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
        writer.writerow(row)
    return out.getvalue()
