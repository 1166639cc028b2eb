"""When a driver process is warm: the rules a cell's warm-up follows, as one value a run passes
in (RunOptions.warmup_policy), so that a caller or a test sets them without touching the runner.

A JIT runtime (manifest warm-up > 1) compiles its hot paths over the first thousands of requests:
it warms up until three trials in a row cost the same per request. A fresh process warms up at
least `fresh_min_s`: three trials can agree while the compiler is still at work, and a HotSpot
client's cost a request can still fall by a third after passing the rule. With the cells of a run
interleaved, a JIT process shared by its driver's cells warms up on each of them, then settles:
one more warm-up of each cell in turn until each stops getting faster, and until the process has
done RunOptions.jit_warm_s of warm-up work in all, however many cells share it.

A JIT process that then sat idle between its timed trials (stopped through other cells' trials
and crosscheck's plain rounds) warms up again before its next timed trial, until a warm-up costs
the CPU a request of its warm state again. V8's memory reducer, whose timer runs out after 8 s of
little allocation, fires as such a process resumes: a compacting GC that gave back most of a
node-undici process's heap, and a young generation so small that the trials after it scavenged
every 20 ms and took 2-3x the CPU until it grew back, over more than one trial. A program making
requests without pause never meets it: the lab's way of keeping processes between trials must not
be what it measures (docs/measurement.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from clientlab.analysis import stats


@dataclass(frozen=True)
class WarmupPolicy:
    steady: float = 0.10          # three warm-ups in a row agree this closely…
    falling: float = 0.03         # …and are not still falling, one after another, by more than this…
    max_s: float = 3.0            # …for at most this long (with a trial budget: about ten trials)
    max_trials: int = 20          # …and never more than this many warm-up trials
    fresh_min_s: float = 4.0      # a fresh JIT process warms up at least this long (and up to max_s longer)
    shared_max_s: float = 1.0     # a shared process's later cells warm up at most this long…
    settle_falling: float = 0.05  # …then settle: no longer getting faster by more than this…
    settle_max_s: float = 20.0    # …for at most this long a process beyond jit_warm_s…
    settle_max_trials: int = 40   # …and a cell's warm-ups never more than this many in all
    rewarm_idle_s: float = 5.0    # a JIT process idle this long warms up again before a timed trial…
    rewarm_max_trials: int = 10   # …until its CPU a request is back in its warm band, at most this many…
    rewarm_max_s: float = 3.0     # …for at most this long

    def is_steady(self, per_request: list[float]) -> bool:
        """The last three warm-ups cost the same per request, within `steady`, and are not still
        falling one after another (a compiler at work) by more than `falling`."""
        last = per_request[-3:]
        if len(last) < 3 or min(last) <= 0:
            return False
        falling = last[0] > last[1] > last[2] and last[0] / last[2] - 1 > self.falling
        return max(last) / min(last) - 1 <= self.steady and not falling

    def is_settled(self, per_request: list[float]) -> bool:
        """No longer getting faster: the median of the last three warm-ups is no lower than that
        of the three before them (within `settle_falling`). Medians, not is_steady's agreement: a
        runtime whose trials scatter (a GC now and then) has settled when the scatter stops
        moving down."""
        if len(per_request) < 6:
            return False
        return stats.median(per_request[-3:]) >= (1 - self.settle_falling) * stats.median(per_request[-6:-3])

    def warm_band(self, cpu_per_request: list[float]) -> float | None:
        """The most CPU a request a warm process still spends: the median of the last three
        warm-ups times one plus their spread (the highest over the median), at least `steady`;
        None without a reading."""
        last = [v for v in cpu_per_request if v > 0][-3:]
        if not last:
            return None
        middle = stats.median(last)
        return middle * (1 + max(self.steady, max(last) / middle - 1))


DEFAULT = WarmupPolicy()
