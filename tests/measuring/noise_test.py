"""Disturbed trials: steal and other processes' CPU, read from /proc/stat around a trial."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from clientlab.measuring.noise import Noise, NoiseMeter


def test_a_quiet_trial_is_not_disturbed():
    assert Noise(steal_s=0.0, other_cpu_s=0.01, wall_s=1.0).disturbed() is None


def test_steal_over_five_percent_disturbs_a_trial():
    reason = Noise(steal_s=0.08, other_cpu_s=0.0, wall_s=1.0).disturbed()
    assert reason and "steal 80 ms (8% of the trial)" in reason


def test_other_processes_cpu_over_a_tenth_of_a_core_disturbs_a_trial():
    reason = Noise(steal_s=0.0, other_cpu_s=0.3, wall_s=1.0).disturbed()
    assert reason and "other processes used 300 ms" in reason


def test_a_few_clock_ticks_never_disturb_a_short_trial():
    # /proc/stat counts 10 ms ticks: two of them in a 50 ms trial are quantisation, not noise
    assert Noise(steal_s=0.02, other_cpu_s=0.02, wall_s=0.05).disturbed() is None


def test_a_process_outside_the_lab_burning_cpu_is_seen():
    meter = NoiseMeter(own_cpu_s=lambda: 0.0)
    meter.start()
    # not a child of this process's tree as the lab counts it: own_cpu_s says the lab used nothing
    subprocess.run([sys.executable, "-c", "import time\nt=time.process_time()\nwhile time.process_time()-t<0.4: pass"])
    noise = meter.stop()
    assert noise.other_cpu_s >= 0.3
    assert noise.disturbed()


def test_a_child_of_the_lab_counts_as_the_labs_own_cpu():
    from clientlab.measuring.noise import lab_tree_cpu_s

    before = lab_tree_cpu_s()
    subprocess.run([sys.executable, "-c", "import time\nt=time.process_time()\nwhile time.process_time()-t<0.3: pass"])
    assert lab_tree_cpu_s() - before >= 0.25  # the reaped child is in this process's cutime (ticks)


def test_a_live_grandchild_of_the_lab_counts_as_the_labs_own_cpu():
    from clientlab.measuring.noise import lab_tree_cpu_s

    burn = "import time\nt=time.process_time()\nwhile time.process_time()-t<0.3: pass\ntime.sleep(30)"
    before = lab_tree_cpu_s()
    parent = subprocess.Popen([sys.executable, "-c", f"import subprocess, sys, time\n"
                               f"subprocess.Popen([sys.executable, '-c', {burn!r}])\ntime.sleep(30)"],
                              start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while lab_tree_cpu_s() - before < 0.3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert lab_tree_cpu_s() - before >= 0.3  # the burner is alive: in no one's cutime yet
    finally:
        os.killpg(parent.pid, signal.SIGKILL)
        parent.wait()


def test_the_probe_before_a_trial_counts_from_the_slow_limit_and_the_one_after_from_a_higher_one():
    from clientlab.measuring.hostprobe import SLOW_LIMIT
    from clientlab.measuring.noise import AFTER_LIMIT

    quiet = {"steal_s": 0.0, "other_cpu_s": 0.0, "wall_s": 1.0}
    assert "before the trial" in Noise(**quiet, host_before=SLOW_LIMIT + 0.01, host_after=1.0).disturbed()
    # right after a trial the probe often reads slow without the trial having been slower
    assert Noise(**quiet, host_before=1.0, host_after=AFTER_LIMIT - 0.01).disturbed() is None
    assert "after the trial" in Noise(**quiet, host_before=1.0, host_after=AFTER_LIMIT + 0.01).disturbed()
