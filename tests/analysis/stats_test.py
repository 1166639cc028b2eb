import pytest

from clientlab.analysis import stats


def test_median_of_even_and_odd_counts():
    assert stats.median([3, 1, 2]) == 2
    assert stats.median([4, 1, 3, 2]) == 2.5


def test_mad_zero_gives_no_outliers_instead_of_dividing_by_zero():
    assert stats.mad([5.0, 5.0, 5.0, 5.0]) == 0
    assert stats.outliers([5.0, 5.0, 5.0, 5.0]) == []


def test_a_slow_trial_is_flagged_as_outlier():
    values = [1.00, 1.01, 0.99, 1.02, 0.98, 1.00, 1.80]
    assert stats.outliers(values) == [6]


def test_median_interval_reaches_95_percent_from_six_trials():
    low, high, conf = stats.median_interval([1, 2, 3, 4, 5, 6])
    assert (low, high) == (1, 6)
    assert conf == pytest.approx(1 - 2 / 64)
    # with five trials (min, max) covers only 93.75 %: that is reported, not hidden
    _, _, conf5 = stats.median_interval([1, 2, 3, 4, 5])
    assert conf5 == pytest.approx(0.9375)


def test_median_interval_narrows_with_more_trials():
    values = list(range(1, 31))
    low, high, conf = stats.median_interval(values)
    assert conf >= 0.95
    assert 1 < low < 15.5 < high < 30


def test_summary_noisy_when_spread_is_wide():
    assert stats.summarize([1.0, 1.3, 0.7, 1.2, 0.8]).noisy
    assert not stats.summarize([1.0, 1.001, 0.999, 1.002, 0.998]).noisy


def test_stop_rule_stops_at_cap_or_precision_not_before_minimum():
    rule = stats.StopRule(min_trials=3, max_trials=6, target_precision=0.02, max_seconds=1000)
    assert not rule.done([1.0, 1.0], 0)
    assert not rule.done([1.0, 1.0, 1.0], 0)          # 75 % coverage: too few to judge
    assert rule.done([1.0, 1.001, 0.999, 1.0, 1.0], 0)  # tight and 93.75 % coverage
    assert not rule.done([1.0, 1.5, 0.7, 1.2, 0.9], 0)  # wide
    assert rule.done([1.0, 1.5, 0.7, 1.2, 0.9, 1.1], 0)  # cap


def test_stop_rule_time_budget_applies_after_minimum():
    rule = stats.StopRule(min_trials=3, max_trials=10, max_seconds=5)
    assert not rule.done([1.0, 2.0], 100)
    assert rule.done([1.0, 2.0, 3.0], 100)


def test_percentiles_nearest_rank():
    p = stats.percentiles([float(i) for i in range(1, 101)])
    assert p["p50"] == 50 and p["p90"] == 90 and p["p99"] == 99 and p["max"] == 100


def test_trials_that_break_by_more_than_one_and_a_half_times_are_two_modes_with_their_counts():
    from clientlab.analysis.stats import modes

    found = modes([0.070, 0.072, 0.071, 0.190, 0.200, 0.185, 0.069])
    assert found is not None
    fast, slow = found
    assert (fast.trials, slow.trials) == (4, 3)
    assert fast.median == pytest.approx(0.0705) and slow.median == pytest.approx(0.190)


def test_a_lone_far_trial_is_an_outlier_not_a_mode_and_a_spread_without_a_gap_is_one_mode():
    from clientlab.analysis.stats import modes

    assert modes([0.070, 0.071, 0.072, 0.073, 0.200]) is None        # one far trial
    assert modes([0.10, 0.12, 0.14, 0.16, 0.18, 0.20]) is None        # wide, but no gap of 1.5×
    assert modes([0.10, 0.30, 0.11]) is None                          # too few to tell two groups


def test_two_samples_are_one_figure_by_their_own_spread_not_a_fixed_tolerance():
    from clientlab.analysis.stats import INSIDE_SPREAD, OVERLAP, same_within_spread

    # 4 % apart on five trials that agree within 0.2 %: two figures
    tight = [1.000, 1.001, 0.999, 1.002, 0.998]
    assert same_within_spread(tight, [v * 1.04 for v in tight]) is None
    # 15 % apart on trials spread 40 % either way: their intervals overlap, one figure
    wide = [0.6, 0.8, 1.0, 1.2, 1.4]
    assert same_within_spread(wide, [v * 1.15 for v in wide]) == OVERLAP
    # no spread at all (MAD 0, one-point intervals): any difference is two figures, none is one
    assert same_within_spread([1.0, 1.0], [1.01, 1.01]) is None
    assert same_within_spread([1.0, 1.0], [1.0, 1.0]) == OVERLAP
    # many trials: their medians' intervals narrow and part, while 0.3 apart stays inside the
    # trials' own robust spread (uniform over a width of 1: 1.4826 × 0.25): one figure
    many = [0.5 + i / 100 for i in range(101)]
    assert same_within_spread(many, [v + 0.3 for v in many]) == INSIDE_SPREAD
    assert same_within_spread([], [1.0]) is None
