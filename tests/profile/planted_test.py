"""Profiles end to end, with the real profilers and the real bench server: a planted slow path in
test drivers of seven languages is found and named by the diagnosis; profiled trials leave the
timed figures as they were; JFR keeps no sample of a Java driver's work after `done`; a profiled
Node driver leaves no V8 log in its folder; the flame graphs render in Chromium from a file:// URL."""

from __future__ import annotations

import functools
import statistics

import pytest

from clientlab.analysis.stats import StopRule
from clientlab.cli.common import diagnose_and_store
from clientlab.drivers import build, manifest
from clientlab.profile import CellProfiler, flame
from clientlab.profile import folded as fold
from clientlab.runner import CellRunner, Placement, RunOptions
from clientlab.store.profiles import cell_profiles
from tests.support.fixtures import shipped

# profiled trials are timed and sampled: run alone, not beside other tests (test.sh)
pytestmark = pytest.mark.serial

PAIRS = {  # language: (its fastest client here, the same with a planted busy function, the function)
    "python": ("python-fake-reference", "python-fake-planted", "planted_slow_path"),
    "c": ("c-libcurl", "c-libcurl-planted", "planted_slow_path"),
    "go": ("go-net-http", "go-net-http-planted", "main.plantedSlowPath"),
    "ruby": ("ruby-net-http", "ruby-net-http-planted", "planted_slow_path"),   # rbspy beside perf
    "perl": ("perl-lwp", "perl-lwp-planted", "planted_slow_path"),             # NYTProf beside perf
    "php": ("php-curl", "php-curl-planted", "planted_slow_path"),              # excimer beside perf
    "java": ("java-httpclient", "java-httpclient-planted", "plantedSlowPath"),  # JFR beside perf
}


def _driver(test_drivers, driver_id: str) -> manifest.Driver:
    driver = test_drivers.get(driver_id) or manifest.select(manifest.discover()[0], [driver_id])[0]
    if not build.is_built(driver):
        ok, log = build.build(driver)
        assert ok, f"{driver_id} did not build: {log[-500:]}"
    return driver


def profiled_run(bench_server, store, drivers, count: int = 300, profiler=CellProfiler) -> list[dict]:
    run_id = store.start_run({}, {})
    # the driver pinned to a core, as `clientlab run` pins it: perf samples that core. A timed
    # trial gets the scenario's own limit, not 10× what verification predicted: on a loaded host
    # a JVM's trial of 300 requests ran past 13 s, and this test times nothing
    options = RunOptions(warmup=1, stop=StopRule(min_trials=3, max_trials=3), placement="free", profiler=profiler,
                         trial_timeout_s=120.0)
    with CellRunner(bench_server, store, run_id, options, driver_cpu=Placement.of("split").driver) as runner:
        runner.run_cells(drivers, shipped("get-small", count=count))
    diagnose_and_store(store, run_id)
    return store.cells(run_id)


@pytest.mark.parametrize("language", sorted(PAIRS))
def test_a_planted_slow_path_is_found_and_named(language, bench_server, store, test_drivers):
    fast_id, slow_id, function = PAIRS[language]
    cells = profiled_run(bench_server, store, [_driver(test_drivers, fast_id), _driver(test_drivers, slow_id)])
    assert all(c["status"] == "ok" for c in cells), [c["reason"] for c in cells]
    slow = next(c for c in cells if c["driver"] == slow_id)
    gaps = [f for f in slow["figures"].get("findings") or [] if f["rule"] == "cpu-gap"]
    assert gaps, f"no CPU finding for {slow_id}: {slow['figures'].get('findings')}"
    notes = {c["driver"]: c["figures"].get("notes") for c in cells}
    assert gaps[0]["paths"], f"{gaps[0]['evidence']}; the cells' notes: {notes}"
    first = gaps[0]["paths"][0]
    assert function in first["frames"][-1], gaps[0]
    assert first["cause"] == "planted-slow-path" and first["us_per_request"] > 0
    assert function in gaps[0]["evidence"]
    assert gaps[0]["against"] == fast_id


def test_jfr_has_no_sample_of_what_a_java_driver_does_after_done(bench_server, store, test_drivers, monkeypatch):
    # every sampler is off at `done` before any is waited for: perf, then jcmd in the JVM, take a
    # while to write, and a JFR window still open meanwhile would keep the driver's work after
    # `done` (here a busy method of its own name, in the client's close after the report)
    monkeypatch.setenv("PLANTED_AFTER_DONE_MS", "300")
    # the planted method made small: JFR drops its samples inside that compiled loop, and the
    # requests' own stacks show that the window was open during the trials
    monkeypatch.setenv("PLANTED_LOOPS", "1000")
    # five profiled trials, not the profile's up to 20 until JFR holds 200 samples: each trial's
    # dump (jcmd) and print (jfr) start a JVM each, and every trial's 300 ms after done is sampled
    # in full by a window left open (the old one kept 40 and 1759 samples of it over a profile)
    profiler = functools.partial(CellProfiler, max_trials=5)
    cells = profiled_run(bench_server, store, [_driver(test_drivers, "java-httpclient-planted")], count=200,
                         profiler=profiler)
    assert cells[0]["status"] == "ok", cells[0]["reason"]
    jfr = next(fold.from_text(r["folded"]) for r in cell_profiles(store, cells[0]["id"]) if r["profiler"] == "jfr")
    during = sum(n for stack, n in jfr.items() if "clientlab.lab.Driver.runAll" in stack)
    after = {stack: n for stack, n in jfr.items() if "workAfterDone" in stack}
    assert during > 0, f"JFR sampled nothing of the trials' requests: {sorted(jfr.items(), key=lambda kv: -kv[1])[:3]}"
    assert not after, f"JFR kept {sum(after.values())} samples of the work after done ({during} of the requests)"


