"""crosscheck --plain: each timed trial of a cell beside a fresh process of its library's plain loop."""

from __future__ import annotations

import pytest

from clientlab.analysis.stats import StopRule
from clientlab.runner import RunOptions
from clientlab.selfcheck import plainloop
from tests.support.fixtures import shipped

# compares the lab's figures with a plain loop's: run alone, not beside other tests (test.sh)
pytestmark = pytest.mark.serial


def _options(trials: int) -> RunOptions:
    return RunOptions(warmup=1, stop=StopRule(min_trials=trials, max_trials=trials), placement="free",
                      host_probe=False)


def test_each_timed_trial_is_paired_with_a_fresh_process_of_the_plain_loop(store, test_drivers):
    run_id, (cal,) = plainloop.run(store, [test_drivers["python-fake-reference"]],
                                   [shipped("get-small", count=40)], _options(3))
    assert cal.lab is not None and cal.lab.status == "ok" and cal.problem is None
    assert cal.reference == "plain" and len(cal.pairs) == 3
    assert all(p.bare.requests == 40 and p.bare.wall_s > 0 and p.ratio > 0 for p in cal.pairs)
    # the loop's own cost, its start-up taken off: a CPU reading for a runtime without a JIT
    assert all(p.bare.cpu_s is not None and p.bare.page_faults is not None for p in cal.pairs)
    assert cal.ratio_summary is not None
    stored = store.run(run_id)["config"]["plain"]
    assert stored[0]["reference"] == "plain" and len(stored[0]["pairs"]) == 3
    # the cell keeps its ratio with its figures, for the report and the truth experiment's claims
    (cell,) = store.cells(run_id)
    kept = cell["figures"]["plain"]
    assert kept["ratio"] == pytest.approx(cal.ratio_summary.median) and kept["compared"] == 3


@pytest.mark.parametrize("behaviour, said", [
    ("liar", "the plain loop says it read"),
    ("short", "the server saw 39"),
    ("crash", "the plain loop exited 3: plain loop: crashed on purpose"),
])
def test_a_plain_loop_that_lies_or_fails_is_named_and_the_cell_keeps_its_figures(store, test_drivers, behaviour,
                                                                                said):
    _, (cal,) = plainloop.run(store, [test_drivers[f"python-fake-plain-{behaviour}"]],
                              [shipped("get-small", count=40)], _options(1))
    assert cal.lab is not None and cal.lab.status == "ok"
    assert cal.pairs == [] and cal.problem is not None and said in cal.problem
    assert cal.within_target is None


def test_a_scenario_that_is_not_plain_gets_gets_no_plain_loop_and_says_why(store, test_drivers):
    _, (cal,) = plainloop.run(store, [test_drivers["python-fake-reference"]], [shipped("post-form", count=5)],
                              _options(1))
    assert cal.lab is not None and cal.lab.status == "ok"
    assert cal.problem is not None and cal.problem.startswith("no plain loop for this scenario")


def test_the_plain_loop_url_is_refused_for_work_a_plain_loop_does_not_do():
    job = {"requests": [{"method": "GET", "url": "http://127.0.0.1:1/bytes/12", "repeat": 5}],
           "concurrency": 1, "cookies": False, "accept_gzip": False, "http": "1.1"}
    assert plainloop.plain_url(job) == "http://127.0.0.1:1/bytes/12"
    for change in ({"concurrency": 4}, {"cookies": True}, {"http": "2"},
                   {"requests": [{**job["requests"][0], "sink": "file", "sink_path": "/tmp/x"}]}):
        with pytest.raises(plainloop.DriverFault, match="no plain loop"):
            plainloop.plain_url({**job, **change})


class _AfterReadings:
    """A host probe whose readings right after the work are as told (then fast); fast before it."""

    def __init__(self, *after: float):
        self.after = list(after)

    def wait_fast(self, limit_s: float) -> float:
        return 1.0

    def slowdown(self) -> float:
        return self.after.pop(0) if self.after else 1.0


def _disturbed_round(bench_server, test_drivers, retries: int):
    beside = plainloop.PlainBeside(None, probe=_AfterReadings(1.6), retries=retries)
    loop = plainloop.PlainLoop(test_drivers["python-fake-reference"], None, 0.0)
    cal = beside.calibration("python-fake-reference", "get-small")
    rnd = beside._round(loop, shipped("get-small", count=40), bench_server, 30.0, cal)
    assert rnd.requests == 40 and rnd.wall_s > 0  # the round kept passed the server's check
    return cal


def test_a_plain_round_the_host_disturbed_is_run_again(bench_server, test_drivers):
    cal = _disturbed_round(bench_server, test_drivers, retries=1)
    # the round after may be disturbed too on a busy machine (others' CPU): then it is kept, flagged
    assert len(cal.run_again) == 1 and "the host slowed the driver's core" in cal.run_again[0]
    assert cal.rounds_note().endswith("1 run again" if not cal.kept_disturbed else "(no retries left)")


def test_with_no_retries_left_a_disturbed_plain_round_is_kept_and_said(bench_server, test_drivers):
    cal = _disturbed_round(bench_server, test_drivers, retries=0)
    assert cal.run_again == [] and len(cal.kept_disturbed) == 1
    assert "the host slowed the driver's core" in cal.kept_disturbed[0]
    assert cal.rounds_note() == "1 plain rounds disturbed, 0 run again, 1 kept disturbed (no retries left)"
