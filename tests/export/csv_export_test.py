"""The CSV export's layer columns say whose CPU they are: the profiled trials', the profiler's own
cost included, not the timed trials' figure beside them."""

from __future__ import annotations

import csv
import io

from clientlab.export import csv_export
from clientlab.profile.model import LAYERS


def _stored(store, profiled: bool) -> int:
    run_id = store.start_run({}, {})
    cell_id = store.start_cell(run_id, "c-libcurl", "get-small", {}, "throughput")
    figures: dict = {"throughput": 50_000.0, "unit": "req/s", "cpu_user_s": 0.010, "cpu_sys_s": 0.010}
    if profiled:
        # 30 µs a request in the profiled trials (20 library, 10 kernel), 50 % more CPU than the timed
        shares = [{"layer": layer, "us_per_request": {"library": 20.0, "kernel": 10.0}.get(layer, 0.0),
                   "share": {"library": 2 / 3, "kernel": 1 / 3}.get(layer, 0.0)} for layer in LAYERS]
        figures["layers"] = {"profiler": "perf", "samples": 900, "overhead": 0.2, "shares": shares}
        figures["profile"] = {"trials": 3, "requests": 3000, "cpu_overhead": 0.5}
    store.finish_cell(cell_id, "ok", None, figures, {})
    return run_id


def _row(store, profiled: bool) -> dict[str, str]:
    rows = list(csv.DictReader(io.StringIO(csv_export.render(store, _stored(store, profiled)))))
    assert len(rows) == 1
    return rows[0]


def test_the_layer_columns_are_named_for_the_profiled_trials_with_the_profilers_cost():
    layer_columns = [c for c in csv_export.COLUMNS if any(c.endswith(f"_{layer}") for layer in LAYERS)]
    assert layer_columns == [f"profiled_cpu_us_incl_profiler_{layer}" for layer in LAYERS]
    assert not any(c.startswith("cpu_us_") for c in csv_export.COLUMNS)


def test_a_profiled_cells_row_gives_its_layers_their_total_and_what_profiling_cost(store):
    row = _row(store, profiled=True)
    assert float(row["profiled_cpu_us_incl_profiler_library"]) == 20.0
    assert float(row["profiled_cpu_us_incl_profiler_kernel"]) == 10.0
    assert float(row["profiled_cpu_us_incl_profiler_total"]) == 30.0
    # the profiled trials' 30 µs at +50 % CPU: the timed trials' 20 µs a request are not the layers' sum
    assert float(row["profiler_cpu_cost"]) == 0.5 and float(row["profiler_wall_cost"]) == 0.2
    assert row["profiler"] == "perf"


def test_a_cell_not_profiled_leaves_the_layer_and_cost_columns_empty(store):
    row = _row(store, profiled=False)
    assert float(row["throughput"]) == 50_000.0
    assert all(row[c] == "" for c in csv_export.COLUMNS
               if c.startswith("profil"))
