"""The runner end to end: the real bench server, the reference and the faulty test drivers."""

from __future__ import annotations

import pytest

from clientlab import protocol
from clientlab.testsupport import shipped
from clientlab.scenario import Scenario

REF = "python-fake-reference"


@pytest.mark.parametrize("name,params", [
    ("get-small", {"count": 50}),
    ("post-form", {"count": 20}),
    ("post-multipart", {"count": 20}),
    ("redirect-get", {"count": 10}),
    ("cookie-session", {"count": 10}),
    ("download-memory", {"size": "1MB", "count": 2}),
    ("download-file", {"size": "3MB"}),
])
def test_reference_driver_passes_verification_and_is_timed(cell, name, params):
    result, trials = cell(REF, shipped(name, **params))
    assert result.status == "ok", result.reason
    assert [t["kind"] for t in trials] == ["verify", "timed", "timed"]
    assert all(t["ok"] for t in trials)
    figures = result.figures
    assert figures["throughput"] > 0 and figures["wall_s"]["median"] > 0
    assert figures["peak_rss_kb"] > 1000  # a Python interpreter is megabytes
    assert result.versions["http.client"] == "stdlib"


def test_cpu_of_the_timed_phase_is_measured(cell):
    # /proc counts CPU in clock ticks (10 ms): give the driver enough work to register
    result, _ = cell(REF, shipped("get-small", count=1500))
    assert result.figures["cpu_user_s"] > 0.02
    assert result.figures["cpu_user_s"] + result.figures["cpu_sys_s"] <= result.figures["wall_s"]["max"] * 1.5


def test_keep_alive_requests_share_one_connection(cell):
    result, trials = cell(REF, shipped("get-small", count=40))
    assert result.status == "ok"
    assert all(t["server"]["connections"] == 1 and t["server"]["requests"] == 40 for t in trials)
    assert trials[-1]["server"]["requests_per_conn"]["max"] == 40


def test_keep_alive_off_opens_a_connection_per_request(cell):
    sc = shipped("get-small", count=30).model_copy(update={"client": shipped("get-small").client.model_copy(
        update={"keep_alive": False})})
    result, trials = cell(REF, sc)
    assert result.status == "ok", result.reason
    assert all(t["server"]["connections"] == 30 for t in trials)


def test_sequential_scenario_records_cycle_time_distribution(cell):
    result, _ = cell(REF, shipped("get-small", count=30))
    cycle = result.figures["server"]["cycle_ms"]
    assert 0 < cycle["p50"] <= cycle["p90"] <= cycle["max"]


def test_verification_catches_a_wrong_body(cell):
    result, trials = cell("python-fake-wrong-body", shipped("get-small", count=5))
    assert result.status == "failed"
    assert "verification" in result.reason and "differ from what the server sent" in result.reason
    assert [t["kind"] for t in trials] == ["verify"]  # a failed cell is not timed


def test_a_driver_doing_less_work_when_timed_fails(cell):
    result, _ = cell("python-fake-lazy", shipped("get-small", count=20))
    assert result.status == "failed"
    assert "timed trial 0" in result.reason and "20 expected, 10 reported" in result.reason


def test_crashing_driver_fails_with_exit_code_and_stderr(cell):
    result, trials = cell("python-fake-crash", shipped("get-small", count=5))
    assert result.status == "failed"
    assert "exited (code 3)" in result.reason and "crashing on purpose" in result.reason
    assert trials[-1]["kind"] == "fault"


def test_hanging_driver_is_killed_at_its_timeout(cell):
    sc = shipped("get-small", count=5).model_copy(update={"timeout_s": 1.5})
    result, _ = cell("python-fake-hang", sc)
    assert result.status == "failed" and "timed out after 2 s waiting for done" in result.reason


def test_garbage_on_stdout_fails_the_cell(cell):
    result, _ = cell("python-fake-garbage", shipped("get-small", count=5))
    assert result.status == "failed"
    assert "not a protocol message: 'Connecting to the server...'" in result.reason


def test_flooding_stdout_fails_the_cell(cell, monkeypatch):
    monkeypatch.setattr(protocol, "MAX_LINE", 1024 * 1024)
    result, _ = cell("python-fake-flood", shipped("get-small", count=5))
    assert result.status == "failed" and "more than 1048576 bytes on stdout" in result.reason


def test_capability_missing_from_manifest_is_unsupported_without_starting(cell):
    result, trials = cell(REF, shipped("parallel-feeds"))
    assert result.status == "unsupported"
    assert result.reason == "manifest does not claim parallel"
    assert trials == []


def test_driver_refusing_an_option_is_unsupported_with_its_reason(cell):
    base = shipped("post-form", count=5)
    sc = base.model_copy(update={"client": base.client.model_copy(update={"options": {"tcp_nodelay": True}})})
    result, _ = cell(REF, sc)
    assert result.status == "unsupported" and result.reason == "option tcp_nodelay is not supported"


def test_fresh_process_mode_measures_start_up_every_trial(cell):
    result, trials = cell(REF, shipped("get-small", count=5), fresh_process=True)
    assert result.status == "ok"
    timed = [t for t in trials if t["kind"] == "timed"]
    assert all(t["startup_s"] and t["startup_s"] > 0 for t in timed)


def test_failed_driver_does_not_stop_the_others(bench_server, store, test_drivers):
    from clientlab.runner import RunOptions, run_matrix
    from clientlab.stats import StopRule

    run_id = store.start_run({}, {})
    drivers = [test_drivers["python-fake-crash"], test_drivers[REF]]
    results = run_matrix(store, run_id, drivers, [shipped("get-small", count=5)],
                         RunOptions(warmup=0, stop=StopRule(min_trials=1, max_trials=1), pin_cpus=False))
    assert [r.status for r in results] == ["failed", "ok"]
    assert [c["status"] for c in store.cells(run_id)] == ["failed", "ok"]
