"""The run as CSV: one row per cell with the headline figures (trials stay in the JSON export)."""

from __future__ import annotations

import csv
import io

from clientlab.record import LAYERS
from clientlab.store import Store

COLUMNS = [
    "run", "driver", "scenario", "status", "reason", "throughput", "unit", "wall_median_s",
    "wall_ci_low_s", "wall_ci_high_s", "trials", "noisy", "cpu_user_s", "cpu_sys_s",
    "peak_rss_kb", "startup_s", "connections",
    # a profiled cell's CPU by layer (clientlab/profile), µs a request, and what profiling cost
    *(f"cpu_us_{layer}" for layer in LAYERS), "profiler", "profile_overhead",
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
                row.update({f"cpu_us_{s.layer}": s.us_per_request for s in f.layers.shares})
                row.update({"profiler": f.layers.profiler, "profile_overhead": f.layers.overhead})
        writer.writerow(row)
    return out.getvalue()
