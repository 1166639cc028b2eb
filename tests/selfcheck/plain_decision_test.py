"""The plain-loop check's verdict on its pairs, its modes, and a known cause beside a miss."""

from __future__ import annotations

import dataclasses

import pytest

from clientlab.analysis import stats
from clientlab.drivers import manifest
from clientlab.errors import LabInputError
from clientlab.output.calibration import calibration_table
from clientlab.selfcheck.calibrate import NOT_DECIDED, OFF, WITHIN, BareRound, Calibration, Pair, decide
from clientlab.store import Trial


def _pair(lab_s: float, plain_s: float, requests: int = 1000, kind: str = "timed", body: int = 12,
          lab_faults: int = 10, plain_faults: int = 10) -> Pair:
    lab = Trial(kind=kind, idx=0, ok=True, wall_s=lab_s * requests, user_s=0.1, page_faults=lab_faults,
                work_bytes=body * requests)
    return Pair(lab, BareRound(plain_s * requests, requests, 0.1, plain_faults, 10))


def test_a_ratio_is_within_or_off_only_when_its_interval_lies_wholly_on_one_side_of_a_bound():
    assert decide(stats.summarize([1.01, 0.98, 1.03, 1.00, 0.99])) == WITHIN
    assert decide(stats.summarize([1.30, 1.25, 1.41, 1.33, 1.28])) == OFF
    assert decide(stats.summarize([0.70, 0.75, 0.72, 0.69, 0.71])) == OFF
    # an interval that straddles 1.10 says nothing either way
    assert decide(stats.summarize([1.05, 1.12, 1.08, 1.02, 1.15])) == NOT_DECIDED
    assert decide(None) == NOT_DECIDED


def test_three_or_four_pairs_decide_nothing_however_close_they_lie():
    # their min–max covers the median 75 % and 88 % of the time: below the 90 % the check asks
    assert decide(stats.summarize([1.00, 1.01, 0.99])) == NOT_DECIDED
    assert decide(stats.summarize([1.00, 1.01, 0.99, 1.00])) == NOT_DECIDED
    assert decide(stats.summarize([1.00, 1.01, 0.99, 1.00, 1.00])) == WITHIN


def test_a_calibration_keeps_its_decision_and_each_allocator_modes_with_its_figures():
    cal = Calibration("python-pycurl", "get-json-335k", reference="plain",
                      pairs=[_pair(4e-4, 4e-4 / r) for r in (1.0, 1.02, 0.98, 1.01, 0.99)])
    heap = [_pair(3.0e-4, 3.0e-4, kind="mode:heap") for _ in range(5)]
    fresh = [_pair(6.0e-4, 4.0e-4 * f, kind="mode:fresh pages") for f in (1.0, 1.01, 0.99, 1.02, 0.98)]
    cal.mode_pairs = {"heap": heap, "fresh pages": fresh}
    kept = cal.to_figure()
    assert kept["decision"] == WITHIN and kept["ratio_ci_confidence"] > 0.9
    modes = {m["mode"]: m for m in kept["modes"]}
    assert modes["heap"]["decision"] == WITHIN and modes["heap"]["pairs"] == 5
    assert modes["fresh pages"]["decision"] == OFF and modes["fresh pages"]["ratio"] == pytest.approx(1.5)


def test_the_table_shows_both_sides_in_each_allocator_mode_with_the_verdict_per_mode():
    body = 335_114
    mapped = body // 4096 * 1000   # a page fault for every 4 KB of every body
    cal = Calibration("perl-www-curl", "get-json-335k", reference="plain",
                      pairs=[_pair(1.26e-4, 1.26e-4 * 2.6, body=body, lab_faults=10, plain_faults=mapped)
                             for _ in range(5)])
    cal.mode_pairs = {"heap": [_pair(1.25e-4, 1.25e-4, body=body, kind="mode:heap") for _ in range(5)],
                      "fresh pages": [_pair(3.3e-4, 3.3e-4, body=body, kind="mode:fresh pages") for _ in range(5)]}
    _, notes = calibration_table([cal], "t")
    [line] = notes
    # the lab's trials here do not say which process ran them: counted as trials; the loop's rounds
    # are fresh processes each
    assert "lab 8,000 heap (5 of 5 trials) / 3,030 fresh pages (0 of 5 trials)" in line
    assert "plain 8,000 heap (0 of 5 processes) / 3,030 fresh pages (5 of 5 processes)" in line
    assert "heap 1.00 (1.00–1.00, 5 held pairs) within, fresh pages 1.00 (1.00–1.00, 5 held pairs) within" in line
    # the lab's five trials in one process are one process on the heap (a mode is a process's)
    for p in cal.pairs:
        p.lab.process = 0
    [line] = calibration_table([cal], "t")[1]
    assert "lab 8,000 heap (1 of 1 process) / 3,030 fresh pages (0 of 1 process)" in line
    kept = {m["mode"]: m for m in cal.to_figure()["modes"]}
    assert (kept["heap"]["lab_processes"], kept["heap"]["lab_processes_of"], kept["heap"]["lab_own"]) == (1, 1, 5)
    assert kept["fresh pages"]["plain_samples"] == [pytest.approx(3.3e-4)] * 5


