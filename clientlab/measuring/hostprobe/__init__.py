"""The host's speed on the driver's core, read right before and right after every timed trial.

These VMs have phases — a second or two, several times a minute, on one core at a time — in
which system calls and context switches take half as long again; plain computation is not
slowed and no steal is reported. An HTTP request over loopback is mostly such kernel work, so a
trial that falls in a slow phase reads 1.3–1.7× slower, and trials of 0.3 s split into two
groups. hostprobe.c times a round trip between two processes on the driver's core (about a
millisecond for 200 of them) while the drivers are stopped; the lab keeps the fastest it has
seen on that core and counts a trial as disturbed when the probe before or after it is more
than SLOW_LIMIT slower (docs/measurement.md).
"""

from __future__ import annotations

import atexit
import subprocess
from collections.abc import Callable

from clientlab import paths
from clientlab.measuring import affinity
from clientlab.measuring.clock import SYSTEM, Clock

BINARY = "clientlab-hostprobe"
ROUND_TRIPS = 200        # one sample: about a millisecond on this machine
SLOW_LIMIT = 1.25        # a sample this much slower than the best is a slow phase
CALIBRATE_SAMPLES = 15   # at the start: the best of this many samples, a tenth of a second apart
# before a trial, wait at most this long for a slow phase to pass: most end within 0.4 s, and one
# that lasts seconds is not worth a trial's ten times its length
WAIT_FAST_S = 1.0
# a wait that ran out met a long slow phase, likely still on at the next trial's turn a moment
# later: each such wait in a row halves the next one, down to this; a fast reading restores it
# (in one full survey, 304 of 1,662 trials waited the whole second and still began slow)
WAIT_FAST_MIN_S = 0.125


class HostProbe:
    """The speed of one core: sample() → ns per round trip, read by a probe process pair pinned to
    the core (or by `read`, given the round trips: the seam the tests give readings through);
    `clock` paces its waits."""

    def __init__(self, cpu: int, binary=None, clock: Clock = SYSTEM,
                 read: Callable[[int], float] | None = None):
        self.cpu, self.clock = cpu, clock
        self.proc: subprocess.Popen | None = None
        if read is None:
            binary = binary or paths.lab_binary(BINARY)
            self.proc = subprocess.Popen(affinity.pinned([str(binary)], cpu), stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, text=True, bufsize=1)
        self.read = read or self._read_process
        self.best: float | None = None
        self.wait_s = WAIT_FAST_S   # the next wait_fast's limit (see WAIT_FAST_MIN_S)

    def _read_process(self, round_trips: int) -> float:
        assert self.proc is not None and self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{round_trips}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise OSError(f"{BINARY} stopped")
        return float(line)

    def sample(self, round_trips: int = ROUND_TRIPS) -> float:
        ns = self.read(round_trips)
        if self.best is None or ns < self.best:
            self.best = ns
        return ns

    def slowdown(self) -> float:
        """One sample, as a multiple of the best so far on this core (1.0 = the fastest seen)."""
        ns = self.sample()
        assert self.best is not None
        return ns / self.best

    def calibrate(self) -> None:
        for _ in range(CALIBRATE_SAMPLES):
            self.sample()
            self.clock.sleep(0.1)

    def wait_fast(self, limit_s: float = WAIT_FAST_S) -> float:
        """Sample until the core is out of a slow phase (or the wait ran out: limit_s, or less
        after waits that ran out, see WAIT_FAST_MIN_S); the last slowdown."""
        limit_s = min(limit_s, self.wait_s)
        deadline = self.clock.monotonic() + limit_s
        slow = self.slowdown()
        while slow > SLOW_LIMIT and self.clock.monotonic() < deadline:
            self.clock.sleep(0.05)
            slow = self.slowdown()
        if slow <= SLOW_LIMIT:
            self.wait_s = WAIT_FAST_S
        elif limit_s > 0:
            self.wait_s = max(WAIT_FAST_MIN_S, self.wait_s / 2)
        return slow

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()


_probes: dict[int, HostProbe | None] = {}


def for_core(cpu: int | None) -> HostProbe | None:
    """The lab's probe on this core (started and calibrated once per lab process), or None when
    the driver is not pinned (placement free) or set-up did not build the probe."""
    if cpu is None:
        return None
    if cpu not in _probes:
        probe = None
        if paths.lab_binary(BINARY).exists():
            try:
                probe = HostProbe(cpu)
                probe.calibrate()
                atexit.register(probe.close)
            except OSError:
                probe = None
        _probes[cpu] = probe
    return _probes[cpu]
