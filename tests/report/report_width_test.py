"""The report as a person sees it in Chromium: the whole page within a 1,400 px window and
readable at 800 px, with no sideways scroll; a screenshot of each kept as the test's artefact."""

from __future__ import annotations

import pytest

from clientlab.report import write_html
from clientlab.report.browser import open_report
from clientlab.store import Store


@pytest.mark.parametrize("width", [1400, 800])
def test_the_page_fits_its_window_with_no_sideways_scroll(measured_run, tmp_path, width):
    home, run_id = measured_run
    store = Store(home / "results.sqlite")
    path = tmp_path / "report.html"
    try:
        write_html(store, run_id, path)
    finally:
        store.close()
    with open_report(path, width=width) as loaded:
        scroll = loaded.page.evaluate("document.documentElement.scrollWidth")
        loaded.page.screenshot(path=str(tmp_path / f"report-{width}.png"), full_page=True)
    assert (tmp_path / f"report-{width}.png").stat().st_size > 0
    assert scroll <= width