def test_each_sides_allocator_mode_is_told_as_the_cells_own_processes_are():
    body = 335_114
    mapped = body // 4096 * 1000   # a page fault for every 4 KB of every body
    cal = Calibration("perl-www-curl", "get-json-335k", reference="plain",
                      pairs=[_pair(1e-4, 2e-4, body=body, lab_faults=10, plain_faults=mapped) for _ in range(3)])
    assert cal.fresh_pages() == ((0, 3), (3, 3))
    # glibc maps every body of 40 MiB anew: no side is in a mode, as no process of the cell is
    big = 40 * 2**20
    pairs = [_pair(1e-2, 1e-2, body=big, lab_faults=big // 4096 * 1000, plain_faults=big // 4096 * 1000)
             for _ in range(3)]
    cal = Calibration("perl-www-curl", "get-40m", reference="plain",
                      pairs=[Pair(dataclasses.replace(p.lab, process=i), p.bare) for i, p in enumerate(pairs)])
    assert cal.lab_processes() is None and cal.fresh_pages() is None


def test_a_known_cause_stands_beside_a_miss_which_still_counts_as_off():
    cal = Calibration("node-fetch", "get-small", reference="plain",
                      pairs=[_pair(1.5e-4, 1e-4 / r) for r in (1.0, 1.02, 0.98, 1.01, 0.99)],
                      note="V8 compiles the fetch path over minutes (docs/evidence/truth.md#x)")
    assert cal.decision == OFF
    _, notes = calibration_table([cal], "t")
    assert notes == ["node-fetch × get-small: lab 50% slower; known cause: V8 compiles the fetch path over "
                     "minutes (docs/evidence/truth.md#x)"]
    assert cal.to_figure()["ratio"] == pytest.approx(1.5)


def _manifest(tmp_path, notes: str) -> manifest.Driver:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "driver.toml").write_text('id = "python-mine"\nlanguage = "python"\nlibrary = "mine"\n'
                                        'description = "mine"\nrun = ["{here}/run"]\ncapabilities = []\n' + notes)
    return manifest.load_manifest(folder / "driver.toml")


def test_a_manifests_plain_note_names_its_evidence_and_the_scenarios_it_holds_for(tmp_path):
    driver = _manifest(tmp_path, '[[plain_notes]]\nreason = "pools anew"\nevidence = "docs/evidence/truth.md#a"\n'
                                 'scenarios = ["get-json-335k"]\n')
    assert driver.plain_note("get-json-335k[json-335k]") == "pools anew (docs/evidence/truth.md#a)"
    assert driver.plain_note("get-small") is None


def test_a_plain_note_without_evidence_is_refused(tmp_path):
    with pytest.raises(LabInputError, match="plain_notes.0.evidence"):
        _manifest(tmp_path, '[[plain_notes]]\nreason = "pools anew"\nevidence = "trust me"\n')


