"""The per-tree cgroup: CPU of children that have exited, and the simultaneous peak of a tree."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from clientlab.measuring import cgroup
from clientlab.measuring.measure import TreeMeter

# reads CPU and memory of real processes: run alone, not beside other tests (test.sh)
pytestmark = pytest.mark.serial


BURN = "import time\nt=time.process_time()\nwhile time.process_time()-t<{s}: pass\n"
HOLD = "import time\nb=bytearray({mb}*1024*1024)\nfor i in range(0,len(b),4096): b[i]=1\ntime.sleep({s})\n"


@pytest.fixture
def group():
    g = cgroup.open_group("test")
    if g is None:
        pytest.skip("this machine gives the lab no cgroup (not root, or no cpuacct/memory controller)")
    yield g
    g.remove()


def _run_in(group: cgroup.Group, script: str) -> subprocess.Popen:
    return subprocess.Popen(group.wrap([sys.executable, "-c", script]))


def test_cpu_of_a_child_that_has_exited_is_counted(group):
    parent = (f"import subprocess, sys\n"
              f"subprocess.run([sys.executable, '-c', {BURN.format(s=0.3)!r}])\n")
    before = group.cpu().total_ns
    _run_in(group, parent).wait()
    spent = (group.cpu().total_ns - before) / 1e9
    assert spent >= 0.3          # the grandchild's 0.3 s of CPU, although it is gone
    assert group.pids() == []


def test_peak_is_the_trees_simultaneous_peak_not_a_sum_of_peaks(group):
    # two children of 80 MB each, one after the other: the tree never holds both
    parent = (f"import subprocess, sys\n"
              f"for _ in range(2): subprocess.run([sys.executable, '-c', {HOLD.format(mb=80, s=0.1)!r}])\n")
    group.reset_peak()
    _run_in(group, parent).wait()
    peak_mb = group.peak_bytes() / 2**20
    assert 80 <= peak_mb < 150, peak_mb


def test_tree_meter_reads_cpu_in_nanoseconds_from_the_group(group):
    script = "import sys\nsys.stdin.readline()\n" + BURN.format(s=0.05)
    proc = subprocess.Popen(group.wrap([sys.executable, "-c", script]), stdin=subprocess.PIPE, text=True)
    time.sleep(0.5)  # the interpreter starts before the phase begins
    meter = TreeMeter(proc.pid, group=group)
    meter.start()
    proc.stdin.write("go\n")
    proc.stdin.close()
    proc.wait()
    usage = meter.stop(time.perf_counter())
    cpu = usage.user_s + usage.sys_s
    assert usage.source == "cgroup"
    assert cpu >= 0.05
    # a figure from nanoseconds, not a whole number of 10 ms clock ticks
    assert round(cpu * 1e9) % 10_000_000 != 0


def test_removing_a_group_kills_what_is_left_inside(group):
    proc = _run_in(group, "import time; time.sleep(60)")
    time.sleep(0.2)
    assert group.pids() == [proc.pid]
    group.remove()
    assert proc.wait(5) != 0
