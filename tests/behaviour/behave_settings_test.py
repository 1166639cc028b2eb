"""The behaviour matrix's second column (the library's documented recommended setting, the
manifest's [behaviour.recommended]) and one slow origin beside a fast one on one client.

No timed assertion (see behave_test.py): a deadline is told from none, a fast request held
behind a slow one from one that was not by the server's own schedule (the stall), never by how
late."""

from __future__ import annotations

import dataclasses

import pytest
from click.testing import CliRunner

from clientlab.behaviour import behave, cases as behaviour
from clientlab.behaviour.cases import Observed, judge
from clientlab.cli import main
from clientlab.drivers import manifest
from clientlab.errors import LabInputError
from clientlab.output.behave import change_lines, changes, code, matrix_json, matrix_lines, stored_matrix
from clientlab.report.behave import page

CASES = {bc.name: bc for bc in behaviour.discover().found}
KEPT = ("ok", "late")


def with_recommendation(driver: manifest.Driver, **fields: str) -> manifest.Driver:
    rec = manifest.Recommended(setting="s", source="https://example.invalid/doc", why="w", **fields)
    behaviour_settings = manifest.BehaviourSettings(recommended=rec)
    return dataclasses.replace(driver, manifest=driver.manifest.model_copy(update={"behaviour": behaviour_settings}))


# -- the recommended setting: the manifest and the job ---------------------------------------------

def test_a_recommendation_needs_its_setting_source_and_why(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "driver.toml").write_text(
        'id = "python-x"\nlanguage = "python"\nlibrary = "x"\ndescription = "x"\nrun = ["x"]\ncapabilities = []\n'
        '[behaviour.recommended]\nsetting = "timeout="\nsource = "https://x.invalid/"\n')
    with pytest.raises(LabInputError) as exc:
        manifest.load_manifest(folder / "driver.toml")
    assert "driver.toml" in str(exc.value) and "why" in str(exc.value)


def test_the_recommended_job_carries_the_option_and_the_defaults_job_does_not():
    stall = CASES["stall-headers"]
    assert "recommended" not in stall.job("127.0.0.1", 4321)["options"]
    assert stall.job("127.0.0.1", 4321, recommended=True)["options"]["recommended"] is True


# -- the recommended column against the real bench server ---------------------------------------------

def test_a_driver_keeps_the_trickle_deadline_only_with_its_recommended_setting(bench_server, test_drivers):
    driver = test_drivers["python-fake-recommends-deadline"]
    defaults = behave.run_cell(driver, CASES["trickle-body"], bench_server, "defaults")
    recommended = behave.run_cell(driver, CASES["trickle-body"], bench_server, "recommended")
    assert defaults.outcome.outcome == "no-deadline", defaults.outcome
    assert recommended.outcome.outcome in KEPT, recommended.outcome
    assert recommended.setting == "recommended" and recommended.recommended["setting"].startswith("a deadline")


def test_a_driver_whose_recommended_setting_is_no_deadline_fails_both(bench_server, test_drivers):
    driver = test_drivers["python-fake-recommends-per-read"]
    for setting in behave.SETTINGS:
        cell = behave.run_cell(driver, CASES["trickle-body"], bench_server, setting)
        assert cell.status == "ok" and cell.outcome.outcome == "no-deadline", (setting, cell.outcome)


def test_a_driver_without_a_recommendation_gets_a_dash_and_is_not_started(bench_server, test_drivers):
    crash = test_drivers["python-fake-crash"]  # would fail its cell, were it started
    cell = behave.run_cell(crash, CASES["short-body"], bench_server, "recommended")
    assert cell.status == "unsupported" and cell.outcome.outcome == "no-recommendation"
    assert code(cell, CASES["short-body"]) == "—" and cell.outcome.detail == "no documented recommendation"


