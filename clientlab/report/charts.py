"""The report's charts as Plotly figures (plain dicts that plotly.js draws in the page).

Per scenario (measured cells only): throughput per driver with the median's confidence interval,
CPU user and system stacked, peak RSS. Per sweep (see sweeps.py): the swept metric against the
swept setting, one curve per driver and other settings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from clientlab.record import Cell, CellFigures
from clientlab.report.data import Report
from clientlab.report.sweeps import Sweep, find

FONT = {"family": "DejaVu Sans, Liberation Sans, sans-serif", "size": 12}


@dataclass
class Chart:
    name: str    # unique, file-name safe: the PNG's name
    kind: str    # throughput / cpu / peak_rss / sweep-<metric>
    scenario: str
    figure: dict[str, Any]


def _layout(title: str, y_title: str, **extra: Any) -> dict[str, Any]:
    return {"title": {"text": title}, "height": 340, "font": FONT, "margin": {"l": 70, "r": 20, "t": 50, "b": 60},
            "yaxis": {"title": {"text": y_title}, "rangemode": "tozero"}, **extra}


def _slug(*parts: str) -> str:
    text = "-".join(parts).lower()
    return "".join(ch if ch.isalnum() else "-" for ch in text).strip("-")


# -- one figure of a measured cell ---------------------------------------------------------

METRICS: dict[str, tuple[str, Callable[[CellFigures], float]]] = {  # metric -> (axis title, value of a cell's figures)
    "throughput": ("throughput", lambda f: f.throughput),
    "peak_rss": ("peak RSS (MiB)", lambda f: f.peak_rss_kb / 1024),
    "wall": ("wall time, median (s)", lambda f: f.wall_s.median),
}


# -- per scenario ---------------------------------------------------------------------------

def _scenario_charts(column: str, cells: list[Cell], timed_walls: dict[int, list[float]]) -> list[Chart]:
    drivers = [c.driver for c in cells]
    figs = [c.figures for c in cells]
    unit = figs[0].unit
    lows, highs = zip(*(f.throughput_interval for f in figs))
    throughput = [f.throughput for f in figs]
    bars = {"type": "bar", "x": drivers, "y": throughput, "name": unit,
            "error_y": {"type": "data", "symmetric": False, "array": [h - t for h, t in zip(highs, throughput)],
                        "arrayminus": [t - lo for t, lo in zip(throughput, lows)]}}
    # every timed trial as a point on its driver's bar: a cell whose trials fall into two modes
    # shows two clusters, where the bar alone shows a median between them
    each = [(c.driver, f.throughput * f.wall_s.median / wall)
            for c, f in zip(cells, figs) for wall in timed_walls.get(c.id) or []]
    trials = {"type": "scatter", "mode": "markers", "name": "each trial", "x": [d for d, _ in each],
              "y": [v for _, v in each], "marker": {"size": 5, "color": "#333", "opacity": 0.6}}
    cpu = [{"type": "bar", "x": drivers, "y": [f.cpu_user_s for f in figs], "name": "user"},
           {"type": "bar", "x": drivers, "y": [f.cpu_sys_s for f in figs], "name": "system"}]
    rss = {"type": "bar", "x": drivers, "y": [METRICS["peak_rss"][1](f) for f in figs], "name": "peak RSS"}
    return [
        Chart(_slug("throughput", column), "throughput", column, {"data": [bars, trials], "layout": _layout(
            f"{column}: throughput (median, 95% CI; each trial a point)", unit)}),
        Chart(_slug("cpu", column), "cpu", column, {"data": cpu, "layout": _layout(
            f"{column}: CPU time of the timed phase", "CPU (s)", barmode="stack")}),
        Chart(_slug("peak-rss", column), "peak_rss", column, {"data": [rss], "layout": _layout(
            f"{column}: peak RSS of the driver's process tree", "MiB")}),
    ]


# -- per sweep ------------------------------------------------------------------------------

def _sweep_charts(sweep: Sweep) -> list[Chart]:
    charts = []
    xs = [x for curve in sweep.curves for x, _ in curve.points]
    log = min(xs) > 0 and max(xs) / min(xs) >= 10
    for metric in sweep.metrics:
        title, value = METRICS[metric]
        if metric == "throughput":
            title = sweep.curves[0].points[0][1].figures.unit
        data = [{"type": "scatter", "mode": "lines+markers", "name": curve.name,
                 "x": [x for x, _ in curve.points], "y": [value(c.figures) for _, c in curve.points]}
                for curve in sweep.curves]
        layout = _layout(f"{sweep.scenario}: {METRICS[metric][0]} against {sweep.setting}", title,
                         xaxis={"title": {"text": f"{sweep.setting} ({sweep.unit})" if sweep.unit else sweep.setting}, "type": "log" if log else "linear"},
                         showlegend=True)
        charts.append(Chart(_slug("sweep", sweep.scenario, sweep.setting, metric), f"sweep-{metric}",
                            sweep.scenario, {"data": data, "layout": layout}))
    return charts


def build(report: Report) -> list[Chart]:
    charts = []
    for column in report.columns:
        measured = [c for c in report.cells if c.column == column and c.measured]
        if measured:
            charts += _scenario_charts(column, measured, report.timed_walls)
    for sweep in find(report.cells):
        charts += _sweep_charts(sweep)
    return charts