def test_profiling_a_node_driver_leaves_no_v8_log_in_its_folder(bench_server, store):
    # --perf-basic-prof turns V8's log on, written where the process runs: the driver's folder
    # (driver-protocol §6), where nobody reads it and it piled up profile after profile
    driver = _driver({}, "node-http")
    before = set(driver.folder.glob("isolate-*.log"))
    cells = profiled_run(bench_server, store, [driver], count=200)
    assert cells[0]["status"] == "ok", cells[0]["reason"]
    assert cells[0]["figures"]["profile"]["trials"] > 0, cells[0]["figures"].get("notes")
    left = sorted(p.name for p in set(driver.folder.glob("isolate-*.log")) - before)
    assert not left, f"the profiled Node process left {left} in {driver.folder}"


def test_profiled_trials_leave_the_timed_figures_unchanged(bench_server, store, test_drivers):
    cells = profiled_run(bench_server, store, [_driver(test_drivers, "python-fake-reference")], count=200)
    cell = cells[0]
    trials = store.trials(cell["id"])
    timed = [t for t in trials if t["kind"] == "timed" and t["ok"]]
    profiled = [t for t in trials if t["kind"] == "profiled"]
    figs = cell["figures"]
    assert profiled and len(timed) == figs["trials"] == 3
    assert figs["wall_s"]["median"] == statistics.median(t["wall_s"] for t in timed)
    assert figs["cpu_user_s"] == statistics.median(t["user_s"] for t in timed)
    assert trials.index(profiled[0]) > max(trials.index(t) for t in timed)   # after the timed ones
    assert figs["layers"]["samples"] > 0 and figs["profile"]["trials"] == len(profiled)


def test_the_flame_graphs_render_in_chromium_from_a_file(bench_server, store, test_drivers, tmp_path):
    from playwright.sync_api import sync_playwright

    from clientlab.report.browser import CHROMIUM

    cells = profiled_run(bench_server, store, [_driver(test_drivers, "python-fake-reference"),
                                               _driver(test_drivers, "python-fake-planted")])
    flames = flame.run_flames(store, cells)
    assert [f.kind for f in flames] == ["profile", "profile", "differential"]
    path = tmp_path / "flames.html"
    path.write_text(flame.page("profiles", flames))
    url = path.resolve().as_uri()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM))
        try:
            page = browser.new_page()
            asked: list[str] = []
            errors: list[str] = []
            page.on("request", lambda r: asked.append(r.url))
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(url)
            page.wait_for_function("document.body.dataset.flamesReady === '3'", timeout=30_000)
            drawn = page.eval_on_selector_all("div.flame", "boxes => boxes.map(b => b.childElementCount)")
            assert all(n > 5 for n in drawn), drawn
            key = flames[1].key
            page.fill(f"#{key}-search", "planted_slow")
            assert page.text_content(f"#{key}-matched").startswith("matched: ")
            assert float(page.text_content(f"#{key}-matched").split()[1]) > 20
            wide = page.eval_on_selector(f"#{key}", "b => b.childElementCount")
            page.click(f"#{key} div.match")   # zoom into the planted function
            assert page.eval_on_selector(f"#{key}", "b => b.childElementCount") < wide
        finally:
            browser.close()
    assert asked == [url] and errors == []



def test_a_python_profile_holds_none_of_the_helpers_message_loop_outside_run_all(bench_server, store, test_drivers):
    # the loop burns CPU at go before it calls run_all; py-spy samples the loop outside run_all
    # (waiting for go, the report after done) by a race, this for certain: none of it is kept
    from clientlab.store.profiles import cell_profiles

    cells = profiled_run(bench_server, store, [_driver(test_drivers, "python-helper-loop-work")], count=200)
    assert cells[0]["status"] == "ok", cells[0]["reason"]
    spy = next(p for p in cell_profiles(store, cells[0]["id"]) if p["profiler"] == "py-spy")
    assert "LoopWork.request" in spy["folded"]
    assert "busy_in_the_message_loop" not in spy["folded"] and spy["meta"]["outside_samples"] > 0
