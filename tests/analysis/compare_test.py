"""Run comparison: the Mann–Whitney U test against brute force, and verdicts on real runs made
with the bench server and the test drivers."""

from __future__ import annotations

import itertools
import json
import math
import os
import subprocess
import sys

import pytest

from clientlab.analysis import compare
from clientlab.analysis.compare import mann_whitney, normal_p, ranks, smallest_p
from clientlab.analysis.stats import StopRule
from clientlab.drivers import manifest
from clientlab.runner import CellRunner, RunOptions
from tests.support.fixtures import TESTDRIVERS, shipped

# tells a slower driver by its measured figures: run alone, not beside other tests (test.sh)
pytestmark = pytest.mark.serial


TRIALS = 5  # 5 against 5: the smallest two-sided p is 2/252, well below 0.05


def _brute_force_p(a: list[float], b: list[float]) -> float:
    """Two-sided p by enumerating every split of the pooled values (the definition; a tie counts 1/2)."""
    pooled, m = a + b, len(a)

    def u_of(chosen: tuple[int, ...]) -> float:
        rest = [pooled[j] for j in range(len(pooled)) if j not in chosen]
        return sum((x > y) + (x == y) / 2 for x in (pooled[i] for i in chosen) for y in rest)

    observed = u_of(tuple(range(m)))
    us = [u_of(chosen) for chosen in itertools.combinations(range(len(pooled)), m)]
    low = sum(u <= observed for u in us) / len(us)
    high = sum(u >= observed for u in us) / len(us)
    return min(1.0, 2 * min(low, high))


def test_ranks_share_the_mean_rank_on_ties():
    assert ranks([10.0, 20.0, 20.0, 5.0]) == [2.0, 3.5, 3.5, 1.0]


@pytest.mark.parametrize("a,b", [
    ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]),
    ([1.1, 3.3, 5.5, 7.7], [2.2, 4.4, 6.6, 8.8]),
    ([0.5, 0.9, 1.4, 2.0, 3.1], [0.7, 4.0, 5.2, 6.3, 7.5, 9.9]),
    ([9.0, 8.0, 7.0, 6.0, 5.0], [1.0, 2.0, 3.0, 4.0]),
])
def test_exact_p_value_matches_enumeration(a, b):
    test = mann_whitney(a, b)
    assert test.method == "exact"
    assert test.p == pytest.approx(_brute_force_p(a, b))


def test_smallest_p_decides_whether_a_test_can_succeed():
    assert smallest_p(3, 3) == pytest.approx(0.1)      # 3 against 3 can never show a difference
    assert smallest_p(4, 4) == pytest.approx(2 / 70)
    assert mann_whitney([1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]).p == pytest.approx(2 / 70)


def test_normal_approximation_is_close_to_the_exact_distribution():
    a = [0.5, 0.9, 1.4, 2.0, 3.1, 3.3, 4.8, 5.0]
    b = [0.7, 4.0, 5.2, 6.3, 7.5, 9.9, 3.9, 6.1]
    exact = mann_whitney(a, b)
    assert normal_p(exact.u, len(a), len(b), []) == pytest.approx(exact.p, abs=0.01)


def test_ties_use_the_corrected_normal_approximation():
    a = [1.0, 2.0, 2.0, 3.0, 3.0, 3.0, 4.0, 5.0]
    b = [3.0, 4.0, 4.0, 5.0, 5.0, 6.0, 6.0, 7.0]
    test = mann_whitney(a, b)
    assert test.method == "normal"
    assert test.p == pytest.approx(_brute_force_p(a, b), abs=0.01)


def test_identical_samples_show_no_difference():
    test = mann_whitney([1.0] * 6, [1.0] * 6)
    assert test.p == 1.0 and not math.isnan(test.p)


# -- real runs ------------------------------------------------------------------------------

@pytest.fixture
def measure(bench_server, store):
    """measure(driver, scenario) -> run id: one run of one cell with TRIALS timed trials."""

    def run(driver: manifest.Driver, sc) -> int:  # noqa: ANN001
        run_id = store.start_run({}, {})
        options = RunOptions(warmup=1, stop=StopRule(min_trials=TRIALS, max_trials=TRIALS), placement="free")
        result = CellRunner(bench_server, store, run_id, options).run_cell(driver, sc)
        assert result.status == "ok", result.reason
        store.finish_run(run_id, "complete")
        return run_id

    return run


