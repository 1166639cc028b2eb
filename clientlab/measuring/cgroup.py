"""Control groups for the lab's measurements: CPU in nanoseconds and the true simultaneous peak
memory of a whole process tree, exited children included.

A driver is put into a cgroup of its own before it executes (`preexec`), so every process it
starts lands there too. The cgroup's CPU counter keeps the time of processes that have already
exited, and the memory controller's peak is the peak of the tree's *sum*, not a sum of
per-process peaks. Both cgroup v1 (cpuacct + memory, the hybrid layout of these machines) and a
pure cgroup v2 tree (cpu.stat + memory.peak) are read; where neither can be written (not root, no
controllers), `open_group` returns None and the lab falls back to /proc (docs/measurement.md).
"""

from __future__ import annotations

import atexit
import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from clientlab.measuring.procfs import process_tree

ROOT = Path("/sys/fs/cgroup")
_serial = itertools.count()
_held: dict[int, "Group"] = {}   # long-lived processes (the bench server) and the group each is in


def _own_path(controller: str) -> str | None:
    """This process's cgroup path for a v1 controller ('' key for v2), from /proc/self/cgroup."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            return path
    return None


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


@dataclass(frozen=True)
class CpuReading:
    """Cumulative CPU of the group: total in ns (exact); the user/system split as the kernel keeps it."""

    total_ns: int
    user_ns: int
    sys_ns: int


class Group:
    """One cgroup (one directory per controller) that the lab created and removes."""

    version = 0

    def __init__(self, dirs: dict[str, Path]):
        self.dirs = dirs

    def add(self, pid: int) -> None:
        """Move a process (all its threads) into the group; children it forks later follow."""
        for d in self.dirs.values():
            _write(d / "cgroup.procs", str(pid))

    def wrap(self, argv: list[str]) -> list[str]:
        """`argv` started so that it joins the group before it executes anything: a shell writes
        its own pid into the group and then execs the program (preexec_fn is unsafe beside the
        lab's threads, and adding the pid after the start would race with the first fork)."""
        joins = " && ".join(f"echo $$ > '{d / 'cgroup.procs'}'" for d in self.dirs.values())
        return ["/bin/sh", "-c", f'{joins} && exec "$@"', "clientlab-cgroup", *argv]

    def cpu(self) -> CpuReading:
        raise NotImplementedError

    def reset_peak(self) -> None:
        raise NotImplementedError

    def peak_bytes(self) -> int:
        raise NotImplementedError

    def memory_stat(self) -> dict[str, int]:
        raise NotImplementedError

    def limit_memory(self, limit: int) -> None:
        """Cap the group's memory at `limit` bytes, swap included: past it the kernel's OOM
        killer ends a process of the group (the behaviour matrix's bombs), never the host."""
        raise NotImplementedError

    def oom_kills(self) -> int:
        """How many processes of the group the OOM killer ended (its memory cap reached)."""
        raise NotImplementedError

    def pids(self) -> list[int]:
        d = next(iter(self.dirs.values()))
        try:
            return [int(p) for p in (d / "cgroup.procs").read_text().split()]
        except OSError:
            return []

    def release(self) -> None:
        """Move what is left inside back to the lab's own groups, and remove the directories."""
        for d in self.dirs.values():
            parent = d.parent / "cgroup.procs"
            for pid in self.pids():
                try:
                    _write(parent, str(pid))
                except OSError:
                    pass
        self.remove()

    def remove(self) -> None:
        """Kill what is left inside (a driver's stray children) and remove the directories."""
        for _ in range(50):
            left = self.pids()
            if not left:
                break
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.02)
        for d in self.dirs.values():
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # processes still exiting
                    time.sleep(0.02)


class V1Group(Group):
    """cgroup v1: cpuacct.usage{,_user,_sys} in ns; memory.max_usage_in_bytes, reset by writing 0."""

    version = 1

    def cpu(self) -> CpuReading:
        d = self.dirs["cpuacct"]
        total = int((d / "cpuacct.usage").read_text())
        user = int((d / "cpuacct.usage_user").read_text())
        system = int((d / "cpuacct.usage_sys").read_text())
        # the split is charged per tick, the total per scheduling event: share the exact total
        both = user + system
        user_share = user / both if both else 1.0
        return CpuReading(total, round(total * user_share), total - round(total * user_share))

    def reset_peak(self) -> None:
        _write(self.dirs["memory"] / "memory.max_usage_in_bytes", "0")

    def peak_bytes(self) -> int:
        return int((self.dirs["memory"] / "memory.max_usage_in_bytes").read_text())

    def limit_memory(self, limit: int) -> None:
        d = self.dirs["memory"]
        _write(d / "memory.limit_in_bytes", str(limit))
        if (d / "memory.memsw.limit_in_bytes").exists():  # no swapping past the cap (after the cap: it must be >= it)
            _write(d / "memory.memsw.limit_in_bytes", str(limit))

    def oom_kills(self) -> int:
        fields = dict(line.split() for line in (self.dirs["memory"] / "memory.oom_control").read_text().splitlines())
        return int(fields.get("oom_kill", 0))

    def memory_stat(self) -> dict[str, int]:
        out = {}
        for line in (self.dirs["memory"] / "memory.stat").read_text().splitlines():
            key, _, value = line.partition(" ")
            out[key] = int(value)
        file = out.get("total_cache", out.get("cache", 0))
        mapped = out.get("total_mapped_file", out.get("mapped_file", 0))
        return {"anon": out.get("total_rss", out.get("rss", 0)), "file": file, "unmapped_file": max(0, file - mapped),
                "faults": out.get("total_pgfault", out.get("pgfault", 0))}


