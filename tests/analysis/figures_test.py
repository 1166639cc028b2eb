"""A cell's figures from its trials: when its trials are two modes, and when they are one figure."""

from __future__ import annotations

import dataclasses

from clientlab.analysis.figures import allocator_modes, cell_figures
from clientlab.store import Trial

REQUESTS = 1000
BODY = 335_114


def _trial(wall_s: float, faults_a_request: float) -> Trial:
    return Trial(kind="timed", idx=0, ok=True, wall_s=wall_s, user_s=wall_s / 2, sys_s=0.0,
                 work_bytes=BODY * REQUESTS, page_faults=int(faults_a_request * REQUESTS))


def _held(mode: str, wall_s: float, faults_a_request: float) -> Trial:
    return dataclasses.replace(_trial(wall_s, faults_a_request), kind=f"mode:{mode}")


def test_both_allocator_modes_held_on_purpose_are_shown_with_the_cells_own_trials_in_each():
    # the cell's processes all kept bodies on the heap; held in the other mode, it is half as fast
    own = [_trial(0.10, 0.0), _trial(0.11, 0.0), _trial(0.10, 0.0)]
    held = [_held("heap", 0.10, 0.0), _held("heap", 0.10, 0.0),
            _held("fresh pages", 0.21, 82.0), _held("fresh pages", 0.20, 82.0)]
    figures = cell_figures(own + held, "requests", REQUESTS, None)
    heap, fresh = figures.modes
    assert (heap.label, heap.trials, round(heap.throughput)) == ("heap", 3, 10_000)
    assert (fresh.label, fresh.trials, round(fresh.throughput)) == ("fresh pages", 0, 4_878)
    # the cell's own figure stays its own trials' median, never the held processes'
    assert figures.trials == 3 and round(figures.throughput) == 10_000


def test_a_runtime_whose_bodies_ignore_glibcs_tunables_has_one_mode_and_says_why():
    # held "on the heap", the process still took fresh pages for every body: not glibc's malloc
    own = [_trial(0.20, 82.0)] * 3
    held = [_held("heap", 0.20, 82.0)] * 2 + [_held("fresh pages", 0.21, 82.0)] * 2
    modes, why = allocator_modes(own + held, REQUESTS)
    assert modes is None and "do not come from glibc's malloc" in why
    assert cell_figures(own + held, "requests", REQUESTS, None).modes is None


def test_allocator_modes_that_cost_the_same_are_one_figure():
    own = [_trial(0.10, 0.0)] * 3
    held = [_held("heap", 0.100, 0.0)] * 2 + [_held("fresh pages", 0.104, 82.0)] * 2
    modes, why = allocator_modes(own + held, REQUESTS)
    assert modes is None and why.startswith("one figure: bodies on the heap and bodies mapped anew cost the same")


def test_trials_in_two_allocator_states_that_cost_differently_are_two_modes():
    # bodies mapped anew (82 faults a request, a page per 4 KB) take 2.5 times as long as on the heap
    trials = [_trial(0.10, 0.0), _trial(0.11, 0.0), _trial(0.25, 82.0), _trial(0.26, 82.0), _trial(0.10, 0.0)]
    figures = cell_figures(trials, "requests", REQUESTS, None)
    assert figures.modes is not None
    fast, slow = figures.modes
    assert (fast.trials, slow.trials) == (3, 2)
    assert round(fast.throughput) == 10_000 and round(slow.throughput) == 3_922


def test_two_allocator_states_at_the_same_cost_are_one_figure_not_two_modes():
    # the faults tell the processes apart, the times do not: one figure
    trials = [_trial(0.100, 0.0), _trial(0.102, 0.0), _trial(0.101, 60.0), _trial(0.099, 60.0), _trial(0.100, 60.0)]
    assert cell_figures(trials, "requests", REQUESTS, None).modes is None


def test_the_figures_are_stored_under_the_keys_and_in_the_order_stores_always_had():
    trials = [_trial(0.10, 0.0), _trial(0.11, 0.0), _trial(0.12, 0.0)]
    assert list(cell_figures(trials, "requests", REQUESTS, 0.2).to_json()) == [
        "throughput", "unit", "requests", "work_bytes", "wall_s", "precision", "relative_spread", "noisy",
        "outliers", "modes", "trials", "cpu_user_s", "cpu_precision", "cpu_sys_s", "page_faults", "peak_rss_kb",
        "setup_s", "startup_s", "server"]
