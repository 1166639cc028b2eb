from __future__ import annotations

import os

import pytest

from clientlab.selfcheck import selfbench


# measures placements: run alone, not beside other tests (test.sh)
pytestmark = pytest.mark.serial


def test_placements_are_each_a_stored_run_and_leave_the_lab_on_every_core(lab_home, monkeypatch, store, test_drivers):
    monkeypatch.setenv("CLIENTLAB_HOME", str(lab_home))
    placed = selfbench.placements([test_drivers["python-fake-reference"]], store, trials=2)
    assert os.sched_getaffinity(0) == set(range(os.cpu_count() or 1))
    runs = {r["config"]["placement"]: r for r in store.runs(limit=10)}
    assert len(runs) == 3 and {r["status"] for r in runs.values()} == {"complete"}
    assert {r["config"]["kind"] for r in runs.values()} == {"selfbench-placement"}
    measured = [name for name, p in placed["placements"].items() if "us_per_request" in p]
    assert placed["most_repeatable"] in measured
    assert {placed["placements"][name]["run"] for name in measured} <= {r["id"] for r in runs.values()}
