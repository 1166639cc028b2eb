"""The report's charts as Plotly figures (plain dicts that plotly.js draws in the page).

Per scenario (measured cells only), its drivers ranked fastest first and coloured by language:
throughput with the median's confidence interval and "% of best", and CPU per request (or per
MB), never per trial. Per sweep (see sweeps.py): the swept metric against the
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

# one colour per language, the same in every chart and in the tables' chips
LANGUAGE_COLOURS = {"c": "#4c72b0", "cli": "#8172b3", "python": "#dd8452", "php": "#937860", "perl": "#64b5cd",
                    "go": "#55a868", "rust": "#c44e52", "node": "#8c8c00", "java": "#da8bc3", "ruby": "#a31515",
                    "cpp": "#1f3b73", "kotlin": "#7e57c2"}
OTHER_COLOUR = "#999999"
BAR_HEIGHT = 26


def language(driver: str) -> str:
    return driver.split("-", 1)[0]


def colour(driver: str) -> str:
    return LANGUAGE_COLOURS.get(language(driver), OTHER_COLOUR)


def ranked(cells: list[Cell]) -> list[Cell]:
    """Fastest first."""
    return sorted(cells, key=lambda c: c.figures.throughput or 0.0, reverse=True)


def _per_language(cells: list[Cell]) -> dict[str, list[Cell]]:
    out: dict[str, list[Cell]] = {}
    for c in cells:
        out.setdefault(language(c.driver), []).append(c)
    return out


def _work_unit(f: CellFigures) -> tuple[float, str, float]:
    """(units of work a trial did, the per-unit label, the scale of the CPU axis): CPU per request
    in µs, or per MB in ms for a cell measured in bytes: never per trial, whose counts differ."""
    if f.unit == "MB/s":
        return (f.work_bytes or 0) / 1e6 or float("nan"), "ms CPU a MB", 1e3
    return float(f.requests or 0) or float("nan"), "µs CPU a request", 1e6


def _ranked_layout(title: str, x_title: str, drivers: list[str]) -> dict[str, Any]:
    return {"title": {"text": title}, "height": 90 + BAR_HEIGHT * len(drivers), "font": FONT, "barmode": "stack",
            "margin": {"l": 190, "r": 30, "t": 50, "b": 50}, "legend": {"title": {"text": "language"}},
            "xaxis": {"title": {"text": x_title}, "rangemode": "tozero"},
            "yaxis": {"categoryorder": "array", "categoryarray": list(reversed(drivers)), "automargin": True}}


def _scenario_charts(column: str, cells: list[Cell], timed_walls: dict[int, list[float]]) -> list[Chart]:
    """The scenario's drivers ranked, fastest on top: throughput with its CI and "% of best", a
    colour per language (one trace each, so that the legend and the page's language filter work
    on them), each timed trial a point; and CPU per unit of work in the same order."""
    cells = ranked(cells)
    drivers = [c.driver for c in cells]
    unit = cells[0].figures.unit
    best = cells[0].figures.throughput or 1.0
    bars, cpu = [], []
    for lang, mine in _per_language(cells).items():
        figs = [c.figures for c in mine]
        intervals = [f.throughput_interval or (f.throughput, f.throughput) for f in figs]
        bars.append({"type": "bar", "orientation": "h", "name": lang, "meta": lang,
                     "marker": {"color": colour(mine[0].driver)},
                     "y": [c.driver for c in mine], "x": [f.throughput for f in figs],
                     "text": [f"{f.throughput / best:.0%} of best ±{(f.precision or 0):.0%}" for f in figs],
                     "textposition": "inside", "insidetextanchor": "start", "constraintext": "none", "textangle": 0,
                     "error_x": {"type": "data", "symmetric": False,
                                 "array": [hi - f.throughput for f, (_, hi) in zip(figs, intervals)],
                                 "arrayminus": [f.throughput - lo for f, (lo, _) in zip(figs, intervals)]}})
        per, label, scale = zip(*(_work_unit(f) for f in figs))
        cpu.append({"type": "bar", "orientation": "h", "name": lang, "meta": lang, "showlegend": False,
                    "marker": {"color": colour(mine[0].driver)}, "y": [c.driver for c in mine],
                    "x": [((f.cpu_user_s or 0) + (f.cpu_sys_s or 0)) / n * k for f, n, k in zip(figs, per, scale)],
                    "customdata": [[(f.cpu_user_s or 0) / n * k, (f.cpu_sys_s or 0) / n * k]
                                   for f, n, k in zip(figs, per, scale)],
                    "hovertemplate": "%{y}: %{x:,.1f} (user %{customdata[0]:,.1f}, system %{customdata[1]:,.1f})"
                                     "<extra></extra>"})
    # every timed trial as a point on its driver's bar: a cell whose trials fall into two modes
    # shows two clusters, where the bar alone shows a median between them
    each = [(c.driver, c.figures.throughput * c.figures.wall_s.median / wall)
            for c in cells for wall in timed_walls.get(c.id) or []]
    trials = {"type": "scatter", "mode": "markers", "name": "each trial", "meta": "trials", "orientation": "h",
              "y": [d for d, _ in each], "x": [v for _, v in each],
              "marker": {"size": 5, "color": "#333", "opacity": 0.6}}
    label = _work_unit(cells[0].figures)[1]
    return [
        Chart(_slug("throughput", column), "throughput", column, {"data": [*bars, trials], "layout": _ranked_layout(
            f"{column}: {unit}, median and 95% CI (each trial a point)", unit, drivers)}),
        Chart(_slug("cpu", column), "cpu", column, {"data": cpu, "layout": _ranked_layout(
            f"{column}: {label} (user + system)", label, drivers)}),
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
