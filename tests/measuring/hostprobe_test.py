"""The host probe: a round trip between two processes on one core, against the best seen there."""

from __future__ import annotations

import os

import pytest

from clientlab import paths
from clientlab.measuring import hostprobe
from clientlab.measuring.noise import Noise
from tests.support.clock import ManualClock

# reads the host's speed: run alone, not beside other tests (test.sh)
pytestmark = pytest.mark.serial


built = pytest.mark.skipif(not paths.lab_binary(hostprobe.BINARY).exists(), reason="set-up builds the probe")


@built
def test_a_sample_is_a_round_trip_in_nanoseconds_and_the_best_is_kept():
    probe = hostprobe.HostProbe(max(os.sched_getaffinity(0)))
    try:
        samples = [probe.sample(50) for _ in range(5)]
        assert all(0 < s < 10_000_000 for s in samples)
        assert probe.best == min(samples)
        assert probe.slowdown() >= 1.0 or probe.best is not None
        assert probe.wait_fast(limit_s=0.5) > 0
    finally:
        probe.close()
    assert probe.proc.poll() is not None  # both processes end with the pipe


@built
def test_one_probe_per_core_and_none_when_the_driver_is_not_pinned():
    cpu = max(os.sched_getaffinity(0))
    assert hostprobe.for_core(None) is None
    first = hostprobe.for_core(cpu)
    assert first is not None and first is hostprobe.for_core(cpu) and first.best is not None


def test_a_slow_phase_before_or_after_the_trial_makes_it_disturbed():
    quiet = Noise(0.0, 0.0, 1.0, host_before=1.02, host_after=1.1)
    assert quiet.disturbed() is None
    slow = Noise(0.0, 0.0, 1.0, host_before=1.0, host_after=1.6)
    assert slow.disturbed() == "the host slowed the driver's core: a context switch took 1.60× its best after the trial"
    assert Noise.of(slow.to_dict(), 1.0) == slow
    assert Noise.of({"steal_s": 0.0, "other_cpu_s": 0.0}, 1.0).disturbed() is None  # stored before the probe


def test_a_wait_that_runs_out_halves_the_next_one_and_a_fast_reading_restores_it():
    clock = ManualClock()
    reading = [1.0]
    probe = hostprobe.HostProbe(0, clock=clock, read=lambda _round_trips: reading[0])  # readings as told
    probe.sample()   # the best: 1.0
    reading[0] = 1.6
    limits = []
    for _ in range(5):   # a long slow phase: each wait runs out
        limit, started = probe.wait_s, clock.now
        assert probe.wait_fast() == 1.6
        assert limit <= clock.now - started < limit + 0.06   # it sampled until its limit (50 ms steps)
        limits.append(limit)
    assert limits == [1.0, 0.5, 0.25, 0.125, 0.125]  # halved down to WAIT_FAST_MIN_S
    reading[0] = 1.0
    assert probe.wait_fast() == 1.0 and probe.wait_s == hostprobe.WAIT_FAST_S
    reading[0] = 1.6
    assert probe.wait_fast(limit_s=0.0) == 1.6 and probe.wait_s == hostprobe.WAIT_FAST_S  # no wait: nothing learnt