def test_two_runs_of_the_same_driver_show_no_significant_difference(measure, store, test_drivers):
    # each trial waits 1 s for a 100 Continue that never comes: a steady workload on a busy machine
    driver, sc = test_drivers["python-fake-expect-stall"], shipped("post-form", count=1)
    a, b = measure(driver, sc), measure(driver, sc)
    [row] = compare.compare_runs(store, a, b)
    assert row.verdict == "no significant difference", row
    assert row.trials_a == row.trials_b == TRIALS


def test_a_driver_that_got_slower_is_slower_with_a_small_p(measure, store, test_drivers, tmp_path):
    # the same driver id, whose client now waits 1 s for "100 Continue" before every request body
    folder = tmp_path / "reference-regressed"
    folder.mkdir()
    (folder / "driver.toml").write_text(
        (TESTDRIVERS / "reference" / "driver.toml").read_text()
        .replace("{here}/../fake.py", str(TESTDRIVERS / "fake.py")).replace('"reference"]', '"expect-stall"]'))
    regressed = manifest.load_manifest(folder / "driver.toml")
    assert regressed.id == "python-fake-reference"
    sc = shipped("post-form", count=1)
    a, b = measure(test_drivers["python-fake-reference"], sc), measure(regressed, sc)
    [row] = compare.compare_runs(store, a, b)
    assert row.verdict == "slower", row
    assert row.p_value < 0.05 and row.method == "exact" and row.throughput_ratio < 0.5
    assert row.peak_rss_ratio == pytest.approx(1, rel=0.5)  # CPU of one request is below a clock tick


def test_compare_command_prints_the_table_and_writes_json(measure, store, test_drivers, tmp_path):
    sc = shipped("get-small", count=20)
    a = measure(test_drivers["python-fake-reference"], sc)
    b = measure(test_drivers["python-fake-reference"], sc)
    out = tmp_path / "compare.json"
    env = {**os.environ, "CLIENTLAB_HOME": str(store.path.parent), "COLUMNS": "200"}
    proc = subprocess.run([sys.executable, "-m", "clientlab", "compare", str(a), str(b), "--json", str(out)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "python-fake-reference × get-small" in proc.stdout and "Mann–Whitney" in proc.stdout
    doc = json.loads(out.read_text())
    [row] = doc["cells"]
    assert (doc["run_a"], doc["run_b"], row["trials_a"], row["trials_b"]) == (a, b, TRIALS, TRIALS)
    assert row["verdict"] in ("faster", "slower", "no significant difference") and 0 < row["p_value"] <= 1


@pytest.mark.parametrize("verdict", ["not measured in both", "different metrics", "too few trials", "faster"])
def test_table_renders_every_verdict(verdict):
    from rich.console import Console

    row = compare.CellComparison(driver="d", scenario="s", status_a="ok", status_b="unsupported", verdict=verdict)
    console = Console(record=True, width=200)
    console.print(compare.table(1, 2, [row]))
    assert verdict in console.export_text()


def _stored(store, machine: dict, net: str, versions: dict, params: dict) -> int:
    run_id = store.start_run(machine, {"net": {"profile": net}})
    cell = store.start_cell(run_id, "d", "get-small", params, "throughput")
    store.finish_cell(cell, "ok", None, {"throughput": 1.0}, versions)
    store.finish_run(run_id, "complete")
    return run_id


def test_runs_of_the_same_kind_of_host_and_cells_are_like_for_like(store):
    host = {"cpu_model": "X", "cores": 2, "memory_gib": 24, "kernel": "6.1", "os": "debian 12", "go": "1.26"}
    a = _stored(store, {**host, "hostname": "one"}, "loopback", {"lib": "1.0"}, {"count": 10})
    b = _stored(store, {**host, "hostname": "two"}, "loopback", {"lib": "1.0"}, {"count": 10})
    assert compare.unlike(store, a, b) == []


def test_another_host_network_driver_version_or_parameter_is_said_to_be_not_like_for_like(store):
    host = {"cpu_model": "X", "cores": 2, "memory_gib": 24, "kernel": "6.1", "os": "debian 12", "go": "1.26"}
    a = _stored(store, host, "loopback", {"lib": "1.0"}, {"count": 10})
    b = _stored(store, {**host, "cores": 8}, "server-host:bench1", {"lib": "1.1"}, {"count": 20})
    notes = compare.unlike(store, a, b)
    assert notes[0].startswith(f"runs {a} and {b} were made on different kinds of host (cores 2 / 8)")
    assert notes[1] == f"network: loopback in run {a}, server-host:bench1 in run {b}"
    assert notes[2] == "d × get-small: other driver versions and scenario parameters"
