"""The HTML report of a real measured run, opened in headless Chromium with the network cut off:
it loads cleanly, draws every chart from the stored figures, and its numbers are the store's."""

from __future__ import annotations

import pytest
from plotly.offline import get_plotlyjs

from clientlab.report import write_html
from clientlab.report.browser import open_report
from clientlab.store import Store
from clientlab.units import parse_size
from tests.report.conftest import REF, SIZES


@pytest.fixture(scope="module")
def stored(measured_run):
    home, run_id = measured_run
    store = Store(home / "results.sqlite")
    yield store, run_id
    store.close()


@pytest.fixture(scope="module")
def report(stored, tmp_path_factory):
    """(path, loaded page) of the run's report."""
    store, run_id = stored
    path = tmp_path_factory.mktemp("report") / "report.html"
    write_html(store, run_id, path)
    with open_report(path) as loaded:
        yield path, loaded


def _cells(store: Store, run_id: int) -> dict[int, dict]:
    return {c["id"]: c for c in store.cells(run_id)}


def test_page_loads_offline_with_no_errors_and_no_request_leaving_the_file(report):
    path, loaded = report
    assert loaded.errors == []
    assert loaded.requests == [path.resolve().as_uri()]
    own_markup = path.read_text().replace(get_plotlyjs(), "")
    assert "://" not in own_markup  # no URL at all outside the inlined chart library


def test_every_chart_is_drawn_with_data(report):
    _, loaded = report
    drawn = loaded.page.evaluate("""() => Array.from(document.querySelectorAll('div.chart')).map(el => ({
        name: el.dataset.chart, svg: el.querySelectorAll('svg.main-svg').length,
        marks: el.querySelectorAll('.trace .point, .trace path.js-line').length,
        traces: el.data.map(t => t.y.length)}))""")
    # get-small and three download-memory columns (ranked throughput and CPU a request each), the
    # size sweep (throughput, RSS)
    assert len(drawn) == loaded.charts == 4 * 2 + 2
    for chart in drawn:
        assert chart["svg"] > 0 and chart["marks"] > 0 and all(n > 0 for n in chart["traces"]), chart


def test_table_numbers_and_statuses_are_the_stored_ones(report, stored):
    _, loaded = report
    cells = _cells(*stored)
    shown = loaded.page.evaluate("""() => Array.from(document.querySelectorAll('td[data-cell]')).map(td => ({
        id: Number(td.dataset.cell), status: td.dataset.status, driver: td.dataset.driver,
        scenario: td.dataset.scenario, reason: (td.querySelector('.reason') || {}).textContent,
        metrics: Object.fromEntries(Array.from(td.querySelectorAll('[data-metric]'))
                                    .map(m => [m.dataset.metric, Number(m.dataset.value)]))}))""")
    assert sorted(c["id"] for c in shown) == sorted(cells)
    for c in shown:
        cell = cells[c["id"]]
        assert (c["driver"], c["scenario"], c["status"]) == (cell["driver"], cell["scenario"], cell["status"])
        if cell["status"] == "ok":
            assert c["metrics"] == {k: cell["figures"][k] for k in
                                    ("throughput", "precision", "cpu_user_s", "cpu_sys_s", "peak_rss_kb")}
        else:
            assert c["reason"] == cell["reason"] and c["metrics"] == {}
    assert {c["status"] for c in shown} == {"ok", "failed", "unsupported"}


