"""The runner end to end: the real bench server, the reference and the faulty test drivers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest

from clientlab.analysis.stats import StopRule
from clientlab.drivers import protocol
from clientlab.measuring.cgroup import Group
from clientlab.measuring.measure import Usage
from clientlab.measuring.warmup import WarmupPolicy
from clientlab.runner import CellGroup, RunOptions
from clientlab.runner.trial import UsageMeter, tree_meter
from tests.support.clock import ManualClock
from tests.support.fixtures import shipped

# warm-up and time budgets follow the clock: run alone, not beside other tests (test.sh)
pytestmark = pytest.mark.serial


REF = "python-fake-reference"


# warm-up as a JIT driver's, without the fresh process's least time (milliseconds of test work)
QUICK_JIT = WarmupPolicy(fresh_min_s=0.0)
# any three warm-ups agree, even while falling
AGREEING = WarmupPolicy(steady=100.0, falling=100.0, fresh_min_s=0.0)


def over_the_run(store, driver, *, warmup: int, trials: int, min_trials: int | None = None,
                 second: str = "post-form",
                 policy: WarmupPolicy = QUICK_JIT) -> tuple[int, RunOptions, list[CellGroup]]:
    """A new run of two cells of one driver (get-small, then `second`) interleaved over the run."""
    options = RunOptions(warmup=warmup, stop=StopRule(min_trials=min_trials or trials, max_trials=trials),
                         placement="free", host_probe=False, interleave="run", warmup_policy=policy)
    groups = [CellGroup([driver], shipped("get-small", count=10)), CellGroup([driver], shipped(second, count=5))]
    return store.start_run({}, {}), options, groups


def test_a_cells_figures_carry_the_drivers_memory_and_versions(cell):
    result, _ = cell(REF, shipped("get-small", count=20))
    assert result.figures.peak_rss_kb > 1000  # a Python interpreter is megabytes
    assert result.versions["http.client"] == "stdlib"


def test_cpu_of_the_timed_phase_is_measured(cell):
    # /proc counts CPU in clock ticks (10 ms): give the driver enough work to register
    result, _ = cell(REF, shipped("get-small", count=1500))
    assert result.figures.cpu_user_s > 0.02
    assert result.figures.cpu_user_s + result.figures.cpu_sys_s <= result.figures.wall_s.max * 1.5


def test_keep_alive_requests_share_one_connection(cell):
    result, trials = cell(REF, shipped("get-small", count=40))
    assert result.status == "ok"
    assert all(t["server"]["connections"] == 1 and t["server"]["requests"] == 40 for t in trials)
    assert trials[-1]["server"]["requests_per_conn"]["max"] == 40


def test_keep_alive_off_opens_a_connection_per_request(cell):
    sc = shipped("get-small", count=30).model_copy(update={"client": shipped("get-small").client.model_copy(
        update={"keep_alive": False})})
    result, trials = cell(REF, sc)
    assert result.status == "ok", result.reason
    assert all(t["server"]["connections"] == 30 for t in trials)


def test_sequential_scenario_records_cycle_time_distribution(cell):
    result, _ = cell(REF, shipped("get-small", count=30))
    cycle = result.figures.server.cycle_ms
    assert 0 < cycle["p50"] <= cycle["p90"] <= cycle["max"]


def test_flooding_stdout_fails_the_cell(cell):
    result, _ = cell("python-fake-flood", shipped("get-small", count=5))
    assert result.status == "failed" and f"more than {protocol.MAX_LINE} bytes on stdout" in result.reason


def test_fresh_process_mode_measures_start_up_every_trial(cell):
    result, trials = cell(REF, shipped("get-small", count=5), fresh_process=True)
    assert result.status == "ok"
    timed = [t for t in trials if t["kind"] == "timed"]
    assert all(t["startup_s"] and t["startup_s"] > 0 for t in timed)


def test_failed_driver_does_not_stop_the_others(bench_server, store, test_drivers):
    from clientlab.runner import lab_run, run_matrix

    drivers = [test_drivers["python-fake-crash"], test_drivers[REF]]
    options = RunOptions(warmup=0, stop=StopRule(min_trials=1, max_trials=1), placement="free")
    with lab_run(store, {}, options) as lab:
        results = run_matrix(lab, drivers, [shipped("get-small", count=5)])
    assert [r.status for r in results] == ["failed", "ok"]
    assert [c["status"] for c in store.cells(lab.run_id)] == ["failed", "ok"]


# -- trial budget, interleaving, disturbed trials, time limits -------------------------------

def test_a_trial_budget_scales_the_count_and_the_figures_say_so(cell):
    result, trials = cell(REF, shipped("get-small"), trial_seconds=0.05)
    assert result.status == "ok", result.reason
    n = result.figures.requests
    assert 1 <= n < 2000 and result.figures.scenario_requests == 2000
    assert trials[0]["kind"] == "verify" and trials[0]["work_requests"] <= 100
    assert all(t["work_requests"] == n for t in trials if t["kind"] == "timed")
    assert any("scaled to fit a 0.05 s trial" in note for note in result.figures.notes)


def test_a_count_the_user_set_is_timed_whole_but_verified_on_a_hundred_requests(cell):
    result, trials = cell(REF, shipped("get-small", count=300), fixed_counts=frozenset({"get-small"}))
    assert result.status == "ok", result.reason
    assert [t["work_requests"] for t in trials if t["kind"] == "verify"] == [100]
    assert all(t["work_requests"] == 300 for t in trials if t["kind"] == "timed")


def test_the_drivers_of_one_scenario_take_turns(bench_server, store, test_drivers):
    from clientlab.runner import CellRunner

    run_id = store.start_run({}, {})
    drivers = [test_drivers[REF], test_drivers["python-fake-no-reuse"]]
    options = RunOptions(warmup=1, stop=StopRule(min_trials=3, max_trials=3), placement="free")
    results = CellRunner(bench_server, store, run_id, options).run_cells(drivers, shipped("get-small", count=10))
    assert [r.status for r in results] == ["ok", "ok"]
    a, b = ([t["id"] for t in store.trials(c["id"]) if t["kind"] == "timed"] for c in store.cells(run_id))
    assert sorted(a + b) == [x for pair in zip(a, b) for x in pair]  # a1 b1 a2 b2 a3 b3


def test_a_spent_time_budget_stops_each_cell_at_its_minimum_of_trials_and_says_so(bench_server, store, test_drivers):
    from clientlab.runner import lab_run, run_matrix

    # precision 0 is never reached: without the budget every cell would run its ten trials
    options = RunOptions(warmup=0, stop=StopRule(min_trials=2, max_trials=10, target_precision=0.0),
                         placement="free", host_probe=False, run_budget_s=0.001)
    with lab_run(store, {}, options) as lab:
        results = run_matrix(lab, [test_drivers[REF], test_drivers["python-fake-no-reuse"]],
                             [shipped("get-small", count=5), shipped("post-form", count=5)])
    assert [r.status for r in results] == ["ok"] * 4
    for result in results:
        assert result.figures.budget_stopped is True
        assert "stopped after 2 timed trials: the run's time budget (0.001 s) was spent" in result.figures.notes
    for c in store.cells(lab.run_id):
        assert [t["kind"] for t in store.trials(c["id"])].count("timed") == 2


def test_past_the_time_budget_a_disturbed_trial_is_kept_not_run_again(bench_server, store, test_drivers):
    from clientlab.runner import CellRunner
    from clientlab.runner.deadline import Deadline

    run_id = store.start_run({}, {})
    options = RunOptions(warmup=0, stop=StopRule(min_trials=2, max_trials=10), placement="free", retries=3,
                         run_budget_s=0.001)
    spent = Deadline(0.0, ManualClock(1.0))   # the run's time is up from the start
    slow_after = _HostReadings(after=2.0)      # every timed trial reads as disturbed
    with CellRunner(bench_server, store, run_id, options, probe_for=lambda _cpu: slow_after) as runner:
        [result] = runner.run_groups([CellGroup([test_drivers[REF]], shipped("get-small", count=5))], spent)
    assert result.status == "ok" and result.figures.disturbed_kept == 2
    [c] = store.cells(run_id)
    assert [t["kind"] for t in store.trials(c["id"])] == ["verify", "timed", "timed"]


def test_without_a_time_budget_the_stop_rule_alone_ends_a_cell(bench_server, store, test_drivers):
    from clientlab.runner import lab_run, run_matrix

    options = RunOptions(warmup=0, stop=StopRule(min_trials=2, max_trials=4, target_precision=0.0),
                         placement="free", host_probe=False)
    with lab_run(store, {}, options) as lab:
        [result] = run_matrix(lab, [test_drivers[REF]], [shipped("get-small", count=5)])
    assert [t["kind"] for t in store.trials(store.cells(lab.run_id)[0]["id"])].count("timed") == 4
    assert result.figures.budget_stopped is False


def test_an_interrupted_run_keeps_the_cells_that_have_their_minimum_of_trials(bench_server, store, test_drivers,
                                                                             monkeypatch):
    from clientlab.runner import CellRunner, SilentEvents

    class CtrlCAtTheFourthTimedTrial(SilentEvents):
        timed = 0

        def trial_done(self, driver, scenario, trial):
            self.timed += trial.kind == "timed"
            if self.timed == 4:   # stored, not yet counted: get-small has two timed trials, post-form one
                raise KeyboardInterrupt

    run_id, options, groups = over_the_run(store, test_drivers[REF], warmup=0, trials=5, min_trials=2)
    with pytest.raises(KeyboardInterrupt), \
            CellRunner(bench_server, store, run_id, options, CtrlCAtTheFourthTimedTrial()) as runner:
        runner.run_groups(groups)
    cells = {c["scenario"]: c for c in store.cells(run_id)}
    assert cells["get-small"]["status"] == "ok"
    assert "the run was interrupted after 2 timed trials" in cells["get-small"]["figures"]["notes"]
    assert (cells["post-form"]["status"], cells["post-form"]["reason"]) == ("failed", "interrupted")


def test_each_part_gets_its_share_of_the_time_left_by_its_weight():
    from clientlab.runner.deadline import Deadline

    clock = ManualClock(100.0)
    assert Deadline(160.0, clock).share(1, 3).end == 120.0    # 60 s left, three equal parts: the next ends in 20 s
    assert Deadline(160.0, clock).share(10, 40).end == 115.0  # 10 of the 40 cells still to run: a quarter of it
    assert Deadline(160.0, clock).share(5, 5).end == 160.0    # the last part takes what is left
    assert Deadline(90.0, clock).share(1, 2).end == 100.0     # already past the end: no time left
    assert Deadline(clock=clock).share(1, 2).end is None
    assert Deadline(100.5, clock).left(1.0) == 0.5 and Deadline(clock=clock).left(1.0) == 1.0
    clock.advance(0.5)
    assert Deadline(100.5, clock).passed() and not Deadline(clock=clock).passed()


def test_a_disturbed_trial_is_run_again_and_kept_apart(cell):
    # the driver's core reads slow after every timed trial: each one is disturbed
    result, trials = cell(REF, shipped("get-small", count=10), retries=2, probe=_HostReadings(after=2.0))
    assert [t["kind"] for t in trials] == ["verify", "disturbed", "disturbed", "timed", "timed"]
    assert trials[1]["problems"][0].startswith("disturbed, run again: the host slowed the driver's core")
    assert all(t["noise"] is not None and "steal_s" in t["noise"] for t in trials)
    assert result.figures.disturbed_trials == 2 and result.figures.disturbed_kept == 2


def test_a_timed_trial_limit_follows_the_verification_pass():
    from clientlab.runner.cell import Cell
    from clientlab.runner.trial import TRIAL_TIMEOUT_FLOOR_S, timed_limit

    sc = shipped("get-small")
    cell = Cell(driver=None, scenario=sc, cell_id=0, tag="t", server=None, options=RunOptions(),
                per_request_s=0.002)  # type: ignore[arg-type]
    assert timed_limit(cell, sc) == 10 * 0.002 * 2000          # 10× the predicted 4 s
    cell.per_request_s = 0.00001
    assert timed_limit(cell, sc) == TRIAL_TIMEOUT_FLOOR_S      # never below the floor
    cell.options = RunOptions(trial_timeout_s=3.0)
    assert timed_limit(cell, sc) == 3.0                         # --trial-timeout wins


def test_placements_put_driver_and_server_where_they_say():
    from clientlab.runner import Placement

    split, shared, free = Placement.of("split"), Placement.of("shared"), Placement.of("free")
    assert free.driver is None and free.server is None
    if split.name == "free":
        return  # one core: every placement is "free"
    assert split.server != split.driver and split.lab == split.server
    assert shared.server == shared.driver and shared.lab != shared.driver


def test_every_trial_starts_on_a_fresh_server_port(cell):
    # no TIME_WAIT or ephemeral-port state of earlier trials meets a trial: a new port each time
    sc = shipped("get-small", count=20).model_copy(update={"client": shipped("get-small").client.model_copy(
        update={"keep_alive": False})})
    result, trials = cell(REF, sc, trials=3, warmup=1)
    assert result.status == "ok", result.reason
    ports = [t["server"]["port"] for t in trials]
    assert len(ports) == 5 and len(set(ports)) == 5


def test_a_fresh_jit_process_warms_up_for_a_least_time_even_when_trials_agree(bench_server, store, test_drivers):
    from clientlab.runner import CellRunner, SilentEvents

    clock = ManualClock()

    class EachTrialTakesATenth(SilentEvents):   # on the lab's clock
        def trial_done(self, driver, scenario, trial):
            clock.advance(0.1)

    policy = WarmupPolicy(steady=100.0, falling=100.0, fresh_min_s=0.5)   # any three agree
    options = RunOptions(warmup=2, stop=StopRule(min_trials=2, max_trials=2), placement="free", host_probe=False,
                         warmup_policy=policy)
    run_id = store.start_run({}, {})
    with CellRunner(bench_server, store, run_id, options, EachTrialTakesATenth(), clock=clock) as runner:
        result = runner.run_cell(test_drivers[REF], shipped("get-small", count=10))
    assert result.status == "ok", result.reason
    kinds = [t["kind"] for t in store.trials(store.cells(run_id)[0]["id"])]
    # warm-ups until half a second had passed since they began: five, though three agreed already
    assert kinds == ["verify"] + ["warmup"] * 5 + ["timed"] * 2


def test_warm_ups_still_falling_one_after_another_are_not_steady():
    steady = WarmupPolicy().is_steady
    assert steady([100.0, 98.0, 99.0])
    assert not steady([100.0, 97.0, 94.0])  # within 10 %, but the compiler is still at work
    assert steady([100.0, 99.5, 99.0])      # falling by less than 3 %: noise
    assert not steady([100.0, 80.0, 81.0])


def test_timed_trials_carry_the_host_probe_of_the_drivers_core(bench_server, store, test_drivers):
    import os

    from clientlab import paths
    from clientlab.measuring import hostprobe
    from clientlab.runner import CellRunner

    if not paths.lab_binary(hostprobe.BINARY).exists():
        pytest.skip("set-up builds the probe")
    run_id = store.start_run({}, {})
    options = RunOptions(warmup=1, stop=StopRule(min_trials=2, max_trials=2), retries=0)
    cpu = max(os.sched_getaffinity(0))
    result = CellRunner(bench_server, store, run_id, options, driver_cpu=cpu).run_cell(
        test_drivers[REF], shipped("get-small", count=10))
    assert result.status == "ok", result.reason
    kinds = {t["kind"]: t["noise"] for t in store.trials(store.cells(run_id)[0]["id"])}
    assert kinds["timed"]["host_before"] > 0 and kinds["timed"]["host_after"] > 0
    assert "host_before" not in kinds["warmup"]  # only timed trials are probed


def test_a_jit_drivers_process_serves_every_scenario_of_the_run_and_is_stopped_at_the_end(
        bench_server, store, test_drivers):
    from clientlab.runner import CellRunner

    run_id = store.start_run({}, {})
    options = RunOptions(warmup=2, stop=StopRule(min_trials=1, max_trials=1), placement="free", host_probe=False)
    with CellRunner(bench_server, store, run_id, options) as runner:
        first = runner.run_cell(test_drivers[REF], shipped("get-small", count=10))
        kept = runner.pool.kept[REF].proc
        second = runner.run_cell(test_drivers[REF], shipped("get-json-335k", count=5))
        assert runner.pool.kept[REF].proc is kept  # the same process, verified again for the new scenario
    assert (first.status, second.status) == ("ok", "ok"), (first.reason, second.reason)
    assert (first.figures.kept_warm, second.figures.kept_warm) == (False, True)
    assert [t["kind"] for t in store.trials(store.cells(run_id)[1]["id"])][0] == "verify"
    assert kept.proc.poll() is not None  # close() stopped it


def test_cells_of_a_run_take_turns_trial_by_trial_when_interleaved_over_the_run(bench_server, store, test_drivers):
    from clientlab.runner import CellRunner

    run_id, options, groups = over_the_run(store, test_drivers[REF], warmup=1, trials=3)
    with CellRunner(bench_server, store, run_id, options) as runner:
        results = runner.run_groups(groups)
    assert [(r.scenario, r.status) for r in results] == [("get-small", "ok"), ("post-form", "ok")]
    timed = sorted((t["id"], c["scenario"]) for c in store.cells(run_id) for t in store.trials(c["id"])
                   if t["kind"] == "timed")
    # every cell verified and warmed up first, then one timed trial of each in turn
    assert [scenario for _, scenario in timed] == ["get-small", "post-form"] * 3


def test_a_jit_drivers_cells_share_one_process_when_interleaved_over_the_run(bench_server, store, test_drivers):
    from clientlab.runner import CellRunner

    run_id, options, groups = over_the_run(store, test_drivers[REF], warmup=2, trials=2, second="get-json-335k")
    with CellRunner(bench_server, store, run_id, options) as runner:
        first, second = runner.run_groups(groups)
        shared = runner.pool.shared[REF].proc
        assert shared.proc.poll() is None  # still there for the run's later cells
    assert (first.status, second.status) == ("ok", "ok"), (first.reason, second.reason)
    assert (first.figures.kept_warm, second.figures.kept_warm) == (False, True)
    assert shared.proc.poll() is not None  # close() stopped it


def test_a_shared_jit_process_whose_cell_fails_is_not_given_to_the_next_cell(bench_server, store, test_drivers):
    from clientlab.runner import CellRunner

    # warmup 2 makes any driver a JIT driver; the crashing one dies in its first job
    crash = test_drivers["python-fake-crash"]
    run_id, options, groups = over_the_run(store, crash, warmup=2, trials=1)
    with CellRunner(bench_server, store, run_id, options) as runner:
        results = runner.run_groups(groups)
        assert "python-fake-crash" not in runner.pool.shared
    assert [r.status for r in results] == ["failed", "failed"]
    # each cell failed on its own process's fault, not on the first cell's dead process
    assert all("lab error" not in (r.reason or "") for r in results)


def test_cells_sharing_a_process_that_a_failed_cell_ended_fail_with_the_reason_and_the_run_goes_on(
        bench_server, store, test_drivers):
    import dataclasses

    from clientlab.runner import CellRunner

    run_id, options, groups = over_the_run(store, test_drivers[REF], warmup=2, trials=2)
    crash = _KillsTheSharedProcess(REF)   # the shared process dies as the first cell's first timed turn begins
    with CellRunner(bench_server, store, run_id, dataclasses.replace(options, host_probe=True),
                    probe_for=lambda _cpu: crash) as runner:
        crash.pool = runner.pool
        first, second = runner.run_groups(groups)
    assert (first.status, second.status) == ("failed", "failed")
    assert "was ended when get-small failed" in second.reason


def test_later_cells_of_a_shared_jit_process_warm_up_for_at_most_the_shared_limit(bench_server, store, test_drivers):
    from clientlab.runner import CellRunner

    # no three trials ever agree; no settling rounds after
    policy = WarmupPolicy(steady=-1.0, max_trials=5, fresh_min_s=0.0, shared_max_s=0.0, settle_max_s=0.0)
    run_id, options, groups = over_the_run(store, test_drivers[REF], warmup=2, trials=1, policy=policy)
    with CellRunner(bench_server, store, run_id, options) as runner:
        first, second = runner.run_groups(groups)
    warmups = [[t["kind"] for t in store.trials(c["id"])].count("warmup") for c in store.cells(run_id)]
    assert warmups == [5, 2]  # the fresh process until its cap; the shared one its manifest's warm-ups only
    assert (first.figures.kept_warm, second.figures.kept_warm) == (False, True)


def test_a_shared_jit_process_settles_its_cells_in_turn_before_the_timed_trials(bench_server, store, test_drivers):
    from clientlab.runner import CellRunner

    # no three trials ever agree, nor settle
    policy = WarmupPolicy(steady=-1.0, settle_falling=-1.0, max_trials=3, fresh_min_s=0.0, settle_max_trials=6)
    run_id, options, groups = over_the_run(store, test_drivers[REF], warmup=2, trials=1, policy=policy)
    with CellRunner(bench_server, store, run_id, options) as runner:
        results = runner.run_groups(groups)
    assert all(r.status == "ok" for r in results), [r.reason for r in results]
    trials = sorted((t["id"], c["scenario"], t["kind"]) for c in store.cells(run_id) for t in store.trials(c["id"]))
    kinds = [(scenario, kind) for _, scenario, kind in trials if kind != "verify"]
    # each cell's own warm-ups (3: max_trials), then settling ones in turn up to 6 each, then the timed
    assert kinds[:6] == [("get-small", "warmup")] * 3 + [("post-form", "warmup")] * 3, kinds
    assert kinds[6:12] == [("get-small", "warmup"), ("post-form", "warmup")] * 3, kinds
    assert kinds[12:] == [("get-small", "timed"), ("post-form", "timed")]
    assert all(any(n.startswith("not steady after 6 warm-up trials") for n in r.figures.notes) for r in results)


def test_warm_ups_on_a_plateau_are_not_settled_while_still_falling_from_the_ones_before():
    settled = WarmupPolicy().is_settled
    assert not settled([300.0, 290.0, 295.0])                      # too few to tell
    assert not settled([300.0, 290.0, 295.0, 220.0, 215.0, 218.0])  # a step down: still on its way
    assert settled([220.0, 215.0, 218.0, 216.0, 219.0, 214.0])
    assert settled([400.0, 330.0, 1000.0, 430.0, 350.0, 900.0])   # scattered, but no longer falling


class _HostReadings:
    """A host probe that reads as told before each timed trial (then fast), and `after` after it."""

    def __init__(self, *before: float, after: float = 1.0):
        self.before, self.after = list(before), after

    def wait_fast(self, limit_s: float) -> float:
        return self.before.pop(0) if self.before else 1.0

    def slowdown(self) -> float:
        return self.after


class _KillsTheSharedProcess(_HostReadings):
    """A host probe that, read before the run's first timed trial, kills the process the driver's
    cells share (its `pool`: the runner's)."""

    def __init__(self, driver_id: str):
        super().__init__()
        self.driver_id, self.pool, self.done = driver_id, None, False

    def wait_fast(self, limit_s: float) -> float:
        import os
        import signal

        if not self.done:
            self.done = True
            os.killpg(self.pool.shared[self.driver_id].pid, signal.SIGKILL)
        return super().wait_fast(limit_s)


class _QuietCores:
    """A noise meter that reads no steal and no other process's CPU: what the host probe says is
    all that disturbs a trial, however busy the machine running the test."""

    def start(self) -> None:
        pass

    def stop(self):
        from clientlab.measuring.noise import Noise

        return Noise(steal_s=0.0, other_cpu_s=0.0, wall_s=1.0)


def _probed_cell(bench_server, store, driver, probe, retries: int):
    from clientlab.runner import CellRunner

    run_id = store.start_run({}, {})
    options = RunOptions(warmup=0, stop=StopRule(min_trials=2, max_trials=2), placement="free", retries=retries)
    with CellRunner(bench_server, store, run_id, options, probe_for=lambda _cpu: probe,
                    noise_meter=_QuietCores) as runner:
        result = runner.run_cell(driver, shipped("get-small", count=5))
    return result, [t["kind"] for t in store.trials(store.cells(run_id)[0]["id"])]


def test_a_turn_that_meets_a_slow_phase_after_the_wait_is_let_pass_not_run_and_thrown_away(
        bench_server, store, test_drivers):
    result, kinds = _probed_cell(bench_server, store, test_drivers[REF], _HostReadings(1.6, 1.0, 1.7), retries=3)
    assert result.status == "ok", result.reason
    assert kinds == ["verify", "timed", "timed"]  # no trial ran in a slow phase
    assert result.figures.slow_host_skips == 2 and result.figures.disturbed_kept == 0
    assert any(n.startswith("2 turn(s) let pass: the host was in a slow phase") for n in result.figures.notes)


def test_with_no_retries_left_a_turn_in_a_slow_phase_is_run_and_kept_flagged(bench_server, store, test_drivers):
    result, kinds = _probed_cell(bench_server, store, test_drivers[REF], _HostReadings(1.6), retries=0)
    assert kinds == ["verify", "timed", "timed"]
    assert result.figures.slow_host_skips == 0 and result.figures.disturbed_kept == 1


def test_two_forks_of_four_trials_take_two_trials_each(cell):
    result, trials = cell(REF, shipped("get-small", count=10), trials=4, warmup=1, forks=2)
    # each process warms up before its timed trials: the second one's warm-up after the first two
    assert [t["kind"] for t in trials] == ["verify", "warmup", "timed", "timed", "warmup", "timed", "timed"]
    assert result.figures.processes == 2


def test_a_shared_jit_process_warms_up_for_its_minimum_of_work_however_few_cells_share_it(bench_server, store,
                                                                                            test_drivers):
    import dataclasses

    from clientlab.runner import CellRunner


    def warm_work(jit_warm_s: float) -> float:
        run_id, options, groups = over_the_run(store, test_drivers[REF], warmup=2, trials=1)
        with CellRunner(bench_server, store, run_id, dataclasses.replace(options, jit_warm_s=jit_warm_s)) as runner:
            assert all(r.status == "ok" for r in runner.run_groups(groups))
        return sum(t["wall_s"] for c in store.cells(run_id) for t in store.trials(c["id"]) if t["kind"] == "warmup")

    # its cells' own warm-ups settle within a few trials of a few ms: the minimum is what holds it
    assert warm_work(1.0) >= 1.0


def test_the_warm_band_is_the_last_warm_ups_median_widened_by_their_spread_or_the_steady_margin():
    band = WarmupPolicy(steady=0.10).warm_band
    assert band([500.0, 100.0, 100.0, 100.0]) == pytest.approx(110.0)   # the last three, the steady margin
    assert band([90.0, 100.0, 130.0]) == pytest.approx(130.0)           # their own spread, wider
    assert band([0.0, 0.0]) is None                                      # no CPU read


class _IdleHeap:
    """The trials' meters (the runner's usage_meter seam): the driver's tree measured as it is,
    but the first `costly` warm-ups after a timed trial read `cost` of what they measured, as a
    JIT process's do when it gave its heap back while it sat idle."""

    def __init__(self, costly: int, cost: Callable[[Usage], float]):
        self.costly, self.cost, self.timed = costly, cost, False

    def __call__(self, kind: str, root: int, group: Group | None) -> UsageMeter:
        meter = tree_meter(kind, root, group)
        self.timed = self.timed or kind == "timed"
        if kind != "warmup" or not self.timed or self.costly == 0:
            return meter
        self.costly -= 1
        return _Costly(meter, self.cost)


class _Costly:
    def __init__(self, meter: UsageMeter, cost: Callable[[Usage], float]):
        self.meter, self.cost = meter, cost

    def start(self) -> float:
        return self.meter.start()

    def stop(self, t1: float) -> Usage:
        usage = self.meter.stop(t1)
        return replace(usage, user_s=self.cost(usage))


def test_an_idle_jit_process_warms_up_again_until_its_cpu_a_request_is_back_in_its_warm_band(cell):
    # after the first timed trial, the next two warm-ups cost five times the CPU (a heap given back
    # while idle), the third is back: the turn before the second timed trial runs exactly three
    idle_heap = _IdleHeap(costly=2, cost=lambda usage: 5 * (usage.user_s + usage.sys_s) + 1.0)
    policy = WarmupPolicy(steady=100.0, falling=100.0, fresh_min_s=0.0, rewarm_idle_s=0.0, rewarm_max_s=60.0)
    result, trials = cell(REF, shipped("get-small", count=50), trials=2, warmup=2, warmup_policy=policy,
                          usage_meter=idle_heap)
    assert result.status == "ok", result.reason
    kinds = [t["kind"] for t in trials]
    first = kinds.index("timed")
    assert kinds[first:] == ["timed", "warmup", "warmup", "warmup", "timed"], kinds
    assert any("2 timed trial(s) began with warm-ups (4 in all)" in n for n in result.figures.notes)


def test_an_idle_jit_process_whose_cpu_stays_high_warms_up_at_most_the_policys_trials_and_says_so(cell):
    never_back = _IdleHeap(costly=-1, cost=lambda usage: 1.0)  # every warm-up after a timed trial
    policy = WarmupPolicy(steady=100.0, falling=100.0, fresh_min_s=0.0, rewarm_idle_s=0.0, rewarm_max_trials=3,
                          rewarm_max_s=60.0)
    result, trials = cell(REF, shipped("get-small", count=50), trials=2, warmup=2, warmup_policy=policy,
                          usage_meter=never_back)
    kinds = [t["kind"] for t in trials]
    assert kinds[kinds.index("timed"):] == ["timed", "warmup", "warmup", "warmup", "timed"], kinds
    assert any("1 of them reached the limit (3 trials" in n for n in result.figures.notes), result.figures.notes