class V2Group(Group):
    """cgroup v2: cpu.stat usage/user/system in µs; memory.peak (reset by a write, Linux 6.12+)."""

    version = 2

    def cpu(self) -> CpuReading:
        fields = dict(line.split() for line in (self.dirs["unified"] / "cpu.stat").read_text().splitlines())
        return CpuReading(int(fields["usage_usec"]) * 1000, int(fields["user_usec"]) * 1000,
                          int(fields["system_usec"]) * 1000)

    def reset_peak(self) -> None:
        try:
            _write(self.dirs["unified"] / "memory.peak", "reset")
        except OSError:
            pass  # before 6.12 the peak cannot be reset: a fresh group per process tree still gives it

    def peak_bytes(self) -> int:
        return int((self.dirs["unified"] / "memory.peak").read_text())

    def limit_memory(self, limit: int) -> None:
        d = self.dirs["unified"]
        _write(d / "memory.max", str(limit))
        if (d / "memory.swap.max").exists():
            _write(d / "memory.swap.max", "0")

    def oom_kills(self) -> int:
        fields = dict(line.split() for line in (self.dirs["unified"] / "memory.events").read_text().splitlines())
        return int(fields.get("oom_kill", 0))

    def memory_stat(self) -> dict[str, int]:
        fields = dict(line.split() for line in (self.dirs["unified"] / "memory.stat").read_text().splitlines())
        file, mapped = int(fields.get("file", 0)), int(fields.get("file_mapped", 0))
        return {"anon": int(fields.get("anon", 0)), "file": file, "unmapped_file": max(0, file - mapped),
                "faults": int(fields.get("pgfault", 0))}


def _v1_dirs(name: str) -> dict[str, Path] | None:
    dirs = {}
    for controller in ("cpuacct", "memory"):
        own = _own_path(controller)
        base = ROOT / controller
        if own is None or not (base / "cgroup.procs").exists():
            return None
        dirs[controller] = base / own.lstrip("/") / name
    return dirs


def _v2_dirs(name: str) -> dict[str, Path] | None:
    own = _own_path("")
    if own is None or not (ROOT / "cgroup.controllers").exists():
        return None
    parent = ROOT / own.lstrip("/")
    enabled = (parent / "cgroup.subtree_control").read_text().split() if parent.exists() else []
    if not {"cpu", "memory"} <= set(enabled):
        return None  # enabling controllers would move this process: left to the machine's owner
    return {"unified": parent / name}


def open_group(purpose: str) -> Group | None:
    """A new, empty group for one process tree (`purpose` names it), or None where the lab cannot
    make one (not root, or no usable controller)."""
    name = f"clientlab-{os.getpid()}-{next(_serial)}-{purpose}"
    for kind, dirs in ((V1Group, _v1_dirs(name)), (V2Group, _v2_dirs(name))):
        if dirs is None:
            continue
        made: list[Path] = []
        try:
            for d in dirs.values():
                d.mkdir()
                made.append(d)
            group = kind(dirs)
            group.cpu()
            group.peak_bytes()
            return group
        except OSError:
            for d in made:
                try:
                    d.rmdir()
                except OSError:
                    pass
    return None


def group_of(pid: int, purpose: str) -> Group | None:
    """A group of its own for a long-lived process the lab started and the processes it has
    forked (nginx's worker: its CPU is the server's), made once and released when the lab exits;
    None where the lab cannot make groups."""
    if pid in _held:
        return _held[pid]
    group = open_group(purpose)
    if group is not None:
        try:
            for member in process_tree(pid):
                group.add(member)
        except OSError:
            group.remove()
            group = None
    _held[pid] = group  # type: ignore[assignment]  # None is remembered too: no second try
    return group


@atexit.register
def _release_held() -> None:
    for group in _held.values():
        if group is not None:
            group.release()
    _held.clear()


def remove_stale() -> list[str]:
    """Remove empty groups left by lab processes that no longer run (a killed run)."""
    removed = []
    for controller in ("cpuacct", "memory", ""):
        own = _own_path(controller)
        if own is None:
            continue
        parent = (ROOT / controller if controller else ROOT) / own.lstrip("/")
        for d in parent.glob("clientlab-*-*-*") if parent.is_dir() else []:
            try:
                pid = int(d.name.split("-")[1])
            except ValueError:
                continue
            if pid == os.getpid() or Path(f"/proc/{pid}").exists():
                continue
            try:
                d.rmdir()
                removed.append(str(d))
            except OSError:
                pass
    return removed
