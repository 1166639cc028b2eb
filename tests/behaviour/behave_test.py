"""Behaviour cases, their judging, and `clientlab behave` against the real bench server's fault
origins with the fake drivers (careful, reference, lenient) and two real drivers.

No timed assertion: a kept deadline is judged against 10 % of slack, which a busy host can
exceed, so the tests tell an error from none ("ok" or "late" against "no-deadline"), never how
late."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from clientlab.behaviour import behave, cases as behaviour
from clientlab.behaviour.cases import Observed, judge
from clientlab.drivers import manifest
from clientlab.cli import main
from clientlab.errors import LabInputError
from clientlab.output.behave import matrix_lines, stored_matrix_lines
from clientlab.store import Store
from clientlab.store.push import push

CASES = {bc.name: bc for bc in behaviour.discover().found}
KEPT = ("ok", "late")  # an error came: the deadline held, within its slack or past it


def test_the_shipped_cases_load_and_cover_every_check():
    assert {bc.case.check for bc in CASES.values()} == {"deadline", "truncation", "credentials", "retry", "see-other",
                                                        "bomb", "headers", "streams", "certificate", "pool",
                                                        "next-address"}
    assert {"stall-headers", "trickle-body", "short-body", "chunked-no-end", "redirect-other-port",
            "redirect-other-host"} <= set(CASES)


@pytest.mark.parametrize("text, complaint", [
    ('description = "x"\nfault = "redirect-other"\ntimeout_s = 1\ncheck = "credentials"\nfollow_redirects = true\n',
     "needs at least one of Authorization"),
    ('description = "x"\nfault = "stall-headers"\ntimeout_s = 1\ncheck = "deadline"\ncolour = "red"\n', "colour"),
    ('description = "x"\nfault = "stall-everything"\ntimeout_s = 1\ncheck = "deadline"\n', "fault"),
    ('description = "x"\nfault = "short-body"\ntimeout_s = 0\ncheck = "truncation"\n', "timeout_s"),
    ('description = "x"\nfault = "keepalive-race"\ntimeout_s = 1\ncheck = "retry"\n', "reuse = true"),
    ('description = "x"\nfault = "keepalive-race"\ntimeout_s = 1\ncheck = "deadline"\n', 'goes with fault = "keepalive-race"'),
    ('description = "x"\nfault = "see-other"\ntimeout_s = 1\ncheck = "see-other"\nfollow_redirects = true\n', "a form"),
    ('description = "x"\nfault = "stall-headers"\ntimeout_s = 1\ncheck = "deadline"\nform = { a = "1" }\n', "POST"),
])
def test_a_bad_case_file_is_refused_naming_the_file_and_the_problem(tmp_path, text, complaint):
    path = tmp_path / "bad-case.toml"
    path.write_text(text)
    with pytest.raises(LabInputError) as exc:
        behaviour.load_case(path)
    assert "bad-case.toml" in str(exc.value) and complaint in str(exc.value)


def test_an_unknown_case_name_is_refused_with_a_suggestion():
    with pytest.raises(LabInputError, match="did you mean short-body"):
        behaviour.select(list(CASES.values()), ["short-bodyy"])


def test_the_job_asks_origin_a_for_the_fault_with_the_cases_headers():
    job = CASES["redirect-other-port"].job("127.0.0.1", 4321)
    (entry,) = job["requests"]
    assert entry["url"] == "http://127.0.0.1:4321/fault/redirect-other?to=%2Ffault%2Flanding"
    assert entry["follow_redirects"] is True and set(entry["headers"]) == {"Authorization", "Cookie", "Proxy-Authorization"}
    assert job["timeout_s"] == 5 and job["verify"] is False


# -- judging, from what the lab saw -----------------------------------------------------------

def test_a_deadline_is_judged_by_the_labs_clock_against_the_timeout_plus_ten_percent():
    stall = CASES["stall-headers"]  # timeout_s = 2
    error = [{"r": 0, "message": "timed out"}]
    assert judge(stall, Observed(2.15, [], error, [])).outcome == "ok"
    late = judge(stall, Observed(2.5, [], error, []))
    assert late.outcome == "late" and "+500 ms" in late.detail
    assert judge(stall, Observed(None, [], [], [])).outcome == "no-deadline"
    completed = judge(stall, Observed(9.0, [{"r": 0, "status": 200, "bytes": 16}], [], []))
    assert completed.outcome == "no-deadline" and "200 with 16 B" in completed.detail


def test_a_truncation_is_correct_only_as_an_error():
    short = CASES["short-body"]
    assert judge(short, Observed(0.01, [], [{"r": 0, "message": "IncompleteRead"}], [])).outcome == "ok"
    taken = judge(short, Observed(0.01, [{"r": 0, "status": 200, "bytes": 400}], [], []))
    assert taken.outcome == "accepted-short" and "400 B" in taken.detail


def test_credentials_are_judged_from_the_ledger_of_the_other_origin():
    redirect = CASES["redirect-other-port"]
    asked = ["Authorization", "Cookie", "Proxy-Authorization"]
    at_a = {"origin": "a", "path": "/fault/redirect-other", "credentials": asked}
    ok = [{"r": 0, "status": 200, "bytes": 7}]
    assert judge(redirect, Observed(0.01, ok, [], [at_a, {"origin": "b", "credentials": []}])).outcome == "ok"
    leaked = judge(redirect, Observed(0.01, ok, [], [at_a, {"origin": "b", "credentials": ["Cookie"]}]))
    assert leaked.outcome == "leaked" and leaked.detail == "Cookie reached the other origin"
    assert judge(redirect, Observed(0.01, [{"r": 0, "status": 302, "bytes": 12}], [], [at_a])).outcome == "not-followed"
    assert judge(redirect, Observed(0.01, ok, [], [{**at_a, "credentials": []},
                                                     {"origin": "b", "credentials": []}])).outcome == "not-sent"
    # judged on what it sent: a header it never sent anywhere is said, not counted as kept back
    partly = judge(redirect, Observed(0.01, ok, [], [{**at_a, "credentials": ["Cookie"]},
                                                     {"origin": "b", "credentials": ["Cookie"]}]))
    assert partly.outcome == "leaked" and "did not send Authorization, Proxy-Authorization even to the first" in partly.detail


# -- against the real bench server --------------------------------------------------------------

def test_the_ledger_counts_each_request_and_its_credentials_exactly(bench_server):
    host, port = behave.fault_origin(bench_server)
    other = bench_server.info["fault_b"]
    bench_server.faults(reset=True)
    for url, headers in [(f"http://{host}:{port}/fault/landing", {"Authorization": "Bearer x"}),
                         (f"http://{host}:{port}/fault/landing", {}),
                         (f"http://{host}:{other}/fault/landing?n=1", {"Cookie": "a=1"})]:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as answer:
            assert answer.read() == b"landed\n"
    ledger = bench_server.faults(reset=True)
    assert ledger["counts"] == {"/fault/landing": 3}
    assert [(e["origin"], e["port"], e["credentials"]) for e in ledger["entries"]] == [
        ("a", port, ["Authorization"]), ("a", port, []), ("b", other, ["Cookie"])]
    assert bench_server.faults()["entries"] == []


# each fault with a driver that passes it and one that fails it
@pytest.mark.parametrize("case, passes, fails, failure", [
    ("stall-headers", "python-fake-careful", "python-fake-lenient", "no-deadline"),
    ("trickle-body", "python-fake-careful", "python-fake-reference", "no-deadline"),
    ("short-body", "python-fake-reference", "python-fake-lenient", "accepted-short"),
    ("chunked-no-end", "python-fake-reference", "python-fake-lenient", "accepted-short"),
    ("redirect-other-port", "python-fake-careful", "python-fake-reference", "leaked"),
    ("redirect-other-host", "python-fake-careful", "python-fake-reference", "leaked"),
    ("keepalive-fin-get", "python-fake-careful", "python-fake-reference", "no-retry"),
    ("keepalive-rst-get", "python-fake-careful", "python-fake-reference", "no-retry"),
    ("keepalive-fin-post", "python-fake-careful", "python-fake-eager", "duplicated"),
    ("keepalive-rst-post", "python-fake-reference", "python-fake-eager", "duplicated"),
    ("connect-deadline", "python-fake-careful", "python-fake-lenient", "no-deadline"),
    ("see-other-post", "python-fake-careful", "python-fake-eager", "kept-post"),
    ("redirect-to-plain", "python-fake-careful", "python-fake-reference", "leaked"),
    ("gzip-bomb", "python-fake-careful", "python-fake-lenient", "held-all"),
    ("gzip-bomb-nested", "python-fake-careful", "python-fake-lenient", "held-all"),
    ("big-header", "python-fake-careful", "python-fake-lenient", "accepted"),
    ("many-headers", "python-fake-careful", "python-fake-lenient", "accepted"),
    ("slow-origin-pool", "python-fake-careful", "python-fake-pool-one", "starved"),
])
def test_each_fault_tells_a_client_that_handles_it_from_one_that_does_not(bench_server, test_drivers,
                                                                           case, passes, fails, failure):
    good = behave.run_cell(test_drivers[passes], CASES[case], bench_server)
    bad = behave.run_cell(test_drivers[fails], CASES[case], bench_server)
    assert good.status == bad.status == "ok"
    assert good.outcome.outcome in (KEPT if CASES[case].case.check == "deadline" else ("ok",)), good.outcome
    assert bad.outcome.outcome == failure, bad.outcome


def test_a_late_deadline_is_tried_again_and_the_earliest_try_counts():
    stall = CASES["stall-headers"]  # timeout_s = 2
    error = [{"r": 0, "message": "timed out"}]

    def tries(*clock):  # the lab's clock for each try, judged as run_cell judges it
        cells = iter([behave.BehaveCell("d", stall.name, "ok", dataclasses.replace(
            judge(stall, Observed(t, [], error, [])), elapsed_s=t)) for t in clock])
        return lambda: next(cells)

    kept = behave.run_judged(tries(2.9, 2.1, 2.6), 2)
    assert kept.outcome.outcome == "ok" and kept.elapsed_s == 2.1
    assert kept.outcome.detail.endswith("[2 tries, the earliest counts: +900, +100 ms]")
    late = behave.run_judged(tries(2.9, 2.6, 2.7, 2.05), 2)
    assert late.outcome.outcome == "late" and late.elapsed_s == 2.6 and "3 tries" in late.outcome.detail
    assert behave.run_judged(tries(2.05, 2.9), 2).outcome.detail.count("tries") == 0


def test_a_driver_that_crashes_fails_its_cell_with_its_stderr_and_the_matrix_goes_on(bench_server, test_drivers):
    crashed = behave.run_cell(test_drivers["python-fake-crash"], CASES["short-body"], bench_server)
    assert crashed.status == "failed" and "crashing on purpose" in crashed.outcome.detail


def test_a_driver_that_hangs_after_go_is_killed_and_judged_without_a_deadline(bench_server, test_drivers):
    hung = behave.run_cell(test_drivers["python-fake-hang"], CASES["stall-headers"], bench_server)
    assert hung.status == "ok" and hung.outcome.outcome == "no-deadline" and "killed" in hung.outcome.detail


def test_a_case_needing_redirects_is_unsupported_for_a_driver_that_does_not_claim_them(bench_server, test_drivers):
    driver = test_drivers["python-fake-reference"]
    without = dataclasses.replace(driver, manifest=driver.manifest.model_copy(update={"capabilities": ["tls"]}))
    cell = behave.run_cell(without, CASES["redirect-other-port"], bench_server)
    assert cell.status == "unsupported" and "redirects" in cell.outcome.detail


def test_the_matrix_is_stored_and_fits_80_columns(store, test_drivers):
    cases = [CASES["short-body"], CASES["chunked-no-end"]]
    run_id, cells = behave.run_matrix([test_drivers["python-fake-reference"], test_drivers["python-fake-lenient"]],
                                      cases, store, {"command": "test"}, {}, settings=("defaults",))
    stored = store.cell_records(run_id)
    assert store.run_config(run_id).kind == "behave"
    assert sorted((c.driver, c.scenario, c.figures.behaviours[0].outcome) for c in stored) == [
        ("python-fake-lenient", "chunked-no-end", "accepted-short"), ("python-fake-lenient", "short-body", "accepted-short"),
        ("python-fake-reference", "chunked-no-end", "ok"), ("python-fake-reference", "short-body", "ok")]
    lines = matrix_lines(cells, cases, run_id)
    assert max(map(len, lines)) <= 80
    assert lines[1].split() == ["python-fake-reference", "ok", "ok"]
    assert lines[2].split() == ["python-fake-lenient", "SHORT", "SHORT"]
    assert stored_matrix_lines(stored, run_id) == lines  # what `clientlab show` prints of the run


@pytest.mark.serial
def test_drivers_run_at_once_each_judged_by_its_own_servers_ledger(store, test_drivers, tmp_path):
    """Three drivers, two at a time: a ledger is one bench server's, so a worker's server judges
    only its own driver's requests; the outcomes and their order are those of one at a time."""
    cases = [CASES["short-body"], CASES["redirect-other-host"]]
    drivers = [test_drivers["python-fake-reference"], test_drivers["python-fake-lenient"],
               test_drivers["python-fake-careful"]]
    one, _ = behave.run_matrix(drivers, cases, store, {"command": "test"}, {}, settings=("defaults",))
    two, cells = behave.run_matrix(drivers, cases, store, {"command": "test"}, {}, settings=("defaults",), jobs=2)
    outcomes = [(c.driver, c.case, c.outcome.outcome) for c in cells]
    assert outcomes == [(c.driver, c.scenario, c.figures.behaviours[0].outcome) for c in store.cell_records(one)]
    assert [o for _, _, o in outcomes] == ["ok", "leaked", "accepted-short", outcomes[3][2], "ok", "ok"]
    assert store.run_config(two).jobs == 2 and store.run(two)["status"] == "complete"
    # ended as a run ends, so a team store takes it
    assert push(store, Store(tmp_path / "team.sqlite"), [two]).added == [two]


