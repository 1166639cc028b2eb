"""A cell's figures from its trials: when its trials are two modes, and when they are one figure."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

from clientlab.analysis.figures import allocator_modes, cell_figures, own_processes, plain_verdict
from clientlab.record import PlainMode
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


def test_allocator_modes_are_one_figure_only_where_their_own_spread_says_they_cost_the_same():
    own = [_trial(0.10, 0.0)] * 3
    # 4 % apart, each mode's trials spread wider than that: their intervals overlap, one figure
    held = [_held("heap", 0.100, 0.0), _held("heap", 0.106, 0.0),
            _held("fresh pages", 0.104, 82.0), _held("fresh pages", 0.108, 82.0)]
    modes, why = allocator_modes(own + held, REQUESTS)
    assert modes is None and why.startswith("one figure: bodies on the heap and bodies mapped anew cost the same "
                                            "within their spread (their intervals overlap: heap 103 (100–106), "
                                            "fresh pages 106 (104–108) µs a request")
    # 4 % apart on trials that agree within 0.2 %: two figures, where a fixed 10 % would have shown one
    held = [_held("heap", 0.1000, 0.0), _held("heap", 0.1002, 0.0),
            _held("fresh pages", 0.1040, 82.0), _held("fresh pages", 0.1042, 82.0)]
    modes, why = allocator_modes(own + held, REQUESTS)
    assert why is None and modes is not None and round(REQUESTS / modes.fresh.median) == 9_606


def _in(process: int, trial: Trial) -> Trial:
    return dataclasses.replace(trial, process=process)


def test_the_cells_own_processes_are_counted_by_mode_and_one_that_changed_mode_is_said():
    # three processes: the first kept bodies on the heap, the second mapped them anew, the third
    # changed mode in the middle of its life
    own = [_in(0, _trial(0.10, 0.0)), _in(0, _trial(0.10, 0.0)), _in(1, _trial(0.25, 82.0)),
           _in(2, _trial(0.10, 0.0)), _in(2, dataclasses.replace(_trial(0.25, 82.0), idx=4))]
    held = [_held("heap", 0.10, 0.0)] * 2 + [_held("fresh pages", 0.25, 82.0)] * 2
    heap, fresh = cell_figures(own + held, "requests", REQUESTS, None).modes
    assert (heap.processes, heap.processes_of, heap.trials) == (1, 3, 3)
    assert (fresh.processes, fresh.processes_of, fresh.trials) == (1, 3, 2)
    from clientlab.analysis.figures import own_processes
    from clientlab.output.cellfigures import held_modes

    assert own_processes(own, REQUESTS).changes == (
        "process 3 changed allocator mode in the middle of its life: trial 0 heap, trial 4 fresh pages",)
    assert held_modes(heap, fresh, "req/s") == ("10,000 heap (1 of 3 processes) / 4,000 fresh pages (1 of 3 "
                                                "processes) req/s, 1 process changed mode mid-life")
    # trials stored before they said their process are counted as trials, and say so
    heap, fresh = cell_figures([dataclasses.replace(t, process=None) for t in own] + held, "requests", REQUESTS,
                               None).modes
    assert heap.processes is None and held_modes(heap, fresh, "req/s").startswith("10,000 heap (3 of 5 trials)")


def test_bodies_are_mapped_anew_when_their_faults_cover_half_their_pages_where_glibc_has_two_modes():
    from clientlab.analysis.figures import mapped_anew

    assert mapped_anew(41 * REQUESTS, REQUESTS, BODY * REQUESTS) is True     # 82 pages a body
    assert mapped_anew(40 * REQUESTS, REQUESTS, BODY * REQUESTS) is False
    assert mapped_anew(None, REQUESTS, BODY * REQUESTS) is None               # faults not read
    # 12 B always on the heap, 40 MiB always mapped anew: no mode to be in, whatever the faults
    assert mapped_anew(0, REQUESTS, 12 * REQUESTS) is None
    big = 40 * 2**20
    assert mapped_anew(big // 4096 * REQUESTS, REQUESTS, big * REQUESTS) is None
    trials = [_in(0, _trial(0.10, 0.0)), dataclasses.replace(_in(1, _trial(0.25, 82.0)), page_faults=None)]
    assert own_processes(trials, REQUESTS) is None   # a process whose mode is not known is in none


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


def _held_beside_plain(mode: str, decision: str, own: tuple[int, int], apart: float) -> PlainMode:
    """A mode held on purpose: its decision, how many of the cell's own 5 pairs had the lab's and
    the loop's side in it, and its seconds a request (`apart` times the heap's)."""
    samples = tuple(1e-4 * apart * (1 + k / 1000) for k in range(5))
    return PlainMode(mode=mode, lab_s_per_request=1e-4 * apart, plain_s_per_request=1e-4 * apart, ratio=1.0,
                     ratio_ci_low=0.99, ratio_ci_high=1.01, pairs=5, decision=decision, lab_own=own[0],
                     lab_own_of=5, plain_own=own[1], plain_own_of=5, lab_samples=samples, plain_samples=samples)


def test_a_cell_with_two_allocator_figures_is_judged_in_each_mode_like_for_like():
    # the lab's process on the heap, the loop's fresh: its own pairs decide nothing; both modes within
    across = (_held_beside_plain("heap", "within", (5, 0), 1.0), _held_beside_plain("fresh pages", "within", (0, 5), 3.0))
    assert plain_verdict("off", across) == "within"
    assert plain_verdict("within", (across[0], replace(across[1], decision="off"))) == "off"
    assert plain_verdict("within", (across[0], replace(across[1], decision="not decided"))) == "not decided"
    # every own pair had both sides on the heap: they judge the heap with its held pairs
    heap = (_held_beside_plain("heap", "not decided", (5, 5), 1.0), _held_beside_plain("fresh pages", "within", (0, 0), 3.0))
    assert plain_verdict("within", heap) == "within"
    assert plain_verdict("off", heap) == "off"
    # the held pairs and the own pairs of one mode disagree: that mode is not decided
    assert plain_verdict("off", (replace(heap[0], decision="within"), heap[1])) == "not decided"
    # modes that cost the same on each side are one figure: the own pairs' decision alone
    same = (_held_beside_plain("heap", "within", (5, 0), 1.0), _held_beside_plain("fresh pages", "within", (0, 5), 1.0))
    assert plain_verdict("off", same) == "off"
