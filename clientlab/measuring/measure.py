"""What a driver's process tree cost during the timed phase.

Where the lab can make control groups (root, cgroup v1 or v2: clientlab/measuring/cgroup.py), the driver
runs in a group of its own:
- CPU: the group's counter in nanoseconds, delta go → done; it keeps the time of children that
  have already exited.
- Peak memory: the group's peak usage (the true simultaneous peak of the whole tree), reset at
  `go`, less the file pages charged to the group at `done` (a body streamed to a sink file, code
  read from disk). What is left is the tree's private memory (heap, stacks, buffers): unlike RSS
  it does not depend on whether a shared library was already in memory when the driver started.
Elsewhere, from /proc: CPU as utime+stime and cutime+cstime summed over the live tree (clock
ticks, 10 ms), peak RSS as VmHWM of every live process (reset by writing 5 to clear_refs) summed
at `done` — which can exceed the true simultaneous peak of a multi-process tree.
From /proc, a sampler thread also sums VmRSS of the tree every few milliseconds so that
short-lived children (a curl process per request) are seen too.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from clientlab.measuring.procfs import (cpu_seconds, page_faults, process_tree, reset_peak_rss, status_kb,
                                        thread_wakeups, wakeups, wakeups_between)

if TYPE_CHECKING:
    from clientlab.measuring.cgroup import Group

SAMPLE_INTERVAL_S = 0.02


@dataclass(frozen=True)
class Usage:
    """Resource use of the timed phase."""

    wall_s: float
    user_s: float
    sys_s: float
    peak_rss_kb: int
    source: str = "proc"   # "cgroup" (ns CPU, the tree's simultaneous peak) or "proc" (ticks, sum of peaks)
    page_faults: int | None = None  # the tree's page faults: a body's memory taken anew from the kernel shows here
    wakeups: int | None = None      # voluntary context switches of the tree's threads (see wakeups_between())


class TreeMeter:
    """Measures one timed phase of the tree rooted at `root`: start() at go, stop() at done.
    With `group` (the cgroup the tree runs in) CPU and peak memory come from the group."""

    def __init__(self, root: int, sample: bool = True, group: "Group | None" = None):
        self.root = root
        self.sample = sample
        self.group = group
        self._peak_sampled = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> float:
        """Snapshot and reset; returns the start instant (call right before sending go)."""
        pids = process_tree(self.root)
        self._pids0 = pids
        self._cpu0 = cpu_seconds(pids)
        self._faults0 = page_faults(pids)
        self._wakeups0 = thread_wakeups(pids)
        reset_peak_rss(pids)
        if self.group:
            self._group_cpu0 = self.group.cpu()
            self._group_faults0 = self.group.memory_stat()["faults"]
            self.group.reset_peak()
        if self.sample and not self.group:
            self._thread = threading.Thread(target=self._sampler, daemon=True)
            self._thread.start()
        self._t0 = time.perf_counter()
        return self._t0

    def stop(self, t1: float) -> Usage:
        """`t1` is the instant `done` was read; CPU and memory are read right after."""
        if self.group:
            cpu1 = self.group.cpu()
        else:
            user1, sys1 = cpu_seconds(process_tree(self.root))
        # next, before anything else: a driver closes its client once it has sent done, and the
        # threads that end with it (a JDK client's pool) take their wake-ups along
        woken = wakeups_between(self._wakeups0, thread_wakeups(self._pids0))
        pids = process_tree(self.root)
        woken += wakeups(sorted(set(pids) - set(self._pids0)))  # processes born in the trial
        if self.group:
            peak = self.group.peak_bytes()
            memory = self.group.memory_stat()
        faults = page_faults(pids) - self._faults0
        hwm = sum(status_kb(pid, "VmHWM:") for pid in pids)
        self._stop.set()
        if self._thread:
            self._thread.join()
        if self.group:
            return Usage(
                wall_s=t1 - self._t0,
                user_s=max(0, cpu1.user_ns - self._group_cpu0.user_ns) / 1e9,
                sys_s=max(0, cpu1.sys_ns - self._group_cpu0.sys_ns) / 1e9,
                peak_rss_kb=max(0, peak - memory["file"]) // 1024,
                source="cgroup",
                page_faults=max(0, memory["faults"] - self._group_faults0),
                wakeups=woken,
            )
        return Usage(
            wall_s=t1 - self._t0,
            user_s=max(0.0, user1 - self._cpu0[0]),
            sys_s=max(0.0, sys1 - self._cpu0[1]),
            peak_rss_kb=max(hwm, self._peak_sampled),
            page_faults=max(0, faults),
            wakeups=woken,
        )

    def _sampler(self) -> None:
        while not self._stop.wait(SAMPLE_INTERVAL_S):
            rss = sum(status_kb(pid, "VmRSS:") for pid in process_tree(self.root))
            self._peak_sampled = max(self._peak_sampled, rss)
