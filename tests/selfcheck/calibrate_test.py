"""crosscheck --bare: each timed trial of a cell beside a round of the same client in a plain loop."""

from __future__ import annotations

import pytest

from clientlab.analysis.stats import StopRule
from clientlab.drivers import manifest
from clientlab.runner import RunOptions
from clientlab.selfcheck import calibrate
from tests.support.fixtures import shipped


# compares the lab's figures with a plain loop's: run alone, not beside other tests (test.sh)
pytestmark = pytest.mark.serial


PLAIN = "python-requests"   # a real driver on the shared Python helper, which has the calibration loop


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


def _pair(lab_s: float, bare_s: float, lab_faults: int = 10, bare_faults: int = 12, lab_wakeups: int = 10,
          bare_wakeups: int = 12):
    from clientlab.selfcheck.calibrate import BareRound, Pair
    from clientlab.store import Trial

    lab = Trial(kind="timed", idx=0, ok=True, wall_s=lab_s * 1000, user_s=0.2, page_faults=lab_faults,
                wakeups=lab_wakeups)
    return Pair(lab, BareRound(bare_s * 1000, 1000, 0.2, bare_faults, bare_wakeups))


def test_a_cell_off_its_loop_says_what_its_trials_did_differently():
    from clientlab.selfcheck.calibrate import Calibration

    pairs = [_pair(3e-4, 2.5e-4, lab_faults=f, bare_faults=b) for f, b in ((6900, 600), (7000, 500), (6800, 700))]
    cal = Calibration("go-net-http", "get-json-335k", pairs=pairs)
    # no pair alike: all are compared, and the note names what differs (wake-ups alike: not named)
    assert cal.compared == pairs and abs(cal.ratio_summary.median - 1.2) < 1e-9
    assert cal.differences() == ["6.9 page faults a request against 0.6"]
    assert Calibration("x", "y", pairs=[_pair(3e-4, 3e-4)]).differences() == []


def test_pairs_in_two_connection_modes_are_left_out_and_counted_never_averaged_in():
    from clientlab.selfcheck.calibrate import Calibration

    # six pairs alike (the answer waited whole: no wake-ups), four where the lab's client slept for
    # the rest of each answer (0.55 wake-ups a request) and took twice the time
    alike = [_pair(7.2e-5, 7.0e-5, lab_wakeups=12, bare_wakeups=15) for _ in range(6)]
    asleep = [_pair(1.5e-4, 7.0e-5, lab_wakeups=550, bare_wakeups=15) for _ in range(4)]
    cal = Calibration("php-curl", "get-json-335k", pairs=alike + asleep)
    assert cal.compared == alike and cal.within_target
    assert cal.differences() == ["4 of 10 pairs left out, their sides in two modes "
                                 "(0.6 wake-ups a request against 0.0)"]
    assert [p["alike"] for p in cal.to_dict()["pairs"]] == [True] * 6 + [False] * 4
    # fewer than three alike: every pair is compared, and the difference named
    few = Calibration("php-curl", "get-json-335k", pairs=alike[:2] + asleep)
    assert few.compared == few.pairs and not few.within_target
    assert few.differences() == ["0.6 wake-ups a request against 0.0"]
