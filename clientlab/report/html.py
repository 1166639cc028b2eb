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

from clientlab.analysis.figures import plain_verdict, two_figures
from clientlab.output import cellfigures as cf
from clientlab.profile import flame
from clientlab.output.cellfigures import DEPARTED
from clientlab.record import Cell, RunConfig
from clientlab.report import charts as charting
from clientlab.report.data import Report

CSS = """
body { font-family: "DejaVu Sans", "Liberation Sans", sans-serif; margin: 1.5em auto; max-width: 1300px;
       padding: 0 1em; color: #222; }
.line { display: block; }
h1 { font-size: 1.5em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0; max-width: 100%; }
th, td { border: 1px solid #ccc; padding: 0.35em 0.6em; vertical-align: top; text-align: left; }
th { background: #f4f4f4; }
td.ok .throughput { font-weight: bold; }
.dim { color: #777; } .noisy { color: #a0a; }
td.failed { color: #b00; } td.unsupported { color: #a60; } td.not-installed { color: #777; }
.reason { max-width: 40em; white-space: pre-wrap; overflow-wrap: anywhere; }
.chart { width: 100%; margin: 0.5em 0; }
.finding { margin: 0.6em 0; overflow-wrap: anywhere; }
.warn { color: #a60; font-weight: bold; } .info { color: #07a; font-weight: bold; }
.caption { font-size: 0.9em; color: #555; } .hidden { display: none; }
.chip { display: inline-block; width: 0.8em; height: 0.8em; border-radius: 2px; margin-right: 0.4em; }
.meta { line-height: 1.5; } .meta code { overflow-wrap: anywhere; }
#filter label { margin-right: 1em; white-space: nowrap; } #filter { position: sticky; top: 0; background: #fff;
  padding: 0.4em 0; border-bottom: 1px solid #eee; z-index: 2; }
dl.glossary { display: grid; grid-template-columns: max-content 1fr; gap: 0.25em 1em; font-size: 0.92em; }
dl.glossary dt { font-weight: bold; } dl.glossary dd { margin: 0; }
table.ranking td:nth-child(n+3) { white-space: nowrap; }
#machine td, #network td, #versions td { overflow-wrap: anywhere; }
"""

BOOT = """
(function () {
  var boxes = Array.prototype.slice.call(document.querySelectorAll('div.chart'));
  // the language filter: a language's rows and its traces in every chart shown or hidden together
  Array.prototype.forEach.call(document.querySelectorAll('#filter input'), function (box) {
    box.addEventListener('change', function () {
      var lang = box.value, on = box.checked;
      Array.prototype.forEach.call(document.querySelectorAll('tr[data-language="' + lang + '"]'),
        function (row) { row.classList.toggle('hidden', !on); });
      boxes.forEach(function (chart) {
        if (!chart.data) return;
        var idx = [];
        chart.data.forEach(function (trace, i) { if (trace.meta === lang) idx.push(i); });
        if (idx.length) Plotly.restyle(chart, {visible: on}, idx);
      });
    });
  });
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
    modes = ""
    if f.modes:  # both modes' figures: the allocator's, measured on purpose, or the trials' own two groups
        modes = f' <span class="noisy">{e(cf.throughput(f))}</span>'
    # the stored figures ride along as data; the cell shows what the terminal shows, per request
    user = _metric("cpu_user_s", f.cpu_user_s, "", "hidden")
    system = _metric("cpu_sys_s", f.cpu_sys_s, "", "hidden")
    rss = _metric("peak_rss_kb", f.peak_rss_kb, cf.memory(f))
    ratio = f' <span class="dim">{best_ratio:.0%} of best</span>' if best_ratio is not None else ""
    return (f'<td {attrs} data-sort="{e(repr(f.throughput))}"><span class="line">{throughput}'
            f' <span class="dim">±{precision}</span>{ratio}{modes}</span>'
            f'<span class="line">{e(cf.cpu_per_request(f))}{user}{system} · {rss} · '
            f'<span class="dim">{e(cf.count(f))}</span></span>{_plain(f)}</td>')


def _plain(f: Any) -> str:
    """The cell beside its library's plain loop, where the run checked it: lab ÷ plain with its CI
    and verdict, and the manifest's known cause beside a miss (never instead of the ratio)."""
    p = f.plain
    if p is None or p.ratio is None:
        return ""
    said = plain_verdict(p.decision, p.modes) if p.decision else None
    verdict = f" {said}" if said else ""
    cause = (f' <span class="reason">known cause: {e(p.note)}</span>'
             if p.note and said != "within" else "")
    ratio = _metric("plain_ratio", p.ratio, f"{p.ratio:.2f}", "dim")
    # judged mode by mode: each mode's ratio, its verdict and its held pairs
    modes = "".join(f"; {m.mode} {m.ratio:.2f} {m.decision or 'not decided'}, {m.pairs} held pairs"
                    for m in p.modes if m.ratio is not None) if two_figures(p.modes) else ""
    return (f'<span class="line dim">lab ÷ {e(p.reference)} {ratio} ({p.ratio_ci_low:.2f}–{p.ratio_ci_high:.2f},'
            f' {p.pairs} pairs){e(verdict)}{e(modes)}{cause}</span>')


