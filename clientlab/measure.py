"""What a driver's process tree cost during the timed phase.

Where the lab can make control groups (root, cgroup v1 or v2: clientlab/cgroup.py), the driver
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

import os
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clientlab.cgroup import Group

CLK_TCK = os.sysconf("SC_CLK_TCK")
SAMPLE_INTERVAL_S = 0.02


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def _stat_fields(pid: int) -> list[str] | None:
    text = _read(f"/proc/{pid}/stat")
    if text is None:
        return None
    # the command name may hold spaces and parentheses: split after the last ')'
    return text[text.rfind(")") + 2 :].split()


def _children(pid: int) -> list[int]:
    """Children of `pid` from /proc/PID/task/*/children (one file per thread)."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        text = _read(f"/proc/{pid}/task/{tid}/children")
        if text:
            out.extend(int(c) for c in text.split())
    return out


def process_tree(root: int) -> list[int]:
    """`root` and all its live descendants."""
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(_children(pid))
    return tree


def tree_cpu_s(root: int) -> float:
    """CPU seconds of `root` and all its live descendants, their reaped children included, as
    cpu_seconds(process_tree(root)) sums them but in one pass over /proc: one stat read per
    process, where process_tree reads a children file per thread (a tree of hundreds of
    multi-threaded drivers took 60 ms that way)."""
    kids: dict[int, list[int]] = {}
    ticks: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        fields = _stat_fields(pid)
        if fields:
            # fields[1] = ppid, fields[11..14] = utime stime cutime cstime (stat fields 4, 14..17)
            kids.setdefault(int(fields[1]), []).append(pid)
            ticks[pid] = sum(int(f) for f in fields[11:15])
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += ticks.get(pid, 0)
        todo.extend(kids.get(pid, ()))
    return total / CLK_TCK


def cpu_seconds(pids: list[int]) -> tuple[float, float]:
    """(user, system) CPU seconds of these processes, their reaped children included."""
    user = system = 0
    for pid in pids:
        fields = _stat_fields(pid)
        if fields:
            # fields[11..14] = utime stime cutime cstime (stat fields 14..17)
            user += int(fields[11]) + int(fields[13])
            system += int(fields[12]) + int(fields[14])
    return user / CLK_TCK, system / CLK_TCK


def page_faults(pids: list[int]) -> int:
    """Minor and major page faults of these processes, their reaped children included."""
    total = 0
    for pid in pids:
        fields = _stat_fields(pid)
        if fields:
            # fields[7..10] = minflt cminflt majflt cmajflt (stat fields 10..13)
            total += sum(int(f) for f in fields[7:11])
    return total


def thread_wakeups(pids: list[int]) -> dict[int, int]:
    """Voluntary context switches of these processes' live threads, thread by thread: each is a
    wait for the network (or a lock) that ended in a wake-up. An answer read in one go costs
    one; an answer that trickles in costs one per piece."""
    counts: dict[int, int] = {}
    for pid in pids:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tasks:
            for line in (_read(f"/proc/{pid}/task/{tid}/status") or "").splitlines():
                if line.startswith("voluntary_ctxt_switches:"):
                    counts[int(tid)] = int(line.split()[1])
                    break
    return counts


def wakeups_between(before: dict[int, int], after: dict[int, int]) -> int:
    """Wake-ups from one thread_wakeups reading to a later one. The kernel shows a thread's
    count only while it lives, so a thread that ended in between drops out (its last wake-ups
    are lost, never subtracted) and one born since counts whole: a client that ends a pool
    thread while it works would otherwise read negative."""
    return sum(n - before.get(tid, 0) for tid, n in after.items())


def wakeups(pids: list[int]) -> int:
    """Voluntary context switches of these processes' live threads, all told."""
    return sum(thread_wakeups(pids).values())


def _status_kb(pid: int, key: str) -> int:
    text = _read(f"/proc/{pid}/status") or ""
    for line in text.splitlines():
        if line.startswith(key):
            return int(line.split()[1])
    return 0


def reset_peak_rss(pids: list[int]) -> None:
    for pid in pids:
        try:
            with open(f"/proc/{pid}/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            pass  # gone, or not ours: the sampler still sees it


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
        hwm = sum(_status_kb(pid, "VmHWM:") for pid in pids)
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
            rss = sum(_status_kb(pid, "VmRSS:") for pid in process_tree(self.root))
            self._peak_sampled = max(self._peak_sampled, rss)
