"""Experiments: files validated on load, expanded into distinctly named cells, claims judged,
and each experiment's quick form run for real into its findings section."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from clientlab import scenario
from clientlab.analysis.stats import StopRule
from clientlab.drivers import manifest
from clientlab.errors import LabInputError
from clientlab.experiment import findings, spec
from clientlab.experiment.execute import run_experiment
from clientlab.experiment.plan import plan
from clientlab.experiment.verdict import CONFIRMED, NOT_HERE, PARTLY, REFUTED, judge, metric_value, show
from clientlab.record import Cell, CellFigures, PlainCheck, WallStats
from clientlab.runner import RunOptions

EXPERIMENTS = spec.scan()[0]


def test_every_shipped_experiment_names_known_drivers_and_scenarios():
    from clientlab.experiment.plan import drivers_of

    assert set(EXPERIMENTS) == {"clients-by-runtime", "php-clients", "multi-socket", "parallel-feeds", "perl-clients", "download-size",
                                "clients-by-language", "http-versions", "truth", "js-runtimes"}
    known = {d.id: d for d in manifest.discover()[0]}
    scenarios = {f.name for f in scenario.discover()[0]}
    for e in EXPERIMENTS.values():
        for part in e.parts:
            for quick in (False, True):
                assert drivers_of(part, quick), f"{e.name}.{part.name}: no driver"
                unknown = [d for d in drivers_of(part, quick) if manifest.variant(known, d) is None]
                assert not unknown, f"{e.name}.{part.name}: {unknown}"
            assert set(part.scenarios) <= scenarios, f"{e.name}.{part.name}"


def test_a_claim_on_an_unknown_part_is_rejected_naming_the_file(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('title = "t"\nseed = "000"\narticle = "a"\n[[parts]]\nname = "get"\ndrivers = ["c-libcurl"]\n'
                    'scenarios = ["get-small"]\n[[claims]]\nsays = "s"\ncheck = "similar"\na = { part = "gett" }\n')
    with pytest.raises(LabInputError, match=r"bad\.toml.*no part named 'gett'"):
        spec.load_file(path)


def test_a_bad_sweep_is_rejected_naming_the_field(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('title = "t"\nseed = "000"\narticle = "a"\n[[parts]]\nname = "get"\ndrivers = ["c-libcurl"]\n'
                    'scenarios = ["get-small"]\nsweep = { over = "colour", values = [1] }\n')
    with pytest.raises(LabInputError, match=r"parts\.0\.sweep\.over"):
        spec.load_file(path)


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_every_cell_of_an_experiment_has_its_own_name(name):
    for quick in (False, True):
        cells = plan(EXPERIMENTS[name], quick)
        keys = [(c.driver, c.scenario.label) for c in cells]
        assert len(keys) == len(set(keys)), [k for k in keys if keys.count(k) > 1][:3]


def _cell(driver, part, wall, value=None, status="ok", **figures) -> Cell:
    measured = CellFigures(**{"wall_s": WallStats(median=wall), "throughput": 1 / wall,
                              "unit": "req/s", "peak_rss_kb": 1000, "cpu_user_s": wall / 2, "cpu_sys_s": 0.0,
                              **figures}) if status == "ok" else None
    return Cell(driver=driver, scenario="get-small", status=status, reason=None if status == "ok" else "why",
                params={"part": part, "value": value, "client": {"http": "1.1"}}, figures=measured)


def _claim(**kw):
    return spec.Claim.model_validate({"says": "s", **kw})


def test_faster_is_confirmed_partly_or_refuted_by_the_ratio():
    cells = [_cell("x", "a", 1.0), _cell("y", "b", 3.0), _cell("z", "c", 1.1)]
    assert judge(_claim(check="faster", a={"part": "a"}, b={"part": "b"}, ratio=2), cells, {}).outcome == CONFIRMED
    assert judge(_claim(check="faster", a={"part": "a"}, b={"part": "c"}, ratio=2), cells, {}).outcome == PARTLY
    assert judge(_claim(check="faster", a={"part": "b"}, b={"part": "a"}, ratio=2), cells, {}).outcome == REFUTED


def test_an_effect_within_the_cells_own_noise_is_no_effect():
    def cells(precision):
        return [_cell("x", "a", 1.0, precision=precision), _cell("x", "b", 1.08, precision=precision)]

    claim = _claim(check="faster", a={"part": "a"}, b={"part": "b"}, ratio=1.5)
    assert judge(claim, cells(0.05), {}).outcome == REFUTED       # 8 % against ±5 % on each side
    assert judge(claim, cells(0.01), {}).outcome == PARTLY        # 8 % against ±1 % on each side
    assert "noise ±10%" in judge(claim, cells(0.05), {}).evidence[0]
    each = _claim(check="faster", a={"part": "a"}, b={"part": "b"}, ratio=1.5, each=True)
    verdict = judge(each, cells(0.05), {})
    assert verdict.outcome == REFUTED and "x: 1.000 s against 1.080 s: 1.08× (within the noise, ±10%)" in verdict.evidence


def test_cpu_per_work_compares_cells_of_different_counts_against_their_cpu_noise():
    def cell(part, cpu_s, requests, cpu_precision):
        return _cell("x", part, 1.0, cpu_user_s=cpu_s, requests=requests, precision=0.5, cpu_precision=cpu_precision)

    # 2 s for 1,000 requests against 3 s for 500: 2 ms against 6 ms a request, whatever the wall times
    claim = _claim(check="faster", metric="cpu_per_work", a={"part": "a"}, b={"part": "b"}, ratio=2, each=True)
    verdict = judge(claim, [cell("a", 2.0, 1000, 0.02), cell("b", 3.0, 500, 0.02)], {})
    assert verdict.outcome == CONFIRMED
    assert "x: 2,000 µs CPU a request against 6,000 µs CPU a request: 3.00× (noise ±5%)" in verdict.evidence
    mb = cell("a", 2.0, 1, 0.02)
    mb = mb.with_(figures=mb.figures.with_(unit="MB/s", work_bytes=4e6))
    assert show(metric_value(mb, "cpu_per_work"), "cpu_per_work", mb) == "500.00 ms CPU a MB"


def test_times_add_up_over_a_drivers_scenarios_and_average_over_drivers():
    one_driver = [_cell("x", "a", 1.0), _cell("x", "a", 2.0).with_(scenario="post-form"), _cell("y", "b", 3.0)]
    v = judge(_claim(check="faster", a={"part": "a"}, b={"part": "b"}, ratio=1), one_driver, {})
    assert v.evidence[0].startswith("3.000 s (") and "1.00×" in v.evidence[0]
    two_drivers = [_cell("x", "a", 1.0), _cell("z", "a", 2.0), _cell("y", "b", 3.0)]
    v = judge(_claim(check="faster", a={"part": "a"}, b={"part": "b"}, ratio=1), two_drivers, {})
    assert v.evidence[0].startswith("1.500 s (mean of 2 drivers)") and "2.00×" in v.evidence[0]


def test_a_claim_whose_cells_were_not_measured_is_not_reproducible_with_the_reason():
    cells = [_cell("x", "a", 1.0), _cell("y", "b", 0, status="unsupported")]
    v = judge(_claim(check="faster", a={"part": "a"}, b={"part": "b"}), cells, {})
    assert v.outcome == NOT_HERE and "unsupported (why)" in v.evidence[0]


def test_sweet_spot_needs_the_best_value_inside_the_sweep():
    inside = [_cell("x", "s", w, v) for v, w in ((1, 5.0), (6, 1.0), (100, 3.0))]
    edge = [_cell("x", "s", w, v) for v, w in ((1, 5.0), (6, 3.0), (100, 1.0))]
    order = {"s": [1, 6, 100]}
    assert judge(_claim(check="sweet_spot", a={"part": "s"}), inside, order).outcome == CONFIRMED
    assert judge(_claim(check="sweet_spot", a={"part": "s"}), edge, order).outcome == REFUTED


def _on_the_network_lab(e: spec.Experiment) -> bool:
    from clientlab.netlab import profile

    return any(profile.get(c.net).namespaces for c in plan(e, quick=True))


# the network lab is one per machine: experiments that use it run on one test worker, one by one
QUICK_FORMS = [pytest.param(name, marks=pytest.mark.xdist_group("netlab")) if _on_the_network_lab(e) else name
               for name, e in sorted(EXPERIMENTS.items())]


@pytest.mark.parametrize("name", QUICK_FORMS)
def test_quick_form_runs_and_writes_its_findings_section(name, store, tmp_path):
    e = EXPERIMENTS[name]
    # every cell at its least: verified on a few requests, one short timed trial (a part's own
    # count stays), each driver's process serving its cells on a network; no floor under a
    # check's rounds (min_requests 0: the floor is tested with the runner)
    options = RunOptions(warmup=0, stop=StopRule(min_trials=1, max_trials=1), trial_seconds=0.02,
                         run_budget_s=0.001, keep_every=True, verify_requests=20, min_requests=0)
    # beside the other tests a network lab's user-space relay runs slow: its RTT is checked by the
    # network lab's own tests, run alone
    result = run_experiment(store, e, quick=True, options=options, on_note=lambda _n: None, check_links=False)
    assert result.status == "complete"
    cells = store.cells(result.run_id)
    assert len(cells) == len(plan(e, quick=True))
    failed = [f"{c['driver']} × {c['scenario']}: {c['reason']}" for c in cells if c["status"] == "failed"]
    assert failed == []
    assert all(c["reason"] for c in cells if c["status"] != "ok")
    doc = tmp_path / "findings.md"
    findings.update(doc, name, findings.section(e, store, result.run_id))
    text = doc.read_text()
    assert f"<!-- experiment:{name} start -->" in text and f"Run {result.run_id} (quick form" in text
    for claim in e.claims:
        assert claim.says.replace("|", "\\|") in text
    if e.beside == "plain":  # every driver beside its plain loop, a row each
        assert "### Every driver beside its plain loop" in text
        assert all(f"| {c.driver} | " in text for c in plan(e, quick=True))


def test_a_claim_about_every_client_holds_only_if_it_holds_for_each():
    # the mean of five drivers is slowed 12×, but only one of them is slowed at all
    claim = spec.Claim(says="a slow resolver slows every client", check="faster", a={"part": "fast"},
                       b={"part": "slow"}, ratio=1.5, each=True)
    cells = [_cell(d, "fast", 0.1) for d in "abcde"]
    cells += [_cell(d, "slow", 6.5 if d == "a" else 0.1) for d in "abcde"]
    verdict = judge(claim, cells, {})
    assert verdict.outcome == PARTLY
    assert "a: 0.100 s against 6.500 s: 65.00× (noise ±5%)" in verdict.evidence
    assert "holds for 1 of 5 drivers (each needs 1.5×)" in verdict.evidence
    every = [_cell(d, "slow", 0.5) for d in "abcde"] + [_cell(d, "fast", 0.1) for d in "abcde"]
    assert judge(claim, every, {}).outcome == CONFIRMED
    none = [_cell(d, p, 0.1) for d in "abcde" for p in ("fast", "slow")]
    assert judge(claim, none, {}).outcome == REFUTED


def test_a_part_can_ask_for_a_fresh_process_per_trial_and_its_trial_count():
    from clientlab.experiment.execute import part_options

    part = spec.Part(name="get", drivers=["c-libcurl"], scenarios=["get-small"], fresh_process=True, trials=30)
    full, quick = part_options(RunOptions(), part, False), part_options(RunOptions(), part, True)
    assert full.fresh_process and full.stop.min_trials == full.stop.max_trials == 30
    assert quick.fresh_process and quick.stop.max_trials == 5
    plain = spec.Part(name="get", drivers=["c-libcurl"], scenarios=["get-small"])
    assert part_options(RunOptions(), plain, False) == RunOptions()


def test_a_bulk_transfer_part_can_go_without_warm_up():
    from clientlab.experiment.execute import part_options

    part = spec.Part(name="big", drivers=["c-libcurl"], scenarios=["download-file"], warmup=0, trials=3)
    options = part_options(RunOptions(warmup=1), part, False)
    assert options.warmup == 0 and options.stop.max_trials == 3


def test_a_survey_part_takes_every_driver_of_its_language_and_gets_a_table():
    from clientlab.experiment.plan import drivers_of

    e = EXPERIMENTS["clients-by-language"]
    go = next(p for p in e.parts if p.name == "go")
    assert drivers_of(go) == sorted(d.id for d in manifest.discover()[0] if d.id.startswith("go-"))
    cells = [_cell("go-a", "go", 0.5, requests=100), _cell("go-b", "go", 0.25, requests=100)]
    text = "\n".join(findings.part_tables(e, cells))
    assert "### go" in text and "| go-b | **4.0 req/s**" in text
    assert "Fastest: get-small: go-b" in text and "Cheapest in CPU per request: get-small: go-b" in text


def test_interleaved_over_a_network_the_parts_take_turns_each_with_its_own_options(store, tmp_path, test_drivers):
    path = tmp_path / "turns.toml"
    path.write_text('title = "t"\nseed = "000"\narticle = "a"\n'
                    '[[parts]]\nname = "warm"\ndrivers = ["python-fake-reference"]\nscenarios = ["get-small"]\n'
                    'trials = 3\n'
                    '[[parts]]\nname = "cold"\ndrivers = ["python-fake-reference"]\nscenarios = ["post-form"]\n'
                    'trials = 2\nfresh_process = true\n')
    e = spec.load_file(path)
    options = RunOptions(warmup=0, placement="free", host_probe=False, interleave="run")
    result = run_experiment(store, e, quick=False, options=options,
                            extra_drivers=[test_drivers["python-fake-reference"]], on_note=lambda _n: None)
    assert result.status == "complete"
    cells = {c["scenario"]: c for c in store.cells(result.run_id)}
    assert all(c["status"] == "ok" for c in cells.values()), [c["reason"] for c in cells.values()]
    timed = sorted((t["id"], label) for label, c in cells.items()
                   for t in store.trials(c["id"]) if t["kind"] == "timed")
    assert [label for _, label in timed] == ["get-small[warm]", "post-form[cold]", "get-small[warm]",
                                            "post-form[cold]", "get-small[warm]"]
    cold = [t for t in store.trials(cells["post-form[cold]"]["id"]) if t["kind"] == "timed"]
    assert all(t["startup_s"] is not None for t in cold)  # its part's fresh process per trial
    assert store.run(result.run_id)["config"]["interleave"] == "run"


def _budgeted(tmp_path, budget: str):
    path = tmp_path / "budget.toml"
    path.write_text('title = "t"\nseed = "000"\narticle = "a"\n' + budget +
                    '[[parts]]\nname = "get"\ndrivers = ["python-fake-reference"]\nscenarios = ["get-small"]\n'
                    'params = { count = 5 }\n')
    return spec.load_file(path)


def test_a_spent_time_budget_of_the_experiments_file_stops_its_cells_at_their_minimum(store, tmp_path, test_drivers):
    e = _budgeted(tmp_path, "time_budget = 0.001\nquick_time_budget = 600\n")
    assert e.budget_for(quick=False) == 0.001 and e.budget_for(quick=True) == 600
    # precision 0 is never reached: without the budget the cell would run its six trials
    options = RunOptions(warmup=0, stop=StopRule(min_trials=2, max_trials=6, target_precision=0.0),
                         placement="free", host_probe=False)
    result = run_experiment(store, e, quick=False, options=options,
                            extra_drivers=[test_drivers["python-fake-reference"]], on_note=lambda _n: None)
    [c] = store.cells(result.run_id)
    assert c["status"] == "ok" and c["figures"]["budget_stopped"] is True
    assert "stopped after 2 timed trials: the run's time budget (0.001 s) was spent" in c["figures"]["notes"]
    assert store.run(result.run_id)["config"]["time_budget_s"] == 0.001


def test_a_time_budget_of_zero_given_to_the_experiment_overrides_its_files(store, tmp_path, test_drivers):
    e = _budgeted(tmp_path, "time_budget = 0.001\n")
    options = RunOptions(warmup=0, stop=StopRule(min_trials=2, max_trials=4, target_precision=0.0),
                         placement="free", host_probe=False, run_budget_s=0)
    result = run_experiment(store, e, quick=False, options=options,
                            extra_drivers=[test_drivers["python-fake-reference"]], on_note=lambda _n: None)
    [c] = store.cells(result.run_id)
    assert c["figures"]["budget_stopped"] is False
    assert [t["kind"] for t in store.trials(c["id"])].count("timed") == 4
    assert store.run(result.run_id)["config"]["time_budget_s"] is None


def test_every_shipped_experiment_has_a_time_budget_for_both_forms():
    for e in EXPERIMENTS.values():
        assert e.time_budget and e.quick_time_budget, e.name
    # the two forms of `experiment all` within the 45 and 5 minutes, budgets alone
    everything = spec.get(["all"])
    # the lab's own check, and js-runtimes (its runtimes install on first use), run by name
    assert not {"truth", "js-runtimes"} & {e.name for e in everything}
    assert sum(e.time_budget for e in everything) <= 45 * 60
    assert sum(e.quick_time_budget for e in everything) <= 5 * 60


def _beside_plain(driver, ratio, low, high):
    return _cell(driver, "p", 0.1, plain=PlainCheck(reference="plain", ratio=ratio, ratio_ci_low=low,
                                                    ratio_ci_high=high, compared=5))


def test_a_cell_matches_its_plain_loop_only_when_the_ratios_ci_lies_within_the_tolerance():
    from clientlab.experiment.verdict import NOT_DECIDED

    claim = _claim(check="matches_plain", a={"part": "p"}, tolerance=0.10)
    within = [_beside_plain("x", 1.02, 0.97, 1.06), _beside_plain("y", 0.95, 0.92, 0.99)]
    assert judge(claim, within, {}).outcome == CONFIRMED
    # a CI that straddles 1.10 says nothing either way: the noise decides, not the lab
    straddles = within + [_beside_plain("z", 1.08, 0.99, 1.20)]
    verdict = judge(claim, straddles, {})
    assert verdict.outcome == NOT_DECIDED
    assert "z × get-small: lab ÷ plain 1.08 (CI 0.99–1.20, 5 pairs): not decided, its CI straddles 1.10" \
        in verdict.evidence
    off = within + [_beside_plain("w", 0.60, 0.55, 0.66)]
    assert judge(claim, off, {}).outcome == REFUTED
    # a cell without a plain loop figure is said, not counted
    bare = _cell("v", "p", 0.1)
    verdict = judge(claim, within + [bare], {})
    assert verdict.outcome == CONFIRMED and "v × get-small: no plain loop figure (none was run)" in verdict.evidence


def test_a_truth_claims_sum_says_not_decided_with_each_cells_pairs_and_reason_never_within_its_noise():
    def cell(driver, ratio, low, high, compared, confidence, budget=False):
        plain = PlainCheck(reference="plain", ratio=ratio, ratio_ci_low=low, ratio_ci_high=high, compared=compared,
                           pairs=compared, decision="not decided", ratio_ci_confidence=confidence)
        c = _cell(driver, "p", 0.1, plain=plain)
        return c.with_(figures=c.figures.with_(budget_stopped=budget or None))

    claim = _claim(check="matches_plain", a={"part": "p"}, tolerance=0.10)
    cells = [_beside_plain("w", 1.0, 0.97, 1.03), cell("x", 1.02, 0.85, 1.20, 20, 0.96),
             cell("y", 0.95, 0.80, 1.04, 7, 0.93, budget=True), cell("z", 1.3, 1.3, 1.3, 1, 0.0, budget=True)]
    verdict = judge(claim, cells, {})
    assert verdict.outcome == "not decided"
    summed = verdict.evidence[-1]
    assert "noise" not in summed
    assert summed == ("1 of 4 cells within 10% of their plain loop; 0 off, 3 not decided (2 whose CI straddles "
                      "a bound, 7–20 pairs; 1 with too few pairs for a 90 % interval, 1 pair; 2 of them stopped "
                      "by the time budget)")
    assert ("x × get-small: lab ÷ plain 1.02 (CI 0.85–1.20, 20 pairs): not decided, its CI straddles 0.90 and "
            "1.10") in verdict.evidence
    assert ("z × get-small: lab ÷ plain 1.30 (CI 1.30–1.30, 1 pair): not decided, too few pairs for a 90 % "
            "interval; the time budget stopped its pairs") in verdict.evidence


def test_a_matches_plain_claim_needs_the_experiment_to_run_its_plain_loops():
    raw = {"name": "t", "title": "t", "seed": "none", "article": "a",
           "parts": [{"name": "p", "drivers": ["c-libcurl"], "scenarios": ["get-small"]}],
           "claims": [{"says": "s", "check": "matches_plain", "a": {"part": "p"}}]}
    with pytest.raises(ValidationError, match='beside = "plain"'):
        spec.Experiment.model_validate(raw)
    assert spec.Experiment.model_validate({**raw, "beside": "plain"}).beside == "plain"


def test_an_effect_inside_its_noise_neither_confirms_nor_refutes():
    from clientlab.experiment.verdict import NOT_DECIDED, _outcome

    # 1.85× better, but the cells scatter by ±119 %: the noise decides nothing
    assert _outcome(1.85, 1.2, 1.19) == NOT_DECIDED
    # the same effect beyond a small noise confirms
    assert _outcome(1.85, 1.2, 0.10) == CONFIRMED
    # no effect where the asked 2× would have stood out of ±10 %: refuted
    assert _outcome(1.02, 2.0, 0.10) == REFUTED
    # the other way round beyond the noise: refuted, whatever was asked
    assert _outcome(0.5, 1.2, 0.5) == REFUTED