def _chip(driver: str) -> str:
    return f'<span class="chip" style="background:{e(charting.colour(driver))}"></span>'


def _ranking(report: Report, column: str, charts: list[charting.Chart]) -> str:
    """One scenario: its charts, then its drivers ranked fastest first (each row the stored
    figures as data attributes), then the ones not measured, each with its reason."""
    cells = [c for c in report.cells if c.column == column]
    measured = charting.ranked([c for c in cells if c.measured])
    others = [c for c in cells if not c.measured]
    best = measured[0].figures.throughput if measured else None
    rows = "".join(f'<tr data-language="{e(charting.language(c.driver))}">'
                   f"<th>{_chip(c.driver)}{_driver_name(report, c.driver)}</th>{_cell(c, best)}</tr>"
                   for c in measured + others)
    mine = "".join(_chart_box(i, chart) for i, chart in charts)
    return (f'<section class="scenario" data-scenario="{e(column)}"><h3>{e(column)}</h3>{mine}'
            f'<table class="ranking"><tr><th>driver</th><th>figures (fastest first)</th></tr>{rows}</table>'
            "</section>")


def _scenarios(report: Report, charts: list[charting.Chart]) -> str:
    numbered = list(enumerate(charts))
    parts = [_ranking(report, column, [(i, ch) for i, ch in numbered if ch.scenario == column
                                       and not ch.kind.startswith("sweep")]) for column in report.columns]
    sweeps = [(i, ch) for i, ch in numbered if ch.kind.startswith("sweep")]
    if sweeps:
        parts.append("<h3>Sweeps</h3>" + "".join(_chart_box(i, ch) for i, ch in sweeps))
    return "".join(parts) or "<p>No cell was measured.</p>"


def _chart_box(i: int, chart: charting.Chart) -> str:
    box = f"chart-{i}"
    return (f'<div class="chart" id="{box}" data-chart="{e(chart.name)}" data-kind="{e(chart.kind)}" '
            f'data-scenario="{e(chart.scenario)}"></div>'
            f'<script type="application/json" id="{box}-figure">{_json_for_script(chart.figure)}</script>')


def _filter(report: Report) -> str:
    languages = list(dict.fromkeys(charting.language(d) for d in report.drivers))
    boxes = "".join(f'<label><input type="checkbox" value="{e(lang)}" checked> '
                    f'<span class="chip" style="background:{e(charting.LANGUAGE_COLOURS.get(lang, charting.OTHER_COLOUR))}">'
                    f"</span>{e(lang)}</label>" for lang in languages)
    return f'<div id="filter">Languages shown: {boxes}</div>'