def test_the_truth_verdict_counts_a_cell_with_a_known_cause_as_off_and_shows_the_cause():
    from clientlab.experiment import spec
    from clientlab.experiment.verdict import REFUTED, judge
    from clientlab.record import Cell, CellFigures, PlainCheck, WallStats

    def cell(driver: str, decision: str, ratio: float, note: str | None = None) -> Cell:
        plain = PlainCheck(ratio=ratio, ratio_ci_low=ratio - 0.02, ratio_ci_high=ratio + 0.02, compared=5, pairs=5,
                           decision=decision, note=note)
        figures = CellFigures(wall_s=WallStats(median=0.1), throughput=10.0, unit="req/s", plain=plain)
        return Cell(driver=driver, scenario="get-small", status="ok", params={"part": "p"}, figures=figures)

    claim = spec.Claim.model_validate({"says": "s", "check": "matches_plain", "a": {"part": "p"}, "tolerance": 0.10})
    verdict = judge(claim, [cell("x", "within", 1.0), cell("y", "off", 1.5, "a JIT (docs/evidence/truth.md)")], {})
    assert verdict.outcome == REFUTED
    assert ("y × get-small: lab ÷ plain 1.50 (CI 1.48–1.52, 5 pairs): refuted; known cause: a JIT "
            "(docs/evidence/truth.md)") in verdict.evidence
    # the check's own verdict rules: an interval inside the bounds but of too little coverage decides nothing
    undecided = judge(claim, [cell("z", "not decided", 1.0)], {})
    assert undecided.outcome == "not decided"


def _cells(*ratios: tuple[float, ...], reference: str = "plain") -> list[Calibration]:
    return [Calibration(f"d{i}", "get-small", reference=reference, pairs=[_pair(1e-4 * r, 1e-4) for r in rs])
            for i, rs in enumerate(ratios)]


WITHIN_5 = (1.00, 1.01, 0.99, 1.02, 0.98)
OFF_5 = (1.30, 1.31, 1.29, 1.32, 1.28)
STRADDLING_5 = (1.05, 1.12, 1.08, 1.02, 1.15)   # median 1.08, within by the median alone


def test_the_plain_checks_summary_and_exit_code_follow_the_cells_decisions_not_their_medians():
    from clientlab.cli.checks import check_exit_code
    from clientlab.output.calibration import verdicts_line

    assert check_exit_code(_cells(WITHIN_5, WITHIN_5)) == 0
    assert check_exit_code(_cells(WITHIN_5, OFF_5, STRADDLING_5)) == 1
    # a median of 1.08 was "within" by the old rule: its interval straddles 1.10, so it is not decided
    straddling = _cells(WITHIN_5, STRADDLING_5)
    assert check_exit_code(straddling) == 4
    assert verdicts_line(straddling).startswith("1 of 2 cells within 10% of the library's plain loop")
    assert "0 off (wholly outside); 1 not decided" in verdicts_line(straddling)
    assert verdicts_line(straddling).endswith(": d1 × get-small (5 pairs)")
    failed = Calibration("d9", "get-small", reference="plain", problem="the plain loop exited 3")
    assert verdicts_line([*_cells(WITHIN_5), failed]).endswith(": d9 × get-small (no ratio: the plain loop exited 3)")
    # three pairs however close, or a cell whose loop failed (no ratio), decide nothing either
    failed = Calibration("d9", "get-small", reference="plain", problem="the plain loop exited 3")
    assert check_exit_code(_cells((1.0, 1.0, 1.0))) == 4
    assert check_exit_code([*_cells(WITHIN_5), failed]) == 4


def test_the_table_colours_and_explains_a_cell_by_the_same_verdict_as_the_exit_code():
    [straddling] = _cells(STRADDLING_5)
    table, notes = calibration_table([straddling], "t")
    assert notes == ["d0 × get-small: not decided: its CI 1.02–1.15 straddles a bound of 0.90–1.10"]
    [few] = _cells((1.0, 1.0, 1.0))
    _, notes = calibration_table([few], "t")
    assert notes == ["d0 × get-small: not decided: 3 pairs' CI covers the median 75% of the time, under 90%"]


def test_the_bare_check_keeps_judging_its_cells_by_the_median():
    from clientlab.cli.checks import check_exit_code

    # its cells end by their own stop rule: three pairs within by the median pass
    assert check_exit_code(_cells((1.0, 1.0, 1.0), STRADDLING_5, reference="bare")) == 0
    assert check_exit_code(_cells(WITHIN_5, OFF_5, reference="bare")) == 1


