"""The truth experiment's table: every driver beside its plain loop, per part, with spreads, both
allocator modes where they cost apart, and each miss with its cause."""

from __future__ import annotations

from clientlab.experiment import findings, spec
from clientlab.experiment.plaintable import plain_table
from clientlab.record import Cell, CellFigures, Finding, PlainCheck, PlainMode, WallStats

TRUTH = spec.scan()[0]["truth"]


def _cell(driver: str, part: str, plain: PlainCheck | None, status: str = "ok", reason: str | None = None,
          findings_: tuple[Finding, ...] = ()) -> Cell:
    figures = CellFigures(wall_s=WallStats(median=0.1), throughput=1000.0, unit="req/s", plain=plain,
                          cpu_user_s=0.05, cpu_sys_s=0.01, peak_rss_kb=10_000,
                          findings=findings_) if status == "ok" else None
    return Cell(driver=driver, scenario="get-small", status=status, reason=reason, params={"part": part},
                figures=figures)


def _check(ratio: float, decision: str, **more) -> PlainCheck:
    return PlainCheck(ratio=ratio, ratio_ci_low=ratio - 0.02, ratio_ci_high=ratio + 0.03, compared=5, pairs=5,
                      decision=decision, lab_s_per_request=1e-4 * ratio, plain_s_per_request=1e-4,
                      lab_precision=0.02, plain_precision=0.03, **more)


def _mode(mode: str, lab_s: float, plain_s: float, lab_own: int, plain_own: int) -> PlainMode:
    return PlainMode(mode=mode, lab_s_per_request=lab_s, plain_s_per_request=plain_s, ratio=lab_s / plain_s,
                     ratio_ci_low=lab_s / plain_s - 0.01, ratio_ci_high=lab_s / plain_s + 0.01, pairs=5,
                     decision="within", lab_own=lab_own, lab_own_of=5, plain_own=plain_own, plain_own_of=5)


CELLS = [
    _cell("c-libcurl", "small-12", _check(1.00, "within")),
    # run 71's curl_cffi: the lab's process in fresh pages, the loop's on the heap
    _cell("python-curl-cffi", "json-335k", _check(
        1.86, "off", differences=("52.1 page faults a request against 0.0",),
        modes=(_mode("heap", 3.7e-4, 3.7e-4, 0, 5), _mode("fresh pages", 6.4e-4, 6.3e-4, 5, 0))),
        findings_=(Finding(rule="body-memory-from-the-kernel", severity="warn",
                           title="Each body's memory is taken anew from the kernel"),)),
    _cell("java-httpclient", "json-335k", _check(1.41, "off", note="a new client a job (docs/evidence/truth.md#x)")),
    _cell("go-fasthttp", "json-335k", _check(
        0.98, "not decided", modes=(_mode("heap", 1e-4, 1e-4, 5, 5), _mode("fresh pages", 1.02e-4, 1e-4, 0, 0)))),
    _cell("python-aioquic", "small-12", None, status="unsupported", reason="manifest does not claim http1"),
    _cell("ruby-excon", "small-12", _check(1.20, "off")),
]


def test_each_cell_gives_plain_lab_and_their_ratio_with_spreads_and_verdict():
    t = plain_table(TRUTH, CELLS)
    assert t.parts == ["small-12", "small-1k", "json-335k"]
    e = t.rows["c-libcurl"]["small-12"]
    assert (e.plain, e.lab, e.ratio) == ("10,000 ±3%", "10,000 ±2%", "1.00 (0.98–1.03) within, 5 pairs")
    assert t.rows["python-aioquic"]["small-12"].missing == "unsupported: manifest does not claim http1"


def test_a_cell_whose_allocator_modes_cost_apart_shows_both_sides_in_each_with_their_own_counts():
    e = plain_table(TRUTH, CELLS).rows["python-curl-cffi"]["json-335k"]
    assert e.plain_modes == "2,703 heap (5 of 5) / 1,587 fresh pages (0 of 5)"
    assert e.lab_modes == "2,703 heap (0 of 5) / 1,562 fresh pages (5 of 5)"
    assert e.ratio_modes.startswith("heap 1.00 (0.99–1.01) within / fresh pages 1.02")
    # modes within 10 % of each other on both sides are one figure, and it says so
    one = plain_table(TRUTH, CELLS).rows["go-fasthttp"]["json-335k"]
    assert one.plain_modes is None and one.ratio_modes == "one figure: both allocator modes within 10% on each side"


