"""What /proc says of a process tree besides CPU and memory: page faults and wake-ups."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Callable

import pytest

from clientlab.measuring.procfs import page_faults, thread_wakeups, wakeups, wakeups_between


# measures CPU and memory of real processes: run alone, not beside other tests (test.sh)
pytestmark = pytest.mark.serial


# each child waits for a line, does its work, then waits again (alive, so that it can be read)
SLEEPS = "import sys, time\nsys.stdin.readline()\nfor _ in range(50): time.sleep(0.001)\nsys.stdin.readline()"
MAPS = ("import mmap, sys\nsys.stdin.readline()\n"
        "for _ in range(20):\n    m = mmap.mmap(-1, 1 << 20); m.write(b'x' * (1 << 20)); m.close()\n"
        "sys.stdin.readline()")


def _grows_by(reading: Callable[[list[int]], int], program: str, at_least: int) -> bool:
    """Whether `reading` of a child grows by `at_least` while it does the work of `program`."""
    child = subprocess.Popen([sys.executable, "-c", program], stdin=subprocess.PIPE, text=True)
    try:
        before = reading([child.pid])
        assert child.stdin is not None
        child.stdin.write("\n")
        child.stdin.flush()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if reading([child.pid]) - before >= at_least:
                return True
            time.sleep(0.01)
        return False
    finally:
        child.kill()
        child.wait()


def test_every_sleep_of_a_thread_counts_as_a_wake_up():
    assert _grows_by(wakeups, SLEEPS, 50)


def test_memory_mapped_anew_costs_a_page_fault_per_page_written():
    # 20 maps of 1 MiB written through: 256 faults each (huge pages are only on request here)
    assert _grows_by(page_faults, MAPS, 20 * 256)


# a pool thread that has slept 200 times ends; the main thread then sleeps 50 times
ENDS_A_THREAD = ("import sys, threading, time\n"
                 "stop = threading.Event()\n"
                 "def pool():\n    for _ in range(200): time.sleep(0.001)\n    stop.wait()\n"
                 "t = threading.Thread(target=pool); t.start()\n"
                 "sys.stdin.readline()\n"
                 "stop.set(); t.join()\n"
                 "for _ in range(50): time.sleep(0.001)\n"
                 "print('done', flush=True)\n"
                 "sys.stdin.readline()")


def test_a_thread_that_ends_between_two_readings_drops_out_instead_of_counting_negative():
    child = subprocess.Popen([sys.executable, "-c", ENDS_A_THREAD], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 10
        while len(before := thread_wakeups([child.pid])) < 2 or max(before.values()) < 200:
            assert time.monotonic() < deadline, "the pool thread never slept"
            time.sleep(0.01)
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.stdout.readline() == "done\n"
        after = thread_wakeups([child.pid])
        assert len(after) == 1
        assert wakeups_between(before, after) >= 50
    finally:
        child.kill()
        child.wait()
