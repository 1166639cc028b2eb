"""The HTML report of a stored run: one self-contained file that works offline.

    data.py     what the report shows, gathered from the store (and nothing else)
    sweeps.py   cells that differ in exactly one numeric setting, as curves
    charts.py   the Plotly figures (plain dicts; plotly.js draws them in the page)
    html.py     the page: tables, findings, machine, versions, the charts and plotly.js inlined
    browser.py  the page in headless Chromium (for PNGs and for the report's tests)
    plots.py    every chart of the page as a PNG, screenshotted from Chromium
"""

from __future__ import annotations

from pathlib import Path

from clientlab.report import data, html
from clientlab.store import Store


def write_html(store: Store, run_id: int, path: Path) -> int:
    """Write the report of run `run_id` to `path` atomically; returns the number of charts."""
    report = data.gather(store, run_id)
    page, charts = html.render(report)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(path)
    return charts