def test_each_miss_is_listed_with_its_cause_or_says_none_was_found():
    t = plain_table(TRUTH, CELLS)
    misses = {(m.driver, m.part): m.causes for m in t.misses}
    assert misses[("java-httpclient", "json-335k")] == ("known cause: a new client a job (docs/evidence/truth.md#x)",)
    assert misses[("python-curl-cffi", "json-335k")] == (
        "the two sides differed: 52.1 page faults a request against 0.0",
        "diagnosis: Each body's memory is taken anew from the kernel")
    assert misses[("ruby-excon", "small-12")] == ("cause not found",)
    assert t.not_decided == ["go-fasthttp × json-335k"]


def test_the_truth_findings_section_carries_the_table_and_the_misses(store):
    run_id = store.start_run({"cpu_model": "test", "cores": 2, "kernel": "k"}, {"experiment": "truth"})
    for c in CELLS:
        cell_id = store.start_cell(run_id, c.driver, c.scenario, dict(c.params), "throughput")
        store.finish_cell(cell_id, c.status, c.reason, c.figures.to_json() if c.figures else None, {})
    store.finish_run(run_id, "complete")
    text = findings.section(TRUTH, store, run_id)
    assert "| driver | small-12: plain req/s | lab req/s | lab ÷ plain | small-1k: plain req/s" in text
    assert ("| python-curl-cffi |  |  |  |  |  |  | 10,000 ±3%<br>2,703 heap (5 of 5) / 1,587 fresh pages (0 of 5) | "
            "5,376 ±2%<br>2,703 heap (0 of 5) / 1,562 fresh pages (5 of 5) | 1.86 (1.84–1.89) off, 5 pairs<br>heap 1.00 "
            "(0.99–1.01) within / fresh pages 1.02 (1.01–1.03) within |") in text
    assert "- java-httpclient × json-335k: 1.41 (1.39–1.44) off, 5 pairs. known cause: a new client a job" in text
    assert "Misses (off their plain loop" in text and ": 3; not decided: 1." in text


def test_a_cell_of_one_pair_claims_no_spread():
    one = PlainCheck(ratio=1.01, ratio_ci_low=1.01, ratio_ci_high=1.01, compared=1, pairs=1, decision="not decided",
                     lab_s_per_request=1e-4, plain_s_per_request=1e-4, lab_precision=0.0, plain_precision=0.0)
    e = plain_table(TRUTH, [_cell("c-libcurl", "small-12", one)]).rows["c-libcurl"]["small-12"]
    assert (e.plain, e.lab, e.ratio) == ("10,000", "10,000", "1.01 (1.01–1.01) not decided, 1 pair")


def test_the_terminal_gives_the_same_table_and_a_line_per_miss(store):
    from rich.console import Console

    from clientlab.output.verdicts import plain_check_table, print_verdicts

    run_id = store.start_run({}, {"experiment": "truth"})
    for c in CELLS:
        cell_id = store.start_cell(run_id, c.driver, c.scenario, dict(c.params), "throughput")
        store.finish_cell(cell_id, c.status, c.reason, c.figures.to_json() if c.figures else None, {})
    console = Console(width=400, record=True)
    print_verdicts(console, TRUTH, store, run_id)
    shown = console.export_text()
    assert "truth: the article's claims" in shown and "every driver beside its library's plain loop" in shown
    assert "2,703 heap (5 of 5) / 1,587 fresh pages (0 of 5)" in shown and "python-aioquic" in shown
    assert "misses (off their plain loop): 3; not decided: 1" in shown
    assert "  ruby-excon × small-12: 1.20 (1.18–1.23) off, 5 pairs: cause not found" in shown
    assert plain_check_table(spec.scan()[0]["perl-clients"], store, run_id) is None
