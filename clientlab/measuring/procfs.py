"""What /proc says of a process tree: its members, their CPU, page faults, wake-ups and memory.
The meters (measure.py), the control groups (cgroup.py), the noise watch and the profilers read
processes through here."""

from __future__ import annotations

import os


CLK_TCK = os.sysconf("SC_CLK_TCK")


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


def status_kb(pid: int, key: str) -> int:
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