def test_a_late_cell_is_tried_again_alone_once_the_cells_beside_it_have_ended():
    """behave --jobs: the tries again of a late deadline wait for the other workers' cells to end,
    and no new cell starts meanwhile; ordered by events, not by time."""
    turns = behave.Turns()
    seen: list[str] = []
    beside_started, beside_may_end, asked = threading.Event(), threading.Event(), threading.Event()

    def beside() -> None:
        with turns.shared():
            beside_started.set()
            beside_may_end.wait(10)
            seen.append("beside ended")

    def late() -> None:
        with turns.shared():
            beside_started.wait(10)
            asked.set()
            with turns.alone():
                seen.append("tried again alone")

    def newcomer() -> None:
        asked.wait(10)
        for _ in range(1000):   # until the late cell waits to be alone
            if turns._waiting:
                break
            time.sleep(0.01)
        with turns.shared():
            seen.append("newcomer")

    threads = [threading.Thread(target=f) for f in (beside, late, newcomer)]
    for t in threads:
        t.start()
    asked.wait(10)
    beside_may_end.set()
    for t in threads:
        t.join(10)
    assert seen == ["beside ended", "tried again alone", "newcomer"]


def test_behave_end_to_end_on_two_real_drivers(lab_home, tmp_path):
    out = tmp_path / "behave.json"
    result = CliRunner().invoke(main, ["behave", "-d", "python-requests,c-libcurl", "--json", str(out)])
    assert result.exit_code == 0, result.output
    matrix = json.loads(out.read_text())
    cells = {(c["driver"], c["case"]): c for c in matrix["cells"] if c["setting"] == "defaults"}
    assert len(cells) == 2 * len(CASES) and len(matrix["cells"]) == 2 * len(cells)
    # both libraries' recommended setting is how their drivers set the timeout in every job: "=", not run again
    assert all(c["same_as_defaults"] for c in matrix["cells"] if c["setting"] == "recommended")
    # a case whose capabilities the manifest lacks (HTTP/2 streams in parallel) is unsupported, every other judged
    # (but for a case that needs a network namespace, where the machine cannot make one)
    claimed = {d.id: {"http1", *d.manifest.capabilities} for d in manifest.discover()[0]
               if d.id in ("python-requests", "c-libcurl")}
    assert all(c["status"] == ("ok" if set(CASES[c["case"]].capabilities()) <= claimed[c["driver"]] else "unsupported")
               or c["outcome"] == "no-namespace" for c in cells.values()), [c for c in cells.values() if c["status"] != "ok"]
    # requests' timeout bounds each read, not the request (psf/requests#3520); libcurl's
    # CURLOPT_TIMEOUT bounds the whole transfer
    assert cells[("python-requests", "trickle-body")]["outcome"] == "no-deadline"
    assert cells[("c-libcurl", "trickle-body")]["outcome"] in KEPT
    for driver in ("python-requests", "c-libcurl"):
        assert cells[(driver, "short-body")]["outcome"] == "ok"
        assert cells[(driver, "redirect-other-port")]["outcome"] in ("ok", "leaked")
        assert cells[(driver, "stall-headers")]["overshoot_ms"] is not None
    assert f"stored as run {matrix['run']}" in result.output
    shown = CliRunner().invoke(main, ["show", str(matrix["run"])])
    assert shown.exit_code == 0 and "c-libcurl" in shown.output and "trickle" in shown.output, shown.output
    page = tmp_path / "matrix.html"
    reported = CliRunner().invoke(main, ["report", str(matrix["run"]), "--html", str(page)])
    assert reported.exit_code == 0, reported.output
    html = page.read_text()
    assert "c-libcurl" in html and "<details><summary>" in html and "trickle" in html
