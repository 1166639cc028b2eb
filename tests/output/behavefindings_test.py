"""The issue's two views of a behaviour matrix (output/behavefindings.py): the clients of one
language that disagree, and the failures in a published CVE's class with their versions; as
text (80 columns, `behave` and `show`) and in the report's page."""

from __future__ import annotations

from clientlab.behaviour import cases as behaviour
from clientlab.behaviour.behave import BehaveCell
from clientlab.output.behave import matrix_lines
from clientlab.output.behavefindings import cve_failures, disagreements, findings_lines
from clientlab.record import BehaviourOutcome
from clientlab.report.behave import page

CASES = {bc.name: bc for bc in behaviour.discover().found}
TRICKLE, LEAK_HOST, SHORT = CASES["trickle-body"], CASES["redirect-other-host"], CASES["short-body"]
PY = {"python": "3.11.7", "openssl": "3.0.19"}


def cell(driver, bc, outcome, elapsed=None, detail="", status="ok", setting="defaults", versions=None):
    return BehaveCell(driver, bc.name, status, BehaviourOutcome(bc.name, outcome, detail, elapsed_s=elapsed),
                      versions or {}, setting)


CELLS = [
    # python: two kept the trickle's deadline (overshoots that differ are the host's), one did not;
    # one leaked Proxy-Authorization, one kept it back, one cannot follow redirects
    cell("python-a", TRICKLE, "ok", elapsed=2.032, versions={**PY, "liba": "1.2"}),
    cell("python-b", TRICKLE, "ok", elapsed=2.005, versions={**PY, "libb": "0.9"}),
    cell("python-c", TRICKLE, "no-deadline", versions={**PY, "libc": "3.0"}),
    cell("python-a", LEAK_HOST, "ok", versions={**PY, "liba": "1.2"}),
    cell("python-b", LEAK_HOST, "leaked", detail="Proxy-Authorization reached the other origin",
         versions={**PY, "libb": "0.9"}),
    cell("python-c", LEAK_HOST, "unsupported", detail="the manifest does not claim redirects", status="unsupported"),
    # python agrees on the short body; the recommended column is not read
    cell("python-a", SHORT, "ok"), cell("python-b", SHORT, "ok"), cell("python-c", SHORT, "ok"),
    cell("python-c", SHORT, "accepted-short", setting="recommended"),
    # go: one driver alone disagrees with nobody; one that broke is left out
    cell("go-x", LEAK_HOST, "leaked", detail="Authorization, Cookie reached the other origin",
         versions={"go": "go1.26", "net/http": "go1.26"}),
    cell("go-y", LEAK_HOST, "failed", detail="the driver crashed", status="failed"),
]


def test_a_language_whose_judged_clients_did_different_things_is_listed_by_what_each_did():
    splits = disagreements(CELLS, [TRICKLE, LEAK_HOST, SHORT])
    assert [(s.language, s.case, s.behaviours) for s in splits] == [
        ("python", "trickle-body", (("ok", ("python-a", "python-b")), ("NODEAD", ("python-c",)))),
        ("python", "redirect-other-host", (("ok", ("python-a",)), ("LEAK:P", ("python-b",))))]


def test_a_cve_class_failure_names_the_library_versions_without_the_runtime():
    found = cve_failures(CELLS, [TRICKLE, LEAK_HOST, SHORT])
    assert [f.case for f in found] == ["redirect-other-host"]   # the other two name no CVE
    (leak,) = found
    assert "CVE-2018-18074" in leak.cves and "CVE-2022-27776" in leak.cves
    assert leak.failures == (("LEAK:P", (("python-b", "libb 0.9"),)), ("LEAK:AC", (("go-x", "net/http go1.26"),)))


def test_the_views_print_after_the_evidence_within_80_columns():
    cases = [TRICKLE, LEAK_HOST, SHORT]
    lines = matrix_lines(CELLS, cases, 7, findings_lines(CELLS, cases))
    assert max(map(len, lines)) <= 80
    text = "\n".join(lines)
    assert "  python trickle-body: ok: python-a, python-b; NODEAD: python-c" in text
    assert "    LEAK:P: python-b (libb 0.9)" in text
    assert text.index("evidence:") < text.index("clients of one language") < text.index("versions:")


def test_a_matrix_where_nothing_disagrees_or_fails_a_cve_class_has_neither_section():
    agreeing = [cell("python-a", SHORT, "ok"), cell("python-b", SHORT, "ok")]
    assert findings_lines(agreeing, [SHORT]) == []


def test_the_report_has_both_sections():
    html = page(7, "run 7", CELLS, [TRICKLE, LEAK_HOST, SHORT])
    assert "Clients of one language that disagree" in html and "Failures in a published CVE" in html
    assert "<code>NODEAD</code>: python-c" in html and "go-x (net/http go1.26)" in html


def test_show_of_a_stored_behave_run_gives_its_time_and_both_views(store, test_drivers, tmp_path):
    from click.testing import CliRunner

    from clientlab.behaviour import behave
    from clientlab.cli import main

    drivers = [test_drivers["python-fake-reference"], test_drivers["python-fake-lenient"]]
    run_id, _ = behave.run_matrix(drivers, [SHORT], store, {"command": "test"}, {}, settings=("defaults",))
    shown = CliRunner().invoke(main, ["show", str(run_id), "--store", str(tmp_path / "results.sqlite")],
                               env={"COLUMNS": "80"})
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert lines[0].startswith(f"run {run_id} (complete)") and lines[1].startswith("started ") and "wall " in shown.output
    assert "  python short-body: ok: python-fake-reference; SHORT: python-fake-lenient" in lines
