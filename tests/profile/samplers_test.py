"""The samplers a profiled trial starts (perf, py-spy) die with the lab's process, however it dies."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clientlab.profile import tools

# A stand-in for the lab: it starts one of the lab's samplers on a target process exactly as a
# profiled trial does, says the sampler's pid and folder, and waits to be killed.
LAB = """
import sys, time
from clientlab.profile.samplers import Perf, PySpy
sampler = Perf() if sys.argv[2] == "perf" else PySpy()
sampler.start([int(sys.argv[1])])
print(sampler.proc.pid, sampler.dir, flush=True)
time.sleep(600)
"""

GONE_WITHIN_S = 5.0


def _alive(pid: int) -> bool:
    """A process that runs (a zombie left to a container's init is dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


@pytest.mark.parametrize("kind", ["perf", "py-spy"])
def test_a_sampler_dies_when_the_lab_is_killed_mid_profile(kind, tmp_path):
    tools.perf() if kind == "perf" else tools.py_spy()   # installed on first use, as a profiled run does
    target = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    lab = subprocess.Popen([sys.executable, "-c", LAB, str(target.pid), kind], stdout=subprocess.PIPE, text=True,
                           cwd=Path(__file__).resolve().parents[2])
    sampler, folder = None, None
    try:
        assert lab.stdout is not None
        line = lab.stdout.readline().split()
        assert line, f"the stand-in lab did not start its {kind} sampler (exit {lab.poll()})"
        sampler, folder = int(line[0]), line[1]
        assert _alive(sampler)
        lab.send_signal(signal.SIGKILL)   # no clean-up of the lab's runs
        lab.wait()
        deadline = time.monotonic() + GONE_WITHIN_S
        while _alive(sampler) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(sampler), f"{kind} (pid {sampler}) still runs {GONE_WITHIN_S:.0f} s after the lab was killed"
    finally:
        if lab.poll() is None:
            lab.kill()
            lab.wait()
        target.kill()
        target.wait()
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
        if sampler is not None and _alive(sampler):   # only after the test failed
            os.kill(sampler, signal.SIGKILL)
