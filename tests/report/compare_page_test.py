"""compare --html: the comparison as a page, read in Chromium with the network cut off."""

from __future__ import annotations

from clientlab.analysis.compare import CellComparison
from clientlab.report.browser import open_report
from clientlab.report.compare import page

ROWS = [
    CellComparison("c-libcurl", "get-small", "ok", "ok", "req/s", 10_000.0, 12_500.0, 1.25, 5, 5, 0.0, 0.008,
                   "exact", "faster", 0.8, 1.0),
    CellComparison("python-<requests>", "get-small", "ok", "ok", "req/s", 400.0, 401.0, 1.0025, 5, 5, 12.0, 0.9,
                   "exact", "no significant difference", 1.0, 1.0),
    CellComparison("cli-curl", "get-small", "unsupported", "unsupported"),
]


def test_the_comparison_page_shows_each_verdict_and_ratio_and_fetches_nothing(tmp_path):
    path = tmp_path / "compare.html"
    path.write_text(page(12, 13, ROWS, ["another kind of host: b is a namespace host"]))
    with open_report(path, width=800) as loaded:
        rows = loaded.page.eval_on_selector_all(
            "#comparison tr[data-verdict]", "rows => rows.map(r => [r.dataset.verdict, r.cells[3].textContent])")
        unlike = loaded.page.inner_text(".unlike")
        scroll = loaded.page.evaluate("document.documentElement.scrollWidth")
    assert loaded.errors == [] and loaded.requests == [path.resolve().as_uri()]
    assert rows == [["faster", "1.25×"], ["no significant difference", "1.00×"], ["not measured in both", "—"]]
    assert "another kind of host" in unlike and scroll <= 800
    assert "python-&lt;requests&gt;" in path.read_text()
