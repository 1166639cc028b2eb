"""The report page: one HTML file with everything inlined (plotly.js included), no URL to fetch.

Every value from the store is HTML-escaped; chart figures travel as JSON in
`<script type="application/json">` with `<`, `>` and `&` written as \\u escapes. The numbers of
the summary table carry data attributes (data-cell = the store's cell id, data-metric,
data-value with the stored value in full precision) so tools and tests can read them back.
When plotly.js has drawn every chart, `<body data-charts-ready="N">` is set.
"""

from __future__ import annotations

import datetime as dt
import json
from html import escape
from typing import Any

from clientlab.output import cellfigures as cf
from clientlab.profile import flame
from clientlab.output.cellfigures import DEPARTED
from clientlab.record import Cell
from clientlab.report import charts as charting
from clientlab.report.data import Report

CSS = """
body { font-family: "DejaVu Sans", "Liberation Sans", sans-serif; margin: 2em; color: #222; }
#summary { width: 100%; } #summary td, #summary th { white-space: nowrap; }
#summary td.failed, #summary td.unsupported { white-space: normal; }
#summary th.sortable { cursor: pointer; } #summary th.sortable:hover { background: #e8e8e8; }
.line { display: block; }
h1 { font-size: 1.5em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.4em 0.6em; vertical-align: top; text-align: left; }
th { background: #f4f4f4; }
td.ok .throughput { font-weight: bold; }
.dim { color: #777; } .noisy { color: #a0a; }
td.failed { color: #b00; } td.unsupported { color: #a60; } td.not-installed { color: #777; }
.reason { max-width: 28em; white-space: pre-wrap; }
.chart { width: 100%; min-height: 340px; margin: 1em 0; }
.finding { margin: 0.6em 0; } .warn { color: #a60; font-weight: bold; } .info { color: #07a; font-weight: bold; }
.caption { font-size: 0.9em; color: #555; } .hidden { display: none; }
"""

BOOT = """
(function () {
  var summary = document.getElementById('summary');
  if (summary) {
    Array.prototype.forEach.call(summary.rows[0].cells, function (th, col) {
      if (!th.classList.contains('sortable')) return;
      th.addEventListener('click', function () {
        var rows = Array.prototype.slice.call(summary.rows, 1);
        var key = function (row) { var v = Number(row.cells[col].dataset.sort); return isNaN(v) ? -1 : v; };
        rows.sort(function (a, b) { return key(b) - key(a); });
        rows.forEach(function (row) { summary.tBodies[0].appendChild(row); });
      });
    });
  }
  var boxes = Array.prototype.slice.call(document.querySelectorAll('div.chart'));
  Promise.all(boxes.map(function (box) {
    var figure = JSON.parse(document.getElementById(box.id + '-figure').textContent);
    return Plotly.newPlot(box, figure.data, figure.layout, {displaylogo: false, responsive: true});
  })).then(function () { document.body.dataset.chartsReady = String(boxes.length); },
           function (error) { console.error('chart failed: ' + error); });
})();
"""


def e(value: Any) -> str:
    return escape(str(value), quote=True)


