"""Statistics of repeated trials: pure functions, no I/O.

Methods:
- centre: the median (robust to the slow outliers a shared machine produces);
- outliers: modified z-score with the median absolute deviation, |z| > 3.5
  (Iglewicz & Hoaglin, 1993; the rule hyperfine uses);
- uncertainty: a distribution-free confidence interval of the median from order statistics
  (the binomial method, e.g. Conover, "Practical Nonparametric Statistics", §3.2); with too few
  trials for 95 % it reports the confidence it can give;
- precision: half the interval's width over the median; trials go on until it is below the
  target or a cap is reached (Dumbbench's "run until the uncertainty is small enough").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MODIFIED_Z_LIMIT = 3.5
MAD_TO_SIGMA = 1.4826  # MAD of a normal distribution times this is its standard deviation
NOISY_RELATIVE_SPREAD = 0.05


def median(values: list[float]) -> float:
    if not values:
        raise ValueError("median of no values")
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def mad(values: list[float]) -> float:
    """Median absolute deviation from the median (unscaled)."""
    m = median(values)
    return median([abs(v - m) for v in values])


def modified_z_scores(values: list[float]) -> list[float]:
    """0.6745 (x - median) / MAD; all zero when MAD is 0 (no spread to judge by)."""
    m, d = median(values), mad(values)
    if d == 0:
        return [0.0 for _ in values]
    return [0.6745 * (v - m) / d for v in values]


def outliers(values: list[float]) -> list[int]:
    """Indexes of values whose |modified z| exceeds 3.5."""
    return [i for i, z in enumerate(modified_z_scores(values)) if abs(z) > MODIFIED_Z_LIMIT]


def _binom_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2)."""
    return sum(math.comb(n, i) for i in range(0, k + 1)) / 2**n


def median_interval(values: list[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """(low, high, achieved confidence) for the median from order statistics.

    Picks the narrowest symmetric pair of ranks (j, n+1-j) with coverage >= `confidence`;
    when even (min, max) covers less, returns (min, max) and the coverage it has.
    """
    s = sorted(values)
    n = len(s)
    if n == 1:
        return s[0], s[0], 0.0
    best = (s[0], s[-1], 1 - 2 * _binom_cdf(0, n))
    for j in range(1, n // 2 + 1):
        coverage = 1 - 2 * _binom_cdf(j - 1, n)  # P(X_(j) <= median <= X_(n+1-j))
        if coverage < confidence:
            break
        best = (s[j - 1], s[n - j], coverage)
    return best


@dataclass(frozen=True)
class Summary:
    """The statistics of one cell's timed trials (a time-like quantity, e.g. seconds)."""

    n: int
    median: float
    mean: float
    stddev: float
    mad: float
    minimum: float
    maximum: float
    ci_low: float
    ci_high: float
    ci_confidence: float
    outliers: list[int]

    @property
    def precision(self) -> float:
        """Half the confidence interval's width relative to the median."""
        if self.median == 0:
            return 0.0
        return (self.ci_high - self.ci_low) / 2 / self.median

    @property
    def relative_spread(self) -> float:
        """Robust spread: MAD scaled to a standard deviation, over the median."""
        return 0.0 if self.median == 0 else MAD_TO_SIGMA * self.mad / self.median

    @property
    def noisy(self) -> bool:
        return self.relative_spread > NOISY_RELATIVE_SPREAD or len(self.outliers) * 10 > self.n


def summarize(values: list[float]) -> Summary:
    n = len(values)
    m = sum(values) / n
    sd = math.sqrt(sum((v - m) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    low, high, confidence = median_interval(values)
    return Summary(
        n=n, median=median(values), mean=m, stddev=sd, mad=mad(values),
        minimum=min(values), maximum=max(values),
        ci_low=low, ci_high=high, ci_confidence=confidence, outliers=outliers(values),
    )


@dataclass(frozen=True)
class StopRule:
    """When to stop adding trials to a cell."""

    min_trials: int = 3
    max_trials: int = 10
    target_precision: float = 0.02
    max_seconds: float = 60.0

    def done(self, values: list[float], elapsed_s: float) -> bool:
        n = len(values)
        if n >= self.max_trials:
            return True
        if n < self.min_trials:
            return False
        if elapsed_s >= self.max_seconds:
            return True
        summary = summarize(values)
        # below ~0.9 coverage the interval says little: keep going until there are enough trials
        return summary.ci_confidence >= 0.9 and summary.precision <= self.target_precision


MODE_GAP = 1.5     # trials this far apart (slowest of the fast group to fastest of the slow) are two modes
MODE_MIN_TRIALS = 2


@dataclass(frozen=True)
class Mode:
    """One group of a cell's trials that agree among themselves."""

    median: float
    trials: int


def modes(values: list[float], gap: float = MODE_GAP) -> list[Mode] | None:
    """Two modes when the sorted values break at their widest ratio by more than `gap` with at
    least MODE_MIN_TRIALS on each side (a lone far trial is an outlier, not a mode); else None.
    A median of two modes is a figure no run of the client has: each mode is one the client meets."""
    s = sorted(v for v in values if v > 0)
    if len(s) < 2 * MODE_MIN_TRIALS:
        return None
    cut = max(range(MODE_MIN_TRIALS, len(s) - MODE_MIN_TRIALS + 1), key=lambda i: s[i] / s[i - 1])
    if s[cut] / s[cut - 1] <= gap:
        return None
    return [Mode(median(s[:cut]), cut), Mode(median(s[cut:]), len(s) - cut)]


OVERLAP, INSIDE_SPREAD = "their intervals overlap", "the difference is inside the spread"


def same_within_spread(a: list[float], b: list[float]) -> str | None:
    """Whether two samples' medians are one figure by their own spread, and why: OVERLAP when
    the medians' confidence intervals (median_interval) share a point, INSIDE_SPREAD when the
    medians differ by no more than either sample's robust spread (MAD scaled to a standard
    deviation); None when they are apart. No fixed tolerance: a sample of five precise trials
    tells 3 % apart, one of two noisy trials does not tell 30 %."""
    if not a or not b:
        return None
    sa, sb = summarize(a), summarize(b)
    if sa.ci_low <= sb.ci_high and sb.ci_low <= sa.ci_high:
        return OVERLAP
    if abs(sa.median - sb.median) <= MAD_TO_SIGMA * max(sa.mad, sb.mad):
        return INSIDE_SPREAD
    return None


def percentiles(values: list[float], points: tuple[float, ...] = (50, 90, 99)) -> dict[str, float]:
    """Nearest-rank percentiles (p50, p90, p99 by default) and the maximum."""
    if not values:
        return {}
    s = sorted(values)
    out = {f"p{p:g}": s[min(len(s) - 1, max(0, math.ceil(p / 100 * len(s)) - 1))] for p in points}
    out["max"] = s[-1]
    return out
