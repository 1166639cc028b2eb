"""crosscheck --bare: each timed trial of a cell beside a round of the same client in a plain loop."""

from __future__ import annotations

from clientlab import calibrate, manifest
from clientlab.runner import RunOptions
from clientlab.stats import StopRule
from clientlab.testsupport import shipped

PLAIN = "python-urllib"   # a real driver on the shared Python helper, which has the calibration loop


def real(driver_id: str) -> manifest.Driver:
    return next(d for d in manifest.discover()[0] if d.id == driver_id)


def test_each_timed_trial_is_paired_with_a_round_of_the_same_client_in_a_plain_loop(store):
    options = RunOptions(warmup=1, stop=StopRule(min_trials=3, max_trials=3), placement="free", host_probe=False)
    run_id, cells = calibrate.run(store, [real(PLAIN)], [shipped("get-small", count=40)], options)
    (cal,) = cells
    assert cal.lab is not None and cal.lab.status == "ok" and cal.problem is None
    assert len(cal.pairs) == 3 and cal.warmup_rounds >= calibrate.WARMUP_MIN_ROUNDS
    assert all(p.bare.requests == 40 and p.bare.wall_s > 0 and p.ratio > 0 for p in cal.pairs)
    assert cal.ratio_summary is not None and cal.within_target is not None
    # the pairs are kept with the run, apart from the cells' figures
    stored = store.run(run_id)["config"]["calibration"]
    assert stored[0]["driver"] == PLAIN and len(stored[0]["pairs"]) == 3
    assert {"lab_faults", "bare_faults", "lab_wakeups", "bare_wakeups"} <= set(stored[0]["pairs"][0])


def test_a_driver_without_a_calibration_loop_is_measured_and_says_it_has_none(store, test_drivers):
    options = RunOptions(warmup=0, stop=StopRule(min_trials=1, max_trials=1), placement="free", host_probe=False)
    _, (cal,) = calibrate.run(store, [test_drivers["python-fake-no-bare"]], [shipped("get-small", count=10)],
                              options)
    assert cal.lab is not None and cal.lab.status == "ok"
    assert cal.pairs == [] and cal.problem is not None and cal.problem.startswith("no calibration loop")
    assert cal.within_target is None


def test_a_cell_off_its_loop_says_what_its_trials_did_differently():
    from clientlab.calibrate import BareRound, Calibration, Pair
    from clientlab.store import Trial

    def pair(lab_faults: int, bare_faults: int) -> Pair:
        lab = Trial(kind="timed", idx=0, ok=True, wall_s=0.3, user_s=0.2, page_faults=lab_faults, wakeups=10)
        return Pair(lab, BareRound(0.25, 1000, 0.2, bare_faults, 12))

    cal = Calibration("go-net-http", "get-json-335k", pairs=[pair(6900, 600), pair(7000, 500), pair(6800, 700)])
    assert cal.differences() == ["6.9 page faults a request against 0.6"]   # wake-ups alike: not named
    assert Calibration("x", "y", pairs=[pair(10, 12)]).differences() == []
