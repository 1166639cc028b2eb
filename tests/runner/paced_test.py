"""A check beside the cells that paces them (crosscheck --plain, the truth experiment): each cell's
pairs end when the check has decided, at its most, or with the time budget, the minimum included."""

from __future__ import annotations

import pytest

from clientlab.analysis.stats import StopRule
from clientlab.runner import CellGroup, CellRunner, RunOptions
from clientlab.runner.deadline import Deadline
from tests.support.clock import ManualClock
from tests.support.fixtures import shipped

# trials of the real bench server and a test driver, a time budget on a clock moved by hand
pytestmark = pytest.mark.serial

REF = "python-fake-reference"


class _Check:
    """A check beside the cells that has decided a cell after `after` of its pairs (None: never)."""

    def __init__(self, after: int | None, most: int = 6, mode_after: dict[str, int | None] | None = None):
        self.most_pairs = most
        self.after = after
        # held pairs that decide each allocator mode (None: never); none given: decided at once
        self.mode_after = mode_after or {}
        self.pairs: dict[tuple[str, str], int] = {}
        self.kinds: list[str] = []        # the kinds of trial each pair was given
        self.mode_kinds: list[str] = []   # the trials handed over in allocator modes
        self.handed: list[int] = []       # how many trials each hand-over of allocator modes held

    def after_trial(self, driver, scenario, work, server, trial) -> None:
        self.kinds.append(trial.kind)
        key = (driver.id, scenario.label)
        self.pairs[key] = self.pairs.get(key, 0) + 1

    def decided(self, driver: str, scenario: str) -> bool:
        return self.after is not None and self.pairs.get((driver, scenario), 0) >= self.after

    def after_modes(self, driver, scenario, work, server, trials) -> None:
        self.mode_kinds.extend(t.kind for t in trials)
        self.handed.append(len(trials))

    def mode_decided(self, driver: str, scenario: str, mode: str) -> bool:
        held = self.mode_kinds.count(f"mode:{mode}")
        after = self.mode_after.get(mode, 0)
        return held >= self.most_pairs or (after is not None and held >= after)


def _paced(bench_server, store, test_drivers, check: _Check, scenario, deadline: Deadline | None = None,
           min_trials: int = 3):
    run_id = store.start_run({}, {})
    # the cells' own stop rule would end them at their minimum: the check decides instead
    options = RunOptions(warmup=0, stop=StopRule(min_trials=min_trials, max_trials=min_trials), placement="free",
                         host_probe=False)
    with CellRunner(bench_server, store, run_id, options) as runner:
        runner.beside = check
        groups = [CellGroup([test_drivers[REF]], scenario)]
        [result] = runner.run_groups(groups, deadline) if deadline is not None else runner.run_groups(groups)
    [cell] = store.cells(run_id)
    kinds = [t["kind"] for t in store.trials(cell["id"])]
    return result, kinds


def test_a_paced_cell_takes_pairs_past_its_minimum_until_the_check_has_decided(bench_server, store, test_drivers):
    check = _Check(after=5)
    result, kinds = _paced(bench_server, store, test_drivers, check, shipped("get-small", count=5))
    assert result.status == "ok" and kinds.count("timed") == 5 and check.kinds == ["timed"] * 5


def test_a_check_decided_before_the_minimum_still_gets_the_minimum(bench_server, store, test_drivers):
    check = _Check(after=1)
    _, kinds = _paced(bench_server, store, test_drivers, check, shipped("get-small", count=5))
    assert kinds.count("timed") == 3


def test_a_cell_the_check_cannot_decide_stops_at_the_checks_most_pairs(bench_server, store, test_drivers):
    check = _Check(after=None, most=6)
    result, kinds = _paced(bench_server, store, test_drivers, check, shipped("get-small", count=5))
    assert result.status == "ok" and kinds.count("timed") == 6


def test_past_the_time_budget_a_paced_cell_stops_short_of_its_minimum_and_says_so(bench_server, store,
                                                                                 test_drivers):
    spent = Deadline(0.0, ManualClock(1.0))   # the budget is spent from the start
    result, kinds = _paced(bench_server, store, test_drivers, _Check(after=None), shipped("get-small", count=5),
                           spent)
    assert kinds.count("timed") == 1 and result.figures.budget_stopped is True
    assert any("stopped after 1 timed trials, short of its minimum of 3" in n for n in result.figures.notes)


def test_a_large_answers_pairs_are_timed_trials_and_its_allocator_modes_go_to_the_check(bench_server, store,
                                                                                       test_drivers):
    check = _Check(after=3)
    result, kinds = _paced(bench_server, store, test_drivers, check,
                           shipped("get-small", count=5, size=200_000))
    assert result.status == "ok"
    # every pair had a timed trial, never one held in an allocator mode
    assert check.kinds == ["timed"] * 3
    assert sorted(set(check.mode_kinds)) == ["mode:fresh pages", "mode:heap"]
    assert check.mode_kinds.count("mode:heap") == 2 and "mode:heap" in kinds


def test_a_budget_stopped_large_answer_still_gets_its_allocator_modes(bench_server, store, test_drivers):
    spent = Deadline(0.0, ManualClock(1.0))
    check = _Check(after=None)
    result, kinds = _paced(bench_server, store, test_drivers, check, shipped("get-small", count=5, size=200_000),
                           spent)
    assert result.figures.budget_stopped is True
    assert "mode:heap" in kinds and "mode:fresh pages" in kinds and check.mode_kinds


def test_a_mode_its_held_pairs_have_not_decided_takes_more_until_decided_or_at_the_most(bench_server, store,
                                                                                       test_drivers):
    # the heap mode is decided after 4 held pairs, the fresh pages' never: the check's most (6)
    check = _Check(after=3, most=6, mode_after={"heap": 4, "fresh pages": None})
    result, kinds = _paced(bench_server, store, test_drivers, check, shipped("get-small", count=5, size=200_000))
    assert result.status == "ok"
    assert kinds.count("mode:heap") == 4 and kinds.count("mode:fresh pages") == 6
    # each held trial goes to the check as it is made, its round right after it
    assert check.mode_kinds.count("mode:heap") == 4 and set(check.handed) == {1}


def test_past_the_time_budget_a_mode_gets_its_held_pairs_and_no_more(bench_server, store, test_drivers):
    spent = Deadline(0.0, ManualClock(1.0))
    check = _Check(after=None, mode_after={"heap": None, "fresh pages": None})
    _, kinds = _paced(bench_server, store, test_drivers, check, shipped("get-small", count=5, size=200_000), spent)
    # RunOptions' mode_trials (2) each, however undecided
    assert kinds.count("mode:heap") == kinds.count("mode:fresh pages") == 2
