"""Every chart of a report page as a PNG: Chromium draws the page and each chart element is
screenshotted, so the PNGs are the very charts of the HTML (no second plotting library)."""

from __future__ import annotations

from pathlib import Path

from clientlab.errors import LabError
from clientlab.report.browser import open_report

SCALE = 2  # device pixels per CSS pixel: sharp enough for slides and documents


def write_pngs(html_path: Path, folder: Path) -> list[Path]:
    """One `NN-<chart name>.png` per chart, in page order; returns the files written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    with open_report(html_path, scale=SCALE) as loaded:
        if loaded.errors:
            raise LabError(f"the report page has errors: {'; '.join(loaded.errors)}")
        for i, element in enumerate(loaded.page.query_selector_all("div.chart"), 1):
            path = folder / f"{i:02d}-{element.get_attribute('data-chart')}.png"
            element.screenshot(path=str(path))
            written.append(path)
    return written
