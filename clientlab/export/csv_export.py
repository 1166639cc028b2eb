"""The run as CSV: one row per cell with the headline figures (trials stay in the JSON export)."""

from __future__ import annotations

import csv
import io

from clientlab.store import Store

COLUMNS = [
    "run", "driver", "scenario", "status", "reason", "throughput", "unit", "wall_median_s",
    "wall_ci_low_s", "wall_ci_high_s", "trials", "noisy", "cpu_user_s", "cpu_sys_s",
    "peak_rss_kb", "startup_s", "connections",
]


def render(store: Store, run_id: int) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS)
    writer.writeheader()
    for cell in store.cells(run_id):
        f = cell["figures"] or {}
        wall = f.get("wall_s", {})
        writer.writerow({
            "run": run_id, "driver": cell["driver"], "scenario": cell["scenario"],
            "status": cell["status"], "reason": cell["reason"] or "",
            "throughput": f.get("throughput", ""), "unit": f.get("unit", ""),
            "wall_median_s": wall.get("median", ""), "wall_ci_low_s": wall.get("ci_low", ""),
            "wall_ci_high_s": wall.get("ci_high", ""), "trials": f.get("trials", ""),
            "noisy": f.get("noisy", ""), "cpu_user_s": f.get("cpu_user_s", ""),
            "cpu_sys_s": f.get("cpu_sys_s", ""), "peak_rss_kb": f.get("peak_rss_kb", ""),
            "startup_s": f.get("startup_s", ""),
            "connections": (f.get("server") or {}).get("connections", ""),
        })
    return out.getvalue()
