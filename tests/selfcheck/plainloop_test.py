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


def test_a_large_answers_allocator_modes_reach_the_show_and_both_exports_for_both_sides(store, test_drivers):
    import csv
    import dataclasses
    import io

    from clientlab.export import csv_export, json_export
    from clientlab.output.cellfigures import allocator_modes_line, throughput

    options = dataclasses.replace(_options(3), mode_trials=2)
    run_id, _ = plainloop.run(store, [test_drivers["python-fake-reference"]],
                              [shipped("get-small", count=5, size=200_000)], options)
    [cell] = store.cell_records(run_id)
    # both sides in each mode, and how many of each side's own trials or rounds fell into it
    modes = {m.mode: m for m in cell.figures.plain.modes}
    assert set(modes) == {"heap", "fresh pages"}
    heap, fresh = modes["heap"], modes["fresh pages"]
    assert heap.pairs == fresh.pairs == 2 and all(m.lab_s_per_request and m.plain_s_per_request for m in modes.values())
    assert heap.lab_own + fresh.lab_own == heap.lab_own_of == 3
    assert heap.plain_own + fresh.plain_own == heap.plain_own_of == 3
    # these options keep one process a cell: the lab's side counts that one process (a mode is a
    # process's), and each mode keeps its pairs one by one (what tells one figure from two)
    assert heap.lab_processes_of == 1 and heap.lab_processes + fresh.lab_processes <= 1
    assert len(heap.lab_samples) == len(fresh.plain_samples) == 2
    [row] = csv.DictReader(io.StringIO(csv_export.render(store, run_id)))
    for name, m in (("heap", heap), ("fresh", fresh)):
        assert float(row[f"plain_{name}_plain_per_s"]) == pytest.approx(1 / m.plain_s_per_request)
        assert float(row[f"plain_{name}_lab_per_s"]) == pytest.approx(1 / m.lab_s_per_request)
        assert row[f"plain_{name}_pairs"] == "2" and row[f"plain_{name}_plain_own_of"] == "3"
        assert row[f"plain_{name}_lab_processes_of"] == "1"
    assert row["plain_decision"] == "not decided" and row["plain_pairs"] == "3"
    exported = json_export.document(store, run_id)["cells"][0]["figures"]["plain"]["modes"]
    assert {m["mode"]: m["plain_own"] for m in exported} == {"heap": heap.plain_own, "fresh pages": fresh.plain_own}
    # the cell's own figure: both allocator modes where they cost apart, with what sets the mode
    # for a user's program under the table; one figure where they did not, and its notes say why
    if cell.figures.modes:
        assert [m.label for m in cell.figures.modes] == ["heap", "fresh pages"]
        assert " heap (" in throughput(cell.figures) and " fresh pages (" in throughput(cell.figures)
        assert "What sets the mode in a user's program" in (allocator_modes_line([cell]) or "")
        assert row["mode1_label"] == "heap" and row["mode2_label"] == "fresh pages"
    else:
        assert any(n.startswith(("one figure", "one allocator mode")) for n in cell.figures.notes or ())
        assert allocator_modes_line([cell]) is None and row["mode1_label"] == ""


def test_a_plain_round_and_the_trial_beside_it_never_make_fewer_gets_than_the_checks_floor(store, test_drivers):
    import dataclasses

    # a trial budget this short fits a handful of GETs: the floor holds every trial and round up
    options = plainloop.check_options(dataclasses.replace(_options(3), trial_seconds=0.001))
    assert options.min_requests == plainloop.ROUND_MIN_REQUESTS
    run_id, (cal,) = plainloop.run(store, [test_drivers["python-fake-reference"]],
                                   [shipped("get-small", count=2000)], options)
    assert cal.problem is None and len(cal.pairs) == 3
    floor = plainloop.ROUND_MIN_REQUESTS
    assert all(p.bare.requests == floor for p in cal.pairs)
    [cell] = store.cells(run_id)
    assert all(t["work_requests"] == floor for t in store.trials(cell["id"]) if t["kind"] in ("timed", "warmup"))
    assert any(f"scaled to fit a 0.001 s trial (at least {floor})" in n for n in cell["figures"]["notes"])
    # never more than the scenario's own count
    _, (few,) = plainloop.run(store, [test_drivers["python-fake-reference"]], [shipped("get-small", count=50)],
                              options)
    assert all(p.bare.requests == 50 for p in few.pairs)