def test_a_cell_whose_modes_cost_apart_is_judged_and_exits_mode_by_mode_not_across_them():
    from clientlab.cli.checks import check_exit_code

    body = 335_114
    mapped = body // 4096 * 1000   # a page fault for every 4 KB of every body
    # the lab's kept process keeps bodies on the heap, each fresh loop maps them anew: 0.38 across
    # the modes, which is the modes' difference, not the lab's
    cal = Calibration("python-aiohttp", "get-json-335k", reference="plain",
                      pairs=[_pair(1.25e-4, 3.3e-4 * f, body=body, lab_faults=10, plain_faults=mapped)
                             for f in (1.0, 1.01, 0.99, 1.02, 0.98)])

    def held(lab_s: float, plain_s: float, mode: str) -> list[Pair]:
        return [_pair(lab_s, plain_s * f, body=body, kind=f"mode:{mode}") for f in (1.0, 1.01, 0.99, 1.02, 0.98)]

    cal.mode_pairs = {"heap": held(1.25e-4, 1.25e-4, "heap"), "fresh pages": held(3.3e-4, 3.3e-4, "fresh pages")}
    assert cal.decision == OFF and cal.verdict == WITHIN
    assert check_exit_code([cal]) == 0
    [line] = calibration_table([cal], "t")[1]
    assert "within by its two allocator modes, each side held in each (its pairs at large, 0.38," in line
    # off in one mode like for like: off, whatever the pairs across the modes read
    cal.mode_pairs["fresh pages"] = held(3.3e-4, 4.0e-4, "fresh pages")
    assert cal.verdict == OFF and check_exit_code([cal]) == 1
    # modes that cost the same on each side are one figure: the pairs' own decision stands
    cal.mode_pairs = {"heap": held(1.25e-4, 1.25e-4, "heap"), "fresh pages": held(1.25e-4, 1.25e-4, "fresh pages")}
    assert cal.verdict == cal.decision == OFF


def test_a_paced_check_wants_more_pairs_held_in_a_mode_until_that_mode_is_decided_or_at_its_most():
    from clientlab.selfcheck.plainloop import MOST_PAIRS, PlainBeside

    body = 335_114
    mapped = body // 4096 * 1000
    said: list[str] = []
    beside = PlainBeside(None, decide=True, on_note=said.append)
    cal = beside.calibration("python-httpx", "get-json-335k")
    cal.pairs = [_pair(1.25e-4, 3.3e-4 * f, body=body, plain_faults=mapped) for f in (1.0, 1.01, 0.99, 1.02, 0.98)]

    def held(lab_s: float, plain_s: float, mode: str, ratios) -> list[Pair]:
        return [_pair(lab_s, plain_s / r, body=body, kind=f"mode:{mode}") for r in ratios]

    straddling = (1.05, 1.12, 1.08, 1.02, 1.15)
    # the modes cost apart: the heap mode's held pairs straddle 1.10, the fresh pages' lie within
    cal.mode_pairs = {"heap": held(1.25e-4, 1.25e-4, "heap", straddling),
                      "fresh pages": held(3.3e-4, 3.3e-4, "fresh pages", (1.0, 1.01, 0.99, 1.02, 0.98))}
    assert not beside.mode_decided("python-httpx", "get-json-335k", "heap")
    # one mode decided does not stop the other
    assert beside.mode_decided("python-httpx", "get-json-335k", "fresh pages")
    assert cal.verdict == NOT_DECIDED
    # pairs that decide the heap mode end its pairs, and the cell's verdict is decided
    cal.mode_pairs["heap"] += held(1.25e-4, 1.25e-4, "heap", (1.04, 1.03, 1.05, 1.04, 1.03, 1.04, 1.05, 1.03, 1.04))
    assert beside.mode_decided("python-httpx", "get-json-335k", "heap") and cal.verdict == WITHIN
    assert said and "heap mode: within after 14 held pairs" in said[-1]
    # a mode that stays undecided stops at the check's most pairs
    cal.mode_pairs["heap"] = held(1.25e-4, 1.25e-4, "heap", straddling * 4)
    assert len(cal.mode_pairs["heap"]) == MOST_PAIRS and beside.mode_decided("python-httpx", "get-json-335k", "heap")
    # modes that cost the same on both sides are one figure: the cell's own pairs judge it, none held wanted
    cal.mode_pairs = {"heap": held(1.25e-4, 1.25e-4, "heap", straddling),
                      "fresh pages": held(1.25e-4, 1.25e-4, "fresh pages", straddling)}
    assert beside.mode_decided("python-httpx", "get-json-335k", "heap")