GLOSSARY = (
    ("req/s, MB/s", "the median over the cell's timed trials of the work a trial did over its wall time, "
                    "measured by the lab from outside the driver (never the driver's own clock)."),
    ("±", "half the width of the median's 95 % confidence interval, relative to it: the cell's own noise."),
    ("% of best, ×", "the cell's throughput over the scenario's fastest cell."),
    ("CPU a request (or a MB)", "user + system CPU of the driver's whole process tree in the timed phase, "
                                "per request or per MB of body: comparable across cells whose counts differ."),
    ("two modes", "the cell's trials fell into two groups (a large body's memory taken anew from the kernel or "
                  "kept on the heap; a connection whose client slept for the rest of each answer): each group's "
                  "figure, not a median no trial had. 'heap / fresh pages' are the two allocator modes measured "
                  "on purpose beside the cell."),
    ("level with", "two neighbours in the ranking whose confidence intervals overlap: their order is the noise's."),
    ("†", "the driver departs from its library's defaults, for the reason its manifest gives (below)."),
    ("unsupported", "the driver cannot do the job exactly as asked, and says why; it is never done another way."),
)


def _glossary() -> str:
    items = "".join(f"<dt>{e(term)}</dt><dd>{e(text)}</dd>" for term, text in GLOSSARY)
    return f'<details open><summary>How to read this report</summary><dl class="glossary">{items}</dl></details>'


def _header(report: Report) -> str:
    """What made the run: the command, the machine, the placement and how many trials."""
    config = RunConfig.from_json(report.run["config"])
    m = report.run["machine"]
    stop = dict(config.stop or {})
    trials = (f"{stop.get('min_trials', '?')}–{stop.get('max_trials', '?')} timed trials a cell"
              if stop else "trials: as the run's defaults")
    if config.trial_seconds:
        trials += f", each about {config.trial_seconds:g} s"
    if config.forks and config.forks > 1:
        trials += f", over {config.forks} processes"
    if config.time_budget_s:
        trials += f", within a {config.time_budget_s:g} s budget"
    command = config.command
    lines = [
        f"<b>command</b> <code>{e(command)}</code>" if command else "",
        f"<b>machine</b> {e(m.get('cpu_model', '?'))}, {e(m.get('cores', '?'))} cores, kernel {e(m.get('kernel', '?'))}",
        f"<b>placement</b> {e(config.placement or '?')} (where driver and server run: docs/measurement.md)",
        f"<b>trials</b> {e(trials)}",
        f"<b>started</b> {e(_when(report.run['started_at']))}, <b>finished</b> {e(_when(report.run['finished_at']))}; "
        f"{e(len(report.drivers))} driver(s) × {e(len(report.columns))} scenario(s)",
    ]
    return '<p class="meta">' + "<br>".join(line for line in lines if line) + "</p>"


def _json_for_script(value: Any) -> str:
    return json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


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


def _driver_name(report: Report, driver: str) -> str:
    """The driver's name, marked when it departs from its library's defaults."""
    mark = (f' <a href="#versions" title="{e("; ".join(report.departures[driver]))}">{DEPARTED}</a>'
            if report.departures.get(driver) else "")
    return f"{e(driver)}{mark}"


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
{_header(report)}
{_glossary()}
{_filter(report)}
<h2>Ranking per scenario</h2>{_scenarios(report, charts)}
<h2>Why: findings per driver</h2>{_findings(report)}
<h2>CPU profiles</h2><p class="caption">Each profiled cell's CPU in µs a request of its profiled trials, the
profiler's own cost included: the cell's figure is its timed trials', and each graph's caption says what
profiling cost. Frames are the language's own profiler's where the lab has one (its frames in user space),
else perf's, coloured by layer; a slow cell's differential
graph against its language's fastest client, red where it spends more. Click a frame to zoom, again to
zoom out.</p>{flame.section(report.flames)}
<h2>Machine</h2>{_pairs(run['machine'], 'machine')}
{network}
<h2>Client versions and departures</h2>{_versions(report)}
<script>{BOOT}</script>
</body></html>
"""
    return page, len(charts)
