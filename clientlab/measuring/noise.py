"""What else happened on the machine during a trial: steal time, other processes' CPU, and
slow phases of the host.

On a shared VM the host takes cores away (steal), and any other process on the machine competes
for the cores the lab uses. Both are read around every trial from /proc/stat (per-CPU, in clock
ticks) and set against the CPU the lab itself accounts for (the driver's tree, the bench server,
the lab's own process). The host also slows a core's kernel work for seconds at a time without
reporting steal: clientlab.measuring.hostprobe reads that right before and after the trial. A trial in
which any of these is large is *disturbed*: the runner runs it again (docs/measurement.md).
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass
from typing import Callable, Protocol, TypeVar

from clientlab.measuring.procfs import tree_cpu_s

CLK_TCK = os.sysconf("SC_CLK_TCK")
TICK_S = 1 / CLK_TCK

# Right after a trial the probe reads slow far more often than before one (a quarter of the
# time after 0.3 s of loopback requests, with or without the server stopped), so the probe after
# a trial counts from 1.4×, the one before (which waits for a fast phase) from hostprobe.SLOW_LIMIT.
# Trials whose probe after read 1.25–1.4× were hardly slower than clean ones (at most 1.2×, on
# one kind of host none), and counting them as disturbed doubled the trials run again and halved
# the timed ones (docs/evidence/measurement.md).
AFTER_LIMIT = 1.4
# a trial is disturbed when, over its wall time, steal on the cores in use or other processes'
# CPU exceeds these fractions of one core (with a floor of a few ticks: /proc/stat counts ticks)
STEAL_LIMIT = 0.05
OTHER_LIMIT = 0.10
FLOOR_TICKS = 3

T = TypeVar("T")


def _cpu_lines() -> dict[int, list[int]]:
    """Per-CPU counters from /proc/stat: user nice system idle iowait irq softirq steal ..."""
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("cpu") and line[3].isdigit():
                name, *values = line.split()
                out[int(name[3:])] = [int(v) for v in values]
    return out


def _busy(values: list[int]) -> int:
    user, nice, system, _idle, _iowait, irq, softirq = values[:7]
    return user + nice + system + irq + softirq


@dataclass(frozen=True)
class Noise:
    """Seconds of steal (on the cores in use) and of other processes' CPU during one trial."""

    steal_s: float
    other_cpu_s: float
    wall_s: float
    # the host probe on the driver's core right before and after the trial, as a multiple of
    # the fastest seen there (None: no probe)
    host_before: float | None = None
    host_after: float | None = None

    @classmethod
    def of(cls, stored: dict, wall_s: float) -> "Noise":
        """A trial's noise as stored (Noise.to_dict)."""
        return cls(stored["steal_s"], stored["other_cpu_s"], wall_s, stored.get("host_before"),
                   stored.get("host_after"))

    def disturbed(self) -> str | None:
        """Why this trial does not measure the client alone, or None."""
        from clientlab.measuring.hostprobe import SLOW_LIMIT

        floor = FLOOR_TICKS * TICK_S
        reasons = []
        for when, slow, limit in (("before", self.host_before, SLOW_LIMIT), ("after", self.host_after, AFTER_LIMIT)):
            if slow is not None and slow > limit:
                reasons.append(f"the host slowed the driver's core: a context switch took {slow:.2f}× "
                               f"its best {when} the trial")
        if self.steal_s > max(floor, STEAL_LIMIT * self.wall_s):
            reasons.append(f"steal {self.steal_s * 1000:.0f} ms ({self.steal_s / self.wall_s:.0%} of the trial)")
        if self.other_cpu_s > max(floor, OTHER_LIMIT * self.wall_s):
            reasons.append(f"other processes used {self.other_cpu_s * 1000:.0f} ms of CPU "
                           f"({self.other_cpu_s / self.wall_s:.0%} of a core)")
        return "; ".join(reasons) or None

    def to_dict(self) -> dict[str, float]:
        out = {"steal_s": round(self.steal_s, 4), "other_cpu_s": round(self.other_cpu_s, 4)}
        if self.host_before is not None:
            out["host_before"] = round(self.host_before, 3)
        if self.host_after is not None:
            out["host_after"] = round(self.host_after, 3)
        return out


def lab_tree_cpu_s() -> float:
    """CPU seconds (ticks) of the lab's process and everything it started: drivers, the bench
    server, the network lab's services, and their children that have exited."""
    return tree_cpu_s(os.getpid())


class NoiseMeter:
    """start() right before go, stop() right after done.

    `own_cpu_s()` returns the CPU seconds the lab accounts for so far (default: the lab's whole
    process tree, in the same clock ticks as /proc/stat); `cores` are the CPUs the trial runs on
    (None: all).
    """

    def __init__(self, cores: set[int] | None = None, own_cpu_s: Callable[[], float] = lab_tree_cpu_s):
        self.own_cpu_s = own_cpu_s
        self.cores = cores

    def start(self) -> None:
        self._stat0 = _cpu_lines()
        self._own0 = self.own_cpu_s()
        self._t0 = time.perf_counter()

    def stop(self) -> Noise:
        wall = time.perf_counter() - self._t0
        stat1 = _cpu_lines()
        own = self.own_cpu_s() - self._own0
        cores = self.cores if self.cores is not None else set(stat1)
        steal = sum(stat1[c][7] - self._stat0[c][7] for c in cores if c in stat1 and c in self._stat0)
        busy = sum(_busy(stat1[c]) - _busy(self._stat0[c]) for c in stat1 if c in self._stat0)
        # ticks are sampled: the busy count can fall short of what the lab accounts for in ns
        other = max(0.0, busy * TICK_S - own)
        return Noise(steal_s=steal * TICK_S, other_cpu_s=other, wall_s=wall)


class HostProbe(Protocol):
    """The host's speed on a core (clientlab/measuring/hostprobe): a wait for a fast phase, and one reading,
    each as a multiple of the fastest seen there."""

    def wait_fast(self, limit_s: float) -> float: ...
    def slowdown(self) -> float: ...


def watched(work: Callable[[], T], probe: HostProbe | None, wait_s: float,
            cores: set[int] | None = None) -> tuple[T, Noise]:
    """`work` as a timed trial is watched, for work that is not a driver's trial (a plain loop's
    round): the host probe waits (at most `wait_s`) for a slow phase to pass and reads the core
    before it and again after it, and steal and other processes' CPU are read around it. The
    caller has stopped whatever else of the lab's would run on the core. `Noise.disturbed()` of
    the result says whether to run it again, by the same rule as a trial's."""
    before = probe.wait_fast(wait_s) if probe is not None else None
    meter = NoiseMeter(cores)
    meter.start()
    result = work()
    noise = meter.stop()
    after = probe.slowdown() if probe is not None else None
    return result, dataclasses.replace(noise, host_before=before, host_after=after)
