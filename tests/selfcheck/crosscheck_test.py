"""crosscheck: the same cells against the bench server and nginx, verified on both."""

from __future__ import annotations

import pytest

from clientlab.analysis.stats import StopRule
from clientlab.runner import RunOptions
from clientlab.selfcheck import crosscheck
from tests.support.fixtures import shipped


# reads the servers' CPU per trial: run alone, not beside other tests (test.sh)
pytestmark = pytest.mark.serial


REF = "python-fake-reference"


def test_drivers_are_verified_and_timed_against_both_servers(store, test_drivers):
    drivers = [test_drivers[REF], test_drivers["python-fake-no-reuse"]]
    options = RunOptions(warmup=0, stop=StopRule(min_trials=1, max_trials=1), placement="free")
    run_id, rows, patterns = crosscheck.run(store, drivers, [shipped("get-small", count=20)], options)
    cells = store.cells(run_id)
    assert sorted(c["scenario"] for c in cells) == ["get-small", "get-small", "get-small[server=nginx]",
                                                    "get-small[server=nginx]"]
    assert all(c["status"] == "ok" for c in cells), [c["reason"] for c in cells]
    # against nginx too, the verification pass compared every body with the bytes served
    nginx_cell = next(c for c in cells if c["driver"] == REF and "nginx" in c["scenario"])
    verify = next(t for t in store.trials(nginx_cell["id"]) if t["kind"] == "verify")
    assert verify["ok"] and verify["server"]["requests"] == 20 and verify["server"]["connections"] == 1
    no_reuse = next(c for c in cells if c["driver"] == "python-fake-no-reuse" and "nginx" in c["scenario"])
    assert store.trials(no_reuse["id"])[0]["server"]["connections"] == 20   # nginx's log counts connections
    assert {r.driver for r in rows} == {REF, "python-fake-no-reuse"}
    assert max(r.bench_ratio for r in rows) == 1.0 and max(r.nginx_ratio for r in rows) == 1.0
    assert all(r.agreement is not None for r in rows)
    # and how each server wrote the answer, stored with the run
    (written,) = patterns
    assert written.problem is None and set(written.patterns) == {"bench", "nginx"}
    assert store.run(run_id)["config"]["writes"][0]["bench"]["calls_per_answer"] >= 1


def test_the_two_servers_cells_take_turns_trial_by_trial(store, test_drivers):
    options = RunOptions(warmup=0, stop=StopRule(min_trials=3, max_trials=3), placement="free", host_probe=False)
    run_id, _, _ = crosscheck.run(store, [test_drivers[REF]], [shipped("get-small", count=10)], options)
    timed = sorted((t["id"], "nginx" if "nginx" in c["scenario"] else "bench", t["server"]["requests"])
                   for c in store.cells(run_id) for t in store.trials(c["id"]) if t["kind"] == "timed")
    assert [server for _, server, _ in timed] == ["bench", "nginx"] * 3
    assert all(requests == 10 for _, _, requests in timed)   # each trial counted by its own server


def test_a_driver_whose_body_differs_from_nginx_fails_there_too(store, test_drivers):
    options = RunOptions(warmup=0, stop=StopRule(min_trials=1, max_trials=1), placement="free")
    run_id, _, _ = crosscheck.run(store, [test_drivers["python-fake-wrong-body"]], [shipped("get-small", count=5)],
                               options)
    nginx_cell = next(c for c in store.cells(run_id) if "nginx" in c["scenario"])
    assert nginx_cell["status"] == "failed" and "differ from what the server sent" in nginx_cell["reason"]


def test_ratios_agree_within_ten_percent_or_not():
    row = crosscheck.Row("get-small", "x", 100.0, 50.0, "req/s", bench_ratio=0.50, nginx_ratio=0.54)
    assert row.agrees and abs(row.agreement - 0.0741) < 0.001
    row.nginx_ratio = 0.60
    assert not row.agrees


def test_the_rate_under_each_server_says_which_one_held_a_driver_back():
    row = crosscheck.Row("get-json-335k", "x", 14_000.0, 10_000.0, "req/s")
    assert abs(row.bench_over_nginx - 1.4) < 1e-9
    assert crosscheck.Row("get-small", "y", None, 10_000.0, "req/s").bench_over_nginx is None


def test_nginx_s_log_is_read_once_a_trial_and_its_worker_measured_as_the_server(store, test_drivers):
    from clientlab.servers import nginx

    started: list[nginx.StaticServer] = []

    def static_server(*args, **kwargs) -> nginx.StaticServer:
        started.append(nginx.StaticServer(*args, **kwargs))
        return started[-1]

    options = RunOptions(warmup=0, stop=StopRule(min_trials=3, max_trials=3), placement="free", host_probe=False)
    run_id, _, _ = crosscheck.run(store, [test_drivers[REF]], [shipped("get-small", count=10)], options,
                                  static_server=static_server)
    nginx_cell = next(c for c in store.cells(run_id) if "nginx" in c["scenario"])
    trials = store.trials(nginx_cell["id"])
    assert len(trials) == 4 and all(t["server"]["requests"] == 10 for t in trials)
    # one wait before the first trial (nothing read yet), then the one that ends each trial's count
    assert len(started) == 1 and started[0].log_writes == len(trials) + 1
    # where the lab measures the bench server's CPU, it measures nginx's worker too
    bench_cell = next(c for c in store.cells(run_id) if "nginx" not in c["scenario"])
    if all("cpu_s" in t["server"] for t in store.trials(bench_cell["id"])):
        assert all(t["server"]["cpu_s"] > 0 for t in trials)