def test_both_columns_are_stored_shown_reported_and_compared(store, test_drivers):
    cases = [CASES["short-body"]]
    reference = test_drivers["python-fake-reference"]  # no recommendation
    same = with_recommendation(test_drivers["python-fake-lenient"], by="timeout_s")
    run_id, cells = behave.run_matrix([reference, same], cases, store, {"command": "test"}, {})
    assert [(c.driver, c.setting, c.outcome.outcome, c.same_as_defaults) for c in cells] == [
        ("python-fake-reference", "defaults", "ok", False),
        ("python-fake-reference", "recommended", "no-recommendation", False),
        ("python-fake-lenient", "defaults", "accepted-short", False),
        ("python-fake-lenient", "recommended", "accepted-short", True)]  # the defaults' job: run once
    lines = matrix_lines(cells, cases, run_id)
    assert max(map(len, lines)) <= 80
    assert [line.split() for line in lines[1:5]] == [["python-fake-reference", "ok"], ["recommended", "—"],
                                                     ["python-fake-lenient", "SHORT"], ["recommended", "="]]
    assert any("python-fake-reference: — no documented recommendation" in line for line in lines)
    stored, stored_cases = stored_matrix(store.cell_records(run_id))
    assert matrix_lines(stored, stored_cases, run_id) == lines
    document = matrix_json(stored, stored_cases, run_id)
    assert document["recommended"]["python-fake-reference"] is None
    assert document["recommended"]["python-fake-lenient"]["source"] == "https://example.invalid/doc"
    assert {(c["driver"], c["setting"], c["code"]) for c in document["cells"]} >= {
        ("python-fake-lenient", "recommended", "=")}
    html = page(run_id, "a title", stored, stored_cases)
    assert "Recommended settings" in html and "https://example.invalid/doc" in html and ">=</summary>" in html
    # a recommended cell is compared with the recommended cell of the other run, by what the client did
    again, _ = behave.run_matrix([reference], cases, store, {"command": "test"}, {}, settings=("recommended",))
    assert changes(store.cell_records(run_id), store.cell_records(again)) == []
    now_with_one = with_recommendation(reference, by="timeout_s")
    changed = changes(store.cell_records(run_id), store.cell_records(
        behave.run_matrix([now_with_one], cases, store, {"command": "test"}, {})[0]))
    assert [(c["driver"], c["setting"], c["a"], c["b"]) for c in changed] == [
        ("python-fake-reference", "recommended", "—", "ok")]
    assert "python-fake-reference short-body (recommended): — → ok" in change_lines(1, 2, changed, 2)[1]


def test_settings_names_are_checked(lab_home):
    result = CliRunner().invoke(main, ["behave", "--settings", "defaults,tuned", "-s", "short-body", "--no-store"])
    assert isinstance(result.exception, LabInputError)
    assert "name one or both of defaults, recommended" in str(result.exception)


# -- one slow origin beside a fast one ---------------------------------------------------------------

POOL = CASES["slow-origin-pool"]


def test_the_pool_case_sends_the_slow_then_the_fast_all_in_flight_through_one_client():
    job = POOL.job("127.0.0.1", 4321, {"fault_a": 4321, "fault_c": 4400})
    urls = [r["url"] for r in job["requests"]]
    assert urls[:6] == [f"http://127.0.0.1:4321/fault/stall-headers?ms=2000&n={n}" for n in range(1, 7)]
    assert urls[6:] == ["http://127.0.0.2:4400/fault/landing?n=7", "http://127.0.0.2:4400/fault/landing?n=8"]
    assert job["concurrency"] == 8 and POOL.capabilities() == ["http1", "parallel"]
    with pytest.raises(Exception, match="fault_c"):
        POOL.job("127.0.0.1", 4321, {"fault_a": 4321})


def arrival(origin: str, n: int, at_ms: float) -> dict:
    return {"origin": origin, "path": "/fault/landing" if origin == "c" else "/fault/stall-headers", "n": str(n),
            "at_ms": at_ms}


SLOW = [arrival("a", n, 100.0 + n) for n in range(1, 7)]
ANSWERED = [{"r": r, "status": 200, "bytes": 8} for r in range(8)]


def test_fast_requests_that_arrived_before_any_slow_answer_are_correct():
    ok = judge(POOL, Observed(2.1, ANSWERED, [], SLOW + [arrival("c", 7, 104.0), arrival("c", 8, 130.0)]))
    assert ok.outcome == "ok" and "the 2 fast arrived at +3, +29 ms after the first slow one" in ok.detail


def test_a_fast_request_that_arrived_after_a_slow_answer_was_starved():
    late = judge(POOL, Observed(4.1, ANSWERED, [], SLOW + [arrival("c", 7, 104.0), arrival("c", 8, 2101.0)]))
    assert late.outcome == "starved" and "1 of 2 fast request(s) arrived only after a slow answer" in late.detail
    failed = judge(POOL, Observed(2.1, ANSWERED[:7], [{"r": 7, "message": "pool timeout"}],
                                  SLOW + [arrival("c", 7, 104.0)]))
    assert failed.outcome == "fast-failed" and "pool timeout" in failed.detail


def test_a_bad_pool_case_is_refused_naming_the_problem(tmp_path):
    path = tmp_path / "bad-pool.toml"
    path.write_text('description = "x"\nfault = "stall-headers"\nquery = { ms = 5000 }\nslow = 2\nfast = 1\n'
                    'timeout_s = 2\ncheck = "pool"\n')
    with pytest.raises(LabInputError, match="timeout_s past the stall"):
        behaviour.load_case(path)
