"""`clientlab compare A B --html FILE`: the comparison as one self-contained page, with nothing to
fetch: the verdict per cell, its ratio as a bar against 1.0 (inline SVG), and what keeps the two
runs from being like for like."""

from __future__ import annotations

from html import escape

from clientlab.analysis.compare import ALPHA, MIN_CHANGE, CellComparison

VERDICT_COLOUR = {"faster": "#2a7", "slower": "#c33", "no significant difference": "#777", "too few trials": "#a60"}
BAR_WIDTH = 160   # px for the ratio bar; 1.0 sits in the middle, 0.5× and 2× at the ends (log scale)


def e(value: object) -> str:
    return escape(str(value), quote=True)


def _bar(ratio: float | None, verdict: str) -> str:
    """B/A on a log scale from 0.5× to 2× (clipped), a tick at 1.0."""
    import math

    if ratio is None or ratio <= 0:
        return ""
    mid = BAR_WIDTH / 2
    x = mid + max(-1.0, min(1.0, math.log2(ratio))) * mid
    left, width = (x, mid - x) if x < mid else (mid, x - mid)
    colour = VERDICT_COLOUR.get(verdict, "#777")
    return (f'<svg width="{BAR_WIDTH}" height="14" role="img" aria-label="{ratio:.2f}×">'
            f'<rect x="{left:.1f}" y="2" width="{max(width, 1):.1f}" height="10" fill="{colour}"/>'
            f'<line x1="{mid}" x2="{mid}" y1="0" y2="14" stroke="#333"/></svg>')


def _x(value: float | None) -> str:
    return f"{value:.2f}×" if value is not None else "—"


def page(run_a: int, run_b: int, rows: list[CellComparison], notes: list[str]) -> str:
    body = "".join(
        f'<tr data-verdict="{e(r.verdict)}"><th>{e(r.driver)} × {e(r.scenario)}</th>'
        f'<td>{e(f"{r.throughput_a:,.0f} {r.unit}") if r.throughput_a is not None else e(r.status_a)}</td>'
        f'<td>{e(f"{r.throughput_b:,.0f} {r.unit}") if r.throughput_b is not None else e(r.status_b)}</td>'
        f'<td>{e(_x(r.throughput_ratio))}</td><td class="bar">{_bar(r.throughput_ratio, r.verdict)}</td>'
        f"<td>{e(r.trials_a)} / {e(r.trials_b)}</td>"
        f'<td>{e(f"{r.p_value:.3g}") if r.p_value is not None else "—"}</td>'
        f'<td style="color:{VERDICT_COLOUR.get(r.verdict, "#222")}"><b>{e(r.verdict)}</b></td>'
        f"<td>{e(_x(r.cpu_ratio))}</td><td>{e(_x(r.peak_rss_ratio))}</td></tr>" for r in rows)
    warned = "".join(f"<li>{e(n)}</li>" for n in notes)
    unlike = f'<div class="unlike"><b>Not like for like:</b><ul>{warned}</ul></div>' if notes else ""
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>clientlab: run {e(run_b)} against run {e(run_a)}</title>
<style>
body {{ font-family: "DejaVu Sans", "Liberation Sans", sans-serif; margin: 1.5em auto; max-width: 1300px;
       padding: 0 1em; color: #222; }}
table {{ border-collapse: collapse; max-width: 100%; }} th, td {{ border: 1px solid #ccc; padding: 0.3em 0.5em;
  text-align: left; vertical-align: middle; }} th {{ background: #f4f4f4; font-weight: normal; }}
tr:first-child th {{ font-weight: bold; }} .unlike {{ color: #a60; }} .caption {{ color: #555; font-size: 0.9em; }}
td, th {{ overflow-wrap: anywhere; }}
@media (max-width: 1000px) {{ .bar {{ display: none; }} body {{ font-size: 0.9em; }} }}
</style></head>
<body data-charts-ready="0">
<h1>Run {e(run_b)} against run {e(run_a)} (B/A)</h1>
{unlike}
<table id="comparison"><tr><th>driver × scenario</th><th>A</th><th>B</th><th>B/A</th><th class="bar">0.5× · 1 · 2×</th>
<th>trials</th><th>p</th><th>verdict</th><th>CPU</th><th>RSS</th></tr>{body}</table>
<p class="caption">throughput: the ratio of the medians; p: two-sided Mann–Whitney U on the timed trials,
significant below {e(ALPHA)} with a change over {e(f"{MIN_CHANGE:.0%}")}; CPU (user + system) and peak RSS:
ratios B/A of the medians.</p>
</body></html>
"""
