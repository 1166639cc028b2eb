"""`clientlab report RUN --html FILE --plots DIR` as a user runs it: one non-empty PNG per chart."""

from __future__ import annotations

import os
import subprocess
import sys

from clientlab.report import data, html
from clientlab.report.browser import open_report
from clientlab.store import Store

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_plots_writes_one_non_empty_png_per_chart(measured_run, tmp_path):
    home, run_id = measured_run
    page, plots = tmp_path / "report.html", tmp_path / "plots"
    env = {**os.environ, "CLIENTLAB_HOME": str(home)}
    proc = subprocess.run([sys.executable, "-m", "clientlab", "report", str(run_id), "--html", str(page),
                           "--plots", str(plots)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    charts = page.read_text().count('<div class="chart"')
    pngs = sorted(plots.glob("*.png"))
    assert charts > 0 and len(pngs) == charts
    assert f"({charts} chart(s))" in proc.stderr and f"{charts} PNG(s)" in proc.stderr
    for png in pngs:
        content = png.read_bytes()
        assert content.startswith(PNG_MAGIC) and len(content) > 5000, png  # a drawn chart, not a blank box


def test_text_from_the_store_is_escaped(measured_run, tmp_path):
    home, run_id = measured_run
    store = Store(home / "results.sqlite")
    report = data.gather(store, run_id)
    store.close()
    hostile = '<img src="x" onerror="document.title=1"></td><script>document.title=2</script>'
    i, failed = next((i, c) for i, c in enumerate(report.cells) if c.status == "failed")
    report.cells[i] = failed.with_(reason=hostile)
    report.run["machine"]["hostname"] = hostile
    path = tmp_path / "report.html"
    path.write_text(html.render(report)[0])
    with open_report(path) as loaded:
        assert loaded.page.inner_text(f'td[data-cell="{failed.id}"] .reason') == hostile
        assert hostile in loaded.page.inner_text("#machine")
        assert loaded.page.query_selector_all("img") == [] and loaded.page.title().startswith("clientlab run")
        assert loaded.errors == []