def test_charts_plot_the_stored_figures(report, stored):
    _, loaded = report
    cells = list(_cells(*stored).values())
    small = {c["driver"]: c["figures"] for c in cells if c["scenario"] == "get-small" and c["status"] == "ok"}
    # the drivers ranked, one horizontal bar each, a trace per language (the test drivers are all Python's)
    bars = loaded.page.evaluate("""() => { const el = document.querySelector('div.chart[data-chart="throughput-get-small"]');
        return {x: el.data[0].x, y: el.data[0].y, meta: el.data[0].meta}; }""")
    assert bars["meta"] == "python"
    assert dict(zip(bars["y"], bars["x"])) == {d: f["throughput"] for d, f in small.items()}
    assert bars["x"] == sorted(bars["x"], reverse=True)
    # each timed trial a point beside its bar, at the rate its own wall time gives
    points = loaded.page.evaluate("""() => { const el = document.querySelector('div.chart[data-chart="throughput-get-small"]');
        const t = el.data[el.data.length - 1]; return {x: t.y, y: t.x}; }""")
    store, _ = stored
    expected = sorted((c["driver"], round(c["figures"]["throughput"] * c["figures"]["wall_s"]["median"] / t["wall_s"], 6))
                      for c in cells if c["scenario"] == "get-small" and c["status"] == "ok"
                      for t in store.trials(c["id"]) if t["kind"] == "timed" and t["ok"])
    assert sorted(zip(points["x"], (round(v, 6) for v in points["y"]))) == expected and expected
    sweep = loaded.page.evaluate("""() => { const el = document.querySelector('div.chart[data-kind="sweep-throughput"]');
        return el.data.map(t => ({name: t.name, x: t.x, y: t.y})); }""")
    memory = sorted((c for c in cells if c["scenario"] == "download-memory"), key=lambda c: c["id"])
    assert sweep == [{"name": REF, "x": [float(parse_size(s)) for s in SIZES],
                      "y": [c["figures"]["throughput"] for c in memory]}]


def test_sweep_cells_get_their_own_sections_in_the_runs_order(report):
    _, loaded = report
    headers = loaded.page.eval_on_selector_all("section.scenario h3", "hs => hs.map(h => h.textContent)")
    assert headers == ["get-small", "parallel-feeds", *[f"download-memory (size={s})" for s in SIZES]]


def test_each_scenario_ranks_its_drivers_fastest_first_and_lists_the_unmeasured_with_their_reason(report, stored):
    _, loaded = report
    rows = loaded.page.eval_on_selector_all(
        'section.scenario[data-scenario="get-small"] table.ranking td[data-cell]',
        "tds => tds.map(td => [td.dataset.driver, td.dataset.status, Number(td.dataset.sort || -1)])")
    measured = [r for r in rows if r[1] == "ok"]
    assert [r[2] for r in measured] == sorted((r[2] for r in measured), reverse=True)
    assert rows[len(measured):] == [["python-fake-crash", "failed", -1]]
    unsupported = loaded.page.inner_text('section.scenario[data-scenario="parallel-feeds"] td.unsupported')
    assert "manifest does not claim parallel" in unsupported


def test_the_header_says_what_made_the_run_and_the_glossary_what_the_figures_mean(report):
    _, loaded = report
    meta = loaded.page.inner_text("p.meta")
    assert "machine" in meta and "placement" in meta and "trials" in meta
    glossary = loaded.page.inner_text("dl.glossary")
    assert "two modes" in glossary and "% of best" in glossary and "level with" in glossary


def test_the_language_filter_hides_a_languages_rows_and_its_bars(report):
    _, loaded = report
    page = loaded.page
    page.uncheck('#filter input[value="python"]')
    hidden = page.eval_on_selector_all('tr[data-language="python"]', "rows => rows.every(r => r.offsetParent === null)")
    visible = page.evaluate("""() => document.querySelector('div.chart[data-chart="throughput-get-small"]').data
        .filter(t => t.meta === 'python').map(t => t.visible)""")
    page.check('#filter input[value="python"]')
    assert hidden and visible == [False]
    assert page.eval_on_selector_all('tr[data-language="python"]', "rows => rows.some(r => r.offsetParent !== null)")


def test_findings_machine_network_and_versions_are_shown(report, stored):
    _, loaded = report
    store, run_id = stored
    finding = next(f for c in store.cells(run_id) for f in (c["figures"] or {}).get("findings", [])
                   if c["driver"] == "python-fake-no-reuse")
    section = loaded.page.inner_text('section[data-driver="python-fake-no-reuse"]')
    assert finding["title"] in section and finding["evidence"] in section and finding["fix"] in section
    run = store.run(run_id)
    assert run["machine"]["cpu_model"] in loaded.page.inner_text("#machine")
    assert "loopback" in loaded.page.inner_text("#network")
    versions = loaded.page.inner_text(f'#versions tr[data-driver="{REF}"]')
    assert "http.client stdlib" in versions