def _number(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _metric(name: str, value: float, text: str, css: str = "") -> str:
    return f'<span class="{e(css or name)}" data-metric="{e(name)}" data-value="{e(repr(value))}">{e(text)}</span>'


def _cell(cell: Cell | None, best: float | None = None) -> str:
    """One summary cell: throughput ± precision and its ratio to the column's fastest, CPU per
    request, peak memory; each a line, as the terminal's long form has them."""
    if cell is None:
        return '<td class="dim">—</td>'
    attrs = (f'data-cell="{e(cell.id)}" data-driver="{e(cell.driver)}" data-scenario="{e(cell.scenario)}" '
             f'data-status="{e(cell.status)}" class="{e(cell.status)}"')
    if not cell.measured:
        label = "FAILED" if cell.status == "failed" else cell.status
        return f'<td {attrs}><b>{e(label)}</b>: <div class="reason">{e(cell.reason or "")}</div></td>'
    f = cell.figures
    best_ratio = f.throughput / best if best else None
    throughput = _metric("throughput", f.throughput, f"{_number(f.throughput)} {f.unit}")
    precision = _metric("precision", f.precision, f"{f.precision * 100:.1f}%", "dim")
    noisy = ' <span class="noisy">noisy</span>' if f.noisy else ""
    if f.modes:  # two modes: each one's rate, not a median that no trial had
        fast, slow = f.modes
        noisy = (f' <span class="noisy">two modes: {_number(fast.throughput)} ({fast.trials}) / '
                 f'{_number(slow.throughput)} ({slow.trials})</span>')
    # the stored figures ride along as data; the cell shows what the terminal shows, per request
    user = _metric("cpu_user_s", f.cpu_user_s, "", "hidden")
    system = _metric("cpu_sys_s", f.cpu_sys_s, "", "hidden")
    rss = _metric("peak_rss_kb", f.peak_rss_kb, cf.memory(f))
    ratio = f' <span class="dim">{best_ratio:.2f}×</span>' if best_ratio is not None else ""
    return (f'<td {attrs} data-sort="{e(repr(f.throughput))}"><span class="line">{throughput}'
            f' <span class="dim">±{precision}</span>{ratio}{noisy}</span>'
            f'<span class="line">{e(cf.cpu_per_request(f))}{user}{system}</span><span class="line">{rss}</span></td>')


def _fastest(report: Report, column: str) -> float | None:
    rates = [c.figures.throughput for d in report.drivers if (c := report.cell(d, column)) and c.measured]
    return max(rates, default=None)


def _summary(report: Report) -> str:
    head = "".join(f'<th class="sortable" title="sort by this column\'s throughput">{e(c)}</th>'
                   for c in report.columns)
    best = {c: _fastest(report, c) for c in report.columns}
    rows = "".join(f"<tr>{_driver_th(report, d)}"
                   f"{''.join(_cell(report.cell(d, c), best[c]) for c in report.columns)}</tr>" for d in report.drivers)
    return (f'<table id="summary"><tr><th>driver</th>{head}</tr>{rows}</table>'
            '<p class="caption">req/s or MB/s (median; ± half the CI of the median) and the ratio to the '
            "column's fastest; CPU (user + system) per request of the timed phase; peak memory of the driver's "
            "process tree. Click a scenario to sort by it.</p>")


def _json_for_script(value: Any) -> str:
    return json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _charts(charts: list[charting.Chart]) -> str:
    parts, heading = [], None
    for i, chart in enumerate(charts):
        group = "Sweeps" if chart.kind.startswith("sweep") else chart.scenario
        if group != heading:
            parts.append(f"<h3>{e(group)}</h3>")
            heading = group
        box = f"chart-{i}"
        parts.append(f'<div class="chart" id="{box}" data-chart="{e(chart.name)}" data-kind="{e(chart.kind)}" '
                     f'data-scenario="{e(chart.scenario)}"></div>'
                     f'<script type="application/json" id="{box}-figure">{_json_for_script(chart.figure)}</script>')
    return "".join(parts) or "<p>No cell was measured: nothing to chart.</p>"


def _findings(report: Report) -> str:
    if not report.findings:
        return "<p>No findings: no client showed a known slow pattern.</p>"
    parts = []
    for driver, found in report.findings.items():
        items = "".join(
            f'<div class="finding" data-finding="{e(f.rule)}"><span class="{e(f.severity)}">'
            f'{e(f.severity)}</span> {e(column)}: <b>{e(f.title)}</b><br>{e(f.evidence)}<br>'
            f'fix: {e(f.fix)}</div>' for column, f in found)
        parts.append(f'<section data-driver="{e(driver)}"><h3>{e(driver)}</h3>{items}</section>')
    return "".join(parts)


def _pairs(items: dict[str, Any], table_id: str) -> str:
    rows = "".join(f"<tr><th>{e(k)}</th><td>{e(v if isinstance(v, str) else json.dumps(v))}</td></tr>"
                   for k, v in items.items())
    return f'<table id="{table_id}">{rows}</table>'


def _versions(report: Report) -> str:
    rows = "".join(f'<tr data-driver="{e(d)}"><th>{e(d)}</th><td>'
                   f'{", ".join(f"{e(k)} {e(v)}" for k, v in report.versions.get(d, {}).items()) or "—"}</td>'
                   f'<td class="departures">{"<br>".join(e(x) for x in report.departures.get(d, [])) or "—"}</td></tr>'
                   for d in report.drivers)
    return (f'<table id="versions"><tr><th>driver</th><th>versions that ran</th>'
            f'<th>{DEPARTED} settings of its own (not the library\'s defaults)</th></tr>{rows}</table>')


def _driver_th(report: Report, driver: str) -> str:
    """The driver's name, marked when it departs from its library's defaults."""
    mark = (f' <a href="#versions" title="{e("; ".join(report.departures[driver]))}">{DEPARTED}</a>'
            if report.departures.get(driver) else "")
    return f"<th>{e(driver)}{mark}</th>"


def _when(seconds: float | None) -> str:
    if not seconds:
        return "—"
    return dt.datetime.fromtimestamp(seconds, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def render(report: Report) -> tuple[str, int]:
    """The page and the number of charts on it."""
    from plotly.offline import get_plotlyjs

    run = report.run
    charts = charting.build(report)
    plotly_js = get_plotlyjs().replace("</script", "<\\/script")
    net = report.net
    network = ("<h2>Network</h2>" + (_pairs(net, "network") if isinstance(net, dict) else f"<p>{e(net)}</p>")
               if net else "")
    title = f"clientlab run {run['id']} ({run['status']})"
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title><style>{CSS}</style>
<script>{plotly_js}</script></head>
<body data-run="{e(run['id'])}">
<h1>{e(title)}</h1>
<p>started {e(_when(run['started_at']))}, finished {e(_when(run['finished_at']))};
{e(len(report.drivers))} driver(s) × {e(len(report.columns))} scenario(s)</p>
<h2>Summary</h2>{_summary(report)}
<h2>Charts</h2>{_charts(charts)}
<h2>Why: findings per driver</h2>{_findings(report)}
<h2>CPU profiles</h2><p class="caption">Each profiled cell's CPU in µs a request (the language's own profiler
where the lab has one, its frames in user space; else perf), coloured by layer; a slow cell's differential
graph against its language's fastest client, red where it spends more. Click a frame to zoom, again to
zoom out.</p>{flame.section(report.flames)}
<h2>Machine</h2>{_pairs(run['machine'], 'machine')}
{network}
<h2>Client versions and departures</h2>{_versions(report)}
<script>{BOOT}</script>
</body></html>
"""
    return page, len(charts)
