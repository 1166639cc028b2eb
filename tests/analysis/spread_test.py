"""Repeatability over runs: the spread of known medians in a real store, and the command on real
runs of the reference test driver."""

from __future__ import annotations

import json

import pytest

from clientlab.analysis import spread
from clientlab.errors import LabInputError
from clientlab.store import Store
from tests.cli.cli_test import TESTDRIVERS, clientlab


def _run(store: Store, throughputs: dict[tuple[str, str], float | None]) -> int:
    run_id = store.start_run({}, {})
    for (driver, scenario), value in throughputs.items():
        cell = store.start_cell(run_id, driver, scenario, {}, "throughput")
        if value is None:
            store.finish_cell(cell, "failed", "broke", None, None)
        else:
            store.finish_cell(cell, "ok", None, {"throughput": value, "unit": "req/s", "disturbed_trials": 2,
                                                 "disturbed_kept": 1}, None)
    store.finish_run(run_id, "done")
    return run_id


@pytest.fixture
def three_runs(tmp_path):
    store = Store(tmp_path / "r.sqlite")
    ids = [_run(store, {("fast", "get"): f, ("slow", "get"): s, ("flaky", "get"): x, ("never", "get"): None})
           for f, s, x in ((1000.0, 100.0, 50.0), (1040.0, 100.0, None), (1020.0, 120.0, 55.0))]
    return store, ids


def test_each_cell_spread_is_max_over_min_of_its_medians(three_runs):
    store, ids = three_runs
    s = spread.spread(store, ids)
    cells = {c.driver: c for c in s.cells}
    assert cells["fast"].spread == pytest.approx(1040 / 1000)
    assert cells["slow"].spread == pytest.approx(1.2)
    # to the fastest: 0.1, 100/1040, 120/1020
    assert cells["slow"].spread_to_fastest == pytest.approx((120 / 1020) / (100 / 1040))
    assert s.within(0.05) == 1 and s.within(0.10) == 1
    assert s.by_driver() == {"fast": (1, 1), "slow": (0, 1)}


def test_the_trials_own_noise_predicts_the_spread_and_the_trials_needed():
    five_runs = spread.CellSpread("d", "s", "req/s", [100.0] * 5, [1.0] * 5, trial_spread=0.10, trials=5)
    # the median of 5 trials with a 10 % spread: standard error 1.2533 × 0.1 / √5; range of 5: 2.326 of them
    assert five_runs.predicted == pytest.approx(1 + 2.326 * 1.2533 * 0.1 / 5 ** 0.5)
    assert five_runs.trials_for(0.05) == 34       # (2.326 × 1.2533 × 0.1 / 0.05)² = 33.99
    two_runs = spread.CellSpread("d", "s", "req/s", [100.0] * 2, [1.0] * 2, trial_spread=0.10, trials=5)
    assert two_runs.predicted < five_runs.predicted  # fewer runs, a smaller expected range
    assert spread.CellSpread("d", "s", "req/s", [1.0, 1.0], [1.0, 1.0]).predicted == 1.0


def test_a_cell_not_measured_in_every_run_is_left_out_and_named(three_runs):
    store, ids = three_runs
    s = spread.spread(store, ids)
    assert "flaky" not in {c.driver for c in s.cells}
    assert s.left_out == ["flaky × get"]  # a cell measured in no run is not "left out": it is not there
    assert s.runs[0].disturbed_trials == 6 and s.runs[0].disturbed_kept == 3


def test_run_ranges_and_single_runs_are_refused_or_expanded(three_runs):
    store, ids = three_runs
    assert spread.run_ids(store, (f"{ids[0]}-{ids[2]}",)) == ids
    with pytest.raises(LabInputError, match="at least two"):
        spread.run_ids(store, (str(ids[0]), str(ids[0])))
    with pytest.raises(LabInputError, match="lower run id"):
        spread.run_ids(store, (f"{ids[2]}-{ids[0]}",))
    with pytest.raises(LabInputError, match="no run 99"):
        spread.run_ids(store, ("99", str(ids[0])))


def test_spread_command_on_real_runs(lab_home, tmp_path):  # noqa: F811
    args = ("run", "--driver-path", str(TESTDRIVERS), "-d", "python-fake-reference", "-s", "get-small",
            "-p", "count=50", "--trials", "3", "--warmup", "0", "--retries", "0", "--format", "json")
    for _ in range(2):
        proc = clientlab(*args, home=lab_home)
        assert proc.returncode == 0, proc.stderr
    out = tmp_path / "spread.json"
    proc = clientlab("spread", "1-2", "--json", str(out), home=lab_home)
    assert proc.returncode == 0, proc.stderr
    assert "python-fake-reference × get-small" in proc.stdout
    doc = json.loads(out.read_text())
    assert doc["summary"]["cells"] == 1
    cell = doc["cells"][0]
    assert cell["spread"] == pytest.approx(max(cell["medians"]) / min(cell["medians"]))
    assert cell["trials"] == 3 and cell["trial_spread"] >= 0 and cell["predicted_spread"] >= 1
    proc = clientlab("spread", "1", home=lab_home)
    assert proc.returncode == 2 and "at least two" in proc.stderr
